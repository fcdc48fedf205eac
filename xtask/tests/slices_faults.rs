//! The `slices` design under faults, for real on emulated tiers: a placement's postmaster
//! SIGKILLed during a warm-up or a measured slice is named with its signal and phase, restarted
//! once on its own data, and its contest goes on in a new segment; killed again, the placement
//! is dropped from the session and the others go on; the harness SIGKILLed mid-session, then
//! `cleanup` and `--resume`, completes every contest, keeping those that had stopped; an emulated
//! tier lost in a slice drops every placement on it at once, without a restart. Nothing is
//! left behind. Needs root; PGTIER_SKIP_ROOT_TESTS=1 skips it.

mod common;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use common::*;
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

/// Placements `a` (the baseline), `b` and, with `three`, `c`, each on its own emulated device;
/// one TPC-B contest per client count; rounds of 2 s slices, `min_rounds` of them (neither a
/// budget nor a target).
fn experiment(three: bool, clients: &str, min_rounds: u32) -> String {
    let mut placements = vec!["a", "b"];
    if three {
        placements.push("c");
    }
    let mut text = format!(
        r#"
[experiment]
name = "sliced-faults"
baseline = "a"
device_probe = "0s"

[measurement]
design = "slices"
slice = "2s"
warm_up = "2s"
min_rounds = {min_rounds}

[postgres]
profiles = ["default"]
memory_limits = ["256MiB"]
settings = {{ shared_buffers = "32MB" }}

[[workload]]
name = "rw"
kind = "pgbench"
builtin = "tpcb-like"
scale = 1
clients = {clients}
threads = 1
duration = "10s"
"#
    );
    for p in placements {
        text.push_str(&format!(
            "\n[[device]]\nname = \"d{p}\"\nclass = \"nvme\"\npath = \"/dev/disk/by-id/not-used-{p}\"\n[device.emulate]\nsize = \"512MiB\"\n\n[[placement]]\nname = \"{p}\"\ndata = \"d{p}\"\nwal = \"d{p}\"\n"
        ));
    }
    text
}

fn compare(env: &Env, cfg: &Path, out: &Path) -> std::process::Command {
    env.xtask(&[
        "compare",
        "--config",
        cfg.to_str().unwrap(),
        "--emulate",
        "--out",
        out.to_str().unwrap(),
        "--seed",
        "11",
    ])
}

/// The postmaster of `placement` in this test's state directory (`postgres -D .../<placement>/pgdata`).
fn postmaster(env: &Env, placement: &str) -> i32 {
    let state = env.state().to_string_lossy().into_owned();
    let tail = format!("/{placement}/pgdata");
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else { continue };
        let Ok(cmd) = std::fs::read(e.path().join("cmdline")) else { continue };
        let args: Vec<String> = cmd.split(|&b| b == 0).map(|a| String::from_utf8_lossy(a).into_owned()).collect();
        if args.len() >= 3
            && args[0].ends_with("/postgres")
            && args[1] == "-D"
            && args[2].contains(&state)
            && args[2].ends_with(&tail)
        {
            return pid;
        }
    }
    panic!("no postmaster of placement {placement} under {state}");
}

fn sigkill(pid: i32) {
    kill(Pid::from_raw(pid), Signal::SIGKILL).unwrap();
}

fn manifest(out: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(out.join("manifest.json")).unwrap()).unwrap()
}

fn warnings(m: &serde_json::Value) -> Vec<String> {
    m["warnings"].as_array().unwrap().iter().map(|w| w.as_str().map(String::from).unwrap_or(w.to_string())).collect()
}

/// Each run's result.json.
fn results(out: &Path) -> Vec<serde_json::Value> {
    let mut v: Vec<serde_json::Value> = std::fs::read_dir(out.join("runs"))
        .unwrap()
        .flatten()
        .map(|e| serde_json::from_slice(&std::fs::read(e.path().join("result.json")).unwrap()).unwrap())
        .collect();
    v.sort_by_key(|r| r["sequence"].as_u64());
    v
}

