//! `--resume` of a sliced run: the contests that had stopped are kept as they were, and what a
//! stopped contest is, recorded in `contests.json` as each one stops.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use super::Sliced;
use super::decide::Contest;
use crate::compare::resume::{self, ContestRecord};
use crate::compare::session::Session;

impl Session<'_> {
    /// `--resume`: the contests `contests.json` records as stopped are kept as they were (their
    /// slices, rounds, segment and stop reason); every other slice is set aside in
    /// `interrupted/`, and those contests are measured again from a fresh warm-up. The budget
    /// the kept contests spent counts as spent.
    pub(super) fn resume_contests(&mut self, s: &mut Sliced<'_, '_>, all: &mut [Contest]) -> Result<()> {
        let done = resume::contest_records(&self.results.root);
        let runs = self.results.read_runs().context("read the result set's runs")?;
        let mut keep: HashSet<String> = HashSet::new();
        let (mut kept, mut again) = (Vec::new(), Vec::new());
        let mut spent = 0.0;
        for c in all.iter_mut() {
            let name = c.name(s.spec);
            let Some(r) = done.get(&name) else {
                again.push(name);
                continue;
            };
            c.records = runs.iter().filter(|x| r.runs.contains(&x.run_id)).cloned().collect();
            (c.rounds, c.segment, c.seconds, c.failed, c.kept) = (r.rounds, r.segment, r.seconds, r.failed, true);
            c.stopped = Some(r.stopped.clone());
            c.reassess(&self.exp.baseline, &self.rule());
            keep.extend(r.runs.iter().cloned());
            spent += r.seconds;
            kept.push(name);
        }
        s.sequence = runs.iter().filter(|r| keep.contains(&r.run_id)).map(|r| r.sequence).max().unwrap_or(0);
        s.started = Instant::now().checked_sub(Duration::from_secs_f64(spent)).unwrap_or_else(Instant::now);
        let moved = resume::set_aside_runs(&self.results, &keep)?;
        let list = |v: &[String]| if v.is_empty() { "none".to_string() } else { v.join(", ") };
        let what = format!(
            "resumed by contest: {} of {} contests had stopped and are kept as they were ({}); {} measured again from a fresh warm-up on freshly provisioned tiers ({}), {moved} slice(s) of the interrupted run set aside in interrupted/",
            kept.len(),
            all.len(),
            list(&kept),
            again.len(),
            list(&again)
        );
        eprintln!("{what}");
        self.manifest.warnings.push(results::Warning::Other(what));
        if let Err(e) = self.refresh_tables() {
            eprintln!("  warning: could not refresh the tables: {e}");
        }
        Ok(())
    }

    /// Records a stopped contest in `contests.json` (what `--resume` keeps).
    pub(super) fn record_stopped(&self, s: &Sliced<'_, '_>, c: &Contest) {
        let Some(stopped) = c.stopped.clone() else { return };
        let record = ContestRecord {
            stopped,
            failed: c.failed,
            rounds: c.rounds,
            segment: c.segment,
            seconds: c.seconds,
            runs: c.records.iter().map(|r| r.run_id.clone()).collect(),
        };
        if let Err(e) = resume::record_contest(&self.results.root, &c.name(s.spec), record) {
            eprintln!("  warning: could not record contest {}: {e:#}", c.name(s.spec));
        }
    }
}
