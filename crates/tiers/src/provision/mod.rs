//! The one executor of plans. Each step's undo is written to the run's journal before the step
//! changes anything (or, for a PID or zram id, right after it becomes known), so teardown undoes
//! exactly what was done, also after an error, Ctrl-C or a crash.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use journal::{CommandLine, Journal, RecordId, Undo};
use serde::Serialize;

use crate::facts::{self, DeviceFacts};
use crate::inspect::{dmesg, ndctl, nvme, parted};
use crate::plan::{Action, Check, Plan, Resolve, Step, Template, Value};
use crate::safety;
use crate::spec::{Backing, DaxPolicy, DeviceClass, DeviceSpec, NvmeTcpTarget, SecretSource};
use crate::system::{DaemonSpec, DiskLock, FileKind, System};

mod actions;
mod checks;
mod found;
mod host;
mod nvme_connect;
mod recorder;

pub use nvme_connect::NvmeTcpConnection;
use recorder::Recorder;

/// Whether DAX was asked for and whether the kernel honoured it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DaxStatus {
    pub requested: DaxPolicy,
    /// `dax=always` (or the legacy `dax`) is in the mount's options in /proc/mounts.
    pub in_mount_options: bool,
    /// statx reports STATX_ATTR_DAX on a file created in the filesystem.
    pub statx_dax: Option<bool>,
    pub honoured: bool,
    /// A sentence for the results.
    pub note: String,
}

/// The mount as asked and as the kernel made it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MountCheck {
    pub requested_options: Vec<String>,
    /// Options in /proc/mounts.
    pub effective_options: Vec<String>,
    /// Requested options that do not appear in /proc/mounts (some are normalised or implied
    /// by the kernel, such as `logbsize=256k`; this is a record, not an error).
    pub not_shown: Vec<String>,
    pub dax: DaxStatus,
}

/// A device ready for use: formatted, mounted, owned by the data's user.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ProvisionedDevice {
    pub name: String,
    pub class: DeviceClass,
    pub emulated: bool,
    /// One sentence on what stands behind this device.
    pub description: String,
    pub block_device: PathBuf,
    pub mountpoint: PathBuf,
    pub mount: MountCheck,
    pub facts: DeviceFacts,
    /// Helper processes behind the device (nbdkit, nbdfuse), by label.
    pub helpers: Vec<(String, journal::ProcessId)>,
    /// A real NVMe/TCP device's connection: its settings, asked for and in force.
    pub nvme_tcp: Option<NvmeTcpConnection>,
}

/// A command the executor ran, with its output (secrets redacted).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ExecutedCommand {
    pub step: usize,
    pub command: String,
    pub status: i32,
    pub stdout: String,
    pub stderr: String,
    pub seconds: f64,
}

/// The outcome of a plan.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Provisioned {
    pub devices: Vec<ProvisionedDevice>,
    pub commands: Vec<ExecutedCommand>,
    pub seconds: f64,
}

impl Provisioned {
    pub fn device(&self, name: &str) -> Option<&ProvisionedDevice> {
        self.devices.iter().find(|d| d.name == name)
    }
}

/// What went wrong at which step.
#[derive(Debug, thiserror::Error)]
pub enum ProvisionError {
    #[error("step {step} ({what}): {cause}")]
    Step { step: usize, what: String, cause: String },
    #[error("step {step} ({what}): refused: {refusal}")]
    Refused {
        step: usize,
        what: String,
        /// Boxed: a refusal carries several strings and would make every `Result` large.
        refusal: Box<safety::Refusal>,
    },
    #[error("interrupted before step {step}")]
    Cancelled { step: usize },
}

/// Progress reports while a plan runs.
pub enum Event<'a> {
    Step { index: usize, total: usize, step: &'a Step },
    Note(String),
}

