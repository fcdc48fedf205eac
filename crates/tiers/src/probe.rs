//! The physical ceilings of a tier, measured with fio on its mounted filesystem before the matrix:
//! 8 KiB sequential writes each followed by fdatasync (a stand-in for WAL commits: IOPS, p50/p99
//! sync latency, and so the mean time of one write+fdatasync at queue depth 1) and 4 KiB random
//! reads with direct I/O at queue depth 1 (latency) and 32 (IOPS). The report sets the runs'
//! device I/O against these, and the emulated devices' latencies against the classes they stand
//! for.
//!
//! The reads go to a file of their own that fio lays out in full before reading it. Reading the
//! write job's file instead measured a cache, not the device: fio preallocates that file, and the
//! few seconds of synchronous writes fill only its beginning, so most random reads land on
//! unwritten extents, which XFS answers with zeros without any device I/O (on the emulated
//! NVMe/TCP stack: 108.8k IOPS that way against 30.7k on a file fio laid out itself).

use std::path::Path;
use std::time::Duration;

use journal::CommandLine;
use serde::{Deserialize, Serialize};

use crate::system::System;

/// What fio measured on one device.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct DeviceProbe {
    pub device: String,
    pub fio_version: String,
    /// 8 KiB sequential write + fdatasync per write.
    pub wal_write_iops: f64,
    /// fdatasync latency percentiles, µs.
    pub wal_sync_p50_us: f64,
    pub wal_sync_p99_us: f64,
    /// 4 KiB random read, QD32, direct I/O.
    pub randread_iops: f64,
    pub randread_p99_us: f64,
    pub runtime_s: f64,
    /// The raw fio JSON files, relative to the results directory.
    pub raw_files: Vec<String>,
    /// 4 KiB random reads at queue depth 1, direct I/O: mean and median completion latency, µs
    /// (0 when not measured).
    pub read_qd1_mean_us: f64,
    pub read_qd1_p50_us: f64,
    /// Mean time of one 8 KiB write + fdatasync at queue depth 1 (1 s / its IOPS), µs.
    pub write_sync_qd1_mean_us: f64,
    /// What went wrong on the device while it was probed, when something did (see [`survival`]).
    pub failure: Option<String>,
    /// The queue depth the QD32 random-read job reached: the depth most of its I/O was issued
    /// at (fio's `iodepth_level`). 1 on a DAX file, where libaio completes each read as it is
    /// submitted, so "QD32" there is depth 1 in fact. None when fio did not say.
    pub randread_depth: Option<u32>,
}

/// The random-read jobs' file: laid out in full by fio before it is read.
const READ_FILE: &str = ".pgtier-fio-read";

#[derive(Debug, thiserror::Error)]
#[error("fio on {device}: {message}")]
pub struct ProbeError {
    pub device: String,
    pub message: String,
}

