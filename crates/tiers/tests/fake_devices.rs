//! Real-device planning and execution for hardware this machine lacks (PMem, NVMe namespaces,
//! disks with partitions, device-mapper), run through `FakeSystem` answering with recorded tool
//! outputs (tests/fixtures, see SOURCES.md). Each test asserts the exact command sequence.

mod common;

use std::path::Path;

use common::*;
use tiers::DaxPolicy;
use tiers::inspect::lsblk;
use tiers::plan::{Action, Check};
use tiers::safety::Refusal;
use tiers::spec::{Precondition, RealDevice};
use tiers::system::{Canned, FakeSystem};

/// The look for LVM's autoactivation units before mkfs.
const LVM_UNITS: &str = "systemctl list-units --all --plain --no-legend --no-pager 'lvm-activate-*'";

fn pmem_machine(list_fixture: &str) -> FakeSystem {
    let mut f = fake_machine();
    f.answer("ndctl list -N", Canned::ok(fixture(list_fixture)))
        .answer("mkfs.xfs", Canned::ok(fixture("xfs/mkfs.xfs-m-reflink0.pmem0.pmem-kb100000005.txt")))
        .block_device("/dev/pmem0", 259, 0);
    f
}

/// The /proc/mounts line of XFS on PMem with DAX active. No such line was captured (SOURCES.md,
/// "Not found"); this is the form the kernel source gives (xfs_fs_show_options), with the
/// options of the captured local/proc-mounts.xfs-default.txt plus `dax=always`.
fn dax_line(source: &str, target: &Path) -> String {
    format!("{source} {} xfs rw,relatime,dax=always,inode64,logbufs=8,logbsize=32k,noquota 0 0", target.display())
}

#[test]
fn pmem_in_fsdax_mode_is_formatted_without_reflink_and_mounted_with_dax() {
    let mut f = pmem_machine("ndctl/ndctl-list-N.fsdax.json");
    let mp = mountpoint("pmem-data");
    mount_adds(&mut f, &dax_line("/dev/pmem0", &mp));
    f.dax_files.push(mp.clone());
    let specs = [pmem("pmem-data", "namespace0.0", false)];
    let o = run_plan(&specs, &fake_ctx(), &mut f);
    let p = o.result.as_ref().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        f.commands(),
        vec![
            "ndctl list -N -i".to_string(),
            "blkid -p -o export /dev/pmem0".into(),
            "wipefs -J --no-act /dev/pmem0".into(),
            "udevadm settle --timeout=60".into(),
            "udevadm settle --timeout=60".into(),
            LVM_UNITS.into(),
            "mkfs.xfs -m reflink=0 -d su=2m,sw=1 -L pmem-data /dev/pmem0".into(),
            format!("mount -t xfs -o noatime,dax=always /dev/pmem0 {}", mp.display()),
            format!("xfs_info {}", mp.display()),
        ]
    );
    let d = p.device("pmem-data").unwrap();
    assert_eq!(d.block_device, Path::new("/dev/pmem0"));
    assert!(d.mount.dax.in_mount_options && d.mount.dax.statx_dax == Some(true) && d.mount.dax.honoured);
    assert_eq!(d.description, "PMem namespace namespace0.0 (fsdax)");
    // The probe file for statx was written in the filesystem and removed again.
    assert!(f.calls.iter().any(|c| c == &format!("statx: {}/.pgtier-dax-probe", mp.display())));
    assert!(f.calls.iter().any(|c| c == &format!("rm: {}/.pgtier-dax-probe", mp.display())));
    assert!(o.journal_text.contains("\"kind\":\"unmount\""));
}

#[test]
fn pmem_in_devdax_mode_is_refused_without_allow_reconfigure() {
    let mut f = pmem_machine("ndctl/ndctl-list-N-n.devdax.after-reconfig.json");
    let o = run_plan(&[pmem("pm", "namespace0.0", false)], &fake_ctx(), &mut f);
    let e = step_error(&o);
    assert!(e.contains("namespace0.0 is in devdax mode, not fsdax"), "{e}");
    assert!(e.contains("allow_reconfigure = true"), "{e}");
    assert_eq!(f.commands(), vec!["ndctl list -N -i"]);
    assert!(!f.calls.iter().any(|c| c.starts_with("mkdir")), "nothing was created: {:?}", f.calls);
}

#[test]
fn pmem_in_devdax_mode_is_reconfigured_when_allowed() {
    let mut f = fake_machine();
    f.answer_once("ndctl list -N", Canned::ok(fixture("ndctl/ndctl-list-N-n.devdax.after-reconfig.json")))
        .answer_once("ndctl list -N", Canned::ok(fixture("ndctl/ndctl-list-N-n.fsdax-enabled-named.json")))
        .answer("ndctl create-namespace", Canned::ok(fixture("ndctl/ndctl-create-namespace-fe-rename.json")))
        .answer("mkfs.xfs", Canned::ok(fixture("xfs/mkfs.xfs-m-reflink0.pmem0.pmem-kb100000005.txt")))
        .block_device("/dev/pmem0", 259, 0)
        // A process that maps something else: the device-DAX check reads its maps.
        .file("/proc/4242/maps", "7f0000000000-7f0000200000 rw-s 00000000 00:05 12 /dev/zero (deleted)\n");
    let mp = mountpoint("pm");
    mount_adds(&mut f, &dax_line("/dev/pmem0", &mp));
    f.dax_files.push(mp.clone());
    let mut d = pmem("pm", "namespace0.0", true);
    d.allow_wipe = true;
    let o = run_plan(&[d], &fake_ctx(), &mut f);
    o.result.as_ref().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        f.commands(),
        vec![
            "ndctl list -N -i".to_string(),
            "ndctl create-namespace -f -e namespace0.0 -m fsdax --align=2M".into(),
            "ndctl list -N -i".into(),
            "udevadm settle --timeout=60".into(),
            "udevadm settle --timeout=60".into(),
            LVM_UNITS.into(),
            "mkfs.xfs -f -m reflink=0 -d su=2m,sw=1 -L pm /dev/pmem0".into(),
            format!("mount -t xfs -o noatime,dax=always /dev/pmem0 {}", mp.display()),
            format!("xfs_info {}", mp.display()),
        ]
    );
    assert!(f.calls.iter().any(|c| c == "read: /proc/4242/maps"), "device-DAX users were looked for");
    assert!(o.notes.iter().any(|n| n.contains("reconfigured from devdax to fsdax (pmem0)")), "{:?}", o.notes);
}

#[test]
fn pmem_devdax_reconfigure_also_needs_allow_wipe() {
    let mut f = pmem_machine("ndctl/ndctl-list-N-n.devdax.after-reconfig.json");
    let o = run_plan(&[pmem("pm", "namespace0.0", true)], &fake_ctx(), &mut f);
    let e = step_error(&o);
    assert!(e.contains("device-DAX namespace (/dev/dax0.0)") && e.contains("allow_wipe = true"), "{e}");
    assert_eq!(f.commands(), vec!["ndctl list -N -i"]);
}

#[test]
fn pmem_disabled_namespace_cannot_be_inspected_so_reconfigure_needs_allow_wipe() {
    let mut f = pmem_machine("ndctl/ndctl-list-Ni-n.disabled.json");
    let o = run_plan(&[pmem("pm", "namespace0.0", true)], &fake_ctx(), &mut f);
    let e = step_error(&o);
    assert!(e.contains("no block or character device to inspect") && e.contains("allow_wipe = true"), "{e}");
    assert_eq!(f.commands(), vec!["ndctl list -N -i"]);
}

#[test]
fn pmem_devdax_in_use_is_refused() {
    let mut f = pmem_machine("ndctl/ndctl-list-N-n.devdax.after-reconfig.json");
    f.file("/proc/777/maps", "7f0000000000-7f0040000000 rw-s 00000000 00:06 321 /dev/dax0.0\n");
    let mut d = pmem("pm", "namespace0.0", true);
    d.allow_wipe = true;
    let o = run_plan(&[d], &fake_ctx(), &mut f);
    assert_eq!(refusal(&o), Refusal::OpenByProcess { device: "/dev/dax0.0".into(), pids: "777".into() });
    assert_eq!(f.commands(), vec!["ndctl list -N -i"]);
}

