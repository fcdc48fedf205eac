//! The dry run of the real studies (no --emulate) shows the commands the real-device paths run
//! (issue 14): nvme-cli's version first, the host NQN and ID as a pair, the DH-HMAC-CHAP key's
//! configuration file instead of --dhchap-secret, one disconnect of the controller pgtier
//! created, ndctl list -N -i, the PMem mkfs options, partitions placed by the disk's geometry
//! with the disk held for udev. Needs neither root nor devices.

mod common;

use common::*;

fn dry_run(file: &str) -> String {
    let env = Env::new();
    let cfg = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(file);
    let o = env.xtask(&["compare", "--config", cfg.to_str().unwrap(), "--dry-run"]).output().unwrap();
    let (stdout, stderr) = text(&o);
    // The studies' devices are not on this machine: the dry run says so at its end and exits 1.
    assert_eq!(o.status.code(), Some(1), "{stderr}");
    assert!(stdout.contains("\nwould refuse: device "), "{stdout}");
    assert!(!env.state().exists(), "a dry run creates nothing");
    stdout
}

/// The shipped file's dry run on a machine without its devices (issue 39): the first screen
/// names the devices it formats and the expected time; the end names every device that is not
/// here; the exit status is 1, and stderr says why.
#[test]
fn the_dry_run_says_what_it_formats_and_what_the_real_run_would_refuse() {
    let env = Env::new();
    let cfg = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tiers/pmem-vs-nvme.toml");
    let o = env.xtask(&["compare", "--config", cfg.to_str().unwrap(), "--dry-run"]).output().unwrap();
    let (text, stderr) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{stderr}");
    let first_screen: Vec<&str> = text.lines().take(12).collect();
    let first_screen = first_screen.join("\n");
    for needle in [
        "# FORMATS 4 device(s): everything on them is lost",
        "#   nvme-data: /dev/disk/by-id/nvme-HPE_MO001600KXPTR_SERIAL-DATA",
        "#   pmem-wal: PMem namespace namespace1.0",
        "# Expected time: about 8 h 9 min after the data sets' builds",
    ] {
        assert!(first_screen.contains(needle), "the first screen shows {needle:?}:\n{first_screen}");
    }
    let tail = &text[text.find("## What the real run would refuse").expect("the refusals, last")..];
    for needle in [
        "would refuse: device nvme-data: /dev/disk/by-id/nvme-HPE_MO001600KXPTR_SERIAL-DATA does not exist on this machine",
        "would refuse: device nvme-wal: /dev/disk/by-id/nvme-SAMSUNG_MZPLL1T6HAJQ_SERIAL-WAL does not exist on this machine",
        "would refuse: device pmem-data: PMem namespace namespace0.0 does not exist on this machine",
        "would refuse: device pmem-wal: PMem namespace namespace1.0 does not exist on this machine",
    ] {
        assert!(tail.contains(needle), "{needle:?}:\n{tail}");
    }
    assert!(stderr.contains("dry run: the real run would refuse"), "{stderr}");
    assert!(stderr.contains("nothing was touched"), "{stderr}");
    // Emulated, the same file formats no disk of this machine and nothing is refused.
    let o = env.xtask(&["compare", "--config", cfg.to_str().unwrap(), "--dry-run", "--emulate"]).output().unwrap();
    let (text, stderr) = common::text(&o);
    assert!(o.status.success(), "{stderr}");
    assert!(text.contains("no disk of this machine is formatted"), "{text}");
    assert!(text.contains("## What the real run would refuse\n\nNothing that a dry run can see"), "{text}");
}

#[test]
fn the_real_nvme_tcp_study_connects_as_the_tools_allow() {
    let text = dry_run("tiers/nvme-vs-nvmeof.toml");
    for needle in [
        "check nvme version: nvme-cli and libnvme versions (the connect below depends on them; a DH-HMAC-CHAP secret needs nvme-cli 2.0 or later)",
        "check the host NQN and host ID come together",
        "--hostnqn <from /etc/nvme/hostnqn> --hostid <from /etc/nvme/hostid> --ctrl-loss-tmo 60 --reconnect-delay 2 --config ",
        ".nvme-lb-data.json --output-format json  # ",
        "holds the host's DH-HMAC-CHAP key <secret from $PGTIER_DHCHAP_SECRET> as libnvme's dhchap_key",
        "connection settings: ctrl-loss-tmo 60, reconnect-delay 2, nr-io-queues (not passed: the kernel's default), queue-size (not passed: the kernel's default) (the manifest records them",
        "udevadm settle; flock --exclusive <das-data.disk>",
        "mklabel gpt mkpart primary <das-data.start> 100%",
        "nvme disconnect -d <the controller this connect created> (subsystem nqn.2016-01.com.lightbitslabs:uuid:pg-data-nocomp; only if every filesystem on it was unmounted)",
    ] {
        assert!(text.contains(needle), "the dry run shows {needle:?}:\n{text}");
    }
    assert!(!text.contains("--dhchap-secret"), "{text}");
    assert_eq!(text.matches("] nvme connect ").count(), 4, "one connect per subsystem");
}

#[test]
fn the_real_pmem_study_lists_idle_namespaces_and_formats_for_dax() {
    let text = dry_run("tiers/pmem-vs-nvme.toml");
    for needle in [
        "check ndctl list -N -i: namespace namespace0.0 exists and is in fsdax mode",
        "ndctl list -N -i: namespace namespace1.0 -> /dev/<blockdev> as <pmem-wal>",
        "mkfs.xfs -m reflink=0 -d su=2m,sw=1 -L pmem-data <pmem-data>",
        "mount -t xfs -o noatime,dax=always <pmem-data>",
    ] {
        assert!(text.contains(needle), "the dry run shows {needle:?}:\n{text}");
    }
    assert!(!text.contains("ndctl list -N -n"), "{text}");
}

/// Re-partitioning a disk the file allows wiping (issue 26 item 9): the dry run shows the
/// signatures of the disk's old partitions and of the disk erased before parted, and those of
/// the new partition before mkfs, each with its reason.
#[test]
fn re_partitioning_with_allow_wipe_erases_old_signatures_first() {
    let env = Env::new();
    let file = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tiers/nvme-vs-nvmeof.toml");
    let file =
        std::fs::read_to_string(file).unwrap().replace("partition = true", "partition = true\nallow_wipe = true");
    let cfg = env.write("wipe.toml", &file);
    let o = env.xtask(&["compare", "--config", cfg.to_str().unwrap(), "--dry-run"]).output().unwrap();
    let (text, stderr) = text(&o);
    assert_eq!(o.status.code(), Some(1), "the devices are not here: {stderr}");
    let order = [
        "[das-data] wipefs --all <each partition of <das-data.disk> now, from sysfs>; wipefs --all <das-data.disk>",
        "an old LVM PV or md member at the new partition's start",
        "[das-data] parted -s <das-data.disk> mklabel gpt mkpart primary <das-data.start> 100%",
        "[das-data] udevadm settle; flock --exclusive <das-data.disk>",
        "[das-data] wipefs --all <das-data>",
        "[das-data] mkfs.xfs -f ",
    ];
    let mut at = 0;
    for needle in order {
        let i = text[at..].find(needle).unwrap_or_else(|| panic!("{needle:?} after offset {at}:\n{text}"));
        at += i + needle.len();
    }
    assert_eq!(text.matches("] wipefs --all <each partition of").count(), 6, "every re-partitioned device: {text}");
}
