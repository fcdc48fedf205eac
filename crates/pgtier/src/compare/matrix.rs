//! The matrix phase: every planned run in order, each data set copied onto its placement
//! before the placement's first run with it; a placement whose server cannot start is
//! skipped from then on, and losing the baseline stops the matrix. When resuming, finished runs
//! are kept and an interrupted one is set aside and made again.

use std::collections::{HashMap, HashSet};
use std::time::Instant;

use anyhow::{Context, Result, bail};
use results::{FailureKind, ResultsDir, RunStatus, Warning};
use runner::RunnerEnv;
use runner::RunnerError;
use runner::dataset::{self, Golden};
use runner::execute::{RunInputs, execute_run};
use runner::matrix::{MatrixSpec, PlacementTarget, PlannedRun};
use tiers::Provisioned;

use super::session::Session;
use super::{faults, resume};
use crate::progress::MatrixProgress;

/// What the matrix phase works with, and what it has found so far.
struct Matrix<'m, 'e> {
    env: &'m RunnerEnv<'e>,
    spec: &'m MatrixSpec,
    provisioned: &'m Provisioned,
    goldens: &'m HashMap<String, Golden>,
    progress: MatrixProgress,
    /// Placements whose server did not start, with the reason.
    broken: HashMap<String, String>,
    /// The data set each placement holds.
    placed: HashMap<String, String>,
    relocate_seconds: f64,
    measure_seconds: f64,
    failures: usize,
}

