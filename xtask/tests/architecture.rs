//! docs/architecture.md's invariants that a test can check, read from the sources: which of
//! pgtier's crates depends on which (Cargo.toml), and which modules start processes or build
//! and run commands (a scan of the code outside tests). Needs no root. When one of these fails,
//! change the code or, if the change is meant, docs/architecture.md and the list here together.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("xtask lies in the workspace").to_path_buf()
}

/// Every crate of the workspace: its name and directory.
fn crates() -> BTreeMap<String, PathBuf> {
    let root = workspace();
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(root.join("crates")).unwrap().flatten().map(|e| e.path()).collect();
    dirs.push(root.join("xtask"));
    dirs.into_iter()
        .filter(|d| d.join("Cargo.toml").exists())
        .map(|d| (d.file_name().unwrap().to_string_lossy().into_owned(), d))
        .collect()
}

/// The workspace crates `dir`'s crate depends on (normal and build dependencies, any target;
/// dev-dependencies are for its tests only).
fn pgtier_dependencies(dir: &Path, workspace: &BTreeSet<String>) -> BTreeSet<String> {
    let manifest: toml::Table = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap().parse().unwrap();
    let mut tables: Vec<&toml::Table> = Vec::new();
    for key in ["dependencies", "build-dependencies"] {
        tables.extend(manifest.get(key).and_then(|t| t.as_table()));
    }
    for (_, target) in manifest.get("target").and_then(|t| t.as_table()).into_iter().flatten() {
        for key in ["dependencies", "build-dependencies"] {
            tables.extend(target.get(key).and_then(|t| t.as_table()));
        }
    }
    tables.iter().flat_map(|t| t.keys()).filter(|k| workspace.contains(*k)).cloned().collect()
}

#[test]
fn dependencies_point_one_way() {
    let crates = crates();
    let names: BTreeSet<String> = crates.keys().cloned().collect();
    let allowed: BTreeMap<&str, &[&str]> = BTreeMap::from([
        (
            "xtask",
            &["pgtier", "experiment", "tiers", "runner", "report", "analysis", "results", "journal", "stats"][..],
        ),
        ("pgtier", &["experiment", "tiers", "runner", "report", "analysis", "results", "journal", "stats"][..]),
        ("experiment", &["tiers", "runner", "tpcc"][..]),
        ("runner", &["results", "journal", "tpcc"][..]),
        ("tiers", &["journal"][..]),
        // Draws what analysis judged (issue 50).
        ("report", &["analysis", "results", "stats"][..]),
        // Judges a result set: the criterion split, numerics in stats, drawing in report.
        ("analysis", &["results", "stats"][..]),
        // The estimator: numerics alone (issue 37, item 7).
        ("stats", &[][..]),
        ("tpcc", &[][..]),
        ("journal", &[][..]),
        ("results", &[][..]),
    ]);
    assert_eq!(
        names,
        allowed.keys().map(|k| k.to_string()).collect::<BTreeSet<_>>(),
        "a crate was added or removed: give it its place in docs/architecture.md and here"
    );
    for (name, dir) in &crates {
        let deps = pgtier_dependencies(dir, &names);
        let expected: BTreeSet<String> = allowed[name.as_str()].iter().map(|s| s.to_string()).collect();
        assert_eq!(deps, expected, "{name}'s dependencies on pgtier's crates (docs/architecture.md, Invariants)");
    }
}

/// One source file outside tests, as a module path (`runner::server`, `pgtier::compare::manifest`)
/// and its code without comments and without its `#[cfg(test)] mod tests`.
struct Module {
    path: String,
    code: Vec<String>,
}

