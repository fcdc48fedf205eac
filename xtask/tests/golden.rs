//! Where the data sets' golden copies are built (`[experiment] golden_copy`, issue 14): the dry
//! run says where, how large, the room there and how long the copies take; a place without the
//! room or unusable is refused before anything is touched; and for real, on emulated tiers, the
//! golden copy is built on the device (or in the directory) the file names and nothing of it is
//! left after teardown. The dry runs and refusals need no root; the runs need root
//! (PGTIER_SKIP_ROOT_TESTS=1 skips them explicitly).

mod common;

use std::path::{Path, PathBuf};

use common::*;

fn repo_file(file: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(file)
}

/// The shipped seed-000 file with `golden_copy = VALUE` in `[experiment]`.
fn seed000_with(env: &Env, value: &str) -> PathBuf {
    let text = std::fs::read_to_string(repo_file("tiers/pmem-vs-nvme.toml")).unwrap();
    let text = text.replace("baseline = \"nvme\"\n", &format!("baseline = \"nvme\"\ngolden_copy = {value}\n"));
    env.write("seed000.toml", &text)
}

fn dry_run(env: &Env, cfg: &Path, emulate: bool) -> String {
    let mut args = vec!["compare", "--config", cfg.to_str().unwrap(), "--dry-run"];
    if emulate {
        args.push("--emulate");
    }
    let o = env.xtask(&args).output().unwrap();
    let (stdout, stderr) = text(&o);
    if emulate {
        assert!(o.status.success(), "{stderr}");
    } else {
        // The real study's devices are not on this machine: the dry run ends with what the real
        // run would refuse, and exits 1 (issue 39).
        assert_eq!(o.status.code(), Some(1), "{stderr}");
        assert!(stdout.contains("\nwould refuse: device nvme-data: /dev/disk/by-id/"), "{stdout}");
    }
    assert!(!env.state().exists(), "a dry run creates nothing");
    stdout
}

#[test]
fn the_dry_run_of_the_real_study_says_where_the_golden_copy_goes_and_checks_its_room_first() {
    // Seed 000 at its real scale (pgbench -i -s 50000) with the golden copy on the baseline's WAL
    // SSD, the one device with room for it besides its own WAL.
    let env = Env::new();
    let cfg = seed000_with(&env, "{ device = \"nvme-wal\" }");
    let text = dry_run(&env, &cfg, false);
    let line = |needle: &str| {
        text.lines().position(|l| l.contains(needle)).unwrap_or_else(|| panic!("the dry run shows {needle:?}:\n{text}"))
    };
    let room = line(
        "[nvme-wal] check <nvme-wal> holds 1.3 TiB (the golden copy and what its placements put there, plus 5%: the golden copy of pgbench-s50000 (1.1 TiB), nvme's pg_wal, up to max_wal_size + 30% (65.1 GiB))",
    );
    assert!(room < line("---- nothing above writes to any device"), "the room is checked before anything is written");
    assert!(text.lines().nth(room).unwrap().trim_start().starts_with("14. "), "{text}");
    let key_line =
        std::fs::read_to_string(&cfg).unwrap().lines().position(|l| l.starts_with("golden_copy")).unwrap() + 1;
    line(&format!("seed000.toml:{key_line} `experiment.golden_copy.device`), in "));
    for needle in [
        "Built on device nvme-wal (",
        "/mnt/nvme-wal/pgtier.golden, which pgtier makes once the device is mounted and removes at teardown.",
        "Room: about 1.3 TiB with a 5% margin (the golden copy of pgbench-s50000 (1.1 TiB), nvme's pg_wal, up to max_wal_size + 30% (65.1 GiB)); the device's size is read at step 14, before anything is written, and the run stops there if it does not fit.",
        "- pgbench-s50000 onto nvme: 781.2 GiB at 1000 MB/s (limited by the golden copy's device nvme-wal), about 14 min",
        "- the golden copy's device nvme-wal: NVMe SSD: assumed 1 GB/s, the low end of datacenter drives' sequential writes",
        "pgtier measures no sequential bandwidth",
        "- the copies of the data sets onto the placements: about 42 min (3 copies, 2.3 TiB in all, at the bandwidths assumed above: an estimate)",
        "- in all, after the builds: about 7 h 27 min",
    ] {
        line(needle);
    }
    // On the baseline's data SSD, the golden copy and two placements' copies of the data set:
    // 2.8 TiB, which the plan checks against the device at step 11.
    let env = Env::new();
    let text = dry_run(&env, &seed000_with(&env, "{ device = \"nvme-data\" }"), false);
    for needle in [
        "11. [nvme-data] check <nvme-data> holds 2.8 TiB",
        "Room: about 2.8 TiB with a 5% margin (the golden copy of pgbench-s50000 (1.1 TiB), nvme's PGDATA (781.2 GiB), wal-on-pmem's PGDATA (781.2 GiB))",
        "- pgbench-s50000 onto nvme: 781.2 GiB at 500 MB/s (limited by reading and writing nvme-data at once), about 28 min",
    ] {
        assert!(text.contains(needle), "the dry run shows {needle:?}:\n{text}");
    }
}