/// Carries out `plan` for `specs`, recording every undo in `journal`. Stops at the first error
/// (the caller then tears down from the journal).
pub fn execute(
    plan: &Plan,
    specs: &[DeviceSpec],
    sys: &mut dyn System,
    journal: &Journal,
    cancel: &AtomicBool,
    on_event: &mut dyn FnMut(Event),
) -> Result<Provisioned, ProvisionError> {
    let started = Instant::now();
    let mut ex = Executor {
        sys,
        journal,
        bindings: HashMap::new(),
        commands: Vec::new(),
        mounts: HashMap::new(),
        ndctl_cache: None,
        helpers: HashMap::new(),
        nvme_cli: None,
        connections: HashMap::new(),
        controllers: HashMap::new(),
        notes: Vec::new(),
        exports: HashMap::new(),
        made_dirs: Vec::new(),
        locks: HashMap::new(),
        shells: host::shells(specs),
    };
    for (i, step) in plan.steps.iter().enumerate() {
        let n = i + 1;
        if cancel.load(Ordering::SeqCst) {
            return Err(ProvisionError::Cancelled { step: n });
        }
        on_event(Event::Step { index: n, total: plan.steps.len(), step });
        ex.step(n, step, on_event).map_err(|e| match e {
            StepError::Refused(refusal) => {
                ProvisionError::Refused { step: n, what: step.action.describe(), refusal: Box::new(refusal) }
            }
            StepError::Other(cause) => ProvisionError::Step { step: n, what: step.action.describe(), cause },
        })?;
    }
    let mut devices = Vec::new();
    for d in specs {
        let Some(dev) = ex.bindings.get(&d.name).cloned() else {
            continue;
        };
        let mountpoint =
            plan.mountpoints.iter().find(|(n, _)| n == &d.name).map(|(_, p)| p.clone()).unwrap_or_default();
        let mount = ex.mounts.remove(&mountpoint).unwrap_or_else(|| MountCheck {
            requested_options: Vec::new(),
            effective_options: Vec::new(),
            not_shown: Vec::new(),
            dax: DaxStatus {
                requested: d.dax,
                in_mount_options: false,
                statx_dax: None,
                honoured: false,
                note: String::new(),
            },
        });
        let facts = facts::collect(ex.sys, Path::new(&dev), Some(&mountpoint));
        let nvme_tcp = match ex.controllers.get(&d.name) {
            Some(c) => Some(nvme_connect::connection_record(ex.sys, c.as_deref())),
            None => None,
        };
        if d.precondition.is_some()
            && let Some(x) = &facts.xfs_info
        {
            let size = x.data_blocks * x.block_size as u64;
            on_event(Event::Note(format!(
                "{}: preconditioned device (seed 002): keep this filesystem under 50% full, that is at most {} of its {}",
                d.name,
                crate::plan::human_bytes(size / 2),
                crate::plan::human_bytes(size)
            )));
        }
        devices.push(ProvisionedDevice {
            name: d.name.clone(),
            class: d.class,
            emulated: plan.emulated,
            description: describe_device(d, plan.emulated),
            block_device: PathBuf::from(dev),
            mountpoint,
            mount,
            facts,
            helpers: ex.helpers.remove(&d.name).unwrap_or_default(),
            nvme_tcp,
        });
    }
    Ok(Provisioned { devices, commands: ex.commands, seconds: started.elapsed().as_secs_f64() })
}

/// One sentence on what stands behind a device.
pub fn describe_device(d: &DeviceSpec, emulated: bool) -> String {
    if !emulated {
        return match &d.real {
            crate::spec::RealDevice::Local { path, .. } => {
                format!("{} device {}", d.class, path.display())
            }
            crate::spec::RealDevice::Pmem { namespace, .. } => {
                format!("PMem namespace {namespace} (fsdax)")
            }
            crate::spec::RealDevice::NvmeTcp(t) => match &d.target_host {
                Some(h) => format!(
                    "NVMe/TCP subsystem {} at {}:{}, served by host {} (its {} exported by the kernel's target, nvmet)",
                    t.nqn,
                    t.address,
                    t.port,
                    h.name,
                    h.export.display()
                ),
                None => format!("NVMe/TCP subsystem {} at {}:{}", t.nqn, t.address, t.port),
            },
        };
    }
    if let (Backing::Nbd, Some(h)) = (d.emulation.backing, &d.target_host) {
        return format!(
            "emulated {}: nbdkit on host {} at {}, over the network from here, nbdfuse, loop device (direct I/O){}",
            d.class,
            h.name,
            h.address,
            match d.emulation.latency.and_then(crate::plan::EmulatedDelay::for_latency) {
                Some(delay) => format!(", {}", delay.describe()),
                None => String::new(),
            }
        );
    }
    let e = &d.emulation;
    match e.backing {
        Backing::LoopFile => format!("emulated {}: loop device (direct I/O) over a sparse file on local disk", d.class),
        Backing::Zram => format!("emulated {}: zram RAM-backed block device ({})", d.class, e.zram_algorithm),
        Backing::TmpfsLoop => format!("emulated {}: loop device over a file on tmpfs", d.class),
        Backing::Nbd => format!(
            "emulated {}: nbdkit in its own network namespace over a veth link{}, nbdfuse, loop device (direct I/O)",
            d.class,
            match e.latency.and_then(crate::plan::EmulatedDelay::for_latency) {
                Some(delay) => format!(", {}", delay.describe()),
                None => String::new(),
            }
        ),
    }
}

