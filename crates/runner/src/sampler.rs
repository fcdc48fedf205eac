//! During a measured run: I/O of each device of the placement once a second (/proc/diskstats),
//! and the CPU split of the whole machine over the interval (/proc/stat at its start and end,
//! steal included), with the 1-minute load average at each end (/proc/loadavg): the machine's
//! state, [`machine_state`]. Cheap: one small file read per second. The raw counter lines are
//! kept for the run's directory.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use results::diskstats::parse_diskstats_line;
pub use results::diskstats::{DiskCounters, parse_diskstats};
use results::record::{CpuSplit, DeviceIo, IoSample, MachineState};

use crate::matrix::DeviceRole;

/// Milliseconds the device had I/O in flight (io_ticks, field 13 of a /proc/diskstats line), per
/// kernel name: utilisation over an interval is its growth over the interval's length.
pub fn parse_io_ticks(text: &str) -> BTreeMap<String, u64> {
    text.lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            Some((f.get(2)?.to_string(), f.get(12)?.parse().ok()?))
        })
        .collect()
}

/// CPU jiffies of the machine (first line of /proc/stat), and how many CPUs it lists.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct CpuCounters {
    pub user: u64,
    pub system: u64,
    pub iowait: u64,
    pub idle: u64,
    /// Time the hypervisor ran something else while a CPU of this machine wanted to run.
    pub steal: u64,
    pub total: u64,
    /// The `cpuN` lines (logical CPUs online).
    pub cpus: u32,
}

impl CpuCounters {
    /// Busy jiffies: user (guest time is inside it), nice, system, irq, softirq; not idle,
    /// iowait or steal.
    pub fn busy(&self) -> u64 {
        self.user + self.system
    }
}

pub fn parse_proc_stat(text: &str) -> CpuCounters {
    let Some(line) = text.lines().find(|l| l.starts_with("cpu ")) else { return CpuCounters::default() };
    let v: Vec<u64> = line.split_whitespace().skip(1).filter_map(|x| x.parse().ok()).collect();
    let g = |i: usize| v.get(i).copied().unwrap_or(0);
    let cpus = text
        .lines()
        .filter(|l| l.strip_prefix("cpu").and_then(|r| r.chars().next()).is_some_and(|c| c.is_ascii_digit()))
        .count() as u32;
    // user nice system idle iowait irq softirq steal guest guest_nice (guest is inside user)
    CpuCounters {
        user: g(0) + g(1),
        system: g(2) + g(5) + g(6),
        idle: g(3),
        iowait: g(4),
        steal: g(7),
        total: g(0) + g(1) + g(2) + g(3) + g(4) + g(5) + g(6) + g(7),
        cpus,
    }
}

/// The 1-minute load average, the first field of /proc/loadavg.
pub fn parse_loadavg(text: &str) -> Option<f64> {
    text.split_whitespace().next()?.parse().ok()
}

/// Jiffies per second of /proc/stat's counters (USER_HZ, 100 on Linux).
pub fn clock_ticks() -> f64 {
    // SAFETY: sysconf reads a constant.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 { t as f64 } else { 100.0 }
}

