//! Validation, one module per section of the file; every problem is collected (all are reported
//! at once) with the file, line and key it concerns.

mod claim;
mod control;
mod device;
mod emulate;
mod experiment;
mod fault;
mod golden;
mod host;
mod kernel;
mod measurement;
mod placement;
mod postgres;
mod target;
mod workload;

use std::collections::BTreeSet;
use std::ops::Range;
use std::time::Duration;

use toml::Spanned;

use crate::error::{ConfigError, Source};
use crate::keyword::{Keyword, Word};
use crate::model::{Experiment, Origin};
use crate::raw::RawFile;
use crate::spans::span;
use crate::{LoadOptions, units};
pub use claim::parse_figure;
pub(crate) use emulate::Chosen;
use emulate::Overrides;
pub(crate) use placement::run_profiles;

pub(crate) struct Validator<'a> {
    pub src: &'a Source<'a>,
    pub errors: Vec<ConfigError>,
    pub warnings: Vec<String>,
}

impl<'a> Validator<'a> {
    pub fn new(src: &'a Source<'a>) -> Self {
        Validator { src, errors: Vec::new(), warnings: Vec::new() }
    }

    /// The experiment, when the file has no errors (they are in `errors` otherwise).
    pub fn resolve(&mut self, raw: &RawFile, opts: &LoadOptions) -> Option<Experiment> {
        let ov = Overrides::new(raw.emulate.as_ref().map(|e| e.get_ref()), opts.emulate);
        let ex = self.experiment_section(raw.experiment.get_ref(), &ov, opts);
        let pg = self.postgres_section(raw.postgres.as_ref().map(|p| p.get_ref()), &ov, opts);
        let mut devices = self.devices(raw, &ov, opts);
        let mut placements = self.placements(raw, &devices);
        let golden_copy = self.golden_copy(raw, &placements);
        let workloads = self.workloads(raw, &ov, opts);
        let kernel = self.kernel(raw.kernel.as_ref(), &ov, opts);
        let faults = self.faults(&raw.fault, &mut devices, opts);
        let measurement = self.measurement(
            raw.measurement.as_ref(),
            raw.emulate.as_ref().and_then(|e| e.get_ref().measurement.as_ref()),
            opts,
        );
        self.placement_profiles(raw, &mut placements, &pg, opts);
        self.placement_builds(raw, &mut placements, &pg.builds);
        self.control_twin(raw, &mut devices, &mut placements, opts);
        let claims = self.claims(
            raw,
            &claim::Matrix {
                placements: &placements,
                workloads: &workloads,
                memory_limits: &pg.memory_limits,
                profiles: &pg.profiles,
                baseline: raw.experiment.get_ref().baseline.get_ref(),
            },
            opts,
        );
        let hosts = self.hosts(raw, &workloads);
        self.pinning_cross_checks(raw, &measurement, &hosts, &workloads, opts);
        self.target_devices(raw, &hosts, &mut devices, opts);
        self.cross_checks(&devices, &placements, &workloads, opts.emulate);
        if opts.emulate {
            self.wal_room(&devices, &placements, &pg, &measurement, raw);
        }
        let run_profiles = placement::run_profiles(&pg.profiles, &placements);
        let huge_pages_needs =
            self.memory_checks(&run_profiles, &pg.memory_limits, &pg.memory_limit_origins, &workloads);
        if !self.errors.is_empty() {
            return None;
        }
        let r = raw.experiment.get_ref();
        let exp = Experiment {
            file: self.src.path.to_path_buf(),
            name: r.name.get_ref().clone(),
            description: r.description.clone().unwrap_or_default(),
            study: r.study.clone(),
            baseline: r.baseline.get_ref().clone(),
            repetitions: ex.repetitions,
            order: ex.order,
            device_probe: ex.device_probe,
            watchdog_grace: ex.watchdog_grace,
            emulated: opts.emulate,
            bin_dir: pg.bin_dir,
            builds: pg.builds,
            os_user: pg.os_user,
            profiles: pg.profiles,
            memory_limits: pg.memory_limits,
            memory_limit_origins: pg.memory_limit_origins,
            huge_pages_needs,
            devices,
            placements,
            workloads,
            kernel,
            measurement,
            faults,
            warnings: Vec::new(),
            golden_copy,
            claims,
            hosts,
        };
        if opts.emulate {
            self.golden_room_emulated(&exp, raw);
        }
        self.errors.is_empty().then_some(exp)
    }

