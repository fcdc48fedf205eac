//! Shared by the golden tests: render a checked-in fixture results directory once per test
//! binary, and compare texts with a readable diff.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The fixture results directories under `tests/fixtures` (see `tests/fixtures/README.md`).
pub const FIXTURES: [&str; 6] =
    ["seed003-tiers", "seed004-profiles", "seed000-claims", "seed000-slices", "seed004-sweep", "seed000-control"];

/// A fixture rendered by `report::render` into a scratch copy.
pub struct Rendered {
    pub name: &'static str,
    pub root: PathBuf,
    /// The files `render` reported, relative to `root`, in its order.
    pub files: Vec<String>,
}

impl Rendered {
    pub fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.root.join(rel)).unwrap_or_else(|e| panic!("{}: {rel}: {e}", self.name))
    }

    pub fn svgs(&self) -> Vec<&str> {
        self.files.iter().map(String::as_str).filter(|f| f.ends_with(".svg")).collect()
    }
}

pub fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), &target).unwrap();
        }
    }
}

/// Renders the fixture `name` (once per test binary) into a fresh copy under Cargo's scratch
/// directory for integration tests (`target/tmp`).
pub fn rendered(name: &'static str) -> &'static Rendered {
    static CELLS: [OnceLock<Rendered>; FIXTURES.len()] = [const { OnceLock::new() }; FIXTURES.len()];
    let i = FIXTURES.iter().position(|f| *f == name).unwrap_or_else(|| panic!("no fixture {name}"));
    CELLS[i].get_or_init(|| {
        // One scratch directory per test binary, replaced on each run.
        let exe = std::env::current_exe().ok().and_then(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()));
        let root = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
            .join("report-golden")
            .join(exe.unwrap_or_else(|| "tests".into()))
            .join(name);
        let _ = std::fs::remove_dir_all(&root);
        copy_dir(&crate_dir().join("tests/fixtures").join(name), &root);
        let (_, files) = report::render(&root).unwrap_or_else(|e| panic!("render {name}: {e}"));
        let files = files
            .iter()
            .map(|p| p.strip_prefix(&root).unwrap_or_else(|_| panic!("{} outside {}", p.display(), root.display())))
            .map(|p| p.to_string_lossy().into_owned())
            .collect();
        Rendered { name, root, files }
    })
}

/// A unified-diff-like excerpt of where two texts differ: the changed block between their
/// common first and last lines, with three lines of context.
pub fn diff(expected: &str, actual: &str) -> String {
    let a: Vec<&str> = expected.lines().collect();
    let b: Vec<&str> = actual.lines().collect();
    let prefix = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let suffix = a[prefix..].iter().rev().zip(b[prefix..].iter().rev()).take_while(|(x, y)| x == y).count();
    let (a_mid, b_mid) = (&a[prefix..a.len() - suffix], &b[prefix..b.len() - suffix]);
    let start = prefix.saturating_sub(3);
    let mut out = format!(
        "--- golden\n+++ rendered\n@@ -{},{} +{},{} @@\n",
        start + 1,
        a_mid.len() + (prefix - start),
        start + 1,
        b_mid.len() + (prefix - start)
    );
    const MAX: usize = 40;
    for l in &a[start..prefix] {
        out.push_str(&format!(" {l}\n"));
    }
    for l in a_mid.iter().take(MAX) {
        out.push_str(&format!("-{l}\n"));
    }
    if a_mid.len() > MAX {
        out.push_str(&format!("-... {} more\n", a_mid.len() - MAX));
    }
    for l in b_mid.iter().take(MAX) {
        out.push_str(&format!("+{l}\n"));
    }
    if b_mid.len() > MAX {
        out.push_str(&format!("+... {} more\n", b_mid.len() - MAX));
    }
    for l in a[a.len() - suffix..].iter().take(3) {
        out.push_str(&format!(" {l}\n"));
    }
    if a_mid.is_empty() && b_mid.is_empty() {
        out.push_str("(the texts differ only in line endings or a final newline)\n");
    }
    out
}
