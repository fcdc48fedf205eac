//! Turning device specs into a plan, for emulated devices or for the real ones.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use std::time::Duration;

use crate::plan::{Action, Check, EmulatedDelay, MICROSECOND_DELAY_PLUGIN, Plan, Resolve, Template, Value};
use crate::spec::{Backing, DaxPolicy, DeviceClass, DeviceSpec, NvmeTcpTarget, PartitionSpec, RealDevice};

/// Where and for whom a plan provisions.
#[derive(Clone, Debug)]
pub struct PlanContext {
    /// Short unique token of the run (names of interfaces and namespaces; at most 6 characters).
    pub short_id: String,
    /// Everything the run creates on local disk lives below this directory (created fresh).
    pub work_dir: PathBuf,
    /// Where helper processes write their logs.
    pub log_dir: PathBuf,
    /// Owner of each mounted filesystem's root (the database's OS user).
    pub owner_uid: u32,
    pub owner_gid: u32,
    /// Emulate the devices instead of using the real ones.
    pub emulate: bool,
}

impl PlanContext {
    pub fn mountpoint(&self, device: &str) -> PathBuf {
        self.work_dir.join("mnt").join(device)
    }
}

/// The Debian package that provides each program the plans use.
pub fn package_of(program: &str) -> &'static str {
    match program {
        "losetup" | "blockdev" | "mount" | "umount" | "blkid" | "wipefs" | "blkdiscard" | "lsblk" => "util-linux / mount",
        "mkfs.xfs" | "xfs_info" | "xfs_io" => "xfsprogs",
        "ip" => "iproute2",
        "nbdkit" => "nbdkit",
        "nbdfuse" => "libnbd-bin",
        "nbdinfo" => "libnbd-bin",
        "fusermount3" => "fuse3",
        "parted" => "parted",
        "nvme" => "nvme-cli",
        "ndctl" => "ndctl",
        "fio" => "fio",
        "dd" => "coreutils",
        "udevadm" => "udev",
        "dmesg" => "util-linux",
        "cc" => "gcc",
        _ => "(unknown)",
    }
}

/// Builds the plan for `devices`.
pub fn build_plan(devices: &[DeviceSpec], ctx: &PlanContext) -> Plan {
    let mut plan = Plan { work_dir: ctx.work_dir.clone(), emulated: ctx.emulate, ..Default::default() };
    let tools = tools_needed(devices, ctx.emulate);
    for t in &tools {
        plan.push(None, Action::RequireTool { program: t.clone(), package: package_of(t).into() }, "used below");
    }
    if ctx.emulate {
        plan.push(
            None,
            Action::MakeDir { path: ctx.work_dir.clone(), mode: 0o711, remove_on_teardown: true },
            "holds the backing files and mount points of this run only (traversable, not listable, so the database user can reach its mounts); removed at teardown",
        );
        for (i, d) in devices.iter().enumerate() {
            emulated_device(&mut plan, d, i, ctx);
        }
    } else {
        real_checks(&mut plan, devices, ctx);
        plan.push(
            None,
            Action::MakeDir { path: ctx.work_dir.clone(), mode: 0o711, remove_on_teardown: true },
            "holds the mount points of this run (traversable, not listable); removed at teardown",
        );
        for d in devices {
            real_device(&mut plan, d, ctx);
        }
    }
    plan.mountpoints = devices.iter().map(|d| (d.name.clone(), ctx.mountpoint(&d.name))).collect();
    plan
}

fn tools_needed(devices: &[DeviceSpec], emulate: bool) -> Vec<String> {
    let mut t = BTreeSet::new();
    t.insert("mkfs.xfs");
    t.insert("mount");
    t.insert("umount");
    t.insert("xfs_info");
    for d in devices {
        if emulate {
            match d.emulation.backing {
                Backing::LoopFile | Backing::TmpfsLoop => {
                    t.extend(["losetup", "blockdev"]);
                }
                Backing::Zram => {}
                Backing::Nbd => {
                    t.extend(["losetup", "blockdev", "ip", "nbdkit", "nbdfuse", "fusermount3"]);
                    if let Some(EmulatedDelay::MicrosecondPlugin { .. }) =
                        d.emulation.latency.and_then(EmulatedDelay::for_latency)
                    {
                        t.insert("cc");
                    }
                }
            }
        } else {
            t.insert("blkid");
            t.insert("wipefs");
            match d.real {
                RealDevice::Local { .. } => {}
                RealDevice::Pmem { .. } => {
                    t.insert("ndctl");
                }
                RealDevice::NvmeTcp(_) => {
                    t.insert("nvme");
                }
            }
            if d.partition.is_some() {
                t.insert("parted");
            }

            if d.discard {
                t.insert("blkdiscard");
            }
            if d.precondition.is_some() {
                t.insert("fio");
            }
        }
    }
    t.into_iter().map(str::to_string).collect()
}

