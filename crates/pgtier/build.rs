//! The commit this binary is built from, and whether the sources that build it differed from it
//! ("-dirty"), for `--version` and the manifest: `PGTIER_BUILD_REVISION`, "unknown" when the
//! sources are not a git checkout (a tarball, `cargo install` from elsewhere).

use std::path::{Path, PathBuf};
use std::process::Command;

/// What, below the repository's root, builds the binary: a change there makes it dirty.
const SOURCES: &[&str] = &["crates", "xtask", "configs", "Cargo.toml", "Cargo.lock"];

fn git(root: &Path, args: &[&str]) -> Option<String> {
    let o = Command::new("git").arg("-C").arg(root).args(args).output().ok()?;
    o.status.success().then(|| String::from_utf8_lossy(&o.stdout).trim().to_string())
}

/// `configs/postgres/*.toml` as `(name, include_str!(path))` pairs in `$OUT_DIR/configs.rs`, so
/// that a binary without its checkout still has the shipped settings profiles.
fn embed_configs(root: &Path) {
    let dir = root.join("configs/postgres");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map(|rd| rd.flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|x| x == "toml")).collect())
        .unwrap_or_default();
    files.sort();
    let mut code = String::from("&[\n");
    for f in &files {
        let name = f.file_name().unwrap().to_string_lossy();
        code.push_str(&format!("    ({name:?}, include_str!({:?})),\n", f.display().to_string()));
    }
    code.push_str("]\n");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets it")).join("configs.rs");
    std::fs::write(out, code).expect("write configs.rs");
    println!("cargo:rerun-if-changed={}", dir.display());
}

fn main() {
    let manifest_dir = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    let root = manifest_dir.ancestors().nth(2).unwrap_or(&manifest_dir).to_path_buf();
    let revision = match git(&root, &["rev-parse", "--short", "HEAD"]) {
        Some(commit) => {
            let mut status = vec!["status", "--porcelain", "--untracked-files=no", "--"];
            status.extend(SOURCES);
            match git(&root, &status) {
                Some(changes) if changes.is_empty() => commit,
                Some(_) => format!("{commit}-dirty"),
                None => format!("{commit}-unknown-state"),
            }
        }
        None => "unknown".to_string(),
    };
    println!("cargo:rustc-env=PGTIER_BUILD_REVISION={revision}");
    embed_configs(&root);
    // Again when a commit is made or checked out, or a source changes.
    for dir in ["--git-dir", "--git-common-dir"].iter().filter_map(|a| git(&root, &["rev-parse", a])) {
        let dir = root.join(dir);
        for f in ["HEAD", "index", "refs", "packed-refs"] {
            if dir.join(f).exists() {
                println!("cargo:rerun-if-changed={}", dir.join(f).display());
            }
        }
    }
    for s in SOURCES {
        if root.join(s).exists() {
            println!("cargo:rerun-if-changed={}", root.join(s).display());
        }
    }
}