/// The two fio runs, as command lines: the write+fdatasync job, then the random reads at queue
/// depth 1 and 32 (one after the other, `--stonewall`) on a file of their own.
pub fn commands(mountpoint: &Path, runtime: Duration, size_mib: u64) -> [(&'static str, CommandLine); 2] {
    // Every option is given per job (after its --name), so the two read jobs agree on all but
    // their queue depth.
    let job = |cmd: CommandLine, name: &str, file: &Path| {
        cmd.arg(format!("--name={name}"))
            .arg(format!("--filename={}", file.display()))
            .arg(format!("--size={size_mib}M"))
            .arg(format!("--runtime={}", runtime.as_secs().max(1)))
            .args(["--time_based", "--output-format=json"])
    };
    let read = |cmd: CommandLine, name: &str, depth: u32| {
        job(cmd, name, &mountpoint.join(READ_FILE))
            .args(["--rw=randread", "--bs=4k", "--ioengine=libaio"])
            .arg(format!("--iodepth={depth}"))
            .arg("--direct=1")
    };
    let walsync = job(CommandLine::new("fio"), "walsync", &mountpoint.join(".pgtier-fio-probe")).args([
        "--rw=write",
        "--bs=8k",
        "--ioengine=sync",
        "--fdatasync=1",
    ]);
    let qd1 = read(CommandLine::new("fio"), "randread-qd1", 1);
    let randread = read(qd1, "randread", 32).arg("--stonewall");
    [("walsync", walsync), ("randread", randread)]
}

fn job(json: &str) -> Result<(String, serde_json::Value), String> {
    job_named(json, None)
}

/// The job called `name` (the first job when None, or when no job has that name).
fn job_named(json: &str, name: Option<&str>) -> Result<(String, serde_json::Value), String> {
    let v: serde_json::Value = serde_json::from_str(json).map_err(|e| format!("fio printed no JSON ({e})"))?;
    let version = v.get("fio version").and_then(|x| x.as_str()).unwrap_or("").to_string();
    let jobs = v.get("jobs").and_then(|j| j.as_array()).cloned().unwrap_or_default();
    let j = name
        .and_then(|n| jobs.iter().find(|j| j.get("jobname").and_then(|x| x.as_str()) == Some(n)))
        .or(jobs.first())
        .cloned()
        .ok_or("fio JSON has no jobs")?;
    if let Some(e) = j.get("error").and_then(|e| e.as_i64()).filter(|e| *e != 0) {
        return Err(format!("fio job reported error {e}"));
    }
    Ok((version, j))
}

fn pct(v: &serde_json::Value, section: &str, key: &str, p: &str) -> f64 {
    v.get(section)
        .and_then(|s| s.get(key))
        .and_then(|l| l.get("percentile"))
        .and_then(|q| q.get(p))
        .and_then(|x| x.as_f64())
        .unwrap_or(f64::NAN)
        / 1000.0
}

/// Parses the JSON of the fdatasync write job: (fio version, IOPS, sync p50 µs, sync p99 µs).
pub fn parse_walsync(json: &str) -> Result<(String, f64, f64, f64), String> {
    let (version, j) = job(json)?;
    let iops = j.get("write").and_then(|w| w.get("iops")).and_then(|x| x.as_f64()).ok_or("no write IOPS")?;
    Ok((version, iops, pct(&j, "sync", "lat_ns", "50.000000"), pct(&j, "sync", "lat_ns", "99.000000")))
}

/// Parses the JSON of the random-read job: (IOPS, completion p99 µs) of the QD32 job.
pub fn parse_randread(json: &str) -> Result<(f64, f64), String> {
    let (_, j) = job_named(json, Some("randread"))?;
    let iops = j.get("read").and_then(|w| w.get("iops")).and_then(|x| x.as_f64()).ok_or("no read IOPS")?;
    Ok((iops, pct(&j, "read", "clat_ns", "99.000000")))
}

/// The depth the QD32 random-read job's I/O was mostly issued at: the level of fio's
/// `iodepth_level` (the share of I/O issued at each depth: 1, 2, 4, ..., 32, `>=64`) that holds
/// the most; None when the job has no such map.
pub fn parse_randread_depth(json: &str) -> Option<u32> {
    let (_, j) = job_named(json, Some("randread")).ok()?;
    let levels = j.get("iodepth_level")?.as_object()?;
    levels
        .iter()
        .filter_map(|(k, v)| Some((k.trim_start_matches(">=").parse::<u32>().ok()?, v.as_f64()?)))
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(depth, _)| depth)
}

/// The QD1 random-read job's mean and median completion latency, µs; None when the JSON has no
/// such job (probes of older versions).
pub fn parse_randread_qd1(json: &str) -> Option<(f64, f64)> {
    let v: serde_json::Value = serde_json::from_str(json).ok()?;
    let j = v
        .get("jobs")?
        .as_array()?
        .iter()
        .find(|j| j.get("jobname").and_then(|x| x.as_str()) == Some("randread-qd1"))?;
    let mean = j.get("read")?.get("clat_ns")?.get("mean")?.as_f64()? / 1000.0;
    Some((mean, pct(j, "read", "clat_ns", "50.000000")))
}