/// mkfs.xfs arguments for a device: reflink off where DAX is asked for, a 2 MiB stripe unit on
/// real PMem; NBD devices skip the discard pass.
fn mkfs_template(d: &DeviceSpec, device: Value, force: bool, skip_discard: bool) -> Template {
    mkfs_template_for(d, device, force, skip_discard, false)
}

fn mkfs_template_for(d: &DeviceSpec, device: Value, force: bool, skip_discard: bool, real: bool) -> Template {
    let mut t = Template::new("mkfs.xfs");
    if force {
        t = t.lit("-f");
    }
    if skip_discard && !d.mkfs_options.iter().any(|o| o == "-K") {
        t = t.lit("-K");
    }
    let pmem = d.class == DeviceClass::Pmem;
    if (d.dax != DaxPolicy::Off || pmem) && !d.mkfs_options.iter().any(|o| o.contains("reflink")) {
        // Before Linux 6.0, XFS refused to mount a reflink filesystem with DAX ("DAX and reflink
        // cannot be used together!"); since the fsdax reflink work (6.0) it refuses only on a
        // partition ("DAX and reflink cannot work with multi-partitions!"), and DAX with reflink
        // was called broken on 6.1. The PMem guides' answer, for every kernel: reflink off.
        t = t.lits(["-m", "reflink=0"]);
    }
    if pmem && real && !d.mkfs_options.iter().any(|o| o.contains("su=") || o.contains("sunit=")) {
        // The PMem guides' layout: 2 MiB allocation units, so that file data is 2 MiB aligned
        // and DAX can map it with huge pages (PMD faults) rather than 4 KiB pages. Real PMem
        // only: emulated PMem has no DAX to align for, and on a device below about 1 GiB
        // mkfs.xfs refuses the stripe unit ("Log size must be at least 64MB").
        t = t.lits(["-d", "su=2m,sw=1"]);
    }
    // Wiping is the experiment file's decision (allow_wipe), not an mkfs option's.
    let options = d.mkfs_options.iter().filter(|o| !matches!(o.as_str(), "-f" | "--force"));
    t.lits(options.cloned()).lits(["-L", &label(&d.name)]).val(device)
}

/// While this file exists, nbdkit's error filter fails every I/O of the device with EIO (only
/// for devices emulated with `error_injection`).
pub fn error_file(ctx: &PlanContext, device: &str) -> PathBuf {
    ctx.work_dir.join("faults").join(format!("{device}.inject-errors"))
}

