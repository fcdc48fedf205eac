//! `[[claim]]`: a figure the study published, with the cell and metric it is about. Resolved
//! against the matrix this file runs (its `--emulate` overrides included), so every error names
//! the claim's line and the key that does not fit.

use std::collections::BTreeSet;

use runner::matrix::{MemoryLimit, WorkloadKind, WorkloadSpec};
use toml::Spanned;

use super::Validator;
use crate::LoadOptions;
use crate::model::{Claim, ClaimAcross, ClaimMetric, Placement, ProfileInfo};
use crate::raw::{RawClaim, RawFile};
use crate::spans::span;
use crate::units;

/// A published figure as a change in percent: `+13.4%` -> 13.4, `-30.8%` -> -30.8, `3.4x` ->
/// 240 (a ratio), `+2%..+7%` -> 2..7, and `no change` -> 0 (a negative control: a cell where
/// nothing can change, checked like a published figure). Returns (low, high).
pub fn parse_figure(text: &str) -> Result<(f64, f64), String> {
    if text.trim().eq_ignore_ascii_case("no change") {
        return Ok((0.0, 0.0));
    }
    let one = |t: &str| -> Option<f64> {
        let t = t.trim();
        if let Some(r) = t.strip_suffix('x').or_else(|| t.strip_suffix('×')) {
            let v: f64 = r.trim().parse().ok()?;
            return (v > 0.0 && v.is_finite()).then_some((v - 1.0) * 100.0);
        }
        let v: f64 = t.strip_suffix('%')?.trim().parse().ok()?;
        (v.is_finite() && v > -100.0).then_some(v)
    };
    let bad = || {
        format!(
            "{text:?} is not a published figure: give a change (\"+13.4%\", \"-30.8%\"), a ratio (\"3.4x\"), a range (\"+2%..+7%\") or \"no change\""
        )
    };
    match text.split_once("..") {
        Some((a, b)) => {
            let (lo, hi) = (one(a).ok_or_else(bad)?, one(b).ok_or_else(bad)?);
            if lo > hi {
                return Err(format!("{text:?}: the range runs from the lower figure to the higher one"));
            }
            Ok((lo, hi))
        }
        None => one(text).map(|v| (v, v)).ok_or_else(bad),
    }
}

/// What the claims are checked against.
pub(super) struct Matrix<'a> {
    pub placements: &'a [Placement],
    pub workloads: &'a [WorkloadSpec],
    pub memory_limits: &'a [MemoryLimit],
    pub profiles: &'a [ProfileInfo],
    pub baseline: &'a str,
}