enum StepError {
    Refused(safety::Refusal),
    Other(String),
}

impl From<String> for StepError {
    fn from(s: String) -> Self {
        StepError::Other(s)
    }
}

struct Executor<'a> {
    sys: &'a mut dyn System,
    journal: &'a Journal,
    bindings: HashMap<String, String>,
    commands: Vec<ExecutedCommand>,
    mounts: HashMap<PathBuf, MountCheck>,
    /// `ndctl list -N` as last read; dropped whenever a command may have changed it.
    ndctl_cache: Option<Vec<ndctl::PmemNamespace>>,
    /// Helper processes started, by device.
    helpers: HashMap<String, Vec<(String, journal::ProcessId)>>,
    /// `nvme version`, once read.
    nvme_cli: Option<nvme::NvmeCliVersion>,
    /// The journal records of the NVMe/TCP connection each device is a namespace of: its mount
    /// holds them (teardown disconnects only after the unmount succeeded).
    connections: HashMap<String, Vec<RecordId>>,
    /// The NVMe/TCP controller each device's connect created (`None`: nvme-cli did not say).
    controllers: HashMap<String, Option<String>>,
    /// What a check found worth saying without refusing (reported after the step).
    notes: Vec<String>,
    /// The journal records of each device's export on its target host (configfs items and
    /// links): the connection and the mount on top of them hold them.
    exports: HashMap<String, Vec<RecordId>>,
    /// The configfs directories made on target hosts (host, path), with their records.
    made_dirs: Vec<(String, String, RecordId)>,
    /// Disk locks held, by the variable naming the disk.
    locks: HashMap<String, DiskLock>,
    /// How each storage target host is reached, by name.
    shells: HashMap<String, crate::spec::RemoteShell>,
}

/// A command ready to run: secrets are placeholders in `cmd` (the only form ever shown or
/// recorded) and their values are in `secrets`, by argument index.
struct Ready {
    cmd: CommandLine,
    secrets: Vec<(usize, String)>,
}

