//! `--resume`: whether an interrupted result set can be continued, which of its runs are kept,
//! and where the output of a run that is made again goes. The slices design resumes by contest:
//! `contests.json` records each contest that stopped (why, its rounds and segment, the slices it
//! kept); a contest without a record is measured again from a fresh warm-up.

use std::collections::{BTreeMap, HashSet};
use std::path::Path;
use std::time::SystemTime;

use anyhow::{Context, Result};
use experiment::Experiment;
use results::{Manifest, ResultsDir, RunStatus, timestamp};
use runner::matrix::PlannedRun;
use serde::{Deserialize, Serialize};

/// Why an interrupted result set cannot be continued.
#[derive(Debug, thiserror::Error)]
pub enum NotResumable {
    #[error("the experiment's resolved configuration cannot be compared: {0}")]
    Serialize(#[source] serde_json::Error),
    /// What changed, as `key: before -> now` (the first ten).
    #[error(
        "the configuration changed since those runs ({}); mixing cells of two configurations would make the deltas meaningless",
        .0.join("; ")
    )]
    ConfigChanged(Vec<String>),
    #[error("the planned runs differ from the recorded run order")]
    RunOrder,
}

/// Whether `prev` (an interrupted result set) can be continued with `exp`: same resolved
/// configuration (the file's path aside) and the same planned runs.
pub fn resumable(prev: &Manifest, exp: &Experiment, runs: &[PlannedRun]) -> Result<(), NotResumable> {
    let mut now = serde_json::to_value(exp).map_err(NotResumable::Serialize)?;
    let mut before = prev.resolved_config.clone();
    for v in [&mut now, &mut before] {
        if let Some(o) = v.as_object_mut() {
            o.remove("file");
            o.remove("warnings");
            // Where a profile was read from is no change (a server host of a fleet reads its
            // shipped copy, in a directory of each attempt); its settings are compared.
            for p in o.get_mut("profiles").and_then(|p| p.as_array_mut()).into_iter().flatten() {
                if let Some(p) = p.as_object_mut() {
                    p.remove("file");
                }
            }
        }
    }
    let mut changes = Vec::new();
    report::compare::json_diff(&before, &now, "config", &mut changes);
    if !changes.is_empty() {
        let list: Vec<String> =
            changes.iter().take(10).map(|c| format!("{}: {} -> {}", c.what, c.baseline, c.contender)).collect();
        return Err(NotResumable::ConfigChanged(list));
    }
    let order: Vec<&String> = runs.iter().map(|r| &r.run_id).collect();
    if prev.run_order.iter().collect::<Vec<_>>() != order {
        return Err(NotResumable::RunOrder);
    }
    Ok(())
}

/// The runs of the result set that finished well (kept when resuming).
pub fn finished_runs(results: &ResultsDir) -> HashSet<String> {
    results
        .read_runs()
        .map(|r| r.into_iter().filter(|r| r.status == RunStatus::Ok).map(|r| r.run_id).collect())
        .unwrap_or_default()
}

/// Moves run directories without a finished record (an interrupted run) to `interrupted/`,
/// so that the run is made again and its partial output is kept as evidence.
pub fn set_aside_unfinished(results: &ResultsDir, done: &HashSet<String>) -> Result<()> {
    let Ok(rd) = std::fs::read_dir(results.runs_dir()) else { return Ok(()) };
    for e in rd.flatten() {
        let id = e.file_name().to_string_lossy().into_owned();
        let finished = e.path().join("result.json").exists();
        if done.contains(&id) || !e.path().is_dir() {
            continue;
        }
        let to = results.root.join("interrupted").join(format!("{id}-{}", timestamp::compact(SystemTime::now())));
        std::fs::create_dir_all(to.parent().expect("has a parent"))?;
        std::fs::rename(e.path(), &to).with_context(|| format!("set aside {}", e.path().display()))?;
        eprintln!(
            "resuming: {} {} is made again (its earlier output is kept in {})",
            id,
            if finished { "failed and" } else { "was cut off and" },
            to.display()
        );
    }
    Ok(())
}

