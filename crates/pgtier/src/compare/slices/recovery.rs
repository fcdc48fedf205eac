//! What the sliced matrix does when a placement cannot go on: a server that does not start, one
//! that fails during a phase (restarted once, then dropped), and an emulated tier that broke
//! (every placement on it dropped at once, and left out of later sessions).

use anyhow::{Result, bail};
use runner::RunnerEnv;
use runner::slices::{Session as Servers, SessionSpec, session_dir};
use std::time::Instant;

use super::decide::Contest;
use super::{Build, Failed, Recovery, Sliced, add};
use crate::compare::session::Session;

impl Session<'_> {
    /// Starts the session's servers, one per placement; a placement whose server does not start
    /// is marked unusable and left out of the session, and the session goes on without it while
    /// the baseline and one contender remain.
    pub(super) async fn start_servers<'e>(
        &mut self,
        s: &mut Sliced<'_, '_>,
        env: &RunnerEnv<'e>,
        id: &str,
        placements: &mut Vec<usize>,
        (targets, build_profile, memory): (&[runner::matrix::PlacementTarget], &runner::matrix::Profile, usize),
    ) -> Result<Servers<'e>> {
        loop {
            let sspec = SessionSpec {
                id: id.to_string(),
                placements: placements.iter().map(|&p| &targets[p]).collect(),
                profile: build_profile,
                memory: &s.spec.memory_limits[memory],
                dir: session_dir(&self.results.root, id),
            };
            match Servers::start(env, &sspec).await {
                Ok(servers) => return Ok(servers),
                Err(f) => {
                    let why = format!(
                        "placement {} unusable in session {id}: its server did not start ({})",
                        f.placement, f.error
                    );
                    eprintln!("  {why}");
                    self.manifest.warnings.push(results::Warning::Other(why.clone()));
                    if f.placement == self.exp.baseline
                        || !placements.iter().any(|&p| s.spec.placements[p].name == f.placement)
                    {
                        bail!("{why}; the baseline is needed for every delta, so the matrix stops here");
                    }
                    s.broken.insert(f.placement.clone(), why);
                    placements.retain(|&p| s.spec.placements[p].name != f.placement);
                    if placements.len() < 2 {
                        bail!("session {id} has no contender left to compare with the baseline");
                    }
                }
            }
        }
    }

    /// Every placement of `placements` on an emulated tier lost earlier in the matrix is made
    /// unusable for later sessions (and, `in_session`, dropped from the rest of this one), with
    /// what happened to the tier.
    pub(super) fn mark_on_lost_tiers(&mut self, s: &mut Sliced<'_, '_>, placements: &[usize], in_session: bool) {
        for &p in placements {
            let Some(lost) = self.lost_tier_of(&s.spec.placements[p]) else { continue };
            let name = s.spec.placements[p].name.clone();
            let why = format!("placement {name} unusable: {lost}");
            if in_session {
                s.dropped.entry(p).or_insert_with(|| why.clone());
            }
            s.broken.entry(name).or_insert(why);
        }
    }

    /// A placement's server failed during a phase (with what the workload said): said with
    /// the placement, how (signal, OOM kill, exit code, the log's last lines) and when, into the
    /// manifest's warnings. The first time in a session it is restarted on its own data; the
    /// second time it is dropped from the rest of the session, and the contest fails when that
    /// leaves no baseline or no contender. A placement whose emulated tier broke is dropped at
    /// once, and left out of later sessions.
    pub(super) async fn server_failed(
        &mut self,
        s: &mut Sliced<'_, '_>,
        servers: &mut Servers<'_>,
        c: &mut Contest,
        failed: Failed<'_>,
        (targets, profile): Build<'_>,
    ) -> Result<Recovery> {
        let Failed { placement: p, phase, error } = failed;
        let place = s.spec.placements[p].name.clone();
        let name = c.name(s.spec);
        let mut how = servers.failure(&place).await;
        if let Some(e) = error.filter(|_| !how.iter().any(|h| h.starts_with("the postmaster"))) {
            how.insert(0, format!("the workload failed: {e}"));
        }
        let mut how = how.join("; ");
        s.failures += 1;
        let count = s.deaths.entry(place.clone()).or_default();
        *count += 1;
        let session = servers.id.clone();
        let tier_lost = self.lost_tier_of(&targets[p]);
        if let Some(lost) = &tier_lost {
            // A restart would run on the broken device again; no later session uses it either.
            how = if how.is_empty() { lost.clone() } else { format!("{lost}; {how}") };
            s.broken.insert(place.clone(), format!("placement {place} unusable: {lost}"));
        }
        if *count == 1 && tier_lost.is_none() {
            let what = format!(
                "placement {place}'s server failed during {phase} of contest {name} in session {session}: {how}"
            );
            eprintln!(
                "  {what}; restarting it on its own data (crash recovery), then every placement of the contest warms up again (segment {})",
                c.segment + 1
            );
            let sspec = SessionSpec {
                id: session.clone(),
                placements: vec![&targets[p]],
                profile,
                memory: &s.spec.memory_limits[c.memory],
                dir: session_dir(&self.results.root, &session),
            };
            let t0 = Instant::now();
            let restarted = servers.restart(&sspec, &place).await;
            add(&mut s.seconds, "restart", t0.elapsed().as_secs_f64());
            match restarted {
                Ok(()) => {
                    eprintln!("  placement {place}'s server is up again after {:.1} s", t0.elapsed().as_secs_f64());
                    self.manifest.warnings.push(results::Warning::Other(format!(
                        "{what}; restarted on its own data, the contest went on in a new segment after a fresh warm-up (two server lives, each warming up: outside the coverage gate, whose revisit kind held 87.6% in simulation; measure it again for a figure the gate covers)"
                    )));
                    c.notes.push(format!("placement {place}'s server failed during {phase} and was restarted"));
                    return Ok(Recovery::Restarted);
                }
                Err(e) => how = format!("{how}; its restart failed: {e}"),
            }
        }
        let what = if tier_lost.is_some() {
            format!("placement {place} lost its device during {phase} of contest {name} in session {session}: {how}")
        } else if *s.deaths.get(&place).unwrap_or(&0) > 1 {
            format!(
                "placement {place}'s server failed again during {phase} of contest {name} in session {session}: {how}"
            )
        } else {
            format!("placement {place}'s server failed during {phase} of contest {name} in session {session}: {how}")
        };
        let what = if tier_lost.is_some() {
            format!("{what}; the placement is dropped from the rest of the matrix")
        } else {
            format!("{what}; the placement is dropped from the rest of session {session}")
        };
        eprintln!("  {what}");
        self.manifest.warnings.push(results::Warning::Other(what.clone()));
        if let Err(e) = servers.drop_placement(&place).await {
            eprintln!("  warning: placement {place}'s server could not be stopped: {e}");
        }
        s.dropped.insert(p, what.clone());
        let baseline = c.placements.first() == Some(&p);
        c.placements.retain(|&q| q != p);
        if baseline || c.placements.len() < 2 {
            c.stopped = Some(format!("failed: {what}"));
            c.failed = true;
            eprintln!("  [{name}] fails");
            return Ok(Recovery::Failed);
        }
        c.notes.push(what);
        Ok(Recovery::Dropped)
    }
}