#[test]
fn the_dry_run_without_the_key_builds_in_the_state_directory_as_before() {
    let env = Env::new();
    let text = dry_run(&env, &repo_file("tiers/pmem-vs-nvme.toml"), false);
    assert!(text.contains("Built below ") && text.contains("/work/<run id>/golden ("), "{text}");
    assert!(text.contains("set PGTIER_STATE_DIR to move it)."), "{text}");
    // 1.2 TiB fits no test machine's state directory: the dry run says so, and how to move it.
    assert!(text.contains("It does not fit there: the golden copy needs about 1.2 TiB with a 5% margin"), "{text}");
    assert!(
        text.contains("golden_copy = { device = \"<a device of this file>\" } or { dir = \"/absolute/path\" }"),
        "{text}"
    );
    assert!(!text.contains("> holds "), "no room check in the plan: {text}");
    assert!(
        text.contains("\nwould refuse: the golden copy of the data sets needs about 1.2 TiB with a 5% margin, and the state directory ("),
        "the refusals at the end say it too: {text}"
    );
    assert!(
        text.contains(
            "- pgbench-s50000 onto nvme: 781.2 GiB at 500 MB/s (limited by the golden copy's state directory)"
        ),
        "{text}"
    );
}

#[test]
fn the_dry_run_with_a_directory_says_its_free_room() {
    let env = Env::new();
    let dir = env.dir.path().join("golden");
    let cfg = seed000_with(&env, &format!("{{ dir = \"{}\" }}", dir.display()));
    let text = dry_run(&env, &cfg, true);
    for needle in [
        format!("Built in {}/pgtier.golden.pmem-vs-nvme-", dir.display()),
        "`experiment.golden_copy.dir`), which pgtier makes and removes at teardown.".into(),
        "Room: about 1.2 GiB with a 5% margin (the golden copy of pgbench-s40 (1.2 GiB)); the filesystem of ".into(),
        " free now: it fits.".into(),
        format!("- the golden copy's directory {}: a local filesystem: assumed 500 MB/s", dir.display()),
    ] {
        assert!(text.contains(&needle), "the dry run shows {needle:?}:\n{text}");
    }
    assert!(!dir.exists(), "a dry run creates nothing");
}