impl Session<'_> {
    /// Runs the matrix; returns how many runs failed (the matrix went on past them).
    pub(super) async fn run_matrix(
        &mut self,
        env: &RunnerEnv<'_>,
        spec: &MatrixSpec,
        provisioned: &Provisioned,
        goldens: &HashMap<String, Golden>,
    ) -> Result<usize> {
        let runs = self.runs.clone();
        let done: HashSet<String> =
            if self.previous.is_some() { resume::finished_runs(&self.results) } else { Default::default() };
        if self.previous.is_some() {
            resume::set_aside_unfinished(&self.results, &done)?;
            eprintln!("resuming: {} of {} runs already finished; they are kept", done.len(), runs.len());
        }
        let mut m = Matrix {
            env,
            spec,
            provisioned,
            goldens,
            progress: MatrixProgress::new(runs.len() - done.len().min(runs.len())),
            broken: HashMap::new(),
            placed: HashMap::new(),
            relocate_seconds: 0.0,
            measure_seconds: 0.0,
            failures: 0,
        };
        for planned in &runs {
            if self.interrupts.cancelled() {
                m.progress.finish();
                bail!("interrupted; {} of {} runs finished", progress_done(&self.results), runs.len());
            }
            if done.contains(&planned.run_id) {
                continue;
            }
            self.one_run(&mut m, planned).await?;
        }
        m.progress.finish();
        self.manifest.phase_seconds.insert("relocate".into(), m.relocate_seconds);
        self.manifest.phase_seconds.insert("measure".into(), m.measure_seconds);
        Ok(m.failures)
    }

    async fn one_run(&mut self, m: &mut Matrix<'_, '_>, planned: &PlannedRun) -> Result<()> {
        let placement = &self.build_target(m.spec, planned.placement, planned.build, planned.profile);
        let workload = &m.spec.workloads[planned.workload];
        if let Some(why) = m.broken.get(&placement.name) {
            // Contained: the placement is unusable; its remaining runs are recorded as not run.
            let mut r = runner::execute::not_run(planned, workload, &format!("not run: {why}"));
            r.failure_kind = Some(FailureKind::PlacementUnusable);
            self.results.write_run(&r).context("write result")?;
            m.failures += 1;
            return Ok(());
        }
        if let Some(what) = self.lost_tier_of(placement) {
            // Its device broke during an earlier run (of another placement sharing it): whatever
            // ran here would measure a broken device.
            let mut r = runner::execute::not_run(planned, workload, &format!("not run: {what}"));
            r.failure_kind = Some(FailureKind::DeviceLost);
            self.results.write_run(&r).context("write result")?;
            m.failures += 1;
            return self.placement_lost(m, planned, placement, &what);
        }
        self.place(m, planned, placement)?;
        m.progress.start_run(&planned.run_id);
        let t0 = Instant::now();
        let profile = self.build_profile(&m.spec.profiles[planned.profile], planned.build);
        let inputs = RunInputs {
            planned,
            placement,
            workload,
            profile: &profile,
            memory: &m.spec.memory_limits[planned.memory],
            results: &self.results,
            faults: &faults::faults_for(self.exp, &self.ctx, planned.sequence, m.provisioned),
        };
        let env = placement.env_for(&self.build_env(m.env, planned.build));
        let mut record = match execute_run(&env, &inputs, &mut m.progress).await {
            Ok(r) => r,
            Err(RunnerError::Cancelled) => {
                m.progress.finish();
                bail!(
                    "interrupted during run {}; {} of {} runs finished",
                    planned.run_id,
                    progress_done(&self.results),
                    self.runs.len()
                );
            }
            Err(e) => {
                m.progress.finish();
                return Err(anyhow::Error::from(e).context(format!("run {}", planned.run_id)));
            }
        };
        m.measure_seconds += t0.elapsed().as_secs_f64();
        let tier_lost = self.fail_if_tier_lost(m.provisioned, placement, &mut record)?;
        let line = match record.status {
            RunStatus::Ok => {
                format!("{:.1} tps, {:.3} ms average latency", record.metrics.tps, record.metrics.latency_ms_avg)
            }
            RunStatus::Failed => {
                m.failures += 1;
                format!("FAILED: {}", record.failure.as_deref().unwrap_or("unknown"))
            }
        };
        m.progress.finish_run(&line);
        if let Some(what) = tier_lost {
            self.placement_lost(m, planned, placement, &what)?;
            // The baseline on the same tier: no delta can be made from here on.
            let baseline = m.spec.placements.iter().find(|p| p.name == self.exp.baseline).cloned();
            if let Some(b) = baseline.filter(|b| b.name != placement.name)
                && let Some(lost) = self.lost_tier_of(&b)
            {
                self.placement_lost(m, planned, &b, &lost)?;
            }
        } else if record.failure_kind == Some(FailureKind::ServerStart) {
            self.placement_lost(m, planned, placement, record.failure.as_deref().unwrap_or(""))?;
        }
        if let Err(e) = self.refresh_tables() {
            m.progress.println(&format!("  warning: could not refresh the tables: {e}"));
        }
        Ok(())
    }

    /// Copies the run's data set onto its placement unless the placement holds it already.
    fn place(&mut self, m: &mut Matrix<'_, '_>, planned: &PlannedRun, placement: &PlacementTarget) -> Result<()> {
        let dataset = m.spec.workloads[planned.workload].dataset(&m.spec.tablespace_roles()).key();
        let key = self.golden_key(&dataset, self.runs_build(planned.placement, planned.build));
        let slot = format!("{}/{}", placement.name, planned.cell.build);
        if m.placed.get(&slot) == Some(&key) {
            return Ok(());
        }
        let golden = &m.goldens[&key];
        m.progress.println(&format!("copying data set {key} onto placement {}", placement.name));
        let env = self.build_env(m.env, planned.build);
        let secs = dataset::relocate(&env, golden, &placement.data_dir, &placement.wal_dir, &placement.tablespaces)?;
        m.relocate_seconds += secs;
        if let Some(d) = self.manifest.datasets.iter_mut().find(|d| d.key == key) {
            d.relocate_seconds.insert(placement.name.clone(), secs);
        }
        m.placed.insert(slot, key);
        Ok(())
    }

    /// A placement's server did not start: its remaining runs are skipped, and without the
    /// baseline the matrix stops.
    fn placement_lost(
        &mut self,
        m: &mut Matrix<'_, '_>,
        planned: &PlannedRun,
        placement: &PlacementTarget,
        failure: &str,
    ) -> Result<()> {
        let warning = Warning::PlacementUnusable {
            placement: placement.name.clone(),
            run_id: planned.run_id.clone(),
            failure: failure.to_string(),
        };
        let why = warning.to_string();
        m.progress.println(&format!("  {why}; its remaining runs are skipped"));
        self.manifest.warnings.push(warning);
        if placement.name == self.exp.baseline {
            m.progress.finish();
            let _ = self.refresh_tables();
            bail!("{why}; the baseline is needed for every delta, so the matrix stops here");
        }
        m.broken.insert(placement.name.clone(), why);
        Ok(())
    }
}

fn progress_done(results: &ResultsDir) -> usize {
    results.read_runs().map(|r| r.len()).unwrap_or(0)
}
