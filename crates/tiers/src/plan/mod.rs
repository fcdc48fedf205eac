//! The provisioning plan: every step, in order, with its reason. A plan is data; `--dry-run`
//! prints it and [`crate::provision::execute`] carries it out.

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use serde::Serialize;

use crate::spec::{DaxPolicy, NvmeTcpTarget, SecretSource};

mod action;
mod check;
pub mod host_words;

pub use action::{Action, HostStep};
pub use check::{Check, Resolve};

/// A command argument: literal, a value produced by an earlier step, or a secret read at
/// execution time (never printed).
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "kind", content = "value", rename_all = "kebab-case")]
pub enum Value {
    Lit(String),
    Var(String),
    Secret(SecretSource),
}

impl Value {
    pub fn lit(s: impl Into<String>) -> Value {
        Value::Lit(s.into())
    }
    pub fn var(s: impl Into<String>) -> Value {
        Value::Var(s.into())
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Lit(s) => f.write_str(&journal::command::shell_quote(s)),
            Value::Var(v) => write!(f, "<{v}>"),
            // Quoted like a literal, so that the placeholder reads as one word.
            Value::Secret(s) => f.write_str(&journal::command::shell_quote(&s.to_string())),
        }
    }
}

/// A command whose arguments may refer to earlier results.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Template {
    pub program: String,
    pub args: Vec<Value>,
}

impl Template {
    pub fn new(program: &str) -> Template {
        Template { program: program.to_string(), args: Vec::new() }
    }
    pub fn lit(mut self, a: impl Into<String>) -> Template {
        self.args.push(Value::Lit(a.into()));
        self
    }
    pub fn lits<I: IntoIterator<Item = S>, S: Into<String>>(mut self, args: I) -> Template {
        self.args.extend(args.into_iter().map(|a| Value::Lit(a.into())));
        self
    }
    pub fn val(mut self, v: Value) -> Template {
        self.args.push(v);
        self
    }
}

impl fmt::Display for Template {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.program)?;
        for a in &self.args {
            write!(f, " {a}")?;
        }
        Ok(())
    }
}

/// One step of a plan.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Step {
    /// The device this step belongs to, if any.
    pub device: Option<String>,
    pub action: Action,
    pub reason: String,
}

/// Every step, in order.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Plan {
    pub steps: Vec<Step>,
    /// Where each device will be mounted.
    pub mountpoints: Vec<(String, PathBuf)>,
    /// The directory that holds everything the run creates on local disk.
    pub work_dir: PathBuf,
    pub emulated: bool,
}

impl Plan {
    pub(crate) fn push(&mut self, device: Option<&str>, action: Action, reason: impl Into<String>) {
        self.steps.push(Step { device: device.map(str::to_string), action, reason: reason.into() });
    }
}

impl Plan {
    /// Adds a check that the device `device` (a device of this plan) has room for `bytes`, after
    /// that device's other checks, so that it runs before anything is written. For callers that
    /// put more than PostgreSQL's directories there (a data set's golden copy, which a real study
    /// may place on one of its devices rather than on the small system disk).
    pub fn add_room_check(&mut self, device: &str, bytes: u64, what: &str) {
        let namespace = self.steps.iter().find_map(|s| match &s.action {
            Action::Check(Check::PmemFsdax { namespace, .. }) if s.device.as_deref() == Some(device) => {
                Some(namespace.clone())
            }
            _ => None,
        });
        let disk = self
            .steps
            .iter()
            .find_map(|s| match &s.action {
                Action::Check(Check::NotInUse { device: d, .. }) if s.device.as_deref() == Some(device) => {
                    Some(d.clone())
                }
                _ => None,
            })
            .unwrap_or_else(|| Value::var(device));
        let at = self
            .steps
            .iter()
            .rposition(|s| s.device.as_deref() == Some(device) && matches!(s.action, Action::Check(_)))
            .map(|i| i + 1)
            .unwrap_or_else(|| self.first_destructive_step().unwrap_or(self.steps.len()));
        self.steps.insert(
            at,
            Step {
                device: Some(device.to_string()),
                action: Action::Check(match namespace {
                    Some(namespace) => Check::PmemRoom { namespace, bytes, what: what.to_string() },
                    None => Check::Room { device: disk, bytes, what: what.to_string() },
                }),
                reason: format!("{what} goes on this device: refuse now rather than fail when it is full"),
            },
        );
    }

    /// Index of the first step that may write to a device or change the machine beyond
    /// attaching a remote subsystem; every safety check comes before it.
    pub fn first_destructive_step(&self) -> Option<usize> {
        self.steps.iter().position(|s| s.action.is_destructive() && !s.action.is_attach())
    }

    /// What teardown will do, newest first, as a reader would type it.
    pub fn teardown(&self) -> Vec<String> {
        self.steps.iter().rev().filter_map(|s| s.action.teardown()).collect()
    }
}

