//! `[postgres]`: binaries, the OS user, settings profiles (`configs/postgres/<name>.toml`) with the
//! settings added on top of them, and the memory limits.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use runner::matrix::{MemoryLimit, Profile};
use serde::Deserialize;
use toml::Spanned;

use super::Validator;
use super::emulate::Overrides;
use crate::error::Source;
use crate::model::{Build, Origin, ProfileInfo};
use crate::policy::reserved_setting;
use crate::raw::{RawMemoryLimit, RawPostgres, RawProfile};
use crate::spans::{span, toml_error};
use crate::{LoadOptions, units};

/// What `[postgres]` resolves to.
pub(super) struct PostgresSection {
    pub bin_dir: Option<PathBuf>,
    pub builds: Vec<Build>,
    pub os_user: String,
    pub profiles: Vec<ProfileInfo>,
    /// What goes on top of every profile, a placement's own too.
    pub layers: ProfileLayers,
    pub memory_limits: Vec<MemoryLimit>,
    /// Where each memory limit was set (same order as `memory_limits`).
    pub memory_limit_origins: Vec<Origin>,
}

type Settings = BTreeMap<String, Spanned<toml::Value>>;

/// The settings put on top of every profile, in order: `[postgres.settings]`, then (when
/// emulating) `[emulate.settings]`; each with where it was set.
#[derive(Default)]
pub(super) struct ProfileLayers {
    settings: BTreeMap<String, String>,
    origins: BTreeMap<String, Origin>,
}

