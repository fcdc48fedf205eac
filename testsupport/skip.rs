//! The one way an integration test skips, shared by every crate's `tests/common` (each includes
//! this file with `#[path]`).
//!
//! A skip prints `SKIPPED: <reason>` and appends a line to the file `$PGTIER_SKIP_LOG` names
//! (`cargo xtask test` sets it, counts the skips and lists them with their reasons at the end).
//! Under `CI=true`, or with `PGTIER_REQUIRE_ALL=1` (`cargo xtask test --require-all`), a test
//! that would skip fails instead, naming what is missing: a CI run can then not pass with a
//! test that did not run.

#![allow(dead_code)]

/// True when a skip must fail the test instead: `CI=true` (or `1`), or `PGTIER_REQUIRE_ALL=1`.
pub fn required() -> bool {
    let ci = std::env::var("CI").is_ok_and(|v| v.eq_ignore_ascii_case("true") || v == "1");
    ci || std::env::var("PGTIER_REQUIRE_ALL").as_deref() == Ok("1")
}

/// True when the test runs as root (the effective uid of `/proc/self/status` is 0).
pub fn is_root() -> bool {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status.lines().find_map(|l| l.strip_prefix("Uid:")).and_then(|ids| ids.split_whitespace().nth(1)) == Some("0")
}

/// May a test that needs root run? True as root. Otherwise, with PGTIER_SKIP_ROOT_TESTS=1 it
/// skips (`skip_reason`, see [`skip`]: a failure under CI), and without it the test fails with
/// `why_root` (what needs root, and how to run or skip it).
pub fn root_or_skip(skip_reason: &str, why_root: &str) -> bool {
    if is_root() {
        return true;
    }
    if std::env::var("PGTIER_SKIP_ROOT_TESTS").as_deref() == Ok("1") {
        return skip(skip_reason);
    }
    panic!("{why_root}");
}

/// Skips the calling test with `reason` (what is missing, and what would make it run), or fails
/// it when skips are not allowed ([`required`]). Returns false, so that a site can write
/// `return skip(...)` where it answers "may the test run?".
pub fn skip(reason: &str) -> bool {
    if required() {
        panic!(
            "this test would be skipped, but skips are not allowed here (CI=true or PGTIER_REQUIRE_ALL=1): {reason}"
        );
    }
    eprintln!("SKIPPED: {reason}");
    record(reason);
    false
}

/// The test binary (without cargo's hash) and the test (libtest names each test's thread after
/// it) that is running.
fn who() -> (String, String) {
    let exe = std::env::current_exe().ok();
    let stem = exe.as_ref().and_then(|p| p.file_stem()).map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    let binary = match stem.rsplit_once('-') {
        Some((name, hash)) if hash.len() == 16 && hash.bytes().all(|b| b.is_ascii_hexdigit()) => name.to_string(),
        _ => stem,
    };
    let test = std::thread::current().name().unwrap_or("?").to_string();
    (binary, test)
}

/// Appends `binary<TAB>test<TAB>reason` to `$PGTIER_SKIP_LOG`, when it is set. One write of one
/// short line to a file opened for appending: lines of tests running at once do not mix.
fn record(reason: &str) {
    let Some(path) = std::env::var_os("PGTIER_SKIP_LOG") else { return };
    let (binary, test) = who();
    let clean = |s: &str| s.replace(['\t', '\n', '\r'], " ");
    let line = format!("{}\t{}\t{}\n", clean(&binary), clean(&test), clean(reason));
    use std::io::Write;
    let written = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .and_then(|mut f| f.write_all(line.as_bytes()));
    if let Err(e) = written {
        // The skip must not go unnoticed: without its line the summary would count it passed.
        panic!("cannot record the skip in {} (PGTIER_SKIP_LOG): {e}", std::path::Path::new(&path).display());
    }
}