/// Runs both jobs on `mountpoint`, keeps fio's JSON in `raw_dir` (as `<device>-<job>.json`,
/// named relative to `rel`), and removes the probe file.
pub fn probe(
    sys: &mut dyn System,
    device: &str,
    mountpoint: &Path,
    runtime: Duration,
    size_mib: u64,
    (raw_dir, rel): (&Path, &str),
) -> Result<DeviceProbe, ProbeError> {
    let err = |m: String| ProbeError { device: device.to_string(), message: m };
    let mut out = DeviceProbe { device: device.to_string(), runtime_s: runtime.as_secs_f64(), ..Default::default() };
    let result = (|| {
        for (name, cmd) in commands(mountpoint, runtime, size_mib) {
            let o = sys.run(&cmd, runtime * 4 + Duration::from_secs(120)).map_err(|e| err(e.to_string()))?;
            if o.status != 0 {
                return Err(err(format!("`{cmd}` exited with {}: {}", o.status, o.stderr.trim())));
            }
            let file = format!("{device}-{name}.json");
            sys.write(&raw_dir.join(&file), &o.stdout).map_err(|e| err(format!("keep {file}: {e}")))?;
            out.raw_files.push(format!("{rel}/{file}"));
            if name == "walsync" {
                let (v, iops, p50, p99) = parse_walsync(&o.stdout).map_err(err)?;
                (out.fio_version, out.wal_write_iops, out.wal_sync_p50_us, out.wal_sync_p99_us) = (v, iops, p50, p99);
                out.write_sync_qd1_mean_us = if iops > 0.0 { 1e6 / iops } else { 0.0 };
                // The read jobs lay out a file of their own: the device need hold only one.
                let _ = sys.remove_file(&mountpoint.join(".pgtier-fio-probe"));
            } else {
                (out.randread_iops, out.randread_p99_us) = parse_randread(&o.stdout).map_err(err)?;
                out.randread_depth = parse_randread_depth(&o.stdout);
                if let Some((mean, p50)) = parse_randread_qd1(&o.stdout) {
                    (out.read_qd1_mean_us, out.read_qd1_p50_us) = (mean, if p50.is_finite() { p50 } else { 0.0 });
                }
            }
        }
        Ok(())
    })();
    let _ = sys.remove_file(&mountpoint.join(".pgtier-fio-probe"));
    let _ = sys.remove_file(&mountpoint.join(READ_FILE));
    result.map(|_| out)
}

/// What nbdfuse (libnbd) prints as the errno of a request the NBD server answered with
/// NBD_ESHUTDOWN.
const ESHUTDOWN_TEXT: &str = "Cannot send after transport endpoint shutdown";

/// ... and of a request on a connection the server closed (nbdkit died, or was killed).
const ENOTCONN_TEXT: &str = "Transport endpoint is not connected";

/// Whether a device's stack survived: its helper processes (nbdkit, nbdfuse) still run, their logs
/// show no failed NBD command, and the kernel logged no I/O error or file system shutdown on its
/// block device since it was last mounted. None when it survived; else what went wrong, plainly.
pub fn survival(
    sys: &mut dyn System,
    block_device: &Path,
    helpers: &[(String, journal::ProcessId)],
    helper_logs: &[std::path::PathBuf],
) -> Option<String> {
    let mut problems = Vec::new();
    for (label, pid) in helpers {
        if !sys.is_alive(*pid) {
            problems.push(format!("{label} is no longer running"));
        }
    }
    for log in helper_logs {
        let text = sys.read_to_string(log).unwrap_or_default();
        // A resumed run's helpers append to the logs of the attempt it resumes, whose teardown
        // failed requests on purpose: only this start's lines count.
        let failed: Vec<&str> =
            crate::system::since_last_start(&text).lines().filter(|l| l.contains("command failed")).collect();
        if let Some(last) = failed.last() {
            let mut p = format!("{} NBD request(s) failed, last: \"{}\"", failed.len(), last.trim());
            if last.contains(ESHUTDOWN_TEXT) {
                p.push_str(" (the NBD server answered NBD_ESHUTDOWN: nbdkit had been told to quit by a SIGINT, SIGTERM, SIGHUP or SIGQUIT, and refuses every request after that)");
            } else if last.contains(ENOTCONN_TEXT) {
                p.push_str(" (the NBD connection is gone: nbdkit died or was killed)");
            }
            problems.push(p);
        }
    }
    let kname = block_device.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    if let Ok(o) = sys.run(&CommandLine::new("dmesg"), Duration::from_secs(10))
        && o.status == 0
    {
        problems.extend(kernel_troubles(&o.stdout, &kname));
    }
    (!problems.is_empty()).then(|| problems.join("; "))
}

