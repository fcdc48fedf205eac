//! Memory failures a user meets: a run whose server outgrows its memory limit is killed by the
//! kernel's OOM killer and must be reported as `out-of-memory` with the limit, the peak and the
//! settings that needed the memory; `huge_pages = on` without reserved huge pages is refused
//! before anything is touched. The OOM test needs root; PGTIER_SKIP_ROOT_TESTS=1 skips it.

mod common;

use common::*;

/// One emulated placement, a 96 MiB server whose autovacuum ANALYZEs pgbench_accounts (scale 5,
/// 500,000 rows) with a 3,000,000-row sample as soon as 100 rows changed: the sample alone
/// needs about 200 MiB, so the OOM killer strikes within a second or two of the run's start.
const OUTGROWS_ITS_LIMIT: &str = r#"
[experiment]
name = "oom"
baseline = "a"
repetitions = 1
device_probe = "0s"

[postgres]
profiles = ["default"]
memory_limits = ["96MiB"]
settings = { shared_buffers = "16MB", default_statistics_target = 10000, autovacuum_naptime = "1s", autovacuum_analyze_threshold = 100, autovacuum_analyze_scale_factor = 0 }

[[device]]
name = "disk"
class = "nvme"
path = "/dev/disk/by-id/not-used"
[device.emulate]
size = "512MiB"

[[placement]]
name = "a"
data = "disk"
wal = "disk"

[[workload]]
name = "rw"
kind = "pgbench"
builtin = "tpcb-like"
scale = 5
clients = [2]
threads = 1
duration = "8s"
"#;

#[test]
fn a_server_that_outgrows_its_memory_limit_fails_as_out_of_memory() {
    if !root_or_skip() {
        return;
    }
    let env = Env::new();
    let cfg = env.write("oom.toml", OUTGROWS_ITS_LIMIT);
    let out = env.dir.path().join("results");
    let o = env
        .xtask(&["compare", "--config", cfg.to_str().unwrap(), "--emulate", "--out", out.to_str().unwrap()])
        .output()
        .unwrap();
    let (_, stderr) = text(&o);
    assert!(stderr.contains("teardown complete"), "teardown must complete:\n{stderr}");
    assert_nothing_left(&env.state());
    // Warned before anything ran: the estimate says the limit is too small.
    assert!(
        stderr.contains("warning: profile \"default\" in the 96MiB memory limit")
            && stderr.contains("default_statistics_target"),
        "{stderr}"
    );
    assert_eq!(o.status.code(), Some(1), "a failed run is a runtime failure:\n{stderr}");
    let runs = csv_rows(&out.join("runs.csv"));
    assert_eq!(runs.len(), 1);
    let r = &runs[0];
    assert_eq!(r["status"], "failed");
    assert_eq!(r["failure_kind"], "out-of-memory", "{r:?}");
    let why = &r["failure"];
    for needle in
        ["OOM killer", "limit 96 MiB", "peak", "ANALYZE", "signal 9 (SIGKILL)", "default_statistics_target 10000"]
    {
        assert!(why.contains(needle), "the failure says {needle:?}: {why}");
    }
    assert!(stderr.contains("FAILED: server: the kernel's OOM killer"), "the terminal line says it:\n{stderr}");
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(report.contains("(out-of-memory): server: the kernel's OOM killer"), "report.md lists the failure");
}

#[test]
fn huge_pages_on_without_reserved_pages_is_refused_before_anything_is_touched() {
    let reserved = std::fs::read_to_string("/proc/meminfo")
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("HugePages_Free:").map(|v| v.trim().parse::<u64>().unwrap()))
        .unwrap_or(0);
    // 64 GiB of shared_buffers: more huge pages than any test machine reserves.
    assert!(reserved < 32_768, "this machine reserves {reserved} huge pages; the test needs fewer than 32768");
    let env = Env::new();
    let text_in = OUTGROWS_ITS_LIMIT.replace("memory_limits = [\"96MiB\"]", "memory_limits = [\"unlimited\"]").replace(
        "settings = { shared_buffers = \"16MB\"",
        "settings = { huge_pages = \"on\", shared_buffers = \"64GB\"",
    );
    let cfg = env.write("huge.toml", &text_in);
    let line = text_in.lines().position(|l| l.contains("huge_pages = \"on\"")).unwrap() + 1;
    let o = env.xtask(&["compare", "--config", cfg.to_str().unwrap(), "--emulate"]).output().unwrap();
    let (_, stderr) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{stderr}");
    let place = format!("{}:{line} `postgres.settings.huge_pages`", cfg.display());
    assert!(stderr.contains(&place), "names file, line and key ({place}):\n{stderr}");
    assert!(stderr.contains("huge pages of 2 MiB") && stderr.contains("vm.nr_hugepages="), "{stderr}");
    assert!(stderr.contains("Nothing was touched"), "{stderr}");
    assert!(!env.state().join("journal").exists(), "no run record was even started");
}

/// The real-mode preflight reports every problem at once, as validation does: here too few
/// huge pages and a device `path` that is no block device (/dev/null; the plan's first check
/// would only have said so after the huge pages were fixed).
#[test]
fn every_preflight_problem_is_reported_at_once() {
    let env = Env::new();
    let text_in = OUTGROWS_ITS_LIMIT
        .replace("memory_limits = [\"96MiB\"]", "memory_limits = [\"unlimited\"]")
        .replace(
            "settings = { shared_buffers = \"16MB\"",
            "settings = { huge_pages = \"on\", shared_buffers = \"64GB\"",
        )
        .replace("/dev/disk/by-id/not-used", "/dev/null");
    let cfg = env.write("two-problems.toml", &text_in);
    let o = env.xtask(&["compare", "--config", cfg.to_str().unwrap()]).output().unwrap();
    let (_, stderr) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("problems (nothing was touched):\n  1. "), "{stderr}");
    assert!(stderr.contains("huge pages of 2 MiB"), "{stderr}");
    let device = "device disk: /dev/null is not a block device (it is some other kind of file)";
    assert!(stderr.contains(device), "{device:?} in:\n{stderr}");
    assert!(!env.state().join("journal").exists(), "no run record was even started");
}
