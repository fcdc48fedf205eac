//! Helpers shared by the integration tests.
#![allow(dead_code)]

#[path = "../../../testsupport/skip.rs"]
pub mod skip;
pub mod ssh_host;

#[allow(unused_imports)] // not every test binary skips
pub use skip::skip;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// True when running as root; otherwise fails the test with the reason, unless
/// PGTIER_SKIP_ROOT_TESTS=1 asks to skip it explicitly (a skip, see `skip`: a failure under CI).
pub fn root_or_skip() -> bool {
    skip::root_or_skip(
        "needs root (PGTIER_SKIP_ROOT_TESTS=1)",
        "this test provisions real block devices and runs PostgreSQL; run it as root, or set PGTIER_SKIP_ROOT_TESTS=1 to skip it explicitly",
    )
}

/// A private state directory (journals, work directories) and scratch space for one test.
pub struct Env {
    pub dir: tempfile::TempDir,
}

impl Env {
    pub fn new() -> Env {
        Env { dir: tempfile::Builder::new().prefix("pgtier-it-").tempdir_in("/var/tmp").unwrap() }
    }
    pub fn state(&self) -> PathBuf {
        self.dir.path().join("state")
    }
    pub fn write(&self, name: &str, contents: &str) -> PathBuf {
        let p = self.dir.path().join(name);
        std::fs::write(&p, contents).unwrap();
        p
    }
    pub fn xtask(&self, args: &[&str]) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_xtask"));
        // Hosts get the binary under test (the debug build), not the release pgtier that
        // `cargo xtask compare` builds and ships, unless PGTIER_SHIP_BINARY names another.
        let ship = std::env::var_os("PGTIER_SHIP_BINARY").unwrap_or_else(|| env!("CARGO_BIN_EXE_xtask").into());
        c.args(args).env("PGTIER_STATE_DIR", self.state()).env("PGTIER_SHIP_BINARY", ship);
        c
    }
}

pub fn text(o: &Output) -> (String, String) {
    (String::from_utf8_lossy(&o.stdout).into_owned(), String::from_utf8_lossy(&o.stderr).into_owned())
}

/// Nothing of the runs under `state` is mounted, attached or running, and every run record is
/// closed.
pub fn assert_nothing_left(state: &Path) {
    let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap();
    let state_s = state.to_string_lossy();
    assert!(
        !mounts.contains(state_s.as_ref()),
        "still mounted:\n{}",
        mounts.lines().filter(|l| l.contains(state_s.as_ref())).collect::<Vec<_>>().join("\n")
    );
    for e in std::fs::read_dir("/sys/block").unwrap().flatten() {
        if let Ok(b) = std::fs::read_to_string(e.path().join("loop/backing_file")) {
            assert!(!b.contains(state_s.as_ref()), "loop device {:?} still attached to {b}", e.file_name());
        }
    }
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        if let Ok(cmd) = std::fs::read(e.path().join("cmdline")) {
            let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
            if cmd.contains(state_s.as_ref()) && !cmd.contains("cargo") {
                panic!("process still running: {cmd}");
            }
        }
    }
    let journals: Vec<_> = std::fs::read_dir(state.join("journal"))
        .map(|rd| rd.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect())
        .unwrap_or_default();
    assert!(journals.iter().all(|j| j.ends_with(".closed.jsonl")), "unfinished run records: {journals:?}");
    let work: Vec<_> = std::fs::read_dir(state.join("work")).map(|rd| rd.flatten().collect()).unwrap_or_default();
    assert!(work.is_empty(), "work directories left: {work:?}");
    let cgroups: Vec<_> = [
        "/sys/fs/cgroup/memory/pgtier",
        "/sys/fs/cgroup/cpuacct/pgtier",
        "/sys/fs/cgroup/cpu/pgtier",
        "/sys/fs/cgroup/blkio/pgtier",
        "/sys/fs/cgroup/pgtier",
    ]
    .iter()
    .flat_map(|d| std::fs::read_dir(d).into_iter().flatten().flatten())
    .filter(|e| {
        std::fs::read_dir(state.join("journal")).into_iter().flatten().flatten().any(|j| {
            let name = j.file_name().to_string_lossy().replace(".closed.jsonl", "");
            e.file_name().to_string_lossy() == name
        })
    })
    .map(|e| e.path())
    .collect();
    assert!(cgroups.is_empty(), "cgroups left: {cgroups:?}");
}

pub fn csv_rows(path: &Path) -> Vec<HashMap<String, String>> {
    let mut r = csv::Reader::from_path(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let headers = r.headers().unwrap().clone();
    r.records()
        .map(|rec| headers.iter().zip(rec.unwrap().iter()).map(|(h, v)| (h.to_string(), v.to_string())).collect())
        .collect()
}

/// A `compare` (or any command) started with its stderr read line by line: [`Watched::until`]
/// returns once a line satisfies `hit` (given the line and those before it), so that a test can
/// act at that moment (a signal, a killed connection); [`Watched::finish`] reads the rest.
pub struct Watched {
    pub child: std::process::Child,
    /// Every line read so far.
    pub seen: Vec<String>,
    lines: std::io::Lines<std::io::BufReader<std::process::ChildStderr>>,
}

impl Watched {
    /// Starts `cmd` (stdout discarded) and reads its stderr until `hit`; panics with what it
    /// printed if it ends first.
    pub fn until(cmd: &mut Command, mut hit: impl FnMut(&str, &[String]) -> bool) -> Watched {
        use std::io::BufRead;
        let mut child = cmd.stdout(std::process::Stdio::null()).stderr(std::process::Stdio::piped()).spawn().unwrap();
        let mut lines = std::io::BufReader::new(child.stderr.take().unwrap()).lines();
        let mut seen: Vec<String> = Vec::new();
        for line in lines.by_ref().map_while(Result::ok) {
            let h = hit(&line, &seen);
            seen.push(line);
            if h {
                return Watched { child, seen, lines };
            }
        }
        let status = child.wait();
        panic!("the awaited line never came ({status:?}):\n{}", seen.join("\n"));
    }

    /// Sends `signal` to the process.
    pub fn signal(&self, signal: nix::sys::signal::Signal) {
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(self.child.id() as i32), signal).unwrap();
    }

    /// Reads the rest of stderr and waits: the exit status and everything it printed.
    pub fn finish(mut self) -> (std::process::ExitStatus, String) {
        self.seen.extend(self.lines.by_ref().map_while(Result::ok));
        let status = self.child.wait().unwrap();
        (status, self.seen.join("\n"))
    }
}
