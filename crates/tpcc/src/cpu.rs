//! CPU time of this process (getrusage), of another process and of the PostgreSQL server (from
//! /proc). Public for tools such as the side-by-side benchmark example.

use std::path::Path;

/// User + system CPU seconds consumed so far by this whole process (all threads).
pub fn process_cpu_seconds() -> f64 {
    // SAFETY: getrusage only writes into the zeroed struct we pass.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    if rc != 0 {
        return 0.0;
    }
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// User + system CPU seconds of process `pid` so far (all its threads, plus children it has
/// waited for); `None` when /proc does not show it.
pub fn pid_cpu_seconds(pid: u32) -> Option<f64> {
    let st = read_stat(Path::new("/proc"), pid as i32)?;
    // SAFETY: sysconf has no memory effects.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    Some((st.own_ticks + st.children_ticks) as f64 / if ticks > 0 { ticks as f64 } else { 100.0 })
}

/// The fields of `/proc/PID/stat` we use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ProcStat {
    pub ppid: i32,
    /// utime + stime, clock ticks.
    pub own_ticks: u64,
    /// cutime + cstime: children that exited and were waited for, clock ticks.
    pub children_ticks: u64,
}

/// Parses the text of `/proc/PID/stat` (the command may contain spaces and parentheses, so
/// fields are counted after the last `)`).
pub(crate) fn parse_stat(text: &str) -> Option<ProcStat> {
    let rest = &text[text.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // f[0] = state (field 3), so field n is f[n - 3].
    let num = |n: usize| f.get(n - 3)?.parse::<u64>().ok();
    Some(ProcStat {
        ppid: f.get(1)?.parse().ok()?,
        own_ticks: num(14)? + num(15)?,
        children_ticks: num(16)? + num(17)?,
    })
}

fn read_stat(proc_dir: &Path, pid: i32) -> Option<ProcStat> {
    parse_stat(&std::fs::read_to_string(proc_dir.join(pid.to_string()).join("stat")).ok()?)
}

fn comm(proc_dir: &Path, pid: i32) -> Option<String> {
    Some(std::fs::read_to_string(proc_dir.join(pid.to_string()).join("comm")).ok()?.trim().to_string())
}

/// The CPU time of a PostgreSQL server: its postmaster (including children it has reaped)
/// plus every live child. Processes that exit between two samples move from the second term
/// into the first, so differences between samples are exact to a clock tick.
pub struct ServerCpu {
    postmaster: i32,
    proc_dir: std::path::PathBuf,
    ticks_per_second: f64,
}

impl ServerCpu {
    /// Finds the postmaster from the pid of one of its backends; `None` when /proc does not
    /// show it (another PID namespace, or not a PostgreSQL process).
    pub fn from_backend(backend_pid: i32) -> Option<ServerCpu> {
        let proc_dir = Path::new("/proc");
        let stat = read_stat(proc_dir, backend_pid)?;
        if !comm(proc_dir, backend_pid)?.starts_with("postgres") {
            return None;
        }
        if !comm(proc_dir, stat.ppid)?.starts_with("postgres") {
            return None;
        }
        // SAFETY: sysconf has no memory effects.
        let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
        Some(ServerCpu {
            postmaster: stat.ppid,
            proc_dir: proc_dir.to_path_buf(),
            ticks_per_second: if ticks > 0 { ticks as f64 } else { 100.0 },
        })
    }

    /// CPU seconds consumed by the server so far; `None` if the postmaster is gone.
    pub fn sample(&self) -> Option<f64> {
        let pm = read_stat(&self.proc_dir, self.postmaster)?;
        let mut ticks = pm.own_ticks + pm.children_ticks;
        for entry in std::fs::read_dir(&self.proc_dir).ok()?.flatten() {
            let Some(pid) = entry.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
                continue;
            };
            if let Some(st) = read_stat(&self.proc_dir, pid)
                && st.ppid == self.postmaster
            {
                ticks += st.own_ticks;
            }
        }
        Some(ticks as f64 / self.ticks_per_second)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_stat_with_odd_command_names() {
        let line = "1234 (postgres: a (b) c) S 1200 1234 1234 0 -1 4194560 100 0 0 0 250 75 3 4 20 0 1 0 500 1000 10 18446744073709551615";
        assert_eq!(parse_stat(line), Some(ProcStat { ppid: 1200, own_ticks: 325, children_ticks: 7 }));
        assert_eq!(parse_stat("garbage"), None);
    }

    #[test]
    fn own_process_cpu_is_counted() {
        let before = process_cpu_seconds();
        let mut x = 0u64;
        for i in 0..20_000_000u64 {
            x = x.wrapping_mul(31).wrapping_add(i);
        }
        std::hint::black_box(x);
        assert!(process_cpu_seconds() > before, "a busy loop of tens of milliseconds shows as CPU time");
        let me = read_stat(Path::new("/proc"), std::process::id() as i32).unwrap();
        assert!(me.ppid > 0);
    }
}
