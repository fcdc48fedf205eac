//! One server host's part of a fleet: reach it, measure its clock, ship pgtier and the
//! experiment file, run the matrix there with the host's own run record, stream what it prints,
//! and bring its result set back.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use anyhow::{Context, Result, bail};
use experiment::Host;
use journal::command::posix_command;
use journal::{Journal, Undo};
use results::fleet::{FleetHost, HostStatus};

use crate::error::HOST_FAILURE_LINE;
use crate::remote::{Shipped, SshHost};
use crate::signals::Interrupts;

/// A server host's default state directory.
pub const DEFAULT_STATE_DIR: &str = "/var/lib/pgtier";

/// How long the host's cleanup may wait for a run of its own that is still tearing down.
const CLEANUP_WAIT: &str = "10min";

/// A server host reached for this run: its connection, the shipped binary and experiment file.
pub struct Reached {
    pub ssh: SshHost,
    pub shipped: Shipped,
    /// The experiment file in the run's directory on the host.
    pub config: String,
    pub state_dir: String,
}

/// The host's record before anything is done.
pub fn pending(host: &Host, run_id: &str) -> FleetHost {
    let state_dir = host.state_dir.as_ref().map(|d| d.display().to_string()).unwrap_or(DEFAULT_STATE_DIR.into());
    FleetHost {
        name: host.name.clone(),
        address: host.address.to_string(),
        remote_results: format!("{state_dir}/results/{run_id}"),
        state_dir,
        status: HostStatus::Pending,
        cause: None,
        clock_offset_ms: None,
        clock_uncertainty_ms: None,
        ssh_setup_ms: None,
        ssh_command_ms: None,
        pgtier_on_host: None,
        fetched: false,
        attempts: Vec::new(),
    }
}

/// Opens the host's connection (its undos in `journal`), measures its clock against this
/// machine's, ships pgtier and `experiment_text`, and records the undo that runs the host's
/// own cleanup at teardown (before the host's run starts).
pub fn reach(
    host: &Host,
    token: &str,
    journal: &Journal,
    experiment_text: &str,
    record: &mut FleetHost,
) -> Result<Reached> {
    let ssh = SshHost::new(host, token);
    eprintln!("[{}] opening the ssh connection ({})", ssh.name, ssh.destination);
    let opened = ssh.open(journal)?;
    record.ssh_setup_ms = Some(opened.setup.as_secs_f64() * 1e3);
    record.ssh_command_ms = Some(opened.command_rtt.as_secs_f64() * 1e3);
    if let Some((offset, uncertainty)) = clock_offset(&ssh) {
        record.clock_offset_ms = Some(offset);
        record.clock_uncertainty_ms = Some(uncertainty);
    }
    let shipped = ssh.ship_pgtier()?;
    record.pgtier_on_host = Some(shipped.version.clone());
    let config = format!("{}/experiment.toml", ssh.work_dir);
    ssh.write_private(&config, experiment_text.as_bytes())?;
    let state_dir = record.state_dir.clone();
    let cleanup = shipped.words(&state_dir, None, &["cleanup".into(), "--wait".into(), CLEANUP_WAIT.into()]);
    journal.record(
        Undo::RemoteCleanup {
            host: ssh.name.clone(),
            options: ssh.options.clone(),
            destination: ssh.destination.clone(),
            words: cleanup,
        },
        format!("the run records of host {} (its own cleanup)", ssh.name),
    )?;
    eprintln!(
        "[{}] ready: {} shipped, clock offset {}",
        ssh.name,
        shipped.version,
        match (record.clock_offset_ms, record.clock_uncertainty_ms) {
            (Some(o), Some(u)) => format!("{o:+.1} ms ± {u:.1}"),
            _ => "not measured".into(),
        }
    );
    Ok(Reached { ssh, shipped, config, state_dir })
}

/// The host's clock minus this machine's, in ms, with its uncertainty: of 5 `date +%s.%N` round
/// trips the fastest, its midpoint taken as the moment the host read its clock.
pub fn clock_offset(ssh: &SshHost) -> Option<(f64, f64)> {
    let mut best: Option<(f64, f64)> = None;
    for _ in 0..5 {
        let t0 = SystemTime::now();
        let out = ssh.run(&["date".into(), "+%s.%N".into()]).ok()?;
        let t1 = SystemTime::now();
        let remote: f64 = out.stdout.trim().parse().ok()?;
        let secs = |t: SystemTime| t.duration_since(SystemTime::UNIX_EPOCH).map(|d| d.as_secs_f64()).unwrap_or(0.0);
        let (a, b) = (secs(t0), secs(t1));
        let half = (b - a) / 2.0 * 1e3;
        let offset = (remote - (a + b) / 2.0) * 1e3;
        if best.is_none_or(|(_, h)| half < h) {
            best = Some((offset, half));
        }
    }
    best
}

/// How the host's pgtier ended.
pub struct Ended {
    pub status: HostStatus,
    pub cause: Option<String>,
}