#[test]
fn an_emulated_device_too_small_for_the_golden_copy_exits_2_and_touches_nothing() {
    let env = Env::new();
    let cfg = seed000_with(&env, "{ device = \"nvme-wal\" }");
    // nvme-wal would hold the golden copy (1.2 GiB) and the baseline's pg_wal (max_wal_size 1GB
    // + 30%) in 2 GiB.
    let wal = "path = \"/dev/disk/by-id/nvme-SAMSUNG_MZPLL1T6HAJQ_SERIAL-WAL\"\nmount_options = [\"noatime\"]\n";
    let file =
        std::fs::read_to_string(&cfg).unwrap().replace(wal, &format!("{wal}[device.emulate]\nsize = \"2GiB\"\n"));
    let cfg = env.write("small.toml", &file);
    let o = env.xtask(&["compare", "--config", cfg.to_str().unwrap(), "--emulate"]).output().unwrap();
    let (_, stderr) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    let line = file.lines().position(|l| l.contains("size = \"2GiB\"")).unwrap() + 1;
    assert!(
        stderr.contains(&format!("small.toml:{line}:")) && stderr.contains("key `device[nvme-wal].emulate.size`"),
        "{stderr}"
    );
    assert!(
        stderr.contains(
            "emulated device \"nvme-wal\" (2.0 GiB, about 1.9 GiB after XFS's own use) cannot hold the golden copy"
        ),
        "{stderr}"
    );
    assert!(stderr.contains("size = \"3GiB\" or more"), "{stderr}");
    assert!(!env.state().exists(), "nothing was touched");
}

/// Two placements on emulated local disks, the golden copy on the baseline's device (`GOLDEN`).
const TWO: &str = r#"
[experiment]
name = "golden"
baseline = "disk"
repetitions = 1
device_probe = "0s"
golden_copy = GOLDEN

[[device]]
name = "disk"
class = "nvme"
path = "/dev/disk/by-id/not-used"
[device.emulate]
size = "2GiB"

[[device]]
name = "other"
class = "nvme"
path = "/dev/disk/by-id/not-used-either"
[device.emulate]
size = "512MiB"

[[placement]]
name = "disk"
data = "disk"
wal = "disk"

[[placement]]
name = "other"
data = "other"
wal = "other"

[[workload]]
name = "nu"
kind = "pgbench"
builtin = "simple-update"
scale = 2
clients = [2]
duration = "2s"
"#;

/// One placement on an emulated local disk, the golden copy at `GOLDEN`.
const ONE: &str = r#"
[experiment]
name = "golden"
baseline = "disk"
repetitions = 1
device_probe = "0s"
golden_copy = GOLDEN

[[device]]
name = "disk"
class = "nvme"
path = "/dev/disk/by-id/not-used"
[device.emulate]
size = "512MiB"

[[placement]]
name = "disk"
data = "disk"
wal = "disk"

[[workload]]
name = "nu"
kind = "pgbench"
builtin = "simple-update"
scale = 2
clients = [2]
duration = "2s"
"#;

/// The journal lines of the run record kept in the results directory.
fn journal_lines(out: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(out.join("journal.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn the_golden_copy_is_built_on_the_named_device_and_removed_at_teardown() {
    if !root_or_skip() {
        return;
    }
    let env = Env::new();
    let out = env.dir.path().join("results");
    let cfg = env.write("golden.toml", &TWO.replace("GOLDEN", "{ device = \"disk\" }"));
    let o = env
        .xtask(&["compare", "--config", cfg.to_str().unwrap(), "--emulate", "--out", out.to_str().unwrap()])
        .output()
        .unwrap();
    let (stdout, stderr) = text(&o);
    assert!(o.status.success(), "stdout:\n{stdout}\nstderr:\n{stderr}");
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("manifest.json")).unwrap()).unwrap();
    let ds = &manifest["datasets"][0];
    let golden = ds["golden_dir"].as_str().unwrap();
    let lines = journal_lines(&out);
    let mount = lines
        .iter()
        .position(|l| {
            l["undo"]["kind"] == "unmount" && l["undo"]["target"].as_str().is_some_and(|t| t.ends_with("/mnt/disk"))
        })
        .unwrap_or_else(|| panic!("device disk was mounted: {lines:?}"));
    let root = Path::new(lines[mount]["undo"]["target"].as_str().unwrap()).join("pgtier.golden");
    assert_eq!(golden, root.join("pgbench-s2").to_str().unwrap(), "built on device disk's filesystem: {ds}");
    // initdb made the golden cluster there, and both placements got their copy from it.
    let initdb = std::fs::read_to_string(out.join("logs/dataset-pgbench-s2/initdb.log")).unwrap();
    assert!(initdb.contains(&format!("{golden}/pgdata")), "{initdb}");
    let copied: Vec<&String> = ds["relocate_seconds"].as_object().unwrap().keys().collect();
    assert_eq!(copied, ["disk", "other"]);
    assert!(csv_rows(&out.join("runs.csv")).iter().all(|r| r["status"] == "ok"));
    // The run record holds its removal (made before the directory), done at teardown before the
    // device was unmounted.
    let record = lines
        .iter()
        .position(|l| l["undo"]["kind"] == "remove-dir-all" && l["undo"]["path"] == root.to_str().unwrap())
        .unwrap_or_else(|| panic!("no record of {}: {lines:?}", root.display()));
    assert!(mount < record, "recorded after the mount, so undone before the unmount");
    assert!(stderr.contains(&format!("done: rm -r {}", root.display())), "{stderr}");
    assert_nothing_left(&env.state());
}