fn of<'r>(runs: &'r [serde_json::Value], placement: &str, clients: u64) -> Vec<&'r serde_json::Value> {
    runs.iter().filter(|r| r["cell"]["placement"] == placement && r["cell"]["clients"] == clients).collect()
}

fn ok(r: &serde_json::Value) -> bool {
    r["status"] == "ok"
}

#[test]
fn a_postmaster_killed_during_the_warm_up_is_named_restarted_and_its_contest_completes_in_a_new_segment() {
    if !root_or_skip() {
        return;
    }
    let t0 = Instant::now();
    let env = Env::new();
    let cfg = env.write("f.toml", &experiment(false, "[2]", 3));
    let out = env.dir.path().join("results");
    let w = Watched::until(&mut compare(&env, &cfg, &out), |l, _| l.contains("session s1: 2 servers up"));
    let pid = postmaster(&env, "b");
    sigkill(pid);
    let (status, stderr) = w.finish();
    eprintln!("{stderr}");
    assert!(stderr.contains("teardown complete"), "{stderr}");
    assert_nothing_left(&env.state());
    assert_eq!(status.code(), Some(1), "a server failure makes a runtime failure:\n{stderr}");
    let named = format!(
        "placement b's server failed during the warm-up of contest rw c2 mem 256MiB default in session s1: the postmaster (PID {pid}) ended with signal 9 (SIGKILL)"
    );
    assert!(stderr.contains(&named), "the placement, the phase and the signal are named:\n{stderr}");
    assert!(stderr.contains("server log's last lines:"), "{stderr}");
    assert!(stderr.contains("placement b's server is up again"), "{stderr}");

    let runs = results(&out);
    for p in ["a", "b"] {
        let mine = of(&runs, p, 2);
        assert_eq!(mine.len(), 3, "three rounds of placement {p}: {runs:?}");
        assert!(mine.iter().all(|r| ok(r) && r["segment"] == 2), "all in the segment after the restart: {mine:?}");
    }
    let m = manifest(&out);
    assert!(warnings(&m).iter().any(|w| w.starts_with(&named) && w.contains("restarted")), "{:?}", warnings(&m));
    let why = m["measurement"]["stopped"]["rw c2 mem 256MiB default"].as_str().unwrap();
    assert!(why.starts_with("3 rounds") && why.contains("restarted"), "{why}");
    let contests: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("contests.json")).unwrap()).unwrap();
    assert_eq!(contests["rw c2 mem 256MiB default"]["segment"], 2, "{contests}");
    eprintln!("took {:.0} s", t0.elapsed().as_secs_f64());
}

