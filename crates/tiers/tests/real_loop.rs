//! The real-device path on this machine, on loop devices each test makes itself (sparse file +
//! `losetup --find --show`) and removes again, also when it fails: every refusal that can be
//! staged here (mounted, mounted in another mount namespace, swap, held open or mapped by a
//! process, backing a loop device, xfs/ext4 signature, not a block device), with the device's contents checked unchanged afterwards, and the provisioning
//! of a blank device through a stable name. Needs root; PGTIER_SKIP_ROOT_TESTS=1 skips
//! explicitly. (No partition tables on this kernel and no device-mapper: those refusals are in
//! tests/fake_devices.rs.)

mod common;

use std::hash::{DefaultHasher, Hasher};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use common::*;
use journal::Journal;
use tiers::safety::Refusal;
use tiers::system::RealSystem;
use tiers::{DaxPolicy, DeviceSpec, PlanContext, ProvisionError, Provisioned, build_plan, execute};

fn sh(program: &str, args: &[&str]) -> String {
    let out = Command::new(program).args(args).output().unwrap_or_else(|e| panic!("{program}: {e}"));
    assert!(out.status.success(), "{program} {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn mounted_at(target: &Path) -> bool {
    journal::mounts::is_mountpoint(target)
}

/// A loop device over a sparse file in its own directory; detached and deleted on drop.
struct LoopDisk {
    dir: tempfile::TempDir,
    file: PathBuf,
    dev: PathBuf,
    mounts: Vec<PathBuf>,
    swap: bool,
}

impl LoopDisk {
    fn new(size: u64) -> LoopDisk {
        let dir = tempfile::Builder::new().prefix("pgtier-safety-").tempdir_in("/var/tmp").unwrap();
        let file = dir.path().join("disk.img");
        std::fs::File::create(&file).unwrap().set_len(size).unwrap();
        let dev = PathBuf::from(sh("losetup", &["--find", "--show", file.to_str().unwrap()]).trim());
        // The guard exists before anything can panic, so the device is always detached.
        let disk = LoopDisk { dir, file, dev, mounts: Vec::new(), swap: false };
        assert!(disk.path().starts_with("/dev/loop"), "{}", disk.path());
        disk
    }

    fn path(&self) -> &str {
        self.dev.to_str().unwrap()
    }

    fn mount(&mut self, name: &str) -> PathBuf {
        let at = self.dir.path().join(name);
        std::fs::create_dir_all(&at).unwrap();
        self.mounts.push(at.clone());
        sh("mount", &[self.path(), at.to_str().unwrap()]);
        at
    }

    /// A hash of every byte of the device (through its backing file).
    fn hash(&self) -> u64 {
        sh("sync", &[]);
        let mut f = std::fs::File::open(&self.file).unwrap();
        let mut h = DefaultHasher::new();
        let mut buf = vec![0u8; 1 << 20];
        loop {
            let n = f.read(&mut buf).unwrap();
            if n == 0 {
                break;
            }
            h.write(&buf[..n]);
        }
        h.finish()
    }

    fn attached(&self) -> bool {
        journal::undo::loops_backed_by(&self.file).contains(&self.dev)
    }
}

impl Drop for LoopDisk {
    fn drop(&mut self) {
        for m in self.mounts.iter().rev() {
            if mounted_at(m) {
                let _ = Command::new("umount").arg(m).status();
            }
        }
        if self.swap {
            let _ = Command::new("swapoff").arg(&self.dev).status();
        }
        let _ = Command::new("losetup").arg("-d").arg(&self.dev).status();
        let start = Instant::now();
        while !journal::undo::loops_backed_by(&self.file).is_empty() && start.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

struct RealRun {
    result: Result<Provisioned, ProvisionError>,
    notes: Vec<String>,
    work_dir: PathBuf,
}

/// Plans and provisions `specs` for real (not emulated) below `base`, then tears down from the
/// journal and checks that the teardown was clean and the work directory is gone.
fn provision_and_tear_down(base: &Path, specs: &[DeviceSpec], check: impl FnOnce(&Provisioned)) -> RealRun {
    let work_dir = base.join("work");
    let ctx = PlanContext {
        short_id: "rl".into(),
        work_dir: work_dir.clone(),
        log_dir: base.to_path_buf(),
        owner_uid: 0,
        owner_gid: 0,
        emulate: false,
    };
    let plan = build_plan(specs, &ctx);
    let journal = Journal::begin(&base.join("journal"), "real-loop", "test").unwrap();
    let cancel = AtomicBool::new(false);
    let mut notes = Vec::new();
    let result = execute(&plan, specs, &mut RealSystem, &journal, &cancel, &mut |e| {
        if let tiers::Event::Note(n) = e {
            notes.push(n)
        }
    });
    let checked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        if let Ok(p) = &result {
            check(p)
        }
    }));
    let report = journal.teardown(|_, _| {});
    assert!(report.is_clean(), "teardown failed: {:?}", report.failed);
    assert!(!work_dir.exists(), "work dir removed");
    if let Err(e) = checked {
        std::panic::resume_unwind(e);
    }
    RealRun { result, notes, work_dir }
}

