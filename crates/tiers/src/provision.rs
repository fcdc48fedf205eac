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
        locks: HashMap::new(),
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
            crate::spec::RealDevice::NvmeTcp(t) => {
                format!("NVMe/TCP subsystem {} at {}:{}", t.nqn, t.address, t.port)
            }
        };
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
    /// Disk locks held, by the variable naming the disk.
    locks: HashMap<String, DiskLock>,
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
            Action::Check(check) => self.check(n, check)?,
            Action::MakeDir { path, mode, remove_on_teardown } => {
                if *remove_on_teardown {
                    if self.sys.file_kind(path) != FileKind::Missing {
                        return Err(format!(
                            "{} already exists; a run only uses a directory it created itself",
                            path.display()
                        )
                        .into());
                    }
                    self.record(Undo::RemoveDirAll { path: path.clone() }, "work directory")?;
                    self.sys.create_dir_all(path, *mode).map_err(|e| format!("mkdir {}: {e}", path.display()))?;
                    self.record(Undo::Sweep { work_dir: path.clone() }, "safety net after a crash")?;
                } else {
                    self.sys.create_dir_all(path, *mode).map_err(|e| format!("mkdir {}: {e}", path.display()))?;
                }
            }
            Action::SparseFile { path, size } => {
                self.record(Undo::RemoveFile { path: path.clone() }, "backing file")?;
                self.sys.create_sparse_file(path, *size).map_err(|e| format!("create {}: {e}", path.display()))?;
            }
            Action::AttachLoop { file, direct_io, bind } => {
                self.record(Undo::DetachLoop { backing_file: file.clone() }, bind)?;
                let mut cmd = CommandLine::new("losetup").args(["--find", "--show"]);
                if *direct_io {
                    cmd = cmd.arg("--direct-io=on");
                }
                let out = self.run_plain(n, cmd.arg(file))?;
                let dev = out.stdout.trim().to_string();
                if !dev.starts_with("/dev/loop") {
                    return Err(format!("losetup printed {dev:?}, not a loop device").into());
                }
                // A loop device keeps the page cache of its previous binding when that one ended
                // in I/O errors (seen: a fresh sparse file "appears to contain an existing
                // filesystem (xfs)" right after a test killed the NBD target under the same
                // loop device); drop it, so what mkfs's checks read is the new file's.
                self.run_plain(n, CommandLine::new("blockdev").args(["--flushbufs", dev.as_str()]))?;
                if *direct_io {
                    let name = dev.trim_start_matches("/dev/");
                    let dio = self
                        .sys
                        .read_to_string(&Path::new("/sys/block").join(name).join("loop/dio"))
                        .unwrap_or_default();
                    if dio.trim() == "0" {
                        on_event(Event::Note(format!(
                            "{dev}: the kernel did not enable direct I/O on this loop device"
                        )));
                    }
                }
                self.bindings.insert(bind.clone(), dev);
            }
            Action::CreateZram { size, algorithm, bind } => {
                let id_text = self
                    .sys
                    .read_to_string(Path::new("/sys/class/zram-control/hot_add"))
                    .map_err(|e| format!("read /sys/class/zram-control/hot_add (is the zram module loaded?): {e}"))?;
                let id: u32 = id_text.trim().parse().map_err(|_| format!("hot_add printed {id_text:?}"))?;
                self.record(Undo::RemoveZram { id, boot_id: journal::undo::current_boot_id() }, bind)?;
                let sys_dir = PathBuf::from(format!("/sys/block/zram{id}"));
                if let Err(e) = self.sys.write(&sys_dir.join("comp_algorithm"), algorithm) {
                    on_event(Event::Note(format!(
                        "zram{id}: compressor {algorithm} not available ({e}); kernel default kept"
                    )));
                }
                self.sys
                    .write(&sys_dir.join("disksize"), &size.to_string())
                    .map_err(|e| format!("set /sys/block/zram{id}/disksize: {e}"))?;
                let dev = format!("/dev/zram{id}");
                wait_for(self.sys, Duration::from_secs(10), |s| {
                    matches!(s.file_kind(Path::new(&dev)), FileKind::BlockDevice { .. })
                })
                .map_err(|_| format!("{dev} did not appear"))?;
                self.bindings.insert(bind.clone(), dev);
            }
            Action::CreateNetns { name } => {
                self.record(Undo::DeleteNetns { name: name.clone() }, "network namespace")?;
                self.run_plain(n, CommandLine::new("ip").args(["netns", "add", name.as_str()]))?;
            }
            Action::CreateVeth { host_if, target_if, netns, host_cidr, target_cidr } => {
                self.record(Undo::DeleteLink { name: host_if.clone() }, "veth pair")?;
                let ip = |args: &[&str]| CommandLine::new("ip").args(args);
                self.run_plain(n, ip(&["link", "add", host_if, "type", "veth", "peer", "name", target_if]))?;
                self.run_plain(n, ip(&["link", "set", target_if, "netns", netns]))?;
                self.run_plain(n, ip(&["addr", "add", host_cidr, "dev", host_if]))?;
                self.run_plain(n, ip(&["-n", netns, "addr", "add", target_cidr, "dev", target_if]))?;
                self.run_plain(n, ip(&["link", "set", host_if, "up"]))?;
                self.run_plain(n, ip(&["-n", netns, "link", "set", target_if, "up"]))?;
                self.run_plain(n, ip(&["-n", netns, "link", "set", "lo", "up"]))?;
            }
            Action::StartDaemon { label, command, netns, log, ready_tcp } => {
                let Ready { cmd, secrets } = self.command(command)?;
                if !secrets.is_empty() {
                    return Err("a helper process cannot be given a secret on its command line".to_string().into());
                }
                let shown = cmd.to_string();
                let spec = DaemonSpec { label: label.clone(), command: cmd, netns: netns.clone(), log: log.clone() };
                let process = self.sys.spawn(&spec).map_err(|e| format!("start {shown}: {e}"))?;
                self.record(
                    Undo::StopProcess { label: label.clone(), process, signal: "TERM".into(), grace_ms: 5000 },
                    label,
                )?;
                if let Some(d) = &step.device {
                    self.helpers.entry(d.clone()).or_default().push(("nbdkit".into(), process));
                }
                self.commands.push(ExecutedCommand {
                    step: n,
                    command: format!("{shown} &"),
                    status: 0,
                    stdout: String::new(),
                    stderr: String::new(),
                    seconds: 0.0,
                });
                if let Some((addr, port)) = ready_tcp {
                    let (addr, port) = (addr.clone(), *port);
                    wait_for(self.sys, Duration::from_secs(15), |s| {
                        s.is_alive(process) && s.tcp_reachable(&addr, port)
                    })
                    .map_err(|_| format!("{label} did not accept connections on {addr}:{port}; log: {}", tail(log)))?;
                }
            }
            Action::StartFuse { mountpoint, command, file, log } => {
                let Ready { cmd, secrets } = self.command(command)?;
                if !secrets.is_empty() {
                    return Err("a helper process cannot be given a secret on its command line".to_string().into());
                }
                let shown = cmd.to_string();
                let spec = DaemonSpec { label: "nbdfuse".into(), command: cmd, netns: None, log: log.clone() };
                let process = self.sys.spawn(&spec).map_err(|e| format!("start {shown}: {e}"))?;
                self.record(Undo::StopFuse { mountpoint: mountpoint.clone(), process }, "nbdfuse")?;
                if let Some(d) = &step.device {
                    self.helpers.entry(d.clone()).or_default().push(("nbdfuse".into(), process));
                }
                self.commands.push(ExecutedCommand {
                    step: n,
                    command: format!("{shown} &"),
                    status: 0,
                    stdout: String::new(),
                    stderr: String::new(),
                    seconds: 0.0,
                });
                wait_for(self.sys, Duration::from_secs(15), |s| s.file_kind(file) == FileKind::File)
                    .map_err(|_| format!("nbdfuse did not present {}; log: {}", file.display(), tail(log)))?;
            }
            Action::Resolve { what, bind } => {
                let dev = self.resolve(n, what)?;
                self.bindings.insert(bind.clone(), dev);
            }
            Action::Run { command, timeout_secs } => {
                let ready = self.command(command)?;
                self.ndctl_cache = None;
                self.run_ready(n, &ready, Duration::from_secs(*timeout_secs))?;
            }
            Action::NvmeConnect { target, secret_file, devices } => {
                self.connect(n, target, secret_file.as_deref(), devices, on_event)?;
            }
            Action::LockDisk { disk } => {
                let dev = self.value(&Value::var(disk))?;
                self.settle_udev(n);
                let lock = self.sys.lock_disk(Path::new(&dev)).map_err(|e| format!("lock {dev} (flock): {e}"))?;
                self.locks.insert(disk.clone(), lock);
            }
            Action::UnlockDisk { disk } => {
                if let Some(lock) = self.locks.remove(disk) {
                    self.sys.unlock_disk(lock);
                }
                self.settle_udev(n);
            }
            Action::WriteFile { path, contents, what } => {
                self.record(Undo::RemoveFile { path: path.clone() }, what)?;
                self.sys.write(path, contents).map_err(|e| format!("write {}: {e}", path.display()))?;
            }
            Action::PmemReconfigure { namespace } => {
                let list = self.ndctl_list(n)?;
                let current = ndctl::find(&list, namespace)
                    .ok_or_else(|| format!("ndctl list -N -i shows no namespace {namespace:?}"))?;
                if current.mode == ndctl::PmemMode::Fsdax && current.enabled && current.blockdev.is_some() {
                    on_event(Event::Note(format!(
                        "{namespace} is in fsdax mode already ({}); not reconfigured",
                        current.blockdev.as_deref().unwrap_or_default()
                    )));
                } else {
                    let before = current.mode.as_str().to_string();
                    self.ndctl_cache = None;
                    let out = self.run_inner(
                        n,
                        &CommandLine::new("ndctl").args(["create-namespace", "-f", "-e", namespace, "-m", "fsdax"]),
                        &[],
                        Duration::from_secs(600),
                    )?;
                    let made = ndctl::parse_create_namespace(&out.stdout).map_err(|e| e.to_string())?;
                    if made.mode != ndctl::PmemMode::Fsdax {
                        return Err(format!(
                            "ndctl create-namespace made {} in {} mode, not fsdax",
                            made.dev,
                            made.mode.as_str()
                        )
                        .into());
                    }
                    on_event(Event::Note(format!(
                        "{namespace} reconfigured from {before} to fsdax ({})",
                        made.blockdev.as_deref().unwrap_or("no block device reported")
                    )));
                }
            }
            Action::Mount { source, target, fstype, options } => {
                let source = self.value(source)?;
                // A filesystem on an NVMe/TCP namespace holds the connection under it.
                let holds = step.device.as_ref().and_then(|d| self.connections.get(d)).cloned().unwrap_or_default();
                self.journal
                    .record_holding(Undo::Unmount { target: target.clone() }, "mount", &holds)
                    .map_err(|e| e.to_string())?;
                let mut cmd = CommandLine::new("mount").args(["-t", fstype.as_str()]);
                if !options.is_empty() {
                    cmd = cmd.args(["-o", &options.join(",")]);
                }
                self.run_plain(n, cmd.arg(&source).arg(target))?;
            }
            Action::VerifyMount { target, requested, dax, emulated } => {
                let check = self.verify_mount(target, requested, *dax, *emulated)?;
                if !check.dax.note.is_empty() {
                    on_event(Event::Note(format!("{}: {}", target.display(), check.dax.note)));
                }
                if *dax == DaxPolicy::Required && !check.dax.honoured && !*emulated {
                    return Err(format!(
                        "DAX was required but is not in effect on {}: {} (set dax = \"optional\" to carry on without it)",
                        target.display(),
                        check.dax.note
                    )
                    .into());
                }
                self.mounts.insert(target.clone(), check);
            }
            Action::Chown { path, uid, gid, mode } => {
                self.sys.chown(path, *uid, *gid, *mode).map_err(|e| format!("chown {}: {e}", path.display()))?;
            }
        }
        Ok(())
    }

    fn check(&mut self, n: usize, check: &Check) -> Result<(), StepError> {
        match check {
            Check::IsBlockDevice { device } => {
                let dev = self.value(device)?;
                self.probe(n, |s| safety::check_block_device(s, Path::new(&dev))).map_err(StepError::Refused)
            }
            Check::Identity { device, model, serial } => {
                let dev = self.value(device)?;
                self.probe(n, |s| safety::check_identity(s, Path::new(&dev), model.as_deref(), serial.as_deref()))
                    .map_err(StepError::Refused)
            }
            Check::NotInUse { device, allow_wipe } => {
                let dev = self.value(device)?;
                self.probe(n, |s| safety::check_not_in_use(s, Path::new(&dev), *allow_wipe)).map_err(StepError::Refused)
            }
            Check::PmemFsdax { namespace, allow_reconfigure } => {
                let list = self.ndctl_list(n)?;
                let Some(ns) = ndctl::find(&list, namespace) else {
                    return Err(format!(
                        "ndctl list -N -i shows no namespace {namespace:?} (found: {})",
                        if list.is_empty() {
                            "none: no PMem here".to_string()
                        } else {
                            list.iter().map(|n| n.dev.clone()).collect::<Vec<_>>().join(", ")
                        }
                    )
                    .into());
                };
                if !ns.enabled && !allow_reconfigure {
                    // ndctl 76 lists a disabled namespace in raw mode, whatever it was made as.
                    return Err(format!(
                        "namespace {namespace} is disabled (ndctl list -N -i shows it as {} mode, which is what ndctl shows for any disabled namespace); enable it (ndctl enable-namespace {namespace}) or set allow_reconfigure = true to let pgtier run ndctl create-namespace -f -e {namespace} -m fsdax (destroys its data)",
                        ns.mode.as_str()
                    )
                    .into());
                }
                if ns.mode != ndctl::PmemMode::Fsdax && !allow_reconfigure {
                    return Err(format!(
                        "namespace {namespace} is in {} mode, not fsdax; set allow_reconfigure = true to let pgtier run ndctl create-namespace -f -e {namespace} -m fsdax (destroys its data)",
                        ns.mode.as_str()
                    )
                    .into());
                }
                Ok(())
            }
            Check::PmemNotInUse { namespace, allow_wipe } => {
                let list = self.ndctl_list(n)?;
                let ns = ndctl::find(&list, namespace)
                    .ok_or_else(|| format!("ndctl list -N -i shows no namespace {namespace:?}"))?
                    .clone();
                if let Some(b) = &ns.blockdev {
                    let dev = PathBuf::from("/dev").join(b.trim_start_matches("/dev/"));
                    self.probe(n, |s| safety::check_block_device(s, &dev)).map_err(StepError::Refused)?;
                    self.probe(n, |s| safety::check_not_in_use(s, &dev, *allow_wipe)).map_err(StepError::Refused)?;
                }
                if let Some(c) = &ns.chardev {
                    let dev = PathBuf::from("/dev").join(c.trim_start_matches("/dev/"));
                    self.probe(n, |s| safety::check_not_open(s, &dev)).map_err(StepError::Refused)?;
                    if !allow_wipe {
                        // A device-DAX namespace holds whatever an application wrote through its
                        // mapping; no tool can tell whether that matters.
                        return Err(format!(
                            "namespace {namespace} is a device-DAX namespace ({}); reconfiguring it destroys whatever an application stored in it. Set allow_wipe = true as well if it may be wiped",
                            dev.display()
                        )
                        .into());
                    }
                }
                if ns.blockdev.is_none() && ns.chardev.is_none() && !allow_wipe {
                    // Disabled or raw: there is no device node to look for signatures or users.
                    return Err(format!(
                        "namespace {namespace} has no block or character device to inspect (it is disabled or raw), so pgtier cannot tell whether it holds data; set allow_wipe = true if it may be wiped"
                    )
                    .into());
                }
                Ok(())
            }
            Check::NvmeNotConnected { nqn } => {
                let subsystems = self.nvme_subsystems(n)?;
                safety::check_nvme_not_connected(&subsystems, nqn).map_err(StepError::Refused)
            }
            Check::NvmeCli { secret } => {
                let cmd = CommandLine::new("nvme").arg("version");
                let out = self.probe(n, |s| s.run(&cmd, Duration::from_secs(30))).map_err(|e| e.to_string())?;
                let v = nvme::parse_version(&out.stdout)
                    .map_err(|e| format!("`nvme version` exited with status {}: {e}", out.status))?;
                if *secret && !v.has_dhchap() {
                    return Err(format!(
                        "nvme-cli {} cannot authenticate with DH-HMAC-CHAP: nvme connect has no --dhchap-secret (or --config) before nvme-cli 2.0, and this experiment file gives a secret; install nvme-cli 2.0 or later, or connect without a secret",
                        v.text
                    )
                    .into());
                }
                self.nvme_cli = Some(v);
                Ok(())
            }
            Check::NvmeHostIdentity { host_nqn, host_id } => match (host_nqn, host_id) {
                (Some(nqn), None) if crate::build::uuid_of_host_nqn(nqn).is_none() => Err(format!(
                    "host_nqn {nqn} is given without host_id: nvme-cli would pair it with this machine's /etc/nvme/hostid, and Linux 6.5 and later refuse a host ID already known with another host NQN (EINVAL); give host_id as well (a nqn.2014-08.org.nvmexpress:uuid:<uuid> host NQN implies its UUID)"
                )
                .into()),
                (None, Some(id)) => Err(format!(
                    "host_id {id} is given without host_nqn; give both (pgtier passes them as a pair) or neither (then the machine's /etc/nvme/hostnqn and hostid are used)"
                )
                .into()),
                _ => Ok(()),
            },
            Check::Room { device, bytes, what } => {
                let dev = self.value(device)?;
                let size_file = Path::new("/sys/class/block").join(safety::kernel_name(Path::new(&dev))).join("size");
                let sectors: u64 = self
                    .sys
                    .read_to_string(&size_file)
                    .ok()
                    .and_then(|s| s.trim().parse().ok())
                    .ok_or_else(|| format!("cannot read the size of {dev} ({})", size_file.display()))?;
                // XFS keeps a few percent for its log and metadata.
                let usable = sectors * 512 / 100 * 97;
                if usable < *bytes {
                    return Err(format!(
                        "{dev} has room for about {} after XFS's own use, and {what} needs {}",
                        crate::plan::human_bytes(usable),
                        crate::plan::human_bytes(*bytes)
                    )
                    .into());
                }
                Ok(())
            }
        }
    }

    /// `nvme connect` in the form the nvme-cli found supports, recording its undo before it runs
    /// and the controller it created right after.
    fn connect(
        &mut self,
        n: usize,
        t: &NvmeTcpTarget,
        secret_file: Option<&Path>,
        devices: &[String],
        on_event: &mut dyn FnMut(Event),
    ) -> Result<(), StepError> {
        let version =
            self.nvme_cli.clone().ok_or_else(|| "`nvme version` was not read before the connect".to_string())?;
        let from_file = |sys: &mut dyn System, p: &str| {
            sys.read_to_string(Path::new(p)).ok().map(|s| s.trim().to_string()).filter(|s| !s.is_empty())
        };
        let (host_nqn, host_id) = match (&t.host_nqn, &t.host_id) {
            (Some(q), Some(i)) => (Some(q.clone()), Some(i.clone())),
            (Some(q), None) => (Some(q.clone()), crate::build::uuid_of_host_nqn(q)),
            (None, _) => (from_file(self.sys, "/etc/nvme/hostnqn"), from_file(self.sys, "/etc/nvme/hostid")),
        };
        let secret = match &t.dhchap_secret {
            Some(src) => Some(read_secret(src)?),
            None => None,
        };
        let mut cmd = CommandLine::new("nvme").arg("connect");
        let connect_by_file = secret.is_some() && version.connect_config_connects_itself();
        if !connect_by_file {
            cmd = cmd.args([
                "--transport",
                "tcp",
                "--traddr",
                t.address.as_str(),
                "--trsvcid",
                &t.port.to_string(),
                "--nqn",
                t.nqn.as_str(),
            ]);
        }
        if let Some(q) = &host_nqn {
            cmd = cmd.args(["--hostnqn", q.as_str()]);
        }
        if let Some(i) = &host_id {
            cmd = cmd.args(["--hostid", i.as_str()]);
        }
        let mut written = None;
        if let (Some(secret), Some(file)) = (&secret, secret_file) {
            let (Some(q), Some(i)) = (&host_nqn, &host_id) else {
                return Err(format!(
                    "a DH-HMAC-CHAP secret goes to nvme-cli in libnvme's configuration, for a host NQN and host ID; this machine has no /etc/nvme/hostnqn or /etc/nvme/hostid, so give host_nqn and host_id for {} in the experiment file",
                    t.nqn
                )
                .into());
            };
            let config = serde_json::json!([{
                "hostnqn": q,
                "hostid": i,
                "dhchap_key": secret,
                "subsystems": [{
                    "nqn": t.nqn,
                    "ports": [{ "transport": "tcp", "traddr": t.address, "trsvcid": t.port.to_string() }],
                }],
            }]);
            self.record(
                Undo::RemoveFile { path: file.to_path_buf() },
                "nvme-cli configuration with the DH-HMAC-CHAP key",
            )?;
            self.sys
                .write_private(file, &serde_json::to_string_pretty(&config).expect("JSON"))
                .map_err(|e| format!("write {} (mode 0600): {e}", file.display()))?;
            written = Some(file.to_path_buf());
            cmd = cmd.arg("--config").arg(file);
        }
        cmd = cmd.args(["--output-format", "json"]);
        // Recorded before the connect: if pgtier dies before it learns the controller's name,
        // cleanup disconnects the subsystem (which was not connected before, see the check).
        let boot_id = journal::undo::current_boot_id();
        let by_nqn = self
            .journal
            .record(
                Undo::NvmeDisconnect { nqn: t.nqn.clone(), boot_id: boot_id.clone(), controller: None },
                "NVMe/TCP connection",
            )
            .map_err(|e| e.to_string())?;
        let result = self.run_redacted(n, &cmd, secret.as_deref(), Duration::from_secs(120));
        if let Some(file) = &written {
            // The key lives in the file only while nvme-cli reads it.
            if self.sys.remove_file(file).is_err() && self.sys.file_kind(file) != FileKind::Missing {
                on_event(Event::Note(format!("could not remove {}; teardown removes it", file.display())));
            }
        }
        let out = result?;
        let controller = match nvme::connected_device(&out.stdout) {
            Some(c) => Some(c),
            // nvme-cli 2.11+ with --config prints nothing: the controller is the subsystem's
            // only one (it was not connected before this step).
            None => {
                let subs = self.nvme_subsystems(n)?;
                let ctrls: Vec<String> = subs
                    .iter()
                    .filter(|s| s.nqn.trim() == t.nqn.trim())
                    .flat_map(|s| s.controllers.iter().map(|c| c.name.clone()))
                    .collect();
                if let [one] = ctrls.as_slice() { Some(one.clone()) } else { None }
            }
        };
        let holds = match &controller {
            Some(c) => {
                let id = self
                    .journal
                    .record(
                        Undo::NvmeDisconnect { nqn: t.nqn.clone(), boot_id, controller: Some(c.clone()) },
                        format!("NVMe/TCP controller {c}"),
                    )
                    .map_err(|e| e.to_string())?;
                self.journal.release(by_nqn).map_err(|e| e.to_string())?;
                vec![id]
            }
            None => {
                on_event(Event::Note(format!(
                    "nvme connect did not say which controller it created; teardown disconnects subsystem {} by NQN",
                    t.nqn
                )));
                vec![by_nqn]
            }
        };
        for d in devices {
            self.connections.insert(d.clone(), holds.clone());
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

    /// `nvme list-subsys -o json`. Without any NVMe subsystem in sysfs, nvme-cli fails with
    /// "Failed to scan topology"; that means none is connected.
    fn nvme_subsystems(&mut self, n: usize) -> Result<Vec<nvme::NvmeSubsystem>, String> {
        let cmd = CommandLine::new("nvme").args(["list-subsys", "-o", "json"]);
        let shown = cmd.to_string();
        // Recorded (with its time) by the probe recorder; a non-zero exit is judged below.
        let out = self.probe(n, |s| s.run(&cmd, Duration::from_secs(60))).map_err(|e| e.to_string())?;
        if out.status != 0 {
            if out.stdout.trim().is_empty() && out.stderr.contains("Failed to scan topology") {
                return Ok(Vec::new());
            }
            return Err(format!("`{shown}` exited with status {}: {}", out.status, out.stderr.trim()));
        }
        nvme::parse_list_subsys(&out.stdout).map_err(|e| e.to_string())
    }

    fn resolve(&mut self, n: usize, what: &Resolve) -> Result<String, StepError> {
        match what {
            Resolve::Canonical { path } => {
                Ok(self.sys.canonicalize(path).map_err(|e| format!("{}: {e}", path.display()))?.display().to_string())
            }
            Resolve::PmemNamespace { namespace } => {
                let list = self.ndctl_list(n)?;
                let ns = ndctl::find(&list, namespace).ok_or_else(|| format!("no PMem namespace {namespace}"))?;
                if ns.mode != ndctl::PmemMode::Fsdax {
                    return Err(format!("namespace {namespace} is in {} mode, not fsdax", ns.mode.as_str()).into());
                }
                let blockdev = ns
                    .blockdev
                    .clone()
                    .ok_or_else(|| format!("namespace {namespace} has no block device (mode {})", ns.mode.as_str()))?;
                let dev = format!("/dev/{}", blockdev.trim_start_matches("/dev/"));
                wait_for(self.sys, Duration::from_secs(10), |s| {
                    matches!(s.file_kind(Path::new(&dev)), FileKind::BlockDevice { .. })
                })
                .map_err(|_| format!("{dev} (namespace {namespace}) is not a block device"))?;
                Ok(dev)
            }
            Resolve::NvmeNamespace { nqn, nsid } => {
                let wanted = nsid.map(|n| format!(" with NSID {n}")).unwrap_or_default();
                // About 30 s: the namespace appears asynchronously after nvme connect.
                for attempt in 0.. {
                    let subsystems = self.nvme_subsystems(n)?;
                    let list = self.run_plain(n, CommandLine::new("nvme").args(["list", "-o", "json"]))?;
                    let namespaces = nvme::parse_list(&list.stdout).map_err(|e| e.to_string())?;
                    let why = match nvme::match_namespace_for_nqn(&namespaces, &subsystems, nqn, *nsid) {
                        // nvme-cli 2.x may list the namespace before udev made its node.
                        nvme::NqnMatch::Found(dev)
                            if matches!(self.sys.file_kind(Path::new(&dev)), FileKind::BlockDevice { .. }) =>
                        {
                            return Ok(dev);
                        }
                        nvme::NqnMatch::Found(dev) => format!("{dev} is listed but is not a block device yet"),
                        nvme::NqnMatch::Ambiguous(candidates) => {
                            // sysfs knows for certain: each namespace's controller (or subsystem)
                            // has a subsysnqn attribute.
                            let mut sure = Vec::new();
                            for c in &candidates {
                                let attr = Path::new("/sys/class/block")
                                    .join(safety::kernel_name(Path::new(c)))
                                    .join("device/subsysnqn");
                                if self.sys.read_to_string(&attr).is_ok_and(|v| v.trim() == nqn.trim()) {
                                    sure.push(c.clone());
                                }
                            }
                            if let [one] = sure.as_slice() {
                                return Ok(one.clone());
                            }
                            return Err(format!(
                                "cannot tell which block device is the namespace{wanted} of subsystem {nqn}: `nvme list -o json` names no subsystem, its device names fit {} (read as subsystem instance or as controller), and sysfs device/subsysnqn did not settle it; refusing to guess. `nvme list -v` shows the subsystem of each namespace",
                                candidates.join(" and ")
                            )
                            .into());
                        }
                        nvme::NqnMatch::NotListed => "nvme list-subsys does not list it".to_string(),
                        nvme::NqnMatch::NoLiveController => {
                            "it is listed, but none of its controllers is live".to_string()
                        }
                        nvme::NqnMatch::NoNamespace => format!("it is listed, but no namespace{wanted} belongs to it"),
                    };
                    if attempt >= 60 {
                        return Err(format!("subsystem {nqn}: no namespace{wanted} after 30 s ({why})").into());
                    }
                    self.sys.sleep(Duration::from_millis(500));
                }
                unreachable!("the loop returns")
            }
            Resolve::PartitionStart { disk, least_sectors } => {
                let disk = self.value(&Value::var(disk))?;
                let real = self.sys.canonicalize(Path::new(&disk)).unwrap_or_else(|_| PathBuf::from(&disk));
                let class = Path::new("/sys/class/block").join(safety::kernel_name(&real));
                let mut read = |p: &str| -> u64 {
                    self.sys.read_to_string(&class.join(p)).ok().and_then(|s| s.trim().parse().ok()).unwrap_or(0)
                };
                let geometry = parted::Geometry {
                    logical_sector: read("queue/logical_block_size").max(512),
                    minimum_io: read("queue/minimum_io_size"),
                    optimal_io: read("queue/optimal_io_size"),
                    alignment_offset: read("alignment_offset"),
                };
                Ok(format!("{}s", parted::aligned_start(&geometry, *least_sectors)))
            }
            Resolve::Partition { disk, number } => {
                let disk = self.value(&Value::var(disk))?;
                let part = parted::partition_node(&disk, *number);
                wait_for(self.sys, Duration::from_secs(30), |s| {
                    matches!(s.file_kind(Path::new(&part)), FileKind::BlockDevice { .. })
                })
                .map_err(|_| {
                    format!(
                        "partition node {part} did not appear within 30 s (does this kernel support partition tables?)"
                    )
                })?;
                Ok(part)
            }
        }
    }

    fn verify_mount(
        &mut self,
        target: &Path,
        requested: &[String],
        dax: DaxPolicy,
        emulated: bool,
    ) -> Result<MountCheck, String> {
        let table = self
            .sys
            .read_to_string(Path::new("/proc/self/mounts"))
            .map_err(|e| format!("read /proc/self/mounts: {e}"))?;
        let entry = journal::mounts::parse_proc_mounts(&table)
            .into_iter()
            .rev()
            .find(|m| m.target == target)
            .ok_or_else(|| format!("{} is not in /proc/mounts after mount", target.display()))?;
        let not_shown = requested.iter().filter(|o| !entry.options.iter().any(|e| e == *o)).cloned().collect();
        let in_opts = matches!(entry.option("dax"), Some("always") | Some(""));
        let mut status = DaxStatus {
            requested: dax,
            in_mount_options: in_opts,
            statx_dax: None,
            honoured: false,
            note: String::new(),
        };
        if dax != DaxPolicy::Off {
            let probe = target.join(".pgtier-dax-probe");
            let statx = match self.sys.write(&probe, "dax probe\n") {
                Ok(()) => {
                    let r = self.sys.statx_dax(&probe).ok();
                    let _ = self.sys.remove_file(&probe);
                    r
                }
                Err(_) => None,
            };
            status.statx_dax = statx;
            // Both must say so: the mount option (the kernel kept dax=always) and the file (the
            // kernel put it in DAX state).
            status.honoured = in_opts && statx == Some(true);
            status.note = if status.honoured {
                "DAX in effect (dax=always in /proc/mounts, statx reports the DAX attribute)".into()
            } else if emulated {
                format!(
                    "DAX was asked for but NOT honoured: /proc/mounts shows dax={}, statx DAX attribute {}; this emulated device has no DAX support, so I/O goes through the page cache",
                    entry.option("dax").unwrap_or("(none)"),
                    match statx {
                        Some(true) => "set",
                        Some(false) => "not set",
                        None => "unknown",
                    }
                )
            } else {
                format!(
                    "DAX was asked for but NOT honoured: /proc/mounts shows {}, statx DAX attribute {}; {}",
                    match entry.option("dax") {
                        Some("") => "dax (legacy option)".to_string(),
                        Some(v) => format!("dax={v}"),
                        None => "no dax option".to_string(),
                    },
                    match statx {
                        Some(true) => "set",
                        Some(false) => "not set",
                        None => "not reported",
                    },
                    match (in_opts, statx) {
                        (true, None) => {
                            "DAX cannot be confirmed (statx reports the DAX attribute from Linux 5.8 on)".to_string()
                        }
                        _ => format!(
                            "the kernel fell back to page-cache I/O; {}",
                            self.kernel_says_about_dax(&entry.source)
                        ),
                    }
                )
            };
        }
        Ok(MountCheck {
            requested_options: requested.to_vec(),
            effective_options: entry.options.clone(),
            not_shown,
            dax: status,
        })
    }
}

impl Executor<'_> {
    /// What the kernel log says about DAX for the filesystem's device, as a clause.
    fn kernel_says_about_dax(&mut self, source: &str) -> String {
        let name = safety::kernel_name(Path::new(source));
        let out = self.sys.run(&CommandLine::new("dmesg"), Duration::from_secs(30));
        let Ok(out) = out.map_err(|e| e.to_string()) else {
            return format!("the kernel log could not be read; see dmesg for {name}");
        };
        let said: Vec<String> =
            dmesg::dax_messages(&out.stdout, &name).into_iter().filter(|m| !m.starts_with("DAX enabled")).collect();
        match said.last() {
            Some(m) => format!("the kernel log says: \"{name}: {m}\""),
            None => format!("the kernel log (dmesg) says nothing about DAX on {name}"),
        }
    }
}

