//! The experiment's `[[fault]]`s made concrete for a run, and the I/O caps of devices that
//! emulate a slower class.

use anyhow::{Context, Result, anyhow};
use experiment::{Experiment, FaultKind};
use runner::cgroup::BlkioThrottle;
use runner::faults::{Fault, FaultAction};
use tiers::{PlanContext, Provisioned};

/// Warns about faults set for a run the matrix does not have. (The slices design numbers its
/// slices, as many as the rounds need, so any number may come.)
pub fn warn_unreachable(exp: &Experiment, runs: usize) {
    if exp.measurement.design == experiment::Design::Slices {
        return;
    }
    for f in &exp.faults {
        if f.run as usize > runs {
            eprintln!("warning: a fault is set for run {}, but the matrix has {runs} runs; it will not fire", f.run);
        }
    }
}

/// The faults the experiment file injects into run number `sequence`, made concrete.
pub fn faults_for(exp: &Experiment, ctx: &PlanContext, sequence: u32, provisioned: &Provisioned) -> Vec<Fault> {
    exp.faults
        .iter()
        .filter(|f| f.run == sequence)
        .filter_map(|f| {
            let dev = f.device.as_deref().and_then(|d| provisioned.device(d));
            let (action, description) = match f.kind {
                FaultKind::IoErrors => (
                    FaultAction::CreateFile(tiers::build::error_file(ctx, f.device.as_deref()?)),
                    format!("every I/O of {} fails with EIO (nbdkit error filter)", f.device.as_deref()?),
                ),
                FaultKind::FillDevice => {
                    let name = f.device.as_deref()?;
                    // A WAL device: the server is also made to need a new segment file soon.
                    let holds_wal = exp.placements.iter().any(|p| p.wal == name);
                    (
                        FaultAction::FillFilesystem { dir: dev?.mountpoint.clone(), switch_wal: holds_wal },
                        format!(
                            "the filesystem of {name} is filled up{}",
                            if holds_wal { " (and WAL segment switches are requested)" } else { "" }
                        ),
                    )
                }
                FaultKind::KillServer => (FaultAction::KillServer, "the PostgreSQL server is killed (SIGKILL)".into()),
                FaultKind::StopTarget => {
                    // tiers::provision labels every daemon helper of a device "nbdkit".
                    let (_, process) = dev?.helpers.iter().find(|(l, _)| l == "nbdkit")?;
                    (
                        FaultAction::KillProcess { label: "nbdkit".into(), process: *process },
                        format!("the target of {} goes away (nbdkit killed)", f.device.as_deref()?),
                    )
                }
                FaultKind::HangClient => (FaultAction::StopClient, "the pgbench client hangs (SIGSTOP)".into()),
            };
            Some(Fault { after: f.after, action, description })
        })
        .collect()
}

/// I/O caps for devices that emulate a slower class, by device number.
pub fn throttles(exp: &Experiment, provisioned: &Provisioned) -> Result<Vec<BlkioThrottle>> {
    use std::os::unix::fs::MetadataExt;
    let mut out = Vec::new();
    for spec in exp.used_devices() {
        let Some(t) = &spec.throttle else { continue };
        let dev = provisioned.device(&spec.name).ok_or_else(|| anyhow!("device {} was not provisioned", spec.name))?;
        let rdev = std::fs::metadata(&dev.block_device)
            .with_context(|| format!("stat {}", dev.block_device.display()))?
            .rdev();
        out.push(BlkioThrottle {
            device: spec.name.clone(),
            major: nix::sys::stat::major(rdev) as u32,
            minor: nix::sys::stat::minor(rdev) as u32,
            read_iops: t.read_iops,
            write_iops: t.write_iops,
            read_bytes_per_sec: t.read_bytes_per_sec,
            write_bytes_per_sec: t.write_bytes_per_sec,
        });
    }
    Ok(out)
}

/// A throttle as the manifest's device record states it.
pub fn describe_throttle(t: &BlkioThrottle) -> String {
    let mut parts = Vec::new();
    for (name, v) in [("read IOPS", t.read_iops), ("write IOPS", t.write_iops)] {
        if let Some(v) = v {
            parts.push(format!("{name} <= {v}"));
        }
    }
    for (name, v) in [("read", t.read_bytes_per_sec), ("write", t.write_bytes_per_sec)] {
        if let Some(v) = v {
            parts.push(format!("{name} <= {:.1} MiB/s", v as f64 / 1048576.0));
        }
    }
    format!(
        "cgroup blkio throttle on {}:{} for the server's processes: {} (direct and fsync'd I/O only; cgroup v1 does not attribute buffered writeback)",
        t.major,
        t.minor,
        parts.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_throttle_in_words() {
        let t = BlkioThrottle {
            device: "remote".into(),
            major: 43,
            minor: 0,
            read_iops: None,
            write_iops: Some(500),
            read_bytes_per_sec: Some(100 << 20),
            write_bytes_per_sec: None,
        };
        assert_eq!(
            describe_throttle(&t),
            "cgroup blkio throttle on 43:0 for the server's processes: write IOPS <= 500, read <= 100.0 MiB/s (direct and fsync'd I/O only; cgroup v1 does not attribute buffered writeback)"
        );
    }
}
