//! The emulated NVMe/TCP tier with a sub-millisecond added latency, for real: two NBD devices
//! (no delay, and 200 µs through the microsecond plugin that nbdkit's cc plugin compiles), each
//! nbdkit in its own network namespace behind nbdfuse and a loop device. 4 KiB O_DIRECT reads on
//! the two loop devices, interleaved, must differ by about the delay. Needs root (and a C
//! compiler for nbdkit's cc plugin); PGTIER_SKIP_ROOT_TESTS=1 skips explicitly.

mod common;

use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use common::root_or_skip;
use journal::Journal;
use tiers::spec::{DeviceClass, DeviceSpec};
use tiers::system::RealSystem;
use tiers::{PlanContext, build_plan, execute};

fn nbd(name: &str, latency: Option<Duration>) -> DeviceSpec {
    let mut d = DeviceSpec::new(name, DeviceClass::NvmeTcp, common::unused_local());
    d.emulation.latency = latency;
    d
}

/// Median microseconds of `n` 4 KiB O_DIRECT reads at pseudo-random offsets of each device,
/// interleaved so that both see the same background load.
fn medians(devs: &[&Path], n: usize) -> Vec<f64> {
    let files: Vec<std::fs::File> = devs
        .iter()
        .map(|d| std::fs::OpenOptions::new().read(true).custom_flags(libc::O_DIRECT).open(d).unwrap())
        .collect();
    let layout = std::alloc::Layout::from_size_align(4096, 4096).unwrap();
    // SAFETY: a 4 KiB, 4 KiB-aligned allocation (O_DIRECT needs the alignment), freed below.
    let ptr = unsafe { std::alloc::alloc(layout) };
    let buf = unsafe { std::slice::from_raw_parts_mut(ptr, 4096) };
    let mut samples = vec![Vec::with_capacity(n); files.len()];
    let mut x: u64 = 0x9e3779b97f4a7c15;
    for _ in 0..n {
        for (i, f) in files.iter().enumerate() {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let offset = ((x >> 33) % (256 << 8)) * 4096; // within the first 256 MiB
            let t = Instant::now();
            f.read_exact_at(buf, offset).unwrap();
            samples[i].push(t.elapsed().as_secs_f64() * 1e6);
        }
    }
    unsafe { std::alloc::dealloc(ptr, layout) };
    samples
        .into_iter()
        .map(|mut s| {
            s.sort_by(|a, b| a.partial_cmp(b).unwrap());
            s[s.len() / 2]
        })
        .collect()
}

#[test]
fn a_200_microsecond_delay_is_added_to_every_read() {
    if !root_or_skip() {
        return;
    }
    let base = tempfile::Builder::new().prefix("pgtier-latency-test-").tempdir_in("/var/tmp").unwrap();
    let work_dir = base.path().join("work");
    let log_dir = base.path().join("logs");
    std::fs::create_dir_all(&log_dir).unwrap();
    let ctx = PlanContext {
        short_id: format!("{:05x}", std::process::id() & 0xfffff),
        work_dir: work_dir.clone(),
        log_dir,
        owner_uid: 0,
        owner_gid: 0,
        emulate: true,
    };
    let specs = vec![nbd("plain", None), nbd("slow", Some(Duration::from_micros(200)))];
    let plan = build_plan(&specs, &ctx);
    let journal = Journal::begin(&base.path().join("journal"), "latency-test", "test").unwrap();
    let cancel = AtomicBool::new(false);
    let result = execute(&plan, &specs, &mut RealSystem, &journal, &cancel, &mut |_| {});
    let measured = std::panic::catch_unwind(|| {
        let p = result.as_ref().unwrap_or_else(|e| panic!("provisioning: {e}"));
        let slow = p.device("slow").unwrap();
        assert!(slow.description.contains("+200 µs per read and write (nbdkit cc plugin"), "{}", slow.description);
        let devs = [p.device("plain").unwrap().block_device.as_path(), slow.block_device.as_path()];
        medians(&devs, 400)
    });
    let report = journal.teardown(|_, _| {});
    assert!(report.is_clean(), "teardown failed: {:?}", report.failed);
    assert!(!work_dir.exists());
    let m = measured.unwrap_or_else(|e| std::panic::resume_unwind(e));
    let added = m[1] - m[0];
    eprintln!(
        "4 KiB O_DIRECT read through nbdkit+nbdfuse+loop, median: no delay {:.0} µs, 200 µs delay {:.0} µs, added {added:.0} µs",
        m[0], m[1]
    );
    assert!(added >= 150.0, "the plugin adds about 200 µs: medians {m:?}");
}
