//! The whole pipeline, for real: a tiny experiment on the three emulated tier classes (loop
//! device, zram, nbdkit over a network namespace), real XFS, real PostgreSQL and pgbench. Checks
//! the CSV rows, the charts, the manifest, and that nothing is left mounted or running. Needs
//! root; PGTIER_SKIP_ROOT_TESTS=1 skips these tests explicitly where root is not available.

mod common;

use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::*;

const TINY: &str = r#"
[experiment]
name = "tiny"
description = "integration test"
device_probe = "1s"
baseline = "disk"
repetitions = 2

[postgres]
profiles = ["default"]
memory_limits = ["256MiB"]

[[device]]
name = "disk"
class = "nvme"
path = "/dev/disk/by-id/not-used-when-emulating"
mount_options = ["noatime"]
[device.emulate]
size = "512MiB"

[[device]]
name = "pm"
class = "pmem"
namespace = "namespace0.0"
[device.emulate]
size = "512MiB"

[[device]]
name = "remote"
class = "nvme-tcp"
address = "192.0.2.1"
nqn = "nqn.2014-08.org.example:tiny"
[device.emulate]
size = "512MiB"
latency = "1ms"

[[placement]]
name = "disk"
data = "disk"
wal = "disk"

[[placement]]
name = "wal-on-pm"
data = "disk"
wal = "pm"

[[placement]]
name = "remote"
data = "remote"
wal = "remote"

[[workload]]
name = "rw"
kind = "pgbench"
builtin = "tpcb-like"
scale = 2
clients = [2]
duration = "DURATION"
ramp_up = "1s"

[[workload]]
name = "ro"
kind = "pgbench"
builtin = "select-only"
scale = 2
clients = [2]
duration = "DURATION"
"#;

/// The labels a bar can carry for a change that summary.csv prints (rounded to 2 decimals) as
/// `pct`, with `ratio` (4 decimals) for throughput: the chart rounds the exact change to one
/// decimal, as `+12.3%`, or a throughput of at least twice the baseline's as `2.1x`.
fn bar_labels(pct: f64, ratio: Option<f64>) -> Vec<String> {
    let mut labels: Vec<String> = [-0.005, 0.0, 0.005].iter().map(|e| format!("{:+.1}%", pct + e)).collect();
    if let Some(r) = ratio.filter(|r| *r >= 1.9999) {
        labels.extend([-0.00005, 0.0, 0.00005].iter().map(|e| format!("{:.1}x", r + e)));
    }
    labels.dedup();
    labels
}

fn config(env: &Env, duration: &str) -> PathBuf {
    env.write("tiny.toml", &TINY.replace("DURATION", duration))
}