#[test]
fn pmem_already_fsdax_is_not_reconfigured_even_when_allowed() {
    let mut f = pmem_machine("ndctl/ndctl-list-N.fsdax.json");
    let mp = mountpoint("pm");
    mount_adds(&mut f, &dax_line("/dev/pmem0", &mp));
    f.dax_files.push(mp.clone());
    let o = run_plan(&[pmem("pm", "namespace0.0", true)], &fake_ctx(), &mut f);
    o.result.as_ref().unwrap_or_else(|e| panic!("{e}"));
    assert!(!f.commands().iter().any(|c| c.starts_with("ndctl create-namespace")), "{:?}", f.commands());
    assert!(o.notes.iter().any(|n| n.contains("fsdax mode already")), "{:?}", o.notes);
}

#[test]
fn pmem_with_a_filesystem_is_refused_unless_wiping_is_allowed() {
    let mut f = pmem_machine("ndctl/ndctl-list-N.fsdax.json");
    f.answer_once("blkid -p", Canned::ok(fixture("local/blkid-p-export.xfs.txt")));
    let o = run_plan(&[pmem("pm", "namespace0.0", false)], &fake_ctx(), &mut f);
    match refusal(&o) {
        Refusal::HasSignature { device, found } => {
            assert_eq!(device, "/dev/pmem0");
            assert!(found.contains("a xfs filesystem signature on /dev/pmem0"), "{found}");
        }
        r => panic!("{r}"),
    }
    assert_eq!(
        f.commands(),
        vec!["ndctl list -N -i", "blkid -p -o export /dev/pmem0", "wipefs -J --no-act /dev/pmem0"]
    );
}

#[test]
fn dax_required_but_fallen_back_fails_the_run() {
    let mut f = pmem_machine("ndctl/ndctl-list-N.fsdax.json");
    let mp = mountpoint("pm");
    mount_adds(&mut f, &mounts_line_from("local/proc-mounts.xfs-dax-always-fallback.txt", "/dev/pmem0", &mp));
    let o = run_plan(&[pmem("pm", "namespace0.0", false)], &fake_ctx(), &mut f);
    let e = step_error(&o);
    assert!(e.contains("DAX was required but is not in effect"), "{e}");
    assert!(e.contains("/proc/mounts shows dax=never, statx DAX attribute not set"), "{e}");
    assert!(e.contains("set dax = \"optional\""), "{e}");
    // The mount happened and is in the journal, so teardown unmounts it.
    assert!(o.journal_text.contains(&format!("\"target\":\"{}\"", mp.display())));
}

#[test]
fn dax_optional_and_fallen_back_carries_on_with_a_note() {
    let mut f = pmem_machine("ndctl/ndctl-list-N.fsdax.json");
    let mp = mountpoint("pm");
    mount_adds(&mut f, &mounts_line_from("local/proc-mounts.xfs-dax-always-fallback.txt", "/dev/pmem0", &mp));
    let mut d = pmem("pm", "namespace0.0", false);
    d.dax = DaxPolicy::Optional;
    let o = run_plan(&[d], &fake_ctx(), &mut f);
    let p = o.result.as_ref().unwrap_or_else(|e| panic!("{e}"));
    let dax = &p.device("pm").unwrap().mount.dax;
    assert!(!dax.honoured && !dax.in_mount_options && dax.statx_dax == Some(false));
    assert!(dax.note.contains("NOT honoured") && dax.note.contains("fell back to page-cache I/O"), "{}", dax.note);
    assert!(o.notes.iter().any(|n| n.contains("NOT honoured")), "{:?}", o.notes);
}

#[test]
fn mount_options_the_kernel_does_not_show_are_noted() {
    // The captured fallback line shows relatime and no noatime: a requested option the kernel
    // ignored or spells differently is said, DAX aside (it has its own note).
    let mut f = pmem_machine("ndctl/ndctl-list-N.fsdax.json");
    let mp = mountpoint("pm");
    mount_adds(&mut f, &mounts_line_from("local/proc-mounts.xfs-dax-always-fallback.txt", "/dev/pmem0", &mp));
    let mut d = pmem("pm", "namespace0.0", false);
    d.dax = DaxPolicy::Optional;
    d.mount_options = vec!["noatime".into(), "logbsize=32k".into()];
    let o = run_plan(&[d], &fake_ctx(), &mut f);
    let p = o.result.as_ref().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(p.device("pm").unwrap().mount.not_shown, vec!["noatime".to_string(), "dax=always".to_string()]);
    let note = o.notes.iter().find(|n| n.contains("not shown in /proc/mounts")).expect("a note on the unseen option");
    assert!(note.contains("mount option(s) noatime asked for"), "{note}");
    assert!(!note.contains("logbsize") && !note.contains("dax"), "{note}");
}

#[test]
fn dax_in_mount_options_but_not_on_the_file_is_not_honoured() {
    // The legacy `dax` option (kernel/mount-grep-pmem0...: `rw,relatime,attr2,dax,inode64,noquota`)
    // counts as asked for, but statx must also say so.
    let mut f = pmem_machine("ndctl/ndctl-list-N.fsdax.json");
    let mp = mountpoint("pm");
    mount_adds(&mut f, &format!("/dev/pmem0 {} xfs rw,relatime,attr2,dax,inode64,noquota 0 0", mp.display()));
    let o = run_plan(&[pmem("pm", "namespace0.0", false)], &fake_ctx(), &mut f);
    let e = step_error(&o);
    assert!(e.contains("dax (legacy option), statx DAX attribute not set"), "{e}");
}

fn nvme_disk_machine() -> FakeSystem {
    let mut f = fake_machine();
    f.link("/dev/disk/by-id/nvme-SAMSUNG_MZPLL1T6HAJQ-00005_S3HBNX0K900001", "/dev/nvme0n1")
        .block_device("/dev/nvme0n1", 259, 0)
        .block_device("/dev/nvme0n1p1", 259, 1)
        .file("/sys/class/block/nvme0n1/device/model", "SAMSUNG MZPLL1T6HAJQ-00005              \n")
        .file("/sys/class/block/nvme0n1/device/serial", "S3HBNX0K900001      \n")
        .file("/sys/class/block/nvme0n1/device/firmware_rev", "KPYA8R3Q\n")
        .file("/sys/class/block/nvme0n1/queue/rotational", "0\n")
        .file("/sys/class/block/nvme0n1/queue/scheduler", "[none] mq-deadline\n")
        .answer("parted -s /dev/nvme0n1 mklabel", Canned::ok(""))
        .answer(
            "parted -s /dev/nvme0n1 align-check",
            Canned::ok(fixture("local/parted-s-align-check-opt-2.aligned.txt")),
        )
        .answer("mkfs.xfs", Canned::ok(fixture("local/mkfs.xfs.default.txt")));
    f
}

fn samsung(name: &str) -> tiers::DeviceSpec {
    let mut d = local(name, "/dev/disk/by-id/nvme-SAMSUNG_MZPLL1T6HAJQ-00005_S3HBNX0K900001");
    d.real = RealDevice::Local {
        path: "/dev/disk/by-id/nvme-SAMSUNG_MZPLL1T6HAJQ-00005_S3HBNX0K900001".into(),
        model: Some("SAMSUNG MZPLL1T6HAJQ-00005".into()),
        serial: Some("S3HBNX0K900001".into()),
    };
    d
}

