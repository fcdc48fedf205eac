//! `[measurement]` (and `[emulate.measurement]`): the design, its time budget and its precision
//! target. A key of `[emulate.measurement]` replaces the same key of `[measurement]` when
//! emulating; errors name the key the value came from.

use std::time::Duration;

use toml::Spanned;

use super::Validator;
use crate::LoadOptions;
use crate::model::{Design, Handicap, Measurement, Pinning};
use crate::raw::RawMeasurement;
use crate::spans::span;

impl Validator<'_> {
    fn percent(&mut self, s: &Spanned<String>, key: &str) -> Option<f64> {
        match crate::units::parse_percent(s.get_ref()) {
            Some(v) if v > 0.0 && v < 100.0 => Some(v),
            _ => {
                self.err(span(s), key, format!("{:?} is not a percentage between 0 and 100 like \"5%\"", s.get_ref()));
                None
            }
        }
    }

    pub(super) fn measurement(
        &mut self,
        own: Option<&Spanned<RawMeasurement>>,
        emulate: Option<&Spanned<RawMeasurement>>,
        opts: &LoadOptions,
    ) -> Measurement {
        let default = RawMeasurement::default();
        let own = own.map(|m| m.get_ref()).unwrap_or(&default);
        let emu = emulate.filter(|_| opts.emulate).map(|m| m.get_ref()).unwrap_or(&default);
        // The value that applies and the key it came from.
        macro_rules! pick {
            ($field:ident) => {
                match (&emu.$field, &own.$field) {
                    (Some(v), _) => Some((v, concat!("emulate.measurement.", stringify!($field)))),
                    (None, Some(v)) => Some((v, concat!("measurement.", stringify!($field)))),
                    (None, None) => None,
                }
            };
        }
        let mut m = Measurement::default();
        if let Some((w, key)) = pick!(design) {
            m.design = self.keyword(w, key).unwrap_or(m.design);
        }
        if let Some((s, k)) = pick!(slice)
            && let Some(d) = self.duration(s, k)
        {
            if d < Duration::from_secs(1) {
                self.err(span(s), k, "a slice lasts at least 1s (pgbench reports whole seconds)");
            }
            m.slice = d;
        }
        if let Some((s, k)) = pick!(warm_up) {
            m.warm_up = self.duration(s, k);
        }
        if let Some((s, k)) = pick!(budget)
            && let Some(d) = self.duration(s, k)
        {
            if d < m.slice * 4 {
                self.err(
                    span(s),
                    k,
                    "the budget must hold at least a few rounds of slices; give minutes, e.g. \"13min\"",
                );
            }
            m.budget = Some(d);
        }
        if let Some((s, k)) = pick!(target_halfwidth) {
            m.target_halfwidth_pct = self.percent(s, k);
        }
        if let Some((s, k)) = pick!(equivalence_margin) {
            m.equivalence_margin_pct = self.percent(s, k).unwrap_or(m.equivalence_margin_pct);
        }
        if let Some((n, k)) = pick!(min_rounds) {
            if *n.get_ref() < 2 {
                self.err(span(n), k, "at least 2 rounds (an interval needs two)");
            }
            m.min_rounds = (*n.get_ref()).max(2);
        }
        if let Some((n, k)) = pick!(warm_up_rounds) {
            if *n.get_ref() > 20 {
                self.err(span(n), k, "at most 20 rounds (a longer warm-up belongs in warm_up, as a duration)");
            }
            m.warm_up_rounds = (*n.get_ref()).min(20);
        }
        if let Some((b, _)) = pick!(prewarm) {
            m.prewarm = *b.get_ref();
        }
        if let Some((b, _)) = pick!(settle) {
            m.settle = *b.get_ref();
        }
        if let Some((b, _)) = pick!(control) {
            m.control = *b.get_ref();
        }
        m.pinning = self.pinning(pick!(pin_client), pick!(pin_servers));
        m.handicap = self.handicap(pick!(handicap_cpus), pick!(handicap_spread), m.design);
        if m.design == Design::Runs {
            for (present, key) in [
                (pick!(slice).is_some(), "slice"),
                (pick!(warm_up).is_some(), "warm_up"),
                (pick!(budget).is_some(), "budget"),
                (pick!(target_halfwidth).is_some(), "target_halfwidth"),
                (pick!(min_rounds).is_some(), "min_rounds"),
                (pick!(warm_up_rounds).is_some(), "warm_up_rounds"),
                (pick!(prewarm).is_some(), "prewarm"),
                (pick!(settle).is_some(), "settle"),
            ] {
                if present {
                    self.warnings.push(format!(
                        "measurement.{key} applies to design = \"slices\" only; with \"runs\" it is ignored"
                    ));
                }
            }
        }
        m
    }
}

