//! Why a server or client died, said plainly: the OOM killer inside the server's cgroup, a
//! process killed by a signal, and what the kernel and the server log said about it.

use std::time::Duration;

use journal::{CommandError, CommandLine, Output};

/// A server process the postmaster reported as killed (`server process (PID 14708) was
/// terminated by signal 9: Killed`, followed by `Failed process was running: ...`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KilledProcess {
    pub pid: i32,
    /// `server process`, `autovacuum worker`, `checkpointer process`...
    pub process: String,
    pub signal: i32,
    /// What it was running, when the log says.
    pub running: Option<String>,
}

impl KilledProcess {
    /// `a server process (PID 14708, running "autovacuum: ANALYZE public.pgbench_accounts") was
    /// killed by signal 9 (SIGKILL)`.
    pub fn sentence(&self) -> String {
        let running = self.running.as_ref().map(|r| format!(", running \"{r}\"")).unwrap_or_default();
        format!(
            "{} {} (PID {}{running}) was killed by signal {} ({})",
            if self.process.starts_with(['a', 'e', 'i', 'o', 'u']) { "an" } else { "a" },
            self.process,
            self.pid,
            self.signal,
            signal_name(self.signal)
        )
    }
}

/// The processes a PostgreSQL server log reports as terminated by a signal, oldest first.
pub fn killed_in_server_log(log: &str) -> Vec<KilledProcess> {
    let mut out: Vec<KilledProcess> = Vec::new();
    let mut last_pid = None;
    for line in log.lines() {
        if let Some(at) = line.find(" was terminated by signal ") {
            let head = &line[..at];
            let Some(open) = head.rfind(" (PID ") else { continue };
            let pid: Option<i32> = head[open + 6..].trim_end_matches(')').parse().ok();
            let process = head[..open].rsplit("LOG:").next().unwrap_or("").trim().to_string();
            let signal = line[at + " was terminated by signal ".len()..]
                .split(|c: char| !c.is_ascii_digit())
                .next()
                .and_then(|s| s.parse().ok());
            if let (Some(pid), Some(signal)) = (pid, signal) {
                out.push(KilledProcess { pid, process, signal, running: None });
                last_pid = Some(pid);
            }
        } else if let Some(rest) = line.split("DETAIL:  Failed process was running: ").nth(1)
            && let Some(k) = out.last_mut()
            && Some(k.pid) == last_pid
            && k.running.is_none()
        {
            k.running = Some(rest.trim().to_string());
        }
    }
    out
}

/// Kernel messages about OOM kills in the memory cgroup `cgroup` (its path as the kernel names
/// it: `oom-kill:...oom_memcg=/pgtier/<run>/<server>` and the `Killed process` line after it), or
/// of one of `pids` by any OOM kill.
pub fn kernel_oom_messages(kernel_log: &str, cgroup: Option<&str>, pids: &[i32]) -> Vec<String> {
    let mut out = Vec::new();
    let mut armed = false;
    for line in kernel_log.lines() {
        let text = line.split_once("] ").map(|(_, t)| t).unwrap_or(line).trim();
        if text.starts_with("oom-kill:") {
            armed = cgroup.is_some_and(|path| {
                text.split(',').any(|f| f.strip_prefix("oom_memcg=").is_some_and(|p| p.trim_end_matches('/') == path))
            });
            continue;
        }
        if text.contains("Killed process ") {
            let pid = text
                .split("Killed process ")
                .nth(1)
                .and_then(|r| r.split_whitespace().next())
                .and_then(|p| p.parse::<i32>().ok());
            if armed || pid.is_some_and(|p| pids.contains(&p)) {
                out.push(text.to_string());
            }
            armed = false;
        }
    }
    out
}

/// Runs `dmesg` (the kernel's ring buffer).
pub fn dmesg() -> Result<Output, CommandError> {
    CommandLine::new("dmesg").output(Some(Duration::from_secs(10)))
}

/// The kernel's ring buffer (`dmesg`), or an empty text when it cannot be read.
pub fn kernel_log() -> String {
    kernel_log_of(&dmesg())
}

/// What `dmesg` printed, or an empty text when it failed.
pub fn kernel_log_of(dmesg: &Result<Output, CommandError>) -> String {
    match dmesg {
        Ok(o) if o.status == 0 => o.stdout.clone(),
        _ => String::new(),
    }
}

/// Why a server is not healthy, as sentences: how its postmaster (PID `postmaster`) ended
/// (`exit`, once it has), the processes its log reports killed by a signal, and what the kernel
/// said about them (OOM kills in the memory cgroup the kernel names `cgroup`, or of one of those
/// PIDs). Empty when nothing of that happened.
pub fn death_report(
    postmaster: i32,
    exit: Option<&std::process::ExitStatus>,
    server_log: &str,
    kernel_log: &str,
    cgroup: Option<&str>,
) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(status) = exit {
        out.push(format!("the postmaster (PID {postmaster}) ended with {}", exit_text(status)));
    }
    let killed = killed_in_server_log(server_log);
    out.extend(killed.iter().map(|k| k.sentence()));
    let mut pids: Vec<i32> = killed.iter().map(|k| k.pid).collect();
    pids.push(postmaster);
    out.extend(kernel_oom_messages(kernel_log, cgroup, &pids).iter().map(|k| format!("kernel: {k}")));
    out
}

