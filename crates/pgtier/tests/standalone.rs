//! An installed `pgtier` stands alone (issue 39 item 9): the built binary, copied into another
//! root as `cargo install --root` would put it, runs the emulated dry run of an experiment file
//! with no `configs/` anywhere near it, from a directory outside the checkout: its settings
//! profiles are the ones built into it, and the default results directory is below the current
//! directory, not the build path. Needs no root.

use std::path::Path;
use std::process::Command;

#[test]
fn a_copied_binary_runs_the_emulated_dry_run_from_elsewhere() {
    let root = tempfile::tempdir().unwrap();
    let bin = root.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let pgtier = bin.join("pgtier");
    std::fs::copy(env!("CARGO_BIN_EXE_pgtier"), &pgtier).unwrap();
    let work = root.path().join("study");
    std::fs::create_dir_all(&work).unwrap();
    let shipped = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tiers/pmem-vs-nvme.toml");
    std::fs::copy(&shipped, work.join("study.toml")).unwrap();
    let o = Command::new(&pgtier)
        .args(["compare", "--config", "study.toml", "--emulate", "--dry-run"])
        .current_dir(&work)
        .env("PGTIER_STATE_DIR", root.path().join("state"))
        .env("TMPDIR", root.path().join("tmp"))
        .env_remove("PGTIER_CONFIGS_DIR")
        .output()
        .unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    assert!(o.status.success(), "{stdout}\n{stderr}");
    // The profile the file names (seed000-tuned) came from the binary, written to $TMPDIR.
    assert!(stdout.contains("profile seed000-tuned, memory"), "{stdout}");
    let written: Vec<_> = std::fs::read_dir(root.path().join("tmp")).unwrap().flatten().map(|e| e.path()).collect();
    assert!(
        written.len() == 1 && written[0].join("postgres/seed000-tuned.toml").is_file(),
        "the built-in profiles, written to $TMPDIR: {written:?}"
    );
    let results = work.join("results/pmem-vs-nvme/");
    assert!(stdout.contains(&format!("# Results: {}", results.display())), "{stdout}");
    let checkout = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap();
    assert!(!stdout.contains(&checkout.join("configs").display().to_string()), "nothing from the checkout: {stdout}");
    assert!(!root.path().join("state").exists(), "a dry run creates no state");
}

/// Shell completions and the manual page come from the same command-line definitions
/// (issue 39 item 10).
#[test]
fn completions_and_the_manual_page_know_the_commands() {
    let run = |args: &[&str]| {
        let o = Command::new(env!("CARGO_BIN_EXE_pgtier")).args(args).output().unwrap();
        assert!(o.status.success(), "{args:?}: {}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    for shell in ["bash", "zsh", "fish"] {
        let script = run(&["completions", shell]);
        assert!(script.contains("compare") && script.contains("--dry-run"), "{shell}: {script}");
    }
    let man = run(&["man"]);
    assert!(man.contains(".TH pgtier 1"), "{man}");
    assert!(man.contains("pgtier\\-compare(1)") || man.contains("compare"), "{man}");
}
