//! The physical ceilings of a tier, measured with fio on its mounted filesystem before the matrix:
//! 8 KiB sequential writes each followed by fdatasync (a stand-in for WAL commits: IOPS and
//! p50/p99 latency) and 4 KiB random reads at queue depth 32 with direct I/O (IOPS). The report
//! sets the runs' device I/O against these.

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
}

#[derive(Debug, thiserror::Error)]
#[error("fio on {device}: {message}")]
pub struct ProbeError {
    pub device: String,
    pub message: String,
}

/// The two fio jobs, as command lines.
pub fn commands(mountpoint: &Path, runtime: Duration, size_mib: u64) -> [(&'static str, CommandLine); 2] {
    let file = mountpoint.join(".pgtier-fio-probe");
    let common = |name: &str| {
        CommandLine::new("fio")
            .arg(format!("--name={name}"))
            .arg(format!("--filename={}", file.display()))
            .arg(format!("--size={size_mib}M"))
            .arg(format!("--runtime={}", runtime.as_secs().max(1)))
            .args(["--time_based", "--output-format=json"])
    };
    [
        ("walsync", common("walsync").args(["--rw=write", "--bs=8k", "--ioengine=sync", "--fdatasync=1"])),
        (
            "randread",
            common("randread").args(["--rw=randread", "--bs=4k", "--ioengine=libaio", "--iodepth=32", "--direct=1"]),
        ),
    ]
}

fn job(json: &str) -> Result<(String, serde_json::Value), String> {
    let v: serde_json::Value = serde_json::from_str(json).map_err(|e| format!("fio printed no JSON ({e})"))?;
    let version = v.get("fio version").and_then(|x| x.as_str()).unwrap_or("").to_string();
    let j = v.get("jobs").and_then(|j| j.get(0)).cloned().ok_or("fio JSON has no jobs")?;
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

/// Parses the JSON of the random-read job: (IOPS, completion p99 µs).
pub fn parse_randread(json: &str) -> Result<(f64, f64), String> {
    let (_, j) = job(json)?;
    let iops = j.get("read").and_then(|w| w.get("iops")).and_then(|x| x.as_f64()).ok_or("no read IOPS")?;
    Ok((iops, pct(&j, "read", "clat_ns", "99.000000")))
}

/// Runs both jobs on `mountpoint`, keeps fio's JSON in `raw_dir` (as `<device>-<job>.json`,
/// named relative to `rel`), and removes the probe file.
pub fn probe(
    sys: &mut dyn System,
    device: &str,
    mountpoint: &Path,
    runtime: Duration,
    size_mib: u64,
    raw_dir: &Path,
    rel: &str,
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
            } else {
                (out.randread_iops, out.randread_p99_us) = parse_randread(&o.stdout).map_err(err)?;
            }
        }
        Ok(())
    })();
    let _ = sys.remove_file(&mountpoint.join(".pgtier-fio-probe"));
    result.map(|_| out)
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
            Path::new("/r/probes"),
            "probes",
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
        assert!(p.wal_write_iops > 300.0 && p.randread_iops > 50_000.0);
    }
}