/// The machine's state over an interval from /proc/stat at its two ends (`c0`, `c1`, in jiffies
/// of `ticks` per second), the load average at each end, and the CPU-seconds the study's own
/// processes used meanwhile (`study_cpu_s`, see [`MachineState::study_cpu_s`]). The CPU used
/// outside the study is the machine's busy time less the study's: a subtraction, so that
/// processes that start and end inside the interval (a compiler run by someone else) count
/// too. Precision: /proc/stat counts in jiffies (10 ms per CPU); the cgroup and getrusage
/// figures are finer, so a small negative difference is read as 0.
pub fn machine_state(
    c0: &CpuCounters,
    c1: &CpuCounters,
    ticks: f64,
    load1: (Option<f64>, Option<f64>),
    study_cpu_s: Option<f64>,
) -> MachineState {
    let total = c1.total.saturating_sub(c0.total);
    let cpu_time_s = total as f64 / ticks;
    let busy_cpu_s = c1.busy().saturating_sub(c0.busy()) as f64 / ticks;
    let share = |s: f64| if cpu_time_s > 0.0 { s / cpu_time_s * 100.0 } else { 0.0 };
    let outside_cpu_s = study_cpu_s.map(|study| (busy_cpu_s - study).max(0.0));
    MachineState {
        load1_start: load1.0,
        load1_end: load1.1,
        cpus: c1.cpus,
        cpu_time_s,
        steal_pct: share(c1.steal.saturating_sub(c0.steal) as f64 / ticks),
        busy_cpu_s,
        study_cpu_s,
        outside_cpu_s,
        outside_pct: outside_cpu_s.map(share),
    }
}

fn rates(a: &DiskCounters, b: &DiskCounters, secs: f64) -> (f64, f64, f64, f64) {
    let s = secs.max(1e-6);
    (
        (b.reads.saturating_sub(a.reads)) as f64 / s,
        (b.writes.saturating_sub(a.writes)) as f64 / s,
        (b.read_sectors.saturating_sub(a.read_sectors)) as f64 * 512.0 / 1e6 / s,
        (b.write_sectors.saturating_sub(a.write_sectors)) as f64 * 512.0 / 1e6 / s,
    )
}

/// Counters at the start or end of the interval, with the raw text they were parsed from.
struct Snapshot {
    at: Instant,
    disks: BTreeMap<String, DiskCounters>,
    cpu: CpuCounters,
    diskstats_text: String,
    stat_text: String,
    loadavg_text: String,
}

fn snapshot() -> Snapshot {
    let diskstats_text = std::fs::read_to_string("/proc/diskstats").unwrap_or_default();
    let stat_text = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let loadavg_text = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    Snapshot {
        at: Instant::now(),
        disks: parse_diskstats(&diskstats_text),
        cpu: parse_proc_stat(&stat_text),
        diskstats_text,
        stat_text,
        loadavg_text,
    }
}

/// What the sampling thread hands back.
#[derive(Default)]
struct ThreadOutput {
    series: Vec<IoSample>,
    /// `t=<seconds>` followed by the /proc/diskstats lines of the sampled devices, per sample.
    raw: String,
    cpu_seconds: f64,
}

/// A running sampler; `finish` stops it and returns what it saw.
pub struct Sampler {
    stop: std::sync::mpsc::Sender<()>,
    handle: std::thread::JoinHandle<ThreadOutput>,
    first: Snapshot,
    devices: Vec<DeviceRole>,
}