fn refused(run: &RealRun) -> Refusal {
    match &run.result {
        Err(ProvisionError::Refused { refusal, .. }) => (**refusal).clone(),
        Err(e) => panic!("expected a refusal, got: {e}"),
        Ok(_) => panic!("expected a refusal, but the device was provisioned"),
    }
}

fn no_mount_below(work_dir: &Path) {
    assert!(journal::mounts::mounts_under(work_dir).is_empty());
}

#[test]
fn refuses_a_mounted_device_even_when_wiping_is_allowed() {
    if !root_or_skip() {
        return;
    }
    let mut disk = LoopDisk::new(64 << 20);
    sh("mkfs.ext4", &["-q", "-F", disk.path()]);
    let m = disk.mount("m");
    std::fs::write(m.join("marker"), "data that matters\n").unwrap();
    sh("sync", &[]);
    let uuid = sh("blkid", &["-s", "UUID", "-o", "value", disk.path()]);
    let mut d = local("data", disk.path());
    d.allow_wipe = true;
    let run = provision_and_tear_down(disk.dir.path(), &[d], |_| {});
    assert_eq!(
        refused(&run),
        Refusal::Mounted { device: disk.path().into(), target: m.display().to_string(), via: None }
    );
    assert!(mounted_at(&m), "still mounted");
    assert_eq!(std::fs::read_to_string(m.join("marker")).unwrap(), "data that matters\n");
    assert_eq!(sh("blkid", &["-s", "UUID", "-o", "value", disk.path()]), uuid);
    no_mount_below(&run.work_dir);
}