fn modules() -> Vec<Module> {
    let mut out = Vec::new();
    for (name, dir) in crates() {
        let src = dir.join("src");
        let mut files = Vec::new();
        rust_files(&src, &mut files);
        for file in files {
            if is_test_only(&file) {
                continue;
            }
            let text = std::fs::read_to_string(&file).unwrap();
            let text = text.split("#[cfg(test)]\nmod tests").next().unwrap_or_default();
            let code = text.lines().filter(|l| !l.trim_start().starts_with("//")).map(String::from).collect();
            out.push(Module { path: module_path(&name, &src, &file), code });
        }
    }
    out
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

fn module_path(krate: &str, src: &Path, file: &Path) -> String {
    let mut parts = vec![krate.to_string()];
    for c in file.strip_prefix(src).unwrap().with_extension("").components() {
        parts.push(c.as_os_str().to_string_lossy().into_owned());
    }
    if matches!(parts.last().map(String::as_str), Some("lib" | "main" | "mod")) {
        parts.pop();
    }
    parts.join("::")
}

/// A file whose module its parent declares under `#[cfg(test)]` (`#[cfg(test)] mod tests;`).
fn is_test_only(file: &Path) -> bool {
    let name = file.file_stem().unwrap().to_string_lossy().into_owned();
    let dir = file.parent().unwrap();
    let parents = [dir.with_extension("rs"), dir.join("mod.rs"), dir.join("lib.rs"), dir.join("main.rs")];
    parents.iter().filter(|p| p.as_path() != file && p.exists()).any(|p| {
        let text = std::fs::read_to_string(p).unwrap();
        let lines: Vec<&str> = text.lines().map(str::trim).collect();
        lines.windows(2).any(|w| {
            w[0] == "#[cfg(test)]"
                && w[1].trim_start_matches("pub(crate) ").trim_start_matches("pub ") == format!("mod {name};")
        })
    })
}

/// Modules whose code (not a `use` line) contains any of `needles`.
fn modules_using(modules: &[Module], needles: &[&str]) -> BTreeSet<String> {
    let is_use = |l: &str| {
        let l = l.trim_start();
        l.starts_with("use ") || l.starts_with("pub use ") || l.starts_with("pub(crate) use ")
    };
    modules
        .iter()
        .filter(|m| m.code.iter().any(|l| !is_use(l) && needles.iter().any(|n| l.contains(n))))
        .map(|m| m.path.clone())
        .collect()
}

fn set(items: &[&str]) -> BTreeSet<String> {
    items.iter().map(|s| s.to_string()).collect()
}

const STARTS_A_PROCESS: [&str; 5] = ["Command::new(", "libc::fork", "unistd::fork", "execv", "posix_spawn"];

#[test]
fn only_these_modules_start_processes() {
    let modules = modules();
    assert!(modules.iter().any(|m| m.path == "runner::server"), "the scan finds the sources");
    assert_eq!(
        modules_using(&modules, &STARTS_A_PROCESS),
        set(&[
            "journal::command",
            "tiers::system",
            "runner::server",
            "runner::env",
            "xtask::setup",
            // cargo, for the release pgtier binary shipped to other hosts.
            "xtask::release",
            // tar of configs/ to ship it to a host.
            "pgtier::remote",
            // a server host's ssh session, and tar piped through ssh.
            "pgtier::fleet::host",
            "xtask::bench::precision",
            "xtask::vm::image",
            "xtask::vm::machine",
        ]),
        "modules that start a process (std/tokio Command::new, fork, exec): docs/architecture.md, Invariants"
    );
}

#[test]
fn only_these_modules_build_or_run_commands() {
    assert_eq!(
        modules_using(&modules(), &["CommandLine"]),
        set(&[
            "journal::command",
            "journal::undo",
            // Undos on a storage target host, over ssh.
            "journal::remote",
            "tiers::system",
            // The fake machine's recorded answers (tests of plans for hardware this one lacks).
            "tiers::system::fake",
            "tiers::provision",
            "tiers::provision::actions",
            "tiers::provision::checks",
            "tiers::provision::found",
            "tiers::provision::nvme_connect",
            "tiers::provision::recorder",
            // Steps on a storage target host, over ssh.
            "tiers::provision::host",
            "tiers::facts",
            "tiers::safety",
            "tiers::users",
            "tiers::probe",
            "runner::install",
            "runner::diagnose",
            "runner::env",
            "runner::pgbench",
            "runner::pgbench_run",
            "runner::tpcc_remote",
            "runner::dataset",
            "pgtier::host",
            "xtask::bench::fidelity",
            // ssh commands to the experiment's other hosts (`[[host]]`), run as CommandLines.
            "pgtier::remote",
            "pgtier::fleet::host",
        ]),
        "modules that build or run a journal::CommandLine: docs/architecture.md, Invariants"
    );
}

#[test]
fn compare_and_fleet_do_not_know_each_other() {
    let modules = modules();
    let under = |prefix: &str| -> Vec<Module> {
        modules
            .iter()
            .filter(|m| m.path == prefix || m.path.starts_with(&format!("{prefix}::")))
            .map(|m| Module { path: m.path.clone(), code: m.code.clone() })
            .collect()
    };
    let compare = under("pgtier::compare");
    let fleet = under("pgtier::fleet");
    assert!(compare.len() > 5 && fleet.len() > 1, "the scan finds compare's and fleet's modules");
    let names_fleet = |l: &str| l.contains("crate::fleet") || l.contains("super::super::fleet");
    let compare_using_fleet: Vec<&str> =
        compare.iter().filter(|m| m.code.iter().any(|l| names_fleet(l))).map(|m| m.path.as_str()).collect();
    let fleet_using_compare: Vec<&str> =
        fleet.iter().filter(|m| m.code.iter().any(|l| l.contains("crate::compare"))).map(|m| m.path.as_str()).collect();
    assert_eq!(
        (compare_using_fleet, fleet_using_compare),
        (vec![], vec![]),
        "compare and fleet share what is below both (record, error, measurement); cli dispatches between them"
    );
}

#[test]
fn report_and_analysis_never_start_a_process() {
    let report: Vec<Module> =
        modules().into_iter().filter(|m| matches!(m.path.split("::").next(), Some("report" | "analysis"))).collect();
    assert!(report.iter().filter(|m| m.path.starts_with("analysis")).count() > 5, "analysis's modules are scanned");
    assert!(report.len() > 15, "the report's modules are scanned");
    let mut needles = STARTS_A_PROCESS.to_vec();
    // `.spawn()` with no arguments is std::process::Command's; a scoped thread's `s.spawn(|| ...)`
    // (the coverage simulation) starts no process.
    needles.extend(["CommandLine", "process::Command", "process::Child", "tokio::process", ".spawn()"]);
    assert_eq!(
        modules_using(&report, &needles),
        BTreeSet::new(),
        "analysis judges and report renders; neither ever runs anything"
    );
}

#[test]
fn the_scan_sees_what_it_looks_for() {
    let m = |lines: &[&str]| Module { path: "x::y".into(), code: lines.iter().map(|s| s.to_string()).collect() };
    let found = |lines: &[&str]| modules_using(&[m(lines)], &STARTS_A_PROCESS).len() == 1;
    assert!(found(&["    let c = std::process::Command::new(\"sh\");"]));
    assert!(found(&["    let c = Command::new(prog);"]));
    assert!(!found(&["    let c = CommandLine::new(\"sh\");"]), "a CommandLine is not a started process");
    assert!(!found(&["use std::process::Command;"]));
    assert_eq!(module_path("pgtier", Path::new("/w/src"), Path::new("/w/src/compare/mod.rs")), "pgtier::compare");
    assert_eq!(module_path("runner", Path::new("/w/src"), Path::new("/w/src/lib.rs")), "runner");
    let root = workspace();
    assert!(is_test_only(&root.join("crates/runner/src/execute/tests.rs")));
    assert!(is_test_only(&root.join("crates/runner/src/testing.rs")));
    assert!(!is_test_only(&root.join("crates/runner/src/server.rs")));
}

/// The modules of `krate` each module's code names (`crate::x::y`, `use crate::{x, y}`,
/// `super::x`), as module paths without the crate's name.
fn module_edges(krate: &str) -> BTreeMap<String, BTreeSet<String>> {
    let prefix = format!("{krate}::");
    let modules: Vec<Module> = modules().into_iter().filter(|m| m.path.starts_with(&prefix)).collect();
    let names: BTreeSet<String> = modules.iter().map(|m| m.path[prefix.len()..].to_string()).collect();
    let longest = |words: &[&str]| -> Option<String> {
        (1..=words.len()).rev().map(|k| words[..k].join("::")).find(|c| names.contains(c))
    };
    let mut edges = BTreeMap::new();
    for m in &modules {
        let me = m.path[prefix.len()..].to_string();
        let parent: Vec<&str> = me.split("::").collect::<Vec<_>>().split_last().map(|(_, p)| p.to_vec()).unwrap();
        let mut to = BTreeSet::new();
        // One text, so that a `use crate::{...}` over several lines is read whole.
        let code = m.code.join("\n");
        for (needle, base) in [("crate::", Vec::new()), ("super::", parent.clone())] {
            for (i, _) in code.match_indices(needle) {
                let rest = &code[i + needle.len()..];
                // `crate::{a, b::c}` names each of a group; `crate::a::b::C` one path.
                let items: Vec<&str> = match rest.strip_prefix('{') {
                    Some(group) => group.split('}').next().unwrap_or_default().split(',').collect(),
                    None => vec![rest],
                };
                for item in items {
                    let item = item.trim();
                    let path_end =
                        item.find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':')).unwrap_or(item.len());
                    let mut words = base.clone();
                    words.extend(item[..path_end].split("::").filter(|w| !w.is_empty()));
                    if let Some(c) = longest(&words).filter(|c| *c != me) {
                        to.insert(c);
                    }
                }
            }
        }
        edges.insert(me, to);
    }
    edges
}

