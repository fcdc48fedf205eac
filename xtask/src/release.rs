//! The release build of the `pgtier` binary, which `cargo xtask compare` ships to other hosts
//! (`pgtier::remote::binary`): cargo builds it (quickly when it is up to date) the first time a
//! run needs it.

use std::path::PathBuf;
use std::process::{Command, Stdio};

use anyhow::{Context, Result, bail};

/// `cargo build --release -p pgtier --bin pgtier`, and the binary cargo says it made.
pub fn release_pgtier() -> Result<PathBuf> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let args = ["build", "--release", "--quiet", "-p", "pgtier", "--bin", "pgtier", "--message-format=json"];
    eprintln!("  building the release pgtier binary to ship: cargo {}", args.join(" "));
    let out = Command::new(&cargo)
        .current_dir(pgtier::paths::repo_root())
        .args(args)
        .stderr(Stdio::inherit())
        .output()
        .with_context(|| format!("run {cargo}"))?;
    if !out.status.success() {
        bail!("cargo {} failed ({}; its messages are above)", args.join(" "), out.status);
    }
    executable(&String::from_utf8_lossy(&out.stdout))
        .context("cargo built no pgtier binary (no compiler-artifact message with an executable)")
}

/// The `pgtier` binary's path in cargo's JSON messages.
fn executable(messages: &str) -> Option<PathBuf> {
    messages
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|m| m["reason"] == "compiler-artifact" && m["target"]["name"] == "pgtier")
        .find_map(|m| m["executable"].as_str().map(PathBuf::from))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_binary_is_found_in_cargos_messages() {
        let messages = concat!(
            r#"{"reason":"compiler-artifact","target":{"name":"runner"},"executable":null}"#,
            "\n",
            r#"{"reason":"compiler-artifact","target":{"name":"pgtier"},"executable":null}"#,
            "\n",
            r#"{"reason":"compiler-artifact","target":{"name":"pgtier"},"executable":"/w/target/release/pgtier"}"#,
            "\n",
            r#"{"reason":"build-finished","success":true}"#,
        );
        assert_eq!(executable(messages), Some(PathBuf::from("/w/target/release/pgtier")));
        assert_eq!(executable(r#"{"reason":"build-finished","success":true}"#), None);
    }
}