/// `SIGKILL` for 9.
pub fn signal_name(signal: i32) -> String {
    nix::sys::signal::Signal::try_from(signal)
        .map(|s| s.as_str().to_string())
        .unwrap_or_else(|_| format!("signal {signal}"))
}

/// How a process ended, from its wait status: `exit code 1` or `signal 9 (SIGKILL)`.
pub fn exit_text(status: &std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(c), _) => format!("exit code {c}"),
        (None, Some(s)) => format!("signal {s} ({})", signal_name(s)),
        _ => status.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // From the emulated seed-004 run of 2026-12-01 (runs/0011-.../postgres.log and dmesg.txt).
    const SERVER_LOG: &str = "\
2026-12-01 09:34:11.002 UTC [14646] LOG:  database system is ready to accept connections
2026-12-01 09:34:21.369 UTC [14646] LOG:  server process (PID 14708) was terminated by signal 9: Killed
2026-12-01 09:34:21.369 UTC [14646] DETAIL:  Failed process was running: autovacuum: ANALYZE public.pgbench_accounts
2026-12-01 09:34:21.369 UTC [14646] LOG:  terminating any other active server processes
2026-12-01 09:34:21.401 UTC [14646] LOG:  background writer process (PID 14650) was terminated by signal 6: Aborted
";
    const KERNEL: &str = "\
[  481.795814] postgres invoked oom-killer: gfp_mask=0xcc0(GFP_KERNEL), order=0, oom_score_adj=0
[  481.800509] memory+swap: usage 163840kB, limit 9007199254740988kB, failcnt 0
[  481.800638] oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,mems_allowed=0,oom_memcg=/pgtier/pgbench-thread-sweep-20261201T093201Z-0d41b7/0011-local-nvme-simple-update-c1-seed004-performance-r1,task_memcg=/pgtier/pgbench-thread-sweep-20261201T093201Z-0d41b7/0011-local-nvme-simple-update-c1-seed004-performance-r1,task=postgres,pid=14708,uid=101
[  481.800655] Memory cgroup out of memory: Killed process 14708 (postgres) total-vm:229464kB, anon-rss:114976kB, file-rss:6464kB, shmem-rss:34748kB, UID:101 pgtables:424kB oom_score_adj:0
[  500.000000] Out of memory: Killed process 999 (pgbench) total-vm:1kB
";

    #[test]
    fn server_log_names_the_killed_process_and_what_it_ran() {
        let k = killed_in_server_log(SERVER_LOG);
        assert_eq!(k.len(), 2);
        assert_eq!(
            k[0],
            KilledProcess {
                pid: 14708,
                process: "server process".into(),
                signal: 9,
                running: Some("autovacuum: ANALYZE public.pgbench_accounts".into())
            }
        );
        assert_eq!(
            k[0].sentence(),
            "a server process (PID 14708, running \"autovacuum: ANALYZE public.pgbench_accounts\") was killed by signal 9 (SIGKILL)"
        );
        assert_eq!(
            (k[1].process.as_str(), k[1].signal, k[1].running.as_deref()),
            ("background writer process", 6, None)
        );
    }

    #[test]
    fn kernel_oom_lines_of_one_cgroup_or_pid() {
        let ours = kernel_oom_messages(
            KERNEL,
            Some(
                "/pgtier/pgbench-thread-sweep-20261201T093201Z-0d41b7/0011-local-nvme-simple-update-c1-seed004-performance-r1",
            ),
            &[],
        );
        assert_eq!(ours.len(), 1);
        assert!(ours[0].starts_with("Memory cgroup out of memory: Killed process 14708 (postgres)"), "{ours:?}");
        // The same server name in another run's cgroup is not ours.
        assert!(
            kernel_oom_messages(
                KERNEL,
                Some("/pgtier/other-run/0011-local-nvme-simple-update-c1-seed004-performance-r1"),
                &[]
            )
            .is_empty()
        );
        let by_pid = kernel_oom_messages(KERNEL, None, &[999]);
        assert_eq!(by_pid, vec!["Out of memory: Killed process 999 (pgbench) total-vm:1kB".to_string()]);
    }

    #[test]
    fn a_death_report_names_the_postmaster_the_killed_and_the_kernel() {
        use std::os::unix::process::ExitStatusExt;
        let cgroup = "/pgtier/pgbench-thread-sweep-20261201T093201Z-0d41b7/0011-local-nvme-simple-update-c1-seed004-performance-r1";
        let ended = std::process::ExitStatus::from_raw(9);
        let r = death_report(14646, Some(&ended), SERVER_LOG, KERNEL, Some(cgroup));
        assert_eq!(r.len(), 4, "{r:?}");
        assert_eq!(r[0], "the postmaster (PID 14646) ended with signal 9 (SIGKILL)");
        assert!(r[1].starts_with("a server process (PID 14708, running"), "{r:?}");
        assert!(r[2].starts_with("a background writer process (PID 14650)"), "{r:?}");
        assert!(r[3].starts_with("kernel: Memory cgroup out of memory: Killed process 14708"), "{r:?}");
        assert!(death_report(1, None, "", KERNEL, None).is_empty());
    }

    #[test]
    fn signal_names() {
        assert_eq!(signal_name(9), "SIGKILL");
        assert_eq!(signal_name(15), "SIGTERM");
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(exit_text(&std::process::ExitStatus::from_raw(9)), "signal 9 (SIGKILL)");
        assert_eq!(exit_text(&std::process::ExitStatus::from_raw(1 << 8)), "exit code 1");
    }
}