    /// An error at `at`; a value there that the message does not repeat is quoted before it (the
    /// reader sees what was refused without opening the file).
    pub fn err(&mut self, at: Option<Range<usize>>, key: impl Into<String>, msg: impl Into<String>) {
        let (key, mut msg) = (key.into(), msg.into());
        if let Some(at) = &at
            && let Some(written) = self.src.text.get(at.clone()).and_then(|w| quotable(w, &msg))
        {
            // `key = value` when the value is the key's own (not an item of a list).
            let name = key.rsplit('.').next().filter(|n| n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'));
            let after_equals = self.src.text[..at.start].trim_end().ends_with('=');
            msg = match name {
                Some(name) if after_equals => format!("{name} = {written}: {msg}"),
                _ => format!("{written}: {msg}"),
            };
        }
        let e = self.src.error(at, Some(key), msg);
        self.errors.push(e);
    }

    /// The keyword, or an error naming the words allowed.
    fn keyword<K: Keyword>(&mut self, w: &Spanned<Word<K>>, key: impl Into<String>) -> Option<K> {
        match w.get_ref() {
            Word::Known(k) => Some(*k),
            Word::Unknown(text) => {
                self.err(span(w), key, K::unknown(text));
                None
            }
        }
    }

    /// A keyword that may be left out: `default` when absent, `fallback` (after the error) when
    /// it is not one of the words.
    fn keyword_or<K: Keyword>(&mut self, w: Option<&Spanned<Word<K>>>, key: &str, default: K, fallback: K) -> K {
        match w {
            None => default,
            Some(w) => self.keyword(w, key).unwrap_or(fallback),
        }
    }

    /// A required count (scale, warehouses): an error at `missing` when absent, at the value's
    /// own line when 0 (returned as is); 1 stands in when absent.
    fn at_least_one(
        &mut self,
        value: Option<Chosen<u32>>,
        missing: (Option<Range<usize>>, String),
        missing_msg: &str,
        zero_msg: &str,
    ) -> u32 {
        match value {
            Some(c) if *c.get() > 0 => *c.get(),
            Some(c) => {
                self.err(c.span(), c.key, zero_msg);
                0
            }
            None => {
                self.err(missing.0, missing.1, missing_msg);
                1
            }
        }
    }

    /// Reports a second definition of the same name in a section.
    fn unique(&mut self, seen: &mut BTreeSet<String>, section: &str, name: &Spanned<String>) {
        let n = name.get_ref();
        if !seen.insert(n.clone()) {
            self.err(span(name), format!("{section}[{n}].name"), format!("{section} {n:?} is defined twice"));
        }
    }

    fn size(&mut self, s: &Spanned<String>, key: &str) -> Option<u64> {
        match units::parse_size_with_unit(s.get_ref()) {
            Ok(v) => Some(v),
            Err(m) => {
                self.err(span(s), key, m);
                None
            }
        }
    }

    fn duration(&mut self, s: &Spanned<String>, key: &str) -> Option<Duration> {
        match units::parse_duration_with_unit(s.get_ref()) {
            Ok(v) => Some(v),
            Err(m) => {
                self.err(span(s), key, m);
                None
            }
        }
    }

    /// A duration from [`Overrides`], with errors at the key it came from.
    fn chosen_duration(&mut self, c: &Chosen<String>) -> Option<Duration> {
        self.duration(c.value, &c.key)
    }

    fn name(&mut self, s: &Spanned<String>, key: &str) {
        let n = s.get_ref();
        if n.is_empty() || !n.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_') {
            self.err(span(s), key, format!("{n:?} is not a valid name: use letters, digits, '-' and '_'"));
        }
    }

    fn origin(&self, at: Option<Range<usize>>, key: impl Into<String>) -> Origin {
        Origin { file: self.src.path.to_path_buf(), line: at.map(|s| self.src.line_col(s.start).0), key: key.into() }
    }
}

/// A value as the file writes it, when it is one short scalar (a string, number or boolean on one
/// line) that `message` does not already show.
fn quotable<'t>(written: &'t str, message: &str) -> Option<&'t str> {
    let scalar = written.starts_with(['"', '\'', '-', '+'])
        || written.starts_with(|c: char| c.is_ascii_digit())
        || written == "true"
        || written == "false";
    let inner = written.trim_matches(['"', '\'']);
    let already_shown = !inner.is_empty() && message.contains(inner);
    (scalar && written.len() <= 80 && !written.contains('\n') && !already_shown).then_some(written)
}
