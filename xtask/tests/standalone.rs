//! What a new user's first commands show about the binary itself (issue 39): `--version` names
//! the commit it was built from, and `-dirty` when its sources differed from it. Needs no root.

mod common;

use common::*;

#[test]
fn version_names_the_commit_it_was_built_from() {
    let env = Env::new();
    let o = env.xtask(&["--version"]).output().unwrap();
    let (stdout, stderr) = text(&o);
    assert!(o.status.success(), "{stderr}");
    let line = stdout.trim();
    let commit = line
        .strip_prefix(&format!("cargo xtask {} (commit ", env!("CARGO_PKG_VERSION")))
        .and_then(|r| r.strip_suffix(')'))
        .unwrap_or_else(|| panic!("{line}"));
    let head = std::process::Command::new("git")
        .args(["-C", env!("CARGO_MANIFEST_DIR"), "rev-parse", "--short", "HEAD"])
        .output()
        .unwrap();
    let head = String::from_utf8_lossy(&head.stdout).trim().to_string();
    // The build script ran at the last build; HEAD may have moved since only if the test binary
    // was not rebuilt, which cargo test does not allow (the sources it watches include .git).
    let bare = commit.strip_suffix("-dirty").unwrap_or(commit);
    if head.is_empty() {
        assert_eq!(commit, "unknown", "not a git checkout: {line}");
    } else {
        assert_eq!(bare, head, "{line}");
    }
}