impl fmt::Display for Plan {
    /// One line per command, its reason under it; the tool requirements on one line; a rule
    /// after the last safety check; the teardown at the end.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.steps.len();
        let width = (2 * n.to_string().len() + 1).max(3);
        let first_destructive = self.first_destructive_step();
        let mut i = 0;
        while i < n {
            if Some(i) == first_destructive && i > 0 && !self.emulated {
                writeln!(
                    f,
                    "{:>width$}  ---- nothing above writes to any device{}; every check above passes before anything below runs ----",
                    "",
                    if self.steps[..i].iter().any(|s| s.action.is_attach()) {
                        " (nvme connect only attaches the remote subsystem, so that it can be checked)"
                    } else {
                        ""
                    }
                )?;
            }
            let s = &self.steps[i];
            if let Action::RequireTool { .. } = s.action {
                let mut j = i;
                let mut tools = Vec::new();
                while j < n {
                    let Action::RequireTool { program, package } = &self.steps[j].action else { break };
                    tools.push(format!("{program} ({package})"));
                    j += 1;
                }
                let label = if j - i > 1 { format!("{}-{}", i + 1, j) } else { format!("{}", i + 1) };
                writeln!(f, "{label:>width$}. require: {}", tools.join(", "))?;
                writeln!(
                    f,
                    "{:>width$}  why: used below; missing programs stop the run before anything is touched",
                    ""
                )?;
                i = j;
                continue;
            }
            let who = s.device.as_deref().map(|d| format!("[{d}] ")).unwrap_or_default();
            writeln!(f, "{:>width$}. {who}{}", i + 1, s.action.describe())?;
            writeln!(f, "{:>width$}  why: {}", "", s.reason)?;
            i += 1;
        }
        let teardown = self.teardown();
        if !teardown.is_empty() {
            writeln!(f, "\nTeardown (from the run record, newest first; it never formats or writes to a device):")?;
            for t in teardown {
                writeln!(f, "  - {t}")?;
            }
        }
        Ok(())
    }
}

/// How long the kernel keeps reconnecting a lost NVMe/TCP controller before it fails the I/O
/// (`--ctrl-loss-tmo`, seconds; the kernel's default is 600, ten minutes of hung I/O when the
/// target is gone), and how long it waits between attempts (`--reconnect-delay`; default 10).
/// Both set on every connect, so that no `/etc/nvme/config.json` (read by nvme-cli before 2.11)
/// or default decides them; queue count and size stay the kernel's (the provisioning log
/// records the command line).
pub const CTRL_LOSS_TMO: &str = "60";
pub const RECONNECT_DELAY: &str = "2";

/// What a connection setting pgtier does not pass is: the kernel's default.
pub const KERNEL_DEFAULT: &str = "kernel default";

/// The connection settings that decide how an NVMe/TCP device behaves, by nvme-cli option, with
/// the value pgtier passes (`None`: not passed, so the kernel's default: one I/O queue per CPU
/// and 128 entries each, as the kernel and the target negotiate them).
pub const CONNECT_SETTINGS: [(&str, Option<&str>); 4] = [
    ("ctrl-loss-tmo", Some(CTRL_LOSS_TMO)),
    ("reconnect-delay", Some(RECONNECT_DELAY)),
    ("nr-io-queues", None),
    ("queue-size", None),
];

/// [`CONNECT_SETTINGS`] as the manifest records them: each option's value, or "kernel default".
pub fn connect_settings() -> std::collections::BTreeMap<String, String> {
    CONNECT_SETTINGS.iter().map(|(k, v)| (k.to_string(), v.unwrap_or(KERNEL_DEFAULT).to_string())).collect()
}

/// The settings of [`CONNECT_SETTINGS`] that pgtier passes, as (option, value).
pub fn passed_connect_settings() -> impl Iterator<Item = (&'static str, &'static str)> {
    CONNECT_SETTINGS.iter().filter_map(|(k, v)| v.map(|v| (*k, v)))
}

/// `ctrl-loss-tmo 60, ..., queue-size kernel default`, for the dry run.
pub fn connect_settings_text() -> String {
    let parts: Vec<String> = CONNECT_SETTINGS
        .iter()
        .map(|(k, v)| format!("{k} {}", v.unwrap_or("(not passed: the kernel's default)")))
        .collect();
    parts.join(", ")
}

/// The `nvme connect` of a target, as run with nvme-cli 2.0 to 2.10 (and 1.15 and later 1.x
/// without a secret; 1.14 and older get no `--output-format`); `<...>` values are read when it
/// runs.
pub fn connect_command(t: &NvmeTcpTarget, secret_file: Option<&std::path::Path>) -> Template {
    let mut c = Template::new("nvme").lits([
        "connect",
        "--transport",
        "tcp",
        "--traddr",
        &t.address,
        "--trsvcid",
        &t.port.to_string(),
        "--nqn",
        &t.nqn,
    ]);
    let (nqn, id) = host_identity(t);
    c = c.lit("--hostnqn").val(nqn).lit("--hostid").val(id);
    for (option, value) in passed_connect_settings() {
        c = c.lit(format!("--{option}")).lit(value);
    }
    if let Some(f) = secret_file {
        c = c.lit("--config").lit(f.display().to_string());
    }
    c.lits(["--output-format", "json"])
}

