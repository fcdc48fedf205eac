//! pgtier's real-device paths on a real kernel with virtual hardware: each test boots the guest
//! of `cargo xtask vm` (Debian 12, Linux 6.1 under qemu's TCG, see xtask/src/vm/) and runs a
//! script there (xtask/tests/vm/*.sh) that drives pgtier's real mode (no --emulate) against
//! NVMe drives, NVDIMM namespaces and the guest's own NVMe/TCP target, named the way a user
//! names them (/dev/disk/by-id/..., the namespace, the target's NQN). Files the script writes
//! to /job/out are checked here.
//!
//! Needs root, qemu-system-x86 and mmdebstrap (installed from the package archive if missing)
//! and, the first time, the package archive to build the guest image (about 5 minutes; cached
//! in /var/cache/pgtier/vm). The suite runs every VM test but one: the tools' outputs against
//! the parsers, seed 000 on real NVMe and PMem, seed 003's NVMe/TCP path (partitions, two
//! namespaces of one subsystem, a short pgbench run), the safety rails, the interrupted runs and
//! the guest as its own NVMe/TCP target host in its full form (vm/target_host.rs); measured one
//! by one on 2026-12-05 at load 2-5: 49 s, 110 s, (seed 003: see docs), 77 s, 175 s, 254 s. The
//! one left out is the target host's quick form, `#[ignore]`d because the full form runs the
//! same cases: `cargo test -p xtask --test vm -- --ignored` or `PGTIER_VM_TESTS=all cargo
//! xtask test` runs it. PGTIER_SKIP_VM_TESTS=1 skips them explicitly; without root they
//! follow PGTIER_SKIP_ROOT_TESTS like the other integration tests; when neither a cached image
//! nor the archive is there they are skipped with a message (see `skip`: under CI=true, or with
//! PGTIER_REQUIRE_VM_TESTS=1, they fail instead).
//! One guest at a time: under TCG every guest wants both host cores.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use tiers::inspect::{blkid, dmesg, lsblk, ndctl, nvme, parted, wipefs, xfs};

/// Guests run one after the other.
static ONE_GUEST: Mutex<()> = Mutex::new(());

fn xtask() -> Command {
    Command::new(env!("CARGO_BIN_EXE_xtask"))
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

fn guest_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/vm")
}

/// Why the VM tests cannot run here, if they cannot (then they are skipped, unless required).
fn unavailable() -> Option<String> {
    static WHY: OnceLock<Option<String>> = OnceLock::new();
    WHY.get_or_init(|| {
        let info = xtask().args(["vm", "info"]).output().expect("run xtask vm info");
        let info = String::from_utf8_lossy(&info.stdout).into_owned();
        if info.contains("image: not built yet") {
            let reachable = std::net::ToSocketAddrs::to_socket_addrs(&("deb.debian.org", 80))
                .ok()
                .and_then(|mut a| a.next())
                .is_some_and(|a| std::net::TcpStream::connect_timeout(&a, Duration::from_secs(10)).is_ok());
            if !reachable {
                return Some("no cached guest image, and deb.debian.org (the package archive) is not reachable".into());
            }
        }
        let t = Instant::now();
        let out = xtask().args(["vm", "build"]).output().expect("run xtask vm build");
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "cargo xtask vm build failed:\n{err}");
        eprintln!(
            "vm: guest image ready ({:.0} s): {}",
            t.elapsed().as_secs_f64(),
            String::from_utf8_lossy(&out.stdout).trim()
        );
        None
    })
    .clone()
}

/// True when the VM test should run; false (after saying why, see `skip`) when it is skipped.
/// The long ones are `#[ignore]`d: `cargo test -p xtask --test vm -- --ignored` runs them, and
/// so does `PGTIER_VM_TESTS=all cargo xtask test`.
fn vm_or_skip() -> bool {
    if std::env::var("PGTIER_SKIP_VM_TESTS").as_deref() == Ok("1") {
        return common::skip("VM test (PGTIER_SKIP_VM_TESTS=1)");
    }
    if !common::root_or_skip() {
        return false;
    }
    if let Some(why) = unavailable() {
        if std::env::var("PGTIER_REQUIRE_VM_TESTS").as_deref() == Ok("1") {
            panic!("the VM tests are required (PGTIER_REQUIRE_VM_TESTS=1) but cannot run: {why}");
        }
        return common::skip(&format!("VM test: {why}"));
    }
    true
}

/// One boot: the job directory (shared at /job) and what came back.
struct Guest {
    dir: tempfile::TempDir,
    status: Option<i32>,
    stdout: String,
    stderr: String,
    seconds: f64,
}

