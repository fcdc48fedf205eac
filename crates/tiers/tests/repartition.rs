//! Re-partitioning a disk the experiment file allows wiping (issue 26 item 9): the signatures of
//! its old partitions and of the disk are erased (`wipefs --all`) before parted writes the new
//! table, and those inside the new partition before mkfs, so that udev finds no old LVM PV or
//! md member to activate. Run through `FakeSystem`; each test asserts the exact commands.

mod common;

use common::*;
use tiers::plan::Action;
use tiers::system::{Canned, FakeSystem};

/// A disk, /dev/sdb, that still has two partitions of an old layout (sysfs lists sdb1, sdb2).
fn old_layout_disk() -> FakeSystem {
    let mut f = fake_machine();
    f.link("/dev/disk/by-id/wwn-0x5000c500a1b2c3d4", "/dev/sdb")
        .block_device("/dev/sdb", 8, 16)
        .block_device("/dev/sdb1", 8, 17)
        .block_device("/dev/sdb2", 8, 18)
        .file("/sys/class/block/sdb/sdb2/partition", "2\n")
        .file("/sys/class/block/sdb/sdb1/partition", "1\n")
        .answer("parted -s /dev/sdb mklabel", Canned::ok(""))
        .answer("parted -s /dev/sdb align-check", Canned::ok(fixture("local/parted-s-align-check-opt-2.aligned.txt")))
        .answer("mkfs.xfs", Canned::ok(fixture("local/mkfs.xfs.default.txt")));
    f
}

#[test]
fn allow_wipe_erases_old_partitions_the_disk_and_the_new_partition_before_mkfs() {
    let mut f = old_layout_disk();
    let mp = mountpoint("d");
    mount_adds(&mut f, &mounts_line_from("local/proc-mounts.xfs-default.txt", "/dev/sdb1", &mp));
    let mut d = partitioned(local("d", "/dev/disk/by-id/wwn-0x5000c500a1b2c3d4"));
    d.allow_wipe = true;
    let o = run_plan(&[d], &fake_ctx(), &mut f);
    o.result.as_ref().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        f.commands(),
        vec![
            "wipefs --all /dev/sdb1".to_string(),
            "wipefs --all /dev/sdb2".into(),
            "wipefs --all /dev/sdb".into(),
            "parted -s /dev/sdb mklabel gpt mkpart primary 2048s 100%".into(),
            "parted -s /dev/sdb align-check opt 1".into(),
            "udevadm settle --timeout=60".into(),
            "wipefs --all /dev/sdb1".into(),
            "systemctl list-units --all --plain --no-legend --no-pager 'lvm-activate-*'".into(),
            "mkfs.xfs -f -L d /dev/sdb1".into(),
            "udevadm settle --timeout=60".into(),
            format!("mount -t xfs -o noatime /dev/sdb1 {}", mp.display()),
            format!("xfs_info {}", mp.display()),
        ]
    );
    let text = o.plan.to_string();
    assert!(
        text.contains("wipefs --all <each partition of <d.disk> now, from sysfs>; wipefs --all <d.disk>"),
        "{text}"
    );
    assert!(text.contains("wipefs --all <d>\n"), "{text}");
    let wipes: Vec<usize> = (o.plan.steps.iter().enumerate())
        .filter(|(_, s)| matches!(s.action, Action::WipeSignatures { .. }))
        .map(|(i, _)| i)
        .collect();
    let first_write = o.plan.first_destructive_step().unwrap();
    assert!(wipes.iter().all(|&i| i >= first_write), "every check comes before the first wipe");
    assert!(o.plan.steps[wipes[0]].reason.contains("LVM PV or md member"), "{}", o.plan.steps[wipes[0]].reason);
}

#[test]
fn a_wipe_that_fails_stops_before_parted() {
    let mut f = old_layout_disk();
    // wipefs opens O_EXCL: a partition something holds is refused by the kernel.
    f.answer_once(
        "wipefs --all /dev/sdb1",
        Canned::fail(1, "wipefs: error: /dev/sdb1: probing initialization failed: Device or resource busy\n"),
    );
    let mut d = partitioned(local("d", "/dev/disk/by-id/wwn-0x5000c500a1b2c3d4"));
    d.allow_wipe = true;
    let o = run_plan(&[d], &fake_ctx(), &mut f);
    let e = step_error(&o);
    assert!(e.contains("Device or resource busy"), "{e}");
    assert_eq!(f.commands(), vec!["wipefs --all /dev/sdb1".to_string()]);
}

#[test]
fn without_allow_wipe_nothing_is_wiped() {
    let mut f = fake_machine();
    f.block_device("/dev/sdc", 8, 32)
        .block_device("/dev/sdc1", 8, 33)
        .answer("parted", Canned::ok(fixture("local/parted-s-align-check-opt-2.aligned.txt")))
        .answer("mkfs.xfs", Canned::ok(fixture("local/mkfs.xfs.default.txt")));
    let o = run_plan(&[partitioned(local("d", "/dev/sdc"))], &fake_ctx(), &mut f);
    assert!(!o.plan.steps.iter().any(|s| matches!(s.action, Action::WipeSignatures { .. })));
    assert!(!f.commands().iter().any(|c| c.starts_with("wipefs --all")), "{:?}", f.commands());
}
