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

use crate::analysis;
use crate::model::ResultSet;

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

/// The report's section: per contest, what the idle placements wrote during slices.
pub fn section(d: &mut crate::document::Document, rows: &[IdleIo]) {
    use crate::document::Table;
    if rows.is_empty() {
        return;
    }
    d.heading(3, "Idle placements' background writes during slices");
    d.para(format!(
        "Bytes written to the study's devices while a slice ran, from each slice's /proc/diskstats at its start and end (runs/<id>/diskstats.*.txt): on the active placement's devices, and on the others' (their servers idle: checkpointer, background writer, the kernel's write-back). A device two placements share counts as the active one's, so the idle share is a lower bound. Above {WARN_SHARE_PCT:.0}% the idle servers' writes compete with the measured slice."
    ));
    let mut t = Table::new(&[
        "contest",
        "slices:",
        "written by the active placement:",
        "by the idle placements:",
        "idle share:",
    ])
    .caption("Write rates during slices, per contest (sums over all slices; no interval).");
    for r in rows {
        let mb_s = |b: u64| b as f64 / 1e6 / r.seconds.max(1e-9);
        t.row(vec![
            r.contest.clone(),
            r.slices.to_string(),
            format!("{:.2} MB/s", mb_s(r.active_bytes)),
            format!("{:.2} MB/s", mb_s(r.idle_bytes)),
            format!("{:.1}%", r.idle_share_pct()),
        ]);
    }
    d.table(t);
    let high: Vec<String> = rows
        .iter()
        .filter(|r| r.idle_share_pct() > WARN_SHARE_PCT)
        .map(|r| format!("{} ({:.0}%)", r.contest, r.idle_share_pct()))
        .collect();
    if !high.is_empty() {
        d.para(format!(
            "**The idle placements wrote more than {WARN_SHARE_PCT:.0}% of the bytes during others' slices in {}**: their write-back competes with the measured slice for the CPU and, where devices share a backing (emulated loop files on one disk), for the disk. It lands on every placement alike only when the placements write alike.",
            high.join(", ")
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_idle_share_is_of_all_bytes_written() {
        let r = IdleIo { contest: "c".into(), slices: 2, active_bytes: 900, idle_bytes: 100, seconds: 4.0 };
        assert!((r.idle_share_pct() - 10.0).abs() < 1e-12);
        let mut d = crate::document::Document { title: "t".into(), blocks: Vec::new() };
        section(&mut d, &[r]);
        let crate::document::Block::Table(t) = &d.blocks[2] else { panic!("a table") };
        assert_eq!(t.rows[0], ["c", "2", "0.00 MB/s", "0.00 MB/s", "10.0%"]);
        let none = IdleIo { contest: "c".into(), slices: 1, active_bytes: 0, idle_bytes: 0, seconds: 2.0 };
        assert_eq!(none.idle_share_pct(), 0.0);
    }
}
