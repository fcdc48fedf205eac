//! Facts about the machine and the tools, for the manifest. Read from /proc and /sys directly:
//! on this kind of VM the sysinfo crate reports only "AMD EPYC" and no DMI data, and the figures
//! needed are a handful of files.

use std::collections::BTreeMap;
use std::time::Duration;

use journal::CommandLine;
use results::manifest::HostFacts;

fn read(p: &str) -> Option<String> {
    std::fs::read_to_string(p).ok().map(|s| s.trim().to_string()).filter(|s| !s.is_empty())
}

/// Hardware threads online.
pub fn hardware_threads() -> u32 {
    std::thread::available_parallelism().map(|n| n.get() as u32).unwrap_or(1)
}

pub fn collect() -> HostFacts {
    let cpuinfo = read("/proc/cpuinfo").unwrap_or_default();
    let field = |name: &str| {
        cpuinfo.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            (k.trim() == name).then(|| v.trim().to_string())
        })
    };
    let threads = cpuinfo.lines().filter(|l| l.starts_with("processor")).count().max(1);
    let mut cores = std::collections::BTreeSet::new();
    let mut phys = String::new();
    for l in cpuinfo.lines() {
        if let Some((k, v)) = l.split_once(':') {
            match k.trim() {
                "physical id" => phys = v.trim().to_string(),
                "core id" => {
                    cores.insert((phys.clone(), v.trim().to_string()));
                }
                _ => {}
            }
        }
    }
    let mem_kb: u64 = read("/proc/meminfo")
        .and_then(|m| {
            m.lines().find(|l| l.starts_with("MemTotal:")).and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0);
    let uts = nix::sys::utsname::uname().ok();
    let os = read("/etc/os-release")
        .and_then(|t| t.lines().find_map(|l| l.strip_prefix("PRETTY_NAME=").map(|v| v.trim_matches('"').to_string())))
        .unwrap_or_default();
    let virtualization = CommandLine::new("systemd-detect-virt")
        .output(Some(Duration::from_secs(5)))
        .ok()
        .map(|o| o.stdout.trim().to_string())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| {
            if field("flags").is_some_and(|f| f.split_whitespace().any(|x| x == "hypervisor")) {
                format!(
                    "virtual machine (CPU hypervisor flag){}",
                    read("/sys/class/dmi/id/sys_vendor").map(|v| format!(", vendor {v}")).unwrap_or_default()
                )
            } else {
                "none detected".into()
            }
        });
    let mut sysctls = BTreeMap::new();
    for key in [
        "vm.swappiness",
        "vm.dirty_ratio",
        "vm.dirty_background_ratio",
        "vm.dirty_bytes",
        "vm.dirty_background_bytes",
        "vm.nr_hugepages",
        "vm.overcommit_memory",
        "kernel.shmmax",
    ] {
        if let Some(v) = read(&format!("/proc/sys/{}", key.replace('.', "/"))) {
            sysctls.insert(key.to_string(), v);
        }
    }
    HostFacts {
        hostname: nix::unistd::gethostname().map(|h| h.to_string_lossy().into_owned()).unwrap_or_default(),
        kernel: uts.as_ref().map(|u| u.release().to_string_lossy().into_owned()).unwrap_or_default(),
        kernel_version: uts.as_ref().map(|u| u.version().to_string_lossy().into_owned()).unwrap_or_default(),
        kernel_cmdline: redact_cmdline(&read("/proc/cmdline").unwrap_or_default()),
        os,
        cpu_model: field("model name").unwrap_or_default(),
        cpu_cores: if cores.is_empty() { threads } else { cores.len() },
        cpu_threads: threads,
        memory_bytes: mem_kb * 1024,
        virtualization,
        cpu_governor: read("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"),
        transparent_hugepages: read("/sys/kernel/mm/transparent_hugepage/enabled"),
        sysctls,
        load_average: read("/proc/loadavg"),
    }
}

/// A kernel command line fit for a manifest: the value of a parameter that may carry a
/// credential (a password, key, secret or token; a URL-like value with user info, as dracut's
/// `netroot=iscsi:user:password@...`) is replaced by `<redacted>`.
pub fn redact_cmdline(cmdline: &str) -> String {
    cmdline
        .split_whitespace()
        .map(|word| match word.split_once('=') {
            Some((k, v)) => {
                let key = k.to_ascii_lowercase();
                let sensitive =
                    ["pass", "key", "secret", "token", "auth"].iter().any(|s| key.contains(s)) || v.contains('@');
                if sensitive { format!("{k}=<redacted>") } else { word.to_string() }
            }
            None => word.to_string(),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The version line of each tool the run uses.
pub fn tool_versions(pg_bin: &std::path::Path, programs: &[&str]) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut probe = |name: &str, cmd: CommandLine| {
        if let Ok(o) = cmd.output(Some(Duration::from_secs(10))) {
            let text = if o.stdout.trim().is_empty() { o.stderr } else { o.stdout };
            if let Some(line) = text.lines().find(|l| !l.trim().is_empty()) {
                out.insert(name.to_string(), line.trim().to_string());
            }
        }
    };
    probe("pgbench", CommandLine::new(pg_bin.join("pgbench").to_string_lossy()).arg("--version"));
    for p in programs {
        let flag = match *p {
            "mkfs.xfs" | "xfs_info" => "-V",
            "nvme" => "version",
            "ip" => "-V",
            _ => "--version",
        };
        if journal::command::which(p).is_some() {
            probe(p, CommandLine::new(*p).arg(flag));
        }
    }
    out
}

/// This machine's memory (MemTotal), in bytes; 0 when /proc/meminfo does not say.
pub fn memory_bytes() -> u64 {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|t| {
            t.lines().find_map(|l| {
                l.strip_prefix("MemTotal:").and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
            })
        })
        .map(|kb| kb * 1024)
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    #[test]
    fn credentials_on_the_kernel_command_line_are_redacted() {
        let line = "BOOT_IMAGE=/vmlinuz-6.1.0 root=UUID=ab ro netroot=iscsi:u:pw@192.0.2.1::3260::iqn.x rd.iscsi.password=pw hardened_usercopy=off quiet";
        assert_eq!(
            super::redact_cmdline(line),
            "BOOT_IMAGE=/vmlinuz-6.1.0 root=UUID=ab ro netroot=<redacted> rd.iscsi.password=<redacted> hardened_usercopy=off quiet"
        );
    }
}