#[test]
fn a_postmaster_killed_in_a_slice_is_restarted_then_killed_again_dropped_while_the_others_go_on() {
    if !root_or_skip() {
        return;
    }
    let t0 = Instant::now();
    let env = Env::new();
    let cfg = env.write("f.toml", &experiment(true, "[1, 2]", 3));
    let out = env.dir.path().join("results");
    // Killed after round 1, then again as soon as it is up again.
    let (mut first, mut second) = (0, 0);
    let w = Watched::until(&mut compare(&env, &cfg, &out), |l, _| {
        if first == 0 && l.contains("[rw c1 mem 256MiB default] round 1:") {
            first = postmaster(&env, "b");
            sigkill(first);
        } else if first != 0 && l.contains("placement b's server is up again") {
            second = postmaster(&env, "b");
            sigkill(second);
            return true;
        }
        false
    });
    assert_ne!(first, second, "a new postmaster");
    let (status, stderr) = w.finish();
    eprintln!("{stderr}");
    assert!(stderr.contains("teardown complete"), "{stderr}");
    assert_nothing_left(&env.state());
    assert_eq!(status.code(), Some(1), "{stderr}");
    let died = format!(
        "placement b's server failed during a slice of round 2 of contest rw c1 mem 256MiB default in session s1: the postmaster (PID {first}) ended with signal 9 (SIGKILL)"
    );
    assert!(stderr.contains(&died), "named with its phase and signal:\n{stderr}");
    let again = format!(
        "placement b's server failed again during the warm-up of contest rw c1 mem 256MiB default in session s1: the postmaster (PID {second}) ended with signal 9 (SIGKILL)"
    );
    assert!(stderr.contains(&again), "the second death:\n{stderr}");
    assert!(stderr.contains("the placement is dropped from the rest of session s1"), "{stderr}");

    let runs = results(&out);
    // Contest c1: the rounds before the death in segment 1, the rest without b in segment 2.
    let b1 = of(&runs, "b", 1);
    assert!(b1.iter().any(|r| !ok(r)) && b1.iter().all(|r| r["segment"] == 1), "b's slices end at its death: {b1:?}");
    for p in ["a", "c"] {
        let mine = of(&runs, p, 1);
        assert!(mine.iter().any(|r| r["segment"] == 1), "{p}: rounds before the death: {mine:?}");
        assert!(mine.iter().filter(|r| r["segment"] == 2).all(|r| ok(r)), "{mine:?}");
        assert!(mine.iter().any(|r| r["segment"] == 2), "{p}: rounds after the restart: {mine:?}");
        // Contest c2 of the session runs without b.
        let c2 = of(&runs, p, 2);
        assert_eq!(c2.len(), 3, "{p}: contest c2 completes: {c2:?}");
        assert!(c2.iter().all(|r| ok(r)), "{c2:?}");
    }
    assert!(of(&runs, "b", 2).is_empty(), "b is out of the rest of the session");
    let m = manifest(&out);
    let ws = warnings(&m);
    assert!(ws.iter().any(|w| w.starts_with(&died)), "{ws:?}");
    assert!(ws.iter().any(|w| w.starts_with(&again) && w.contains("dropped")), "{ws:?}");
    let stopped = &m["measurement"]["stopped"];
    let c1 = stopped["rw c1 mem 256MiB default"].as_str().unwrap();
    assert!(c1.contains("rounds") && c1.contains("placement b's server failed again"), "{c1}");
    assert!(stopped["rw c2 mem 256MiB default"].as_str().unwrap().starts_with("3 rounds"), "{stopped}");
    let summary = csv_rows(&out.join("summary.csv"));
    assert!(
        summary.iter().any(|r| r["placement"] == "c" && r["clients"] == "2"),
        "c's change is reported: {summary:?}"
    );
    eprintln!("took {:.0} s", t0.elapsed().as_secs_f64());
}

#[test]
fn a_harness_killed_mid_session_is_cleaned_up_and_resumed_by_contest() {
    if !root_or_skip() {
        return;
    }
    let t0 = Instant::now();
    let env = Env::new();
    let cfg = env.write("f.toml", &experiment(false, "[1, 2]", 3));
    let out = env.dir.path().join("results");
    let w = Watched::until(&mut compare(&env, &cfg, &out), |l, _| l.contains("[rw c2 mem 256MiB default] round 1:"));
    w.signal(Signal::SIGKILL);
    let (status, _) = w.finish();
    assert_eq!(status.code(), None, "killed by a signal");
    let o = env.xtask(&["cleanup"]).output().unwrap();
    assert!(o.status.success(), "{:?}", text(&o));
    assert_nothing_left(&env.state());

    let kept: HashMap<String, String> = results(&out)
        .iter()
        .filter(|r| r["cell"]["clients"] == 1)
        .map(|r| {
            let id = r["run_id"].as_str().unwrap().to_string();
            let text = std::fs::read_to_string(out.join("runs").join(&id).join("result.json")).unwrap();
            (id, text)
        })
        .collect();
    assert_eq!(kept.len(), 6, "contest c1 had finished: {kept:?}");
    let seed = manifest(&out)["measurement"]["seed"].clone();

    let o = env.xtask(&["compare", "--resume", out.to_str().unwrap(), "--emulate"]).output().unwrap();
    let (_, stderr) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{stderr}");
    assert_nothing_left(&env.state());
    assert!(
        stderr.contains("resumed by contest: 1 of 2 contests had stopped and are kept as they were (rw c1 mem 256MiB default); 1 measured again from a fresh warm-up on freshly provisioned tiers (rw c2 mem 256MiB default)"),
        "{stderr}"
    );
    assert!(stderr.contains("session r1-s1: 2 servers up"), "{stderr}");
    for (id, text) in &kept {
        let now = std::fs::read_to_string(out.join("runs").join(id).join("result.json")).unwrap();
        assert_eq!(&now, text, "{id} is kept as it was");
    }
    let runs = results(&out);
    for p in ["a", "b"] {
        let c2 = of(&runs, p, 2);
        assert_eq!(c2.len(), 3, "{p}: c2 measured again in full: {c2:?}");
        assert!(c2.iter().all(|r| ok(r)), "{c2:?}");
    }
    assert!(std::fs::read_dir(out.join("interrupted")).unwrap().count() >= 1, "the partial slices are set aside");
    let m = manifest(&out);
    assert_eq!(m["measurement"]["seed"], seed, "the seed stays");
    assert!(warnings(&m).iter().any(|w| w.starts_with("resumed by contest: 1 of 2")), "{:?}", warnings(&m));
    for c in ["rw c1 mem 256MiB default", "rw c2 mem 256MiB default"] {
        assert!(m["measurement"]["stopped"][c].as_str().unwrap().starts_with("3 rounds"), "{}", m["measurement"]);
    }
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(report.contains("resumed by contest"), "the report says which contests were resumed");
    let _: PathBuf = out;
    eprintln!("took {:.0} s", t0.elapsed().as_secs_f64());
}

