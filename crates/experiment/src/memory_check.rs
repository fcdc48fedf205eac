//! The memory plan of every cell against its memory limit, before anything runs: what the server
//! certainly needs (refused when the limit is smaller), what it will likely need (warned about,
//! as an estimate), and which cells ask for huge pages (checked by the preflight against the
//! pages the machine has reserved).

use runner::matrix::{MemoryLimit, WorkloadSpec};
use runner::memory::{DataShape, MemoryKind, MemoryPlan, show};

use crate::error::ConfigError;
use crate::model::{Experiment, HugePagesNeed, Origin, ProfileInfo};
use crate::validate::Validator;

/// The settings a cell's server runs with, and where each was set.
pub(crate) struct CellSettings<'a> {
    pub profile: &'a ProfileInfo,
    pub limit: &'a MemoryLimit,
    pub limit_origin: &'a Origin,
}

impl CellSettings<'_> {
    pub fn settings(&self) -> std::collections::BTreeMap<String, String> {
        let mut s = self.profile.profile.settings.clone();
        s.extend(self.limit.settings.clone());
        s
    }

    /// Where `key` was set: the memory limit's own settings, the profile (or the experiment's
    /// settings sections), or nowhere (PostgreSQL's default).
    pub fn origin_of(&self, key: &str) -> Option<Origin> {
        if self.limit.settings.contains_key(key) {
            let mut o = self.limit_origin.clone();
            o.key = format!("{}.settings.{key}", o.key);
            return Some(o);
        }
        self.profile.origins.get(key).cloned()
    }

    /// `shared_buffers (configs/postgres/x.toml:4 `settings.shared_buffers`)` for every setting
    /// of the items, or `(default)`.
    fn sources(&self, plan: &MemoryPlan, kinds: &[MemoryKind]) -> String {
        let mut keys: Vec<&str> = Vec::new();
        for i in plan.items.iter().filter(|i| kinds.contains(&i.kind)) {
            for k in &i.settings {
                if !keys.contains(&k.as_str()) {
                    keys.push(k);
                }
            }
        }
        let set: Vec<String> = keys.iter().filter_map(|k| self.origin_of(k).map(|o| format!("{k} at {o}"))).collect();
        if set.is_empty() {
            "all at PostgreSQL's defaults".into()
        } else {
            format!("set: {}; the others at PostgreSQL's defaults", set.join(", "))
        }
    }
}

/// The largest client count and data set of the experiment: the cell that needs the most.
pub(crate) fn demand(workloads: &[WorkloadSpec]) -> (u32, DataShape) {
    let clients = workloads.iter().flat_map(|w| w.clients.iter().copied()).max().unwrap_or(1);
    let rows = workloads.iter().filter_map(|w| w.data_shape().largest_table_rows).max();
    (clients, DataShape { largest_table_rows: rows })
}

impl Validator<'_> {
    /// Refuses a memory limit the server cannot live in, warns about one it will likely
    /// outgrow, and lists the cells that ask for huge pages.
    pub(crate) fn memory_checks(
        &mut self,
        profiles: &[&ProfileInfo],
        limits: &[MemoryLimit],
        limit_origins: &[Origin],
        workloads: &[WorkloadSpec],
    ) -> Vec<HugePagesNeed> {
        let (clients, shape) = demand(workloads);
        let mut needs = Vec::new();
        for profile in profiles {
            for (limit, limit_origin) in limits.iter().zip(limit_origins) {
                let cell = CellSettings { profile, limit, limit_origin };
                let settings = cell.settings();
                let plan = MemoryPlan::of(&settings, clients, shape);
                let what = format!("profile {:?} in the {} memory limit", profile.profile.name, limit.label());
                if let Some(bytes) = limit.bytes {
                    if plan.certain_bytes() > bytes {
                        self.errors.push(ConfigError {
                            file: limit_origin.file.clone(),
                            line: limit_origin.line,
                            column: None,
                            key: Some(limit_origin.key.clone()),
                            message: format!(
                                "{what}: the server always needs about {} with {clients} clients, more than the limit, so the OOM killer would kill it ({}; {}). Lower those settings for this limit (memory_limits = [{{ limit = \"{}\", settings = {{ shared_buffers = \"...\" }} }}], or [emulate.settings] for --emulate) or raise the limit",
                                show(plan.certain_bytes()),
                                plan.describe(&[MemoryKind::Certain]).join("; "),
                                cell.sources(&plan, &[MemoryKind::Certain]),
                                limit.label()
                            ),
                        });
                    } else if plan.likely_bytes() > bytes {
                        self.warnings.push(format!(
                            "{what}: the server will likely need about {} (an estimate), more than the limit, so the OOM killer will likely kill one of its processes: {} ({}). Lower those settings for this limit or raise it",
                            show(plan.likely_bytes()),
                            plan.describe(&[MemoryKind::Certain, MemoryKind::Likely]).join("; "),
                            cell.sources(&plan, &[MemoryKind::Likely]),
                        ));
                    }
                }
                if settings.get("huge_pages").is_some_and(|v| v.trim() == "on")
                    && let Some(origin) = cell.origin_of("huge_pages")
                {
                    needs.push(HugePagesNeed {
                        profile: profile.profile.name.clone(),
                        memory_limit: limit.label(),
                        shared_memory_bytes: plan.items[0].bytes,
                        origin,
                    });
                }
            }
        }
        needs
    }
}