/// A contest of the slices design that stopped (`contests.json`, one entry per contest name,
/// written when the contest stops): what `--resume` keeps of it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ContestRecord {
    /// Why it stopped (the manifest's `measurement.stopped`).
    pub stopped: String,
    /// It failed (a placement's server failed twice, or the baseline's could not be had).
    pub failed: bool,
    pub rounds: u32,
    /// The segment of its last rounds.
    pub segment: u32,
    /// Seconds its rounds took (what it spent of the budget).
    pub seconds: f64,
    /// Its slices (run ids), failed ones included; only these are kept on resume.
    pub runs: Vec<String>,
}

/// The file of the contests that stopped.
pub fn contests_file(root: &Path) -> std::path::PathBuf {
    root.join("contests.json")
}

/// The stopped contests recorded in the result set (none when the file is missing or unreadable).
pub fn contest_records(root: &Path) -> BTreeMap<String, ContestRecord> {
    std::fs::read(contests_file(root)).ok().and_then(|b| serde_json::from_slice(&b).ok()).unwrap_or_default()
}

/// Records (or replaces) a stopped contest in `contests.json`, atomically.
pub fn record_contest(root: &Path, name: &str, record: ContestRecord) -> Result<()> {
    let mut all = contest_records(root);
    all.insert(name.to_string(), record);
    let json = serde_json::to_vec_pretty(&all)?;
    results::write_atomic(&contests_file(root), &json)
        .with_context(|| format!("write {}", contests_file(root).display()))
}

/// Moves every run directory not in `keep` to `interrupted/` (slices of contests measured again);
/// returns how many were moved.
pub fn set_aside_runs(results: &ResultsDir, keep: &HashSet<String>) -> Result<usize> {
    let Ok(rd) = std::fs::read_dir(results.runs_dir()) else { return Ok(0) };
    let stamp = timestamp::compact(SystemTime::now());
    let mut moved = 0;
    for e in rd.flatten() {
        let id = e.file_name().to_string_lossy().into_owned();
        if keep.contains(&id) || !e.path().is_dir() {
            continue;
        }
        let to = results.root.join("interrupted").join(format!("{id}-{stamp}"));
        std::fs::create_dir_all(to.parent().expect("has a parent"))?;
        std::fs::rename(e.path(), &to).with_context(|| format!("set aside {}", e.path().display()))?;
        moved += 1;
    }
    Ok(moved)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stopped_contests_are_recorded_and_only_their_slices_kept() {
        let dir = tempfile::tempdir().unwrap();
        let results = ResultsDir::new(dir.path());
        assert!(contest_records(dir.path()).is_empty(), "no file: nothing stopped");
        let first = ContestRecord {
            stopped: "3 rounds".into(),
            rounds: 3,
            segment: 1,
            runs: vec!["0001-a".into()],
            ..Default::default()
        };
        record_contest(dir.path(), "rw c1", first.clone()).unwrap();
        let second = ContestRecord { stopped: "failed: b".into(), failed: true, ..Default::default() };
        record_contest(dir.path(), "rw c2", second.clone()).unwrap();
        let again = ContestRecord { rounds: 5, ..first.clone() };
        record_contest(dir.path(), "rw c1", again.clone()).unwrap();
        let all = contest_records(dir.path());
        assert_eq!((all.len(), &all["rw c1"], &all["rw c2"]), (2, &again, &second));

        for id in ["0001-a", "0002-b"] {
            std::fs::create_dir_all(results.run_dir(id)).unwrap();
        }
        let keep: HashSet<String> = ["0001-a".to_string()].into();
        assert_eq!(set_aside_runs(&results, &keep).unwrap(), 1);
        assert!(results.run_dir("0001-a").is_dir() && !results.run_dir("0002-b").exists());
        assert_eq!(std::fs::read_dir(dir.path().join("interrupted")).unwrap().count(), 1);
    }
}
