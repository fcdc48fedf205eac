//! The sliced matrix (design `slices`): for each memory limit and profile, every placement's
//! server is up at once and the load alternates between them in rounds of short slices (a random
//! order in every round, seeded and recorded). A contest (the cells of one workload and client
//! count that differ only in placement) gets a warm-up per placement, then rounds until every
//! change against the baseline has an interval as narrow as the target, or its share of the time
//! budget is spent. A contest is measured in one pass only: what the budget has left is said,
//! not spent on a second server life (outside the coverage gate). Each slice is a measured run
//! of its own under `runs/`.

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use results::RunStatus;
use results::record::MemoryLabel;
use results::record::RunRecord;
use runner::RunnerEnv;
use runner::dataset::{self, Golden};
use runner::execute::{Observer, RunInputs};
use runner::matrix::{MatrixSpec, PlannedRun, SplitMix64, WorkloadSpec, run_id};
use runner::slices::Session as Servers;
use tiers::Provisioned;

mod decide;
mod prepare;
mod recovery;
mod resumed;

use self::decide::{Contest, contests, progress_note, session_groups, stop_reason};
use super::faults;
use super::session::Session;

/// An observer that shows the current slice on a terminal and prints nothing per second
/// (the scheduler prints a line per round).
struct Quiet;

impl Observer for Quiet {}

/// What the sliced matrix works with and has found so far.
struct Sliced<'m, 'e> {
    env: &'m RunnerEnv<'e>,
    spec: &'m MatrixSpec,
    provisioned: &'m Provisioned,
    goldens: &'m HashMap<String, Golden>,
    rng: SplitMix64,
    sequence: u32,
    /// The data set each placement holds.
    placed: HashMap<String, String>,
    /// Placements whose server did not start, with the reason.
    broken: HashMap<String, String>,
    started: Instant,
    failures: usize,
    /// The last slice's throughput per (placement, contest), to size transaction logs.
    expected: HashMap<(usize, usize), f64>,
    seconds: BTreeMap<&'static str, f64>,
    /// How often each placement's server failed in the current session.
    deaths: HashMap<String, u32>,
    /// Placements dropped from the current session (their server failed twice), with why.
    dropped: HashMap<usize, String>,
    /// Per placement and build (`<placement>/<build>`, as in `placed`): the contests whose workload
    /// wrote to its database since it was copied or last settled (`[measurement] settle`).
    written: decide::Written,
    /// Prefixes the session ids of a resumed run (`r1-`), so that its session directories and
    /// cgroups are new.
    prefix: String,
}

/// Which placement's server failed, during what, and what the workload said (if it said).
struct Failed<'p> {
    placement: usize,
    phase: &'p str,
    error: Option<String>,
}

/// What became of a contest after one of its placements' server failed.
enum Recovery {
    /// Restarted on its own data: the contest warms up again in a new segment.
    Restarted,
    /// The placement was dropped; the contest goes on with the others.
    Dropped,
    /// The contest failed (the baseline dropped, or no contender left).
    Failed,
}