/// Placements `a` (the baseline) and `d` on devices of their own; `b` with its data and `c` with
/// its WAL on one emulated NVMe/TCP tier, whose target is killed during round 2's first slice.
fn shared_remote_experiment() -> String {
    let edit = |text: String, from: &str, to: &str| {
        assert!(text.contains(from), "{from:?} in {text}");
        text.replace(from, to)
    };
    // `experiment` makes a and b on da and db; b moves onto the remote tier, c and d are added.
    let mut text = edit(
        experiment(false, "[2]", 4),
        "name = \"b\"\ndata = \"db\"\nwal = \"db\"",
        "name = \"b\"\ndata = \"remote\"\nwal = \"remote\"",
    );
    text = edit(
        text,
        "[[device]]\nname = \"db\"\nclass = \"nvme\"\npath = \"/dev/disk/by-id/not-used-b\"\n[device.emulate]\nsize = \"512MiB\"\n",
        "",
    );
    text.push_str(
        r#"
[[device]]
name = "remote"
class = "nvme-tcp"
address = "192.0.2.1"
nqn = "nqn.2014-08.org.example:sliced"
[device.emulate]
size = "3GiB"

[[device]]
name = "dc"
class = "nvme"
path = "/dev/disk/by-id/not-used-c"
[device.emulate]
size = "512MiB"

[[device]]
name = "dd"
class = "nvme"
path = "/dev/disk/by-id/not-used-d"
[device.emulate]
size = "512MiB"

[[placement]]
name = "c"
data = "dc"
wal = "remote"

[[placement]]
name = "d"
data = "dd"
wal = "dd"

[[fault]]
run = 5
after = "1s"
kind = "stop-target"
device = "remote"
"#,
    );
    text
}