impl Guest {
    fn out(&self, name: &str) -> String {
        let p = self.dir.path().join("out").join(name);
        std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}\n{}", p.display(), self.transcript()))
    }
    fn out_path(&self) -> PathBuf {
        self.dir.path().join("out")
    }
    fn transcript(&self) -> String {
        let console = std::fs::read_to_string(self.dir.path().join(".vm/console.log")).unwrap_or_default();
        let tail: Vec<&str> = console.lines().rev().take(20).collect::<Vec<_>>().into_iter().rev().collect();
        format!(
            "guest status {:?} after {:.0} s\n--- stdout\n{}\n--- stderr\n{}\n--- console (last lines)\n{}",
            self.status,
            self.seconds,
            self.stdout,
            self.stderr,
            tail.join("\n")
        )
    }
    fn assert_ok(&self) {
        assert_eq!(self.status, Some(0), "the guest script failed\n{}", self.transcript());
    }
}

/// `cargo xtask vm run`'s exit status when the guest's kernel hung (a soft lockup of minutes,
/// xtask/src/vm/machine.rs) and the guest was killed.
const KERNEL_HUNG: i32 = 123;

/// Boots the guest and runs xtask/tests/vm/`script` there with `files` in /job. A guest whose
/// kernel hangs boots once more: Debian 12's 6.1 kernel under TCG deadlocked once in CI with
/// both vCPUs in soft lockup (2026-12-05, seed 003, from 290 s on), a failure of the guest's
/// kernel that pgtier's code in user space cannot cause or cure. The retry is said on stderr
/// with the first boot's report; a second hang fails the test.
fn boot(script: &str, files: &[(&str, &str)], timeout: Duration) -> Guest {
    let first = boot_once(script, files, timeout);
    if first.status != Some(KERNEL_HUNG) {
        return first;
    }
    eprintln!(
        "vm: {script}: the guest's kernel hung after {:.0} s ({}); booting once more",
        first.seconds,
        first.stderr.lines().find(|l| l.contains("kernel hung")).unwrap_or_default()
    );
    boot_once(script, files, timeout)
}

fn boot_once(script: &str, files: &[(&str, &str)], timeout: Duration) -> Guest {
    let _one = ONE_GUEST.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::Builder::new().prefix("pgtier-vmtest-").tempdir_in("/var/tmp").unwrap();
    for f in ["lib.sh", script] {
        std::fs::copy(guest_dir().join(f), dir.path().join(f)).unwrap();
    }
    for (name, text) in files {
        std::fs::write(dir.path().join(name), text).unwrap();
    }
    let t = Instant::now();
    let out = xtask()
        .args(["vm", "run", "--timeout", &timeout.as_secs().to_string(), "--job-dir"])
        .arg(dir.path())
        .args(["--", "bash", &format!("/job/{script}")])
        .output()
        .expect("run xtask vm run");
    let g = Guest {
        status: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        seconds: t.elapsed().as_secs_f64(),
        dir,
    };
    eprintln!("vm: {script}: {:.0} s, {}", g.seconds, g.stderr.lines().last().unwrap_or_default());
    g
}

// ---- the real tools' output, read by pgtier's parsers ----

