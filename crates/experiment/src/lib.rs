//! The experiment file (`tiers/*.toml`): strict parsing, validation with errors that name file,
//! line and key, `--emulate` overrides, and the resolved experiment that `tiers` and `runner`
//! consume. Nothing here touches the machine.

pub mod error;
mod memory_check;
mod raw;
pub mod units;

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::time::Duration;

use runner::matrix::{MemoryLimit, Order, PgbenchWorkload, Profile, WorkloadKind, WorkloadSpec};
use runner::pgbench::Builtin;
use serde::Serialize;
use tiers::spec::{
    Backing, DaxPolicy, DeviceClass, DeviceSpec, Emulation, NvmeTcpTarget, PartitionSpec, Precondition, RealDevice,
    SecretSource, Throttle,
};
use toml::Spanned;

use error::Source;
pub use error::{ConfigError, ConfigErrors};
use raw::*;

/// Where a value came from: file, line and key, for messages about it.
#[derive(Clone, Debug, PartialEq)]
pub struct Origin {
    pub file: PathBuf,
    pub line: Option<usize>,
    pub key: String,
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.file.display())?;
        if let Some(l) = self.line {
            write!(f, ":{l}")?;
        }
        write!(f, " `{}`", self.key)
    }
}

/// A settings profile with where it came from.
#[derive(Clone, Debug, Serialize)]
pub struct ProfileInfo {
    pub profile: Profile,
    pub file: PathBuf,
    pub description: String,
    pub source: Option<String>,
    /// Settings the profile lists but skips, with the reason.
    pub skipped: BTreeMap<String, String>,
    /// Where each of the profile's settings was set (the profile file, the experiment's
    /// `[postgres.settings]` or `[emulate.settings]`).
    #[serde(skip)]
    pub origins: BTreeMap<String, Origin>,
}

/// Shared memory one cell's server maps, and whether it asks for huge pages: what the preflight
/// checks against the huge pages this machine has reserved.
#[derive(Clone, Debug, PartialEq)]
pub struct HugePagesNeed {
    pub profile: String,
    pub memory_limit: String,
    pub shared_memory_bytes: u64,
    /// Where `huge_pages = on` was set.
    pub origin: Origin,
}

/// Where one placement puts PGDATA and pg_wal (device names).
#[derive(Clone, Debug, Serialize)]
pub struct Placement {
    pub name: String,
    pub description: String,
    pub data: String,
    pub wal: String,
    /// Tablespace role (`tables`, `indexes`, `temp`) -> device name.
    pub tablespaces: BTreeMap<String, String>,
}

impl Placement {
    /// Every device this placement uses.
    pub fn devices(&self) -> Vec<&str> {
        let mut v = vec![self.data.as_str(), self.wal.as_str()];
        v.extend(self.tablespaces.values().map(String::as_str));
        v
    }
}

/// What a fault does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FaultKind {
    /// Every I/O of the device fails with EIO (nbdkit's error filter; emulated nbd devices).
    IoErrors,
    /// The device's filesystem fills up (a filler file takes the free space).
    FillDevice,
    /// The PostgreSQL server is killed (SIGKILL to the postmaster).
    KillServer,
    /// The NVMe/TCP target goes away (nbdkit is killed; emulated nbd devices).
    StopTarget,
    /// The benchmark client stops responding (SIGSTOP); the watchdog must end the run.
    HangClient,
}

/// A fault injected at `after` into the measured interval of run number `run`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FaultSpec {
    pub run: u32,
    pub after: Duration,
    pub kind: FaultKind,
    pub device: Option<String>,
}

/// Kernel settings to apply for the run (and restore afterwards).
#[derive(Clone, Debug, Default, Serialize)]
pub struct KernelSettings {
    pub sysctls: BTreeMap<String, String>,
    pub transparent_hugepages: Option<String>,
    pub cpu_governor: Option<String>,
    /// False when the file lists settings but they are not applied (emulated run).
    pub apply: bool,
}

impl KernelSettings {
    pub fn is_empty(&self) -> bool {
        self.sysctls.is_empty() && self.transparent_hugepages.is_none() && self.cpu_governor.is_none()
    }
}

/// The experiment, validated and resolved (overrides applied when emulating).
#[derive(Clone, Debug, Serialize)]
pub struct Experiment {
    pub file: PathBuf,
    pub name: String,
    pub description: String,
    pub study: Option<String>,
    pub baseline: String,
    pub repetitions: u32,
    pub order: Order,
    /// How long each fio probe job runs per device (zero: no probe).
    pub device_probe: Duration,
    /// Set by the file: how long a benchmark may outlive its duration before the watchdog acts.
    pub watchdog_grace: Option<Duration>,
    pub emulated: bool,
    pub bin_dir: Option<PathBuf>,
    pub os_user: String,
    pub profiles: Vec<ProfileInfo>,
    pub memory_limits: Vec<MemoryLimit>,
    /// Where each memory limit was set (same order as `memory_limits`).
    #[serde(skip)]
    pub memory_limit_origins: Vec<Origin>,
    /// Cells whose server asks for `huge_pages = on`.
    #[serde(skip)]
    pub huge_pages_needs: Vec<HugePagesNeed>,
    pub devices: Vec<DeviceSpec>,
    pub placements: Vec<Placement>,
    pub workloads: Vec<WorkloadSpec>,
    pub kernel: KernelSettings,
    pub faults: Vec<FaultSpec>,
    /// Things worth knowing that are not errors.
    pub warnings: Vec<String>,
}

impl Experiment {
    pub fn device(&self, name: &str) -> Option<&DeviceSpec> {
        self.devices.iter().find(|d| d.name == name)
    }

    /// Devices used by at least one placement, in file order.
    pub fn used_devices(&self) -> Vec<&DeviceSpec> {
        self.devices.iter().filter(|d| self.placements.iter().any(|p| p.devices().contains(&d.name.as_str()))).collect()
    }
}

