//! Interruptions: Ctrl-C in every phase (provisioning, relocation, measuring, reporting),
//! a hangup while loading and a second Ctrl-C during teardown leave nothing behind; after the harness is
//! SIGKILLed, `cleanup` undoes everything from the run record (twice in a row is fine) and
//! `compare --resume` finishes the matrix. Needs root; PGTIER_SKIP_ROOT_TESTS=1 skips explicitly.

mod common;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::*;
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

const EXPERIMENT: &str = r#"
[experiment]
name = "interrupts"
baseline = "a"
repetitions = 2
device_probe = "0s"

[postgres]
profiles = ["default"]
memory_limits = ["256MiB"]

[[device]]
name = "disk"
class = "nvme"
path = "/dev/disk/by-id/not-used"
[device.emulate]
size = "512MiB"

[[device]]
name = "remote"
class = "nvme-tcp"
address = "192.0.2.1"
nqn = "nqn.2014-08.org.example:interrupts"
[device.emulate]
size = "512MiB"

[[placement]]
name = "a"
data = "disk"
wal = "disk"

[[placement]]
name = "b"
data = "remote"
wal = "remote"

[[workload]]
name = "rw"
kind = "pgbench"
builtin = "tpcb-like"
scale = 2
clients = [2]
threads = 1
duration = "5s"
"#;

struct Running {
    child: Child,
    lines: mpsc::Receiver<String>,
    seen: Vec<String>,
}

/// A run-order seed whose shuffles keep every repetition block in written order (a, then b),
/// which the interrupt points of these tests name (`SplitMix64(2)`'s first four draws all fall in
/// the upper half, so Fisher-Yates swaps nothing).
const WRITTEN_ORDER: &str = "2";

impl Running {
    fn start(env: &Env, out: &Path, extra: &[&str]) -> Running {
        let cfg = env.write("interrupts.toml", EXPERIMENT);
        let mut args = vec!["compare", "--config", cfg.to_str().unwrap(), "--emulate"];
        let out_s = out.to_str().unwrap().to_string();
        if !extra.contains(&"--resume") {
            // A resumed run repeats the recorded seed; a fresh one takes WRITTEN_ORDER.
            args.extend(["--out", out_s.as_str(), "--seed", WRITTEN_ORDER]);
        }
        args.extend(extra);
        let mut child = env.xtask(&args).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap();
        let stderr = child.stderr.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Running { child, lines: rx, seen: Vec::new() }
    }

    /// Waits for a stderr line containing `marker`.
    fn wait_for(&mut self, marker: &str) {
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(300) {
            match self.lines.recv_timeout(Duration::from_millis(200)) {
                Ok(l) => {
                    let hit = l.contains(marker);
                    self.seen.push(l);
                    if hit {
                        return;
                    }
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
            }
        }
        panic!("never saw {marker:?}:\n{}", self.seen.join("\n"));
    }

    fn signal(&self, s: Signal) {
        kill(Pid::from_raw(self.child.id() as i32), s).unwrap();
    }

    fn finish(mut self) -> (Option<i32>, String) {
        let status = self.child.wait().unwrap();
        while let Ok(l) = self.lines.recv_timeout(Duration::from_secs(2)) {
            self.seen.push(l);
        }
        (status.code(), self.seen.join("\n"))
    }
}

fn interrupt_at(marker: &str) -> (Env, PathBuf, Option<i32>, String) {
    let env = Env::new();
    let out = env.dir.path().join("results");
    let mut r = Running::start(&env, &out, &[]);
    r.wait_for(marker);
    r.signal(Signal::SIGINT);
    let (code, stderr) = r.finish();
    assert!(stderr.contains("teardown complete"), "{stderr}");
    assert_nothing_left(&env.state());
    (env, out, code, stderr)
}

#[test]
fn ctrl_c_while_provisioning() {
    if !root_or_skip() {
        return;
    }
    let (_env, _out, code, stderr) = interrupt_at("nbdkit --foreground");
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("interrupt"), "{stderr}");
}

/// The terminal goes away while loading (SIGHUP, then stderr is a closed pipe): teardown
/// still completes, and what it says goes to a file in the state directory.
#[test]
fn hangup_while_loading() {
    if !root_or_skip() {
        return;
    }
    let env = Env::new();
    let out = env.dir.path().join("results");
    let cfg = env.write("interrupts.toml", EXPERIMENT);
    let mut child = env
        .xtask(&["compare", "--config", cfg.to_str().unwrap(), "--emulate", "--out", out.to_str().unwrap()])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut seen = String::new();
    while !seen.contains("building data set") {
        let mut line = String::new();
        assert!(stderr.read_line(&mut line).unwrap() > 0, "never saw the load start:\n{seen}");
        seen.push_str(&line);
    }
    kill(Pid::from_raw(child.id() as i32), Signal::SIGHUP).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    drop(stderr);
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(1), "a hangup is an interruption, not a crash");
    let log = std::fs::read_to_string(env.state().join(format!("hangup-{}.log", child.id()))).unwrap();
    assert!(log.contains("teardown complete"), "{log}");
    assert_nothing_left(&env.state());
}

#[test]
fn ctrl_c_while_relocating() {
    if !root_or_skip() {
        return;
    }
    let (_env, _out, code, _) = interrupt_at("copying data set");
    assert_eq!(code, Some(1));
}