#[test]
fn tiny_experiment_end_to_end() {
    if !root_or_skip() {
        return;
    }
    let env = Env::new();
    let out = env.dir.path().join("results");
    let cfg = config(&env, "2s");
    let o = env
        .xtask(&["compare", "--config", cfg.to_str().unwrap(), "--emulate", "--out", out.to_str().unwrap()])
        .output()
        .unwrap();
    let (stdout, stderr) = text(&o);
    assert!(o.status.success(), "compare failed\nstdout:\n{stdout}\nstderr:\n{stderr}");
    assert_eq!(stdout.lines().last(), Some(out.to_str().unwrap()), "the last line on stdout is the results directory");

    let summary = csv_rows(&out.join("summary.csv"));
    assert_eq!(summary.len(), 6, "3 placements x 2 workloads");
    for row in &summary {
        assert_eq!(row["runs"], "2");
        let tps: f64 = row["tps_mean"].parse().unwrap();
        assert!(tps > 0.0);
        if row["placement"] == "disk" {
            assert_eq!(row["tps_delta_pct"], "0.00", "baseline rows have a zero delta");
        } else {
            let d: f64 = row["tps_delta_pct"].parse().expect("a delta against the baseline");
            let ratio: f64 = row["tps_ratio"].parse().unwrap();
            assert!(((ratio - 1.0) * 100.0 - d).abs() < 0.01, "delta and ratio agree");
            // Two runs on each side: an interval, and within_noise says whether it contains 0.
            let lo: f64 = row["tps_delta_ci95_low_pct"].parse().expect("a lower bound of the change");
            let hi: f64 = row["tps_delta_ci95_high_pct"].parse().expect("an upper bound of the change");
            assert!(lo <= hi, "{row:?}");
            let within = match row["within_noise"].as_str() {
                "true" => true,
                "false" => false,
                other => panic!("within_noise is true or false with an interval, not {other:?}: {row:?}"),
            };
            // A bound printed as 0.00 may be either side of 0.
            if lo != 0.0 && hi != 0.0 {
                assert_eq!(within, lo < 0.0 && hi > 0.0, "within_noise agrees with the interval: {row:?}");
            }
        }
    }
    let runs = csv_rows(&out.join("runs.csv"));
    assert_eq!(runs.len(), 12);
    assert!(runs.iter().all(|r| r["status"] == "ok"), "{runs:?}");
    // Interleaved order: placements alternate, each block of three in a random order (the
    // seed is recorded, so the order can be repeated).
    let mut by_sequence: Vec<&std::collections::HashMap<String, String>> = runs.iter().collect();
    by_sequence.sort_by_key(|r| r["sequence"].parse::<u32>().unwrap());
    for block in by_sequence.chunks(3) {
        let mut order: Vec<&str> = block.iter().map(|r| r["placement"].as_str()).collect();
        order.sort();
        assert_eq!(order, ["disk", "remote", "wal-on-pm"], "every block holds each placement once");
    }
    // Raw output next to every parsed figure.
    for r in &runs {
        let dir = out.join("runs").join(&r["run_id"]);
        let raw = std::fs::read_to_string(dir.join("pgbench.stdout")).unwrap();
        assert!(raw.contains("tps = "), "raw pgbench output kept for {}", r["run_id"]);
        assert!(std::fs::read_to_string(dir.join("pgbench.stderr")).unwrap().contains("progress:"));
        // ... and the raw counters behind the device I/O, CPU and PostgreSQL figures.
        assert!(std::fs::read_to_string(dir.join("diskstats.per-second.txt")).unwrap().contains("t="));
        assert!(std::fs::read_to_string(dir.join("stat.end.txt")).unwrap().starts_with("cpu "));
        assert!(std::fs::read_to_string(dir.join("pg_stat.txt")).unwrap().contains("after:\npg_stat_database:"));
        // ... and the wait-event snapshots behind the shares, about ten a second.
        let waits = std::fs::read_to_string(dir.join("wait_events.tsv")).unwrap();
        assert!(waits.starts_with("t_s\tbackend_type\t") && waits.contains("client backend"), "{waits}");
        let snapshots: std::collections::BTreeSet<&str> =
            waits.lines().skip(1).filter_map(|l| l.split('\t').next()).collect();
        assert!(snapshots.len() >= 10, "{} snapshots in a 2 s run", snapshots.len());
    }
    assert!(runs.iter().all(|r| !r["wait_top1_event"].is_empty() && !r["bottleneck"].is_empty()), "{runs:?}");
    // Charts: PNG and SVG for throughput and latency of both workloads.
    for kind in ["throughput", "latency"] {
        for w in ["rw", "ro"] {
            let stem = out.join("charts").join(format!("{kind}-{w}-c2-mem256MiB"));
            let png = std::fs::read(stem.with_extension("png")).unwrap();
            assert_eq!(&png[1..4], b"PNG");
            assert!(png.len() > 20_000, "a real picture, not an empty canvas");
            let svg = std::fs::read_to_string(stem.with_extension("svg")).unwrap();
            assert!(svg.contains("baseline") && svg.contains('%'), "% labels on the bars");
            // Each contender's bar carries its own change against the baseline, as summary.csv has it.
            for row in summary.iter().filter(|r| r["workload"] == w && r["placement"] != "disk") {
                let labels = if kind == "throughput" {
                    bar_labels(row["tps_delta_pct"].parse().unwrap(), Some(row["tps_ratio"].parse().unwrap()))
                } else {
                    bar_labels(row["latency_delta_pct"].parse().unwrap(), None)
                };
                // The SVG holds each text element's text on a line of its own.
                assert!(
                    svg.lines().any(|line| labels.iter().any(|l| line.trim_start().starts_with(l.as_str()))),
                    "{kind} chart of {w}: the bar of {} is labelled with one of {labels:?}",
                    row["placement"]
                );
            }
        }
    }
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("manifest.json")).unwrap()).unwrap();
    assert!(manifest["measurement"]["seed"].as_u64().is_some(), "the run order's seed is recorded");
    assert_eq!(manifest["measurement"]["design"], "runs");
    // The order the stand-ins were made in (drawn from the seed) is recorded: every device once.
    let mut order: Vec<&str> =
        manifest["measurement"]["device_order"].as_array().unwrap().iter().map(|d| d.as_str().unwrap()).collect();
    let mut named: Vec<&str> =
        manifest["devices"].as_array().unwrap().iter().map(|d| d["name"].as_str().unwrap()).collect();
    order.sort();
    named.sort();
    assert_eq!(order, named, "device_order is a permutation of the devices");
    let pm = manifest["devices"].as_array().unwrap().iter().find(|d| d["name"] == "pm").unwrap();
    assert_eq!(pm["dax_requested"], "required");
    assert_eq!(pm["dax_honoured"], false, "the emulated PMem cannot honour DAX and the results say so");
    assert!(manifest["warnings"].as_array().unwrap().iter().any(|w| w.as_str().unwrap().contains("DAX")));
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(report.contains("NOT in effect"));
    assert_nothing_left(&env.state());

    // Everything is re-rendered from the results directory alone: identical CSV, the charts back.
    let csv_before: Vec<Vec<u8>> =
        ["runs.csv", "summary.csv", "series.csv"].iter().map(|f| std::fs::read(out.join(f)).unwrap()).collect();
    std::fs::remove_dir_all(out.join("charts")).unwrap();
    for f in ["runs.csv", "summary.csv", "series.csv", "report.md"] {
        std::fs::remove_file(out.join(f)).unwrap();
    }
    let o = env.xtask(&["report", out.to_str().unwrap()]).output().unwrap();
    assert!(o.status.success(), "{:?}", text(&o));
    let csv_after: Vec<Vec<u8>> =
        ["runs.csv", "summary.csv", "series.csv"].iter().map(|f| std::fs::read(out.join(f)).unwrap()).collect();
    assert_eq!(csv_before, csv_after, "re-rendered CSV is identical");
    assert!(out.join("charts/throughput-rw-c2-mem256MiB.png").exists() && out.join("report.md").exists());

    // A result set compared with itself: nothing changed, no delta outside the noise.
    let cmp = env.dir.path().join("cmp");
    let o = env
        .xtask(&[
            "report",
            "--baseline",
            out.to_str().unwrap(),
            "--contender",
            out.to_str().unwrap(),
            "--out",
            cmp.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{:?}", text(&o));
    let md = std::fs::read_to_string(cmp.join("comparison.md")).unwrap();
    assert!(md.contains("Nothing pgtier records differs"), "{md}");
    for row in csv_rows(&cmp.join("comparison.csv")) {
        assert_eq!(row["tps_delta_pct"], "0.00");
    }

    // A second cleanup finds nothing to do.
    let o = env.xtask(&["cleanup"]).output().unwrap();
    assert!(o.status.success());
    assert!(text(&o).0.contains("nothing to clean up"), "{:?}", text(&o));
}

#[test]
fn tablespaces_on_their_own_device() {
    if !root_or_skip() {
        return;
    }
    // Seed 001's layout: PGDATA and WAL on one device, tables and indexes in tablespaces on another.
    let env = Env::new();
    let out = env.dir.path().join("results");
    let cfg = env.write(
        "ts.toml",
        r#"
[experiment]
name = "ts"
baseline = "split"
repetitions = 1
device_probe = "0s"

[[device]]
name = "sys"
class = "nvme"
path = "/dev/disk/by-id/not-used"
[device.emulate]
size = "512MiB"

[[device]]
name = "store"
class = "nvme"
path = "/dev/disk/by-id/not-used-either"
[device.emulate]
size = "512MiB"

[[placement]]
name = "split"
data = "sys"
wal = "sys"
tablespaces = { tables = "store", indexes = "store" }

[[workload]]
name = "nu"
kind = "pgbench"
builtin = "simple-update"
scale = 2
clients = [2]
duration = "3s"
"#,
    );
    let o = env
        .xtask(&["compare", "--config", cfg.to_str().unwrap(), "--emulate", "--out", out.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(o.status.success(), "{:?}", text(&o));
    let id = &csv_rows(&out.join("runs.csv"))[0]["run_id"];
    let r: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("runs").join(id).join("result.json")).unwrap()).unwrap();
    let store = r["devices"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["device"] == "store")
        .expect("the tablespace device is sampled");
    assert_eq!(store["role"], "indexes+tables");
    // The page cache was dropped before the run: reading tables and indexes goes to their device.
    assert!(store["read_iops"].as_f64().unwrap() > 0.0, "table and index reads reach the tablespace device: {store}");
    let statements = r["statements"].as_array().unwrap();
    assert!(
        statements.iter().any(|s| s["statement"].as_str().unwrap().starts_with("UPDATE pgbench_accounts")),
        "per-statement latency kept"
    );
    assert_nothing_left(&env.state());
}

#[test]
fn invalid_file_exits_2_and_touches_nothing() {
    let env = Env::new();
    let cfg = env.dir.path().join("bad.toml");
    let bad = TINY.replace("DURATION", "2s").replace("wal = \"pm\"", "wal = \"pmm\"");
    std::fs::write(&cfg, &bad).unwrap();
    let o = env.xtask(&["compare", "--config", cfg.to_str().unwrap(), "--emulate"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    let (_, stderr) = text(&o);
    let line = bad.lines().position(|l| l.contains("\"pmm\"")).unwrap() + 1;
    assert!(stderr.contains(&format!("bad.toml:{line}:")), "{stderr}");
    assert!(stderr.contains("placement[wal-on-pm].wal") && stderr.contains("nothing was touched"), "{stderr}");
    assert!(!env.state().exists(), "no state directory was created");

    // A results directory that already holds something is never mixed into.
    let cfg = config(&env, "2s");
    let out = env.dir.path().join("old-results");
    std::fs::create_dir_all(&out).unwrap();
    std::fs::write(out.join("runs.csv"), "run_id\n").unwrap();
    let o = env
        .xtask(&["compare", "--config", cfg.to_str().unwrap(), "--emulate", "--out", out.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).1.contains("is not empty"), "{}", text(&o).1);
    assert!(!env.state().exists(), "no state directory was created");
}

#[test]
fn dry_run_prints_the_plan_and_touches_nothing() {
    let env = Env::new();
    let cfg = config(&env, "2s");
    let o = env.xtask(&["compare", "--config", cfg.to_str().unwrap(), "--emulate", "--dry-run"]).output().unwrap();
    assert!(o.status.success());
    let (stdout, _) = text(&o);
    for needle in [
        "losetup --find --show --direct-io=on",
        "hot_add",
        "nbdkit",
        "nbdfuse",
        "mkfs.xfs",
        "mount -t xfs",
        "why:",
        "pgbench --builtin=tpcb-like",
        "needs about",
    ] {
        assert!(stdout.contains(needle), "dry run shows {needle}:\n{stdout}");
    }
    assert!(!env.state().exists(), "a dry run creates nothing");
}

#[test]
fn a_budget_on_the_command_line_takes_the_files_units_and_minimum() {
    let env = Env::new();
    let cfg = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tiers/pmem-vs-nvme.toml");
    let run = |budget: &str| {
        let o = env
            .xtask(&["compare", "--config", cfg.to_str().unwrap(), "--emulate", "--dry-run", "--budget", budget])
            .output()
            .unwrap();
        (o.status.code(), text(&o).1)
    };
    let (code, stderr) = run("12");
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("--budget \"12\": \"12\" has no unit; write \"12s\" for seconds"), "{stderr}");
    let (code, stderr) = run("1s");
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("the budget must hold at least a few rounds of slices"), "{stderr}");
    assert_eq!(run("13min").0, Some(0));
    assert!(!env.state().exists(), "nothing was made");
}

#[test]
fn a_dry_run_that_needs_memory_the_machine_lacks_exits_non_zero_naming_it() {
    // A memory limit above any machine's memory: it would never bind.
    let env = Env::new();
    let cfg = env.write(
        "big.toml",
        &TINY.replace("DURATION", "2s").replace("memory_limits = [\"256MiB\"]", "memory_limits = [\"64TiB\"]"),
    );
    let o = env.xtask(&["compare", "--config", cfg.to_str().unwrap(), "--emulate", "--dry-run"]).output().unwrap();
    let (stdout, stderr) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(stdout.contains("would refuse: memory limit 65536GiB is"), "{stdout}");
    assert!(stdout.contains("the limit would never bind"), "{stdout}");
    assert!(!env.state().exists(), "a dry run creates nothing");
}

#[test]
fn dry_run_lists_the_studys_claims() {
    // The shipped seed-000 file, emulated: its six published claims and its negative control,
    // with the cells they are checked on.
    let env = Env::new();
    let cfg = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tiers/pmem-vs-nvme.toml");
    let o = env.xtask(&["compare", "--config", cfg.to_str().unwrap(), "--emulate", "--dry-run"]).output().unwrap();
    let (stdout, stderr) = text(&o);
    assert!(o.status.success(), "{stderr}");
    assert!(stdout.contains("## Published claims (7;"), "{stdout}");
    // This test's own state directory holds no calibration: the dry run says so.
    assert!(stdout.contains("\ncalibration: UNCALIBRATED HOST, no calibration for this file's key in"), "{stdout}");
    assert!(
        stdout.contains("- null-wal-on-pmem-read-only: tps no change of wal-on-pmem against nvme, workload read-only 8 clients, memory unlimited"),
        "{stdout}"
    );
    assert!(
        stdout.contains(
            "- all-on-pmem-tps: tps +44.6% of all-on-pmem against nvme, workload tpcb 8 clients, memory 192MiB"
        ),
        "{stdout}"
    );
    // Each published claim states the study's regime, and is checked in the cell that matches it.
    assert!(
        stdout
            .contains("the study's regime: a data set of 691.0 GiB on 186.3 GiB of memory (73.0% of it out of memory)"),
        "{stdout}"
    );
    assert!(
        stdout
            .contains("the study's regime: a data set of 691.0 GiB on 953.7 MiB of memory (99.9% of it out of memory)"),
        "{stdout}"
    );
    assert!(stdout.contains("emulated cell: the study's 72 clients; the emulated matrix runs 8; the study's memory limit 1GiB; emulated 192MiB"), "{stdout}");
    assert!(!env.state().exists(), "a dry run creates nothing");
}

#[test]
fn interrupt_mid_run_tears_down_and_keeps_finished_runs() {
    if !root_or_skip() {
        return;
    }
    let env = Env::new();
    let out = env.dir.path().join("results");
    let cfg = config(&env, "4s");
    let child = env
        .xtask(&["compare", "--config", cfg.to_str().unwrap(), "--emulate", "--out", out.to_str().unwrap()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until at least one run finished and the next one is measuring.
    let start = Instant::now();
    loop {
        let done = std::fs::read_dir(out.join("runs"))
            .map(|rd| rd.flatten().filter(|e| e.path().join("result.json").exists()).count())
            .unwrap_or(0);
        if done >= 1 {
            std::thread::sleep(Duration::from_secs(3));
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(180), "no run finished in time");
        std::thread::sleep(Duration::from_millis(200));
    }
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), nix::sys::signal::Signal::SIGINT).unwrap();
    let o = child.wait_with_output().unwrap();
    let (_, stderr) = text(&o);
    assert_eq!(o.status.code(), Some(1), "an interrupted run is a runtime failure\n{stderr}");
    assert!(stderr.contains("teardown complete"), "{stderr}");
    assert_nothing_left(&env.state());
    // What finished is kept and reported; what did not is listed as missing.
    let runs = csv_rows(&out.join("runs.csv"));
    assert!(!runs.is_empty());
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(report.contains("Missing cells") || runs.len() == 12, "{report}");
}
