//! Design `slices`: what the idle placements wrote while another placement's slice ran. Every
//! slice keeps /proc/diskstats at its start and end (`runs/<id>/diskstats.begin.txt`, `.end.txt`,
//! every block device of the machine), so the writes to the study's devices that the active
//! placement does not use are its idle rivals' background I/O (checkpointer, background writer,
//! the kernel's write-back of their dirty pages). A device the active placement shares with an
//! idle one counts as the active one's, so the share is a lower bound.

use results::manifest::Design;
use std::collections::{BTreeMap, BTreeSet};

use results::RunStatus;
use results::diskstats::parse_diskstats;

use crate::contest as analysis;
use results::ResultSet;

/// The share of one contest's slices.
#[derive(Clone, Debug, PartialEq)]
pub struct IdleIo {
    pub contest: String,
    /// Slices whose raw counters were found.
    pub slices: usize,
    /// Bytes written during the slices to the active placement's devices, and to the study's other
    /// devices (the idle placements').
    pub active_bytes: u64,
    pub idle_bytes: u64,
    /// Seconds of slices measured.
    pub seconds: f64,
}

impl IdleIo {
    /// The idle placements' share of the bytes written to the study's devices during slices, %.
    pub fn idle_share_pct(&self) -> f64 {
        let all = self.active_bytes + self.idle_bytes;
        if all == 0 { 0.0 } else { self.idle_bytes as f64 / all as f64 * 100.0 }
    }
}

/// Above this share the idle placements' background writes are said to compete with the slice.
pub const WARN_SHARE_PCT: f64 = 10.0;

/// Per contest, from the slices' raw counters (empty for design `runs` or without raw files).
pub fn of(set: &ResultSet) -> Vec<IdleIo> {
    if set.manifest.measurement.design != Design::Slices {
        return Vec::new();
    }
    let study: BTreeSet<String> = set
        .manifest
        .devices
        .iter()
        .filter_map(|d| d.facts.get("kernel_name").and_then(|k| k.as_str()).map(str::to_string))
        .filter(|k| !k.is_empty())
        .collect();
    let mut by_contest: BTreeMap<String, IdleIo> = BTreeMap::new();
    for r in set.runs.iter().filter(|r| r.status == RunStatus::Ok) {
        let dir = set.dir.join("runs").join(&r.run_id);
        let (Ok(begin), Ok(end)) = (
            std::fs::read_to_string(dir.join("diskstats.begin.txt")),
            std::fs::read_to_string(dir.join("diskstats.end.txt")),
        ) else {
            continue;
        };
        let (a, b) = (parse_diskstats(&begin), parse_diskstats(&end));
        let own: BTreeSet<&str> = r.devices.iter().map(|d| d.kernel_name.as_str()).collect();
        let written = |k: &str| match (a.get(k), b.get(k)) {
            (Some(x), Some(y)) => y.write_sectors.saturating_sub(x.write_sectors) * 512,
            _ => 0,
        };
        let contest = analysis::contest_of(&r.cell);
        let e = by_contest.entry(contest.clone()).or_insert(IdleIo {
            contest,
            slices: 0,
            active_bytes: 0,
            idle_bytes: 0,
            seconds: 0.0,
        });
        e.slices += 1;
        e.seconds += r.duration_s;
        for k in &study {
            if own.contains(k.as_str()) {
                e.active_bytes += written(k);
            } else {
                e.idle_bytes += written(k);
            }
        }
    }
    by_contest.into_values().filter(|e| e.slices > 0).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_idle_share_is_of_all_bytes_written() {
        let r = IdleIo { contest: "c".into(), slices: 2, active_bytes: 900, idle_bytes: 100, seconds: 4.0 };
        assert!((r.idle_share_pct() - 10.0).abs() < 1e-12);
        let none = IdleIo { contest: "c".into(), slices: 1, active_bytes: 0, idle_bytes: 0, seconds: 2.0 };
        assert_eq!(none.idle_share_pct(), 0.0);
    }
}