#[test]
fn local_nvme_with_identity_and_partition_as_in_seed_003() {
    let mut f = nvme_disk_machine();
    let mp = mountpoint("nvme-data");
    mount_adds(&mut f, &mounts_line_from("local/proc-mounts.xfs-default.txt", "/dev/nvme0n1p1", &mp));
    let specs = [partitioned(samsung("nvme-data"))];
    let o = run_plan(&specs, &fake_ctx(), &mut f);
    let p = o.result.as_ref().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        f.commands(),
        vec![
            "blkid -p -o export /dev/nvme0n1".to_string(),
            "wipefs -J --no-act /dev/nvme0n1".into(),
            "parted -s /dev/nvme0n1 mklabel gpt mkpart primary 2048s 100%".into(),
            "parted -s /dev/nvme0n1 align-check opt 1".into(),
            "udevadm settle --timeout=60".into(),
            LVM_UNITS.into(),
            "mkfs.xfs -L nvme-data /dev/nvme0n1p1".into(),
            "udevadm settle --timeout=60".into(),
            format!("mount -t xfs -o noatime /dev/nvme0n1p1 {}", mp.display()),
            format!("xfs_info {}", mp.display()),
        ]
    );
    let d = p.device("nvme-data").unwrap();
    assert_eq!(d.block_device, Path::new("/dev/nvme0n1p1"));
    assert!(d.mount.dax.note.is_empty());
    assert!(d.facts.xfs_info.is_some());
}

/// An old volume group at the new partition's start, activated by udev after the checks
/// passed (lvm2's event autoactivation runs after `udevadm settle` returns): found again
/// immediately before mkfs, which never runs; the activation unit is waited out first.
#[test]
fn a_volume_group_activated_after_the_checks_stops_the_run_before_mkfs() {
    let mut f = nvme_disk_machine();
    f.on_run("parted -s /dev/nvme0n1 mklabel", "/sys/class/block/nvme0n1/nvme0n1p1/partition", "1\n").on_run(
        "parted -s /dev/nvme0n1 mklabel",
        "/sys/class/block/nvme0n1p1/holders/dm-0",
        "",
    );
    let activating =
        "lvm-activate-oldvg.service loaded active running /usr/sbin/lvm vgchange -aay --autoactivation event oldvg\n";
    f.answer_once("systemctl list-units", Canned::ok(activating)).answer_once("systemctl list-units", Canned::ok(""));
    let mut d = partitioned(samsung("d"));
    d.allow_wipe = true;
    let o = run_plan(&[d], &fake_ctx(), &mut f);
    assert_eq!(refusal(&o), Refusal::Held { device: "/dev/nvme0n1".into(), holders: "dm-0".into() });
    let commands = f.commands();
    assert_eq!(commands.iter().filter(|c| c.starts_with("systemctl list-units")).count(), 2, "waited: {commands:?}");
    assert!(!commands.iter().any(|c| c.starts_with("mkfs")), "{commands:?}");
}

/// `udevadm settle` that times out (its queue still busy) fails the step before mkfs.
#[test]
fn a_settle_that_times_out_stops_the_run_before_mkfs() {
    let mut f = nvme_disk_machine();
    f.answer("udevadm settle", Canned::fail(1, "Timed out for waiting the udev queue being empty.\n"));
    let o = run_plan(&[samsung("d")], &fake_ctx(), &mut f);
    let e = step_error(&o);
    assert!(e.contains("udev's event queue did not empty in 60 s") && e.contains("Timed out for waiting"), "{e}");
    assert!(!f.commands().iter().any(|c| c.starts_with("mkfs")), "{:?}", f.commands());
}

#[test]
fn local_nvme_facts_come_from_the_controller_in_sysfs() {
    let mut f = nvme_disk_machine();
    let mp = mountpoint("nvme-data");
    mount_adds(&mut f, &mounts_line_from("local/proc-mounts.xfs-default.txt", "/dev/nvme0n1", &mp));
    let o = run_plan(&[samsung("nvme-data")], &fake_ctx(), &mut f);
    let p = o.result.as_ref().unwrap_or_else(|e| panic!("{e}"));
    let facts = &p.device("nvme-data").unwrap().facts;
    assert_eq!(facts.model.as_deref(), Some("SAMSUNG MZPLL1T6HAJQ-00005"));
    assert_eq!(facts.serial.as_deref(), Some("S3HBNX0K900001"));
    assert_eq!(facts.firmware.as_deref(), Some("KPYA8R3Q"));
    assert_eq!(facts.rotational, Some(false));
    assert_eq!(facts.scheduler.as_deref(), Some("[none] mq-deadline"));
}

#[test]
fn misaligned_partition_stops_before_mkfs() {
    let mut f = nvme_disk_machine();
    f.answer_once(
        "parted -s /dev/nvme0n1 align-check",
        Canned {
            status: fixture("local/parted-s-align-check-opt-1.misaligned.txt.rc").trim().parse().unwrap(),
            stdout: fixture("local/parted-s-align-check-opt-1.misaligned.txt"),
            stderr: String::new(),
        },
    );
    let o = run_plan(&[partitioned(samsung("d"))], &fake_ctx(), &mut f);
    let e = step_error(&o);
    assert!(e.contains("align-check opt 1` exited with status 1"), "{e}");
    assert!(!f.commands().iter().any(|c| c.starts_with("mkfs")), "{:?}", f.commands());
}

#[test]
fn discard_precondition_and_partition_in_order_without_mkfs_discard() {
    let mut f = nvme_disk_machine();
    let mp = mountpoint("d");
    mount_adds(&mut f, &mounts_line_from("local/proc-mounts.xfs-default.txt", "/dev/nvme0n1p1", &mp));
    let mut d = partitioned(samsung("d"));
    d.discard = true;
    d.precondition = Some(Precondition { fill_fraction: 1.0 });
    d.allow_wipe = true;
    d.mkfs_options = vec!["-f".into(), "-d".into(), "su=64k,sw=4".into()];
    let o = run_plan(&[d], &fake_ctx(), &mut f);
    o.result.as_ref().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        f.commands(),
        vec![
            "blkdiscard /dev/nvme0n1".to_string(),
            "fio --name=precondition --filename /dev/nvme0n1 --rw=write --bs=1M --direct=1 --ioengine=libaio --iodepth=32 --size=100%".into(),
            "wipefs --all /dev/nvme0n1".into(),
            "parted -s /dev/nvme0n1 mklabel gpt mkpart primary 2048s 100%".into(),
            "parted -s /dev/nvme0n1 align-check opt 1".into(),
            "udevadm settle --timeout=60".into(),
            "wipefs --all /dev/nvme0n1p1".into(),
            LVM_UNITS.into(),
            "mkfs.xfs -f -K -d su=64k,sw=4 -L d /dev/nvme0n1p1".into(),
            "udevadm settle --timeout=60".into(),
            format!("mount -t xfs -o noatime /dev/nvme0n1p1 {}", mp.display()),
            format!("xfs_info {}", mp.display()),
        ],
        "allow_wipe: no signature probe, the signatures wiped before parted and mkfs; -K keeps mkfs from discarding the preconditioned device"
    );
    assert!(o.notes.iter().any(|n| n.contains("keep this filesystem under 50% full")), "{:?}", o.notes);
}

#[test]
fn an_mkfs_force_option_without_allow_wipe_is_dropped() {
    let mut f = nvme_disk_machine();
    let mp = mountpoint("d");
    mount_adds(&mut f, &mounts_line_from("local/proc-mounts.xfs-default.txt", "/dev/nvme0n1", &mp));
    let mut d = samsung("d");
    d.mkfs_options = vec!["-f".into(), "-b".into(), "size=4096".into()];
    let o = run_plan(&[d], &fake_ctx(), &mut f);
    o.result.as_ref().unwrap_or_else(|e| panic!("{e}"));
    assert!(f.commands().contains(&"mkfs.xfs -b size=4096 -L d /dev/nvme0n1".to_string()), "{:?}", f.commands());
}

