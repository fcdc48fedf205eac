//! A host's calibration: kept in the state directory by `pgtier calibrate`, one file per key
//! (what makes it valid: this host, the PostgreSQL build, the baseline's devices, the workloads,
//! memory limits, profiles and slice), and looked up by every `compare` of a file with the same
//! key. What the study's manifest records about it ([`for_study`]): the calibration's priors, or
//! the fallback's with the reason the host counts as uncalibrated.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use experiment::Experiment;
use results::manifest::{CalibrationRecord, HostFacts};

use crate::paths;

/// Where calibrations are kept: `$PGTIER_CALIBRATION_DIR` when set (a benchmark's campaign keeps
/// its own apart from the host's), else `<state dir>/calibration`.
pub fn dir() -> PathBuf {
    match std::env::var_os("PGTIER_CALIBRATION_DIR") {
        Some(d) if !d.is_empty() => PathBuf::from(d),
        _ => paths::state_dir().join("calibration"),
    }
}

/// What makes a calibration valid for a study of `exp` on this host: every entry must be equal.
/// The placements other than the baseline are not in it (the calibration measures twins of the
/// baseline), nor the budget or target (they size a study, not the machine's noise).
pub fn key(exp: &Experiment, host: &HostFacts, postgres_version: &str) -> BTreeMap<String, String> {
    let mut k = BTreeMap::new();
    k.insert("host.cpu".into(), format!("{} ({} threads)", host.cpu_model, host.cpu_threads));
    k.insert("host.memory_bytes".into(), host.memory_bytes.to_string());
    k.insert("host.kernel".into(), host.kernel.clone());
    k.insert("host.virtualization".into(), host.virtualization.clone());
    k.insert("postgres.version".into(), postgres_version.to_string());
    k.insert("emulated".into(), exp.emulated.to_string());
    if let Some(b) = exp.placements.iter().find(|p| p.name == exp.baseline) {
        for (role, name) in [("data", &b.data), ("wal", &b.wal)] {
            if let Some(d) = exp.devices.iter().find(|d| &d.name == name) {
                k.insert(format!("baseline.{role}"), device_key(d, exp.emulated));
            }
        }
    }
    for w in &exp.workloads {
        let r = runner::record::workload_record(w);
        k.insert(format!("workload.{}", r.name), serde_json::to_string(&r).unwrap_or_default());
    }
    let limits: Vec<String> = exp.memory_limits.iter().map(|m| m.label()).collect();
    k.insert("memory_limits".into(), limits.join(", "));
    for p in exp.run_profiles() {
        k.insert(format!("profile.{}", p.profile.name), serde_json::to_string(&p.profile.settings).unwrap_or_default());
    }
    let m = &exp.measurement;
    k.insert(
        "measurement".into(),
        format!(
            "{} slice {:?} warm-up {:?} warm-up rounds {} prewarm {} settle {}",
            m.design.as_str(),
            m.slice,
            m.warm_up,
            m.warm_up_rounds,
            m.prewarm,
            m.settle
        ),
    );
    // Present only when set, so that the keys of calibrations without them stay as they were.
    if let Some(p) = &m.pinning {
        k.insert("measurement.pinning".into(), format!("client {:?} servers {:?}", p.client, p.servers));
    }
    if let Some(h) = &m.handicap {
        k.insert("measurement.handicap".into(), format!("{} CPUs spread {}%", h.cpus, h.spread_pct));
    }
    k
}

/// A device as the key sees it: everything but its name, description and wipe permission (and,
/// emulated, where the real one is).
fn device_key(d: &tiers::DeviceSpec, emulated: bool) -> String {
    let mut v = serde_json::to_value(d).unwrap_or_default();
    if let Some(o) = v.as_object_mut() {
        for field in ["name", "description", "allow_wipe", "target_host"] {
            o.remove(field);
        }
        if emulated {
            o.remove("real");
        } else {
            o.remove("emulation");
        }
    }
    v.to_string()
}

/// The file a calibration with `key` is kept in: a hash of the key, so that any change to it
/// names another file.
pub fn file_for(key: &BTreeMap<String, String>) -> PathBuf {
    file_in(&dir(), key)
}