/// Groups of two or more modules that reach each other (Tarjan's strongly connected components).
fn circles(edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<BTreeSet<String>> {
    struct Walk<'a> {
        edges: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        out: Vec<BTreeSet<String>>,
    }
    fn visit<'a>(w: &mut Walk<'a>, v: &'a str) {
        let i = w.index.len();
        w.index.insert(v, i);
        w.low.insert(v, i);
        w.stack.push(v);
        for u in w.edges.get(v).into_iter().flatten() {
            let u = u.as_str();
            if !w.index.contains_key(u) {
                visit(w, u);
                let l = w.low[v].min(w.low[u]);
                w.low.insert(v, l);
            } else if w.stack.contains(&u) {
                let l = w.low[v].min(w.index[u]);
                w.low.insert(v, l);
            }
        }
        if w.low[v] == w.index[v] {
            let mut group = BTreeSet::new();
            while let Some(u) = w.stack.pop() {
                group.insert(u.to_string());
                if u == v {
                    break;
                }
            }
            if group.len() > 1 {
                w.out.push(group);
            }
        }
    }
    let mut w = Walk { edges, index: BTreeMap::new(), low: BTreeMap::new(), stack: Vec::new(), out: Vec::new() };
    for v in edges.keys() {
        if !w.index.contains_key(v.as_str()) {
            visit(&mut w, v);
        }
    }
    w.out
}