#[test]
fn identity_mismatch_is_refused_before_anything_runs() {
    let mut f = nvme_disk_machine();
    let mut d = samsung("d");
    d.real = RealDevice::Local {
        path: "/dev/disk/by-id/nvme-SAMSUNG_MZPLL1T6HAJQ-00005_S3HBNX0K900001".into(),
        model: Some("HPE MO001600KXPTR".into()),
        serial: None,
    };
    let o = run_plan(&[d], &fake_ctx(), &mut f);
    assert_eq!(
        refusal(&o),
        Refusal::IdentityMismatch {
            device: "/dev/nvme0n1".into(),
            actual_field: "model".into(),
            expected: "HPE MO001600KXPTR".into(),
            actual: "SAMSUNG MZPLL1T6HAJQ-00005".into(),
        }
    );
    assert!(f.commands().is_empty(), "{:?}", f.commands());
    assert!(!f.calls.iter().any(|c| c.starts_with("mkdir")));
}

#[test]
fn identity_serial_missing_in_sysfs_is_a_mismatch() {
    let mut f = nvme_disk_machine();
    f.files.remove(Path::new("/sys/class/block/nvme0n1/device/serial"));
    let o = run_plan(&[samsung("d")], &fake_ctx(), &mut f);
    match refusal(&o) {
        Refusal::IdentityMismatch { actual_field, actual, .. } => {
            assert_eq!(actual_field, "serial");
            assert!(actual.starts_with("nothing"), "{actual}");
        }
        r => panic!("{r}"),
    }
}

#[test]
fn identity_of_a_partition_is_read_from_its_disk() {
    let mut f = nvme_disk_machine();
    f.link("/dev/disk/by-id/nvme-SAMSUNG-part1", "/dev/nvme0n1p1")
        .file("/sys/class/block/nvme0n1p1/partition", "1\n")
        .link("/sys/class/block/nvme0n1p1", "/sys/devices/pci0000:00/0000:00:03.0/nvme/nvme0/nvme0n1/nvme0n1p1");
    let dev = Path::new("/dev/nvme0n1p1");
    assert_eq!(
        tiers::safety::disk_sysfs_dir(&mut f, dev),
        Path::new("/sys/devices/pci0000:00/0000:00:03.0/nvme/nvme0/nvme0n1")
    );
}

/// A machine laid out as the util-linux lsblk dump (lsblk/lsblk-J-b-o.util-linux-simple-nvme-sysroot.json):
/// sysfs partition entries and /proc/self/mounts built from it (fstype is not in the dump).
fn lsblk_machine() -> FakeSystem {
    let mut f = fake_machine();
    let devs = lsblk::parse(&fixture("lsblk/lsblk-J-b-o.util-linux-simple-nvme-sysroot.json")).unwrap();
    let mut mounts = String::new();
    for (i, disk) in devs.iter().enumerate() {
        f.block_device(format!("/dev/{}", disk.name), 8 + i as u32, 0);
        for (j, part) in disk.children.iter().enumerate() {
            f.file(format!("/sys/class/block/{}/{}/partition", disk.name, part.name), format!("{}\n", j + 1));
            f.block_device(format!("/dev/{}", part.name), 8 + i as u32, 1 + j as u32);
            for m in &part.mountpoints {
                mounts.push_str(&format!("/dev/{} {} xfs rw,relatime 0 0\n", part.name, m));
            }
        }
    }
    f.file("/proc/self/mounts", mounts);
    f
}

#[test]
fn a_disk_with_a_mounted_partition_is_refused() {
    let mut f = lsblk_machine();
    let o = run_plan(&[local("d", "/dev/sdb")], &fake_ctx(), &mut f);
    assert_eq!(
        refusal(&o),
        Refusal::Mounted { device: "/dev/sdb".into(), target: "/home/archive".into(), via: Some("/dev/sdb1".into()) }
    );
    assert!(f.commands().is_empty());
}

#[test]
fn a_disk_backing_the_system_is_refused_as_such() {
    let mut f = lsblk_machine();
    let o = run_plan(&[local("d", "/dev/sda")], &fake_ctx(), &mut f);
    assert_eq!(
        refusal(&o),
        Refusal::BacksSystem { device: "/dev/sda".into(), target: "/".into(), via: "/dev/sda4".into() }
    );
    let o = run_plan(&[local("d", "/dev/nvme0n1")], &fake_ctx(), &mut f);
    assert_eq!(
        refusal(&o),
        Refusal::BacksSystem { device: "/dev/nvme0n1".into(), target: "/home".into(), via: "/dev/nvme0n1p2".into() }
    );
}

#[test]
fn a_root_filesystem_shown_as_dev_root_is_found_by_device_number() {
    let mut f = fake_machine();
    f.block_device("/dev/sdc", 8, 32)
        .block_device("/dev/sdc2", 8, 34)
        .file("/sys/class/block/sdc/sdc2/partition", "2\n")
        .file("/proc/self/mounts", "/dev/root / ext4 rw,relatime 0 0\n")
        .file("/proc/self/mountinfo", "22 1 8:34 / / rw,relatime shared:1 - ext4 /dev/root rw\n");
    let o = run_plan(&[local("d", "/dev/sdc")], &fake_ctx(), &mut f);
    assert_eq!(
        refusal(&o),
        Refusal::BacksSystem { device: "/dev/sdc".into(), target: "/".into(), via: "/dev/sdc2".into() }
    );
}

#[test]
fn a_device_held_by_device_mapper_is_refused() {
    let mut f = fake_machine();
    f.block_device("/dev/sdd", 8, 48).file("/sys/class/block/sdd/holders/dm-0", "");
    let o = run_plan(&[local("d", "/dev/sdd")], &fake_ctx(), &mut f);
    assert_eq!(refusal(&o), Refusal::Held { device: "/dev/sdd".into(), holders: "dm-0".into() });
    assert!(f.commands().is_empty());
}

#[test]
fn a_device_used_as_swap_through_a_partition_is_refused() {
    let mut f = fake_machine();
    f.block_device("/dev/sde", 8, 64)
        .block_device("/dev/sde1", 8, 65)
        .file("/sys/class/block/sde/sde1/partition", "1\n");
    f.file(
        "/proc/swaps",
        "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n/dev/sde1                               partition\t8388604\t\t0\t\t-2\n",
    );
    let o = run_plan(&[local("d", "/dev/sde")], &fake_ctx(), &mut f);
    assert_eq!(refusal(&o), Refusal::Swap { device: "/dev/sde".into(), via: Some("/dev/sde1".into()) });
}

#[test]
fn a_device_the_kernel_reports_busy_is_refused() {
    let mut f = fake_machine();
    f.block_device("/dev/sdf", 8, 80);
    f.busy_devices.push("/dev/sdf".into());
    let o = run_plan(&[local("d", "/dev/sdf")], &fake_ctx(), &mut f);
    assert_eq!(refusal(&o), Refusal::Busy { device: "/dev/sdf".into() });
}

/// A process holding a partition open, seen every time the scan asks (about 2 s), is named
/// with its PID, command and the partition; one that lets go while the scan asks again (udev's
/// probe) is not a user. Nothing runs in either case before the verdict.
#[test]
fn a_disk_a_process_holds_through_a_partition_is_refused_naming_the_process() {
    let machine = || {
        let mut f = fake_machine();
        f.block_device("/dev/sdh", 8, 112)
            .block_device("/dev/sdh1", 8, 113)
            .file("/sys/class/block/sdh/sdh1/partition", "1\n");
        f
    };
    let tgtd = tiers::users::Opener {
        pid: 4242,
        command: "tgtd".into(),
        device: (8, 113),
        how: "open read-write (fd 9, /dev/sdh1)".into(),
    };
    let mut f = machine();
    f.open_by.push(tgtd.clone());
    let mut d = local("d", "/dev/sdh");
    d.allow_wipe = true;
    let o = run_plan(std::slice::from_ref(&d), &fake_ctx(), &mut f);
    assert_eq!(
        refusal(&o),
        Refusal::OpenedBy {
            device: "/dev/sdh".into(),
            processes: "PID 4242 (tgtd) has it open read-write (fd 9, /dev/sdh1) (through /dev/sdh1)".into()
        }
    );
    assert_eq!(f.calls.iter().filter(|c| c.starts_with("openers?: [(8, 112), (8, 113)]")).count(), 5, "asked 5 times");
    assert!(f.commands().is_empty(), "{:?}", f.commands());
    assert!(refusal(&o).to_string().contains("stop it, or name another device"), "{}", refusal(&o));
}