/// What the sampler measured over the whole interval.
pub struct Sampled {
    pub devices: Vec<DeviceIo>,
    pub cpu: CpuSplit,
    pub series: Vec<IoSample>,
    /// /proc/stat at the interval's start and end, and the 1-minute load average at each
    /// (for [`machine_state`]).
    pub cpu_ends: (CpuCounters, CpuCounters),
    pub load1: (Option<f64>, Option<f64>),
    /// CPU seconds the sampler's thread used (its own cost, for the monitoring-cost benchmark).
    pub seconds: f64,
    /// The raw counters every figure above was computed from, as files for the run's directory:
    /// (file name, contents).
    pub raw: Vec<(&'static str, String)>,
}

impl Sampler {
    /// Starts sampling `devices` every `interval`.
    pub fn start(devices: Vec<DeviceRole>, interval: Duration) -> Sampler {
        let (stop, stopped) = std::sync::mpsc::channel::<()>();
        let first = snapshot();
        let names: Vec<String> = devices.iter().map(|d| d.kernel_name.clone()).collect();
        let start = first.at;
        let mut prev = BTreeMap::new();
        for n in &names {
            prev.insert(n.clone(), first.disks.get(n).copied().unwrap_or_default());
        }
        let handle = std::thread::spawn(move || {
            let mut out = ThreadOutput::default();
            let mut last = Instant::now();
            // Sleeps until the next sample is due; a message (or a dropped sender) stops it.
            while let Err(std::sync::mpsc::RecvTimeoutError::Timeout) =
                stopped.recv_timeout(interval.saturating_sub(last.elapsed()))
            {
                // Only /proc/diskstats each second; the CPU split needs just the interval's ends.
                let text = std::fs::read_to_string("/proc/diskstats").unwrap_or_default();
                let at = Instant::now();
                let secs = at.duration_since(last).as_secs_f64();
                last = at;
                let t = at.duration_since(start).as_secs_f64();
                out.raw.push_str(&format!("t={t:.3}\n"));
                for line in text.lines() {
                    let Some((name, cur)) = parse_diskstats_line(line) else { continue };
                    let Some(before) = prev.get_mut(name) else { continue };
                    out.raw.push_str(line);
                    out.raw.push('\n');
                    let (ri, wi, rm, wm) = rates(before, &cur, secs);
                    out.series.push(IoSample {
                        t,
                        device: name.to_string(),
                        read_iops: ri,
                        write_iops: wi,
                        read_mb_s: rm,
                        write_mb_s: wm,
                    });
                    *before = cur;
                }
            }
            out.cpu_seconds = thread_cpu_seconds();
            out
        });
        Sampler { stop, handle, first, devices }
    }

    /// Stops sampling and summarises the interval since `start`.
    pub fn finish(self) -> Sampled {
        let last = snapshot();
        let _ = self.stop.send(());
        let ThreadOutput { series, raw, cpu_seconds: sampler_cpu } = self.handle.join().unwrap_or_default();
        let secs = last.at.duration_since(self.first.at).as_secs_f64();
        let devices = self
            .devices
            .iter()
            .map(|d| {
                let a = self.first.disks.get(&d.kernel_name).copied().unwrap_or_default();
                let b = last.disks.get(&d.kernel_name).copied().unwrap_or_default();
                let (ri, wi, rm, wm) = rates(&a, &b, secs);
                let ios = (b.reads - a.reads.min(b.reads)) + (b.writes - a.writes.min(b.writes));
                let ms = (b.read_ms.saturating_sub(a.read_ms)) + (b.write_ms.saturating_sub(a.write_ms));
                let mine: Vec<&IoSample> = series.iter().filter(|s| s.device == d.kernel_name).collect();
                let ticks = |text: &str| parse_io_ticks(text).get(&d.kernel_name).copied().unwrap_or(0);
                let busy_ms = ticks(&last.diskstats_text).saturating_sub(ticks(&self.first.diskstats_text));
                DeviceIo {
                    device: d.device.clone(),
                    role: d.role.clone(),
                    kernel_name: d.kernel_name.clone(),
                    read_iops: ri,
                    write_iops: wi,
                    read_mb_s: rm,
                    write_mb_s: wm,
                    avg_wait_ms: if ios > 0 { ms as f64 / ios as f64 } else { 0.0 },
                    peak_read_iops: mine.iter().map(|s| s.read_iops).fold(0.0, f64::max),
                    peak_write_iops: mine.iter().map(|s| s.write_iops).fold(0.0, f64::max),
                    reads: b.reads.saturating_sub(a.reads),
                    writes: b.writes.saturating_sub(a.writes),
                    util_pct: (busy_ms as f64 / (secs * 1000.0).max(1e-3) * 100.0).min(100.0),
                }
            })
            .collect();
        let (c0, c1) = (self.first.cpu, last.cpu);
        let load1 = (parse_loadavg(&self.first.loadavg_text), parse_loadavg(&last.loadavg_text));
        let total = (c1.total.saturating_sub(c0.total)).max(1) as f64;
        let pct = |a: u64, b: u64| (b.saturating_sub(a)) as f64 / total * 100.0;
        let cpu = CpuSplit {
            user_pct: pct(c0.user, c1.user),
            system_pct: pct(c0.system, c1.system),
            iowait_pct: pct(c0.iowait, c1.iowait),
            idle_pct: pct(c0.idle, c1.idle),
            ..Default::default()
        };
        let raw = vec![
            ("diskstats.begin.txt", self.first.diskstats_text),
            ("diskstats.end.txt", last.diskstats_text),
            ("diskstats.per-second.txt", raw),
            ("stat.begin.txt", self.first.stat_text),
            ("stat.end.txt", last.stat_text),
            ("loadavg.begin.txt", self.first.loadavg_text),
            ("loadavg.end.txt", last.loadavg_text),
        ];
        Sampled { devices, cpu, series, cpu_ends: (c0, c1), load1, seconds: sampler_cpu, raw }
    }
}

/// CPU seconds (user + system) of reaped children of this process so far (getrusage).
pub fn children_cpu_seconds() -> f64 {
    // SAFETY: getrusage fills the struct it is given.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut ru) } != 0 {
        return 0.0;
    }
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// CPU seconds (user + system) of this process so far, every thread.
pub fn process_cpu_seconds() -> f64 {
    // SAFETY: getrusage fills the struct it is given.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) } != 0 {
        return 0.0;
    }
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// CPU seconds (user + system) of the calling thread.
pub fn thread_cpu_seconds() -> f64 {
    // SAFETY: getrusage fills the struct it is given.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) } != 0 {
        return 0.0;
    }
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn diskstats_fields() {
        let t = "   7       3 loop3 1200 0 9600 300 800 10 6400 500 0 900 800 0 0 0 0\n 253 0 zram1 5 0 40 0 7 0 56 0 0 0 0\n";
        let d = parse_diskstats(t);
        assert_eq!(
            d["loop3"],
            DiskCounters {
                reads: 1200,
                read_sectors: 9600,
                read_ms: 300,
                writes: 800,
                write_sectors: 6400,
                write_ms: 500
            }
        );
        assert_eq!(d["zram1"].writes, 7);
        let a = DiskCounters::default();
        let (ri, wi, rm, wm) = rates(&a, &d["loop3"], 2.0);
        assert_eq!((ri, wi), (600.0, 400.0));
        assert!((rm - 9600.0 * 512.0 / 1e6 / 2.0).abs() < 1e-9);
        assert!((wm - 6400.0 * 512.0 / 1e6 / 2.0).abs() < 1e-9);
    }