impl Validator<'_> {
    pub(super) fn claims(&mut self, raw: &RawFile, m: &Matrix, opts: &LoadOptions) -> Vec<Claim> {
        let mut out = Vec::new();
        let mut seen = BTreeSet::new();
        for (i, c) in raw.claim.iter().enumerate() {
            if let Some(name) = &c.get_ref().name {
                self.name(name, &format!("claim[{i}].name"));
                self.unique(&mut seen, "claim", name);
            }
            if let Some(claim) = self.claim(i, c, m, opts) {
                out.push(claim);
            }
        }
        out
    }

    fn claim(&mut self, i: usize, c: &Spanned<RawClaim>, m: &Matrix, opts: &LoadOptions) -> Option<Claim> {
        let r = c.get_ref();
        let key = |k: &str| format!("claim[{i}].{k}");
        let metric = self.keyword(&r.metric, key("metric"));
        let across =
            self.keyword_or(r.across.as_ref(), &key("across"), ClaimAcross::Placements, ClaimAcross::Placements);
        let figure = match parse_figure(r.figure.get_ref()) {
            Ok(f) => Some(f),
            Err(msg) => {
                self.err(span(&r.figure), key("figure"), msg);
                None
            }
        };
        let names: Vec<&str> = m.placements.iter().map(|p| p.name.as_str()).collect();
        let placement_ok = |v: &mut Self, p: &Spanned<String>, k: &str| {
            let ok = names.contains(&p.get_ref().as_str());
            if !ok {
                v.err(
                    span(p),
                    key(k),
                    format!("no placement named {:?}; defined placements: {}", p.get_ref(), names.join(", ")),
                );
            }
            ok
        };
        let placement_known = placement_ok(self, &r.placement, "placement");
        let against = r.against.as_ref().map(|a| a.get_ref().clone()).unwrap_or_else(|| m.baseline.to_string());
        if let Some(a) = &r.against {
            placement_ok(self, a, "against");
        }
        if across == ClaimAcross::Placements && placement_known && *r.placement.get_ref() == against {
            self.err(
                span(r.against.as_ref().unwrap_or(&r.placement)),
                key(if r.against.is_some() { "against" } else { "placement" }),
                format!(
                    "the claim compares placement {against:?} with itself; name another placement, or set across = \"result-sets\" to compare two result sets"
                ),
            );
        }
        let Some(w) = m.workloads.iter().find(|w| w.name == *r.workload.get_ref()) else {
            let known: Vec<&str> = m.workloads.iter().map(|w| w.name.as_str()).collect();
            self.err(
                span(&r.workload),
                key("workload"),
                format!("no workload named {:?}; defined workloads: {}", r.workload.get_ref(), known.join(", ")),
            );
            return None;
        };
        let mut notes = Vec::new();
        let (clients, at_peak) = self.claim_clients(i, r, w, opts, &mut notes)?;
        let memory_limit = self.claim_memory_limit(i, r, m.memory_limits, opts, &mut notes)?;
        let profile = self.claim_profile(i, r, m.profiles)?;
        if across == ClaimAcross::Profiles
            && (profile == "default" || !m.profiles.iter().any(|p| p.profile.name == "default"))
        {
            self.err(
                span(r.profile.as_ref().unwrap_or(&r.text)),
                key("profile"),
                format!(
                    "across = \"profiles\" compares the claim's profile with the default profile of the same placement: name a profile other than \"default\" (profile {profile:?}), in a matrix that runs \"default\" too"
                ),
            );
            return None;
        }
        let metric = metric?;
        let statement = self.claim_statement(i, r, metric, w);
        if metric == ClaimMetric::Nopm && !matches!(w.kind, WorkloadKind::Tpcc(_)) {
            self.err(span(&r.metric), key("metric"), format!("workload {:?} is not TPC-C: it has no NOPM", w.name));
        }
        let study_regime = self.claim_regime(i, r);
        let (low_pct, high_pct) = figure?;
        Some(Claim {
            name: r.name.as_ref().map(|n| n.get_ref().clone()).unwrap_or_else(|| format!("claim[{i}]")),
            text: r.text.get_ref().trim().to_string(),
            origin: self.origin(span(c), format!("claim[{i}]")),
            placement: r.placement.get_ref().clone(),
            against,
            workload: w.name.clone(),
            clients,
            at_peak,
            memory_limit,
            profile,
            metric,
            statement: statement.flatten(),
            figure: r.figure.get_ref().clone(),
            low_pct,
            high_pct,
            across,
            emulation_note: (!notes.is_empty()).then(|| notes.join("; ")),
            study_regime,
        })
    }

    /// `study_data_set` and `study_memory`: both sizes, or neither.
    fn claim_regime(&mut self, i: usize, r: &RawClaim) -> Option<crate::model::StudyRegime> {
        let mut size = |v: &Option<Spanned<String>>, k: &str| -> Option<u64> {
            let v = v.as_ref()?;
            match units::parse_size_with_unit(v.get_ref()) {
                Ok(b) if b > 0 => Some(b),
                Ok(_) => {
                    self.err(span(v), format!("claim[{i}].{k}"), "a size above zero, e.g. \"742GB\"");
                    None
                }
                Err(m) => {
                    self.err(span(v), format!("claim[{i}].{k}"), m);
                    None
                }
            }
        };
        let data = size(&r.study_data_set, "study_data_set");
        let memory = size(&r.study_memory, "study_memory");
        match (data, memory, &r.study_data_set, &r.study_memory) {
            (Some(data_set_bytes), Some(memory_bytes), _, _) => {
                Some(crate::model::StudyRegime { data_set_bytes, memory_bytes })
            }
            (Some(_), None, _, None) | (None, Some(_), None, _) => {
                let (given, k) = match (&r.study_data_set, &r.study_memory) {
                    (Some(g), None) => (g, "study_data_set"),
                    (None, Some(g)) => (g, "study_memory"),
                    _ => return None,
                };
                self.err(
                    span(given),
                    format!("claim[{i}].{k}"),
                    "study_data_set and study_memory go together: the study's data set and its server's memory when it measured the figure (e.g. study_data_set = \"742GB\", study_memory = \"200GB\")",
                );
                None
            }
            _ => None,
        }
    }

    /// The client count (None at the peak); `[claim.emulate] clients` when emulating.
    fn claim_clients(
        &mut self,
        i: usize,
        r: &RawClaim,
        w: &WorkloadSpec,
        opts: &LoadOptions,
        notes: &mut Vec<String>,
    ) -> Option<(Option<u32>, bool)> {
        let emulated = r.emulate.as_ref().filter(|_| opts.emulate).and_then(|e| e.get_ref().clients.as_ref());
        let (value, k) = match (emulated, &r.clients) {
            (Some(v), _) => (Some(v), format!("claim[{i}].emulate.clients")),
            (None, v) => (v.as_ref(), format!("claim[{i}].clients")),
        };
        let counts: Vec<String> = w.clients.iter().map(|c| c.to_string()).collect();
        match value.map(|v| (v, v.get_ref())) {
            None if w.clients.len() == 1 => Some((Some(w.clients[0]), false)),
            None => {
                self.err(
                    span(&r.workload),
                    format!("claim[{i}].clients"),
                    format!(
                        "workload {:?} runs {} client counts ({}): say which, or \"peak\" for the peak of the scaling curve",
                        w.name,
                        w.clients.len(),
                        counts.join(", ")
                    ),
                );
                None
            }
            Some((_, toml::Value::String(s))) if s == "peak" => {
                if w.clients.len() < 2 {
                    notes.push(format!("one client count ({}) stands in for the peak", counts.join(", ")));
                    return Some((Some(w.clients[0]), false));
                }
                Some((None, true))
            }
            Some((v, toml::Value::Integer(n))) => match u32::try_from(*n).ok().filter(|n| w.clients.contains(n)) {
                Some(n) => Some((Some(n), false)),
                None if opts.emulate && emulated.is_none() && w.clients.len() == 1 => {
                    notes.push(format!("the study's {n} clients; the emulated matrix runs {}", w.clients[0]));
                    Some((Some(w.clients[0]), false))
                }
                None => {
                    self.err(
                        span(v),
                        k,
                        format!(
                            "{n} is not one of workload {:?}'s client counts ({}){}",
                            w.name,
                            counts.join(", "),
                            if opts.emulate && emulated.is_none() {
                                "; when emulating, give the emulated one in [claim.emulate] clients"
                            } else {
                                ""
                            }
                        ),
                    );
                    None
                }
            },
            Some((v, other)) => {
                self.err(
                    span(v),
                    k,
                    format!("{other} is not a client count: give one of {} or \"peak\"", counts.join(", ")),
                );
                None
            }
        }
    }

    /// The memory limit as cells name it; `[claim.emulate] memory_limit` when emulating.
    fn claim_memory_limit(
        &mut self,
        i: usize,
        r: &RawClaim,
        limits: &[MemoryLimit],
        opts: &LoadOptions,
        notes: &mut Vec<String>,
    ) -> Option<String> {
        let labels: Vec<String> = limits.iter().map(MemoryLimit::label).collect();
        let emulated = r.emulate.as_ref().filter(|_| opts.emulate).and_then(|e| e.get_ref().memory_limit.as_ref());
        let (value, k) = match (emulated, &r.memory_limit) {
            (Some(v), _) => (Some(v), format!("claim[{i}].emulate.memory_limit")),
            (None, v) => (v.as_ref(), format!("claim[{i}].memory_limit")),
        };
        let Some(value) = value else {
            if labels.len() == 1 {
                return Some(labels[0].clone());
            }
            self.err(
                span(&r.text),
                format!("claim[{i}].memory_limit"),
                format!("the matrix runs {} memory limits ({}): say which", labels.len(), labels.join(", ")),
            );
            return None;
        };
        let bytes = if value.get_ref() == "unlimited" {
            Ok(None)
        } else {
            units::parse_size_with_unit(value.get_ref()).map(Some)
        };
        let label = match bytes {
            Ok(bytes) => MemoryLimit { bytes, settings: Default::default() }.label(),
            Err(m) => {
                self.err(span(value), k, m);
                return None;
            }
        };
        if labels.contains(&label) {
            if let (Some(e), Some(own)) = (emulated, &r.memory_limit) {
                notes.push(format!("the study's memory limit {}; emulated {}", own.get_ref(), e.get_ref()));
            }
            return Some(label);
        }
        self.err(
            span(value),
            k,
            format!(
                "{:?} is not one of the memory limits ({}){}",
                value.get_ref(),
                labels.join(", "),
                if opts.emulate && emulated.is_none() {
                    "; when emulating, give the emulated one in [claim.emulate] memory_limit"
                } else {
                    ""
                }
            ),
        );
        None
    }

    fn claim_profile(&mut self, i: usize, r: &RawClaim, profiles: &[ProfileInfo]) -> Option<String> {
        let names: Vec<&str> = profiles.iter().map(|p| p.profile.name.as_str()).collect();
        match &r.profile {
            None if names.len() == 1 => Some(names[0].to_string()),
            None => {
                self.err(
                    span(&r.text),
                    format!("claim[{i}].profile"),
                    format!("the matrix runs {} profiles ({}): say which", names.len(), names.join(", ")),
                );
                None
            }
            Some(p) if names.contains(&p.get_ref().as_str()) => Some(p.get_ref().clone()),
            Some(p) => {
                self.err(
                    span(p),
                    format!("claim[{i}].profile"),
                    format!("{:?} is not one of the profiles ({})", p.get_ref(), names.join(", ")),
                );
                None
            }
        }
    }

    /// The statement of a `statement-latency` claim (outer None: an error was reported).
    fn claim_statement(
        &mut self,
        i: usize,
        r: &RawClaim,
        metric: ClaimMetric,
        w: &WorkloadSpec,
    ) -> Option<Option<String>> {
        let k = format!("claim[{i}].statement");
        match (&r.statement, metric) {
            (None, ClaimMetric::StatementLatency) => {
                self.err(
                    span(&r.metric),
                    k,
                    "a statement-latency claim names its statement (e.g. \"UPDATE pgbench_accounts\")",
                );
                None
            }
            (Some(s), ClaimMetric::StatementLatency) => {
                if let WorkloadKind::Pgbench(p) = &w.kind
                    && !p.per_statement
                {
                    self.err(
                        span(s),
                        k,
                        format!("workload {:?} does not measure statements: set per_statement = true on it", w.name),
                    );
                }
                Some(Some(s.get_ref().clone()))
            }
            (Some(s), _) => {
                self.err(span(s), k, "only a statement-latency claim names a statement");
                None
            }
            (None, _) => Some(None),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::parse_figure;

    #[test]
    fn figures() {
        assert_eq!(parse_figure("+13.4%"), Ok((13.4, 13.4)));
        assert_eq!(parse_figure("-30.8%"), Ok((-30.8, -30.8)));
        assert_eq!(parse_figure("4.52%"), Ok((4.52, 4.52)));
        let (lo, hi) = parse_figure("3.4x").unwrap();
        assert!((lo - 240.0).abs() < 1e-9 && lo == hi);
        assert_eq!(parse_figure("+2%..+7%"), Ok((2.0, 7.0)));
        assert_eq!(parse_figure("no change"), Ok((0.0, 0.0)));
        assert_eq!(parse_figure("-4.52% .. -2.10%"), Ok((-4.52, -2.10)));
        assert!(parse_figure("+7%..+2%").unwrap_err().contains("lower figure"));
        assert!(parse_figure("44.6").unwrap_err().contains("not a published figure"));
        assert!(parse_figure("-120%").is_err(), "nothing falls by more than 100%");
        assert!(parse_figure("0x").is_err());
    }
}