/// Runs `args` with the shipped binary on the host, every line it prints prefixed with the
/// host's name on this machine's stderr and written to `log`. Standard input stays open and
/// silent until an interrupt here, when it says `stop` (the host stops and tears down, and its
/// lines still come); its end, if this process dies or the connection is lost, stops the host too.
pub fn run_remote(
    r: &Reached,
    args: &[String],
    revision: Option<&str>,
    log: &Path,
    interrupts: &Interrupts,
) -> Result<Ended> {
    let words = r.shipped.words(&r.state_dir, revision, args);
    let mut cmd = Command::new("ssh");
    cmd.args(&r.ssh.options).arg(&r.ssh.destination).arg("--").arg(posix_command(&words));
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = cmd.spawn().context("start ssh")?;
    let log = Arc::new(Mutex::new(
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
            .with_context(|| format!("open {}", log.display()))?,
    ));
    let last = Arc::new(Mutex::new(Vec::<String>::new()));
    let name = r.ssh.name.clone();
    let pumps: Vec<_> = [
        child.stdout.take().map(|o| Box::new(o) as Box<dyn std::io::Read + Send>),
        child.stderr.take().map(|e| Box::new(e) as _),
    ]
    .into_iter()
    .flatten()
    .map(|stream| {
        let (log, last, name) = (log.clone(), last.clone(), name.clone());
        std::thread::spawn(move || {
            for line in BufReader::new(stream).lines().map_while(Result::ok) {
                eprintln!("[{name}] {line}");
                let _ = writeln!(log.lock().unwrap(), "{line}");
                let mut l = last.lock().unwrap();
                l.push(line);
                if l.len() > 20 {
                    l.remove(0);
                }
            }
        })
    })
    .collect();
    let mut stdin = child.stdin.take();
    let mut asked = false;
    let status = loop {
        if let Some(s) = child.try_wait()? {
            break s;
        }
        if interrupts.cancelled() && !asked {
            eprintln!("[{name}] stopping: asking the host to stop (it tears down)");
            asked = true;
            if stdin.as_mut().is_none_or(|i| i.write_all(b"stop\n").and_then(|()| i.flush()).is_err()) {
                stdin = None;
            }
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    drop(stdin);
    for p in pumps {
        let _ = p.join();
    }
    let tail = last.lock().unwrap().clone();
    Ok(ended(&name, status, &tail, interrupts.cancelled()))
}

/// The host's status from ssh's exit: 0 complete; 255 (ssh's own failure) or a signal: the
/// connection was lost; anything else: pgtier on the host failed, as its
/// [`HOST_FAILURE_LINE`] says.
fn ended(name: &str, status: std::process::ExitStatus, tail: &[String], interrupted: bool) -> Ended {
    // The host's run says why it failed on a line of its own; without one (it crashed), its last line.
    let failure = tail.iter().rev().find_map(|l| l.trim().strip_prefix(HOST_FAILURE_LINE));
    let said = failure.or(tail.last().map(|l| l.trim())).map(|l| format!(": {l}")).unwrap_or_default();
    let last_line = tail.last().map(|l| format!("; the host's last line: \"{}\"", l.trim())).unwrap_or_default();
    match status.code() {
        Some(0) => Ended { status: HostStatus::Complete, cause: None },
        Some(255) | None => Ended {
            status: HostStatus::Lost,
            cause: Some(format!(
                "host {name}: the ssh connection was lost while its runs were going on ({}){last_line}; the host tore down by itself (what it printed then is in hangup-<pid>.log of its state directory)",
                status.code().map(|c| format!("ssh exited {c}")).unwrap_or_else(|| "ssh was killed".into())
            )),
        },
        Some(c) if interrupted => Ended {
            status: HostStatus::Failed,
            cause: Some(format!("host {name}: interrupted here; its pgtier stopped and tore down (exit status {c})")),
        },
        Some(c) => Ended {
            status: HostStatus::Failed,
            cause: Some(format!("host {name}: pgtier there ended with exit status {c}{said}")),
        },
    }
}

/// After a lost connection: opens it again (the run's master is gone) and waits, through the
/// host's own cleanup, until the host's pgtier has torn down.
pub fn reconnect_and_settle(r: &Reached) -> Result<()> {
    // A master killed with SIGKILL leaves its socket: a new master would find it in place, give
    // up multiplexing and stay in the background with no socket to be told to exit by.
    let check = journal::CommandLine::new("ssh").args(&r.ssh.options).args(["-O", "check"]).arg(&r.ssh.destination);
    if check.run_with_timeout(Some(Duration::from_secs(10))).is_err() {
        let _ = std::fs::remove_file(&r.ssh.control_path);
        let _ = r.ssh.master_command().run_with_timeout(Some(Duration::from_secs(30)));
    }
    let words = r.shipped.words(&r.state_dir, None, &["cleanup".into(), "--wait".into(), CLEANUP_WAIT.into()]);
    r.ssh
        .command(&words)
        .run_with_timeout(Some(Duration::from_secs(900)))
        .with_context(|| format!("host {}: wait for its pgtier to tear down", r.ssh.name))?;
    Ok(())
}

/// Whether `path` is a directory on the host.
pub fn remote_dir_exists(ssh: &SshHost, path: &str) -> bool {
    ssh.run(&["test".into(), "-d".into(), path.into()]).is_ok()
}

/// Brings the host's result set at `remote` into `local` (replacing what was there, atomically
/// by rename), then removes it on the host. `tar` over the ssh session, no port.
pub fn fetch(ssh: &SshHost, remote: &str, local: &Path) -> Result<()> {
    let parent = local.parent().expect("a host's directory has a parent");
    std::fs::create_dir_all(parent).with_context(|| format!("create {}", parent.display()))?;
    let incoming = parent.join(format!(".{}.incoming", ssh.name));
    let _ = std::fs::remove_dir_all(&incoming);
    std::fs::create_dir(&incoming).with_context(|| format!("create {}", incoming.display()))?;
    let words: Vec<String> = vec!["tar".into(), "-C".into(), remote.into(), "-cf".into(), "-".into(), ".".into()];
    pipe(
        Command::new("ssh").args(&ssh.options).arg(&ssh.destination).arg("--").arg(posix_command(&words)),
        Command::new("tar").arg("-C").arg(&incoming).arg("-xf").arg("-"),
    )
    .with_context(|| format!("bring host {}'s result set {remote} here", ssh.name))?;
    if local.exists() {
        let old = parent.join(format!(".{}.old", ssh.name));
        let _ = std::fs::remove_dir_all(&old);
        std::fs::rename(local, &old)?;
        std::fs::rename(&incoming, local)?;
        let _ = std::fs::remove_dir_all(&old);
    } else {
        std::fs::rename(&incoming, local)?;
    }
    ssh.run(&["rm".into(), "-rf".into(), "--".into(), remote.into()])
        .with_context(|| format!("remove {remote} on host {} (it is here now)", ssh.name))?;
    Ok(())
}

/// Puts `local` (a result set brought back earlier) on the host at `remote`, for a resume.
pub fn upload(ssh: &SshHost, local: &Path, remote: &str) -> Result<()> {
    let script = r#"umask 077 && mkdir -p -- "$1" && tar -C "$1" -xf -"#;
    let words: Vec<String> = ["sh", "-c", script, "sh", remote].iter().map(|s| s.to_string()).collect();
    pipe(
        Command::new("tar").arg("-C").arg(local).args(["-cf", "-", "."]),
        Command::new("ssh").args(&ssh.options).arg(&ssh.destination).arg("--").arg(posix_command(&words)),
    )
    .with_context(|| format!("put {} on host {} at {remote}", local.display(), ssh.name))
}

/// `from | to`, both must succeed.
fn pipe(from: &mut Command, to: &mut Command) -> Result<()> {
    let mut a = from.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().context("start the sender")?;
    let out = a.stdout.take().expect("piped");
    let b = to
        .stdin(Stdio::from(out))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .context("start the receiver")?;
    let bo = b.wait_with_output()?;
    let ao = a.wait_with_output()?;
    if !ao.status.success() || !bo.status.success() {
        bail!("{}{}", String::from_utf8_lossy(&ao.stderr).trim(), String::from_utf8_lossy(&bo.stderr).trim());
    }
    Ok(())
}

/// The host's result set here.
pub fn local_dir(results: &Path, name: &str) -> PathBuf {
    results::fleet::FleetRecord::host_dir(results, name)
}

#[cfg(test)]
mod tests {
    use std::os::unix::process::ExitStatusExt;

    use super::*;

    fn exit(code: i32) -> std::process::ExitStatus {
        std::process::ExitStatus::from_raw(code << 8)
    }

    #[test]
    fn a_failed_host_is_known_by_its_failure_line() {
        let tail: Vec<String> = [
            "error: preflight: 1. zram: the module is missing",
            "Nothing was touched.",
            "  FAILED: unmount /mnt: I/O error: busy",
            &format!("{HOST_FAILURE_LINE}error: preflight: 1. zram: the module is missing"),
        ]
        .map(String::from)
        .to_vec();
        let e = ended("db1", exit(2), &tail, false);
        assert_eq!(e.status, HostStatus::Failed);
        assert_eq!(
            e.cause.as_deref(),
            Some("host db1: pgtier there ended with exit status 2: error: preflight: 1. zram: the module is missing")
        );
        // Without the line (a crash), the host's last line is what it said.
        let e = ended("db1", exit(101), &tail[..3], false);
        assert_eq!(
            e.cause.as_deref(),
            Some("host db1: pgtier there ended with exit status 101: FAILED: unmount /mnt: I/O error: busy")
        );
        assert_eq!(ended("db1", exit(0), &tail, false).status, HostStatus::Complete);
        assert_eq!(ended("db1", exit(255), &tail, false).status, HostStatus::Lost);
    }
}