/// A partition named alone while a program has its whole disk open (a VM's raw disk): the scan
/// asks for the disk too, and the refusal says so.
#[test]
fn a_partition_whose_disk_a_process_holds_is_refused() {
    let mut f = fake_machine();
    f.block_device("/dev/sdj1", 8, 145)
        .link("/sys/class/block/sdj1", "/sys/devices/pci0/sdj/sdj1")
        .link("/sys/dev/block/8:145", "/sys/devices/pci0/sdj/sdj1")
        .file("/sys/devices/pci0/sdj/sdj1/partition", "1\n")
        .file("/sys/class/block/sdj1/partition", "1\n")
        .file("/sys/devices/pci0/sdj/dev", "8:144\n");
    f.open_by.push(tiers::users::Opener {
        pid: 5150,
        command: "qemu-system-x86".into(),
        device: (8, 144),
        how: "open read-write (fd 31, /dev/sdj)".into(),
    });
    let mut d = local("d", "/dev/sdj1");
    d.allow_wipe = true;
    let o = run_plan(&[d], &fake_ctx(), &mut f);
    match refusal(&o) {
        Refusal::OpenedBy { device, processes } => {
            assert_eq!(device, "/dev/sdj1");
            assert!(
                processes
                    .contains("PID 5150 (qemu-system-x86) has it open read-write (fd 31, /dev/sdj) (through /dev/sdj)"),
                "{processes}"
            );
        }
        r => panic!("{r}"),
    }
    assert!(f.commands().is_empty(), "{:?}", f.commands());
}

/// An export of the kernel's (nvmet, LIO, a loop device) refuses the device before the scan
/// of processes; a flock held through a descriptor the scan cannot see refuses it after.
#[test]
fn an_exported_or_locked_disk_is_refused() {
    let mut f = fake_machine();
    f.block_device("/dev/sdi", 8, 128);
    let lio = "/sys/kernel/config/target/core/iblock_0/store/udev_path (/dev/sdi: a LIO backstore)";
    f.exported.insert("/dev/sdi".into(), vec![lio.into()]);
    let o = run_plan(&[local("d", "/dev/sdi")], &fake_ctx(), &mut f);
    assert_eq!(refusal(&o), Refusal::Exported { device: "/dev/sdi".into(), paths: lio.into() });
    assert!(!f.calls.iter().any(|c| c.starts_with("openers?")), "{:?}", f.calls);
    let mut f = fake_machine();
    f.block_device("/dev/sdi", 8, 128);
    f.locked.push("/dev/sdi".into());
    let o = run_plan(&[local("d", "/dev/sdi")], &fake_ctx(), &mut f);
    assert_eq!(refusal(&o), Refusal::Locked { device: "/dev/sdi".into(), via: None });
    assert!(f.commands().is_empty(), "{:?}", f.commands());
}

#[test]
fn a_partition_table_or_a_failed_probe_is_refused() {
    let mut f = fake_machine();
    f.block_device("/dev/sdg", 8, 96).answer_once("blkid -p", Canned::ok(fixture("local/blkid-p-export.gpt-disk.txt")));
    let o = run_plan(&[local("d", "/dev/sdg")], &fake_ctx(), &mut f);
    match refusal(&o) {
        Refusal::HasSignature { found, .. } => assert!(found.contains("gpt partition-table"), "{found}"),
        r => panic!("{r}"),
    }
    let mut f = fake_machine();
    f.block_device("/dev/sdg", 8, 96)
        .answer_once("blkid -p", Canned::fail(4, "blkid: error: /dev/sdg: Permission denied"));
    let o = run_plan(&[local("d", "/dev/sdg")], &fake_ctx(), &mut f);
    match refusal(&o) {
        Refusal::ProbeFailed { detail, .. } => assert!(detail.contains("Permission denied"), "{detail}"),
        r => panic!("{r}"),
    }
    // wipefs sees what blkid -p does not report (a secondary signature).
    let mut f = fake_machine();
    f.block_device("/dev/sdg", 8, 96).answer_once("wipefs", Canned::ok(fixture("local/wipefs-json.gpt-disk.json")));
    let o = run_plan(&[local("d", "/dev/sdg")], &fake_ctx(), &mut f);
    match refusal(&o) {
        Refusal::HasSignature { found, .. } => assert!(found.contains("(wipefs)"), "{found}"),
        r => panic!("{r}"),
    }
}

#[test]
fn every_check_of_every_device_comes_before_the_first_write() {
    let mut local_dev = partitioned(samsung("a"));
    local_dev.discard = true;
    local_dev.precondition = Some(Precondition { fill_fraction: 0.5 });
    let specs = [local_dev, pmem("b", "namespace0.0", true), nvme_tcp("c", "nqn.2014-08.org.example:c", None)];
    let plan = tiers::build_plan(&specs, &fake_ctx());
    let first = plan.first_destructive_step().expect("a plan that writes");
    for (i, s) in plan.steps.iter().enumerate() {
        if let Action::Check(_) = s.action {
            assert!(i < first, "check at step {} after the first write (step {}):\n{plan}", i + 1, first + 1);
        }
        if i < first && s.action.is_destructive() {
            assert!(s.action.is_attach(), "only nvme connect may precede the checks' end: {}", s.action.describe());
        }
    }
    let checks: Vec<&Check> =
        plan.steps.iter().filter_map(|s| if let Action::Check(c) = &s.action { Some(c) } else { None }).collect();
    // local: block device, identity, not in use; PMem: fsdax, not in use; NVMe/TCP: nvme-cli
    // version, host identity, not connected, block device, not in use.
    assert_eq!(checks.len(), 3 + 2 + 5, "{plan}");
    let text = plan.to_string();
    let rule = text.find("---- nothing above writes to any device").expect("the rule is shown");
    assert!(text.find("nvme connect").unwrap() < rule && rule < text.find("] blkdiscard").unwrap(), "{text}");
}

#[test]
fn dry_run_of_a_pmem_file_reads_in_order() {
    let mut d = pmem("pmem-data", "namespace0.0", true);
    d.allow_wipe = true;
    let plan = tiers::build_plan(&[d], &fake_ctx());
    let text = plan.to_string();
    println!("{text}");
    let order = [
        "require: blkid (util-linux / mount), mkfs.xfs (xfsprogs), mount (util-linux / mount), ndctl (ndctl)",
        "check ndctl list -N -i: namespace namespace0.0 exists and is in fsdax mode",
        "check the device of namespace namespace0.0 (pmemN or daxN.M) is not mounted",
        "---- nothing above writes to any device; every check above passes",
        "mkdir -p -m 711 /run/pgtier-fake/work",
        "ndctl create-namespace -f -e namespace0.0 -m fsdax --align=2M",
        "ndctl list -N -i: namespace namespace0.0 -> /dev/<blockdev>",
        "mkfs.xfs -f -m reflink=0 -d su=2m,sw=1 -L pmem-data <pmem-data>",
        "mount -t xfs -o noatime,dax=always <pmem-data> /run/pgtier-fake/work/mnt/pmem-data",
        "check /proc/mounts for /run/pgtier-fake/work/mnt/pmem-data: options noatime,dax=always; DAX via /proc/mounts and statx (required)",
        "Teardown (from the run record, newest first; it never formats or writes to a device):",
        "umount /run/pgtier-fake/work/mnt/pmem-data",
        "rm -r /run/pgtier-fake/work",
    ];
    let mut at = 0;
    for o in order {
        let found = text[at..].find(o).unwrap_or_else(|| panic!("{o:?} missing or out of order in:\n{text}"));
        at += found + o.len();
    }
    // One line for every command, a reason under it.
    for line in text.lines().filter(|l| l.trim_start().chars().next().is_some_and(|c| c.is_ascii_digit())) {
        let next = text.lines().skip_while(|l| *l != line).nth(1).unwrap_or_default();
        assert!(next.trim_start().starts_with("why: "), "{line:?} has no reason under it");
    }
}