#[test]
fn ctrl_c_while_measuring_then_again_during_teardown() {
    if !root_or_skip() {
        return;
    }
    let env = Env::new();
    let out = env.dir.path().join("results");
    let mut r = Running::start(&env, &out, &[]);
    r.wait_for("measuring");
    r.signal(Signal::SIGINT);
    r.wait_for("teardown: undoing");
    r.signal(Signal::SIGINT);
    r.signal(Signal::SIGTERM);
    let (code, stderr) = r.finish();
    assert_eq!(code, Some(1));
    assert!(stderr.contains("teardown is in progress"), "a second signal is acknowledged, not obeyed:\n{stderr}");
    assert!(stderr.contains("teardown complete"), "{stderr}");
    assert_nothing_left(&env.state());
}

#[test]
fn ctrl_c_while_reporting() {
    if !root_or_skip() {
        return;
    }
    let (_env, out, code, stderr) = interrupt_at("reporting:");
    assert!(stderr.contains("interrupt: teardown is in progress"), "the signal arrived while reporting:\n{stderr}");
    assert_eq!(code, Some(0), "the matrix had finished; a signal while reporting does not fail it:\n{stderr}");
    assert!(out.join("report.md").exists(), "the report is still written:\n{stderr}");
}

/// Starts the experiment and SIGKILLs the harness in the middle of the second measured run
/// (run b on the NBD tier), leaving everything it made in place.
fn sigkill_in_second_run() -> (Env, PathBuf) {
    let env = Env::new();
    let out = env.dir.path().join("results");
    let mut r = Running::start(&env, &out, &[]);
    r.wait_for("[2/4] 0002-b-rw-c2-r1: starting");
    r.wait_for("measuring");
    r.signal(Signal::SIGKILL);
    let (code, _) = r.finish();
    assert_eq!(code, None, "killed by a signal");
    (env, out)
}

#[test]
fn sigkill_then_cleanup_twice_then_resume() {
    if !root_or_skip() {
        return;
    }
    let (env, out) = sigkill_in_second_run();
    let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap();
    assert!(mounts.contains(env.state().to_str().unwrap()), "a killed harness leaves its mounts");

    let o = env.xtask(&["cleanup"]).output().unwrap();
    let (stdout, stderr) = text(&o);
    assert!(o.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("clean:"), "{stdout}");
    assert_nothing_left(&env.state());
    let o = env.xtask(&["cleanup"]).output().unwrap();
    assert!(text(&o).0.contains("nothing to clean up"), "{:?}", text(&o));

    // Resume: the finished run is kept, the cut-off one is made again, the report covers all.
    let first = std::fs::read_to_string(out.join("runs/0001-a-rw-c2-r1/result.json")).unwrap();
    let r = Running::start(&env, &out, &["--resume", out.to_str().unwrap()]);
    let (code, stderr) = r.finish();
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stderr.contains("1 of 4 runs already finished"), "{stderr}");
    assert_eq!(std::fs::read_to_string(out.join("runs/0001-a-rw-c2-r1/result.json")).unwrap(), first, "kept as it was");
    let runs = csv_rows(&out.join("runs.csv"));
    assert_eq!(runs.len(), 4);
    assert!(runs.iter().all(|r| r["status"] == "ok"), "{runs:?}");
    assert!(std::fs::read_dir(out.join("interrupted")).unwrap().count() >= 1, "the cut-off run's output is kept aside");
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(!report.contains("Missing cells"), "every cell is covered");
    assert!(report.contains("resumed"), "the report says the set was resumed");
    assert_nothing_left(&env.state());
}

#[test]
fn resume_refuses_a_changed_configuration() {
    if !root_or_skip() {
        return;
    }
    let env = Env::new();
    let out = env.dir.path().join("results");
    let mut r = Running::start(&env, &out, &[]);
    r.wait_for("measuring");
    r.signal(Signal::SIGINT);
    let _ = r.finish();
    let changed = env.write("changed.toml", &EXPERIMENT.replace("duration = \"5s\"", "duration = \"6s\""));
    let o = env
        .xtask(&["compare", "--config", changed.to_str().unwrap(), "--emulate", "--resume", out.to_str().unwrap()])
        .output()
        .unwrap();
    let (_, stderr) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("configuration changed") && stderr.contains("duration"), "{stderr}");
    assert_nothing_left(&env.state());
}

#[test]
fn cleanup_after_every_process_of_the_run_died() {
    if !root_or_skip() {
        return;
    }
    // As after a crash of everything: the harness, the server, pgbench, nbdkit and nbdfuse are
    // all SIGKILLed; mounts, loop devices, zram, namespaces and cgroups remain.
    let (env, _out) = sigkill_in_second_run();
    let state = env.state().to_string_lossy().into_owned();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else { continue };
        let cmd = std::fs::read(e.path().join("cmdline"))
            .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
            .unwrap_or_default();
        let is_ours = cmd.contains(&state) && !cmd.contains("cargo");
        let is_backend = std::fs::read_link(e.path().join("cwd")).is_ok_and(|c| c.to_string_lossy().contains(&state));
        if is_ours || is_backend {
            let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
        }
    }
    std::thread::sleep(Duration::from_millis(500));
    let o = env.xtask(&["cleanup"]).output().unwrap();
    let (stdout, stderr) = text(&o);
    assert!(o.status.success(), "{stdout}\n{stderr}");
    assert_nothing_left(&env.state());
}