/// What the parsers must read from the guest's captures (xtask/tests/vm/capture.sh): run on
/// the live output of a boot, and on the copy kept in crates/tiers/tests/fixtures/vm/.
fn check_captures(dir: &Path) {
    let read = |name: &str| std::fs::read_to_string(dir.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
    let rc = |name: &str| read(&format!("{name}.rc")).trim().parse::<i32>().unwrap();

    // ndctl 76: `-N` hides a disabled namespace, `-N -i` shows it (as raw, state disabled).
    let idle = ndctl::parse_list(&read("ndctl-list-N-i.labelled-idle.json")).unwrap();
    assert!(idle.iter().all(|n| !n.enabled && n.size_bytes == Some(0)), "{idle:?}");
    let made = ndctl::parse_create_namespace(&read("ndctl-create-namespace.fsdax-named.json")).unwrap();
    assert_eq!(
        (made.mode.as_str(), made.blockdev.as_deref(), made.name.as_deref()),
        ("fsdax", Some("pmem0"), Some("pgt-data"))
    );
    assert_eq!(made.align, Some(2 << 20));
    let two = ndctl::parse_list(&read("ndctl-list-N.two-fsdax.json")).unwrap();
    assert_eq!(two.len(), 2);
    let shown = ndctl::parse_list(&read("ndctl-list-N.one-disabled.json")).unwrap();
    assert!(ndctl::find(&shown, "namespace1.0").is_none(), "ndctl list -N hides the disabled namespace");
    let all = ndctl::parse_list(&read("ndctl-list-N-i.one-disabled.json")).unwrap();
    let disabled = ndctl::find(&all, "namespace1.0").expect("ndctl list -N -i shows it");
    assert!(!disabled.enabled && disabled.mode == ndctl::PmemMode::Raw && disabled.blockdev.is_none(), "{disabled:?}");
    assert_eq!(disabled.name.as_deref(), Some("pgt-wal"));
    let back = ndctl::parse_create_namespace(&read("ndctl-create-namespace-fe-fsdax.from-disabled.json")).unwrap();
    assert_eq!((back.mode.as_str(), back.blockdev.as_deref()), ("fsdax", Some("pmem1")));
    let devdax = ndctl::parse_create_namespace(&read("ndctl-create-namespace-fe-devdax.json")).unwrap();
    assert_eq!((devdax.mode.as_str(), devdax.chardev.as_deref()), ("devdax", Some("dax1.0")));
    let listed = ndctl::parse_list(&read("ndctl-list-N-i.devdax.json")).unwrap();
    assert_eq!(ndctl::find(&listed, "namespace1.0").unwrap().chardev.as_deref(), Some("dax1.0"));

    // XFS on PMem with the PMem options, DAX in effect; 2 KiB blocks: the kernel turns DAX off.
    let info = xfs::parse_info(&read("xfs_info.pmem-su2m.txt")).unwrap();
    assert_eq!((info.reflink, info.sunit * info.block_size as u64, info.swidth), (Some(false), 2 << 20, 512));
    let mounted = read("proc-mounts.xfs-dax-always.pmem.txt");
    assert!(mounted.contains(",dax=always,"), "{mounted}");
    let statx = read("xfs_io-statx-r.dax.txt");
    assert!(statx.contains("stat.attributes = 0x200000"), "STATX_ATTR_DAX set: {statx}");
    let fallback = read("proc-mounts.xfs-dax-blocksize-fallback.pmem.txt");
    assert!(!fallback.contains("dax=always"), "{fallback}");
    let log = read("dmesg.xfs-dax.txt");
    assert!(dmesg::dax_messages(&log, "pmem0").iter().any(|m| m.starts_with("DAX enabled")), "{log}");
    assert_eq!(
        dmesg::dax_messages(&log, "pmem1").last().map(String::as_str),
        Some("DAX not supported for blocksize. Turning off DAX.")
    );
    assert!(dmesg::dax_fallback_devices(&log).is_empty(), "no 'unsupported by block device' on real PMem");

    // nvme-cli 2.3.
    let v = nvme::parse_version(&read("nvme-version.txt")).unwrap();
    assert_eq!((v.major, v.minor, v.libnvme.as_deref()), (2, 3, Some("1.3")));
    let pcie = nvme::parse_list(&read("nvme-list-o-json.pcie.json")).unwrap();
    assert_eq!(pcie.len(), 6);
    assert!(pcie.iter().all(|n| n.model.as_deref() == Some("QEMU NVMe Ctrl") && n.size_bytes == Some(1 << 30)));
    assert!(pcie.iter().any(|n| n.serial.as_deref() == Some("PGT-DATA")));
    let subs = nvme::parse_list_subsys(&read("nvme-list-subsys-o-json.pcie.json")).unwrap();
    assert_eq!(subs.len(), 6);
    assert!(subs.iter().any(|s| s.nqn == "nqn.2019-08.org.qemu:PGT-DATA" && s.controllers[0].transport == "pcie"));
    let ctrl = nvme::parse_id_ctrl(&read("nvme-id-ctrl-o-json.qemu.json")).unwrap();
    assert_eq!(ctrl.model, "QEMU NVMe Ctrl");
    let created =
        nvme::connected_device(&read("nvme-connect-o-json.tcp.json")).expect("connect -o json names the controller");
    assert_eq!(rc("nvme-connect.tcp.already-connected.txt"), 1);
    assert!(read("nvme-connect.tcp.already-connected.txt.stderr").contains("already connected"));
    let subs = nvme::parse_list_subsys(&read("nvme-list-subsys-o-json.tcp.json")).unwrap();
    let tcp = subs.iter().find(|s| s.nqn == "pgt-capture").expect("the target's subsystem");
    assert_eq!(tcp.controllers.len(), 1);
    assert_eq!((tcp.controllers[0].name.as_str(), tcp.controllers[0].transport.as_str()), (created.as_str(), "tcp"));
    let list = nvme::parse_list(&read("nvme-list-o-json.tcp.json")).unwrap();
    let ns1 = nvme::find_namespace_for_nqn(&list, &subs, "pgt-capture", Some(1)).expect("nsid 1");
    let ns2 = nvme::find_namespace_for_nqn(&list, &subs, "pgt-capture", Some(2)).expect("nsid 2");
    assert_ne!(ns1, ns2, "two namespaces of one subsystem");
    // Without an NSID, two namespaces are refused, in any list order (nvme list shows NSID 2
    // first here); the controller's own list has both, plain and JSON.
    assert!(
        matches!(nvme::match_namespace_for_nqn(&list, &subs, "pgt-capture", None), nvme::NqnMatch::NeedsNsid(v) if v.len() == 2)
    );
    assert_eq!(nvme::parse_list_ns(&read("nvme-list-ns.tcp.txt")).unwrap(), [1, 2]);
    assert_eq!(nvme::parse_list_ns(&read("nvme-list-ns-o-json.tcp.json")).unwrap(), [1, 2]);
    // nvmet gives a namespace a UUID: the kernel's wwid is uuid.<it>, as `uuid` shows it.
    let ids = read("sysfs-nvme-ns1-ids.tcp.txt");
    let attr = |k: &str| ids.lines().find_map(|l| l.strip_prefix(&format!("{k} "))).unwrap_or_default().to_string();
    assert_eq!(attr("wwid"), format!("uuid.{}", attr("uuid")), "{ids}");
    assert_eq!(attr("nsid"), "1", "{ids}");
    assert_eq!(rc("nvme-id-ns-o-json.tcp-ns1.json"), 0, "{}", read("nvme-id-ns-o-json.tcp-ns1.json"));
    let detailed = nvme::parse_list(&read("nvme-list-v-o-json.tcp.json")).unwrap();
    assert!(detailed.iter().filter(|n| n.subsystem_nqn.as_deref() == Some("pgt-capture")).count() == 2, "{detailed:?}");
    assert_eq!(rc("nvme-disconnect-d.tcp.txt"), 0);
    assert_eq!(nvme::disconnected_count(&read("nvme-disconnect-n.none.txt")), Some(0));
    assert!(read("nvme-disconnect-d.unknown.txt.stderr").contains("Did not find device nvme99"));

    // parted 3.5 and udev: after mkpart, udevd re-reads the table and the partition node goes
    // away and comes back (the reason pgtier holds the disk's lock while partitioning).
    let disk = parted::parse_machine(&read("parted-machine-print.nvme-gpt.txt")).unwrap();
    assert_eq!((disk.table.as_str(), disk.partitions[0].start_bytes), ("gpt", 1 << 20));
    let events = read("udevadm-monitor.parted-mkpart.txt");
    let p1: Vec<&str> =
        events.lines().filter(|l| l.ends_with("n1p1 (block)")).map(|l| l.split_whitespace().nth(1).unwrap()).collect();
    assert!(p1.windows(2).any(|w| w == ["remove", "add"]), "{events}");
    // The RAID-like disk: parted's verdict and pgtier's start agree.
    let queue = read("raid-queue.txt");
    let val =
        |k: &str| -> u64 { queue.lines().find_map(|l| l.strip_prefix(k)).map(|v| v.trim().parse().unwrap()).unwrap() };
    let g = parted::Geometry {
        logical_sector: val("queue/logical_block_size"),
        minimum_io: val("queue/minimum_io_size"),
        optimal_io: val("queue/optimal_io_size"),
        alignment_offset: val("alignment_offset"),
    };
    assert_eq!(parted::aligned_start(&g, 2048), 6144);
    assert!(
        read("parted-mkpart-2048s.raid.txt.stderr")
            .contains("not properly aligned for best performance: 2048s % 384s != 0s")
    );
    assert_eq!(rc("parted-s-align-check-opt-1.raid-2048s.txt"), 1);
    assert!(read("parted-align-check-opt-1.raid-2048s.txt").contains("1 not aligned: 2048s % 384s != 0s"));
    assert_eq!(rc("parted-s-align-check-opt-1.raid-6144s.txt"), 0);

    // util-linux with udev running.
    let xfs_part = blkid::signatures(&blkid::parse_export(&read("blkid-p-export.xfs-partition.txt")));
    assert_eq!((xfs_part[0].name.as_str(), xfs_part[0].label.as_deref()), ("xfs", Some("pgt-part")));
    let gpt = blkid::parse_export(&read("blkid-p-export.gpt-disk.txt"));
    assert_eq!(gpt.get("PTTYPE").map(String::as_str), Some("gpt"));
    assert_eq!((rc("blkid-p-export.empty.txt"), read("blkid-p-export.empty.txt")), (2, String::new()));
    let kinds: Vec<String> =
        wipefs::parse_json(&read("wipefs-J-no-act.gpt-disk.json")).unwrap().into_iter().map(|s| s.kind).collect();
    assert!(kinds.contains(&"gpt".to_string()) && kinds.contains(&"PMBR".to_string()), "{kinds:?}");
    let devs = lsblk::parse(&read("lsblk-J-b-o.guest.json")).unwrap();
    let sda = devs.iter().find(|d| d.name == "sda").unwrap();
    assert_eq!((sda.serial.as_deref(), sda.model.as_deref()), (Some("PGT-SAS0"), Some("QEMU HARDDISK")));
    assert_eq!(devs.iter().find(|d| d.name == "pmem0").unwrap().dax, Some(true));
    let nvme0 = devs.iter().find(|d| d.name.starts_with("nvme")).unwrap();
    assert_eq!((nvme0.children[0].fstype.as_deref(), nvme0.serial.as_deref()), (Some("xfs"), Some("PGT-DATA")));

    // A SCSI disk: no device/serial; the serial is in VPD page 0x80 and in udev's database.
    let attrs = read("sda.device-attributes.txt");
    assert!(!attrs.lines().any(|l| l == "serial") && attrs.lines().any(|l| l == "vpd_pg80"), "{attrs}");
    let page = std::fs::read(dir.join("sda.vpd_pg80.bin")).unwrap();
    let mut f = tiers::system::FakeSystem::new();
    f.file("/sys/class/block/sda/dev", "8:0\n");
    f.bytes.insert("/sys/class/block/sda/device/vpd_pg80".into(), page);
    assert_eq!(
        tiers::safety::disk_serial(&mut f, Path::new("/dev/sda")).as_deref(),
        Some("PGT-SAS0"),
        "from VPD page 0x80"
    );
    f.file("/run/udev/data/b8:0", read("sda.udev-data.txt"));
    assert_eq!(tiers::safety::disk_serial(&mut f, Path::new("/dev/sda")).as_deref(), Some("PGT-SAS0"), "from udev");
}

fn fixtures_vm() -> PathBuf {
    repo().join("crates/tiers/tests/fixtures/vm")
}

/// The copy of a capture kept in the repository reads as the live one does (no VM needed).
#[test]
fn kept_vm_captures_are_read_by_the_parsers() {
    check_captures(&fixtures_vm());
}

#[test]
fn vm_tool_outputs_are_read_by_the_parsers() {
    if !vm_or_skip() {
        return;
    }
    let g = boot("capture.sh", &[], Duration::from_secs(900));
    g.assert_ok();
    check_captures(&g.out_path());
    if std::env::var("PGTIER_VM_UPDATE_FIXTURES").as_deref() == Ok("1") {
        for e in std::fs::read_dir(g.out_path()).unwrap().flatten() {
            let empty = e.metadata().map(|m| m.len() == 0).unwrap_or(true);
            if e.file_name().to_string_lossy().ends_with(".stderr") && empty {
                continue;
            }
            std::fs::copy(e.path(), fixtures_vm().join(e.file_name())).unwrap();
        }
        eprintln!("vm: captures copied to {}", fixtures_vm().display());
    }
}

// ---- pgtier's real mode in the guest ----

/// The sections of lib.sh's `state` (`## name` then lines).
fn sections(text: &str) -> std::collections::BTreeMap<String, Vec<String>> {
    let mut out = std::collections::BTreeMap::new();
    let mut current = String::new();
    for line in text.lines() {
        if let Some(name) = line.strip_prefix("## ") {
            current = name.to_string();
            out.entry(current.clone()).or_insert_with(Vec::new);
        } else {
            out.entry(current.clone()).or_insert_with(Vec::new).push(line.to_string());
        }
    }
    out
}

/// `after` equals `before`, except in the sections named in `except`.
fn assert_same_state(before: &str, after: &str, except: &[&str], what: &str) {
    let (b, a) = (sections(before), sections(after));
    for (name, lines) in &b {
        if except.contains(&name.as_str()) {
            continue;
        }
        assert_eq!(a.get(name), Some(lines), "{what}: section {name} changed\nbefore:\n{before}\nafter:\n{after}");
    }
}

fn csv_rows(path: &Path) -> Vec<std::collections::HashMap<String, String>> {
    let mut r = csv::Reader::from_path(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let headers = r.headers().unwrap().clone();
    r.records()
        .map(|rec| headers.iter().zip(rec.unwrap().iter()).map(|(h, v)| (h.to_string(), v.to_string())).collect())
        .collect()
}

#[test]
fn vm_seed000_real_nvme_and_pmem() {
    if !vm_or_skip() {
        return;
    }
    let toml = std::fs::read_to_string(guest_dir().join("seed000.toml")).unwrap();
    let g = boot("seed000.sh", &[("seed000.toml", &toml)], Duration::from_secs(1200));
    g.assert_ok();
    let (stderr, rc) = (g.out("compare.stderr"), g.out("compare.rc"));
    assert_eq!(rc.trim(), "0", "compare failed in the guest:\n{stderr}\n{}", g.transcript());
    let results = g.out_path().join("results");
    let runs = csv_rows(&results.join("runs.csv"));
    assert_eq!(runs.len(), 3, "one pgbench run per placement");
    assert!(runs.iter().all(|r| r["status"] == "ok"), "{runs:?}");
    // DAX in effect on both PMem placements' devices: statx and /proc/mounts agree.
    let report = std::fs::read_to_string(results.join("report.md")).unwrap();
    for d in ["pmem-data", "pmem-wal"] {
        assert!(
            report.contains(&format!(
                "- {d}: DAX in effect (dax=always in /proc/mounts, statx reports the DAX attribute)"
            )),
            "{report}"
        );
    }
    let log = std::fs::read_to_string(results.join("provision.log")).unwrap();
    for line in [
        "$ ndctl list -N -i",
        "$ ndctl create-namespace -f -e namespace1.0 -m fsdax --align=2M",
        "$ mkfs.xfs -m reflink=0 -d su=2m,sw=1 -L pmem-data /dev/pmem0",
        "$ mkfs.xfs -f -m reflink=0 -d su=2m,sw=1 -L pmem-wal /dev/pmem1",
        "$ mkfs.xfs -L nvme-data /dev/nvme0n1",
    ] {
        assert!(log.contains(line), "{line:?} not in provision.log:\n{log}");
    }
    assert!(log.lines().any(|l| l.starts_with("$ mount -t xfs -o noatime,dax=always /dev/pmem0 ")), "{log}");
    // Re-made with --align=2M, and ndctl reports the 2 MiB alignment of the namespace it made.
    assert!(
        stderr.contains(
            "namespace1.0 reconfigured from raw to fsdax (pmem1); align 2097152 (2.0 MiB) as ndctl reports it"
        ),
        "{stderr}"
    );
    assert!(stderr.contains("teardown complete"), "{stderr}");
    let dry = g.out("dry-run.txt");
    assert!(dry.contains("ndctl list -N -i: namespace namespace1.0") && dry.contains("-d su=2m,sw=1"), "{dry}");
    // Teardown left the devices as they were, but for the namespace this file let pgtier
    // re-make in fsdax mode (teardown never formats).
    let (before, after) = (g.out("state-before.txt"), g.out("state-after.txt"));
    assert_same_state(&before, &after, &["ndctl", "block"], "seed 000");
    let ndctl_after = sections(&after)["ndctl"].join("\n");
    assert!(ndctl_after.contains("\"blockdev\":\"pmem1\""), "{ndctl_after}");
    let mut blocks_before = sections(&before)["block"].clone();
    blocks_before.push("pmem1".into());
    blocks_before.sort();
    assert_eq!(sections(&after)["block"], blocks_before);
}

#[test]
fn vm_seed003_nvme_tcp() {
    if !vm_or_skip() {
        return;
    }
    let toml = std::fs::read_to_string(guest_dir().join("seed003.toml")).unwrap();
    let g = boot("seed003.sh", &[("seed003.toml", &toml)], Duration::from_secs(1200));
    g.assert_ok();
    let (stderr, rc) = (g.out("compare.stderr"), g.out("compare.rc"));
    assert_eq!(rc.trim(), "0", "compare failed in the guest:\n{stderr}\n{}", g.transcript());
    let results = g.out_path().join("results");
    let runs = csv_rows(&results.join("runs.csv"));
    assert_eq!(runs.len(), 2);
    assert!(runs.iter().all(|r| r["status"] == "ok"), "{runs:?}");
    let log = std::fs::read_to_string(results.join("provision.log")).unwrap();
    // nvme-cli's version first; one connect for the two namespaces, with the host pair and the
    // key's configuration file, never the key.
    let nvme: Vec<&str> = log.lines().filter(|l| l.starts_with("$ nvme ")).collect();
    assert_eq!(nvme.first(), Some(&"$ nvme version"), "{log}");
    let connects: Vec<&&str> = nvme.iter().filter(|l| l.starts_with("$ nvme connect")).collect();
    assert_eq!(connects.len(), 1, "{nvme:?}");
    let c = connects[0];
    assert!(c.contains("--nqn nqn.2026-12.io.pgtier:vm-target --hostnqn nqn.2014-08.org.nvmexpress:uuid:"), "{c}");
    assert!(c.contains(" --hostid ") && c.contains(".nvme-lb-data.json --output-format json"), "{c}");
    assert!(!c.contains("dhchap-secret"), "{c}");
    // The partitions: 1 MiB on the NVMe drive, 3 MiB on the RAID-like disk (2048s fails there).
    assert!(log.contains("$ parted -s /dev/nvme0n1 mklabel gpt mkpart primary 2048s 100%"), "{log}");
    assert!(log.contains("$ parted -s /dev/vdb mklabel gpt mkpart primary 6144s 100%"), "{log}");
    // The namespaces were found through nvme-cli's JSON and the connection dropped at teardown:
    // the controller pgtier created, after both filesystems on it were unmounted.
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(results.join("manifest.json")).unwrap()).unwrap();
    let device =
        |name: &str| manifest["devices"].as_array().unwrap().iter().find(|d| d["name"] == name).unwrap().clone();
    for (name, ns) in [("lb-data", "n1p1"), ("lb-wal", "n2p1")] {
        let d = device(name);
        let dev = d["block_device"].as_str().unwrap();
        assert!(dev.starts_with("/dev/nvme") && dev.ends_with(ns), "{name}: namespace {ns} of the subsystem: {d}");
        assert_eq!(d["description"], "NVMe/TCP subsystem nqn.2026-12.io.pgtier:vm-target at 127.0.0.1:4420");
    }
    assert_eq!(device("das-wal")["block_device"], "/dev/vdb1");
    let teardown: Vec<&str> = stderr.lines().skip_while(|l| !l.starts_with("teardown:")).collect();
    let disconnect = teardown.iter().position(|l| l.contains("done: nvme disconnect -d nvme")).expect("disconnected");
    let last_umount = teardown.iter().rposition(|l| l.contains("done: umount") && l.contains("/mnt/lb-")).unwrap();
    assert!(last_umount < disconnect, "{teardown:?}");
    let journal = std::fs::read_to_string(results.join("journal.jsonl")).unwrap();
    assert!(journal.contains("\"controller\":\"nvme"), "{journal}");
    // The key: never on a command line while the run lasted, nowhere in the results; and
    // nvme-cli 2.3 does read it from a configuration laid out as pgtier writes it.
    assert_eq!(g.out("cmdline-leaks.txt"), "", "the key was on a command line");
    let key = "cGd0aWVyLXZtLXRlc3Qta2V5";
    for e in walk(&g.out_path()) {
        if e.ends_with("nvme-connect-dump-config.json") {
            continue;
        }
        let bytes = std::fs::read(&e).unwrap();
        assert!(!String::from_utf8_lossy(&bytes).contains(key), "the key is in {}", e.display());
    }
    let dump = g.out("nvme-connect-dump-config.json");
    assert!(dump.contains(&format!("\"dhchap_key\":\"DHHC-1:00:{key}")), "{dump}");
    // udev re-reads the table whenever parted closes the disk (mkpart, then align-check): the
    // partition node goes away and comes back. pgtier waits for that (udevadm settle) and then
    // holds the disk until mkfs is done, so the run got through; every removal of a local
    // partition node was followed by its return, at most once per parted run.
    let events = g.out("udev-events.txt");
    for part in ["nvme0n1p1", "vdb1"] {
        let ev: Vec<&str> = events
            .lines()
            .filter(|l| l.ends_with(&format!("/{part} (block)")))
            .map(|l| l.split_whitespace().nth(1).unwrap())
            .filter(|e| *e != "change")
            .collect();
        assert_eq!(ev.first(), Some(&"add"), "{part}: {events}");
        let flaps = &ev[1..];
        assert!(flaps.chunks(2).all(|c| c == ["remove", "add"]) && flaps.len() <= 4, "{part}: {ev:?}");
    }
    // Teardown left the devices as they were (the local disks keep the partition the file
    // asked for), and the test's target configuration is gone again.
    let (before, after) = (g.out("state-before.txt"), g.out("state-after.txt"));
    assert_same_state(&before, &after, &["block"], "seed 003");
    let mut blocks = sections(&before)["block"].clone();
    blocks.extend(["nvme0n1p1".to_string(), "vdb1".to_string()]);
    blocks.sort();
    assert_eq!(sections(&after)["block"], blocks);
    assert_same_state(&g.out("state-initial.txt"), &g.out("state-final.txt"), &["block"], "the target removed");
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() { out.extend(walk(&p)) } else { out.push(p) }
    }
    out
}