impl Validator<'_> {
    /// `handicap_cpus` and `handicap_spread` (a test of the method): a quota in CPUs and its spread
    /// between server lives, a percentage from 0 to 50; the spread needs the quota; slices only.
    fn handicap(
        &mut self,
        cpus: Option<(&Spanned<f64>, &'static str)>,
        spread: Option<(&Spanned<String>, &'static str)>,
        design: Design,
    ) -> Option<Handicap> {
        let spread_pct = match spread {
            None => 0.0,
            Some((s, key)) => match crate::units::parse_percent(s.get_ref()) {
                Some(v) if (0.0..=50.0).contains(&v) => v,
                _ => {
                    self.err(
                        span(s),
                        key,
                        format!("{:?} is not a spread from \"0%\" to \"50%\" (e.g. \"8%\")", s.get_ref()),
                    );
                    return None;
                }
            },
        };
        let Some((c, key)) = cpus else {
            if let Some((s, key)) = spread {
                self.err(
                    span(s),
                    key,
                    "handicap_spread needs handicap_cpus, the quota it spreads (e.g. handicap_cpus = 0.6), or remove it",
                );
            }
            return None;
        };
        let v = *c.get_ref();
        if !(0.05..=1024.0).contains(&v) {
            self.err(span(c), key, format!("{v} is not a CPU quota from 0.05 to 1024 CPUs (e.g. 0.6)"));
            return None;
        }
        if design != Design::Slices {
            self.err(
                span(c),
                key,
                "a handicap is drawn per server life, which design = \"slices\" has; set design = \"slices\" or remove handicap_cpus",
            );
            return None;
        }
        Some(Handicap { cpus: v, spread_pct })
    }

    /// `pin_client` and `pin_servers`: both or neither, each a CPU list, disjoint.
    fn pinning<'s>(
        &mut self,
        client: Option<(&'s Spanned<String>, &'static str)>,
        servers: Option<(&'s Spanned<String>, &'static str)>,
    ) -> Option<Pinning> {
        let given = (client.is_some(), servers.is_some());
        let errors = self.errors.len();
        let (client, servers) = (self.cpu_list(client), self.cpu_list(servers));
        if self.errors.len() > errors || given == (false, false) {
            return None; // a list that does not parse is its own error
        }
        match (client, servers) {
            (Some((client, _, _)), Some((servers, s, key))) => {
                if let Some(both) = servers.iter().find(|c| client.contains(c)) {
                    self.err(
                        span(s),
                        key,
                        format!(
                            "CPU {both} is in both pin_client and pin_servers; pinning keeps the client and the \
                             servers apart, so give each its own CPUs (on 2 CPUs: pin_client = \"0\", pin_servers = \"1\")"
                        ),
                    );
                    return None;
                }
                Some(Pinning { client, servers })
            }
            (Some((_, s, key)), None) | (None, Some((_, s, key))) => {
                self.err(
                    span(s),
                    key,
                    "pin_client and pin_servers go together: give both (on 2 CPUs: pin_client = \"0\", \
                     pin_servers = \"1\"), or neither to leave placement to the scheduler",
                );
                None
            }
            (None, None) => None,
        }
    }

    fn cpu_list<'s>(
        &mut self,
        given: Option<(&'s Spanned<String>, &'static str)>,
    ) -> Option<(Vec<u32>, &'s Spanned<String>, &'static str)> {
        let (s, key) = given?;
        match crate::units::parse_cpu_list(s.get_ref()) {
            Ok(cpus) => Some((cpus, s, key)),
            Err(e) => {
                self.err(span(s), key, e);
                None
            }
        }
    }

    /// Pinning applies to processes pgtier starts on this machine: the servers and pgbench. Not
    /// to a client on another host, nor to the TPC-C driver, which runs inside pgtier itself.
    pub(super) fn pinning_cross_checks(
        &mut self,
        raw: &crate::raw::RawFile,
        measurement: &Measurement,
        hosts: &[crate::model::Host],
        workloads: &[runner::matrix::WorkloadSpec],
        opts: &LoadOptions,
    ) {
        if measurement.pinning.is_none() {
            return;
        }
        let own = raw.measurement.as_ref().and_then(|m| m.get_ref().pin_client.as_ref());
        let emu = raw
            .emulate
            .as_ref()
            .filter(|_| opts.emulate)
            .and_then(|e| e.get_ref().measurement.as_ref())
            .and_then(|m| m.get_ref().pin_client.as_ref());
        let (s, key) = match (emu, own) {
            (Some(s), _) => (s, "emulate.measurement.pin_client"),
            (None, Some(s)) => (s, "measurement.pin_client"),
            (None, None) => return,
        };
        if let Some(client) = hosts.iter().find(|h| h.roles.contains(&crate::model::HostRole::Client)) {
            self.err(
                span(s),
                key,
                format!(
                    "pgbench runs on host {:?} (roles = [\"client\"]), where pgtier pins nothing; remove \
                     pin_client and pin_servers, or run the client here",
                    client.name
                ),
            );
        } else if let Some(w) = workloads.iter().find(|w| matches!(w.kind, runner::matrix::WorkloadKind::Tpcc(_))) {
            self.err(
                span(s),
                key,
                format!(
                    "workload {:?} is TPC-C, whose driver runs inside pgtier, where pgtier pins nothing; \
                     pinning is for pgbench workloads: remove pin_client and pin_servers, or the workload",
                    w.name
                ),
            );
        }
    }
}
