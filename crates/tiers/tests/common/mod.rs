//! Helpers shared by the integration tests: fixtures, device specs, a fake machine made of
//! recorded tool outputs, and (for the root tests) loop devices the test makes and removes.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

#[path = "../../../../testsupport/skip.rs"]
pub mod skip;
#[allow(unused_imports)] // not every test binary skips
pub use skip::skip;

use journal::Journal;
use tiers::plan::Plan;
use tiers::spec::{DeviceClass, DeviceSpec, NvmeTcpTarget, PartitionSpec, RealDevice, SecretSource};
use tiers::system::{Canned, FakeSystem, System};
use tiers::{PlanContext, ProvisionError, Provisioned, build_plan, execute};

/// Root tests: true when running as root; with PGTIER_SKIP_ROOT_TESTS=1 an explicit skip;
/// otherwise a failure that says what to do.
pub fn root_or_skip() -> bool {
    skip::root_or_skip(
        "needs root (PGTIER_SKIP_ROOT_TESTS=1)",
        "this test provisions real block devices and needs root; run it as root or set PGTIER_SKIP_ROOT_TESTS=1 to skip it explicitly",
    )
}

/// A file below tests/fixtures.
pub fn fixture(rel: &str) -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(rel);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("fixture {}: {e}", p.display()))
}

/// A device spec with everything off; the caller sets what the test is about.
pub fn spec(name: &str, class: DeviceClass, real: RealDevice) -> DeviceSpec {
    DeviceSpec::new(name, class, real)
}

/// The real device of an emulated-only test device (never opened).
pub fn unused_local() -> RealDevice {
    RealDevice::Local { path: "/dev/null-not-used".into(), model: None, serial: None }
}

pub fn local(name: &str, path: &str) -> DeviceSpec {
    spec(name, DeviceClass::Nvme, RealDevice::Local { path: path.into(), model: None, serial: None })
}

pub fn pmem(name: &str, namespace: &str, allow_reconfigure: bool) -> DeviceSpec {
    spec(name, DeviceClass::Pmem, RealDevice::Pmem { namespace: namespace.into(), allow_reconfigure })
}

pub fn nvme_tcp(name: &str, nqn: &str, secret_env: Option<&str>) -> DeviceSpec {
    spec(
        name,
        DeviceClass::NvmeTcp,
        RealDevice::NvmeTcp(NvmeTcpTarget {
            address: "192.0.2.10".into(),
            port: 4420,
            nqn: nqn.into(),
            host_nqn: Some("nqn.2014-08.org.nvmexpress:uuid:a66f1c42-4bce-a619-9c59-9ae6ac2ccb8a".into()),
            host_id: Some("a66f1c42-4bce-a619-9c59-9ae6ac2ccb8a".into()),
            dhchap_secret: secret_env.map(|n| SecretSource::Env { name: n.into() }),
            nsid: None,
            uuid: None,
        }),
    )
}

pub fn partitioned(mut d: DeviceSpec) -> DeviceSpec {
    d.partition = Some(PartitionSpec { start_sector: 2048 });
    d
}

/// The fake machine's work directory (nothing is created there).
pub const FAKE_WORK: &str = "/run/pgtier-fake/work";

pub fn fake_ctx() -> PlanContext {
    PlanContext {
        short_id: "fake01".into(),
        work_dir: FAKE_WORK.into(),
        log_dir: "/run/pgtier-fake/logs".into(),
        owner_uid: 999,
        owner_gid: 999,
        emulate: false,
    }
}

pub fn mountpoint(device: &str) -> PathBuf {
    Path::new(FAKE_WORK).join("mnt").join(device)
}

/// A fake machine with a root filesystem on /dev/vda1, no swap, and blkid/wipefs answering
/// "nothing found" (blkid -p exits 2 with no output, as in local/blkid-p-export.empty-disk.txt;
/// wipefs prints nothing and exits 0, as in local/wipefs-no-act.empty-disk.txt).
pub fn fake_machine() -> FakeSystem {
    let mut f = FakeSystem::new();
    f.file("/proc/self/mounts", "/dev/vda1 / ext4 rw,relatime 0 0\n")
        .file("/proc/swaps", "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n")
        .block_device("/dev/vda", 254, 0)
        .block_device("/dev/vda1", 254, 1)
        .answer(
            "blkid -p",
            Canned { status: 2, stdout: fixture("local/blkid-p-export.empty-disk.txt"), stderr: String::new() },
        )
        .answer("wipefs", Canned::ok(fixture("local/wipefs-no-act.empty-disk.txt")))
        .answer("xfs_info", Canned::ok(fixture("local/xfs_info.txt")));
    f
}

/// After a successful `mount -t xfs ...`, /proc/self/mounts also lists `line`.
pub fn mount_adds(f: &mut FakeSystem, line: &str) {
    let before = f.files.get(Path::new("/proc/self/mounts")).cloned().unwrap_or_default();
    f.on_run("mount -t xfs", "/proc/self/mounts", format!("{before}{line}\n"));
}

/// A /proc/mounts line from a captured one (local/proc-mounts.*), with its source and target
/// replaced by this test's (the options are kept verbatim).
pub fn mounts_line_from(fixture_name: &str, source: &str, target: &Path) -> String {
    let text = fixture(fixture_name);
    let f: Vec<&str> = text.split_whitespace().collect();
    format!("{source} {} {} {} {} {}", target.display(), f[2], f[3], f[4], f[5])
}

pub struct Outcome {
    pub plan: Plan,
    pub result: Result<Provisioned, ProvisionError>,
    pub notes: Vec<String>,
    pub journal_text: String,
    pub _dir: tempfile::TempDir,
}

/// Builds the real (not emulated) plan and executes it on `sys`. The journal lives in a temp
/// directory and is never torn down (the fake machine's undos must not run for real).
pub fn run_plan(specs: &[DeviceSpec], ctx: &PlanContext, sys: &mut dyn System) -> Outcome {
    let plan = build_plan(specs, ctx);
    let dir = tempfile::tempdir().unwrap();
    let journal = Journal::begin(dir.path(), "fake", "test").unwrap();
    let cancel = AtomicBool::new(false);
    let mut notes = Vec::new();
    let result = execute(&plan, specs, sys, &journal, &cancel, &mut |e| {
        if let tiers::Event::Note(n) = e {
            notes.push(n)
        }
    });
    let journal_text = std::fs::read_to_string(journal.path()).unwrap();
    Outcome { plan, result, notes, journal_text, _dir: dir }
}

/// The refusal of a failed run (panics on anything else).
pub fn refusal(o: &Outcome) -> tiers::safety::Refusal {
    match &o.result {
        Err(ProvisionError::Refused { refusal, .. }) => (**refusal).clone(),
        Err(e) => panic!("expected a refusal, got: {e}"),
        Ok(_) => panic!("expected a refusal, but provisioning succeeded"),
    }
}

pub fn step_error(o: &Outcome) -> String {
    match &o.result {
        Err(ProvisionError::Step { cause, .. }) => cause.clone(),
        Err(e) => panic!("expected a step error, got: {e}"),
        Ok(_) => panic!("expected an error, but provisioning succeeded"),
    }
}
