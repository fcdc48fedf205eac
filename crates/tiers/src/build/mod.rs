//! Turning device specs into a plan, for emulated devices or for the real ones.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use std::time::Duration;

use crate::plan::{Action, Check, EmulatedDelay, MICROSECOND_DELAY_PLUGIN, Plan, Resolve, Template, Value};
use crate::spec::{Backing, DaxPolicy, DeviceClass, DeviceSpec, NvmeTcpTarget, PartitionSpec, RealDevice};

mod emulated;
mod real;
pub mod target;

pub use crate::plan::{host_identity, uuid_of_host_nqn};
use emulated::*;
use real::*;
pub use real::{same_connection, secret_config_file};

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
        "losetup" | "blockdev" | "mount" | "umount" | "blkid" | "wipefs" | "blkdiscard" | "lsblk" => {
            "util-linux / mount"
        }
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
                // nbdkit runs on the target host, if there is one (checked there).
                Backing::Nbd if d.target_host.is_some() => t.extend(["losetup", "blockdev", "nbdfuse", "fusermount3"]),
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

fn disk_var(d: &DeviceSpec) -> String {
    if d.partition.is_some() { format!("{}.disk", d.name) } else { d.name.clone() }
}

fn run(command: Template, timeout_secs: u64) -> Action {
    Action::Run { command, timeout_secs }
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
