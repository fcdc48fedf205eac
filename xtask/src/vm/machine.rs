//! One boot of the guest under `qemu-system-x86_64 -accel tcg`: the virtual hardware, the 9p
//! shares, the command, its output and exit status, the console log and the timeout.
//!
//! The hardware (fixed, so that tests and people name the same devices):
//! - `vda`: the system disk (the cached image, written through a throwaway snapshot), serial
//!   PGT-SYSTEM;
//! - six NVMe drives of 1 GiB (`/dev/disk/by-id/nvme-QEMU_NVMe_Ctrl_<serial>`): PGT-DATA,
//!   PGT-WAL, PGT-TGT0, PGT-TGT1 (for the guest's own NVMe/TCP target), PGT-SPARE0, PGT-SPARE1;
//! - two NVDIMMs with label areas (`ndctl` manages their namespaces): regions of 1 GiB each;
//! - `vdb`: a virtio disk that reports a RAID-5-like geometry (minimum I/O 64 KiB, optimal I/O
//!   192 KiB: three data disks of 64 KiB chunks), serial PGT-RAID;
//! - `sda`: a SCSI disk (serial only through VPD page 0x80), serial PGT-SAS0.
//!
//! Every data disk and NVDIMM is a fresh sparse file per boot, removed afterwards; the system
//! disk's changes are discarded (`snapshot=on`). Nothing of one boot reaches the next.

use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use super::image::Image;

/// NVMe drives: serial, size in MiB.
pub const NVME_DRIVES: [(&str, u64); 6] = [
    ("PGT-DATA", 1024),
    ("PGT-WAL", 1024),
    ("PGT-TGT0", 1024),
    ("PGT-TGT1", 1024),
    ("PGT-SPARE0", 1024),
    ("PGT-SPARE1", 1024),
];
/// NVDIMMs: the backing file holds the region (1 GiB, 16 MiB aligned as the kernel's memory
/// sections need) and, at its end, the 128 KiB label area.
pub const NVDIMMS: usize = 2;
const NVDIMM_FILE_MIB: u64 = 1040;
const GUEST_MEMORY: &str = "2G,slots=4,maxmem=8G";
const GUEST_CPUS: &str = "2";

/// What to run, and where.
pub struct RunSpec {
    /// Shared read-write at /job; `.vm/` inside it holds the protocol files.
    pub job_dir: PathBuf,
    /// The command (an argument vector) and the directory it starts in.
    pub argv: Vec<String>,
    pub cwd: PathBuf,
    /// Host directories shared read-only at the same path in the guest (the checkout, the
    /// directory of the pgtier binary).
    pub ro_shares: Vec<PathBuf>,
    /// Environment for the command.
    pub env: Vec<(String, String)>,
    pub timeout: Duration,
    pub console_log: PathBuf,
    /// Copy the command's stdout/stderr to ours while it runs.
    pub stream: bool,
}

/// How a boot ended.
#[derive(Debug)]
pub struct Outcome {
    /// The command's exit status; `None` if it never finished (timeout, boot failure).
    pub status: Option<i32>,
    pub timed_out: bool,
    /// The console's soft-lockup report when the guest's kernel hung and was killed for it
    /// (see [`kernel_hang`]).
    pub hung: Option<String>,
    /// Guest uptime when the command started (the boot's cost).
    pub boot_seconds: Option<f64>,
    pub wall_seconds: f64,
}

fn shell_quote(s: &str) -> String {
    journal::command::shell_quote(s)
}

fn check_path(p: &Path) -> Result<String> {
    let s = p.to_str().with_context(|| format!("{} is not UTF-8", p.display()))?;
    if s.contains([' ', ':', '\t', '\n', '"', '\'']) {
        bail!(
            "{s}: a path shared with the VM cannot contain spaces, quotes or colons (it goes on the kernel command line)"
        );
    }
    Ok(s.to_string())
}