    #[test]
    fn io_ticks_give_utilisation() {
        let t = "   7       3 loop3 1200 0 9600 300 800 10 6400 500 0 900 800 0 0 0 0\n 253 0 zram1 5 0 40 0\n";
        let ticks = parse_io_ticks(t);
        assert_eq!(ticks.get("loop3"), Some(&900));
        assert_eq!(ticks.get("zram1"), None, "a short line has no io_ticks");
    }

    #[test]
    fn proc_stat_split() {
        let c = parse_proc_stat("cpu  100 5 50 800 40 3 2 0 0 0\ncpu0 1 2 3\n");
        assert_eq!(c, CpuCounters { user: 105, system: 55, idle: 800, iowait: 40, steal: 0, total: 1000, cpus: 1 });
    }

    /// /proc/stat of the 2-CPU test VM (kernel 6.18) five seconds apart while another build ran
    /// (its first lines; `intr` and below cut).
    const STAT_BEGIN: &str = "cpu  21891 0 2800 17868 158 0 33 79 0 0\ncpu0 10791 0 1294 9262 27 0 10 37 0 0\ncpu1 11100 0 1506 8606 130 0 22 41 0 0\nctxt 2631730\n";
    const STAT_END: &str = "cpu  22825 0 2850 17877 159 0 33 84 0 0\ncpu0 11252 0 1324 9267 28 0 10 40 0 0\ncpu1 11573 0 1525 8610 130 0 23 44 0 0\nctxt 2689977\n";