#[test]
fn two_entries_naming_one_block_device_are_refused() {
    let mut f = FakeSystem::default();
    f.block_device("/dev/nvme0n1", 259, 0).block_device("/dev/disk/by-id/nvme-Example_SN1", 259, 0).block_device(
        "/dev/nvme1n1",
        259,
        2,
    );
    let distinct = [("data", Path::new("/dev/nvme0n1")), ("wal", Path::new("/dev/nvme1n1"))];
    assert!(tiers::safety::check_distinct(&mut f, &distinct).is_ok());
    let same = [("data", Path::new("/dev/nvme0n1")), ("wal", Path::new("/dev/disk/by-id/nvme-Example_SN1"))];
    match tiers::safety::check_distinct(&mut f, &same) {
        Err(Refusal::SameDevice { first, second, .. }) => {
            assert_eq!((first.as_str(), second.as_str()), ("data", "wal"))
        }
        other => panic!("expected SameDevice, got {other:?}"),
    }
    // A disk and its own partition (sysfs: /sys/dev/block/259:1 is nvme0n1/nvme0n1p1, which has
    // a `partition` file; the disk's `dev` is 259:0).
    let sys_part = "/sys/devices/pci0000:00/0000:00:04.0/nvme/nvme0/nvme0n1/nvme0n1p1";
    f.block_device("/dev/nvme0n1p1", 259, 1)
        .link("/sys/dev/block/259:1", sys_part)
        .file(format!("{sys_part}/partition"), "1\n")
        .file("/sys/devices/pci0000:00/0000:00:04.0/nvme/nvme0/nvme0n1/dev", "259:0\n");
    for pair in [
        [("data", Path::new("/dev/nvme0n1")), ("wal", Path::new("/dev/nvme0n1p1"))],
        [("wal", Path::new("/dev/nvme0n1p1")), ("data", Path::new("/dev/nvme0n1"))],
    ] {
        match tiers::safety::check_distinct(&mut f, &pair) {
            Err(r @ Refusal::PartitionOfOther { .. }) => assert_eq!(
                r.to_string(),
                "device wal (/dev/nvme0n1p1) is a partition of the disk of device data (/dev/nvme0n1); give each device its own disk"
            ),
            other => panic!("expected PartitionOfOther, got {other:?}"),
        }
    }
    let two_disks = [("data", Path::new("/dev/nvme1n1")), ("wal", Path::new("/dev/nvme0n1p1"))];
    assert!(tiers::safety::check_distinct(&mut f, &two_disks).is_ok());
}

// ---- issue 14: the PMem, partition and identity paths as the guest's real tools behave ----

/// The guest's namespaces (tests/fixtures/vm/): namespace0.0 fsdax (pmem0); namespace1.0
/// disabled, which ndctl 76 lists only with -i, in raw mode. Plain `ndctl list -N` answers
/// without it, as the real one does.
fn disabled_pmem_machine() -> FakeSystem {
    let mut f = fake_machine();
    f.answer_once("ndctl list -N -i", Canned::ok(fixture("vm/ndctl-list-N-i.one-disabled.json")))
        .answer("ndctl list -N -i", Canned::ok(fixture("vm/ndctl-list-N.two-fsdax.json")))
        .answer("ndctl list -N", Canned::ok(fixture("vm/ndctl-list-N.one-disabled.json")))
        .answer("ndctl create-namespace", Canned::ok(fixture("vm/ndctl-create-namespace-fe-fsdax.from-disabled.json")))
        .answer("mkfs.xfs", Canned::ok(fixture("vm/mkfs.xfs.pmem-su2m.txt")))
        .block_device("/dev/pmem1", 259, 1);
    f
}

#[test]
fn a_disabled_pmem_namespace_is_seen_with_ndctl_list_i_and_reconfigured_when_allowed() {
    let mut f = disabled_pmem_machine();
    let mp = mountpoint("pmem-wal");
    mount_adds(&mut f, &dax_line("/dev/pmem1", &mp));
    f.dax_files.push(mp.clone());
    let mut d = pmem("pmem-wal", "namespace1.0", true);
    d.allow_wipe = true;
    let o = run_plan(&[d], &fake_ctx(), &mut f);
    o.result.as_ref().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        f.commands(),
        vec![
            "ndctl list -N -i".to_string(),
            "ndctl create-namespace -f -e namespace1.0 -m fsdax --align=2M".into(),
            "ndctl list -N -i".into(),
            "udevadm settle --timeout=60".into(),
            "udevadm settle --timeout=60".into(),
            LVM_UNITS.into(),
            "mkfs.xfs -f -m reflink=0 -d su=2m,sw=1 -L pmem-wal /dev/pmem1".into(),
            format!("mount -t xfs -o noatime,dax=always /dev/pmem1 {}", mp.display()),
            format!("xfs_info {}", mp.display()),
        ]
    );
    assert!(o.notes.iter().any(|n| n.contains("namespace1.0 reconfigured from raw to fsdax (pmem1)")), "{:?}", o.notes);
}

#[test]
fn a_disabled_pmem_namespace_without_allow_reconfigure_says_it_is_disabled() {
    let mut f = disabled_pmem_machine();
    let o = run_plan(&[pmem("pmem-wal", "namespace1.0", false)], &fake_ctx(), &mut f);
    let e = step_error(&o);
    assert!(e.contains("namespace namespace1.0 is disabled"), "{e}");
    assert!(e.contains("ndctl enable-namespace namespace1.0") && e.contains("allow_reconfigure = true"), "{e}");
    assert_eq!(f.commands(), vec!["ndctl list -N -i"]);
}

/// The guest's RAID-like disk (vm/raid-queue.txt): minimum I/O 64 KiB, optimal I/O 192 KiB.
fn raid_machine() -> FakeSystem {
    let mut f = fake_machine();
    f.link("/dev/disk/by-id/virtio-PGT-RAID", "/dev/vdb")
        .block_device("/dev/vdb", 254, 16)
        .block_device("/dev/vdb1", 254, 17)
        .answer("mkfs.xfs", Canned::ok(fixture("local/mkfs.xfs.default.txt")));
    for line in fixture("vm/raid-queue.txt").lines() {
        let (k, v) = line.split_once(' ').unwrap();
        f.file(format!("/sys/class/block/vdb/{k}"), format!("{v}\n"));
    }
    f
}

#[test]
fn a_partition_starts_where_the_devices_geometry_wants_it_with_the_disk_locked() {
    let mut f = raid_machine();
    let mp = mountpoint("raid");
    mount_adds(&mut f, &mounts_line_from("local/proc-mounts.xfs-default.txt", "/dev/vdb1", &mp));
    let o = run_plan(&[partitioned(local("raid", "/dev/disk/by-id/virtio-PGT-RAID"))], &fake_ctx(), &mut f);
    o.result.as_ref().unwrap_or_else(|e| panic!("{e}"));
    // 2048s would fail parted's align-check opt here (vm/parted-s-align-check-opt-1.raid-2048s.txt).
    assert!(
        f.commands().contains(&"parted -s /dev/vdb mklabel gpt mkpart primary 6144s 100%".to_string()),
        "{:?}",
        f.commands()
    );
    // After parted (and udev's re-read of its table: settle), the disk is locked until mkfs is
    // done, so that udevd cannot re-read it under mkfs; then udev settles once more.
    let at = |prefix: &str| f.calls.iter().position(|c| c.starts_with(prefix)).unwrap_or_else(|| panic!("{prefix}"));
    let settles: Vec<usize> =
        f.calls.iter().enumerate().filter(|(_, c)| c.starts_with("run: udevadm settle")).map(|(i, _)| i).collect();
    assert_eq!(settles.len(), 2, "{:?}", f.calls);
    assert!(at("run: parted -s /dev/vdb align-check") < settles[0]);
    assert!(settles[0] < at("lock: /dev/vdb"));
    // Immediately before mkfs, with the disk held: LVM's activations waited out and the disk and
    // its partition checked again; not settled again (udev holds back a locked disk's events,
    // so settle would wait out its timeout).
    assert!(
        at("lock: /dev/vdb") < at("run: systemctl list-units") && at("run: systemctl list-units") < at("run: mkfs.xfs")
    );
    assert!(at("run: mkfs.xfs") < at("unlock: /dev/vdb"));
    assert!(at("unlock: /dev/vdb") < settles[1]);
    assert!(settles[1] < at("run: mount"));
    let text = o.plan.to_string();
    assert!(text.contains("udevadm settle; flock --exclusive <raid.disk>"), "{text}");
    assert!(text.contains("mkpart primary <raid.start> 100%"), "{text}");
}