fn file_in(dir: &Path, key: &BTreeMap<String, String>) -> PathBuf {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for (k, v) in key {
        for b in k.bytes().chain([0]).chain(v.bytes()).chain([0]) {
            h ^= b as u64;
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    dir.join(format!("{h:016x}.json"))
}

/// What the state directory holds for a key.
pub enum Lookup {
    Found(Box<CalibrationRecord>, PathBuf),
    /// No calibration with this key; the nearest one kept and the entries that differ.
    Stale {
        file: PathBuf,
        differs: Vec<String>,
    },
    Missing,
}

/// The calibration kept for `key`, or the nearest one and why it does not count.
pub fn lookup(key: &BTreeMap<String, String>) -> Lookup {
    lookup_in(&dir(), key)
}

fn lookup_in(dir: &Path, key: &BTreeMap<String, String>) -> Lookup {
    let file = file_in(dir, key);
    if let Some(r) = read(&file).filter(|r| &r.key == key) {
        return Lookup::Found(Box::new(r), file);
    }
    let Ok(entries) = std::fs::read_dir(dir) else { return Lookup::Missing };
    let mut nearest: Option<(PathBuf, Vec<String>)> = None;
    for e in entries.flatten() {
        let Some(r) = read(&e.path()) else { continue };
        let names: std::collections::BTreeSet<&String> = r.key.keys().chain(key.keys()).collect();
        let differs: Vec<String> = names.into_iter().filter(|n| r.key.get(*n) != key.get(*n)).cloned().collect();
        // Only a calibration of the same workloads is a stale one of this study.
        if differs.iter().any(|d| d.starts_with("workload.")) {
            continue;
        }
        if nearest.as_ref().is_none_or(|(_, d)| differs.len() < d.len()) {
            nearest = Some((e.path(), differs));
        }
    }
    match nearest {
        Some((file, differs)) => Lookup::Stale { file, differs },
        None => Lookup::Missing,
    }
}

fn read(file: &Path) -> Option<CalibrationRecord> {
    let text = std::fs::read_to_string(file).ok()?;
    serde_json::from_str::<CalibrationRecord>(&text).ok().filter(|r| r.host_calibrated)
}

/// Keeps a calibration in its file (written whole, then renamed into place).
pub fn store(record: &CalibrationRecord) -> Result<PathBuf> {
    store_in(&dir(), record)
}

fn store_in(d: &Path, record: &CalibrationRecord) -> Result<PathBuf> {
    let file = file_in(d, &record.key);
    std::fs::create_dir_all(d).with_context(|| format!("create {}", d.display()))?;
    let tmp = file.with_extension("json.tmp");
    let text = serde_json::to_string_pretty(record).context("serialise the calibration")?;
    std::fs::write(&tmp, text + "\n").with_context(|| format!("write {}", tmp.display()))?;
    std::fs::rename(&tmp, &file).with_context(|| format!("rename {} to {}", tmp.display(), file.display()))?;
    Ok(file)
}

/// What a study of `exp` records about its priors: this host's calibration for its key when
/// there is one, else the fallback's, saying why.
pub fn for_study(exp: &Experiment, host: &HostFacts, postgres_version: &str) -> CalibrationRecord {
    let key = key(exp, host, postgres_version);
    let workloads: Vec<&str> = exp.workloads.iter().map(|w| w.name.as_str()).collect();
    let mut record = match lookup(&key) {
        Lookup::Found(r, file) => CalibrationRecord { file: Some(file.display().to_string()), ..*r },
        Lookup::Stale { file, differs } => analysis::priors::uncalibrated(
            &workloads,
            &format!("the calibration in {} is for another {}", file.display(), differs.join(", ")),
        ),
        Lookup::Missing => analysis::priors::uncalibrated(
            &workloads,
            &format!("no calibration for this file's key in {}", dir().display()),
        ),
    };
    record.key = key;
    record
}

/// One line on where a study's priors come from, for the terminal's first and last lines.
pub fn line(r: &CalibrationRecord) -> String {
    if r.host_calibrated {
        format!(
            "calibration: this host's, measured {} ({})",
            r.measured_at.as_deref().unwrap_or("at an unknown time"),
            r.file.as_deref().unwrap_or("")
        )
    } else {
        format!("calibration: UNCALIBRATED HOST, {}", r.source)
    }
}

/// After one of `calibrate`'s A/A runs: the run in `dir` added to this host's calibration for
/// its key (with the earlier runs kept there, those still readable), each workload's priors
/// estimated from all of them, kept, and printed.
pub fn add_result_set(dir: &Path) -> Result<()> {
    let dir = &std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf());
    let set = analysis::ResultSet::load(dir).with_context(|| format!("read the calibration run {}", dir.display()))?;
    let Some(ran) = set.manifest.calibration.clone() else {
        anyhow::bail!("{} records no calibration key (not a calibration run of this version)", dir.display());
    };
    let mut sets = vec![];
    let mut dirs = vec![];
    if let Lookup::Found(kept, _) = lookup(&ran.key) {
        let same = |d: &Path| std::fs::canonicalize(d).ok() == std::fs::canonicalize(dir).ok();
        for d in &kept.result_sets {
            if same(Path::new(d)) || dirs.contains(d) {
                continue;
            }
            match analysis::ResultSet::load(Path::new(d)) {
                Ok(s) => {
                    sets.push(s);
                    dirs.push(d.clone());
                }
                Err(e) => eprintln!("warning: calibration: an earlier A/A run is left out, {d} is unreadable: {e}"),
            }
        }
    }
    sets.push(set);
    dirs.push(dir.display().to_string());
    let estimates = analysis::calibration::estimate(&sets);
    let first = sets.iter().map(|s| s.manifest.started_at.clone()).min().unwrap_or_default();
    let last = sets.iter().map(|s| s.manifest.started_at.clone()).max().unwrap_or_default();
    let record = CalibrationRecord {
        host_calibrated: true,
        source: format!(
            "this host's calibration: {} A/A run(s), each the baseline and {} twins of it measured side by side, each workload's priors estimated from their null changes",
            sets.len(),
            sets[0].manifest.placements.len().saturating_sub(1),
        ),
        file: None,
        measured_at: Some(if first == last { first } else { format!("{first} to {last}") }),
        result_sets: dirs,
        key: ran.key,
        priors: estimates.iter().map(|e| e.record()).collect(),
    };
    let file = store(&record)?;
    println!("calibration of this host ({} A/A run(s)), kept in {}:", sets.len(), file.display());
    println!(
        "| workload | correlation (series) | offset sd, memory unlimited | memory limited | offset df (null changes) | note |"
    );
    println!("|---|---|---|---|---|---|");
    for e in &estimates {
        println!(
            "| {} | {:.3} ({}) | {:.2}% | {:.2}% | {:.0} ({} + {}) | {} |",
            e.workload,
            e.prior.rho,
            e.series,
            e.prior.life_sd_unlimited * 100.0,
            e.prior.life_sd_limited * 100.0,
            e.prior.life_df,
            e.null_changes.0,
            e.null_changes.1,
            e.record().note.unwrap_or_default()
        );
    }
    println!(
        "every `compare` of a file with this key on this host now uses it (its manifest.json and report.md say so)"
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(kernel: &str, scale: u32) -> BTreeMap<String, String> {
        BTreeMap::from([
            ("host.kernel".to_string(), kernel.to_string()),
            ("workload.rw".to_string(), format!("scale {scale}")),
        ])
    }

    #[test]
    fn a_calibration_counts_only_for_its_own_key_and_a_stale_one_says_what_differs() {
        let d = tempfile::tempdir().unwrap();
        assert!(matches!(lookup_in(d.path(), &key("6.1", 2)), Lookup::Missing));
        let record = CalibrationRecord { host_calibrated: true, key: key("6.1", 2), ..Default::default() };
        let file = store_in(d.path(), &record).unwrap();
        match lookup_in(d.path(), &key("6.1", 2)) {
            Lookup::Found(r, f) => assert_eq!((*r, f), (record.clone(), file.clone())),
            _ => panic!("the calibration of the same key"),
        }
        // Another kernel: stale, and the entry named.
        match lookup_in(d.path(), &key("6.18", 2)) {
            Lookup::Stale { file: f, differs } => {
                assert_eq!((f, differs), (file.clone(), vec!["host.kernel".to_string()]))
            }
            _ => panic!("a stale calibration"),
        }
        // Another workload: not this study's calibration at all.
        assert!(matches!(lookup_in(d.path(), &key("6.1", 3)), Lookup::Missing));
        // A file that is not a calibration (an uncalibrated record) never counts.
        let uncal = CalibrationRecord { host_calibrated: false, key: key("5.10", 2), ..Default::default() };
        store_in(d.path(), &uncal).unwrap();
        assert!(!matches!(lookup_in(d.path(), &key("5.10", 2)), Lookup::Found(..)));
    }
}