#[test]
fn vm_safety_rails_refuse_on_real_devices() {
    if !vm_or_skip() {
        return;
    }
    let g = boot("safety.sh", &[], Duration::from_secs(1200));
    g.assert_ok();
    let holder = g.out("held-open.pid").trim().to_string();
    let held = format!("is in use by another program: PID {holder} (sleep) has it open read-write (fd 3, /dev/nvme");
    let cases: [(&str, &str); 12] = [
        ("mounted", "is mounted at /mnt/busy"),
        ("filesystem", "carries a ext4 filesystem signature"),
        ("md-active", "is held by md0"),
        ("md-stopped", "linux_raid_member"),
        ("lvm-active", "is held by dm-0"),
        ("lvm-inactive", "LVM2_member"),
        ("system-disk", "backs the running system (/ is mounted from /dev/vda)"),
        ("sas-wrong-serial", "serial mismatch: the experiment file says \"PGT-SAS9\", the device reports \"PGT-SAS0\""),
        ("sas-right-serial", "carries a ext4 filesystem signature"),
        ("held-open", held.as_str()),
        (
            "nvmet-exported",
            "is served by the kernel (/sys/kernel/config/nvmet/subsystems/nqn.2014-08.org.example:pgt-safety-live/namespaces/1/device_path (/dev/nvme",
        ),
        ("lio-exported", "is served by the kernel (/sys/kernel/config/target/core/fileio_0/pgt-live/info (/dev/nvme"),
    ];
    for (name, says) in cases {
        let mut stderr = g.out(&format!("{name}.stderr"));
        for setup in ["nvmet-export", "lio-export"] {
            if name.starts_with(setup) {
                let made = std::fs::read_to_string(g.out_path().join(format!("{setup}.txt"))).unwrap_or_default();
                stderr.push_str(&format!("\n(how the export was made:)\n{made}"));
            }
        }
        if name == "md-active" {
            // How the array was made: a failed create leaves nothing to refuse.
            let made = std::fs::read_to_string(g.out_path().join("md-create.txt")).unwrap_or_default();
            stderr.push_str(&format!("\n(mdadm --create and /proc/mdstat before the run:)\n{made}"));
        }
        assert_eq!(g.out(&format!("{name}.rc")).trim(), "1", "{name}: refused is a runtime failure\n{stderr}");
        assert!(stderr.contains("refused") && stderr.contains(says), "{name}: expected {says:?}:\n{stderr}");
        assert_eq!(g.out(&format!("{name}.sig-before")), g.out(&format!("{name}.sig-after")), "{name}: signatures");
        assert_same_state(&g.out(&format!("{name}.state-before")), &g.out(&format!("{name}.state-after")), &[], name);
        assert!(!stderr.contains("] mkfs.xfs"), "{name}: nothing was formatted:\n{stderr}");
        if let Ok(before) = std::fs::read_to_string(g.out_path().join(format!("{name}.md5-before"))) {
            assert_eq!(before, g.out(&format!("{name}.md5-after")), "{name}: every byte of the drive unchanged");
        }
    }
    let dry = g.out("system-disk.dry-run");
    assert_eq!(g.out("system-disk.dry-run.rc").trim(), "0");
    assert!(dry.contains("check <d> is not mounted (in any mount namespace), not swap, not held by LVM/md/dm, not backing the running system"), "{dry}");
}