#[test]
fn refuses_a_device_mounted_only_in_another_mount_namespace() {
    if !root_or_skip() {
        return;
    }
    let disk = LoopDisk::new(64 << 20);
    sh("mkfs.ext4", &["-q", "-F", disk.path()]);
    let hidden = disk.dir.path().join("hidden");
    std::fs::create_dir_all(&hidden).unwrap();
    // A process in a private mount namespace mounts the device and stays; this namespace does
    // not see that mount (the situation of emulation-findings pitfall 6).
    let mut holder = Command::new("unshare")
        .args(["--mount", "--propagation", "private", "--", "sh", "-c", "mount \"$1\" \"$2\" && exec sleep 60", "sh"])
        .arg(&disk.dev)
        .arg(&hidden)
        .spawn()
        .unwrap();
    let start = Instant::now();
    let busy = loop {
        let b = tiers::system::System::busy(&mut RealSystem, &disk.dev).unwrap();
        if b || start.elapsed() > Duration::from_secs(10) {
            break b;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let run = (busy && !mounted_at(&hidden)).then(|| {
        let mut d = local("data", disk.path());
        d.allow_wipe = true;
        provision_and_tear_down(disk.dir.path(), &[d], |_| {})
    });
    let _ = holder.kill();
    let _ = holder.wait();
    assert!(busy, "the other namespace's mount makes the device busy");
    assert_eq!(refused(&run.expect("not visible here")), Refusal::Busy { device: disk.path().into() });
}

#[test]
fn refuses_a_device_in_use_as_swap() {
    if !root_or_skip() {
        return;
    }
    let mut disk = LoopDisk::new(64 << 20);
    sh("mkswap", &["-q", disk.path()]);
    sh("swapon", &[disk.path()]);
    disk.swap = true;
    let hash = disk.hash();
    let mut d = local("data", disk.path());
    d.allow_wipe = true;
    let run = provision_and_tear_down(disk.dir.path(), &[d], |_| {});
    assert_eq!(refused(&run), Refusal::Swap { device: disk.path().into(), via: None });
    assert!(std::fs::read_to_string("/proc/swaps").unwrap().contains(disk.path()), "still swap");
    sh("swapoff", &[disk.path()]);
    disk.swap = false;
    assert_eq!(disk.hash(), hash, "device contents unchanged");
}

/// A process started to hold the device, killed (and reaped) on drop.
struct Holder(std::process::Child);

impl Holder {
    /// `sh -c script sh <device>`; waits until it printed its first line (it holds the device).
    fn start(script: &str, dev: &Path) -> Holder {
        let mut child = Command::new("sh")
            .args(["-c", script, "sh"])
            .arg(dev)
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufRead::read_line(&mut std::io::BufReader::new(child.stdout.take().unwrap()), &mut line).unwrap();
        assert_eq!(line.trim(), "holding", "the holder started");
        Holder(child)
    }
    fn pid(&self) -> u32 {
        self.0.id()
    }
}

impl Drop for Holder {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A program that opens the disk normally (as qemu's raw disk, tgtd, fio or Ceph BlueStore do)
/// is invisible to O_EXCL and to holders/: the scan of /proc finds it, by PID and command, and
/// not one byte changes, even with allow_wipe. The same for a process that only maps it.
#[test]
fn refuses_a_device_a_process_holds_open_or_mapped_and_leaves_every_byte_alone() {
    if !root_or_skip() {
        return;
    }
    let disk = LoopDisk::new(512 << 20);
    sh("mkfs.ext4", &["-q", "-F", "-L", "live", disk.path()]);
    let hash = disk.hash();
    let busy = tiers::system::System::busy(&mut RealSystem, &disk.dev).unwrap();
    assert!(!busy, "the kernel does not see an ordinary open: this is what the scan is for");
    // `exec 3<>` opens read-write and keeps it across exec, as a daemon keeps its disk.
    let holder = Holder::start("exec 3<>\"$1\"; echo holding; exec sleep 120", &disk.dev);
    let mut d = local("data", disk.path());
    d.allow_wipe = true;
    let run = provision_and_tear_down(disk.dir.path(), std::slice::from_ref(&d), |_| {});
    match refused(&run) {
        Refusal::OpenedBy { device, processes } => {
            assert_eq!(device, disk.path());
            assert!(
                processes.contains(&format!(
                    "PID {} (sleep) has it open read-write (fd 3, {})",
                    holder.pid(),
                    disk.path()
                )),
                "{processes}"
            );
        }
        r => panic!("{r}"),
    }
    drop(holder);
    assert_eq!(disk.hash(), hash, "device contents unchanged");
    // Mapped, the descriptor closed: still a user.
    let mapper = Holder::start(
        "exec python3 -c 'import mmap, os, sys, time\nfd = os.open(sys.argv[1], os.O_RDONLY)\nm = mmap.mmap(fd, 4096, prot=mmap.PROT_READ)\nos.close(fd)\nprint(\"holding\", flush=True)\ntime.sleep(120)' \"$1\"",
        &disk.dev,
    );
    let run = provision_and_tear_down(disk.dir.path(), std::slice::from_ref(&d), |_| {});
    match refused(&run) {
        Refusal::OpenedBy { processes, .. } => {
            assert!(
                processes.contains(&format!("PID {} (python3) has it mapped ({})", mapper.pid(), disk.path())),
                "{processes}"
            );
        }
        r => panic!("{r}"),
    }
    drop(mapper);
    assert_eq!(disk.hash(), hash, "device contents unchanged");
}

/// A loop device whose backing file is the disk: the kernel opens it without a holder and
/// without a process, so only the loop device's backing_file shows it.
#[test]
fn refuses_a_device_that_backs_a_loop_device() {
    if !root_or_skip() {
        return;
    }
    let disk = LoopDisk::new(512 << 20);
    let hash = disk.hash();
    let upper = sh("losetup", &["--find", "--show", disk.path()]).trim().to_string();
    let detach = scopeguard(|| {
        let _ = Command::new("losetup").args(["-d", &upper]).status();
    });
    let mut d = local("data", disk.path());
    d.allow_wipe = true;
    let run = provision_and_tear_down(disk.dir.path(), &[d], |_| {});
    match refused(&run) {
        Refusal::Exported { device, paths } => {
            assert_eq!(device, disk.path());
            let loop_name = upper.trim_start_matches("/dev/");
            assert_eq!(
                paths,
                format!(
                    "/sys/class/block/{loop_name}/loop/backing_file ({}: the backing file of loop device {upper})",
                    disk.path()
                )
            );
        }
        r => panic!("{r}"),
    }
    drop(detach);
    assert_eq!(disk.hash(), hash, "device contents unchanged");
}

/// Runs `f` on drop.
fn scopeguard(f: impl FnOnce()) -> impl Drop {
    struct Guard<F: FnOnce()>(Option<F>);
    impl<F: FnOnce()> Drop for Guard<F> {
        fn drop(&mut self) {
            if let Some(f) = self.0.take() {
                f()
            }
        }
    }
    Guard(Some(f))
}

#[test]
fn refuses_an_xfs_signature_and_leaves_every_byte_alone() {
    if !root_or_skip() {
        return;
    }
    let disk = LoopDisk::new(512 << 20);
    sh("mkfs.xfs", &["-q", "-L", "keepme", disk.path()]);
    let hash = disk.hash();
    let run = provision_and_tear_down(disk.dir.path(), &[local("data", disk.path())], |_| {});
    match refused(&run) {
        Refusal::HasSignature { device, found } => {
            assert_eq!(device, disk.path());
            assert!(
                found.contains(&format!("a xfs filesystem signature on {} (label keepme)", disk.path())),
                "{found}"
            );
        }
        r => panic!("{r}"),
    }
    assert_eq!(disk.hash(), hash, "device contents unchanged");
}

#[test]
fn refuses_an_ext4_signature_and_leaves_every_byte_alone() {
    if !root_or_skip() {
        return;
    }
    let disk = LoopDisk::new(64 << 20);
    sh("mkfs.ext4", &["-q", "-F", disk.path()]);
    let hash = disk.hash();
    let run = provision_and_tear_down(disk.dir.path(), &[local("data", disk.path())], |_| {});
    match refused(&run) {
        Refusal::HasSignature { found, .. } => assert!(found.contains("a ext4 filesystem signature"), "{found}"),
        r => panic!("{r}"),
    }
    assert_eq!(disk.hash(), hash, "device contents unchanged");
}

#[test]
fn refuses_a_path_that_is_not_a_block_device() {
    if !root_or_skip() {
        return;
    }
    let dir = tempfile::Builder::new().prefix("pgtier-safety-").tempdir_in("/var/tmp").unwrap();
    let file = dir.path().join("not-a-disk");
    std::fs::write(&file, "contents that matter\n").unwrap();
    let mut d = local("data", file.to_str().unwrap());
    d.allow_wipe = true;
    let run = provision_and_tear_down(dir.path(), &[d], |_| {});
    assert_eq!(
        refused(&run),
        Refusal::NotBlockDevice { device: file.display().to_string(), what: "it is a regular file".into() }
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "contents that matter\n");
}

#[test]
fn a_blank_device_by_a_stable_name_is_formatted_mounted_and_torn_down_without_wiping() {
    if !root_or_skip() {
        return;
    }
    let disk = LoopDisk::new(512 << 20);
    // A stable name, as /dev/disk/by-id/... would be.
    let by_id = disk.dir.path().join("by-id");
    std::fs::create_dir_all(&by_id).unwrap();
    let link = by_id.join("nvme-PGTIER_TEST_DISK");
    std::os::unix::fs::symlink(&disk.dev, &link).unwrap();
    let mut d = local("fast", link.to_str().unwrap());
    d.mount_options = vec!["noatime".into(), "logbsize=256k".into()];
    let dev = disk.dev.clone();
    let run = provision_and_tear_down(disk.dir.path(), &[d], |p| {
        let f = p.device("fast").unwrap();
        assert_eq!(f.block_device, dev);
        let m = journal::mounts::find(&f.mountpoint).expect("mounted");
        assert_eq!(m.fstype, "xfs");
        assert!(m.options.iter().any(|o| o == "noatime") && m.options.iter().any(|o| o == "logbsize=256k"));
        assert!(f.facts.xfs_info.is_some() && f.facts.loop_backing_file.is_some());
        let cmds: Vec<&str> = p.commands.iter().map(|c| c.command.as_str()).collect();
        assert!(cmds.contains(&format!("mkfs.xfs -L fast {}", dev.display()).as_str()), "no -f: {cmds:?}");
        assert!(cmds.iter().any(|c| c.starts_with("blkid -p -o export")), "{cmds:?}");
        std::fs::write(f.mountpoint.join("hello"), "x").unwrap();
    });
    run.result.as_ref().unwrap_or_else(|e| panic!("{e}"));
    no_mount_below(&run.work_dir);
    assert!(disk.attached(), "teardown leaves a real device attached: it never detaches or wipes it");
    let after = sh("blkid", &["-p", "-o", "value", "-s", "TYPE", disk.path()]);
    assert_eq!(after.trim(), "xfs", "teardown does not format");
}

#[test]
fn dax_on_a_loop_device_falls_back_optional_carries_on_required_fails() {
    if !root_or_skip() {
        return;
    }
    let disk = LoopDisk::new(512 << 20);
    let mut d = local("pm", disk.path());
    d.dax = DaxPolicy::Optional;
    let run = provision_and_tear_down(disk.dir.path(), std::slice::from_ref(&d), |p| {
        let dax = &p.device("pm").unwrap().mount.dax;
        assert!(!dax.honoured && !dax.in_mount_options, "{dax:?}");
        assert_eq!(dax.statx_dax, Some(false), "XFS reports the DAX attribute, unset");
    });
    run.result.as_ref().unwrap_or_else(|e| panic!("{e}"));
    assert!(run.notes.iter().any(|n| n.contains("NOT honoured") && n.contains("dax=never")), "{:?}", run.notes);
    let cmds = run.result.as_ref().unwrap().commands.iter().map(|c| c.command.clone()).collect::<Vec<_>>();
    assert!(cmds.iter().any(|c| c.starts_with("mkfs.xfs -m reflink=0")), "{cmds:?}");

    // Now the device holds the XFS made above: wiping must be allowed to reuse it.
    d.dax = DaxPolicy::Required;
    let run = provision_and_tear_down(disk.dir.path(), std::slice::from_ref(&d), |_| {});
    assert!(matches!(refused(&run), Refusal::HasSignature { .. }));
    d.allow_wipe = true;
    let run = provision_and_tear_down(disk.dir.path(), &[d], |_| {});
    match &run.result {
        Err(ProvisionError::Step { cause, .. }) => {
            assert!(cause.contains("DAX was required but is not in effect"), "{cause}")
        }
        other => panic!("expected the DAX failure, got {:?}", other.as_ref().map(|_| ())),
    }
    no_mount_below(&run.work_dir);
}