impl Executor<'_> {
    fn record(&self, undo: Undo, note: &str) -> Result<(), String> {
        self.journal.record(undo, note).map(|_| ()).map_err(|e| e.to_string())
    }

    fn value(&self, v: &Value) -> Result<String, String> {
        match v {
            Value::Lit(s) => Ok(s.clone()),
            Value::Var(name) => self.bindings.get(name).cloned().ok_or_else(|| format!("<{name}> is not known yet")),
            Value::Secret(src) => read_secret(src),
        }
    }

    /// Resolves a template into a command; secrets stay placeholders (see [`Ready`]).
    fn command(&self, t: &Template) -> Result<Ready, String> {
        let mut cmd = CommandLine::new(&t.program);
        let mut secrets = Vec::new();
        for (i, a) in t.args.iter().enumerate() {
            match a {
                Value::Secret(src) => {
                    secrets.push((i, read_secret(src)?));
                    cmd = cmd.arg(src.to_string());
                }
                _ => cmd = cmd.arg(self.value(a)?),
            }
        }
        Ok(Ready { cmd, secrets })
    }

    fn run_ready(&mut self, step: usize, ready: &Ready, timeout: Duration) -> Result<journal::Output, String> {
        self.run_inner(step, &ready.cmd, &ready.secrets, timeout)
    }

    fn run_inner(
        &mut self,
        step: usize,
        cmd: &CommandLine,
        secrets: &[(usize, String)],
        timeout: Duration,
    ) -> Result<journal::Output, String> {
        let shown = cmd.to_string();
        let start = Instant::now();
        let out =
            if secrets.is_empty() { self.sys.run(cmd, timeout) } else { self.sys.run_secret(cmd, secrets, timeout) }
                .map_err(|e| e.to_string())?;
        self.commands.push(ExecutedCommand {
            step,
            command: shown.clone(),
            status: out.status,
            stdout: out.stdout.clone(),
            stderr: out.stderr.clone(),
            seconds: start.elapsed().as_secs_f64(),
        });
        if out.status != 0 {
            let msg = if out.stderr.trim().is_empty() { out.stdout.trim() } else { out.stderr.trim() };
            return Err(format!("`{shown}` exited with status {}: {msg}", out.status));
        }
        Ok(out)
    }

    /// Runs `cmd` (which holds no secret) with every appearance of `secret` in its output
    /// replaced by `<redacted>` before anything records or shows it (nvme-cli may echo a key it
    /// read from its configuration file).
    fn run_redacted(
        &mut self,
        step: usize,
        cmd: &CommandLine,
        secret: Option<&str>,
        timeout: Duration,
    ) -> Result<journal::Output, String> {
        let Some(secret) = secret else { return self.run_inner(step, cmd, &[], timeout) };
        let shown = cmd.to_string();
        let start = Instant::now();
        let raw = self.sys.run(cmd, timeout).map_err(|e| crate::system::redact(&e.to_string(), &[secret]))?;
        let out = journal::Output {
            status: raw.status,
            stdout: crate::system::redact(&raw.stdout, &[secret]),
            stderr: crate::system::redact(&raw.stderr, &[secret]),
        };
        self.commands.push(ExecutedCommand {
            step,
            command: shown.clone(),
            status: out.status,
            stdout: out.stdout.clone(),
            stderr: out.stderr.clone(),
            seconds: start.elapsed().as_secs_f64(),
        });
        if out.status != 0 {
            let msg = if out.stderr.trim().is_empty() { out.stdout.trim() } else { out.stderr.trim() };
            return Err(format!("`{shown}` exited with status {}: {msg}", out.status));
        }
        Ok(out)
    }

    fn run_plain(&mut self, step: usize, cmd: CommandLine) -> Result<journal::Output, String> {
        self.run_inner(step, &cmd, &[], Duration::from_secs(120))
    }

    fn step(&mut self, n: usize, step: &Step, on_event: &mut dyn FnMut(Event)) -> Result<(), StepError> {
        match &step.action {
            Action::RequireTool { program, package } => {
                if !self.sys.has_program(program) {
                    return Err(format!(
                        "{program} is not installed (Debian package: {package}); run `cargo xtask setup`"
                    )
                    .into());
                }
            }
            Action::Check(check) => {
                self.check(n, check)?;
                for note in std::mem::take(&mut self.notes) {
                    on_event(Event::Note(note));
                }
            }
            Action::MakeDir { path, mode, remove_on_teardown } => self.make_dir(path, *mode, *remove_on_teardown)?,
            Action::SparseFile { path, size } => {
                self.record(Undo::RemoveFile { path: path.clone() }, "backing file")?;
                self.sys.create_sparse_file(path, *size).map_err(|e| format!("create {}: {e}", path.display()))?;
            }
            Action::AttachLoop { file, direct_io, bind } => self.attach_loop(n, file, *direct_io, bind, on_event)?,
            Action::CreateZram { size, algorithm, bind } => self.create_zram(*size, algorithm, bind, on_event)?,
            Action::CreateNetns { name } => {
                self.record(Undo::DeleteNetns { name: name.clone() }, "network namespace")?;
                self.run_plain(n, CommandLine::new("ip").args(["netns", "add", name.as_str()]))?;
            }
            Action::CreateVeth { host_if, target_if, netns, host_cidr, target_cidr } => {
                self.create_veth(n, (host_if, target_if), netns, (host_cidr, target_cidr))?
            }
            Action::StartDaemon { label, command, netns, log, ready_tcp } => {
                let daemon = actions::Helper { role: "nbdkit", label, command, netns: netns.clone(), log };
                self.start_daemon(n, step, daemon, ready_tcp.as_ref())?
            }
            Action::StartFuse { mountpoint, command, file, log } => {
                self.start_fuse(n, step, (mountpoint, file), command, log)?
            }
            Action::Resolve { what, bind } => {
                let dev = self.resolve(n, what)?;
                self.bindings.insert(bind.clone(), dev);
                for note in std::mem::take(&mut self.notes) {
                    on_event(Event::Note(note));
                }
            }
            Action::Run { command, timeout_secs } => {
                let ready = self.command(command)?;
                self.ndctl_cache = None;
                self.run_ready(n, &ready, Duration::from_secs(*timeout_secs))?;
            }
            Action::NvmeConnect { target, secret_file, devices } => {
                self.connect(n, target, secret_file.as_deref(), devices, on_event)?;
            }
            Action::LockDisk { disk } => self.lock_disk(n, disk)?,
            Action::UnlockDisk { disk } => self.unlock_disk(n, disk),
            Action::StillUnused { disk } => self.still_unused(n, disk)?,
            Action::WipeSignatures { device, partitions_first } => {
                self.wipe_signatures(n, device, *partitions_first)?
            }
            Action::WriteFile { path, contents, what } => {
                self.record(Undo::RemoveFile { path: path.clone() }, what)?;
                self.sys.write(path, contents).map_err(|e| format!("write {}: {e}", path.display()))?;
            }
            Action::PmemReconfigure { namespace, dax } => self.pmem_reconfigure(n, namespace, *dax, on_event)?,
            Action::Mount { source, target, fstype, options } => {
                self.mount(n, step, source, target, (fstype, options))?
            }
            Action::VerifyMount { target, requested, dax, emulated } => {
                self.verify_and_keep_mount(target, requested, *dax, *emulated, on_event)?
            }
            Action::Chown { path, uid, gid, mode } => {
                self.sys.chown(path, *uid, *gid, *mode).map_err(|e| format!("chown {}: {e}", path.display()))?;
            }
            Action::OnHost { host, words, undo, kind } => {
                self.on_host(n, step.device.as_deref(), (host, *kind), words, undo.as_ref())?
            }
            Action::HostDeviceIdentity { host, device, model, serial } => {
                self.host_device_identity(n, host, device, (model.as_deref(), serial.as_deref()))?
            }
            Action::HostDeviceCheck { host, device, allow_wipe } => {
                self.host_device_check(n, host, device, *allow_wipe)?
            }
            Action::HostDevicesDistinct { host, devices } => self.host_devices_distinct(n, host, devices)?,
        }
        Ok(())
    }

    /// Runs a safety check with every command it runs recorded in the provisioning log.
    fn probe<T>(&mut self, step: usize, f: impl FnOnce(&mut dyn System) -> T) -> T {
        let mut rec = Recorder { inner: &mut *self.sys, step, runs: Vec::new() };
        let out = f(&mut rec);
        let runs = std::mem::take(&mut rec.runs);
        self.commands.extend(runs);
        out
    }

    /// `udevadm settle`, when udev is there; not fatal (device nodes are waited for anyway).
    fn settle_udev(&mut self, n: usize) {
        if self.sys.has_program("udevadm") {
            let cmd = CommandLine::new("udevadm").args(["settle", "--timeout=60"]);
            let _ = self.probe(n, |s| s.run(&cmd, Duration::from_secs(90)));
        }
    }

    /// `udevadm settle`, whose failure is the step's (its queue did not empty in 60 s), then
    /// LVM's event autoactivation waited out: lvm2 2.03.14 and later activate a volume group
    /// found on a new device through `systemd-run --no-block ... vgchange -aay --autoactivation
    /// event` (69-dm-lvm.rules), a transient `lvm-activate-<vg>` unit that udev does not wait for.
    fn settle_and_activations(&mut self, n: usize, settle: bool) -> Result<(), StepError> {
        if settle && self.sys.has_program("udevadm") {
            let cmd = CommandLine::new("udevadm").args(["settle", "--timeout=60"]);
            let out = self.probe(n, |s| s.run(&cmd, Duration::from_secs(90))).map_err(|e| e.to_string())?;
            if out.status != 0 {
                return Err(format!(
                    "`{cmd}` exited with status {}: udev's event queue did not empty in 60 s, so devices may still be changing; pgtier does not format one then{}",
                    out.status,
                    if out.stderr.trim().is_empty() { String::new() } else { format!(" ({})", out.stderr.trim()) }
                )
                .into());
            }
        }
        if !self.sys.has_program("systemctl") {
            return Ok(());
        }
        let cmd = CommandLine::new("systemctl").args([
            "list-units",
            "--all",
            "--plain",
            "--no-legend",
            "--no-pager",
            "lvm-activate-*",
        ]);
        let start = std::time::Instant::now();
        loop {
            let out = self.probe(n, |s| s.run(&cmd, Duration::from_secs(30))).map_err(|e| e.to_string())?;
            // No systemd running (a container, the VM's init): nothing can have started one.
            if out.status != 0 {
                return Ok(());
            }
            let running: Vec<String> = out
                .stdout
                .lines()
                .filter(|l| {
                    let f: Vec<&str> = l.split_whitespace().collect();
                    f.len() >= 4 && matches!(f[2], "active" | "activating" | "reloading") && f[3] != "exited"
                })
                .map(|l| l.split_whitespace().next().unwrap_or_default().to_string())
                .collect();
            if running.is_empty() {
                return Ok(());
            }
            if start.elapsed() > Duration::from_secs(60) {
                return Err(format!(
                    "LVM's autoactivation ({}) still runs after 60 s; pgtier does not format a device while a volume group may be being activated on it",
                    running.join(", ")
                )
                .into());
            }
            self.sys.sleep(Duration::from_millis(250));
        }
    }

    /// [`Action::StillUnused`]. A disk this run holds locked was settled just before it was
    /// locked ([`Action::LockDisk`]), and udev leaves its events for a locked disk queued until
    /// the lock goes, so `udevadm settle` would only wait out its timeout: not settled again.
    fn still_unused(&mut self, n: usize, disk: &str) -> Result<(), StepError> {
        let dev = self.value(&Value::var(disk))?;
        let locked = self.locks.contains_key(disk);
        self.settle_and_activations(n, !locked)?;
        self.probe(n, |s| safety::check_still_unused(s, Path::new(&dev))).map_err(StepError::Refused)
    }

    /// `ndctl list -N -i`, read once until a command may have changed it.
    fn ndctl_list(&mut self, n: usize) -> Result<Vec<ndctl::PmemNamespace>, String> {
        if let Some(list) = &self.ndctl_cache {
            return Ok(list.clone());
        }
        // -i: ndctl lists disabled (idle) namespaces only when asked (ndctl/list.c filter_namespace).
        let out = self.run_plain(n, CommandLine::new("ndctl").args(["list", "-N", "-i"]))?;
        let list = ndctl::parse_list(&out.stdout).map_err(|e| e.to_string())?;
        self.ndctl_cache = Some(list.clone());
        Ok(list)
    }
}

fn read_secret(src: &SecretSource) -> Result<String, String> {
    src.read()
}

/// Polls `ok` every 100 ms of the system's sleep, `limit` long (a fake system does not sleep).
fn wait_for(sys: &mut dyn System, limit: Duration, mut ok: impl FnMut(&mut dyn System) -> bool) -> Result<(), ()> {
    let attempts = (limit.as_millis() / 100).max(1);
    for _ in 0..=attempts {
        if ok(sys) {
            return Ok(());
        }
        sys.sleep(Duration::from_millis(100));
    }
    Err(())
}

fn tail(log: &Path) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = crate::system::since_last_start(&text)
        .lines()
        .filter(|l| !l.starts_with(crate::system::LOG_START_MARK))
        .collect();
    let start = lines.len().saturating_sub(5);
    let t = lines[start..].join(" | ");
    if t.is_empty() { "(empty)".into() } else { t }
}