impl Experiment {
    /// Every profile a server runs: the matrix's, then the placements' own (`[[placement]]
    /// profile`) that the matrix does not run, each once.
    pub fn run_profiles(&self) -> Vec<&ProfileInfo> {
        crate::validate::run_profiles(&self.profiles, &self.placements)
    }

    /// The profiles build `build` runs: every profile when builds are a matrix dimension;
    /// otherwise those of the placements naming it (their own, else the matrix's).
    pub fn profiles_run_by(&self, build: &str) -> Vec<&ProfileInfo> {
        if !self.matrix_builds().is_empty() {
            return self.run_profiles();
        }
        let mut out: Vec<&ProfileInfo> = Vec::new();
        for p in self.placements.iter().filter(|p| p.build.as_deref() == Some(build)) {
            let runs: Vec<&ProfileInfo> = match &p.profile {
                Some(own) => vec![own],
                None => self.profiles.iter().collect(),
            };
            for r in runs {
                if !out.iter().any(|o| o.profile.name == r.profile.name) {
                    out.push(r);
                }
            }
        }
        out
    }

    /// Every (profile, memory limit) pair with its server's memory plan at the experiment's
    /// largest client count and data set (the dry run prints them).
    pub fn memory_plans(&self) -> Vec<(String, String, MemoryPlan)> {
        let (clients, shape) = demand(&self.workloads);
        let mut out = Vec::new();
        for p in self.run_profiles() {
            for l in &self.memory_limits {
                let mut s = p.profile.settings.clone();
                s.extend(l.settings.clone());
                out.push((p.profile.name.clone(), l.label(), MemoryPlan::of(&s, clients, shape)));
            }
        }
        out
    }
}

impl Experiment {
    /// The settings a profile or memory limit requires that a build's server does not know
    /// (`known`: the names its `postgres --describe-config` lists), as errors at the setting's
    /// file, line and key naming the build: only the profiles it runs (a build no placement runs:
    /// none). Custom settings (with a dot) are not checked.
    pub fn unknown_settings(
        &self,
        build: &str,
        version: &str,
        known: &std::collections::BTreeSet<String>,
    ) -> Vec<ConfigError> {
        let mut out = Vec::new();
        if !self.runs_build(build) {
            return out;
        }
        let mut report = |key: &str, origin: Option<&Origin>, what: String| {
            if key.contains('.') || known.contains(&key.to_ascii_lowercase()) {
                return;
            }
            let (file, line, k) = match origin {
                Some(o) => (o.file.clone(), o.line, o.key.clone()),
                None => (self.file.clone(), None, key.to_string()),
            };
            out.push(ConfigError {
                file,
                line,
                column: None,
                key: Some(k),
                message: format!(
                    "{key} ({what}) is not a setting of build {build:?} (PostgreSQL {version}); remove it, or move it to the profile's [optional_settings] to apply it only where the build knows it"
                ),
            });
        };
        for p in self.profiles_run_by(build) {
            for k in p.profile.settings.keys() {
                report(k, p.origins.get(k), format!("profile {}", p.profile.name));
            }
        }
        for (l, origin) in self.memory_limits.iter().zip(&self.memory_limit_origins) {
            for k in l.settings.keys() {
                let mut o = origin.clone();
                o.key = format!("{}.settings.{k}", o.key);
                report(k, Some(&o), format!("memory limit {}", l.label()));
            }
        }
        out
    }
}