impl Session<'_> {
    /// Runs the sliced matrix; returns how many slices failed.
    pub(super) async fn run_sliced(
        &mut self,
        env: &RunnerEnv<'_>,
        spec: &MatrixSpec,
        provisioned: &Provisioned,
        goldens: &HashMap<String, Golden>,
    ) -> Result<usize> {
        let seed = self.manifest.measurement.seed.unwrap_or(0);
        let mut s = Sliced {
            env,
            spec,
            provisioned,
            goldens,
            rng: SplitMix64::new(seed ^ 0x5eed_0f51_1ce5),
            sequence: 0,
            placed: HashMap::new(),
            broken: HashMap::new(),
            started: Instant::now(),
            failures: 0,
            expected: HashMap::new(),
            seconds: BTreeMap::new(),
            deaths: HashMap::new(),
            dropped: HashMap::new(),
            written: decide::Written::default(),
            prefix: match &self.previous {
                Some(p) => format!("r{}-", p.resumed_at.len() + 1),
                None => String::new(),
            },
        };
        let mut all = contests(spec, &self.exp.baseline);
        if self.previous.is_some() {
            self.resume_contests(&mut s, &mut all)?;
        }
        let m = self.exp.measurement.clone();
        eprintln!(
            "measuring {} contest(s) in rounds of {} s slices{}{}",
            all.len(),
            m.slice.as_secs(),
            m.budget.map(|b| format!(", budget {:.0} s", b.as_secs_f64())).unwrap_or_default(),
            m.target_halfwidth_pct.map(|t| format!(", target ±{t}%")).unwrap_or_default()
        );
        // First pass: every contest, in order, each with its share of what is left.
        let groups = session_groups(&all);
        for (gi, group) in groups.iter().enumerate() {
            let todo: Vec<usize> = group.iter().copied().filter(|&i| !all[i].kept).collect();
            if !todo.is_empty() {
                self.run_group(&mut s, &mut all, &todo, gi + 1).await?;
            }
        }
        // No second pass: a contest that missed its target is not revisited, as a revisit (a
        // restart, a new server life and warm-up) is outside the coverage gate
        // (docs/benchmarks.md, "No revisits"); what the budget has left is said and not spent.
        self.say_budget_left(&s, &all);
        for c in &all {
            let why = c.stopped.clone().unwrap_or_else(|| "not measured".into());
            self.manifest.measurement.stopped.insert(c.name(spec), why);
        }
        for (k, v) in s.seconds {
            self.manifest.phase_seconds.insert(k.into(), v);
        }
        // A contest kept from the interrupted run that had failed is still a failure.
        Ok(s.failures + all.iter().filter(|c| c.kept && c.failed).count())
    }

    /// Says how much of the budget is left unspent (at least one round of the slowest contest short
    /// of its target) and which contests missed their target.
    fn say_budget_left(&self, s: &Sliced<'_, '_>, all: &[Contest]) {
        let m = &self.exp.measurement;
        let (Some(budget), Some(target)) = (m.budget, m.target_halfwidth_pct) else { return };
        let left = budget.as_secs_f64() - s.started.elapsed().as_secs_f64();
        let short = decide::short_of_target(all, target);
        // Less than one round of the slowest of them is not budget that could have been spent.
        let round = short.iter().map(|&i| all[i].seconds / f64::from(all[i].rounds.max(1))).fold(0.0, f64::max);
        if left >= round.max(1.0) && !short.is_empty() {
            let names: Vec<String> = short.iter().map(|&i| all[i].name(s.spec)).collect();
            eprintln!(
                "{left:.0} s of the budget left unspent; short of the ±{target}% target: {} (not revisited: a second server life is outside the coverage gate)",
                names.join(", ")
            );
        }
    }

    /// One session: the group's servers up at once, its contests one after the other.
    async fn run_group(
        &mut self,
        s: &mut Sliced<'_, '_>,
        all: &mut [Contest],
        group: &[usize],
        number: usize,
    ) -> Result<()> {
        let first = &all[group[0]];
        let (build, profile, memory) = (first.build, first.profile, first.memory);
        let several = s.spec.builds.len() > 1;
        let targets: Vec<runner::matrix::PlacementTarget> =
            (0..s.spec.placements.len()).map(|p| self.build_target(s.spec, p, build, profile)).collect();
        let build_profile = self.build_profile(&s.spec.profiles[profile], build);
        let env = self.build_env(s.env, build);
        // A placement on a tier lost earlier (its own, or one it shares) is out of every later
        // session.
        self.mark_on_lost_tiers(s, &first.placements.clone(), false);
        if let Some(why) = s.broken.get(&self.exp.baseline) {
            bail!("{why}; the baseline is needed for every delta, so the matrix stops here");
        }
        let mut placements: Vec<usize> =
            first.placements.iter().copied().filter(|&p| !s.broken.contains_key(&s.spec.placements[p].name)).collect();
        if placements.len() < 2 {
            let why: Vec<&str> = s.broken.values().map(String::as_str).collect();
            for &c in group {
                all[c].stopped = Some(format!("failed: not measured: {}", why.join("; ")));
                all[c].failed = true;
                eprintln!("  [{}] {}", all[c].name(s.spec), all[c].stopped.as_deref().unwrap_or(""));
                self.record_stopped(s, &all[c]);
            }
            return Ok(());
        }
        // No position: the order the data sets are copied in and the servers start (so their
        // ports and cgroups) is drawn per session, seeded, and recorded in the manifest.
        s.rng.shuffle(&mut placements);
        let t0 = Instant::now();
        for &c in group {
            for &p in &placements.clone() {
                self.place_sliced(s, &env, &targets[p], all[c].workload, (build, self.runs_build(p, build)))?;
            }
        }
        add(&mut s.seconds, "relocate", t0.elapsed().as_secs_f64());
        let t0 = Instant::now();
        let id = format!("{}s{number}", s.prefix);
        s.deaths.clear();
        s.dropped.clear();
        let mut servers = self.start_servers(s, &env, &id, &mut placements, (&targets, &build_profile, memory)).await?;
        add(&mut s.seconds, "session start", t0.elapsed().as_secs_f64());
        self.manifest
            .measurement
            .server_order
            .insert(id.clone(), servers.placements().iter().map(|p| p.to_string()).collect());
        eprintln!(
            "session {id}: {} servers up ({}, memory {}, profile {}{})",
            placements.len(),
            servers.placements().join(", "),
            MemoryLabel::of(s.spec.memory_limits[memory].bytes),
            s.spec.profiles[profile].name,
            if several { format!(", build {}", s.spec.builds[build].name) } else { String::new() },
        );
        let mut outcome = Ok(());
        let baseline = s.spec.placements.iter().position(|p| p.name == self.exp.baseline);
        for &c in group {
            // A tier lost in an earlier contest of the session: its placements are dropped too.
            self.mark_on_lost_tiers(s, &all[c].placements.clone(), true);
            all[c].placements.retain(|p| placements.contains(p) && !s.dropped.contains_key(p));
            // A placement dropped earlier in the session: without the baseline, or without a
            // contender, the contest cannot be measured.
            if baseline.is_some_and(|b| !all[c].placements.contains(&b)) || all[c].placements.len() < 2 {
                let why: Vec<&str> = s.dropped.values().map(String::as_str).collect();
                all[c].stopped = Some(format!("failed: not measured: {}", why.join("; ")));
                all[c].failed = true;
                eprintln!("  [{}] {}", all[c].name(s.spec), all[c].stopped.as_deref().unwrap_or(""));
                self.record_stopped(s, &all[c]);
                continue;
            }
            // Each contest's share is what is left over every contest not yet measured.
            let remaining = all.iter().filter(|x| x.rounds == 0 && !x.failed && !x.kept).count();
            if let Err(e) = self.run_contest(s, &mut servers, &mut all[c], remaining, (&targets, &build_profile)).await
            {
                outcome = Err(e);
                break;
            }
            self.record_stopped(s, &all[c]);
        }
        let t0 = Instant::now();
        let stopped = servers.stop().await.context("stop the session's servers");
        add(&mut s.seconds, "session stop", t0.elapsed().as_secs_f64());
        outcome?;
        stopped?;
        if let Err(e) = self.refresh_tables() {
            eprintln!("  warning: could not refresh the tables: {e}");
        }
        Ok(())
    }

    /// Warm-up, then rounds until the target, the contest's share of the budget, or (without a
    /// budget) `min_rounds`.
    async fn run_contest(
        &mut self,
        s: &mut Sliced<'_, '_>,
        servers: &mut Servers<'_>,
        c: &mut Contest,
        remaining: usize,
        build: Build<'_>,
    ) -> Result<()> {
        let m = self.exp.measurement.clone();
        let name = c.name(s.spec);
        c.segment += 1;
        if m.settle {
            self.settle_all(s, servers, c).await?;
        }
        let t0 = Instant::now();
        if let Err(e) = servers.checkpoint().await {
            // A server that cannot checkpoint shows itself in the warm-up, which handles it.
            eprintln!("  [{name}] warning: checkpoint before the contest: {e}");
        }
        add(&mut s.seconds, "checkpoint", t0.elapsed().as_secs_f64());
        if !self.warm_up_all(s, servers, c, build).await? {
            return Ok(());
        }
        let share = self.share(s, remaining);
        c.stopped = None;
        let t_contest = Instant::now();
        loop {
            if self.interrupts.cancelled() {
                bail!("interrupted during contest {name}");
            }
            // A placement whose device broke during another placement's slice is dropped before
            // the next round, not measured on it.
            let on_lost = c.placements.iter().copied().find(|&p| self.lost_tier_of(&s.spec.placements[p]).is_some());
            if let Some(p) = on_lost {
                let failed = Failed { placement: p, phase: "another placement's slice", error: None };
                match self.server_failed(s, servers, c, failed, build).await? {
                    Recovery::Failed => return Ok(()),
                    Recovery::Dropped | Recovery::Restarted => continue,
                }
            }
            c.rounds += 1;
            let t_round = Instant::now();
            let line = match self.round(s, servers, c, build).await? {
                Ok(line) => line,
                Err(down) => {
                    let phase = format!("a slice of round {}", c.rounds);
                    match self
                        .server_failed(s, servers, c, Failed { placement: down, phase: &phase, error: None }, build)
                        .await?
                    {
                        Recovery::Failed => return Ok(()),
                        Recovery::Dropped => continue,
                        Recovery::Restarted => {
                            c.segment += 1;
                            if !self.warm_up_all(s, servers, c, build).await? {
                                return Ok(());
                            }
                            continue;
                        }
                    }
                }
            };
            let secs = t_round.elapsed().as_secs_f64();
            c.seconds += secs;
            add(&mut s.seconds, "measure", secs);
            c.reassess(&self.exp.baseline, &self.rule());
            eprint!(
                "{}",
                crate::terminal::wrap(
                    &format!(
                        "  [{name}] round {}: {line}{}{} (elapsed {:.0} s{})",
                        c.rounds,
                        c.widest.map(|w| format!("; widest change ±{w:.1}%")).unwrap_or_default(),
                        c.progress.as_ref().map(progress_note).unwrap_or_default(),
                        s.started.elapsed().as_secs_f64(),
                        m.budget.map(|b| format!(" of the {:.0} s budget", b.as_secs_f64())).unwrap_or_default()
                    ),
                    crate::terminal::WIDTH,
                    "      "
                )
            );
            if let Err(e) = self.refresh_tables() {
                eprintln!("  warning: could not refresh the tables: {e}");
            }
            if let Some(why) = stop_reason(c, &m, share, t_contest.elapsed().as_secs_f64(), secs) {
                eprintln!("  [{name}] stops: {why}");
                c.stopped = Some(if c.notes.is_empty() { why } else { format!("{why}; {}", c.notes.join("; ")) });
                return Ok(());
            }
        }
    }

    /// The contest's warm-up on every placement, again after a server failed during it and was
    /// restarted (in a new segment); false when the contest failed.
    async fn warm_up_all(
        &mut self,
        s: &mut Sliced<'_, '_>,
        servers: &mut Servers<'_>,
        c: &mut Contest,
        build: Build<'_>,
    ) -> Result<bool> {
        loop {
            let Err((p, error)) = self.warm_up(s, servers, c, build).await? else { return Ok(true) };
            match self
                .server_failed(s, servers, c, Failed { placement: p, phase: "the warm-up", error: Some(error) }, build)
                .await?
            {
                Recovery::Failed => return Ok(false),
                Recovery::Dropped => {}
                Recovery::Restarted => c.segment += 1,
            }
        }
    }

    /// A discarded warm-up on every placement's server, in a random order; Err((placement,
    /// what the workload said)) when one failed.
    async fn warm_up(
        &mut self,
        s: &mut Sliced<'_, '_>,
        servers: &mut Servers<'_>,
        c: &Contest,
        build: Build<'_>,
    ) -> Result<std::result::Result<(), (usize, String)>> {
        let m = &self.exp.measurement;
        let workload = &s.spec.workloads[c.workload];
        let t0 = Instant::now();
        let warm = m.warm_up.unwrap_or(if workload.ramp_up.is_zero() { m.slice * 2 } else { workload.ramp_up });
        let prewarm = m.prewarm;
        let mut order = c.placements.clone();
        s.rng.shuffle(&mut order);
        if prewarm {
            let t1 = Instant::now();
            for &p in &order {
                if let Err(error) = self.prewarm(s, servers, c, p).await? {
                    add(&mut s.seconds, "prewarm", t1.elapsed().as_secs_f64());
                    return Ok(Err((p, error)));
                }
            }
            add(&mut s.seconds, "prewarm", t1.elapsed().as_secs_f64());
        }
        let name = c.name(s.spec);
        eprintln!(
            "  [{name}] warm-up: {} s of load on each of {} placements, discarded",
            warm.as_secs_f64().round(),
            order.len()
        );
        for &p in &order {
            let w = WorkloadSpec { ramp_up: warm, ..workload.clone() };
            let planned = self.planned(s, c, p, 0);
            let inp = self.inputs(s, &planned, &w, &[], build);
            let label = format!("{}-{}-c{}", s.spec.placements[p].name, workload.name, c.clients);
            match servers.warm_up(&inp, &label, &mut Quiet).await {
                Ok(Some(tps)) => {
                    eprintln!(
                        "  [{name}] warmed up {}: {tps:.0} tps (elapsed {:.0} s)",
                        s.spec.placements[p].name,
                        s.started.elapsed().as_secs_f64()
                    );
                    s.expected.insert((p, c.workload), tps);
                }
                Ok(None) => {}
                Err(runner::RunnerError::Cancelled) => bail!("interrupted during the warm-up of {label}"),
                Err(
                    e @ (runner::RunnerError::Workload(_)
                    | runner::RunnerError::Server(_)
                    | runner::RunnerError::Query { .. }),
                ) => {
                    add(&mut s.seconds, "warm_up", t0.elapsed().as_secs_f64());
                    return Ok(Err((p, e.to_string())));
                }
                Err(e) => return Err(anyhow::Error::from(e).context("warm-up")),
            }
        }
        add(&mut s.seconds, "warm_up", t0.elapsed().as_secs_f64());
        Ok(Ok(()))
    }

    /// One round: a slice per placement in a random order. Ok(line) with what each placement did,
    /// or Err(placement index) when a placement's server went down.
    async fn round(
        &mut self,
        s: &mut Sliced<'_, '_>,
        servers: &mut Servers<'_>,
        c: &mut Contest,
        build: Build<'_>,
    ) -> Result<std::result::Result<String, usize>> {
        let workload = &s.spec.workloads[c.workload];
        let mut order = c.placements.clone();
        s.rng.shuffle(&mut order);
        let mut line = Vec::new();
        for &p in &order {
            let w = WorkloadSpec { duration: self.exp.measurement.slice, ramp_up: Duration::ZERO, ..workload.clone() };
            let planned = self.planned(s, c, p, c.rounds);
            let faults = faults::faults_for(self.exp, &self.ctx, planned.sequence, s.provisioned);
            let inp = self.inputs(s, &planned, &w, &faults, build);
            let expected = s.expected.get(&(p, c.workload)).copied();
            let mut record = servers.slice(&inp, expected, &mut Quiet).await.map_err(|e| match e {
                runner::RunnerError::Cancelled => anyhow::anyhow!("interrupted during slice {}", planned.run_id),
                e => anyhow::Error::from(e).context(format!("slice {}", planned.run_id)),
            })?;
            let tier_lost = self.fail_if_tier_lost(s.provisioned, &s.spec.placements[p], &mut record)?.is_some();
            let place = s.spec.placements[p].name.clone();
            match record.status {
                RunStatus::Ok => {
                    s.expected.insert((p, c.workload), record.metrics.tps.max(1.0));
                    line.push(format!("{place} {:.0}", headline(&record)));
                }
                RunStatus::Failed => {
                    s.failures += 1;
                    line.push(format!("{place} FAILED ({})", record.failure.as_deref().unwrap_or("unknown")));
                }
            }
            c.records.push(record);
            if tier_lost || !servers.is_running(&place) {
                return Ok(Err(p));
            }
        }
        Ok(Ok(line.join(", ")))
    }

    /// The estimator's rule, as the report will apply it.
    fn rule(&self) -> analysis::Rules {
        analysis::rules_of(&self.manifest)
    }

    /// The seconds a contest may take: what is left of the budget over the `remaining` contests
    /// still to measure, this one included (None without a budget).
    fn share(&self, s: &Sliced<'_, '_>, remaining: usize) -> Option<f64> {
        decide::share(self.exp.measurement.budget, s.started.elapsed(), remaining)
    }

    fn planned(&self, s: &mut Sliced<'_, '_>, c: &Contest, placement: usize, round: u32) -> PlannedRun {
        let cell = c.cell(s.spec, placement);
        let sequence = if round == 0 {
            0
        } else {
            s.sequence += 1;
            s.sequence
        };
        PlannedRun {
            sequence,
            run_id: run_id(sequence, &cell, round, s.spec.varies()),
            cell,
            repetition: round,
            segment: c.segment,
            placement,
            workload: c.workload,
            profile: c.profile,
            build: c.build,
            memory: c.memory,
            memory_limit: s.spec.memory_limits[c.memory].bytes,
            clients: c.clients,
            threads: c.threads,
        }
    }

    fn inputs<'i>(
        &'i self,
        s: &'i Sliced<'_, '_>,
        planned: &'i PlannedRun,
        workload: &'i WorkloadSpec,
        faults: &'i [runner::faults::Fault],
        (targets, profile): Build<'i>,
    ) -> RunInputs<'i> {
        RunInputs {
            planned,
            placement: &targets[planned.placement],
            workload,
            profile,
            memory: &s.spec.memory_limits[planned.memory],
            results: &self.results,
            faults,
        }
    }

    /// Copies the workload's data set onto the placement's directories for the matrix's build
    /// unless they hold it already: the golden copy of the build the placement's server runs
    /// (`runs`, its own when it names one).
    fn place_sliced(
        &mut self,
        s: &mut Sliced<'_, '_>,
        env: &RunnerEnv<'_>,
        placement: &runner::matrix::PlacementTarget,
        workload: usize,
        (build, runs): (usize, usize),
    ) -> Result<()> {
        let dataset = s.spec.workloads[workload].dataset(&s.spec.tablespace_roles()).key();
        let key = self.golden_key(&dataset, runs);
        let slot = format!("{}/{}", placement.name, s.spec.builds[build].name);
        if s.placed.get(&slot) == Some(&key) {
            return Ok(());
        }
        eprintln!("copying data set {key} onto placement {}", placement.name);
        let secs =
            dataset::relocate(env, &s.goldens[&key], &placement.data_dir, &placement.wal_dir, &placement.tablespaces)?;
        if let Some(d) = self.manifest.datasets.iter_mut().find(|d| d.key == key) {
            d.relocate_seconds.insert(placement.name.clone(), secs);
        }
        s.placed.insert(slot.clone(), key);
        // A fresh copy: nothing written to it yet.
        s.written.clean(std::slice::from_ref(&slot));
        Ok(())
    }
}

/// A session's placements (in its build's directories) and profile (as its build runs it).
type Build<'b> = (&'b [runner::matrix::PlacementTarget], &'b runner::matrix::Profile);

fn headline(r: &RunRecord) -> f64 {
    r.metrics.nopm.unwrap_or(r.metrics.tps)
}

fn add(map: &mut BTreeMap<&'static str, f64>, key: &'static str, secs: f64) {
    *map.entry(key).or_default() += secs;
}
