//! `[[workload]]`: pgbench and TPC-C workloads, client counts, durations, and the pgbench
//! arguments a file may add.

use std::collections::BTreeSet;
use std::time::Duration;

use runner::matrix::{PgbenchWorkload, TpccWorkload, WorkloadKind, WorkloadSpec};
use toml::Spanned;

use super::Validator;
use super::emulate::Overrides;
use crate::LoadOptions;
use crate::keyword::WorkloadKindWord;
use crate::policy::{PGBENCH_INIT_ARGS, PGBENCH_RUN_ARGS, disallowed_args};
use crate::raw::{RawFile, RawWorkload};
use crate::spans::span;

impl Validator<'_> {
    pub(super) fn workloads(&mut self, raw: &RawFile, ov: &Overrides, opts: &LoadOptions) -> Vec<WorkloadSpec> {
        let mut workloads = Vec::new();
        let mut seen = BTreeSet::new();
        for w in &raw.workload {
            self.unique(&mut seen, "workload", &w.get_ref().name);
            if let Some(spec) = self.workload(w, ov, opts) {
                workloads.push(spec);
            }
        }
        if raw.workload.is_empty() {
            self.err(span(&raw.experiment), "workload", "the experiment defines no [[workload]]");
        }
        workloads
    }

    fn workload(&mut self, w: &Spanned<RawWorkload>, ov: &Overrides, opts: &LoadOptions) -> Option<WorkloadSpec> {
        let r = w.get_ref();
        let n = r.name.get_ref().clone();
        let key = |k: &str| format!("workload[{n}].{k}");
        self.name(&r.name, &key("name"));
        let kind = match self.keyword(&r.kind, key("kind"))? {
            WorkloadKindWord::Pgbench => self.pgbench_workload(w, ov),
            WorkloadKindWord::Tpcc => self.tpcc_workload(w, ov),
        };
        let clients = ov.clients.or(Some(&r.clients), key("clients")).expect("the workload's own clients are required");
        let clients = self.clients(clients.value, &clients.key, opts.hardware_threads);
        let threads = ov.threads.or(r.threads.as_ref(), key("threads"));
        if let Some(t) = &threads
            && *t.get() == 0
        {
            self.err(t.span(), &t.key, "threads must be at least 1");
        }
        let duration =
            ov.duration.or(Some(&r.duration), key("duration")).expect("the workload's own duration is required");
        let duration_value = self.chosen_duration(&duration);
        if let Some(d) = duration_value
            && d < Duration::from_secs(1)
        {
            self.err(duration.span(), duration.key, "a run lasts at least 1s");
        }
        // A ramp-up that does not parse (reported) stands in as none, so the later checks still run.
        let ramp_up = ov
            .ramp_up
            .or(r.ramp_up.as_ref(), key("ramp_up"))
            .and_then(|c| self.chosen_duration(&c))
            .unwrap_or(Duration::ZERO);
        Some(WorkloadSpec {
            name: n,
            kind: kind?,
            clients,
            threads: threads.map(|t| *t.get()),
            duration: duration_value?,
            ramp_up,
        })
    }

    fn pgbench_workload(&mut self, w: &Spanned<RawWorkload>, ov: &Overrides) -> Option<WorkloadKind> {
        let r = w.get_ref();
        let key = |k: &str| format!("workload[{}].{k}", r.name.get_ref());
        for (present, k) in [
            (r.warehouses.is_some(), "warehouses"),
            (r.mode.is_some(), "mode"),
            (r.side.is_some(), "side"),
            (r.keying_and_thinking.is_some(), "keying_and_thinking"),
            (r.all_warehouses.is_some(), "all_warehouses"),
            (r.load_workers.is_some(), "load_workers"),
        ] {
            if present {
                self.err(span(w), key(k), format!("`{k}` belongs to TPC-C workloads (kind = \"tpcc\")"));
            }
        }
        let builtin = match &r.builtin {
            None => {
                self.err(
                    span(w),
                    key("builtin"),
                    "a pgbench workload needs `builtin` (\"tpcb-like\", \"simple-update\" or \"select-only\")",
                );
                None
            }
            Some(b) => self.keyword(b, key("builtin")),
        };
        let scale = self.at_least_one(
            ov.scale.or(r.scale.as_ref(), key("scale")),
            (span(w), key("scale")),
            "a pgbench workload needs `scale` (pgbench -i -s)",
            "scale must be at least 1",
        );
        for (args, allowed, k) in
            [(&r.extra_args, PGBENCH_RUN_ARGS, "extra_args"), (&r.init_args, PGBENCH_INIT_ARGS, "init_args")]
        {
            if let Some(bad) = disallowed_args(args, allowed) {
                self.err(
                    span(w),
                    key(k),
                    format!(
                        "{bad:?} is not accepted: pgtier sets connection, clients, threads, duration, logs and scripts itself; allowed here: {}",
                        allowed.iter().map(|(f, _)| *f).collect::<Vec<_>>().join(", ")
                    ),
                );
            }
        }
        Some(WorkloadKind::Pgbench(PgbenchWorkload {
            builtin: builtin?,
            scale,
            init_args: r.init_args.clone(),
            extra_args: r.extra_args.clone(),
            per_statement: r.per_statement.unwrap_or(true),
        }))
    }

    fn tpcc_workload(&mut self, w: &Spanned<RawWorkload>, ov: &Overrides) -> Option<WorkloadKind> {
        let r = w.get_ref();
        let key = |k: &str| format!("workload[{}].{k}", r.name.get_ref());
        for (present, k) in [
            (r.builtin.is_some(), "builtin"),
            (r.scale.is_some(), "scale"),
            (!r.init_args.is_empty(), "init_args"),
            (!r.extra_args.is_empty(), "extra_args"),
        ] {
            if present {
                self.err(
                    span(w),
                    key(k),
                    format!("`{k}` belongs to pgbench workloads; a TPC-C workload takes `warehouses`"),
                );
            }
        }
        let warehouses = self.at_least_one(
            ov.warehouses.or(r.warehouses.as_ref(), key("warehouses")),
            (span(w), key("warehouses")),
            "a TPC-C workload needs `warehouses`",
            "at least 1 warehouse",
        );
        let mode = self.keyword_or(r.mode.as_ref(), &key("mode"), tpcc::Mode::Spec, tpcc::Mode::Spec);
        let side =
            self.keyword_or(r.side.as_ref(), &key("side"), tpcc::Side::ServerProcedures, tpcc::Side::ServerProcedures);
        if mode == tpcc::Mode::HammerDbFaithful && side == tpcc::Side::ClientSql {
            self.err(
                r.side.as_ref().map_or(span(w), span),
                key("side"),
                "mode \"hammerdb-faithful\" runs HammerDB's server-side functions: use side = \"procedures\" (or mode \"hammerdb\" for client-side SQL)",
            );
        }
        Some(WorkloadKind::Tpcc(TpccWorkload {
            warehouses,
            mode,
            side,
            keying_and_thinking: r.keying_and_thinking.unwrap_or(false),
            all_warehouses: r.all_warehouses.unwrap_or(false),
            load_workers: r.load_workers.unwrap_or(4).max(1),
        }))
    }

    /// Client counts: integers, or percentages of the machine's hardware threads; duplicates
    /// are dropped.
    fn clients(&mut self, list: &Spanned<Vec<Spanned<toml::Value>>>, key: &str, threads: u32) -> Vec<u32> {
        let mut out = Vec::new();
        for c in list.get_ref() {
            match c.get_ref() {
                toml::Value::Integer(n) if *n >= 1 && *n <= 100_000 => out.push(*n as u32),
                toml::Value::String(s) if s.ends_with('%') => match s.trim_end_matches('%').parse::<f64>() {
                    // As seed 004: `$CORES * P / 100` with bc's scale=0 (truncation), at least 1.
                    Ok(p) if p > 0.0 && p <= 1000.0 => out.push(((threads as f64 * p / 100.0).floor() as u32).max(1)),
                    _ => self.err(span(c), key, format!("{s:?} is not a percentage of hardware threads like \"20%\"")),
                },
                other => self.err(span(c), key, format!("{other} is not a client count: use a positive integer or a percentage of hardware threads like \"80%\"")),
            }
        }
        if list.get_ref().is_empty() {
            self.err(span(list), key, "give at least one client count");
        }
        let mut seen = BTreeSet::new();
        out.retain(|c| seen.insert(*c));
        out
    }
}