impl Validator<'_> {
    pub(super) fn postgres_section(
        &mut self,
        pg: Option<&RawPostgres>,
        ov: &Overrides,
        opts: &LoadOptions,
    ) -> PostgresSection {
        let builds = self.builds(pg);
        let bin_dir = builds[0].bin_dir.clone();
        let raw_user = pg.and_then(|p| p.os_user.as_ref());
        let os_user = raw_user.map(|u| u.get_ref().clone()).unwrap_or_else(|| "postgres".into());
        if os_user == "root" {
            self.err(
                raw_user.map(|u| u.span()),
                "postgres.os_user",
                "PostgreSQL never runs as root; use an unprivileged user such as postgres",
            );
        }
        let layers = self.profile_layers(pg, ov);
        let profiles = self.profiles(pg, &layers, opts);
        // The file's own limits are checked even when [emulate] overrides them.
        let own = pg.and_then(|p| p.memory_limits.as_ref()).map(|m| self.memory_limits(m, "postgres.memory_limits"));
        let (memory_limits, memory_limit_origins) = match ov.memory_limits.get() {
            Some(c) => self.memory_limits(c.value, &c.key),
            None => own
                .unwrap_or_else(|| (vec![MemoryLimit::unlimited()], vec![self.origin(None, "postgres.memory_limits")])),
        };
        PostgresSection { bin_dir, builds, os_user, profiles, layers, memory_limits, memory_limit_origins }
    }

    /// `builds`, or the one build `bin_dir` names (`default`). A bin_dir must hold postgres and
    /// initdb; "auto" finds the installed server.
    fn builds(&mut self, pg: Option<&RawPostgres>) -> Vec<Build> {
        let check = |v: &mut Self, b: &Spanned<String>, key: &str| -> Option<PathBuf> {
            let text = b.get_ref();
            if text == "auto" {
                return None;
            }
            let dir = PathBuf::from(text);
            for program in ["postgres", "initdb"] {
                if !dir.join(program).exists() {
                    v.err(
                        span(b),
                        key,
                        format!(
                            "{} has no {program} binary; use \"auto\" or the directory that holds initdb and postgres (and pgbench, or the system's pgbench drives it)",
                            dir.display()
                        ),
                    );
                    break;
                }
            }
            Some(dir)
        };
        let Some(list) = pg.and_then(|p| p.builds.as_ref()) else {
            let raw_bin = pg.and_then(|p| p.bin_dir.as_ref());
            let bin_dir = raw_bin.and_then(|b| check(self, b, "postgres.bin_dir"));
            let origin = self.origin(raw_bin.map(|b| b.span()), "postgres.bin_dir");
            return vec![Build { name: runner::matrix::DEFAULT_BUILD.into(), bin_dir, origin }];
        };
        if let Some(b) = pg.and_then(|p| p.bin_dir.as_ref()) {
            self.err(span(b), "postgres.bin_dir", "give either bin_dir (one build) or builds (several), not both");
        }
        if list.get_ref().is_empty() {
            self.err(span(list), "postgres.builds", "give at least one build, or leave builds out");
        }
        let mut seen = std::collections::BTreeSet::new();
        let mut out = Vec::new();
        for (i, b) in list.get_ref().iter().enumerate() {
            let r = b.get_ref();
            let key = format!("postgres.builds[{i}]");
            self.name(&r.name, &format!("{key}.name"));
            if !seen.insert(r.name.get_ref().clone()) {
                self.err(span(&r.name), format!("{key}.name"), format!("build {:?} is named twice", r.name.get_ref()));
            }
            let bin_dir = check(self, &r.bin_dir, &format!("{key}.bin_dir"));
            let origin = self.origin(span(b), key);
            out.push(Build { name: r.name.get_ref().clone(), bin_dir, origin });
        }
        if out.is_empty() {
            out.push(Build {
                name: runner::matrix::DEFAULT_BUILD.into(),
                bin_dir: None,
                origin: self.origin(None, "postgres.builds"),
            });
        }
        out
    }

    /// The profiles with `[postgres.settings]` and (when emulating) `[emulate.settings]` on top.
    fn profiles(&mut self, pg: Option<&RawPostgres>, layers: &ProfileLayers, opts: &LoadOptions) -> Vec<ProfileInfo> {
        let names: Vec<Spanned<String>> = match pg.and_then(|p| p.profiles.as_ref()) {
            Some(list) => list.get_ref().clone(),
            None => vec![Spanned::new(0..0, "default".to_string())],
        };
        names.iter().filter_map(|name| self.layered_profile(name, "postgres.profiles", layers, opts)).collect()
    }

    /// `[postgres.settings]` and (when emulating) `[emulate.settings]`, checked once.
    fn profile_layers(&mut self, pg: Option<&RawPostgres>, ov: &Overrides) -> ProfileLayers {
        let mut layers = ProfileLayers::default();
        if let Some(common) = pg.and_then(|p| p.settings.as_ref()) {
            layers.settings.extend(self.settings(common.get_ref(), "postgres.settings"));
            layers.origins.extend(self.origins(common.get_ref(), "postgres.settings"));
        }
        if let Some(emu) = ov.settings.get() {
            layers.settings.extend(self.settings(emu.get(), &emu.key));
            layers.origins.extend(self.origins(emu.get(), &emu.key));
        }
        layers
    }

    /// The profile `name` (`configs/postgres/<name>.toml`) with `layers` on top; `key` names
    /// where it was asked for.
    pub(super) fn layered_profile(
        &mut self,
        name: &Spanned<String>,
        key: &str,
        layers: &ProfileLayers,
        opts: &LoadOptions,
    ) -> Option<ProfileInfo> {
        let mut info = self.load_profile(name, key, &opts.configs_dir)?;
        info.profile.settings.extend(layers.settings.clone());
        info.origins.extend(layers.origins.clone());
        Some(info)
    }

    fn memory_limits(
        &mut self,
        list: &Spanned<Vec<Spanned<RawMemoryLimit>>>,
        key: &str,
    ) -> (Vec<MemoryLimit>, Vec<Origin>) {
        if list.get_ref().is_empty() {
            self.err(span(list), key, "give at least one limit (\"unlimited\" for none)");
        }
        let mut out = Vec::new();
        let mut origins = Vec::new();
        for (i, m) in list.get_ref().iter().enumerate() {
            let (text, settings) = match m.get_ref() {
                RawMemoryLimit::Plain(s) => (s.clone(), BTreeMap::new()),
                RawMemoryLimit::WithSettings(t) => {
                    let spanned =
                        t.settings.iter().map(|(k, v)| (k.clone(), Spanned::new(m.span(), v.clone()))).collect();
                    (t.limit.clone(), self.settings(&spanned, key))
                }
            };
            let bytes = if text == "unlimited" || text == "none" {
                None
            } else {
                match units::parse_size_with_unit(&text) {
                    Ok(b) if b < 64 << 20 => {
                        self.err(
                            span(m),
                            key,
                            "a server limited to less than 64 MiB will not start; use at least 64MiB",
                        );
                        continue;
                    }
                    Ok(b) => Some(b),
                    Err(e) => {
                        self.err(span(m), key, e);
                        continue;
                    }
                }
            };
            out.push(MemoryLimit { bytes, settings });
            origins.push(self.origin(span(m), format!("{key}[{i}]")));
        }
        (out, origins)
    }

    /// PostgreSQL settings as the server takes them (booleans as on/off); reserved ones refused.
    fn settings(&mut self, map: &Settings, key: &str) -> BTreeMap<String, String> {
        let mut out = BTreeMap::new();
        for (k, v) in map {
            if !k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.') {
                self.err(span(v), format!("{key}.{k}"), "not a PostgreSQL setting name");
                continue;
            }
            if let Some(why) = reserved_setting(k) {
                self.err(span(v), format!("{key}.{k}"), why);
                continue;
            }
            let s = match v.get_ref() {
                toml::Value::String(s) => s.clone(),
                toml::Value::Integer(i) => i.to_string(),
                toml::Value::Float(f) => f.to_string(),
                toml::Value::Boolean(b) => if *b { "on" } else { "off" }.into(),
                _ => {
                    self.err(span(v), format!("{key}.{k}"), "a setting is a string, number or boolean");
                    continue;
                }
            };
            out.insert(k.clone(), s);
        }
        out
    }

    /// Where each setting of `map` is set in this file.
    fn origins(&self, map: &Settings, key: &str) -> BTreeMap<String, Origin> {
        map.iter().map(|(k, v)| (k.clone(), self.origin(span(v), format!("{key}.{k}")))).collect()
    }

    fn load_profile(&mut self, name: &Spanned<String>, key: &str, configs: &Path) -> Option<ProfileInfo> {
        let n = name.get_ref();
        let file = configs.join("postgres").join(format!("{n}.toml"));
        let Ok(text) = std::fs::read_to_string(&file) else {
            let known: Vec<String> = std::fs::read_dir(configs.join("postgres"))
                .map(|rd| {
                    rd.flatten()
                        .filter_map(|e| {
                            e.file_name().to_str().and_then(|f| f.strip_suffix(".toml")).map(str::to_string)
                        })
                        .collect()
                })
                .unwrap_or_default();
            self.err(
                span(name),
                key,
                format!(
                    "no settings profile {n:?} ({} does not exist); known profiles: {}",
                    file.display(),
                    known.join(", ")
                ),
            );
            return None;
        };
        let psrc = Source { path: &file, text: &text };
        // Every unknown key is reported (serde would stop at the first); the rest is read.
        let mut doc = match toml::de::DeTable::parse(&text) {
            Ok(doc) => doc,
            Err(e) => {
                self.errors.push(toml_error(&psrc, &e));
                return None;
            }
        };
        self.errors.extend(crate::schema::take_unknown_keys(doc.get_mut(), crate::schema::profile(), &psrc));
        let raw = match RawProfile::deserialize(toml::de::Deserializer::from(doc)) {
            Ok(r) => r,
            Err(e) => {
                self.errors.push(toml_error(&psrc, &e));
                return None;
            }
        };
        let mut sub = Validator::new(&psrc);
        let settings = sub.settings(&raw.settings, "settings");
        let mut origins = sub.origins(&raw.settings, "settings");
        let optional = sub.settings(&raw.optional_settings, "optional_settings");
        origins.extend(sub.origins(&raw.optional_settings, "optional_settings"));
        for k in optional.keys().filter(|k| settings.contains_key(*k)) {
            sub.err(
                raw.optional_settings.get(k).map(|v| v.span()),
                format!("optional_settings.{k}"),
                format!("{k} is also in [settings]; a setting is either required or optional"),
            );
        }
        self.errors.extend(sub.errors);
        Some(ProfileInfo {
            profile: Profile { name: n.clone(), settings, optional },
            file,
            description: raw.description.unwrap_or_default(),
            source: raw.source,
            skipped: raw.skipped,
            origins,
        })
    }
}