    #[test]
    fn steal_and_cpus_of_a_real_proc_stat() {
        let (a, b) = (parse_proc_stat(STAT_BEGIN), parse_proc_stat(STAT_END));
        assert_eq!((a.steal, b.steal, a.cpus), (79, 84, 2));
        assert_eq!(a.total, 21891 + 2800 + 17868 + 158 + 33 + 79);
        assert_eq!(a.busy(), 21891 + 2800 + 33, "user, nice, system, irq, softirq");
        assert_eq!(parse_loadavg("1.96 0.77 0.29 3/135 6809\n"), Some(1.96));
        assert_eq!(parse_loadavg(""), None);
    }

    #[test]
    fn outside_cpu_is_the_machine_s_busy_time_less_the_study_s() {
        let (a, b) = (parse_proc_stat(STAT_BEGIN), parse_proc_stat(STAT_END));
        // 999 jiffies in all (2 CPUs x 5 s): 934 user, 50 system, 9 idle, 1 iowait, 5 steal.
        let m = machine_state(&a, &b, 100.0, (Some(1.96), Some(1.88)), Some(3.0));
        assert_eq!(m.cpus, 2);
        assert!((m.cpu_time_s - 9.99).abs() < 1e-9, "{m:?}");
        assert!((m.busy_cpu_s - 9.84).abs() < 1e-9, "{m:?}");
        assert!((m.steal_pct - 5.0 / 999.0 * 100.0).abs() < 1e-9, "5 of 999 jiffies: {m:?}");
        assert!((m.outside_cpu_s.unwrap() - 6.84).abs() < 1e-9, "{m:?}");
        assert!((m.outside_pct.unwrap() - 6.84 / 9.99 * 100.0).abs() < 1e-9, "{m:?}");
        assert_eq!((m.load1_start, m.load1_end), (Some(1.96), Some(1.88)));
        // The study's finer counters may exceed the jiffies a little: outside is then 0, not less.
        let busy_study = machine_state(&a, &b, 100.0, (None, None), Some(9.9));
        assert_eq!((busy_study.outside_cpu_s, busy_study.outside_pct), (Some(0.0), Some(0.0)));
        // Without the study's CPU, no outside figure.
        let unknown = machine_state(&a, &b, 100.0, (None, None), None);
        assert_eq!((unknown.outside_cpu_s, unknown.outside_pct), (None, None));
    }

    #[test]
    fn samples_a_real_device_and_keeps_the_raw_lines() {
        // Any device this machine lists in /proc/diskstats.
        let text = std::fs::read_to_string("/proc/diskstats").unwrap();
        let name = parse_diskstats(&text).into_keys().next().expect("a block device");
        let s = Sampler::start(
            vec![DeviceRole { role: "data".into(), device: "x".into(), kernel_name: name.clone() }],
            Duration::from_millis(100),
        );
        std::thread::sleep(Duration::from_millis(350));
        let out = s.finish();
        let times: Vec<f64> = out.series.iter().filter(|x| x.device == name).map(|x| x.t).collect();
        assert!(times.len() >= 2, "{:?}", out.series);
        assert!(times.windows(2).all(|w| w[1] > w[0]), "{times:?}");
        let raw = |f: &str| out.raw.iter().find(|(n, _)| *n == f).map(|(_, t)| t.clone()).unwrap();
        let per_second = raw("diskstats.per-second.txt");
        assert_eq!(per_second.matches("t=").count(), times.len(), "{per_second}");
        assert_eq!(
            per_second.lines().filter(|l| l.split_whitespace().nth(2) == Some(name.as_str())).count(),
            times.len()
        );
        assert!(raw("diskstats.begin.txt").contains(&name) && raw("stat.end.txt").starts_with("cpu "));
        assert_eq!(parse_loadavg(&raw("loadavg.end.txt")), out.load1.1);
        assert!(out.load1.0.is_some() && out.cpu_ends.1.cpus >= 1, "{:?}", out.cpu_ends);
    }
}