#[test]
fn pmem_partitions_start_at_two_mebibytes() {
    let mut f = pmem_machine("ndctl/ndctl-list-N.fsdax.json");
    f.block_device("/dev/pmem0p1", 259, 9).file("/sys/class/block/pmem0/queue/logical_block_size", "512\n");
    let mp = mountpoint("pm");
    mount_adds(&mut f, &dax_line("/dev/pmem0p1", &mp));
    f.dax_files.push(mp.clone());
    let o = run_plan(&[partitioned(pmem("pm", "namespace0.0", false))], &fake_ctx(), &mut f);
    o.result.as_ref().unwrap_or_else(|e| panic!("{e}"));
    assert!(f.commands().contains(&"parted -s /dev/pmem0 mklabel gpt mkpart primary 4096s 100%".to_string()));
}

#[test]
fn dax_not_honoured_says_what_the_kernel_logged() {
    // The guest's kernel turned DAX off for XFS with 2 KiB blocks (vm/dmesg.xfs-dax.txt,
    // vm/proc-mounts.xfs-dax-blocksize-fallback.pmem.txt): the message names the block size,
    // not the device.
    let mut f = pmem_machine("vm/ndctl-list-N.two-fsdax.json");
    f.block_device("/dev/pmem1", 259, 1).answer("dmesg", Canned::ok(fixture("vm/dmesg.xfs-dax.txt")));
    let mp = mountpoint("pm");
    mount_adds(&mut f, &mounts_line_from("vm/proc-mounts.xfs-dax-blocksize-fallback.pmem.txt", "/dev/pmem1", &mp));
    let o = run_plan(&[pmem("pm", "namespace1.0", false)], &fake_ctx(), &mut f);
    let e = step_error(&o);
    assert!(e.contains("the kernel log says: \"pmem1: DAX not supported for blocksize. Turning off DAX.\""), "{e}");
    assert!(!e.contains("unsupported by block device"), "{e}");
}