#[test]
fn vm_interrupted_real_runs_leave_nothing() {
    if !vm_or_skip() {
        return;
    }
    let g = boot("interrupts.sh", &[], Duration::from_secs(1500));
    g.assert_ok();
    let before = g.out("state-before.txt");
    for run in ["sigint", "sigkill", "busy"] {
        assert_eq!(
            g.out(&format!("{run}.started")).trim(),
            "started",
            "{run}: the run reached its devices\n{}",
            g.out(&format!("{run}.stderr"))
        );
    }
    // Ctrl-C: pgtier's own teardown undid everything.
    let sigint = g.out("sigint.stderr");
    assert!(sigint.contains("teardown complete"), "{sigint}");
    assert_same_state(&before, &g.out("state-after-sigint.txt"), &["block"], "after Ctrl-C");
    // SIGKILL: things were left (a run record at least), and cleanup undid them.
    assert_eq!(g.out("sigkill.rc").trim(), "137");
    let killed = sections(&g.out("state-after-sigkill.txt"));
    assert!(!killed["journals"].is_empty() && killed["mounts"] != sections(&before)["mounts"], "{killed:?}");
    assert_eq!(g.out("cleanup-1.rc").trim(), "0", "{}", g.out("cleanup-1.stdout"));
    assert_same_state(&before, &g.out("state-after-cleanup-1.txt"), &["block"], "after kill -9 and cleanup");
    // A busy NVMe/TCP filesystem: teardown did not disconnect from under it, said so, and
    // cleanup finished once the filesystem was free.
    let busy = g.out("busy.stderr");
    assert_eq!(g.out("busy.rc").trim(), "1", "{busy}");
    assert!(
        busy.contains("not done: `umount") && busy.contains("/mnt/remote") && busy.contains("cargo xtask cleanup"),
        "{busy}"
    );
    let stuck = sections(&g.out("state-after-busy.txt"));
    assert!(stuck["nvme list-subsys"].iter().any(|l| l.contains("vm-interrupts")), "still connected: {stuck:?}");
    assert!(stuck["mounts"].iter().any(|l| l.contains("/mnt/remote")), "{stuck:?}");
    assert_eq!(g.out("cleanup-2.rc").trim(), "0", "{}", g.out("cleanup-2.stdout"));
    assert!(g.out("cleanup-2.stdout").contains("undone: nvme disconnect -d nvme"), "{}", g.out("cleanup-2.stdout"));
    assert_same_state(&before, &g.out("state-after-cleanup-2.txt"), &["block"], "after the busy teardown and cleanup");
    assert_same_state(&g.out("state-initial.txt"), &g.out("state-final.txt"), &["block"], "the target removed");
}

// ---- the guest as its own storage target host (vm/target_host.rs) ----

#[path = "vm/target_host.rs"]
mod target_host;