/// A [`System`] that records the commands it runs (for the read-only probes of the checks).
struct Recorder<'a> {
    inner: &'a mut dyn System,
    step: usize,
    runs: Vec<ExecutedCommand>,
}

impl System for Recorder<'_> {
    fn run(&mut self, cmd: &CommandLine, timeout: Duration) -> Result<journal::Output, journal::CommandError> {
        let start = Instant::now();
        let out = self.inner.run(cmd, timeout)?;
        self.runs.push(ExecutedCommand {
            step: self.step,
            command: cmd.to_string(),
            status: out.status,
            stdout: out.stdout.clone(),
            stderr: out.stderr.clone(),
            seconds: start.elapsed().as_secs_f64(),
        });
        Ok(out)
    }
    fn run_secret(
        &mut self,
        cmd: &CommandLine,
        secrets: &[(usize, String)],
        timeout: Duration,
    ) -> Result<journal::Output, journal::CommandError> {
        self.inner.run_secret(cmd, secrets, timeout)
    }
    fn busy(&mut self, dev: &Path) -> std::io::Result<bool> {
        self.inner.busy(dev)
    }
    fn read_to_string(&mut self, path: &Path) -> std::io::Result<String> {
        self.inner.read_to_string(path)
    }
    fn read_bytes(&mut self, path: &Path) -> std::io::Result<Vec<u8>> {
        self.inner.read_bytes(path)
    }
    fn write(&mut self, path: &Path, contents: &str) -> std::io::Result<()> {
        self.inner.write(path, contents)
    }
    fn write_private(&mut self, path: &Path, contents: &str) -> std::io::Result<()> {
        self.inner.write_private(path, contents)
    }
    fn lock_disk(&mut self, dev: &Path) -> std::io::Result<DiskLock> {
        self.inner.lock_disk(dev)
    }
    fn unlock_disk(&mut self, lock: DiskLock) {
        self.inner.unlock_disk(lock)
    }
    fn create_dir_all(&mut self, path: &Path, mode: u32) -> std::io::Result<()> {
        self.inner.create_dir_all(path, mode)
    }
    fn create_sparse_file(&mut self, path: &Path, size: u64) -> std::io::Result<()> {
        self.inner.create_sparse_file(path, size)
    }
    fn chown(&mut self, path: &Path, uid: u32, gid: u32, mode: u32) -> std::io::Result<()> {
        self.inner.chown(path, uid, gid, mode)
    }
    fn file_kind(&mut self, path: &Path) -> FileKind {
        self.inner.file_kind(path)
    }
    fn canonicalize(&mut self, path: &Path) -> std::io::Result<PathBuf> {
        self.inner.canonicalize(path)
    }
    fn list_dir(&mut self, path: &Path) -> std::io::Result<Vec<String>> {
        self.inner.list_dir(path)
    }
    fn spawn(&mut self, daemon: &DaemonSpec) -> std::io::Result<journal::ProcessId> {
        self.inner.spawn(daemon)
    }
    fn tcp_reachable(&mut self, address: &str, port: u16) -> bool {
        self.inner.tcp_reachable(address, port)
    }
    fn is_alive(&mut self, process: journal::ProcessId) -> bool {
        self.inner.is_alive(process)
    }
    fn statx_dax(&mut self, path: &Path) -> std::io::Result<bool> {
        self.inner.statx_dax(path)
    }
    fn remove_file(&mut self, path: &Path) -> std::io::Result<()> {
        self.inner.remove_file(path)
    }
    fn has_program(&mut self, program: &str) -> bool {
        self.inner.has_program(program)
    }
    fn sleep(&mut self, d: Duration) {
        self.inner.sleep(d)
    }
}

fn read_secret(src: &SecretSource) -> Result<String, String> {
    match src {
        SecretSource::Env { name } => {
            std::env::var(name).map_err(|_| format!("environment variable {name} (the DH-HMAC-CHAP secret) is not set"))
        }
        SecretSource::File { path } => std::fs::read_to_string(path)
            .map(|s| s.trim().to_string())
            .map_err(|e| format!("read secret file {}: {e}", path.display())),
    }
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
    let lines: Vec<&str> = text.lines().collect();
    let start = lines.len().saturating_sub(5);
    let t = lines[start..].join(" | ");
    if t.is_empty() { "(empty)".into() } else { t }
}