#[test]
fn a_tier_lost_in_a_slice_drops_every_placement_on_it_at_once_while_the_others_go_on() {
    if !root_or_skip() {
        return;
    }
    let t0 = Instant::now();
    let env = Env::new();
    let cfg = env.write("f.toml", &shared_remote_experiment());
    let out = env.dir.path().join("results");
    let o = compare(&env, &cfg, &out).output().unwrap();
    let (_, stderr) = text(&o);
    eprintln!("{stderr}");
    assert!(stderr.contains("teardown complete"), "{stderr}");
    assert_nothing_left(&env.state());
    assert_eq!(o.status.code(), Some(1), "a lost tier makes a runtime failure:\n{stderr}");
    assert!(!stderr.contains("is up again"), "no restart on a broken device:\n{stderr}");
    assert!(!stderr.contains("will not fire"), "the slices design numbers its slices:\n{stderr}");

    let runs = results(&out);
    let on_remote: Vec<&serde_json::Value> =
        runs.iter().filter(|r| ["b", "c"].contains(&r["cell"]["placement"].as_str().unwrap())).collect();
    // The slice during which the target died, or the next one on the tier, is device-lost; none
    // after it is made.
    // (device-lost when the client finished on it; else the client's failure names the loss.)
    let lost: Vec<&&serde_json::Value> = on_remote
        .iter()
        .filter(|r| r["failure"].as_str().is_some_and(|f| f.contains("the emulated tier remote failed during the run")))
        .collect();
    assert_eq!(lost.len(), 1, "one slice found the tier broken: {on_remote:?}");
    let lost_at = lost[0]["sequence"].as_u64().unwrap();
    assert!(lost_at >= 5, "{lost:?}");
    assert!(
        on_remote.iter().all(|r| r["sequence"].as_u64().unwrap() <= lost_at),
        "no slice on the broken tier after it: {on_remote:?}"
    );
    assert!(on_remote.iter().filter(|r| r["sequence"].as_u64().unwrap() < 5).all(|r| ok(r)), "{on_remote:?}");
    for p in ["b", "c"] {
        // The one whose slice found the loss in round 2, the other before round 3.
        let dropped = format!("placement {p} lost its device during ");
        let line = stderr.lines().find(|l| l.contains(&dropped)).unwrap_or_else(|| panic!("{p} is dropped:\n{stderr}"));
        assert!(
            line.contains("of contest rw c2 mem 256MiB default in session s1: the emulated tier remote failed during")
                && line.contains("the placement is dropped from the rest of the matrix"),
            "{line}"
        );
    }
    for p in ["a", "d"] {
        let mine = of(&runs, p, 2);
        // Round 2 ended at the loss, maybe before their slices; rounds 3 and 4 are whole.
        assert!(mine.len() >= 3 && mine.iter().all(|r| ok(r)), "{p} goes on to its rounds: {mine:?}");
    }
    let summary = csv_rows(&out.join("summary.csv"));
    assert!(summary.iter().any(|r| r["placement"] == "d"), "d's change is reported: {summary:?}");
    eprintln!("took {:.0} s", t0.elapsed().as_secs_f64());
}

#[test]
fn a_tier_the_baseline_shares_stops_the_matrix_before_the_next_session() {
    if !root_or_skip() {
        return;
    }
    let t0 = Instant::now();
    let env = Env::new();
    // The baseline a keeps its WAL on the remote tier too; two memory limits make two sessions.
    let mut toml = shared_remote_experiment();
    for (from, to) in [
        ("name = \"a\"\ndata = \"da\"\nwal = \"da\"", "name = \"a\"\ndata = \"da\"\nwal = \"remote\""),
        ("size = \"3GiB\"", "size = \"5GiB\""),
        ("memory_limits = [\"256MiB\"]", "memory_limits = [\"256MiB\", \"320MiB\"]"),
    ] {
        assert!(toml.contains(from), "{from:?} in {toml}");
        toml = toml.replace(from, to);
    }
    let cfg = env.write("f.toml", &toml);
    let out = env.dir.path().join("results");
    let o = compare(&env, &cfg, &out).output().unwrap();
    let (_, stderr) = text(&o);
    eprintln!("{stderr}");
    assert!(stderr.contains("teardown complete"), "{stderr}");
    assert_nothing_left(&env.state());
    assert_eq!(o.status.code(), Some(1), "{stderr}");
    assert!(!stderr.contains("is up again"), "no restart on a broken device:\n{stderr}");
    assert!(
        stderr.contains("the baseline is needed for every delta, so the matrix stops here"),
        "the second session does not start on a broken baseline:\n{stderr}"
    );
    assert!(!stderr.contains("session s2:"), "{stderr}");
    let runs = results(&out);
    assert!(runs.iter().all(|r| r["cell"]["memory_limit"] == "256MiB"), "nothing measured in session 2: {runs:?}");
    eprintln!("took {:.0} s", t0.elapsed().as_secs_f64());
}