/// How to load.
#[derive(Clone, Debug)]
pub struct LoadOptions {
    pub emulate: bool,
    /// Where `postgres/<profile>.toml` files live (the repository's `configs/`).
    pub configs_dir: PathBuf,
    /// Hardware threads of this machine (for client counts given in %).
    pub hardware_threads: u32,
}

/// Reads, parses and validates an experiment file. All problems are reported at once.
pub fn load(path: &Path, opts: &LoadOptions) -> Result<Experiment, ConfigErrors> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        ConfigErrors(vec![ConfigError {
            file: path.to_path_buf(),
            line: None,
            column: None,
            key: None,
            message: format!("cannot read the experiment file: {e}"),
        }])
    })?;
    parse(path, &text, opts)
}

/// Parses and validates experiment text (`path` is used in messages and to find nothing else).
pub fn parse(path: &Path, text: &str, opts: &LoadOptions) -> Result<Experiment, ConfigErrors> {
    let src = Source { path, text };
    let raw: RawFile = toml::from_str(text).map_err(|e| ConfigErrors(vec![toml_error(&src, &e)]))?;
    let mut v = Validator { src: &src, errors: Vec::new(), warnings: Vec::new() };
    let exp = v.resolve(raw, opts);
    if v.errors.is_empty() {
        let mut exp = exp.expect("resolved when there are no errors");
        exp.warnings = v.warnings;
        Ok(exp)
    } else {
        Err(ConfigErrors(v.errors))
    }
}

/// A TOML or schema error from the parser, with its line and the key it concerns.
fn toml_error(src: &Source, e: &toml::de::Error) -> ConfigError {
    let span = e.span();
    let key = span.as_ref().and_then(|s| path_at(src.text, s.start));
    let mut message = e.message().trim().to_string();
    if message.contains("untagged enum RawMemoryLimit") {
        message = "a memory limit is \"unlimited\", a size such as \"1GiB\", or a table such as { limit = \"1GiB\", settings = { shared_buffers = \"256MB\" } }".into();
    }
    if message.starts_with("unknown field") {
        message.push_str("; remove it or check its spelling");
    }
    src.error(span, key, message)
}

/// The dotted key path at a byte offset (`workload[rw].emulate.size`). Tables from `[[x]]` only
/// span their header, so every key is searched, not only containing spans.
fn path_at(text: &str, offset: usize) -> Option<String> {
    let root = toml::de::DeTable::parse(text).ok()?;
    find_in_table(root.get_ref(), offset).map(|segs| segs.join("").trim_start_matches('.').to_string())
}

fn find_in_table(t: &toml::de::DeTable, offset: usize) -> Option<Vec<String>> {
    for (k, v) in t.iter() {
        let key = format!(".{}", k.get_ref());
        if k.span().contains(&offset) {
            return Some(vec![key]);
        }
        if let Some(mut rest) = find_in_value(v, offset) {
            rest.insert(0, key);
            return Some(rest);
        }
    }
    None
}

fn find_in_value(v: &toml::Spanned<toml::de::DeValue>, offset: usize) -> Option<Vec<String>> {
    match v.get_ref() {
        toml::de::DeValue::Table(t) => find_in_table(t, offset),
        toml::de::DeValue::Array(a) => {
            for (i, item) in a.iter().enumerate() {
                let label = match item.get_ref() {
                    toml::de::DeValue::Table(t) => t
                        .iter()
                        .find(|(k, _)| k.get_ref() == "name")
                        .and_then(|(_, v)| v.get_ref().as_str().map(str::to_string))
                        .unwrap_or_else(|| i.to_string()),
                    _ => i.to_string(),
                };
                if let Some(mut rest) = find_in_value(item, offset) {
                    rest.insert(0, format!("[{label}]"));
                    return Some(rest);
                }
                if item.span().contains(&offset) {
                    return Some(vec![format!("[{label}]")]);
                }
            }
            None
        }
        _ => v.span().contains(&offset).then(Vec::new),
    }
}

struct Validator<'a> {
    src: &'a Source<'a>,
    errors: Vec<ConfigError>,
    warnings: Vec<String>,
}

fn span<T>(s: &Spanned<T>) -> Option<Range<usize>> {
    Some(s.span())
}

/// The value that applies, with the key it came from: the `[emulate]` override when emulating
/// and set, else the workload's own. Errors about the value then point at the line it came from.
fn chosen<'a, T>(
    emulating: bool,
    override_value: Option<&'a Spanned<T>>,
    override_key: &str,
    own: Option<&'a Spanned<T>>,
    own_key: String,
) -> Option<(&'a Spanned<T>, String)> {
    match override_value.filter(|_| emulating) {
        Some(v) => Some((v, override_key.to_string())),
        None => own.map(|v| (v, own_key)),
    }
}

