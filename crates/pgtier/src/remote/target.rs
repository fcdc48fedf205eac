//! Storage target hosts (`[[host]] roles = ["target"]`): each reached over its own multiplexed
//! ssh connection (its control socket `<token>-t.ssh`, its run directory `/tmp/pgtier-<token>-t`,
//! apart from a client role's on the same host), opened before provisioning with its undos in
//! the run record; everything done on the host is a step of the plan (tiers), run by the one
//! executor through the [`tiers::spec::RemoteShell`] set here.

use anyhow::Result;
use experiment::{Experiment, Host};
use journal::Journal;
use results::manifest::TargetRecord;

use super::{SshHost, network_path, tcp_rtt};

/// The connection of a target host for the run with token `token`.
pub fn ssh_host(host: &Host, token: &str) -> SshHost {
    SshHost::new(host, &format!("{token}-t"))
}

/// Sets how each device's target host is reached in this run, so that the plan's steps there
/// name the run's directory on the host and the executor can reach it.
pub fn attach_shells(exp: &mut Experiment, token: &str) {
    let hosts = exp.hosts.clone();
    for d in &mut exp.devices {
        let Some(t) = &mut d.target_host else { continue };
        let Some(h) = hosts.iter().find(|h| h.name == t.name) else { continue };
        let ssh = ssh_host(h, token);
        t.shell = Some(tiers::spec::RemoteShell {
            host: ssh.name.clone(),
            options: ssh.options.clone(),
            destination: ssh.destination.clone(),
            work_dir: ssh.work_dir.clone(),
        });
    }
}

/// Opens the connection to every target host of the placements' devices (its undos recorded
/// first, the run's directory made there) and measures the route and its round trip.
pub fn open_targets(exp: &Experiment, token: &str, journal: &Journal) -> Result<Vec<TargetRecord>> {
    let mut records = Vec::new();
    for host in exp.target_hosts() {
        let ssh = ssh_host(host, token);
        eprintln!("opening the ssh connection to target host {} ({})", ssh.name, ssh.destination);
        let opened = ssh.open(journal)?;
        let (_, path) = network_path(host.address)?;
        let rtt = tcp_rtt(host.address, host.port);
        let devices = served(exp, host);
        let read = |words: &[&str]| {
            let w: Vec<String> = words.iter().map(|s| s.to_string()).collect();
            ssh.run(&w).map(|o| o.stdout.trim().to_string()).unwrap_or_default()
        };
        let (kernel, kernel_cmdline) =
            (read(&["uname", "-r"]), crate::host::redact_cmdline(&read(&["cat", "/proc/cmdline"])));
        let access = export_access(exp, host);
        // The DH-HMAC-CHAP key the export asks for: into a mode-0600 file of the run's
        // directory there, over ssh's stdin (on no command line); the plan copies it into nvmet.
        if !exp.emulated
            && let Some(secret) = key_of(exp, host)
        {
            let key = secret.read().map_err(|e| anyhow::anyhow!("target host {}: {e}", host.name))?;
            ssh.write_private(&tiers::build::target::key_file(&ssh.work_dir), key.as_bytes())?;
        }
        if !exp.emulated
            && let Some(w) = nvmet_tcp_kernel_warning(&host.name, &kernel, &kernel_cmdline)
        {
            eprintln!("warning: {w}");
        }
        let record = TargetRecord {
            host: host.name.clone(),
            address: host.address.to_string(),
            devices,
            serves: if exp.emulated {
                "nbdkit (the --emulate stand-in: an image file in the run's directory there)".into()
            } else {
                "nvmet (the kernel's NVMe/TCP target, configured through configfs)".into()
            },
            network_path: path,
            rtt_ms: rtt.map(|d| d.as_secs_f64() * 1e3),
            rtt_method: super::rtt_method(host),
            transport: super::transport(),
            ssh_setup_ms: opened.setup.as_secs_f64() * 1e3,
            ssh_command_ms: opened.command_rtt.as_secs_f64() * 1e3,
            work_dir: ssh.work_dir.clone(),
            kernel,
            kernel_cmdline,
            access,
        };
        eprintln!(
            "  target host {}: {} (TCP round trip {}), serves {}",
            record.host,
            record.network_path,
            record.rtt_ms.map(|r| format!("{r:.3} ms")).unwrap_or_else(|| "not measured".into()),
            record.devices.join(", ")
        );
        records.push(record);
    }
    Ok(records)
}

/// The DH-HMAC-CHAP secret of the devices `h` serves to this machine by name (validation makes
/// them share one), if they have one.
fn key_of<'e>(exp: &'e Experiment, h: &Host) -> Option<&'e tiers::spec::SecretSource> {
    exp.used_devices().into_iter().find_map(|d| match (&d.target_host, &d.real) {
        (Some(t), tiers::spec::RealDevice::NvmeTcp(nt)) if t.name == h.name && !t.allow_any_host => {
            nt.dhchap_secret.as_ref()
        }
        _ => None,
    })
}