/// XFS labels are at most 12 characters.
fn label(name: &str) -> String {
    name.chars().filter(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_').take(12).collect()
}

fn mount_options(d: &DeviceSpec) -> Vec<String> {
    let mut o = d.mount_options.clone();
    if d.dax != DaxPolicy::Off && !o.iter().any(|x| x.starts_with("dax")) {
        o.push("dax=always".into());
    }
    o
}

fn finish_filesystem(plan: &mut Plan, d: &DeviceSpec, source: Value, ctx: &PlanContext, emulated: bool) {
    let name = Some(d.name.as_str());
    let mp = ctx.mountpoint(&d.name);
    plan.push(name, Action::MakeDir { path: mp.clone(), mode: 0o700, remove_on_teardown: false }, "mount point");
    let options = mount_options(d);
    plan.push(
        name,
        Action::Mount { source, target: mp.clone(), fstype: "xfs".into(), options: options.clone() },
        if d.dax != DaxPolicy::Off {
            "mount with DAX so PostgreSQL's reads and writes bypass the page cache, as on PMem".to_string()
        } else {
            "mount with the experiment's options".to_string()
        },
    );
    plan.push(
        name,
        Action::VerifyMount { target: mp.clone(), requested: options, dax: d.dax, emulated },
        "the kernel may silently ignore options (DAX falls back to page-cache I/O on devices without DAX support)",
    );
    plan.push(
        name,
        Action::Chown { path: mp, uid: ctx.owner_uid, gid: ctx.owner_gid, mode: 0o700 },
        "PostgreSQL runs as its own OS user and must own its directories",
    );
}

fn emulated_device(plan: &mut Plan, d: &DeviceSpec, index: usize, ctx: &PlanContext) {
    match d.emulation.backing {
        Backing::LoopFile => loop_file_device(plan, d, ctx),
        Backing::TmpfsLoop => tmpfs_device(plan, d, ctx),
        Backing::Zram => zram_device(plan, d),
        Backing::Nbd => nbd_device(plan, d, index, ctx),
    }
    finish_filesystem(plan, d, Value::var(&d.name), ctx, true);
}

/// A sparse file on the local disk behind a direct-I/O loop device.
fn loop_file_device(plan: &mut Plan, d: &DeviceSpec, ctx: &PlanContext) {
    let name = Some(d.name.as_str());
    let e = &d.emulation;
    let img_dir = ctx.work_dir.join("img");
    let img = img_dir.join(format!("{}.img", d.name));
    plan.push(name, Action::MakeDir { path: img_dir, mode: 0o700, remove_on_teardown: false }, "backing files");
    plan.push(
        name,
        Action::SparseFile { path: img.clone(), size: e.size_bytes },
        format!("local-disk file standing in for the {} device", d.class),
    );
    plan.push(
        name,
        Action::AttachLoop { file: img, direct_io: true, bind: d.name.clone() },
        "a real block device over the file; direct I/O so the host page cache does not absorb the I/O",
    );
    plan.push(
        name,
        Action::Run { command: mkfs_template(d, Value::var(&d.name), false, false), timeout_secs: 600 },
        "XFS with the experiment's options",
    );
}

/// A file on a tmpfs behind a loop device (RAM standing in for PMem).
fn tmpfs_device(plan: &mut Plan, d: &DeviceSpec, ctx: &PlanContext) {
    let name = Some(d.name.as_str());
    let e = &d.emulation;
    let tmp = ctx.work_dir.join("tmpfs").join(&d.name);
    plan.push(
        name,
        Action::MakeDir { path: tmp.clone(), mode: 0o700, remove_on_teardown: false },
        "tmpfs mount point",
    );
    plan.push(
        name,
        Action::Mount {
            source: Value::lit("tmpfs"),
            target: tmp.clone(),
            fstype: "tmpfs".into(),
            options: vec![format!("size={}", e.size_bytes + (1 << 20)), "mode=0700".into()],
        },
        "RAM-backed storage standing in for persistent memory",
    );
    let img = tmp.join(format!("{}.img", d.name));
    plan.push(name, Action::SparseFile { path: img.clone(), size: e.size_bytes }, "file in RAM");
    plan.push(
        name,
        Action::AttachLoop { file: img, direct_io: false, bind: d.name.clone() },
        "a real block device over the RAM file",
    );
    plan.push(
        name,
        Action::Run { command: mkfs_template(d, Value::var(&d.name), false, false), timeout_secs: 600 },
        "XFS (reflink off where DAX is asked for)",
    );
}

/// A zram device (RAM standing in for PMem).
fn zram_device(plan: &mut Plan, d: &DeviceSpec) {
    let name = Some(d.name.as_str());
    let e = &d.emulation;
    plan.push(
        name,
        Action::CreateZram { size: e.size_bytes, algorithm: e.zram_algorithm.clone(), bind: d.name.clone() },
        "a RAM-backed block device standing in for persistent memory (its memory is not charged to the server's cgroup)",
    );
    plan.push(
        name,
        Action::Run { command: mkfs_template(d, Value::var(&d.name), false, false), timeout_secs: 600 },
        "XFS (reflink off where DAX is asked for)",
    );
}

/// A file served by nbdkit in a network namespace across a veth link, presented by nbdfuse and
/// a direct-I/O loop device (NVMe/TCP's stand-in: no nbd kernel module here).
fn nbd_device(plan: &mut Plan, d: &DeviceSpec, index: usize, ctx: &PlanContext) {
    let name = Some(d.name.as_str());
    let e = &d.emulation;
    let img_dir = ctx.work_dir.join("img");
    let img = img_dir.join(format!("{}.img", d.name));
    plan.push(
        name,
        Action::MakeDir { path: img_dir.clone(), mode: 0o700, remove_on_teardown: false },
        "backing files",
    );
    plan.push(
        name,
        Action::SparseFile { path: img.clone(), size: e.size_bytes },
        "the remote target's storage",
    );
    let netns = format!("pgt-{}-{index}", ctx.short_id);
    let host_if = format!("pgt{}{index}h", ctx.short_id);
    let target_if = format!("pgt{}{index}t", ctx.short_id);
    let (host_ip, target_ip) = link_addresses(&ctx.short_id, index);
    plan.push(
        name,
        Action::CreateNetns { name: netns.clone() },
        "a network namespace standing in for the storage target host",
    );
    plan.push(
        name,
        Action::CreateVeth {
            host_if,
            target_if,
            netns: netns.clone(),
            host_cidr: format!("{host_ip}/30"),
            target_cidr: format!("{target_ip}/30"),
        },
        "a link between this host and the target, so NBD traffic crosses a real network interface",
    );
    let port = 10809u16;
    let (nbdkit, delay) = nbdkit_command(plan, d, ctx, &img, &target_ip, port);
    plan.push(
        name,
        Action::StartDaemon {
            label: format!("nbdkit ({})", d.name),
            command: nbdkit,
            netns: Some(netns),
            log: ctx.log_dir.join(format!("nbdkit-{}.log", d.name)),
            ready_tcp: Some((target_ip.clone(), port)),
        },
        {
            // Measured in docs/benchmarks.md ("Emulated NVMe/TCP: the stack's own latency").
            const OWN: &str = "nbdkit, nbdfuse and the loop device add about 0.2 ms of their own per I/O (4 KiB O_DIRECT reads, docs/benchmarks.md)";
            match delay {
                Some(delay) => format!(
                    "NBD target in its namespace, adding {}{}; {OWN}",
                    delay.describe(),
                    latency_note(e.latency.unwrap_or_default(), delay)
                ),
                None => format!("NBD target in its namespace; {OWN}"),
            }
        },
    );
    let fuse_dir = ctx.work_dir.join("fuse").join(&d.name);
    plan.push(
        name,
        Action::MakeDir { path: fuse_dir.clone(), mode: 0o700, remove_on_teardown: false },
        "nbdfuse mount point",
    );
    let file = fuse_dir.join("nbd");
    plan.push(
        name,
        Action::StartFuse {
            mountpoint: fuse_dir.clone(),
            command: Template::new("nbdfuse")
                .lit(fuse_dir.display().to_string())
                .lit(format!("nbd://{target_ip}:{port}")),
            file: file.clone(),
            log: ctx.log_dir.join(format!("nbdfuse-{}.log", d.name)),
        },
        "the NBD client side: the remote device appears as a file (no nbd kernel module here)",
    );
    plan.push(
        name,
        Action::AttachLoop { file, direct_io: true, bind: d.name.clone() },
        "a real block device over the remote file, direct I/O",
    );
    plan.push(
        name,
        Action::Run { command: mkfs_template(d, Value::var(&d.name), false, true), timeout_secs: 600 },
        "XFS; -K skips the discard pass, which is very slow over NBD",
    );
}

/// nbdkit's command line for device `d` serving `img` on `target_ip:port`: the file plugin, or
/// the delay filter or pgtier's microsecond plugin (written next to the image) when a latency
/// is asked for, and the error filter when faults may be injected; with the delay applied.
fn nbdkit_command(
    plan: &mut Plan,
    d: &DeviceSpec,
    ctx: &PlanContext,
    img: &Path,
    target_ip: &str,
    port: u16,
) -> (Template, Option<EmulatedDelay>) {
    let name = Some(d.name.as_str());
    let e = &d.emulation;
    let img_dir = ctx.work_dir.join("img");
    let mut nbdkit =
        Template::new("nbdkit").lits(["--foreground", "--ipaddr", target_ip, "--port", &port.to_string()]);
    if e.error_injection {
        let faults = ctx.work_dir.join("faults");
        plan.push(
            name,
            Action::MakeDir { path: faults.clone(), mode: 0o700, remove_on_teardown: false },
            "switches for injected faults",
        );
        nbdkit = nbdkit.lit("--filter=error");
    }
    let error_args: Vec<String> = if e.error_injection {
        vec![
            "error=EIO".into(),
            "error-rate=100%".into(),
            format!("error-file={}", error_file(ctx, &d.name).display()),
        ]
    } else {
        vec![]
    };
    let delay = e.latency.and_then(EmulatedDelay::for_latency);
    match delay {
        None => nbdkit = nbdkit.lit("file").lit(img.display().to_string()),
        Some(EmulatedDelay::DelayFilter { ms }) => {
            nbdkit = nbdkit
                .lit("--filter=delay")
                .lit("file")
                .lit(img.display().to_string())
                .lit(format!("delay-read={ms}ms"))
                .lit(format!("delay-write={ms}ms"));
        }
        Some(EmulatedDelay::MicrosecondPlugin { us }) => {
            let source = img_dir.join("pgtier-usdelay.c");
            plan.push(
                name,
                Action::WriteFile {
                    path: source.clone(),
                    contents: MICROSECOND_DELAY_PLUGIN.to_string(),
                    what: "nbdkit plugin source, part of pgtier".into(),
                },
                "nbdkit's delay filter takes whole milliseconds only; this small plugin sleeps a number of microseconds before each read and write",
            );
            nbdkit = nbdkit
                .lit("cc")
                .lit(source.display().to_string())
                .lit(format!("file={}", img.display()))
                .lit(format!("delay_us={us}"));
        }
    }
    nbdkit = nbdkit.lits(error_args);
    (nbdkit, delay)
}

/// Says when the applied delay differs from the one asked for (cut to whole microseconds).
fn latency_note(asked: Duration, delay: EmulatedDelay) -> String {
    if asked == delay.applied() { String::new() } else { format!(" (asked for {asked:?}, cut to whole microseconds)") }
}

/// Link-local /30 addresses for device `index` of a run.
/// One of the 16,000-odd link-local /30 subnets (169.254.1.0 to 169.254.254.255, without
/// 169.254.169.0/24, where clouds serve instance metadata), chosen from the run's token and the
/// device index, so that concurrent runs do not collide.
fn link_addresses(short_id: &str, index: usize) -> (String, String) {
    let h = short_id.bytes().fold(2_166_136_261u32, |a, b| (a ^ b as u32).wrapping_mul(16_777_619));
    let subnets = 253 * 64; // third octet 1..=254 except 169, 64 /30 subnets each
    let n = (h.wrapping_mul(64).wrapping_add(index as u32)) % subnets;
    let mut third = 1 + n / 64;
    if third >= 169 {
        third += 1;
    }
    let base = (n % 64) * 4;
    (format!("169.254.{third}.{}", base + 1), format!("169.254.{third}.{}", base + 2))
}

/// Every safety check of every device, before anything writes to a device. An NVMe/TCP namespace
/// can only be checked once connected: its `nvme connect` comes first (it attaches the remote
/// subsystem and writes nothing; teardown disconnects it).
fn real_checks(plan: &mut Plan, devices: &[DeviceSpec], ctx: &PlanContext) {
    let tcp: Vec<&DeviceSpec> = devices.iter().filter(|d| matches!(d.real, RealDevice::NvmeTcp(_))).collect();
    if !tcp.is_empty() {
        let secret = tcp.iter().any(|d| matches!(&d.real, RealDevice::NvmeTcp(t) if t.dhchap_secret.is_some()));
        plan.push(
            None,
            Action::Check(Check::NvmeCli { secret }),
            "nvme-cli's options and output differ by version (1.16 has no DH-HMAC-CHAP options and prints nothing on connect; 2.11 changed what --config does): know which one this is before the first NVMe/TCP step",
        );
    }
    for (i, d) in devices.iter().enumerate() {
        let name = Some(d.name.as_str());
        let not_in_use = |plan: &mut Plan, why: &str| {
            plan.push(
                name,
                Action::Check(Check::IsBlockDevice { device: Value::var(disk_var(d)) }),
                "refuse anything that is not a block device",
            );
            plan.push(
                name,
                Action::Check(Check::NotInUse { device: Value::var(disk_var(d)), allow_wipe: d.allow_wipe }),
                why,
            );
        };
        match &d.real {
            RealDevice::Local { path, model, serial } => {
                plan.push(
                    name,
                    Action::Resolve { what: Resolve::Canonical { path: path.clone() }, bind: disk_var(d) },
                    "stable names (/dev/disk/by-id/...) are links to the kernel's name, which can change at boot",
                );
                if model.is_some() || serial.is_some() {
                    plan.push(
                        name,
                        Action::Check(Check::Identity {
                            device: Value::var(disk_var(d)),
                            model: model.clone(),
                            serial: serial.clone(),
                        }),
                        "make sure this is the device the experiment file names (sysfs device/model, device/serial)",
                    );
                }
                not_in_use(plan, "never touch a device that holds data or backs the system");
            }
            RealDevice::Pmem { namespace, allow_reconfigure } => {
                plan.push(
                    name,
                    Action::Check(Check::PmemFsdax {
                        namespace: namespace.clone(),
                        allow_reconfigure: *allow_reconfigure,
                    }),
                    "DAX needs an fsdax namespace",
                );
                plan.push(
                    name,
                    Action::Check(Check::PmemNotInUse { namespace: namespace.clone(), allow_wipe: d.allow_wipe }),
                    "never touch a namespace that holds data or is in use",
                );
            }
            RealDevice::NvmeTcp(t) => {
                nvme_tcp_checks(plan, devices, i, t, ctx);
                not_in_use(plan, "never touch a namespace that holds data");
            }
        }
    }
}

/// Device `devices[i]`, a namespace of subsystem `t`: the host identity checked; the first
/// device of a subsystem connects it (once it is known not to be connected already), the others
/// use that connection; then the namespace is found by its subsystem NQN.
fn nvme_tcp_checks(plan: &mut Plan, devices: &[DeviceSpec], i: usize, t: &NvmeTcpTarget, ctx: &PlanContext) {
    let d = &devices[i];
    let name = Some(d.name.as_str());
    // One connection per subsystem: a second namespace of it is found on the
    // connection the first device made.
    let first =
        devices[..i].iter().find(|o| matches!(&o.real, RealDevice::NvmeTcp(ot) if same_connection(ot, t)));
    if let Some(first) = first {
        plan.push(
            name,
            Action::Check(Check::NvmeHostIdentity {
                host_nqn: t.host_nqn.clone(),
                host_id: t.host_id.clone(),
            }),
            format!("uses the connection to {} made for device {}", t.nqn, first.name),
        );
    } else {
        plan.push(
            name,
            Action::Check(Check::NvmeHostIdentity { host_nqn: t.host_nqn.clone(), host_id: t.host_id.clone() }),
            "nvme-cli pairs a host NQN given alone with this machine's /etc/nvme/hostid, and Linux 6.5 and later reject a host ID already known with another NQN (EINVAL): pgtier passes the file's pair, or (neither given) this machine's",
        );
        plan.push(
            name,
            Action::Check(Check::NvmeNotConnected { nqn: t.nqn.clone() }),
            "teardown disconnects the subsystem, so pgtier must not reuse someone else's connection",
        );
        let sharing: Vec<String> = devices
            .iter()
            .filter(|o| matches!(&o.real, RealDevice::NvmeTcp(ot) if same_connection(ot, t)))
            .map(|o| o.name.clone())
            .collect();
        let secret_file = t.dhchap_secret.as_ref().map(|_| secret_config_file(ctx, &d.name));
        plan.push(
            name,
            Action::NvmeConnect { target: t.clone(), secret_file, devices: sharing.clone() },
            format!(
                "attach the remote subsystem so that its namespace{} can be checked (writes nothing); teardown disconnects the controller this connect creates{}",
                if sharing.len() > 1 { format!("s ({})", sharing.join(", ")) } else { String::new() },
                if t.dhchap_secret.is_some() {
                    "; the DH-HMAC-CHAP secret is read when the command runs and never reaches a command line, the plan or any record"
                } else {
                    ""
                }
            ),
        );
    }
    plan.push(
        name,
        Action::Resolve {
            what: Resolve::NvmeNamespace { nqn: t.nqn.clone(), nsid: t.nsid },
            bind: disk_var(d),
        },
        "kernel names like nvme2n1 are not stable: find the namespace by its subsystem NQN",
    );
}

fn disk_var(d: &DeviceSpec) -> String {
    if d.partition.is_some() { format!("{}.disk", d.name) } else { d.name.clone() }
}

fn run(command: Template, timeout_secs: u64) -> Action {
    Action::Run { command, timeout_secs }
}

const UUID_HOSTNQN: &str = "nqn.2014-08.org.nvmexpress:uuid:";

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

/// Where a connect's libnvme configuration (carrying the DH-HMAC-CHAP key) is written: next to
/// the run's work directory, which does not exist yet when the checks run.
pub fn secret_config_file(ctx: &PlanContext, device: &str) -> PathBuf {
    let name = ctx.work_dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    ctx.work_dir.with_file_name(format!("{name}.nvme-{device}.json"))
}

/// Devices that share one NVMe/TCP connection: the same address, port, subsystem and host.
fn same_connection(a: &NvmeTcpTarget, b: &NvmeTcpTarget) -> bool {
    a.address == b.address && a.port == b.port && a.nqn == b.nqn && a.host_nqn == b.host_nqn && a.host_id == b.host_id
}

fn real_device(plan: &mut Plan, d: &DeviceSpec, ctx: &PlanContext) {
    let name = Some(d.name.as_str());
    if let RealDevice::Pmem { namespace, allow_reconfigure } = &d.real {
        if *allow_reconfigure {
            plan.push(
                name,
                Action::PmemReconfigure { namespace: namespace.clone() },
                "the experiment file allows reconfiguring this namespace to fsdax (destroys its data)",
            );
        }
        plan.push(
            name,
            Action::Resolve { what: Resolve::PmemNamespace { namespace: namespace.clone() }, bind: disk_var(d) },
            "the namespace's block device (pmemN)",
        );
    }
    let disk = Value::var(disk_var(d));
    if d.discard {
        plan.push(
            name,
            run(Template::new("blkdiscard").val(disk.clone()), 3600),
            "start from a trimmed device (experiment file: discard = true)",
        );
    }
    if let Some(pre) = &d.precondition {
        let percent = ((pre.fill_fraction * 100.0).round() as u64).clamp(1, 100);
        plan.push(
            name,
            run(
                Template::new("fio")
                    .lits(["--name=precondition", "--filename"])
                    .val(disk.clone())
                    .lits(["--rw=write", "--bs=1M", "--direct=1", "--ioengine=libaio", "--iodepth=32"])
                    .lit(format!("--size={percent}%")),
                24 * 3600,
            ),
            format!(
                "precondition (seed 002): write {percent}% of the device so an SSD is measured in steady state, not fresh out of the box; keep the filesystem under 50% full (pgtier notes the limit after mounting)"
            ),
        );
    }
    let fs_dev = match &d.partition {
        Some(p) => partition(plan, d, p, &disk),
        None => disk.clone(),
    };
    let skip_discard = d.precondition.is_some();
    plan.push(
        name,
        run(mkfs_template_for(d, fs_dev.clone(), d.allow_wipe, skip_discard, true), 3600),
        match (d.allow_wipe, skip_discard) {
            (true, false) => "XFS with the experiment's options (-f: the experiment file allows wiping)",
            (false, false) => {
                "XFS with the experiment's options (no -f: mkfs.xfs itself refuses a device that holds a filesystem)"
            }
            (true, true) => {
                "XFS with the experiment's options (-f: wiping allowed; -K: a discard would undo the preconditioning)"
            }
            (false, true) => "XFS with the experiment's options (-K: a discard would undo the preconditioning)",
        },
    );
    if d.partition.is_some() {
        plan.push(name, Action::UnlockDisk { disk: disk_var(d) }, "the filesystem is made: let udev see the disk again");
    }
    finish_filesystem(plan, d, fs_dev, ctx, false);
}

/// A GPT label and one optimally aligned partition on `disk`, the disk held locked once udev
/// has re-read the table (until mkfs is done); returns the partition, bound to the device's name.
fn partition(plan: &mut Plan, d: &DeviceSpec, p: &PartitionSpec, disk: &Value) -> Value {
    let name = Some(d.name.as_str());
    let start = format!("{}.start", d.name);
    let least = if d.class == DeviceClass::Pmem { p.start_sector.max(4096) } else { p.start_sector };
    plan.push(
        name,
        Action::Resolve { what: Resolve::PartitionStart { disk: disk_var(d), least_sectors: least }, bind: start.clone() },
        if d.class == DeviceClass::Pmem {
            "PMem partitions start at 2 MiB at least, so that huge-page DAX mappings stay aligned; and where the device reports its geometry (a RAID stripe width that does not divide 1 MiB), at a start parted's align-check opt accepts"
        } else {
            "1 MiB, or where the device reports its geometry (a RAID stripe width that does not divide 1 MiB), a start parted's align-check opt accepts"
        },
    );
    plan.push(
        name,
        run(
            Template::new("parted")
                .lits(["-s"])
                .val(disk.clone())
                .lits(["mklabel", "gpt", "mkpart", "primary"])
                .val(Value::var(&start))
                .lit("100%"),
            120,
        ),
        "a GPT label and one partition (seed 003)",
    );
    plan.push(
        name,
        run(Template::new("parted").lits(["-s"]).val(disk.clone()).lits(["align-check", "opt", "1"]), 60),
        "fail unless partition 1 is optimally aligned (with -s parted answers by exit status only)",
    );
    plan.push(
        name,
        Action::LockDisk { disk: disk_var(d) },
        "when parted closes the disk, systemd-udevd re-reads its partition table and the partition node disappears and comes back: wait until udev has done so, then hold the disk so that it does not happen again under mkfs (udevd skips a disk another process holds locked)",
    );
    plan.push(
        name,
        Action::Resolve { what: Resolve::Partition { disk: disk_var(d), number: 1 }, bind: d.name.clone() },
        "the partition node appears asynchronously",
    );
    Value::var(&d.name)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::spec::DeviceClass;

    fn nbd(latency: Option<Duration>) -> DeviceSpec {
        let real = RealDevice::Local { path: "/dev/null-not-used".into(), model: None, serial: None };
        let mut d = DeviceSpec::new("remote", DeviceClass::NvmeTcp, real);
        d.mount_options = vec![];
        d.emulation.size_bytes = 1 << 30;
        d.emulation.latency = latency;
        d
    }

    fn ctx() -> PlanContext {
        PlanContext {
            short_id: "t1".into(),
            work_dir: "/w".into(),
            log_dir: "/l".into(),
            owner_uid: 0,
            owner_gid: 0,
            emulate: true,
        }
    }

    fn nbdkit_line(plan: &Plan) -> String {
        plan.steps
            .iter()
            .find_map(|s| match &s.action {
                Action::StartDaemon { command, .. } => Some(command.to_string()),
                _ => None,
            })
            .unwrap()
    }

    #[test]
    fn whole_milliseconds_use_the_delay_filter() {
        let plan = build_plan(&[nbd(Some(Duration::from_millis(2)))], &ctx());
        assert!(nbdkit_line(&plan).ends_with("--filter=delay file /w/img/remote.img delay-read=2ms delay-write=2ms"));
        assert!(
            !plan.steps.iter().any(|s| matches!(&s.action, Action::RequireTool { program, .. } if program == "cc"))
        );
        let d = crate::provision::describe_device(&nbd(Some(Duration::from_millis(2))), true);
        assert!(d.contains("+2 ms per read and write (nbdkit delay filter)"), "{d}");
    }

    #[test]
    fn sub_millisecond_latency_uses_the_microsecond_plugin_and_says_so() {
        let plan = build_plan(&[nbd(Some(Duration::from_micros(200)))], &ctx());
        assert!(
            nbdkit_line(&plan).ends_with("cc /w/img/pgtier-usdelay.c file=/w/img/remote.img delay_us=200"),
            "{}",
            nbdkit_line(&plan)
        );
        assert!(plan.steps.iter().any(|s| matches!(&s.action, Action::RequireTool { program, .. } if program == "cc")));
        assert!(plan.steps.iter().any(|s| matches!(&s.action, Action::WriteFile { path, contents, .. }
            if path.ends_with("pgtier-usdelay.c") && contents.contains("plugin_init"))));
        let text = plan.to_string();
        assert!(text.contains("adding +200 µs per read and write (nbdkit cc plugin"), "{text}");
        let d = crate::provision::describe_device(&nbd(Some(Duration::from_micros(200))), true);
        assert!(d.contains("+200 µs per read and write"), "{d}");
        // 1.5 ms is not whole milliseconds either; sub-microsecond parts are cut and said so.
        let plan = build_plan(&[nbd(Some(Duration::from_micros(1500)))], &ctx());
        assert!(nbdkit_line(&plan).ends_with("delay_us=1500"));
        let plan = build_plan(&[nbd(Some(Duration::from_nanos(250_500)))], &ctx());
        assert!(nbdkit_line(&plan).ends_with("delay_us=250"));
        assert!(plan.to_string().contains("cut to whole microseconds"));
    }

    #[test]
    fn no_latency_means_no_filter() {
        let plan = build_plan(&[nbd(Some(Duration::ZERO))], &ctx());
        assert!(nbdkit_line(&plan).ends_with("file /w/img/remote.img"));
    }

    #[test]
    fn link_addresses_avoid_the_metadata_subnet_and_stay_link_local() {
        for i in 0..5000 {
            let (host, target) = link_addresses(&format!("tok{i}"), i % 4);
            assert!(host.starts_with("169.254.") && target.starts_with("169.254."), "{host}");
            assert!(!host.starts_with("169.254.169.") && !host.starts_with("169.254.0."), "{host}");
            assert!(!host.starts_with("169.254.255."), "{host}");
        }
    }
}