/// Writes the run script and the empty protocol files.
fn prepare_job(spec: &RunSpec) -> Result<PathBuf> {
    let vm = spec.job_dir.join(".vm");
    std::fs::create_dir_all(&vm)?;
    for f in ["stdout", "stderr", "status", "status.tmp", "boot"] {
        let _ = std::fs::remove_file(vm.join(f));
    }
    let mut script = String::from("# written by cargo xtask vm run\n");
    for (k, v) in &spec.env {
        script.push_str(&format!("export {k}={}\n", shell_quote(v)));
    }
    script.push_str(&format!("cd {} || exit 125\n", shell_quote(&spec.cwd.to_string_lossy())));
    let argv: Vec<String> = spec.argv.iter().map(|a| shell_quote(a)).collect();
    script.push_str(&format!("exec {}\n", argv.join(" ")));
    std::fs::write(vm.join("run.sh"), script)?;
    std::fs::write(vm.join("stdout"), "")?;
    std::fs::write(vm.join("stderr"), "")?;
    Ok(vm)
}

/// Sparse backing files for the data disks and NVDIMMs of one boot.
struct Scratch {
    dir: PathBuf,
}

impl Scratch {
    fn new() -> Result<Scratch> {
        let base = std::env::var_os("PGTIER_VM_SCRATCH").map(PathBuf::from).unwrap_or_else(|| "/var/tmp".into());
        let nanos =
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().subsec_nanos();
        let dir = base.join(format!("pgtier-vm-{}-{nanos:08x}", std::process::id()));
        std::fs::create_dir_all(&dir).with_context(|| format!("create {}", dir.display()))?;
        Ok(Scratch { dir })
    }
    fn sparse(&self, name: &str, mib: u64) -> Result<PathBuf> {
        let p = self.dir.join(name);
        let f = std::fs::File::create(&p)?;
        f.set_len(mib << 20)?;
        Ok(p)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn qemu_command(image: &Image, scratch: &Scratch, spec: &RunSpec) -> Result<Command> {
    let accel = std::env::var("PGTIER_VM_ACCEL").unwrap_or_else(|_| "tcg".into());
    let mut append = vec![
        "root=LABEL=pgtier-root".to_string(),
        "rw".into(),
        "console=ttyS0".into(),
        "panic=-1".into(),
        // An oops ends the guest at once (a failed test in seconds, not a hang until the timeout).
        "oops=panic".into(),
        // Debian 12's 6.1 kernel BUGs in nvmet-tcp's send path over loopback under hardened
        // usercopy ("usercopy: Kernel memory exposure attempt detected from page alloc (offset 0,
        // size 32768)", kernel BUG at mm/usercopy.c:101, workqueue nvmet_tcp_wq, seen once in
        // the target-host test on 2026-12-03): the check is a hardening of the guest, not what
        // the tests exercise.
        "hardened_usercopy=off".into(),
        "quiet".into(),
        "init=/usr/local/sbin/pgtier-init".into(),
        "pgtier.share=pgtier-job:/job".into(),
    ];
    let mut q = Command::new("qemu-system-x86_64");
    q.args(["-accel", &accel, "-machine", "pc,nvdimm=on", "-smp", GUEST_CPUS, "-m", GUEST_MEMORY])
        .args(["-nographic", "-no-reboot", "-nic", "none", "-display", "none", "-monitor", "none"])
        .arg("-serial")
        .arg(format!("file:{}", check_path(&spec.console_log)?))
        .arg("-kernel")
        .arg(image.kernel())
        .arg("-initrd")
        .arg(image.initrd());
    // The system disk first, so that it is vda.
    q.arg("-drive")
        .arg(format!("file={},if=none,id=system,format=raw,snapshot=on", check_path(&image.rootfs())?))
        .args(["-device", "virtio-blk-pci,drive=system,serial=PGT-SYSTEM"]);
    for i in 0..NVDIMMS {
        let f = scratch.sparse(&format!("nvdimm{i}.img"), NVDIMM_FILE_MIB)?;
        q.arg("-object")
            .arg(format!(
                "memory-backend-file,id=pm{i},share=on,mem-path={},size={NVDIMM_FILE_MIB}M,align=16M",
                check_path(&f)?
            ))
            .arg("-device")
            .arg(format!("nvdimm,id=nvdimm{i},memdev=pm{i},label-size=128K"));
    }
    for (i, (serial, mib)) in NVME_DRIVES.iter().enumerate() {
        let f = scratch.sparse(&format!("nvme{i}.img"), *mib)?;
        q.arg("-drive")
            .arg(format!("file={},if=none,id=nvme{i},format=raw", check_path(&f)?))
            .arg("-device")
            .arg(format!("nvme,serial={serial},drive=nvme{i}"));
    }
    let raid = scratch.sparse("raid.img", 1024)?;
    q.arg("-drive")
        .arg(format!("file={},if=none,id=raid,format=raw", check_path(&raid)?))
        .args(["-device", "virtio-blk-pci,drive=raid,serial=PGT-RAID,min_io_size=65536,opt_io_size=196608"]);
    let sas = scratch.sparse("sas.img", 1024)?;
    q.args(["-device", "virtio-scsi-pci,id=scsi0"])
        .arg("-drive")
        .arg(format!("file={},if=none,id=sas,format=raw", check_path(&sas)?))
        .args(["-device", "scsi-hd,drive=sas,bus=scsi0.0,serial=PGT-SAS0"]);
    q.arg("-virtfs").arg(format!("local,path={},mount_tag=pgtier-job,security_model=none", check_path(&spec.job_dir)?));
    for (i, dir) in spec.ro_shares.iter().enumerate() {
        let path = check_path(dir)?;
        let tag = format!("pgtier-ro{i}");
        q.arg("-virtfs").arg(format!("local,path={path},mount_tag={tag},security_model=none,readonly=on"));
        append.push(format!("pgtier.share={tag}:{path}:ro"));
    }
    q.arg("-append").arg(append.join(" "));
    q.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::piped()).process_group(0);
    Ok(q)
}

/// Copies what was appended to `path` since `offset` to `out`.
fn follow(path: &Path, offset: &mut u64, out: &mut dyn Write) {
    let Ok(mut f) = std::fs::File::open(path) else { return };
    if f.seek(SeekFrom::Start(*offset)).is_err() {
        return;
    }
    let mut buf = Vec::new();
    if f.read_to_end(&mut buf).is_ok() && !buf.is_empty() {
        *offset += buf.len() as u64;
        let _ = out.write_all(&buf);
        let _ = out.flush();
    }
}

fn kill_group(child: &mut Child) {
    let _ = nix::sys::signal::killpg(nix::unistd::Pid::from_raw(child.id() as i32), nix::sys::signal::Signal::SIGKILL);
    let _ = child.kill();
    let _ = child.wait();
}

/// Boots the guest, runs the command, and returns how it ended. `stop` (set by a signal
/// handler) kills the guest early.
pub fn run(image: &Image, spec: &RunSpec, stop: &Arc<AtomicBool>) -> Result<Outcome> {
    let vm = prepare_job(spec)?;
    let scratch = Scratch::new()?;
    let mut qemu = qemu_command(image, &scratch, spec)?;
    let started = Instant::now();
    let mut child = qemu.spawn().context("start qemu-system-x86_64")?;
    let (mut out_at, mut err_at) = (0u64, 0u64);
    let mut stdout = std::io::stdout();
    let mut stderr = std::io::stderr();
    let mut timed_out = false;
    let mut hung = None;
    let mut console_checked = Instant::now();
    let exit = loop {
        if spec.stream {
            follow(&vm.join("stdout"), &mut out_at, &mut stdout);
            follow(&vm.join("stderr"), &mut err_at, &mut stderr);
        }
        if let Some(status) = child.try_wait()? {
            break Some(status);
        }
        if started.elapsed() > spec.timeout {
            timed_out = true;
            kill_group(&mut child);
            break None;
        }
        if stop.load(Ordering::SeqCst) {
            kill_group(&mut child);
            bail!("interrupted; the guest was killed");
        }
        if console_checked.elapsed() >= HANG_CHECK_EVERY {
            console_checked = Instant::now();
            let console = std::fs::read(&spec.console_log).unwrap_or_default();
            if let Some(report) = kernel_hang(&String::from_utf8_lossy(&console)) {
                hung = Some(report);
                kill_group(&mut child);
                break None;
            }
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    if spec.stream {
        follow(&vm.join("stdout"), &mut out_at, &mut stdout);
        follow(&vm.join("stderr"), &mut err_at, &mut stderr);
    }
    if let Some(s) = exit
        && !s.success()
    {
        let mut msg = String::new();
        if let Some(mut e) = child.stderr.take() {
            let _ = e.read_to_string(&mut msg);
        }
        if !vm.join("status").exists() {
            bail!("qemu exited with {s}: {}", msg.trim());
        }
    }
    let status = std::fs::read_to_string(vm.join("status")).ok().and_then(|s| s.trim().parse().ok());
    let boot_seconds = std::fs::read_to_string(vm.join("boot")).ok().and_then(|s| s.trim().parse().ok());
    Ok(Outcome { status, timed_out, hung, boot_seconds, wall_seconds: started.elapsed().as_secs_f64() })
}

/// How often [`run`] reads the console for a hung kernel.
const HANG_CHECK_EVERY: Duration = Duration::from_secs(10);
/// A CPU stuck this long is a kernel that hung, not a slow one. The soft-lockup watchdog
/// reports a CPU after 20 s without a reschedule and again about every 28 s while it stays
/// stuck; a host that starves the emulator for a moment gives one report of tens of seconds,
/// a deadlocked kernel gives reports that grow without end (seen in CI on 2026-12-05: both
/// vCPUs of the NVMe/TCP guest stuck from 290 s until the 3,000 s timeout).
const HUNG_AFTER_SECONDS: u64 = 120;

/// The console's soft-lockup report of a CPU stuck for [`HUNG_AFTER_SECONDS`] or more, the
/// longest one; `None` when the kernel has not hung.
pub fn kernel_hang(console: &str) -> Option<String> {
    console
        .lines()
        .filter_map(|line| {
            let rest = &line[line.find("BUG: soft lockup - CPU#")?..];
            let stuck = rest.split("stuck for ").nth(1)?;
            let seconds: u64 = stuck[..stuck.find("s!")?].parse().ok()?;
            (seconds >= HUNG_AFTER_SECONDS).then(|| (seconds, line.trim().to_string()))
        })
        .max_by_key(|(seconds, _)| *seconds)
        .map(|(_, line)| line)
}

/// The last `n` lines of the console log, for messages about a guest that did not finish.
pub fn console_tail(path: &Path, n: usize) -> String {
    let text = String::from_utf8_lossy(&std::fs::read(path).unwrap_or_default()).into_owned();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(job: &Path) -> RunSpec {
        RunSpec {
            job_dir: job.to_path_buf(),
            argv: vec!["bash".into(), "-c".into(), "echo 'it''s' $HOME".into()],
            cwd: "/work/checkout".into(),
            ro_shares: vec!["/work/checkout".into()],
            env: vec![("PGTIER_XTASK".into(), "/work/checkout/target/debug/xtask".into())],
            timeout: Duration::from_secs(5),
            console_log: job.join("console.log"),
            stream: false,
        }
    }

    #[test]
    fn the_guest_gets_the_documented_hardware_and_shares() {
        let job = tempfile::tempdir().unwrap();
        let image = Image { dir: "/var/cache/pgtier/vm/key".into(), key: "key".into() };
        let scratch = Scratch::new().unwrap();
        let q = qemu_command(&image, &scratch, &spec(job.path())).unwrap();
        let args: Vec<String> = q.get_args().map(|a| a.to_string_lossy().into_owned()).collect();
        let line = args.join(" ");
        assert!(line.contains("-accel tcg -machine pc,nvdimm=on"), "{line}");
        assert!(line.contains("file=/var/cache/pgtier/vm/key/rootfs.img,if=none,id=system,format=raw,snapshot=on"));
        assert_eq!(args.iter().filter(|a| a.starts_with("nvme,serial=PGT-")).count(), NVME_DRIVES.len());
        assert_eq!(args.iter().filter(|a| a.contains("label-size=128K")).count(), NVDIMMS);
        assert!(line.contains("opt_io_size=196608") && line.contains("scsi-hd,drive=sas"));
        assert!(line.contains("mount_tag=pgtier-ro0,security_model=none,readonly=on"));
        let append = &args[args.iter().position(|a| a == "-append").unwrap() + 1];
        assert!(append.contains("init=/usr/local/sbin/pgtier-init"), "{append}");
        assert!(append.contains("pgtier.share=pgtier-job:/job pgtier.share=pgtier-ro0:/work/checkout:ro"), "{append}");
        // Every backing file is in this boot's scratch directory, which goes with it.
        let dir = scratch.dir.clone();
        assert!(dir.join("nvme0.img").exists() && dir.join("nvdimm1.img").exists());
        drop(scratch);
        assert!(!dir.exists());
    }

    #[test]
    fn the_run_script_quotes_every_argument() {
        let job = tempfile::tempdir().unwrap();
        let vm = prepare_job(&spec(job.path())).unwrap();
        let script = std::fs::read_to_string(vm.join("run.sh")).unwrap();
        assert!(script.contains("export PGTIER_XTASK=/work/checkout/target/debug/xtask\n"), "{script}");
        assert!(script.contains("cd /work/checkout || exit 125\n"), "{script}");
        let out = std::process::Command::new("bash").arg("-n").arg(vm.join("run.sh")).status().unwrap();
        assert!(out.success(), "bash can read it:\n{script}");
        assert!(script.lines().last().unwrap().starts_with("exec bash -c "), "{script}");
    }

    #[test]
    fn a_kernel_stuck_for_minutes_is_a_hang_a_short_stall_is_not() {
        // The console of the guest that hung in CI (2026-12-05), as the kernel wrote it.
        let hung = "[ 2887.796288] rcu: INFO: rcu_preempt detected stalls on CPUs/tasks:\n\
            [ 2912.831267] watchdog: BUG: soft lockup - CPU#0 stuck for 2626s! [bash:333]\n\
            [ 2976.926396] watchdog: BUG: soft lockup - CPU#1 stuck for 2686s! [xtask:334]\n\
            [ 2940.831269] watchdog: BUG: soft lockup - CPU#0 stuck for 2652s! [bash:333]\n";
        assert_eq!(
            kernel_hang(hung).as_deref(),
            Some("[ 2976.926396] watchdog: BUG: soft lockup - CPU#1 stuck for 2686s! [xtask:334]")
        );
        // The first reports of a lockup, or one stall of a starved emulator, are not a hang yet.
        let stall = "[  310.1] watchdog: BUG: soft lockup - CPU#1 stuck for 22s! [kworker/1:2:88]\n\
            [  338.1] watchdog: BUG: soft lockup - CPU#1 stuck for 48s! [kworker/1:2:88]\n";
        assert_eq!(kernel_hang(stall), None);
        assert_eq!(kernel_hang("[    1.0] Linux version 6.1.0-28-amd64\n"), None);
    }

    #[test]
    fn paths_that_cannot_go_on_the_kernel_command_line_are_refused() {
        assert!(check_path(Path::new("/var/tmp/a b")).is_err());
        assert!(check_path(Path::new("/var/tmp/a:b")).is_err());
        assert_eq!(check_path(Path::new("/var/tmp/ok")).unwrap(), "/var/tmp/ok");
    }
}
