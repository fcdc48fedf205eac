//! CPU pinning of the processes pgtier starts (`[measurement] pin_client`, `pin_servers`): a
//! child is confined with sched_setaffinity(2) between fork and exec, so every process it forks
//! (a postmaster's backends, pgbench's threads) inherits the set, and the set is read back from
//! the kernel (`Cpus_allowed_list` in /proc/PID/status) rather than assumed.

use std::io;

use crate::RunnerError;

/// A CPU list as the kernel writes one (`Cpus_allowed_list`, `taskset -c`): `0`, `1-3`,
/// `0,2-3`. The CPUs sorted, each once; an error says how to write one.
pub fn parse_cpu_list(text: &str) -> Result<Vec<u32>, String> {
    let how = "write CPUs as the kernel lists them, like \"0\", \"1-3\" or \"0,2-3\"";
    let mut cpus = Vec::new();
    for part in text.split(',') {
        let part = part.trim();
        let (lo, hi) = part.split_once('-').unwrap_or((part, part));
        let (Ok(lo), Ok(hi)) = (lo.trim().parse::<u32>(), hi.trim().parse::<u32>()) else {
            return Err(format!("{text:?} is not a CPU list; {how}"));
        };
        if lo > hi || hi >= MAX_CPUS {
            return Err(format!("{part:?} in {text:?} is not a CPU range (low-high, CPUs below {MAX_CPUS}); {how}"));
        }
        cpus.extend(lo..=hi);
    }
    cpus.sort_unstable();
    cpus.dedup();
    Ok(cpus)
}

/// `cpus` in the kernel's list form (`0,2-3`), the inverse of [`parse_cpu_list`].
pub fn format_cpu_list(cpus: &[u32]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < cpus.len() {
        let mut j = i;
        while j + 1 < cpus.len() && cpus[j + 1] == cpus[j] + 1 {
            j += 1;
        }
        parts.push(if i == j { cpus[i].to_string() } else { format!("{}-{}", cpus[i], cpus[j]) });
        i = j + 1;
    }
    parts.join(",")
}

/// CPUs a `cpu_set_t` can name (glibc's CPU_SETSIZE is 1024; the list parser allows no more).
const MAX_CPUS: u32 = 1024;

/// Confines the child `cmd` starts to `cpus` before it execs (after any earlier `pre_exec`).
pub fn confine(cmd: &mut std::process::Command, cpus: &[u32]) {
    use std::os::unix::process::CommandExt;
    // SAFETY: cpu_set_t is plain data; zeroed is its empty set (CPU_ZERO).
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for &cpu in cpus {
        // SAFETY: cpu < MAX_CPUS = CPU_SETSIZE, checked when the list was parsed.
        unsafe { libc::CPU_SET(cpu as usize, &mut set) };
    }
    // SAFETY: between fork and exec only sched_setaffinity (a system call) runs; the set was
    // built before the fork.
    unsafe {
        cmd.pre_exec(move || {
            if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

/// The CPUs process `pid` may run on, as the kernel says (`Cpus_allowed_list`).
pub fn allowed_cpus(pid: i32) -> io::Result<Vec<u32>> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    allowed_in_status(&status).ok_or_else(|| io::Error::other(format!("/proc/{pid}/status has no Cpus_allowed_list")))
}

fn allowed_in_status(status: &str) -> Option<Vec<u32>> {
    let line = status.lines().find_map(|l| l.strip_prefix("Cpus_allowed_list:"))?;
    parse_cpu_list(line.trim()).ok()
}

/// Checks that the kernel confined `pid` (`what`, for the error) to exactly `cpus`.
pub fn verify(pid: i32, cpus: &[u32], what: &str) -> Result<(), RunnerError> {
    let allowed =
        allowed_cpus(pid).map_err(|e| RunnerError::io(format!("read the CPUs {what} (PID {pid}) may run on"), e))?;
    if allowed != cpus {
        return Err(RunnerError::Setup(format!(
            "{what} (PID {pid}) was pinned to CPUs {} but the kernel lets it run on {}; a cpuset cgroup \
             or a taskset around pgtier may narrow the set: pin to CPUs inside the one pgtier runs on",
            format_cpu_list(cpus),
            format_cpu_list(&allowed)
        )));
    }
    Ok(())
}

/// Checks that pgtier itself may run on every CPU of `cpus`, naming `key` (the configuration
/// key) in the error: a CPU outside the set pgtier was given (by taskset, or a cpuset cgroup that
/// would refuse it anyway) would take the benchmark off the CPUs its user left it.
pub fn check_available(cpus: &[u32], key: &str) -> Result<(), RunnerError> {
    let own =
        allowed_cpus(std::process::id() as i32).map_err(|e| RunnerError::io("read the CPUs pgtier may run on", e))?;
    let missing: Vec<u32> = cpus.iter().copied().filter(|c| !own.contains(c)).collect();
    if !missing.is_empty() {
        return Err(RunnerError::Setup(format!(
            "{key} names CPU {} but pgtier may only run on CPUs {} (nproc: {}); pin to those",
            format_cpu_list(&missing),
            format_cpu_list(&own),
            own.len()
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists() {
        assert_eq!(parse_cpu_list("0"), Ok(vec![0]));
        assert_eq!(parse_cpu_list("1-3"), Ok(vec![1, 2, 3]));
        assert_eq!(parse_cpu_list("3, 0,2-3"), Ok(vec![0, 2, 3]));
        assert!(parse_cpu_list("3-1").unwrap_err().contains("not a CPU range"));
        assert!(parse_cpu_list("1024").unwrap_err().contains("below 1024"));
        assert!(parse_cpu_list("one").unwrap_err().contains("like \"0\", \"1-3\""));
        assert!(parse_cpu_list("").is_err());
        for text in ["0", "1-3", "0,2-3", "0-1,4,6-7"] {
            assert_eq!(format_cpu_list(&parse_cpu_list(text).unwrap()), text);
        }
    }

    #[test]
    fn the_allowed_list_of_a_status_file() {
        // From /proc/self/status on kernel 6.18 (2 CPUs).
        let status = "Name:\tcat\nCpus_allowed:\t3\nCpus_allowed_list:\t0-1\nMems_allowed:\t1\n";
        assert_eq!(allowed_in_status(status), Some(vec![0, 1]));
        assert_eq!(allowed_in_status("Name:\tcat\n"), None);
    }

    #[test]
    fn a_confined_child_runs_on_its_cpus_only() {
        let own = allowed_cpus(std::process::id() as i32).unwrap();
        let cpu = *own.last().unwrap();
        let mut cmd = std::process::Command::new("sleep");
        cmd.arg("5");
        confine(&mut cmd, &[cpu]);
        let mut child = cmd.spawn().unwrap();
        let seen = allowed_cpus(child.id() as i32);
        let verified = verify(child.id() as i32, &[cpu], "sleep");
        let _ = child.kill();
        let _ = child.wait();
        assert_eq!(seen.unwrap(), vec![cpu]);
        verified.unwrap();
        if own.len() > 1 {
            assert!(verify(std::process::id() as i32, &[cpu], "the test").is_err(), "a wider set is refused");
        }
        assert!(check_available(&[cpu], "measurement.pin_client").is_ok());
        let err = check_available(&[MAX_CPUS - 1], "measurement.pin_servers").unwrap_err().to_string();
        assert!(err.contains("measurement.pin_servers names CPU 1023"), "{err}");
    }
}
