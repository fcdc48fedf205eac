//! What a contest's placements get before its warm-up: a settle of their databases after a
//! contest that wrote to them (`[measurement] settle`), and a prewarm of each placement's data
//! set into its server (`[measurement] prewarm`), each said on the terminal and recorded in the
//! manifest with its raw output in the session's directory.

use std::time::Instant;

use anyhow::{Result, bail};
use runner::slices::{Session as Servers, session_dir};

use super::decide::Contest;
use super::{Sliced, add};
use crate::compare::session::Session;

impl Session<'_> {
    /// Before contest `c`: when an earlier contest wrote to any of its placements' databases
    /// (since copied or last settled), every one of its placements' databases is settled (VACUUM
    /// (ANALYZE), CHECKPOINT: [`runner::settle`]), alike, in the session's server order, said on
    /// the terminal and recorded in the manifest (`measurement.settles`, the per-table output in
    /// the session's directory). Then, when `c`'s workload writes, its placements count as
    /// written by it. A settle that fails is a warning: the contest goes on without it (a server
    /// that died shows itself in the warm-up, which handles it).
    pub(super) async fn settle_all(
        &mut self,
        s: &mut Sliced<'_, '_>,
        servers: &mut Servers<'_>,
        c: &Contest,
    ) -> Result<()> {
        let build = s.spec.builds[c.build].name.clone();
        let slots: Vec<String> =
            c.placements.iter().map(|&p| format!("{}/{build}", s.spec.placements[p].name)).collect();
        let after = s.written.since(&slots);
        let contest = c.name(s.spec);
        if !after.is_empty() {
            let t0 = Instant::now();
            let order: Vec<String> = servers.placements().iter().map(|p| p.to_string()).collect();
            for place in order.iter().filter(|p| c.placements.iter().any(|&i| s.spec.placements[i].name == **p)) {
                if self.interrupts.cancelled() {
                    bail!("interrupted before contest {contest}");
                }
                let file = format!("settle-{place}-{}-c{}.txt", s.spec.workloads[c.workload].name, c.clients);
                self.settle(servers, (&contest, place, file), &after).await?;
            }
            add(&mut s.seconds, "settle", t0.elapsed().as_secs_f64());
            s.written.clean(&slots);
        }
        if s.spec.workloads[c.workload].writes() {
            s.written.wrote(&slots, &contest);
        }
        Ok(())
    }

    /// Placement `place`'s database settled before `contest` (see [`Self::settle_all`]).
    /// `file` is its per-table record's name in the session's directory.
    async fn settle(
        &mut self,
        servers: &mut Servers<'_>,
        (contest, place, file): (&str, &str, String),
        after: &[String],
    ) -> Result<()> {
        let raw = session_dir(&self.results.root, &servers.id).join(&file);
        let mut rec = results::manifest::SettleRecord {
            session: servers.id.clone(),
            contest: contest.to_string(),
            placement: place.to_string(),
            after: after.to_vec(),
            raw: file,
            ..Default::default()
        };
        match servers.settle_data(place, &raw).await {
            Ok(done) => {
                let d = done.done;
                rec.tables = d.tables.len() as u32;
                rec.command = d.command.clone();
                rec.dead_rows = d.dead_rows();
                rec.modified_rows = d.modified_rows();
                rec.dead_rows_after = d.dead_rows_after;
                rec.vacuum_seconds = d.vacuum_seconds;
                rec.checkpoint_seconds = d.checkpoint_seconds;
                eprintln!(
                    "  [{contest}] settled {place} after {}: {} of {} tables ({} dead rows, {} modified) in {:.1} s, CHECKPOINT {:.1} s",
                    after.join(", "),
                    rec.command,
                    rec.tables,
                    rec.dead_rows,
                    rec.modified_rows,
                    rec.vacuum_seconds,
                    rec.checkpoint_seconds
                );
            }
            Err(runner::RunnerError::Cancelled) => bail!("interrupted during the settle of {place}"),
            Err(
                e @ (runner::RunnerError::Workload(_)
                | runner::RunnerError::Server(_)
                | runner::RunnerError::Query { .. }
                | runner::RunnerError::Setup(_)),
            ) => {
                let why = format!("settle of placement {place} before contest {contest} failed, measured without: {e}");
                eprintln!("  warning: {why}");
                self.manifest.warnings.push(results::Warning::Other(why));
                rec.error = Some(e.to_string());
            }
            Err(e) => return Err(anyhow::Error::from(e).context("settle")),
        }
        self.manifest.measurement.settles.push(rec);
        Ok(())
    }

    /// Placement `p`'s data set read into its server (`[measurement] prewarm`), said on the
    /// terminal and recorded in the manifest (`measurement.prewarms`, the per-relation output in
    /// the session's directory). Err(what failed) when its server failed during it, or a query of
    /// it failed (the warm-up's recovery then handles it); a build without pg_prewarm is a
    /// warning, and the contest goes on without.
    pub(super) async fn prewarm(
        &mut self,
        s: &mut Sliced<'_, '_>,
        servers: &mut Servers<'_>,
        c: &Contest,
        p: usize,
    ) -> Result<std::result::Result<(), String>> {
        let place = s.spec.placements[p].name.clone();
        let contest = c.name(s.spec);
        let file = format!("prewarm-{place}-{}-c{}-seg{}.txt", s.spec.workloads[c.workload].name, c.clients, c.segment);
        let raw = session_dir(&self.results.root, &servers.id).join(&file);
        let mut rec = results::manifest::PrewarmRecord {
            session: servers.id.clone(),
            contest: contest.clone(),
            segment: c.segment,
            placement: place.clone(),
            raw: file,
            ..Default::default()
        };
        let mib = |b: u64| b as f64 / 1048576.0;
        let outcome = match servers.prewarm(&place, &raw).await {
            Ok(w) => {
                rec.relations = w.read.relations.len() as u32;
                rec.blocks = w.read.blocks();
                rec.mib = w.read.mib();
                rec.seconds = w.read.seconds;
                rec.page_cache_mib = w.page_cache_bytes.map(mib);
                rec.memory_limit_mib = w.limit_bytes.map(mib);
                let cache = match (w.page_cache_bytes, w.limit_bytes) {
                    (Some(c), Some(l)) => {
                        format!("; page cache in its cgroup {:.0} MiB of its {:.0} MiB limit", mib(c), mib(l))
                    }
                    (Some(c), None) => format!("; page cache in its cgroup {:.0} MiB", mib(c)),
                    _ => String::new(),
                };
                eprintln!(
                    "  [{contest}] prewarmed {place}: {} relations, {:.0} MiB read in {:.1} s{cache}",
                    rec.relations, rec.mib, rec.seconds
                );
                Ok(())
            }
            Err(runner::RunnerError::Cancelled) => bail!("interrupted during the prewarm of {place}"),
            Err(e @ runner::RunnerError::Setup(_)) => {
                // No pg_prewarm in this build: measured without, and said so.
                let why =
                    format!("prewarm of placement {place} before contest {contest} failed, measured without: {e}");
                eprintln!("  warning: {why}");
                self.manifest.warnings.push(results::Warning::Other(why));
                rec.error = Some(e.to_string());
                Ok(())
            }
            Err(
                e @ (runner::RunnerError::Workload(_)
                | runner::RunnerError::Server(_)
                | runner::RunnerError::Query { .. }),
            ) => {
                rec.error = Some(e.to_string());
                Err(format!("prewarm: {e}"))
            }
            Err(e) => return Err(anyhow::Error::from(e).context("prewarm")),
        };
        self.manifest.measurement.prewarms.push(rec);
        Ok(outcome)
    }
}