impl Validator<'_> {
    fn err(&mut self, at: Option<Range<usize>>, key: impl Into<String>, msg: impl Into<String>) {
        let e = self.src.error(at, Some(key.into()), msg);
        self.errors.push(e);
    }

    /// A required count (scale, warehouses) from [`chosen`]: an error at `missing` when absent,
    /// at the value's own line when 0 (returned as is); 1 stands in when absent.
    fn at_least_one(
        &mut self,
        value: Option<(&Spanned<u32>, String)>,
        missing: (Option<Range<usize>>, String),
        missing_msg: &str,
        zero_msg: &str,
    ) -> u32 {
        match value {
            Some((v, _)) if *v.get_ref() > 0 => *v.get_ref(),
            Some((v, k)) => {
                self.err(span(v), k, zero_msg);
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
        match units::parse_size(s.get_ref()) {
            Ok(v) => Some(v),
            Err(m) => {
                self.err(span(s), key, m);
                None
            }
        }
    }

    fn duration(&mut self, s: &Spanned<String>, key: &str) -> Option<Duration> {
        match units::parse_duration(s.get_ref()) {
            Ok(v) => Some(v),
            Err(m) => {
                self.err(span(s), key, m);
                None
            }
        }
    }

    fn name(&mut self, s: &Spanned<String>, key: &str) {
        let n = s.get_ref();
        if n.is_empty() || !n.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_') {
            self.err(span(s), key, format!("{n:?} is not a valid name: use letters, digits, '-' and '_'"));
        }
    }

    fn origin(&self, at: Option<Range<usize>>, key: impl Into<String>) -> Origin {
        Origin {
            file: self.src.path.to_path_buf(),
            line: at.map(|s| self.src.line_col(s.start).0),
            key: key.into(),
        }
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
                match units::parse_size(&text) {
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

    fn settings(&mut self, map: &BTreeMap<String, Spanned<toml::Value>>, key: &str) -> BTreeMap<String, String> {
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
                toml::Value::Boolean(b) => {
                    if *b {
                        "on".into()
                    } else {
                        "off".into()
                    }
                }
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
    fn origins(&self, map: &BTreeMap<String, Spanned<toml::Value>>, key: &str) -> BTreeMap<String, Origin> {
        map.iter().map(|(k, v)| (k.clone(), self.origin(span(v), format!("{key}.{k}")))).collect()
    }

    fn throttle(&mut self, t: &Spanned<RawThrottle>, key: &str) -> Throttle {
        let r = t.get_ref();
        let th = Throttle {
            read_iops: r.read_iops,
            write_iops: r.write_iops,
            read_bytes_per_sec: r.read_bandwidth.as_ref().and_then(|b| self.size(b, &format!("{key}.read_bandwidth"))),
            write_bytes_per_sec: r
                .write_bandwidth
                .as_ref()
                .and_then(|b| self.size(b, &format!("{key}.write_bandwidth"))),
        };
        if th.is_empty() {
            self.err(
                span(t),
                key,
                "a throttle needs at least one of read_iops, write_iops, read_bandwidth, write_bandwidth",
            );
        }
        th
    }

    fn load_profile(&mut self, name: &Spanned<String>, configs: &Path) -> Option<ProfileInfo> {
        let n = name.get_ref();
        let file = configs.join("postgres").join(format!("{n}.toml"));
        let text = match std::fs::read_to_string(&file) {
            Ok(t) => t,
            Err(_) => {
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
                    "postgres.profiles",
                    format!(
                        "no settings profile {n:?} ({} does not exist); known profiles: {}",
                        file.display(),
                        known.join(", ")
                    ),
                );
                return None;
            }
        };
        let psrc = Source { path: &file, text: &text };
        let raw: RawProfile = match toml::from_str(&text) {
            Ok(r) => r,
            Err(e) => {
                self.errors.push(toml_error(&psrc, &e));
                return None;
            }
        };
        let mut sub = Validator { src: &psrc, errors: Vec::new(), warnings: Vec::new() };
        let settings = sub.settings(&raw.settings, "settings");
        let origins = sub.origins(&raw.settings, "settings");
        self.errors.extend(sub.errors);
        Some(ProfileInfo {
            profile: Profile { name: n.clone(), settings },
            file,
            description: raw.description.unwrap_or_default(),
            source: raw.source,
            skipped: raw.skipped,
            origins,
        })
    }

    fn device(
        &mut self,
        d: &Spanned<RawDevice>,
        emulate: Option<&RawEmulate>,
        opts: &LoadOptions,
    ) -> Option<DeviceSpec> {
        let r = d.get_ref();
        let n = r.name.get_ref().clone();
        let key = |k: &str| format!("device[{n}].{k}");
        self.name(&r.name, &key("name"));
        let class = match r.class.get_ref().as_str() {
            "nvme" => DeviceClass::Nvme,
            "pmem" => DeviceClass::Pmem,
            "nvme-tcp" => DeviceClass::NvmeTcp,
            other => {
                self.err(
                    span(&r.class),
                    key("class"),
                    format!("unknown class {other:?}; use \"nvme\" (any local block device), \"pmem\" or \"nvme-tcp\""),
                );
                return None;
            }
        };
        let need = |v: &mut Self, present: bool, what: &str, example: &str| {
            if !present {
                v.err(span(d), key(what), format!("a {class} device needs `{what}` (for example {example})"));
            }
        };
        let real = match class {
            DeviceClass::Nvme => {
                need(self, r.path.is_some(), "path", "path = \"/dev/disk/by-id/nvme-...\"");
                if let Some(p) = &r.path
                    && !p.get_ref().starts_with("/dev/")
                {
                    self.err(
                        span(p),
                        key("path"),
                        "the real device is a path under /dev (best a stable /dev/disk/by-id/... name)",
                    );
                }
                RealDevice::Local {
                    path: r.path.as_ref().map(|p| PathBuf::from(p.get_ref())).unwrap_or_default(),
                    model: r.model.clone(),
                    serial: r.serial.clone(),
                }
            }
            DeviceClass::Pmem => {
                need(self, r.namespace.is_some(), "namespace", "namespace = \"namespace0.0\"");
                RealDevice::Pmem {
                    namespace: r.namespace.as_ref().map(|s| s.get_ref().clone()).unwrap_or_default(),
                    allow_reconfigure: r.allow_reconfigure.unwrap_or(false),
                }
            }
            DeviceClass::NvmeTcp => {
                need(self, r.address.is_some(), "address", "address = \"192.0.2.10\"");
                need(self, r.nqn.is_some(), "nqn", "nqn = \"nqn.2016-01.com.lightbitslabs:uuid:...\"");
                if r.dhchap_secret_env.is_some() && r.dhchap_secret_file.is_some() {
                    self.err(
                        span(d),
                        key("dhchap_secret_env"),
                        "give the DH-HMAC-CHAP secret either from the environment or from a file, not both",
                    );
                }
                let secret = match (&r.dhchap_secret_env, &r.dhchap_secret_file) {
                    (Some(e), _) => Some(SecretSource::Env { name: e.clone() }),
                    (None, Some(f)) => Some(SecretSource::File { path: f.into() }),
                    _ => None,
                };
                RealDevice::NvmeTcp(NvmeTcpTarget {
                    address: r.address.as_ref().map(|s| s.get_ref().clone()).unwrap_or_default(),
                    port: r.port.unwrap_or(4420),
                    nqn: r.nqn.as_ref().map(|s| s.get_ref().clone()).unwrap_or_default(),
                    host_nqn: r.host_nqn.clone(),
                    // Issue 14: the experiment file's `host_id` key (both or neither with
                    // host_nqn) is the experiment side's to add; None keeps today's files valid.
                    host_id: None,
                    dhchap_secret: secret,
                    nsid: r.nsid,
                })
            }
        };
        for (present, what) in [
            (r.path.is_some() && class != DeviceClass::Nvme, "path"),
            (r.namespace.is_some() && class != DeviceClass::Pmem, "namespace"),
            ((r.address.is_some() || r.nqn.is_some()) && class != DeviceClass::NvmeTcp, "address/nqn"),
        ] {
            if present {
                self.err(span(d), key(what), format!("`{what}` does not apply to a {class} device"));
            }
        }
        let dax = match r.dax.as_ref().map(|s| s.get_ref().as_str()) {
            None => {
                if class == DeviceClass::Pmem {
                    DaxPolicy::Required
                } else {
                    DaxPolicy::Off
                }
            }
            Some("off") => DaxPolicy::Off,
            Some("optional") => DaxPolicy::Optional,
            Some("required") => DaxPolicy::Required,
            Some(other) => {
                self.err(
                    r.dax.as_ref().map(|s| s.span()),
                    key("dax"),
                    format!("{other:?}: use \"off\", \"optional\" or \"required\""),
                );
                DaxPolicy::Off
            }
        };
        let precondition = r.precondition_fill.as_ref().and_then(|f| {
            let v = *f.get_ref();
            if !(0.0 < v && v <= 1.0) {
                self.err(
                    span(f),
                    key("precondition_fill"),
                    "a fraction of the device between 0 and 1 (1.0 = the whole device)",
                );
                None
            } else {
                Some(Precondition { fill_fraction: v })
            }
        });
        let throttle = r.throttle.as_ref().map(|t| self.throttle(t, &key("throttle")));
        // Emulation.
        let e = r.emulate.as_ref();
        let backing = match e.and_then(|e| e.get_ref().backing.as_ref()) {
            None => class.default_backing(),
            Some(b) => match b.get_ref().as_str() {
                "loop-file" => Backing::LoopFile,
                "zram" => Backing::Zram,
                "tmpfs-loop" => Backing::TmpfsLoop,
                "nbd" => Backing::Nbd,
                other => {
                    self.err(
                        span(b),
                        key("emulate.backing"),
                        format!("unknown backing {other:?}; use \"loop-file\", \"zram\", \"tmpfs-loop\" or \"nbd\""),
                    );
                    class.default_backing()
                }
            },
        };
        let size = match (e.and_then(|e| e.get_ref().size.as_ref()), emulate.and_then(|e| e.device_size.as_ref())) {
            (Some(s), _) => self.size(s, &key("emulate.size")),
            (None, Some(s)) => self.size(s, "emulate.device_size"),
            (None, None) => Some(4 << 30),
        };
        if let Some(s) = size
            && s < 320 << 20
        {
            let at = e.and_then(|e| e.get_ref().size.as_ref().map(|s| s.span()));
            self.err(at, key("emulate.size"), "XFS needs at least 300 MB; give emulated devices 512MiB or more");
        }
        let latency = e.and_then(|e| e.get_ref().latency.as_ref()).and_then(|l| {
            let d = self.duration(l, &key("emulate.latency"))?;
            if backing != Backing::Nbd {
                self.err(span(l), key("emulate.latency"), "added latency needs the \"nbd\" backing");
            } else if opts.emulate && d.as_nanos() % 1000 != 0 {
                self.err(
                    span(l),
                    key("emulate.latency"),
                    "added latency is applied in whole microseconds; give e.g. \"200us\" or \"1ms\"",
                );
            } else if opts.emulate && d.as_micros() % 1000 != 0 {
                self.warnings.push(format!(
                    "device {n:?}: a latency below whole milliseconds ({}) is added by a small nbdkit plugin compiled with gcc at start (nbdkit's delay filter only takes whole milliseconds)",
                    l.get_ref()
                ));
            }
            Some(d)
        });
        let emu_throttle =
            e.and_then(|e| e.get_ref().throttle.as_ref()).map(|t| self.throttle(t, &key("emulate.throttle")));
        for o in r.mkfs_options.iter().filter_map(|o| unsafe_mkfs_option(o)) {
            self.err(span(d), key("mkfs_options"), o);
        }
        for o in r.mount_options.iter().filter(|o| o.contains("logdev") || o.contains("rtdev")) {
            self.err(
                span(d),
                key("mount_options"),
                format!("{o:?} names another device, which pgtier has not checked; an external log or realtime device is not supported"),
            );
        }
        Some(DeviceSpec {
            name: n,
            class,
            description: r.description.clone(),
            real,
            mkfs_options: r.mkfs_options.clone(),
            mount_options: r.mount_options.clone(),
            dax,
            partition: r.partition.unwrap_or(false).then_some(PartitionSpec { start_sector: 2048 }),
            allow_wipe: r.allow_wipe.unwrap_or(false),
            discard: r.discard.unwrap_or(false),
            precondition,
            throttle: if opts.emulate { emu_throttle.or(throttle) } else { throttle },
            emulation: Emulation {
                backing,
                size_bytes: size.unwrap_or(4 << 30),
                latency,
                zram_algorithm: e.and_then(|e| e.get_ref().zram_algorithm.clone()).unwrap_or_else(|| "lz4".into()),
                error_injection: false,
            },
        })
    }

    fn workload(
        &mut self,
        w: &Spanned<RawWorkload>,
        emulate: Option<&RawEmulate>,
        opts: &LoadOptions,
    ) -> Option<WorkloadSpec> {
        let r = w.get_ref();
        let n = r.name.get_ref().clone();
        let key = |k: &str| format!("workload[{n}].{k}");
        self.name(&r.name, &key("name"));
        let is_tpcc = match r.kind.get_ref().as_str() {
            "pgbench" => false,
            "tpcc" => true,
            other => {
                self.err(
                    span(&r.kind),
                    key("kind"),
                    format!("unknown workload kind {other:?}; use \"pgbench\" or \"tpcc\""),
                );
                return None;
            }
        };
        let kind = if is_tpcc { self.tpcc_workload(w, emulate, opts) } else { self.pgbench_workload(w, emulate, opts) };
        let em = |f: fn(&RawEmulate) -> bool| opts.emulate && emulate.is_some_and(f);
        let clients = if em(|e| e.clients.is_some()) {
            self.clients(emulate.unwrap().clients.as_ref().unwrap(), "emulate.clients", opts.hardware_threads)
        } else {
            self.clients(&r.clients, &key("clients"), opts.hardware_threads)
        };
        let threads = if em(|e| e.threads.is_some()) {
            emulate.unwrap().threads.as_ref().map(|t| *t.get_ref())
        } else {
            r.threads.as_ref().map(|t| *t.get_ref())
        };
        if threads == Some(0) {
            self.err(span(w), key("threads"), "threads must be at least 1");
        }
        let (duration_value, duration_key) = chosen(
            opts.emulate,
            emulate.and_then(|e| e.duration.as_ref()),
            "emulate.duration",
            Some(&r.duration),
            key("duration"),
        )
        .expect("the workload's own duration is required");
        let duration = self.duration(duration_value, &duration_key);
        if let Some(d) = duration
            && d < Duration::from_secs(1)
        {
            self.err(span(duration_value), duration_key, "a run lasts at least 1s");
        }
        let ramp_up = if em(|e| e.ramp_up.is_some()) {
            self.duration(emulate.unwrap().ramp_up.as_ref().unwrap(), "emulate.ramp_up")
        } else {
            r.ramp_up.as_ref().and_then(|d| self.duration(d, &key("ramp_up"))).or(Some(Duration::ZERO))
        };
        Some(WorkloadSpec { name: n, kind: kind?, clients, threads, duration: duration?, ramp_up: ramp_up? })
    }

    fn pgbench_workload(
        &mut self,
        w: &Spanned<RawWorkload>,
        emulate: Option<&RawEmulate>,
        opts: &LoadOptions,
    ) -> Option<WorkloadKind> {
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
            Some(b) => {
                let parsed = Builtin::parse(b.get_ref());
                if parsed.is_none() {
                    self.err(
                        span(b),
                        key("builtin"),
                        format!(
                            "unknown pgbench builtin {:?}; use \"tpcb-like\", \"simple-update\" or \"select-only\"",
                            b.get_ref()
                        ),
                    );
                }
                parsed
            }
        };
        let scale = self.at_least_one(
            chosen(
                opts.emulate,
                emulate.and_then(|e| e.scale.as_ref()),
                "emulate.scale",
                r.scale.as_ref(),
                key("scale"),
            ),
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

    fn tpcc_workload(
        &mut self,
        w: &Spanned<RawWorkload>,
        emulate: Option<&RawEmulate>,
        opts: &LoadOptions,
    ) -> Option<WorkloadKind> {
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
            chosen(
                opts.emulate,
                emulate.and_then(|e| e.warehouses.as_ref()),
                "emulate.warehouses",
                r.warehouses.as_ref(),
                key("warehouses"),
            ),
            (span(w), key("warehouses")),
            "a TPC-C workload needs `warehouses`",
            "at least 1 warehouse",
        );
        let mode = match r.mode.as_ref().map(|m| m.get_ref().as_str()) {
            None | Some("spec") => tpcc::Mode::Spec,
            Some("hammerdb") => tpcc::Mode::HammerDb,
            Some(other) => {
                self.err(r.mode.as_ref().map(|m| m.span()), key("mode"), format!("{other:?}: use \"spec\" (the TPC-C specification) or \"hammerdb\" (HammerDB's departures, for like-for-like NOPM)"));
                tpcc::Mode::Spec
            }
        };
        let side = match r.side.as_ref().map(|m| m.get_ref().as_str()) {
            None | Some("procedures") => tpcc::Side::ServerProcedures,
            Some("client-sql") => tpcc::Side::ClientSql,
            Some(other) => {
                self.err(
                    r.side.as_ref().map(|m| m.span()),
                    key("side"),
                    format!("{other:?}: use \"procedures\" (server-side PL/pgSQL, as HammerDB) or \"client-sql\""),
                );
                tpcc::Side::ServerProcedures
            }
        };
        Some(WorkloadKind::Tpcc(runner::matrix::TpccWorkload {
            warehouses,
            mode,
            side,
            keying_and_thinking: r.keying_and_thinking.unwrap_or(false),
            all_warehouses: r.all_warehouses.unwrap_or(false),
            load_workers: r.load_workers.unwrap_or(4).max(1),
        }))
    }

    fn resolve(&mut self, raw: RawFile, opts: &LoadOptions) -> Option<Experiment> {
        let ex = raw.experiment.get_ref();
        self.name(&ex.name, "experiment.name");
        let emulate = raw.emulate.as_ref().map(|e| e.get_ref());
        if opts.emulate && emulate.is_none() {
            self.warnings.push(
                "the experiment file has no [emulate] section: --emulate uses the real-hardware scale and durations"
                    .into(),
            );
        }
        let order = match ex.order.as_ref().map(|o| o.get_ref().as_str()) {
            None | Some("interleaved") => Order::Interleaved,
            Some("sequential") => Order::Sequential,
            Some(other) => {
                self.err(
                    ex.order.as_ref().map(|o| o.span()),
                    "experiment.order",
                    format!("{other:?}: use \"interleaved\" or \"sequential\""),
                );
                Order::Interleaved
            }
        };
        let mut repetitions = ex.repetitions.as_ref().map(|r| *r.get_ref()).unwrap_or(3);
        if opts.emulate
            && let Some(r) = emulate.and_then(|e| e.repetitions.as_ref())
        {
            repetitions = *r.get_ref();
        }
        let mut device_probe = ex
            .device_probe
            .as_ref()
            .and_then(|d| self.duration(d, "experiment.device_probe"))
            .unwrap_or(if opts.emulate { Duration::from_secs(3) } else { Duration::from_secs(20) });
        if opts.emulate
            && let Some(d) = emulate.and_then(|e| e.device_probe.as_ref())
        {
            device_probe = self.duration(d, "emulate.device_probe").unwrap_or(device_probe);
        }
        if repetitions == 0 {
            self.err(ex.repetitions.as_ref().map(|r| r.span()), "experiment.repetitions", "at least 1 repetition");
        }
        // PostgreSQL.
        let pg = raw.postgres.as_ref().map(|p| p.get_ref());
        let bin_dir = pg
            .and_then(|p| p.bin_dir.as_ref())
            .and_then(|b| (b.get_ref() != "auto").then(|| PathBuf::from(b.get_ref())));
        if let (Some(b), Some(raw_b)) = (&bin_dir, pg.and_then(|p| p.bin_dir.as_ref()))
            && !b.join("postgres").exists()
        {
            self.err(
                span(raw_b),
                "postgres.bin_dir",
                format!(
                    "{} has no postgres binary; use \"auto\" or the directory that holds initdb, postgres and pgbench",
                    b.display()
                ),
            );
        }
        let os_user =
            pg.and_then(|p| p.os_user.as_ref()).map(|u| u.get_ref().clone()).unwrap_or_else(|| "postgres".into());
        if os_user == "root" {
            self.err(
                pg.and_then(|p| p.os_user.as_ref()).map(|u| u.span()),
                "postgres.os_user",
                "PostgreSQL never runs as root; use an unprivileged user such as postgres",
            );
        }
        let profile_names: Vec<Spanned<String>> = match pg.and_then(|p| p.profiles.as_ref()) {
            Some(list) => list.get_ref().clone(),
            None => vec![Spanned::new(0..0, "default".to_string())],
        };
        let common = pg
            .and_then(|p| p.settings.as_ref())
            .map(|s| self.settings(s.get_ref(), "postgres.settings"))
            .unwrap_or_default();
        let emu_settings = if opts.emulate {
            emulate.and_then(|e| e.settings.as_ref()).map(|s| self.settings(s.get_ref(), "emulate.settings"))
        } else {
            None
        };
        let common_origins = pg
            .and_then(|p| p.settings.as_ref())
            .map(|s| self.origins(s.get_ref(), "postgres.settings"))
            .unwrap_or_default();
        let emu_origins = if opts.emulate {
            emulate.and_then(|e| e.settings.as_ref()).map(|s| self.origins(s.get_ref(), "emulate.settings"))
        } else {
            None
        };
        let mut profiles = Vec::new();
        for name in &profile_names {
            if let Some(mut info) = self.load_profile(name, &opts.configs_dir) {
                info.profile.settings.extend(common.clone());
                info.origins.extend(common_origins.clone());
                if let Some(es) = &emu_settings {
                    info.profile.settings.extend(es.clone());
                }
                if let Some(eo) = &emu_origins {
                    info.origins.extend(eo.clone());
                }
                profiles.push(info);
            }
        }
        let (mut memory_limits, mut memory_limit_origins) = pg
            .and_then(|p| p.memory_limits.as_ref())
            .map(|m| self.memory_limits(m, "postgres.memory_limits"))
            .unwrap_or_else(|| (vec![MemoryLimit::unlimited()], vec![self.origin(None, "postgres.memory_limits")]));
        if opts.emulate
            && let Some(m) = emulate.and_then(|e| e.memory_limits.as_ref())
        {
            (memory_limits, memory_limit_origins) = self.memory_limits(m, "emulate.memory_limits");
        }
        // Devices.
        let mut devices = Vec::new();
        let mut seen = BTreeSet::new();
        for d in &raw.device {
            self.unique(&mut seen, "device", &d.get_ref().name);
            if let Some(spec) = self.device(d, emulate, opts) {
                devices.push(spec);
            }
        }
        if raw.device.is_empty() {
            self.err(span(&raw.experiment), "device", "the experiment defines no [[device]]");
        }
        // Placements.
        let device_names: Vec<String> = raw.device.iter().map(|d| d.get_ref().name.get_ref().clone()).collect();
        let mut placements = Vec::new();
        let mut seen = BTreeSet::new();
        for p in &raw.placement {
            let r = p.get_ref();
            let n = r.name.get_ref().clone();
            self.name(&r.name, &format!("placement[{n}].name"));
            self.unique(&mut seen, "placement", &r.name);
            let mut refs: Vec<(String, &Spanned<String>)> = vec![("data".into(), &r.data), ("wal".into(), &r.wal)];
            for (role, dev) in &r.tablespaces {
                if !runner::matrix::TABLESPACE_ROLES.contains(&role.as_str()) {
                    self.err(
                        span(dev),
                        format!("placement[{n}].tablespaces.{role}"),
                        format!("unknown tablespace role {role:?}; use tables, indexes or temp"),
                    );
                }
                refs.push((format!("tablespaces.{role}"), dev));
            }
            for (field, value) in refs {
                if !device_names.contains(value.get_ref()) {
                    self.err(
                        span(value),
                        format!("placement[{n}].{field}"),
                        format!("no device named {:?}; defined devices: {}", value.get_ref(), device_names.join(", ")),
                    );
                }
            }
            placements.push(Placement {
                name: n,
                description: r.description.clone().unwrap_or_default(),
                data: r.data.get_ref().clone(),
                wal: r.wal.get_ref().clone(),
                tablespaces: r.tablespaces.iter().map(|(k, v)| (k.clone(), v.get_ref().clone())).collect(),
            });
        }
        if raw.placement.is_empty() {
            self.err(span(&raw.experiment), "placement", "the experiment defines no [[placement]]");
        }
        let placement_names: Vec<&str> = placements.iter().map(|p| p.name.as_str()).collect();
        if !placement_names.contains(&ex.baseline.get_ref().as_str()) {
            self.err(
                span(&ex.baseline),
                "experiment.baseline",
                format!(
                    "no placement named {:?}; defined placements: {}",
                    ex.baseline.get_ref(),
                    placement_names.join(", ")
                ),
            );
        }
        for d in &devices {
            if !placements.iter().any(|p| p.devices().contains(&d.name.as_str())) {
                self.warnings.push(format!("device {:?} is used by no placement and will not be provisioned", d.name));
            }
        }
        // Workloads.
        let mut workloads = Vec::new();
        let mut seen = BTreeSet::new();
        for w in &raw.workload {
            self.unique(&mut seen, "workload", &w.get_ref().name);
            if let Some(spec) = self.workload(w, emulate, opts) {
                workloads.push(spec);
            }
        }
        if raw.workload.is_empty() {
            self.err(span(&raw.experiment), "workload", "the experiment defines no [[workload]]");
        }
        let kernel = self.kernel(raw.kernel.as_ref(), emulate, opts);
        let faults = self.faults(&raw.fault, &mut devices, opts);
        self.cross_checks(&devices, &placements, &workloads, opts.emulate);
        let huge_pages_needs =
            self.memory_checks(&profiles, &memory_limits, &memory_limit_origins, &workloads);
        if !self.errors.is_empty() {
            return None;
        }
        Some(Experiment {
            file: self.src.path.to_path_buf(),
            name: ex.name.get_ref().clone(),
            description: ex.description.clone().unwrap_or_default(),
            study: ex.study.clone(),
            baseline: ex.baseline.get_ref().clone(),
            repetitions,
            order,
            device_probe,
            watchdog_grace: ex.watchdog_grace.as_ref().and_then(|d| self.duration(d, "experiment.watchdog_grace")),
            emulated: opts.emulate,
            bin_dir,
            os_user,
            profiles,
            memory_limits,
            memory_limit_origins,
            huge_pages_needs,
            devices,
            placements,
            workloads,
            kernel,
            faults,
            warnings: Vec::new(),
        })
    }

    fn kernel(
        &mut self,
        k: Option<&Spanned<RawKernel>>,
        emulate: Option<&RawEmulate>,
        opts: &LoadOptions,
    ) -> KernelSettings {
        let Some(k) = k.map(|k| k.get_ref()) else { return KernelSettings::default() };
        let mut out = KernelSettings {
            sysctls: BTreeMap::new(),
            transparent_hugepages: None,
            cpu_governor: k.cpu_governor.clone(),
            apply: !opts.emulate || emulate.and_then(|e| e.apply_kernel_settings).unwrap_or(false),
        };
        for (key, v) in self.settings_any(&k.sysctls, "kernel.sysctls") {
            if !key.contains('.') || key.contains("..") || key.contains('/') {
                self.err(None, format!("kernel.sysctls.{key}"), "a sysctl name looks like vm.swappiness");
                continue;
            }
            out.sysctls.insert(key, v);
        }
        if let Some(t) = &k.transparent_hugepages {
            if ["always", "madvise", "never"].contains(&t.get_ref().as_str()) {
                out.transparent_hugepages = Some(t.get_ref().clone());
            } else {
                self.err(span(t), "kernel.transparent_hugepages", "use \"always\", \"madvise\" or \"never\"");
            }
        }
        if !out.is_empty() && !out.apply {
            self.warnings.push("the [kernel] settings are recorded but not applied when emulating (set [emulate] apply_kernel_settings = true to apply them)".into());
        }
        out
    }

    /// Like `settings`, for keys with dots (sysctls).
    fn settings_any(&mut self, map: &BTreeMap<String, Spanned<toml::Value>>, key: &str) -> Vec<(String, String)> {
        let mut out = Vec::new();
        for (k, v) in map {
            match v.get_ref() {
                toml::Value::String(s) => out.push((k.clone(), s.clone())),
                toml::Value::Integer(i) => out.push((k.clone(), i.to_string())),
                _ => self.err(span(v), format!("{key}.{k}"), "a kernel setting is a string or an integer"),
            }
        }
        out
    }

    fn faults(&mut self, raw: &[Spanned<RawFault>], devices: &mut [DeviceSpec], opts: &LoadOptions) -> Vec<FaultSpec> {
        let mut out = Vec::new();
        for (i, f) in raw.iter().enumerate() {
            let r = f.get_ref();
            let key = |k: &str| format!("fault[{i}].{k}");
            let kind = match r.kind.get_ref().as_str() {
                "io-errors" => FaultKind::IoErrors,
                "fill-device" => FaultKind::FillDevice,
                "kill-server" => FaultKind::KillServer,
                "stop-target" => FaultKind::StopTarget,
                "hang-client" => FaultKind::HangClient,
                other => {
                    self.err(
                        span(&r.kind),
                        key("kind"),
                        format!("unknown fault {other:?}; use io-errors, fill-device, kill-server, stop-target or hang-client"),
                    );
                    continue;
                }
            };
            let Some(after) = self.duration(&r.after, &key("after")) else { continue };
            if *r.run.get_ref() == 0 {
                self.err(span(&r.run), key("run"), "runs are numbered from 1 in the executed order (see --dry-run)");
            }
            let needs_device = matches!(kind, FaultKind::IoErrors | FaultKind::FillDevice | FaultKind::StopTarget);
            let device = r.device.as_ref().map(|d| d.get_ref().clone());
            match (&r.device, needs_device) {
                (None, true) => {
                    self.err(span(f), key("device"), format!("a {} fault needs `device`", r.kind.get_ref()))
                }
                (Some(d), false) => {
                    self.err(span(d), key("device"), format!("a {} fault takes no device", r.kind.get_ref()))
                }
                _ => {}
            }
            if let Some(dname) = &device {
                match devices.iter_mut().find(|x| &x.name == dname) {
                    None => self.err(
                        r.device.as_ref().map(|d| d.span()),
                        key("device"),
                        format!("no device named {dname:?}"),
                    ),
                    Some(dev) => {
                        if matches!(kind, FaultKind::IoErrors | FaultKind::StopTarget) {
                            if !opts.emulate || dev.emulation.backing != Backing::Nbd {
                                self.err(
                                    span(f),
                                    key("kind"),
                                    format!("{} is injected through nbdkit: it needs --emulate and a device with the nbd backing", r.kind.get_ref()),
                                );
                            }
                            if kind == FaultKind::IoErrors {
                                dev.emulation.error_injection = true;
                            }
                        }
                    }
                }
            }
            out.push(FaultSpec { run: *r.run.get_ref(), after, kind, device });
        }
        out
    }

    /// Checks across sections: devices too small for the data sets.
    fn cross_checks(
        &mut self,
        devices: &[DeviceSpec],
        placements: &[Placement],
        workloads: &[WorkloadSpec],
        emulate: bool,
    ) {
        // pgbench data is about 15 MiB per scale unit, TPC-C about 100 MiB per warehouse.
        let need = workloads.iter().map(|w| w.estimated_bytes()).max().unwrap_or(0);
        let max_scale = workloads.iter().map(|w| w.scale()).max().unwrap_or(0);
        for d in devices {
            let copies = placements.iter().filter(|p| p.data == d.name).count() as u64;
            if emulate && copies > 0 && d.emulation.size_bytes < need * copies + (256 << 20) {
                self.warnings.push(format!(
                    "emulated device {:?} ({} MiB) may be too small for {copies} cop{} of a scale-{max_scale} data set (about {} MiB each)",
                    d.name,
                    d.emulation.size_bytes >> 20,
                    if copies == 1 { "y" } else { "ies" },
                    need >> 20
                ));
            }
        }
    }
}

/// pgbench run options an experiment may add: (flag, takes a value as the next argument).
/// Everything else (connection, clients, threads, duration, logs, custom scripts with \shell) is
/// pgtier's, or could run commands as root.
const PGBENCH_RUN_ARGS: &[(&str, bool)] = &[
    ("-n", false),
    ("--no-vacuum", false),
    ("-M", true),
    ("--protocol", false),
    ("--max-tries", false),
    ("-R", true),
    ("--rate", false),
    ("-L", true),
    ("--latency-limit", false),
    ("--verbose-errors", false),
    ("--failures-detailed", false),
    ("--random-seed", false),
];

/// pgbench -i options an experiment may add.
const PGBENCH_INIT_ARGS: &[(&str, bool)] = &[
    ("-I", true),
    ("--init-steps", false),
    ("-F", true),
    ("--fillfactor", false),
    ("--partitions", false),
    ("--partition-method", false),
    ("--unlogged-tables", false),
    ("--foreign-keys", false),
    ("-q", false),
    ("--quiet", false),
];

/// The first argument not on the allow-list (long options may carry `=value`).
fn disallowed_args(args: &[String], allowed: &[(&str, bool)]) -> Option<String> {
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        let name = a.split('=').next().unwrap_or(a);
        match allowed.iter().find(|(f, _)| *f == name) {
            Some((_, true)) => i += 2,
            Some((_, false)) => i += 1,
            None => return Some(a.clone()),
        }
    }
    None
}

/// Settings pgtier owns (the private socket, the data directory, authentication) or that would
/// hand a configuration value to a shell or load files from elsewhere.
pub fn reserved_setting(name: &str) -> Option<String> {
    const OWNED: [&str; 12] = [
        "data_directory",
        "config_file",
        "hba_file",
        "ident_file",
        "external_pid_file",
        "listen_addresses",
        "port",
        "unix_socket_directories",
        "unix_socket_group",
        "unix_socket_permissions",
        "logging_collector",
        "log_timezone",
    ];
    const SHELL_OR_FILES: [&str; 8] = [
        "archive_command",
        "archive_library",
        "restore_command",
        "archive_cleanup_command",
        "recovery_end_command",
        "ssl_passphrase_command",
        "include",
        "include_dir",
    ];
    if OWNED.contains(&name) {
        Some(format!(
            "{name} is set by pgtier (a private socket, its own data directory, peer authentication); remove it from the profile"
        ))
    } else if SHELL_OR_FILES.contains(&name) || name == "include_if_exists" {
        Some(format!(
            "{name} runs a command or reads other files; pgtier does not pass it on (remove it from the profile)"
        ))
    } else {
        None
    }
}

/// Why an mkfs.xfs option is refused: it would make mkfs write to a device pgtier did not check,
/// or force an overwrite the experiment file must ask for with `allow_wipe`.
pub fn unsafe_mkfs_option(o: &str) -> Option<String> {
    if o.contains("logdev") || o.contains("rtdev") {
        return Some(format!(
            "{o:?} names another device, which pgtier has not checked; an external log or realtime device is not supported"
        ));
    }
    if o.starts_with("name=") || o.contains(",name=") || o.starts_with("file") || o.contains(",file") {
        return Some(format!("{o:?} points mkfs.xfs at a different target; pgtier formats the device it checked"));
    }
    if o == "--force" || (o.starts_with('-') && !o.starts_with("--") && o[1..].contains('f')) {
        return Some(format!(
            "{o:?} forces an overwrite; set allow_wipe = true on the device instead (pgtier then passes -f itself)"
        ));
    }
    None
}

/// PostgreSQL memory units (`128MB` = 128 MiB, `8kB`, `1GB`); bare numbers are 8 kB pages.
pub use runner::memory::pg_size;