/// `1.5 GiB`-style sizes for people.
pub fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut v = n as f64;
    let mut i = 0;
    while v >= 1024.0 && i + 1 < UNITS.len() {
        v /= 1024.0;
        i += 1;
    }
    if i == 0 { format!("{n} B") } else { format!("{v:.1} {}", UNITS[i]) }
}

/// How an added per-I/O latency is made on the emulated NBD target.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "mechanism", rename_all = "kebab-case")]
pub enum EmulatedDelay {
    /// nbdkit's delay filter (`delay-read=Nms`): whole milliseconds only.
    DelayFilter { ms: u64 },
    /// A small nbdkit plugin compiled by nbdkit's cc plugin that sleeps `us` microseconds
    /// (`clock_nanosleep`, timer slack 1 ns) before each read and write. Needs a C compiler.
    MicrosecondPlugin { us: u64 },
}

impl EmulatedDelay {
    /// The mechanism for `d`: the delay filter for whole milliseconds, the plugin otherwise
    /// (whole microseconds; anything finer is cut off). `None` for no delay.
    pub fn for_latency(d: Duration) -> Option<EmulatedDelay> {
        let us = d.as_micros() as u64;
        if us == 0 {
            None
        } else if us.is_multiple_of(1000) {
            Some(EmulatedDelay::DelayFilter { ms: us / 1000 })
        } else {
            Some(EmulatedDelay::MicrosecondPlugin { us })
        }
    }

    /// The delay actually applied.
    pub fn applied(self) -> Duration {
        match self {
            EmulatedDelay::DelayFilter { ms } => Duration::from_millis(ms),
            EmulatedDelay::MicrosecondPlugin { us } => Duration::from_micros(us),
        }
    }

    /// `+200 µs per read and write (nbdkit cc plugin)`-style text.
    pub fn describe(self) -> String {
        match self {
            EmulatedDelay::DelayFilter { ms } => format!("+{ms} ms per read and write (nbdkit delay filter)"),
            EmulatedDelay::MicrosecondPlugin { us } => {
                format!("+{us} µs per read and write (nbdkit cc plugin, clock_nanosleep)")
            }
        }
    }
}

/// The nbdkit plugin behind [`EmulatedDelay::MicrosecondPlugin`], compiled at start by nbdkit's
/// cc plugin (`nbdkit cc FILE file=IMAGE delay_us=N`). Debian ships no nbdkit-plugin.h with
/// nbdkit, so the plugin declares the leading part of `struct nbdkit_plugin` (API version 2)
/// itself; nbdkit reads only `_struct_size` bytes of it, which is how it stays compatible with
/// plugins built against older headers.
pub const MICROSECOND_DELAY_PLUGIN: &str = include_str!("usdelay.c");

pub(crate) const UUID_HOSTNQN: &str = "nqn.2014-08.org.nvmexpress:uuid:";

/// The UUID of a `nqn.2014-08.org.nvmexpress:uuid:<uuid>` host NQN (libnvme derives the host
/// ID from it the same way).
pub fn uuid_of_host_nqn(nqn: &str) -> Option<String> {
    let u = nqn.trim().strip_prefix(UUID_HOSTNQN)?;
    let ok = u.len() == 36
        && u.char_indices().all(|(i, c)| if [8, 13, 18, 23].contains(&i) { c == '-' } else { c.is_ascii_hexdigit() });
    ok.then(|| u.to_ascii_lowercase())
}

/// The host NQN and host ID a connect passes: the experiment file's pair; a uuid host NQN with
/// the ID it implies; with neither, the machine's (`/etc/nvme/hostnqn`, `/etc/nvme/hostid`,
/// read when the connect runs). An incomplete pair is refused by its check; it prints as such.
pub fn host_identity(t: &NvmeTcpTarget) -> (Value, Value) {
    match (&t.host_nqn, &t.host_id) {
        (Some(n), Some(i)) => (Value::lit(n), Value::lit(i)),
        (Some(n), None) => match uuid_of_host_nqn(n) {
            Some(u) => (Value::lit(n), Value::lit(u)),
            None => (Value::lit(n), Value::var("host_id not given")),
        },
        (None, Some(i)) => (Value::var("host_nqn not given"), Value::lit(i)),
        (None, None) => (Value::var("from /etc/nvme/hostnqn"), Value::var("from /etc/nvme/hostid")),
    }
}
