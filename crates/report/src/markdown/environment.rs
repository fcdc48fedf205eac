//! Where and how it ran: environment, builds, devices and their ceilings, placements,
//! PostgreSQL settings and the method as it actually ran.

use super::*;
use results::manifest::Design;

/// The PostgreSQL builds that ran, and the client that drove each (the system's pgbench when a
/// build has none): only when the experiment compares builds or a build was driven by another
/// build's client.
pub(super) fn builds(s: &mut String, m: &Manifest) {
    let b = &m.postgres.builds;
    if b.len() < 2 && b.iter().all(|b| b.client_bin_dir == b.bin_dir) {
        return;
    }
    let _ = writeln!(s, "## PostgreSQL builds\n");
    let _ =
        writeln!(s, "| build | server | binaries | driven by | optional settings left out |\n|---|---|---|---|---|");
    for b in b {
        let _ = writeln!(
            s,
            "| {} | {} | `{}` | {} (`{}`){} | {} |",
            b.name,
            b.version,
            b.bin_dir,
            b.client_version,
            b.client_bin_dir,
            if b.client_bin_dir == b.bin_dir { "" } else { ": this build has no pgbench of its own" },
            if b.optional_left_out.is_empty() { "none".to_string() } else { b.optional_left_out.join(", ") }
        );
    }
    for b in b.iter().filter(|b| b.configure.is_some()) {
        let _ = writeln!(s, "\n`{}` was built with: `{}`", b.name, b.configure.as_deref().unwrap_or(""));
    }
    let _ = writeln!(s);
}

pub(super) fn environment(s: &mut String, m: &Manifest) {
    let h = &m.host;
    let _ = writeln!(s, "## Environment\n");
    let _ = writeln!(s, "| | |\n|---|---|");
    let _ = writeln!(s, "| host | {} |", h.hostname);
    let _ = writeln!(s, "| CPU | {} ({} cores, {} threads) |", h.cpu_model, h.cpu_cores, h.cpu_threads);
    let _ = writeln!(s, "| memory | {} |", gib(h.memory_bytes));
    let _ = writeln!(s, "| OS | {}, Linux {} |", h.os, h.kernel);
    let _ = writeln!(s, "| virtualisation | {} |", h.virtualization);
    let _ = writeln!(s, "| CPU governor | {} |", h.cpu_governor.as_deref().unwrap_or("not exposed"));
    let _ = writeln!(s, "| transparent huge pages | {} |", h.transparent_hugepages.as_deref().unwrap_or("unknown"));
    if let Some(l) = &h.load_average {
        let _ = writeln!(s, "| load average at start | {l} |");
    }
    let _ = writeln!(s, "| PostgreSQL | {} ({}) |", m.postgres.version, m.postgres.bin_dir);
    for (tool, v) in &m.tools {
        let _ = writeln!(s, "| {tool} | {v} |");
    }
    if let Some(c) = &m.client {
        client(s, c);
    }
    for t in &m.targets {
        target(s, t);
    }
    if !h.sysctls.is_empty() {
        let _ = writeln!(
            s,
            "\nKernel settings before the run: {}",
            h.sysctls.iter().map(|(k, v)| format!("`{k}={v}`")).collect::<Vec<_>>().join(", ")
        );
    }
    if !m.kernel_changes.is_empty() {
        let _ = writeln!(s, "\nChanged for the run (restored afterwards):\n");
        for c in &m.kernel_changes {
            let _ = writeln!(s, "- {c}");
        }
    }
}

/// The client host's rows: where the benchmark clients ran, the path to it and its round trip,
/// the transport.
fn client(s: &mut String, c: &results::manifest::ClientRecord) {
    let _ = writeln!(
        s,
        "| Client host | {} ({}): the benchmark clients ran there; its pgbench: {} |",
        c.host, c.address, c.pgbench
    );
    if let Some(d) = &c.tpcc_driver {
        let _ = writeln!(s, "| TPC-C client | the TPC-C driver ran on {}: {d} |", c.host);
    }
    let _ = writeln!(s, "| network path | {} |", c.network_path);
    let rtt = c.rtt_ms.map(|r| format!("{r:.3} ms")).unwrap_or_else(|| "not measured".into());
    let _ = writeln!(s, "| round trip | {rtt} ({}) |", c.rtt_method);
    let _ = writeln!(
        s,
        "| transport | {}; set-up {:.0} ms, a command over it {:.1} ms |",
        c.transport, c.ssh_setup_ms, c.ssh_command_ms
    );
    let _ = writeln!(s, "| client authentication | {} |", c.authentication);
}

