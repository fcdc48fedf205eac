//! Process identity that survives PID reuse: a PID plus the kernel's start time of that process.

use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::sys::wait::{WaitPidFlag, waitpid};
use nix::unistd::Pid;

/// A process as the kernel knows it: PID and start time (clock ticks since boot, field 22 of
/// `/proc/PID/stat`). Two processes never share both.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ProcessId {
    pub pid: i32,
    pub start_time: u64,
}

impl ProcessId {
    /// Identity of a live process, or `None` when it does not exist.
    pub fn of(pid: i32) -> Option<ProcessId> {
        let stat = read_stat(pid)?;
        Some(ProcessId { pid, start_time: stat.start_time })
    }

    /// True while this very process exists and is not a zombie.
    pub fn is_alive(&self) -> bool {
        match read_stat(self.pid) {
            Some(stat) => stat.start_time == self.start_time && stat.state != 'Z' && stat.state != 'X',
            None => false,
        }
    }

    /// True once this process has finished exiting: it is no longer in /proc (reaped, or its
    /// PID now names another process), or it is a zombie whose threads have all exited and that
    /// is not ours to reap (its parent reaps it). A zombie [`is_alive`](Self::is_alive) says no
    /// to can still be exiting: a thread group's leader turns zombie first, while its other
    /// threads still hold its files and connections.
    pub fn is_gone(&self) -> bool {
        match read_stat(self.pid) {
            None => true,
            Some(stat) if stat.start_time != self.start_time => true,
            Some(stat) if stat.state == 'Z' || stat.state == 'X' => !is_our_child(self.pid) && threads(self.pid) <= 1,
            Some(_) => false,
        }
    }

    /// Sends `signal`, waits up to `grace` for the process to end, then SIGKILLs it.
    /// Returns true when it had to escalate to SIGKILL.
    pub fn terminate(&self, signal: Signal, grace: Duration) -> bool {
        if !self.is_alive() {
            // Already exiting (or gone): wait for the rest of its exit, and reap it.
            self.wait_gone(grace);
            return false;
        }
        let _ = kill(Pid::from_raw(self.pid), signal);
        if self.wait_gone(grace) {
            return false;
        }
        let _ = kill(Pid::from_raw(self.pid), Signal::SIGKILL);
        self.wait_gone(Duration::from_secs(10));
        true
    }

    /// Polls until the process is gone ([`is_gone`](Self::is_gone)), reaping it if it is our
    /// child; false when it is still there after `limit`.
    pub fn wait_gone(&self, limit: Duration) -> bool {
        let start = Instant::now();
        loop {
            // Only this very process: its PID may name another one by now.
            if read_stat(self.pid).is_some_and(|s| s.start_time == self.start_time) {
                reap(self.pid);
            }
            if self.is_gone() {
                return true;
            }
            if start.elapsed() > limit {
                return false;
            }
            std::thread::sleep(Duration::from_millis(25));
        }
    }
}

/// Reaps `pid` if it is a finished child of ours; harmless otherwise.
fn reap(pid: i32) {
    let _ = waitpid(Pid::from_raw(pid), Some(WaitPidFlag::WNOHANG));
}

/// Whether `pid` is a child of this process (its parent, field 4 of `/proc/PID/stat`, is us).
fn is_our_child(pid: i32) -> bool {
    read_stat(pid).is_some_and(|s| s.parent == std::process::id() as i32)
}

/// How many threads `pid` still has (entries of `/proc/PID/task`).
fn threads(pid: i32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/task")).map(|rd| rd.count()).unwrap_or(0)
}

struct Stat {
    state: char,
    parent: i32,
    start_time: u64,
}

fn read_stat(pid: i32) -> Option<Stat> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) is in parentheses and may contain spaces or ')'.
    let rest = &text[text.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // rest starts at field 3 (state); the parent is field 4, the start time field 22.
    let state = fields.first()?.chars().next()?;
    let parent = fields.get(4 - 3)?.parse().ok()?;
    let start_time = fields.get(22 - 3)?.parse().ok()?;
    Some(Stat { state, parent, start_time })
}

/// PIDs of every process whose command line contains `needle` (used by cleanup to find helpers
/// started by a run whose record of them was cut short).
pub fn pids_with_cmdline_containing(needle: &str) -> Vec<i32> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return out;
    };
    let me = std::process::id() as i32;
    for e in entries.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
            continue;
        };
        if pid == me {
            continue;
        }
        if let Ok(raw) = std::fs::read(format!("/proc/{pid}/cmdline")) {
            let cmd = String::from_utf8_lossy(&raw).replace('\0', " ");
            if cmd.contains(needle) {
                out.push(pid);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identity_of_self_is_alive_and_stable() {
        let me = ProcessId::of(std::process::id() as i32).unwrap();
        assert!(me.is_alive());
        assert_eq!(ProcessId::of(me.pid), Some(me));
        let other = ProcessId { pid: me.pid, start_time: me.start_time + 1 };
        assert!(!other.is_alive(), "a different start time is a different process");
    }

    #[test]
    fn terminate_a_child() {
        let _forking = crate::forking();
        let mut child = std::process::Command::new("sleep").arg("30").spawn().unwrap();
        let id = ProcessId::of(child.id() as i32).unwrap();
        assert!(id.is_alive());
        assert!(!id.terminate(Signal::SIGTERM, Duration::from_secs(5)));
        assert!(!id.is_alive());
        assert!(id.is_gone(), "reaped: no longer in /proc");
        let _ = child.wait();
    }

    #[test]
    fn an_unreaped_child_is_not_gone() {
        let _forking = crate::forking();
        let child = std::process::Command::new("sleep").arg("30").spawn().unwrap();
        let id = ProcessId::of(child.id() as i32).unwrap();
        let _ = kill(Pid::from_raw(id.pid), Signal::SIGKILL);
        // Dead but not reaped: a zombie of ours.
        while read_stat(id.pid).is_some_and(|s| s.state != 'Z') {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(!id.is_alive());
        assert!(!id.is_gone(), "a zombie of ours is still in /proc until it is reaped");
        assert!(id.wait_gone(Duration::from_secs(5)));
        assert!(!std::path::Path::new(&format!("/proc/{}", id.pid)).exists());
        drop(child);
    }
}