fn sas_machine() -> FakeSystem {
    let mut f = fake_machine();
    f.link("/dev/disk/by-id/scsi-0QEMU_QEMU_HARDDISK_PGT-SAS0", "/dev/sda")
        .block_device("/dev/sda", 8, 0)
        .file("/sys/class/block/sda/dev", "8:0\n")
        .file("/sys/class/block/sda/device/model", fixture("vm/sda.model.txt"));
    let page =
        std::fs::read(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/vm/sda.vpd_pg80.bin"))
            .unwrap();
    f.bytes.insert("/sys/class/block/sda/device/vpd_pg80".into(), page);
    f
}

#[test]
fn a_scsi_disks_serial_is_read_from_vpd_page_0x80() {
    // sd disks have no device/serial (vm/sda.device-attributes.txt); without udev's database the
    // serial is in VPD page 0x80.
    let spec = |serial: &str| {
        let mut d = local("sas", "/dev/disk/by-id/scsi-0QEMU_QEMU_HARDDISK_PGT-SAS0");
        d.real = RealDevice::Local {
            path: "/dev/disk/by-id/scsi-0QEMU_QEMU_HARDDISK_PGT-SAS0".into(),
            model: Some("QEMU HARDDISK".into()),
            serial: Some(serial.into()),
        };
        d
    };
    let mut f = sas_machine();
    f.answer_once("blkid -p", Canned::ok(fixture("local/blkid-p-export.xfs.txt")));
    let o = run_plan(&[spec("PGT-SAS0")], &fake_ctx(), &mut f);
    assert!(matches!(refusal(&o), Refusal::HasSignature { .. }), "identity passed; the next check refused");
    let mut f = sas_machine();
    let o = run_plan(&[spec("S3HBNX0K900001")], &fake_ctx(), &mut f);
    assert_eq!(
        refusal(&o),
        Refusal::IdentityMismatch {
            device: "/dev/sda".into(),
            actual_field: "serial".into(),
            expected: "S3HBNX0K900001".into(),
            actual: "PGT-SAS0".into(),
        }
    );
    // With udev's database, its ID_SCSI_SERIAL is used first, as lsblk does.
    let mut f = sas_machine();
    f.bytes.clear();
    f.file("/run/udev/data/b8:0", fixture("vm/sda.udev-data.txt"));
    assert_eq!(tiers::safety::disk_serial(&mut f, Path::new("/dev/sda")).as_deref(), Some("PGT-SAS0"));
}

#[test]
fn allow_wipe_lets_an_inactive_lvm_pv_or_a_stopped_md_member_be_wiped_but_not_an_active_one() {
    // blkid's view of an LVM PV and of an md member is the same whether or not they are in use
    // (util-linux's own test images, tests/fixtures/blkid/); only holders/ tells them apart.
    for (sig, what) in [
        ("blkid/blkid-p-export.lvm2-member.util-linux-test-image.txt", "LVM2_member"),
        ("blkid/blkid-p-export.mdraid-member.util-linux-test-image.txt", "linux_raid_member"),
    ] {
        let machine = || {
            let mut f = fake_machine();
            f.block_device("/dev/sdh", 8, 112).answer_once("blkid -p", Canned::ok(fixture(sig)));
            f
        };
        let o = run_plan(&[local("d", "/dev/sdh")], &fake_ctx(), &mut machine());
        match refusal(&o) {
            Refusal::HasSignature { found, .. } => assert!(found.contains(what), "{found}"),
            r => panic!("{r}"),
        }
        let mut wipe = local("d", "/dev/sdh");
        wipe.allow_wipe = true;
        let mut f = machine();
        let mp = mountpoint("d");
        mount_adds(&mut f, &mounts_line_from("local/proc-mounts.xfs-default.txt", "/dev/sdh", &mp));
        let o = run_plan(std::slice::from_ref(&wipe), &fake_ctx(), &mut f);
        o.result.as_ref().unwrap_or_else(|e| panic!("allow_wipe = true wipes an inactive {what}: {e}"));
        assert!(f.commands().contains(&"mkfs.xfs -f -L d /dev/sdh".to_string()));
        let mut f = machine();
        f.file("/sys/class/block/sdh/holders/dm-0", "");
        let o = run_plan(&[wipe], &fake_ctx(), &mut f);
        assert_eq!(refusal(&o), Refusal::Held { device: "/dev/sdh".into(), holders: "dm-0".into() }, "active: refused");
    }
}

#[test]
fn a_room_check_runs_with_the_devices_checks() {
    let mut f = nvme_disk_machine();
    f.file("/sys/class/block/nvme0n1/size", "2097152\n"); // 1 GiB
    let specs = [samsung("data")];
    let mut plan = tiers::build_plan(&specs, &fake_ctx());
    plan.add_room_check("data", 2 << 30, "the golden copy of data set pgbench-s100");
    let first = plan.first_destructive_step().unwrap();
    let room = plan.steps.iter().position(|s| matches!(&s.action, Action::Check(Check::Room { .. }))).unwrap();
    assert!(room < first, "{plan}");
    assert!(
        plan.to_string().contains("check <data> holds 2.0 GiB (the golden copy of data set pgbench-s100)"),
        "{plan}"
    );
    let dir = tempfile::tempdir().unwrap();
    let journal = journal::Journal::begin(dir.path(), "room", "test").unwrap();
    let r = tiers::execute(&plan, &specs, &mut f, &journal, &std::sync::atomic::AtomicBool::new(false), &mut |_| {});
    let e = r.unwrap_err().to_string();
    assert!(e.contains("/dev/nvme0n1 has room for about 993.3 MiB after XFS's own use, and the golden copy of data set pgbench-s100 needs 2.0 GiB"), "{e}");
    assert!(!f.commands().iter().any(|c| c.starts_with("mkfs")));
}

#[test]
fn a_room_check_on_pmem_reads_the_namespaces_size_from_ndctl() {
    // The namespace's block device is looked up after the checks: its size comes from ndctl
    // (4 GiB in the fixture), before anything is written.
    let specs = [pmem("pmem-data", "namespace0.0", false)];
    let mut plan = tiers::build_plan(&specs, &fake_ctx());
    plan.add_room_check("pmem-data", 5 << 30, "the golden copy of data set pgbench-s200");
    let room = plan.steps.iter().position(|s| matches!(&s.action, Action::Check(Check::PmemRoom { .. }))).unwrap();
    assert!(room < plan.first_destructive_step().unwrap(), "{plan}");
    assert!(
        plan.to_string().contains(
            "check ndctl list -N -i: namespace namespace0.0 holds 5.0 GiB (the golden copy of data set pgbench-s200)"
        ),
        "{plan}"
    );
    let mut f = pmem_machine("ndctl/ndctl-list-N.fsdax.json");
    let dir = tempfile::tempdir().unwrap();
    let journal = journal::Journal::begin(dir.path(), "room", "test").unwrap();
    let r = tiers::execute(&plan, &specs, &mut f, &journal, &std::sync::atomic::AtomicBool::new(false), &mut |_| {});
    let e = r.unwrap_err().to_string();
    assert!(e.contains("namespace namespace0.0 has room for about 3.9 GiB after XFS's own use, and the golden copy of data set pgbench-s200 needs 5.0 GiB"), "{e}");
    assert!(!f.commands().iter().any(|c| c.starts_with("mkfs")));
    // Room enough: provisioning goes on.
    let mut plan = tiers::build_plan(&specs, &fake_ctx());
    plan.add_room_check("pmem-data", 1 << 30, "the golden copy");
    let mut f = pmem_machine("ndctl/ndctl-list-N.fsdax.json");
    let mp = mountpoint("pmem-data");
    mount_adds(&mut f, &dax_line("/dev/pmem0", &mp));
    f.dax_files.push(mp.clone());
    let journal = journal::Journal::begin(dir.path(), "room2", "test").unwrap();
    let r = tiers::execute(&plan, &specs, &mut f, &journal, &std::sync::atomic::AtomicBool::new(false), &mut |_| {});
    r.unwrap_or_else(|e| panic!("{e}"));
}

/// The devdax namespace of pmem_in_devdax_mode_is_reconfigured_when_allowed, re-made as fsdax
/// by an ndctl whose answer reports `align` as `align` (None: the field left out).
fn remade_with_align(align: Option<u64>) -> (FakeSystem, std::path::PathBuf) {
    let mut made: serde_json::Value =
        serde_json::from_str(&fixture("vm/ndctl-create-namespace-fe-fsdax.from-disabled.json")).unwrap();
    match align {
        Some(a) => made["align"] = a.into(),
        None => {
            made.as_object_mut().unwrap().remove("align");
        }
    }
    let mut f = fake_machine();
    f.answer_once("ndctl list -N", Canned::ok(fixture("ndctl/ndctl-list-N-n.devdax.after-reconfig.json")))
        .answer_once("ndctl list -N", Canned::ok(fixture("ndctl/ndctl-list-N-n.fsdax-enabled-named.json")))
        .answer("ndctl create-namespace", Canned::ok(made.to_string()))
        .answer("mkfs.xfs", Canned::ok(fixture("xfs/mkfs.xfs-m-reflink0.pmem0.pmem-kb100000005.txt")))
        .block_device("/dev/pmem0", 259, 0)
        .file("/proc/4242/maps", "7f0000000000-7f0000200000 rw-s 00000000 00:05 12 /dev/zero (deleted)\n");
    let mp = mountpoint("pm");
    mount_adds(&mut f, &dax_line("/dev/pmem0", &mp));
    f.dax_files.push(mp.clone());
    (f, mp)
}

#[test]
fn a_namespace_pgtier_remakes_is_2_mib_aligned_and_checked() {
    let pm = |dax: tiers::DaxPolicy| {
        let mut d = pmem("pm", "namespace0.0", true);
        d.allow_wipe = true;
        d.dax = dax;
        d
    };
    // 2 MiB reported: used, and the note says so.
    let (mut f, _) = remade_with_align(Some(2 << 20));
    let o = run_plan(&[pm(tiers::DaxPolicy::Required)], &fake_ctx(), &mut f);
    o.result.as_ref().unwrap_or_else(|e| panic!("{e}"));
    assert!(f.commands().iter().any(|c| c == "ndctl create-namespace -f -e namespace0.0 -m fsdax --align=2M"));
    assert!(
        o.notes.iter().any(|n| n.contains("reconfigured from devdax to fsdax")
            && n.contains("; align 2097152 (2.0 MiB) as ndctl reports it")),
        "{:?}",
        o.notes
    );
    // 4 KiB reported although 2 MiB was asked for: DAX required is refused before mkfs.
    let (mut f, _) = remade_with_align(Some(4096));
    let o = run_plan(&[pm(tiers::DaxPolicy::Required)], &fake_ctx(), &mut f);
    let e = step_error(&o);
    assert!(e.contains("with align 4096 (4.0 KiB)") && e.contains("requires DAX"), "{e}");
    assert!(!f.commands().iter().any(|c| c.starts_with("mkfs")), "{:?}", f.commands());
    // The same with dax = "optional": measured as it is, and said.
    let (mut f, _) = remade_with_align(Some(4096));
    let o = run_plan(&[pm(tiers::DaxPolicy::Optional)], &fake_ctx(), &mut f);
    o.result.as_ref().unwrap_or_else(|e| panic!("{e}"));
    assert!(o.notes.iter().any(|n| n.contains("4 KiB pages only") && n.contains("measured as it is")), "{:?}", o.notes);
    // No align reported: not passed over in silence.
    let (mut f, _) = remade_with_align(None);
    let o = run_plan(&[pm(tiers::DaxPolicy::Required)], &fake_ctx(), &mut f);
    o.result.as_ref().unwrap_or_else(|e| panic!("{e}"));
    assert!(
        o.notes.iter().any(|n| n.contains("reports no align, so the 2 MiB alignment is not confirmed")),
        "{:?}",
        o.notes
    );
    // Without DAX nothing is asked of the alignment.
    let (mut f, _) = remade_with_align(Some(4096));
    let mut d = pm(tiers::DaxPolicy::Off);
    d.mount_options = vec!["noatime".into()];
    let o = run_plan(&[d], &fake_ctx(), &mut f);
    assert!(
        f.commands().iter().any(|c| c == "ndctl create-namespace -f -e namespace0.0 -m fsdax"),
        "{:?} {:?}",
        f.commands(),
        o.result.as_ref().err().map(|e| e.to_string())
    );
}

#[test]
fn a_kept_fsdax_namespace_that_shows_no_align_is_noted() {
    // ndctl's documentation example (ndctl/ndctl-list-N.fsdax.json) has no align field.
    let mut f = pmem_machine("ndctl/ndctl-list-N.fsdax.json");
    let mp = mountpoint("pmem-data");
    mount_adds(&mut f, &dax_line("/dev/pmem0", &mp));
    f.dax_files.push(mp.clone());
    let o = run_plan(&[pmem("pmem-data", "namespace0.0", false)], &fake_ctx(), &mut f);
    o.result.as_ref().unwrap_or_else(|e| panic!("{e}"));
    assert!(o.notes.iter().any(|n| n.contains("shows no align in ndctl list -N -i")), "{:?}", o.notes);
}