/// The kernel's complaints about block device `kname` (I/O errors, XFS shutting down) after its
/// last XFS mount in `dmesg` output: at most three, the shutdown first.
pub fn kernel_troubles(dmesg: &str, kname: &str) -> Vec<String> {
    if kname.is_empty() {
        return Vec::new();
    }
    let lines: Vec<&str> = dmesg.lines().collect();
    let mounted = format!("XFS ({kname}): Mounting");
    let start = lines.iter().rposition(|l| l.contains(&mounted)).unwrap_or(0);
    let named = |l: &&str| {
        l.contains(&format!("({kname})")) || l.contains(&format!("dev {kname},")) || l.contains(&format!("{kname}:"))
    };
    let bad = |l: &&str| {
        ["I/O error", "shut down", "Shutting down", "writeback error", "metadata I/O error"]
            .iter()
            .any(|w| l.contains(w))
    };
    let mut found: Vec<String> = lines[start..]
        .iter()
        .filter(|l| named(l) && bad(l))
        .map(|l| l.split_once("] ").map(|(_, rest)| rest).unwrap_or(l).trim().to_string())
        .collect();
    found.sort_by_key(|l| !l.contains("shut down"));
    found.dedup();
    found.truncate(3);
    found.into_iter().map(|l| format!("the kernel: \"{l}\"")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::system::{Canned, FakeSystem};

    const WALSYNC: &str = include_str!("../tests/fixtures/fio/walsync.fio-3.33.json");
    const RANDREAD: &str = include_str!("../tests/fixtures/fio/randread.fio-3.33.json");

    #[test]
    fn parses_recorded_fio_json() {
        let (v, iops, p50, p99) = parse_walsync(WALSYNC).unwrap();
        assert_eq!(v, "fio-3.33");
        assert!((iops - 356.465302).abs() < 1e-6);
        assert!((p50 - 1990.656).abs() < 1e-6);
        assert!((p99 - 12517.376).abs() < 1e-6);
        let (r, rp99) = parse_randread(RANDREAD).unwrap();
        assert!((r - 50974.012994).abs() < 1e-6);
        assert!((rp99 - 10682.368).abs() < 1e-6);
        assert!(parse_walsync("fio: no such file").is_err());
    }

    #[test]
    fn probe_runs_both_jobs_keeps_raw_json_and_removes_its_file() {
        let mut sys = FakeSystem::new();
        sys.answer("fio --name=walsync", Canned::ok(WALSYNC));
        sys.answer("fio --name=randread", Canned::ok(RANDREAD));
        let p = probe(
            &mut sys,
            "nvme-wal",
            Path::new("/mnt/w"),
            Duration::from_secs(5),
            256,
            (Path::new("/r/probes"), "probes"),
        )
        .unwrap();
        assert_eq!(p.raw_files, ["probes/nvme-wal-walsync.json", "probes/nvme-wal-randread.json"]);
        let cmds = sys.commands();
        assert_eq!(
            cmds[0],
            "fio --name=walsync --filename=/mnt/w/.pgtier-fio-probe --size=256M --runtime=5 --time_based --output-format=json --rw=write --bs=8k --ioengine=sync --fdatasync=1"
        );
        assert!(cmds[1].contains("--iodepth=32") && cmds[1].contains("--direct=1"));
        assert!(sys.calls.iter().any(|c| c == "rm: /mnt/w/.pgtier-fio-probe"));
        // The write job's file is gone before the read jobs lay out theirs (a small device holds one).
        let rm = sys.calls.iter().position(|c| c == "rm: /mnt/w/.pgtier-fio-probe").unwrap();
        let read = sys.calls.iter().position(|c| c.contains("--name=randread-qd1")).unwrap();
        assert!(rm < read, "{:?}", sys.calls);
        assert!(p.wal_write_iops > 300.0 && p.randread_iops > 50_000.0);
    }

    #[test]
    fn reads_go_to_a_file_of_their_own_at_queue_depth_1_then_32() {
        let [(_, _), (_, read)] = commands(Path::new("/m"), Duration::from_secs(3), 256);
        let text = read.to_string();
        assert_eq!(text.matches("--filename=/m/.pgtier-fio-read").count(), 2, "{text}");
        let qd1 = text.find("--name=randread-qd1").unwrap();
        let qd32 = text.find("--name=randread ").unwrap();
        assert!(qd1 < qd32 && text[qd32..].contains("--iodepth=32") && text[qd1..qd32].contains("--iodepth=1 "));
        assert!(text.ends_with("--stonewall"), "QD32 after QD1, not at once: {text}");
        assert!(!text.contains(".pgtier-fio-probe"), "never the write job's file: {text}");
    }

    #[test]
    fn the_depth_the_qd32_job_reached_is_read_from_iodepth_level() {
        assert_eq!(parse_randread_depth(RANDREAD), Some(32), "fio 3.33 on the emulated NVMe/TCP stack");
        // On a DAX file libaio completes each read as it is submitted: every I/O at depth 1.
        let mut v: serde_json::Value = serde_json::from_str(RANDREAD).unwrap();
        let levels = v["jobs"][0]["iodepth_level"].as_object_mut().unwrap();
        for (k, share) in levels.iter_mut() {
            *share = serde_json::json!(if k == "1" { 100.0 } else { 0.0 });
        }
        assert_eq!(parse_randread_depth(&v.to_string()), Some(1));
    }

    #[test]
    fn qd1_latency_from_a_two_job_fio_json() {
        // fio 3.33's layout, trimmed: the QD1 job first, then the QD32 job.
        let json = r#"{"fio version": "fio-3.33", "jobs": [
            {"jobname": "randread-qd1", "error": 0, "read": {"iops": 3900.0, "clat_ns": {"mean": 251000.0, "percentile": {"50.000000": 240640, "99.000000": 610304}}}},
            {"jobname": "randread", "error": 0, "read": {"iops": 30700.0, "clat_ns": {"mean": 1040000.0, "percentile": {"50.000000": 1003520, "99.000000": 2506752}}}}]}"#;
        assert_eq!(parse_randread(json).unwrap(), (30700.0, 2506.752), "IOPS of the QD32 job");
        assert_eq!(parse_randread_depth(json), None, "no iodepth_level: no depth claimed");
        let (mean, p50) = parse_randread_qd1(json).unwrap();
        assert!((mean - 251.0).abs() < 1e-9 && (p50 - 240.64).abs() < 1e-9);
        assert!(parse_randread_qd1(RANDREAD).is_none(), "an older probe has no QD1 job");
    }

    #[test]
    fn a_stack_that_did_not_survive_says_how() {
        let dmesg = "[ 6856.9] XFS (loop6): Mounting V5 Filesystem 5b18\n\
                     [ 6900.1] I/O error, dev loop6, sector 5 op 0x1:(WRITE) flags 0x800 phys_seg 1 prio class 2\n\
                     [ 7124.5] XFS (loop6): Unmounting Filesystem 5b18\n\
                     [ 7174.2] XFS (loop6): Mounting V5 Filesystem 3694\n\
                     [ 7179.2] I/O error, dev loop6, sector 589648 op 0x1:(WRITE) flags 0x800 phys_seg 1 prio class 2\n\
                     [ 7181.6] XFS (loop6): log I/O error -5\n\
                     [ 7181.6] XFS (loop6): Filesystem has been shut down due to log error (0x2).\n\
                     [ 7181.7] I/O error, dev loop16, sector 1 op 0x1:(WRITE)\n";
        let t = kernel_troubles(dmesg, "loop6");
        assert_eq!(t.len(), 3, "{t:?}");
        assert!(t[0].contains("Filesystem has been shut down"), "the shutdown first: {t:?}");
        assert!(
            t.iter().all(|l| !l.contains("sector 5 ") && !l.contains("loop16")),
            "only since its last mount, only loop6: {t:?}"
        );
        assert!(kernel_troubles(dmesg, "loop7").is_empty());

        let mut sys = FakeSystem::new();
        sys.answer("dmesg", Canned::ok(dmesg));
        sys.file(
            "/logs/nbdfuse-lb.log",
            "nbd_aio_command_completed: write: command failed: Cannot send after transport endpoint shutdown\nnbd_aio_command_completed: flush: command failed: Cannot send after transport endpoint shutdown\n",
        );
        let why = survival(&mut sys, Path::new("/dev/loop6"), &[], &["/logs/nbdfuse-lb.log".into()]).unwrap();
        assert!(
            why.starts_with("2 NBD request(s) failed, last: \"nbd_aio_command_completed: flush: command failed"),
            "{why}"
        );
        assert!(
            why.contains("NBD_ESHUTDOWN") && why.contains("told to quit") && why.contains("shut down due to log error"),
            "{why}"
        );
        let mut calm = FakeSystem::new();
        calm.answer("dmesg", Canned::ok("[ 1.0] XFS (loop6): Mounting V5 Filesystem\n"));
        calm.file("/logs/nbdfuse-lb.log", "");
        assert_eq!(survival(&mut calm, Path::new("/dev/loop6"), &[], &["/logs/nbdfuse-lb.log".into()]), None);
        // A resumed run appends to the log of the attempt it resumes, whose teardown stopped
        // nbdkit under nbdfuse: those failures are not this start's.
        let resumed = format!(
            "\n{m}nbdfuse (1700000000) ==\nnbd_aio_command_completed: flush: command failed: {ESHUTDOWN_TEXT}\n\n{m}nbdfuse (1700000100) ==\n",
            m = crate::system::LOG_START_MARK
        );
        calm.file("/logs/nbdfuse-lb.log", &resumed);
        assert_eq!(survival(&mut calm, Path::new("/dev/loop6"), &[], &["/logs/nbdfuse-lb.log".into()]), None);
        calm.file(
            "/logs/nbdfuse-lb.log",
            format!("{resumed}nbd_aio_command_completed: write: command failed: {ENOTCONN_TEXT}\n"),
        );
        let why = survival(&mut calm, Path::new("/dev/loop6"), &[], &["/logs/nbdfuse-lb.log".into()]).unwrap();
        assert!(why.starts_with("1 NBD request(s) failed") && why.contains("connection is gone"), "{why}");
    }
}
