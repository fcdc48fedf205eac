//! The appendix a paper needs: how to repeat the study (the exact command, pgtier's version and
//! commit, the experiment file and its configuration as the run resolved it, the seed, the
//! tools' versions and the machine).

use super::*;

/// The file beside report.md that holds the resolved configuration.
pub const CONFIG_FILE: &str = "report-configuration.md";

pub(super) fn reproducibility(d: &mut Document, set: &ResultSet) {
    let m = &set.manifest;
    let h = &m.host;
    d.heading(2, "Reproducibility");
    let seed = match m.measurement.seed {
        Some(s) => format!("{s} (`--seed {s}` repeats the run order)"),
        None => "none recorded".into(),
    };
    let mut tools: Vec<String> = vec![format!("PostgreSQL {}", m.postgres.version)];
    tools.extend(
        m.tools.iter().map(|(tool, v)| if v.contains(tool.as_str()) { v.clone() } else { format!("{tool}: {v}") }),
    );
    d.list([
        format!("Command: `{}`", m.command_line),
        format!(
            "pgtier {}, commit {}",
            m.pgtier_version,
            m.git_commit.as_deref().map(|c| format!("`{c}`")).unwrap_or_else(|| "not recorded".into())
        ),
        format!(
            "Experiment file: `{}` (the file itself is not kept in the result set; its configuration as the run resolved it{} is manifest.json's `resolved_config`, shown in the appendix that follows)",
            m.experiment_file,
            if m.emulated { ", `--emulate` overrides applied," } else { "" }
        ),
        format!("Seed: {seed}"),
        format!("Tools: {}", tools.join("; ")),
        format!(
            "Machine: {} ({} cores, {} threads), {}, {}, Linux {}, virtualisation {}",
            h.cpu_model,
            h.cpu_cores,
            h.cpu_threads,
            gib(h.memory_bytes),
            h.os,
            h.kernel,
            h.virtualization
        ),
    ]);
    let config = serde_json::to_string_pretty(&m.resolved_config).unwrap_or_default();
    let mut body = Document::default();
    body.para("manifest.json's `resolved_config`: the experiment as the run used it, in pgtier's internal form (not the experiment file's syntax).");
    body.code("json", config);
    d.appendix("The resolved configuration", CONFIG_FILE, body.blocks);
}
