//! Provisions the three emulated device classes for real (loop device over a sparse file, zram,
//! nbdkit in a network namespace + nbdfuse + loop), checks what was made, tears down from the
//! journal and checks that nothing is left. Needs root; set PGTIER_SKIP_ROOT_TESTS=1 to skip
//! explicitly where root is not available.

mod common;

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use common::root_or_skip;
use journal::Journal;
use tiers::spec::{Backing, DaxPolicy, DeviceClass, DeviceSpec};
use tiers::system::RealSystem;
use tiers::{PlanContext, build_plan, execute};

fn device(name: &str, class: DeviceClass, backing: Backing, latency_ms: u64, dax: DaxPolicy) -> DeviceSpec {
    let mut d = DeviceSpec::new(name, class, common::unused_local());
    d.dax = dax;
    d.emulation.backing = backing;
    d.emulation.latency = (latency_ms > 0).then(|| Duration::from_millis(latency_ms));
    d
}

#[test]
fn three_emulated_classes_provision_and_tear_down_cleanly() {
    if !root_or_skip() {
        return;
    }
    let base = tempfile::Builder::new().prefix("pgtier-tiers-test-").tempdir_in("/var/tmp").unwrap();
    let work_dir = base.path().join("work");
    let log_dir = base.path().join("logs");
    std::fs::create_dir_all(&log_dir).unwrap();
    let short_id = format!("{:06x}", std::process::id() & 0xffffff);
    let ctx = PlanContext { short_id, work_dir: work_dir.clone(), log_dir, owner_uid: 0, owner_gid: 0, emulate: true };
    let specs = vec![
        device("fast", DeviceClass::Nvme, Backing::LoopFile, 0, DaxPolicy::Off),
        device("pm", DeviceClass::Pmem, Backing::Zram, 0, DaxPolicy::Required),
        device("remote", DeviceClass::NvmeTcp, Backing::Nbd, 1, DaxPolicy::Off),
    ];
    let plan = build_plan(&specs, &ctx);
    let journal = Journal::begin(&base.path().join("journal"), "tiers-test", "test").unwrap();
    let cancel = AtomicBool::new(false);
    let mut notes = Vec::new();
    let result = execute(&plan, &specs, &mut RealSystem, &journal, &cancel, &mut |e| {
        if let tiers::Event::Note(n) = e {
            notes.push(n)
        }
    });

    let checks = std::panic::catch_unwind(|| {
        let p = result.as_ref().expect("provisioning succeeds");
        for d in &p.devices {
            let m = journal::mounts::find(&d.mountpoint).expect("mounted");
            assert_eq!(m.fstype, "xfs", "{}", d.name);
            assert!(m.options.iter().any(|o| o == "noatime"), "{:?}", m.options);
            std::fs::write(d.mountpoint.join("hello"), "x").unwrap();
            assert!(d.facts.xfs_info_raw.as_deref().unwrap_or("").contains("bsize="));
        }
        let fast = p.device("fast").unwrap();
        assert!(fast.block_device.to_string_lossy().starts_with("/dev/loop"));
        assert_eq!(fast.facts.loop_direct_io, Some(true), "direct I/O on the loop device");
        let pm = p.device("pm").unwrap();
        assert!(pm.block_device.to_string_lossy().starts_with("/dev/zram"));
        assert!(!pm.mount.dax.honoured, "zram has no DAX: the fallback must be detected");
        assert!(pm.mount.dax.note.contains("NOT honoured"), "{}", pm.mount.dax.note);
        assert!(notes.iter().any(|n| n.contains("NOT honoured")));
        let remote = p.device("remote").unwrap();
        assert!(remote.facts.loop_backing_file.as_ref().unwrap().ends_with("fuse/remote/nbd"));
        // Traffic crossed the veth link into the target's namespace.
        let host_if = format!("pgt{}2h", ctx.short_id);
        let rx: u64 = std::fs::read_to_string(format!("/sys/class/net/{host_if}/statistics/tx_bytes"))
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert!(rx > 1_000_000, "mkfs and mount traffic went over {host_if}: {rx} bytes");
    });

    let report = journal.teardown(|_, _| {});
    assert!(report.is_clean(), "teardown failed: {:?}", report.failed);
    checks.unwrap();
    assert!(journal::mounts::mounts_under(&work_dir).is_empty(), "nothing mounted");
    assert!(journal::undo::loops_under(&work_dir).is_empty(), "no loop device left");
    assert!(!work_dir.exists(), "work dir removed");
    let ns: Vec<PathBuf> =
        std::fs::read_dir("/run/netns").map(|r| r.flatten().map(|e| e.path()).collect()).unwrap_or_default();
    assert!(!ns.iter().any(|p| p.to_string_lossy().contains(&ctx.short_id)), "netns removed: {ns:?}");
    // A second teardown finds nothing to do.
    let again = Journal::open(&journal.path().with_extension("closed.jsonl")).unwrap();
    assert!(again.pending().is_empty());
}
