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
    assert!(o.status.success(), "{stderr}");
    assert!(!env.state().exists(), "a dry run creates nothing");
    stdout
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