#[test]
fn no_crate_has_a_circle_between_its_files() {
    let edges = module_edges("runner");
    assert!(edges["env"].contains("launch"), "the scan sees env's use of launch: {:?}", edges["env"]);
    assert!(edges["execute"].contains("system"), "the scan sees execute's use of system: {:?}", edges["execute"]);
    let analysis = module_edges("analysis");
    assert!(analysis["model"].contains("evidence"), "the scan sees model's use of evidence: {:?}", analysis["model"]);
    let found: Vec<(String, BTreeSet<String>)> =
        crates().keys().flat_map(|k| circles(&module_edges(k)).into_iter().map(move |c| (k.clone(), c))).collect();
    assert_eq!(
        found,
        Vec::new(),
        "modules of one crate that reach each other (put what both need in a leaf below them, as runner's launch, analysis's cell, report's output and tpcc's tx are)"
    );
    let circle = BTreeMap::from([
        ("a".to_string(), set(&["b"])),
        ("b".to_string(), set(&["c"])),
        ("c".to_string(), set(&["a"])),
        ("d".to_string(), set(&["a"])),
    ]);
    assert_eq!(circles(&circle), vec![set(&["a", "b", "c"])], "the search finds a circle of three");
}

/// The measuring code decides when a contest has enough rounds with analysis's rule, never with
/// the renderer: no module of compare's scheduler (its slices and matrix) names report, which
/// reaches them only through the session's table refresh.
#[test]
fn the_scheduler_never_imports_report() {
    let modules = modules();
    let scheduler: Vec<&Module> = modules
        .iter()
        .filter(|m| m.path.starts_with("pgtier::compare::slices") || m.path == "pgtier::compare::matrix")
        .collect();
    assert!(scheduler.len() >= 5, "the scan finds the scheduler's modules");
    let naming: Vec<&str> =
        scheduler.iter().filter(|m| m.code.iter().any(|l| l.contains("report::"))).map(|m| m.path.as_str()).collect();
    assert!(naming.is_empty(), "scheduler modules that name report: {naming:?} (docs/architecture.md, Invariants)");
}

/// stats is numerics alone: it names no workload, placement or committed result file (which
/// prior a contest gets is analysis's to say, `analysis::priors`).
#[test]
fn stats_names_no_workload() {
    let stats: Vec<Module> = modules().into_iter().filter(|m| m.path.split("::").next() == Some("stats")).collect();
    assert!(stats.len() >= 5, "the scan finds stats's modules");
    let names =
        ["\"read-only\"", "\"select-only\"", "\"tpcb\"", "\"tpcc\"", "\"control\"", "\"wal-on-pmem\"", "bench-output"];
    assert_eq!(modules_using(&stats, &names), BTreeSet::new(), "stats names these (docs/architecture.md, Invariants)");
}

/// Holm's correction is applied in one function (`analysis::contest::judge_family`): every family
/// of changes, the study's per figure, the control's and a contrast's, goes through it.
#[test]
fn holm_is_applied_in_one_function() {
    let calling: Vec<(String, usize)> = modules()
        .into_iter()
        .filter(|m| m.path.split("::").next() != Some("stats"))
        .map(|m| {
            let n = m.code.iter().filter(|l| l.contains("holm(&") || l.contains("stats::holm(")).count();
            (m.path, n)
        })
        .filter(|(_, n)| *n > 0)
        .collect();
    assert_eq!(calling, vec![("analysis::contest".to_string(), 1)], "where stats::holm is called");
}