/// A storage target host's rows: what it served, the path to it and its round trip.
fn target(s: &mut String, t: &results::manifest::TargetRecord) {
    let _ =
        writeln!(s, "| Target host | {} ({}): served {} with {} |", t.host, t.address, t.devices.join(", "), t.serves);
    let rtt = t.rtt_ms.map(|r| format!("{r:.3} ms")).unwrap_or_else(|| "not measured".into());
    let _ = writeln!(s, "| network path to {} | {}; round trip {rtt} ({}) |", t.host, t.network_path, t.rtt_method);
    let _ = writeln!(
        s,
        "| transport to {} | {}; set-up {:.0} ms, a command over it {:.1} ms |",
        t.host, t.transport, t.ssh_setup_ms, t.ssh_command_ms
    );
}

/// Each device: class, block device, mount options, DAX and throttles.
pub(super) fn devices(s: &mut String, m: &Manifest) {
    let _ = writeln!(s, "\n## Devices\n");
    let _ = writeln!(s, "| device | class | what it is | block device | mount options (effective) | DAX |");
    let _ = writeln!(s, "|---|---|---|---|---|---|");
    for d in &m.devices {
        let dax = match d.dax_requested {
            DaxRequest::Off => "not requested".to_string(),
            _ if d.dax_honoured => "requested, in effect".to_string(),
            _ => "**requested, NOT in effect** (page-cache I/O)".to_string(),
        };
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} |",
            d.name,
            d.class,
            d.description,
            d.block_device,
            d.effective_mount_options.join(","),
            dax
        );
    }
    for d in m.devices.iter().filter(|d| !d.dax_note.is_empty()) {
        let _ = writeln!(s, "\n- {}: {}", d.name, d.dax_note);
    }
    for t in &m.targets {
        let rtt = t.rtt_ms.map(|r| format!("{r:.3} ms")).unwrap_or_else(|| "not measured".into());
        for d in &t.devices {
            let _ =
                writeln!(s, "\n- {d} is served by host {} at {} ({}; round trip {rtt})", t.host, t.address, t.serves);
        }
    }
    for d in &m.devices {
        if let Some(t) = &d.throttle {
            let _ = writeln!(s, "\n- {} is capped to behave like a slower device: {t}", d.name);
        }
    }
}

/// What fio measured on each device before the matrix.
pub(super) fn device_ceilings(s: &mut String, m: &Manifest) {
    if !m.device_probes.is_empty() {
        let _ = writeln!(s, "\n### Device ceilings (fio, before the matrix)\n");
        let _ = writeln!(
            s,
            "| device | 8 KiB write+fdatasync IOPS | fdatasync p50 / p99 (us) | 4 KiB random read QD32 IOPS | read p99 (us) | raw |"
        );
        let _ = writeln!(s, "|---|---:|---:|---:|---:|---|");
        for p in &m.device_probes {
            let _ = writeln!(
                s,
                "| {} | {:.0} | {:.0} / {:.0} | {:.0} | {:.0} | {} |",
                p.device,
                p.wal_write_iops,
                p.wal_sync_p50_us,
                p.wal_sync_p99_us,
                p.randread_iops,
                p.randread_p99_us,
                p.raw_files.iter().map(|f| format!("[{f}]({f})")).collect::<Vec<_>>().join(" ")
            );
        }
    }
}

/// Where each placement puts PGDATA and pg_wal.
pub(super) fn placements(s: &mut String, m: &Manifest) {
    let _ = writeln!(s, "\n## Placements\n");
    for p in &m.placements {
        let _ = writeln!(
            s,
            "- **{}**: PGDATA on `{}`, pg_wal on `{}`{}",
            p.name,
            p.data_device,
            p.wal_device,
            if p.description.is_empty() { String::new() } else { format!(" ({})", p.description) }
        );
    }
}

/// The settings of each profile as written and as the server reported them.
pub(super) fn settings(s: &mut String, set: &ResultSet) {
    let m = &set.manifest;
    let _ = writeln!(s, "\n## PostgreSQL settings\n");
    for (profile, settings) in &m.postgres.profiles {
        let _ = writeln!(
            s,
            "Profile **{profile}** (written by pgtier): {}",
            if settings.is_empty() {
                "PostgreSQL defaults".into()
            } else {
                settings.iter().map(|(k, v)| format!("`{k} = {v}`")).collect::<Vec<_>>().join(", ")
            }
        );
        if let Some(r) = set.runs.iter().find(|r| &r.cell.profile == profile && !r.server_settings.is_empty()) {
            let _ = writeln!(
                s,
                "\nNon-default settings while running (pg_settings, run {}): {}\n",
                r.run_id,
                r.server_settings.iter().map(|(k, v)| format!("`{k}={v}`")).collect::<Vec<_>>().join(", ")
            );
        }
    }
    if !m.postgres.skipped_settings.is_empty() {
        let _ = writeln!(s, "\nSkipped settings: {}", m.postgres.skipped_settings.join("; "));
    }
}