#[test]
fn a_golden_copy_in_a_named_directory_is_removed_with_the_directory_pgtier_made() {
    if !root_or_skip() {
        return;
    }
    let env = Env::new();
    // The parent exists, the named directory does not: pgtier makes both levels and removes
    // what it made, leaving the parent.
    let parent = env.dir.path().join("scratch");
    std::fs::create_dir(&parent).unwrap();
    let named = parent.join("golden");
    let out = env.dir.path().join("results");
    let one = ONE.replace("GOLDEN", &format!("{{ dir = \"{}\" }}", named.display()));
    let cfg = env.write("golden-dir.toml", &one);
    let o = env
        .xtask(&["compare", "--config", cfg.to_str().unwrap(), "--emulate", "--out", out.to_str().unwrap()])
        .output()
        .unwrap();
    let (stdout, stderr) = text(&o);
    assert!(o.status.success(), "stdout:\n{stdout}\nstderr:\n{stderr}");
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("manifest.json")).unwrap()).unwrap();
    let golden = manifest["datasets"][0]["golden_dir"].as_str().unwrap().to_string();
    assert!(golden.starts_with(&format!("{}/pgtier.golden.golden-", named.display())), "{golden}");
    let lines = journal_lines(&out);
    assert!(
        lines.iter().any(|l| l["undo"]["kind"] == "remove-dir-all" && l["undo"]["path"] == named.to_str().unwrap()),
        "the outermost directory pgtier made is recorded: {lines:?}"
    );
    assert!(!named.exists(), "removed at teardown");
    assert!(parent.is_dir(), "what existed before stays");
    assert_nothing_left(&env.state());

    // A directory whose parent does not exist either is refused before anything is touched.
    let env = Env::new();
    let missing = env.dir.path().join("no/such/dir");
    let cfg = env.write("missing.toml", &one.replace(&named.display().to_string(), &missing.display().to_string()));
    let o = env.xtask(&["compare", "--config", cfg.to_str().unwrap(), "--emulate"]).output().unwrap();
    let (_, stderr) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    let line = one.lines().position(|l| l.starts_with("golden_copy")).unwrap() + 1;
    assert!(stderr.contains(&format!("missing.toml:{line}: key `experiment.golden_copy.dir`")), "{stderr}");
    assert!(stderr.contains("nor its parent is a directory here; create it (mkdir -p"), "{stderr}");
    assert!(!env.state().exists(), "nothing was touched");

    // One without the room: refused before step 1, with what it needs and what is free.
    let env = Env::new();
    let cfg = env.write("huge.toml", &one.replace("scale = 2", "scale = 20000000"));
    let o = env.xtask(&["compare", "--config", cfg.to_str().unwrap(), "--emulate"]).output().unwrap();
    let (_, stderr) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{stderr}");
    for needle in [
        "huge.toml:",
        "`experiment.golden_copy.dir`: the golden copy needs about ",
        "and its filesystem has ",
        "Nothing was touched.",
    ] {
        assert!(stderr.contains(needle), "{needle:?} in {stderr}");
    }
    assert!(!env.state().exists() && !named.exists(), "nothing was touched");
}
