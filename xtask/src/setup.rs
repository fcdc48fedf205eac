//! `cargo xtask setup`: installs what pgtier needs from Debian's packages, or says what is
//! missing; `cargo xtask test`: the test suite.

use std::process::{Command, ExitCode};

/// The Debian packages pgtier uses (checked with dpkg-query): PostgreSQL and pgbench, and every
/// tool the plans name (`tiers::build::package_of`).
const PACKAGES: &[&str] = &[
    "postgresql",
    "postgresql-contrib",
    "xfsprogs",
    "util-linux",
    "mount",
    "iproute2",
    "nbdkit",
    "libnbd-bin",
    "fuse3",
    "fio",
    "parted",
    "nvme-cli",
    "ndctl",
    "gcc",
    "openssh-client",
    "openssh-server",
];

fn installed(pkg: &str) -> bool {
    Command::new("dpkg-query")
        .args(["-W", "-f=${Status}", pkg])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).contains("install ok installed"))
        .unwrap_or(false)
}

/// What this kernel must offer for emulated tiers.
fn kernel_checks() -> Vec<String> {
    let mut missing = Vec::new();
    let checks: [(&str, &str); 5] = [
        ("/dev/loop-control", "loop devices (modprobe loop)"),
        ("/sys/class/zram-control/hot_add", "zram (modprobe zram), for emulated PMem"),
        ("/dev/fuse", "FUSE (modprobe fuse), for emulated NVMe/TCP"),
        ("/proc/filesystems", "procfs"),
        ("/sys/fs/cgroup", "cgroups, for the server's memory limit"),
    ];
    for (path, what) in checks {
        if !std::path::Path::new(path).exists() {
            missing.push(what.to_string());
        }
    }
    if !std::fs::read_to_string("/proc/filesystems").unwrap_or_default().contains("xfs") {
        missing.push("XFS in the kernel (modprobe xfs)".into());
    }
    missing
}

/// Which PostgreSQL majors are installed, and where others come from: Debian ships one major
/// per release (15 in Debian 12); the PostgreSQL project's apt repository (apt.postgresql.org,
/// "PGDG") ships the others, side by side under /usr/lib/postgresql/<major>/bin, which is what a
/// build's bin_dir in `[postgres] builds` names.
fn postgres_majors_note() {
    let majors: Vec<String> = std::fs::read_dir("/usr/lib/postgresql")
        .map(|rd| {
            rd.flatten()
                .filter(|e| e.path().join("bin/postgres").exists())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    eprintln!(
        "setup: PostgreSQL server majors installed: {} (Debian's archive ships one major; for others add the PostgreSQL project's repository, https://apt.postgresql.org, and install postgresql-<major>; then name /usr/lib/postgresql/<major>/bin in [postgres] builds)",
        if majors.is_empty() { "none".to_string() } else { majors.join(", ") }
    );
}

pub fn run(check_only: bool) -> ExitCode {
    let missing: Vec<&str> = PACKAGES.iter().copied().filter(|p| !installed(p)).collect();
    let kernel = kernel_checks();
    for k in &kernel {
        eprintln!("kernel: missing {k}");
    }
    postgres_majors_note();
    if missing.is_empty() {
        eprintln!("setup: all packages present ({})", PACKAGES.join(", "));
        return if kernel.is_empty() { ExitCode::SUCCESS } else { ExitCode::FAILURE };
    }
    let cmd = format!("apt-get install -y --no-install-recommends {}", missing.join(" "));
    if check_only || !nix::unistd::geteuid().is_root() {
        eprintln!("setup: missing packages: {}", missing.join(", "));
        eprintln!("install them as root with: apt-get update && {cmd}");
        return ExitCode::FAILURE;
    }
    eprintln!("setup: installing {}", missing.join(", "));
    let apt = |args: &[&str]| {
        Command::new("apt-get")
            .args(args)
            .env("DEBIAN_FRONTEND", "noninteractive")
            .status()
            .map(|s| s.success())
            .unwrap_or(false)
    };
    if !apt(&["update", "-q"]) {
        eprintln!("setup: apt-get update failed");
        return ExitCode::FAILURE;
    }
    let mut args = vec!["install", "-y", "-q", "--no-install-recommends"];
    args.extend(missing.iter().copied());
    if !apt(&args) {
        eprintln!("setup: `{cmd}` failed");
        return ExitCode::FAILURE;
    }
    let still: Vec<&str> = missing.iter().copied().filter(|p| !installed(p)).collect();
    if !still.is_empty() {
        eprintln!("setup: still missing after install: {}", still.join(", "));
        return ExitCode::FAILURE;
    }
    eprintln!("setup: done");
    if kernel.is_empty() { ExitCode::SUCCESS } else { ExitCode::FAILURE }
}

/// Runs the workspace's tests. Integration tests that provision devices need root; without it
/// they fail and say so, unless PGTIER_SKIP_ROOT_TESTS=1 skips them explicitly.
pub fn test(extra: &[String]) -> ExitCode {
    let root = crate::paths::repo_root();
    let mut cmd = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    cmd.current_dir(&root).args(["test", "--workspace", "--no-fail-fast"]).args(extra);
    match cmd.status() {
        Ok(s) if s.success() => ExitCode::SUCCESS,
        Ok(_) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("cannot run cargo test: {e}");
            ExitCode::FAILURE
        }
    }
}