/// What protects the exports of host `h`, said plainly for the manifest and report.md.
fn export_access(exp: &Experiment, h: &Host) -> String {
    if exp.emulated {
        return "the --emulate stand-in (nbdkit) answers any client that reaches its port on the host's address".into();
    }
    let any = exp
        .used_devices()
        .into_iter()
        .any(|d| d.target_host.as_ref().is_some_and(|t| t.name == h.name && t.allow_any_host));
    if any {
        "allow_any_host = true: any host that reaches the port may connect and read and write the export".into()
    } else if key_of(exp, h).is_some() {
        "this machine's host NQN alone, authenticated by DH-HMAC-CHAP (nvmet's hosts/<host NQN>/dhchap_key)".into()
    } else {
        "this machine's host NQN alone, not authenticated: any machine that presents that NQN may connect and read and write the export (give the device dhchap_secret_env or dhchap_secret_file for DH-HMAC-CHAP)".into()
    }
}

/// What `--dry-run` says of the target hosts, before the plan: how each is reached (the
/// connection is opened before the first step), and what the plan does there.
pub fn dry_run(exp: &Experiment, token: &str) {
    let hosts = exp.target_hosts();
    if hosts.is_empty() {
        return;
    }
    println!("\n## Target hosts (connected before the plan runs; closed at teardown)\n");
    for h in hosts {
        let ssh = ssh_host(h, token);
        println!("- {} ({}): serves {}, over one ssh connection:", h.name, h.address, served(exp, h).join(", "));
        println!("  {}", ssh.master_command());
        println!(
            "  then `mkdir -m 700 -- {}` there (the run's directory, removed with `rm -rf` at teardown); the plan's `[on host {}]` steps run over this connection",
            ssh.work_dir, h.name
        );
        if !exp.emulated && key_of(exp, h).is_some() {
            println!(
                "  then the DH-HMAC-CHAP secret into {} there (mode 0600, written from ssh's stdin: on no command line)",
                tiers::build::target::key_file(&ssh.work_dir)
            );
        }
        println!("  access to its exports: {}", export_access(exp, h));
    }
}

fn served(exp: &Experiment, h: &Host) -> Vec<String> {
    exp.used_devices()
        .into_iter()
        .filter(|d| d.target_host.as_ref().is_some_and(|t| t.name == h.name))
        .map(|d| d.name.clone())
        .collect()
}

/// The preflight of the target hosts: ssh installed, the identity and known_hosts files there;
/// every problem of every host is added to `problems` (none stops the others being found).
pub fn preflight(exp: &Experiment, missing: &mut Vec<String>, problems: &mut Vec<String>) {
    for h in exp.target_hosts() {
        if journal::command::which("ssh").is_none() {
            missing.push(format!("ssh (package openssh-client), to reach host {} ({})", h.name, h.origin));
        }
        for (key, path) in [("identity_file", &h.identity_file), ("known_hosts", &h.known_hosts)] {
            if let Some(p) = path
                && !p.is_file()
            {
                problems.push(format!(
                    "host {}: its {key} {} is not a file ({}); create it, or fix the path",
                    h.name,
                    p.display(),
                    h.origin
                ));
            }
        }
    }
}

/// A warning for a target host whose kernel is one nvmet-tcp was seen to BUG on: Linux 6.1
/// (Debian 12's) with hardened usercopy on, "usercopy: Kernel memory exposure attempt detected
/// from page alloc" and `kernel BUG at mm/usercopy.c:101` in nvmet_tcp_wq's send path, seen in
/// pgtier's VM tests (whose guest now boots with `hardened_usercopy=off`). None otherwise.
pub fn nvmet_tcp_kernel_warning(host: &str, release: &str, cmdline: &str) -> Option<String> {
    let on_6_1 = release.trim() == "6.1" || release.trim().starts_with("6.1.") || release.trim().starts_with("6.1-");
    let hardened_off = cmdline.split_whitespace().any(|w| w == "hardened_usercopy=off");
    (on_6_1 && !hardened_off).then(|| {
        format!(
            "target host {host} runs Linux {release} with hardened usercopy on, where nvmet-tcp's send path was seen to hit `kernel BUG at mm/usercopy.c:101` (workqueue nvmet_tcp_wq; Debian 12's 6.1 kernel, in pgtier's VM tests): the export then stops answering and the run hangs until its watchdog. A newer kernel, or `hardened_usercopy=off` on that host's kernel command line, avoids it; the manifest records the kernel and command line"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_6_1_nvmet_tcp_bug_is_warned_about_unless_the_hardening_is_off() {
        let stock = "BOOT_IMAGE=/boot/vmlinuz-6.1.0-57-amd64 root=UUID=x ro quiet";
        let w = nvmet_tcp_kernel_warning("storage", "6.1.0-57-amd64", stock).expect("6.1 with hardening");
        assert!(
            w.contains("target host storage runs Linux 6.1.0-57-amd64") && w.contains("hardened_usercopy=off"),
            "{w}"
        );
        assert!(
            nvmet_tcp_kernel_warning("storage", "6.1.0-57-amd64", &format!("{stock} hardened_usercopy=off")).is_none()
        );
        for other in ["6.12.9-amd64", "6.10.0", "5.15.0-91-generic", "6.18.0", ""] {
            assert!(nvmet_tcp_kernel_warning("storage", other, stock).is_none(), "{other}");
        }
    }
}
