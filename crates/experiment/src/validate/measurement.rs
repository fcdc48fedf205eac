//! `[measurement]` (and `[emulate.measurement]`): the design, its time budget and its precision
//! target. A key of `[emulate.measurement]` replaces the same key of `[measurement]` when
//! emulating; errors name the key the value came from.

use std::time::Duration;

use toml::Spanned;

use super::Validator;
use crate::LoadOptions;
use crate::model::{Design, Measurement};
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
        if let Some((b, _)) = pick!(control) {
            m.control = *b.get_ref();
        }
        if m.design == Design::Runs {
            for (present, key) in [
                (pick!(slice).is_some(), "slice"),
                (pick!(warm_up).is_some(), "warm_up"),
                (pick!(budget).is_some(), "budget"),
                (pick!(target_halfwidth).is_some(), "target_halfwidth"),
                (pick!(min_rounds).is_some(), "min_rounds"),
                (pick!(warm_up_rounds).is_some(), "warm_up_rounds"),
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