/// How the matrix ran: the command, the data sets, the procedure per run and the run order.
pub(super) fn method(s: &mut String, set: &ResultSet) {
    let m = &set.manifest;
    let _ = writeln!(s, "\n## Method\n");
    let _ = writeln!(s, "Command: `{}`\n", m.command_line);
    for d in &m.datasets {
        let _ = writeln!(
            s,
            "- Data set `{}`: `{}`; database {:.0} MiB, PGDATA+WAL {:.0} MiB; built once in {:.1} s, then copied onto each placement ({}).",
            d.key,
            d.command,
            d.database_size_bytes as f64 / 1048576.0,
            d.pgdata_size_bytes as f64 / 1048576.0,
            d.build_seconds,
            d.relocate_seconds.iter().map(|(p, t)| format!("{p} {t:.1} s")).collect::<Vec<_>>().join(", ")
        );
    }
    let seed =
        m.measurement.seed.map(|s| format!(" (random order seed {s}; `--seed {s}` repeats it)")).unwrap_or_default();
    if m.measurement.design == Design::Slices {
        slices_method(s, set, &seed);
    } else {
        let _ = writeln!(
            s,
            "- Before every measured run: the placement's server is started (in its memory-limited cgroup where a limit is set), CHECKPOINT, sync, page cache dropped, a ramp-up run whose figures are discarded, then the measured run; the server is stopped afterwards."
        );
        let _ = writeln!(
            s,
            "- The copy is made once per placement and data set: later runs on a placement start from the data as earlier runs left it (read-write workloads grow history tables and leave dead tuples). The run order spreads that drift across placements; it is not reset between runs."
        );
        let _ = writeln!(
            s,
            "- {} repetitions per cell, {} order{seed} ({} runs):",
            m.repetitions,
            m.order,
            m.run_order.len()
        );
    }
    let _ = writeln!(s, "\n<details><summary>run order and exact commands</summary>\n");
    for r in &set.runs {
        let _ = writeln!(
            s,
            "- `{}` ({}): `{}`",
            r.run_id,
            if r.status == results::RunStatus::Ok { "ok" } else { "failed" },
            r.command
        );
    }
    let _ = writeln!(s, "\n</details>\n");
    if !m.phase_seconds.is_empty() {
        let _ = writeln!(
            s,
            "Time spent: {}\n",
            m.phase_seconds.iter().map(|(k, v)| format!("{k} {v:.0} s")).collect::<Vec<_>>().join(", ")
        );
    }
    let _ = writeln!(
        s,
        "Raw output of every run (pgbench stdout/stderr, server log) is in `runs/<run id>/`; figures per run in `runs.csv`, per cell in `summary.csv`, per second in `series.csv`; `manifest.json` holds the resolved configuration and environment."
    );
}

/// How the slices design ran: one session per memory limit and profile, rounds of slices, why
/// each contest stopped.
fn slices_method(s: &mut String, set: &ResultSet, seed: &str) {
    let m = &set.manifest;
    let _ = writeln!(
        s,
        "- Design **slices**: for each memory limit and profile, every placement's server was started at once (each in its own cgroup with the limit, on its own port of the private socket), CHECKPOINTed, then the page cache was dropped once. Each contest (a workload and client count) began with a discarded warm-up per placement, then rounds of one slice per placement in a random order{seed}. Idle placements wait between their slices (their background writer and the kernel's write-back go on meanwhile), alike for every placement."
    );
    let budget = m.measurement.budget_s.map(|b| format!("a budget of {b:.0} s")).unwrap_or_else(|| "no budget".into());
    let target =
        m.measurement.target_halfwidth_pct.map(|t| format!("a target of ±{t}%")).unwrap_or_else(|| "no target".into());
    let _ = writeln!(
        s,
        "- Rounds per contest were decided as the run went ({budget}, {target}); why each contest stopped:"
    );
    for (c, why) in &m.measurement.stopped {
        let _ = writeln!(s, "  - {c}: {why}");
    }
    let _ = writeln!(
        s,
        "- The copy is made once per placement and data set: later slices start from the data as earlier ones left it (read-write workloads grow history tables and leave dead tuples), alike for every placement."
    );
    let _ = writeln!(s, "- {} slices:", set.runs.len());
}
