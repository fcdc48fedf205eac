//! The references a reader follows are true: every relative link in README.md and docs/*.md
//! leads to a file of the repository, and every `cargo xtask` command they name exists with
//! every flag given (asked of the command's own `--help`, so the clap definition decides).
//! Needs no root.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("xtask lies in the workspace").to_path_buf()
}

/// README.md and every docs/*.md (docs/bench-output holds tools' own output, not prose).
fn documents() -> Vec<PathBuf> {
    let root = workspace();
    let mut out = vec![root.join("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    out.extend(docs);
    out
}

/// The targets of a document's inline links `[text](target)`, with their line numbers.
fn links(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let mut rest = line;
        while let Some(i) = rest.find("](") {
            let after = &rest[i + 2..];
            let Some(end) = after.find(')') else { break };
            out.push((n + 1, after[..end].to_string()));
            rest = &after[end..];
        }
    }
    out
}

/// Every command line a document names: the `cargo xtask` commands of inline code spans and of
/// lines of fenced blocks (each of a list joined by `&&`, `;` or `|`), with their line numbers.
fn commands(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut push = |n: usize, line: &str| {
        for part in line.split("&&").flat_map(|p| p.split(';')).flat_map(|p| p.split('|')) {
            let part = part.trim();
            if part.starts_with("cargo xtask ") {
                out.push((n + 1, part.to_string()));
            }
        }
    };
    let mut fenced = false;
    for (n, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            let t = line.trim_start().trim_start_matches("# ").trim_start_matches("$ ");
            push(n, t.split(" #").next().unwrap_or(t));
            continue;
        }
        for (i, span) in line.split('`').enumerate() {
            if i % 2 == 1 {
                push(n, span);
            }
        }
    }
    out
}

/// A command line's subcommand path (`compare`, `bench precision`, `vm run`) and its flags
/// (`--emulate`, from `[--runs 4]` or `--budget=1min`); what follows a bare `--` is another
/// program's.
fn parse(line: &str) -> (Vec<String>, Vec<String>) {
    let words: Vec<&str> = line.split_whitespace().skip(2).collect();
    let mut path: Vec<String> = Vec::new();
    if let Some(first) = words.first().filter(|w| w.chars().all(|c| c.is_ascii_lowercase())) {
        path.push(first.to_string());
        if ["bench", "vm"].contains(first)
            && let Some(second) = words.get(1).filter(|w| w.chars().all(|c| c.is_ascii_lowercase()))
        {
            path.push(second.to_string());
        }
    }
    let mut flags = Vec::new();
    for w in &words {
        if *w == "--" {
            break;
        }
        let w = w.trim_matches(|c: char| "[]()|,;.".contains(c));
        if let Some(flag) = w.strip_prefix("--") {
            let name: String = flag.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '-').collect();
            if !name.is_empty() {
                flags.push(format!("--{name}"));
            }
        }
    }
    (path, flags)
}

#[test]
fn every_relative_link_in_the_guide_and_docs_leads_to_a_file() {
    let mut broken = Vec::new();
    for doc in documents() {
        let text = std::fs::read_to_string(&doc).unwrap();
        let dir = doc.parent().unwrap();
        for (line, target) in links(&text) {
            let target = target.split_whitespace().next().unwrap_or("");
            if target.is_empty() || target.starts_with('#') || target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            let path = target.split('#').next().unwrap_or(target);
            if !dir.join(path).exists() {
                broken.push(format!("{}:{line}: {target}", doc.strip_prefix(workspace()).unwrap().display()));
            }
        }
    }
    assert!(broken.is_empty(), "links to files that do not exist:\n{}", broken.join("\n"));
}

#[test]
fn every_cargo_xtask_command_named_in_the_guide_and_docs_exists_with_its_flags() {
    let mut help: BTreeMap<Vec<String>, Option<String>> = BTreeMap::new();
    let mut wrong = Vec::new();
    let mut checked = 0;
    for doc in documents() {
        let text = std::fs::read_to_string(&doc).unwrap();
        let name = doc.strip_prefix(workspace()).unwrap().display().to_string();
        for (line, command) in commands(&text) {
            let (path, flags) = parse(&command);
            if path.is_empty() {
                wrong.push(format!("{name}:{line}: `{command}` names no subcommand"));
                continue;
            }
            let text = help.entry(path.clone()).or_insert_with(|| {
                let o = Command::new(env!("CARGO_BIN_EXE_xtask")).args(&path).arg("--help").output().unwrap();
                o.status.success().then(|| String::from_utf8_lossy(&o.stdout).into_owned())
            });
            let Some(text) = text else {
                wrong.push(format!("{name}:{line}: `{command}`: `cargo xtask {}` does not exist", path.join(" ")));
                continue;
            };
            for flag in flags {
                if !text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '-')).any(|w| w == flag) {
                    wrong.push(format!("{name}:{line}: `{command}`: `cargo xtask {}` has no {flag}", path.join(" ")));
                }
            }
            checked += 1;
        }
    }
    assert!(checked > 50, "the documents name {checked} commands: is the scan reading them?");
    assert!(wrong.is_empty(), "commands the documents name that do not exist as written:\n{}", wrong.join("\n"));
}

#[test]
fn the_scan_finds_a_broken_link_and_a_flag_that_does_not_exist() {
    assert_eq!(
        links("see [the file](docs/x.md#a) and [web](https://x)"),
        vec![(1, "docs/x.md#a".to_string()), (1, "https://x".to_string())]
    );
    let found = commands(
        "run `cargo xtask compare --config F [--emulate]`\n```\ncargo xtask vm run -- ls --all  # why\n```\n`cargo xtask setup && cargo xtask test --require-all`",
    );
    assert_eq!(found.len(), 4, "{found:?}");
    assert_eq!(parse(&found[3].1), (vec!["test".to_string()], vec!["--require-all".to_string()]));
    assert_eq!(
        parse(&found[0].1),
        (vec!["compare".to_string()], vec!["--config".to_string(), "--emulate".to_string()])
    );
    assert_eq!(parse(&found[1].1), (vec!["vm".to_string(), "run".to_string()], vec![]));
    assert_eq!(parse("cargo xtask bench precision --budget=1min").1, vec!["--budget".to_string()]);
}
