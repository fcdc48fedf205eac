//! Where and how it ran: environment, builds, devices and their ceilings, placements,
//! PostgreSQL settings and the method as it actually ran.

use super::*;
use results::manifest::Design;

/// The PostgreSQL builds that ran, and the client that drove each (the system's pgbench when a
/// build has none): only when the experiment compares builds or a build was driven by another
/// build's client.
pub(super) fn builds(d: &mut Document, m: &Manifest) {
    let b = &m.postgres.builds;
    if b.len() < 2 && b.iter().all(|b| b.client_bin_dir == b.bin_dir) {
        return;
    }
    d.heading(2, "PostgreSQL builds");
    let mut t = Table::new(&["build", "server", "binaries", "driven by", "optional settings left out"]);
    for b in b {
        t.row(vec![
            b.name.clone(),
            b.version.clone(),
            format!("`{}`", b.bin_dir),
            format!(
                "{} (`{}`){}",
                b.client_version,
                b.client_bin_dir,
                if b.client_bin_dir == b.bin_dir { "" } else { ": this build has no pgbench of its own" }
            ),
            if b.optional_left_out.is_empty() { "none".to_string() } else { b.optional_left_out.join(", ") },
        ]);
    }
    d.table(t);
    for b in b.iter().filter(|b| b.configure.is_some()) {
        d.para(format!("`{}` was built with: `{}`", b.name, b.configure.as_deref().unwrap_or("")));
    }
}

pub(super) fn environment(d: &mut Document, m: &Manifest) {
    let h = &m.host;
    d.heading(2, "Environment");
    let mut t = Table::new(&["", ""]);
    let mut row = |k: &str, v: String| t.row(vec![k.to_string(), v]);
    row("host", h.hostname.clone());
    row("CPU", format!("{} ({} cores, {} threads)", h.cpu_model, h.cpu_cores, h.cpu_threads));
    row("memory", gib(h.memory_bytes));
    row("OS", format!("{}, Linux {}", h.os, h.kernel));
    if !h.kernel_version.is_empty() || !h.kernel_cmdline.is_empty() {
        row("kernel build and command line", format!("{}; `{}`", h.kernel_version, h.kernel_cmdline));
    }
    row("virtualisation", h.virtualization.clone());
    row("CPU governor", h.cpu_governor.clone().unwrap_or_else(|| "not exposed".into()));
    row("transparent huge pages", h.transparent_hugepages.clone().unwrap_or_else(|| "unknown".into()));
    if let Some(l) = &h.load_average {
        row("load average at start", l.clone());
    }
    row("PostgreSQL", format!("{} ({})", m.postgres.version, m.postgres.bin_dir));
    for (tool, v) in &m.tools {
        row(tool, v.clone());
    }
    if let Some(c) = &m.client {
        client(&mut t, c);
    }
    for target_host in &m.targets {
        target(&mut t, target_host);
    }
    d.table(t.caption("The machine and the tools' versions as the run recorded them."));
    if !h.sysctls.is_empty() {
        d.para(format!(
            "Kernel settings before the run: {}",
            h.sysctls.iter().map(|(k, v)| format!("`{k}={v}`")).collect::<Vec<_>>().join(", ")
        ));
    }
    if !m.kernel_changes.is_empty() {
        d.para("Changed for the run (restored afterwards):");
        d.list(m.kernel_changes.iter().map(ToString::to_string));
    }
}

/// The client host's rows: where the benchmark clients ran, the path to it and its round trip,
/// the transport.
fn client(t: &mut Table, c: &results::manifest::ClientRecord) {
    let mut row = |k: &str, v: String| t.row(vec![k.to_string(), v]);
    row(
        "Client host",
        format!("{} ({}): the benchmark clients ran there; its pgbench: {}", c.host, c.address, c.pgbench),
    );
    if let Some(d) = &c.tpcc_driver {
        row("TPC-C client", format!("the TPC-C driver ran on {}: {d}", c.host));
    }
    row("network path", c.network_path.clone());
    let rtt = c.rtt_ms.map(|r| format!("{r:.3} ms")).unwrap_or_else(|| "not measured".into());
    row("round trip", format!("{rtt} ({})", c.rtt_method));
    row(
        "transport",
        format!("{}; set-up {:.0} ms, a command over it {:.1} ms", c.transport, c.ssh_setup_ms, c.ssh_command_ms),
    );
    row("client authentication", c.authentication.clone());
}

/// A storage target host's rows: what it served, the path to it and its round trip.
fn target(table: &mut Table, t: &results::manifest::TargetRecord) {
    let rtt = t.rtt_ms.map(|r| format!("{r:.3} ms")).unwrap_or_else(|| "not measured".into());
    table.row(vec![
        "Target host".into(),
        format!("{} ({}): served {} with {}", t.host, t.address, t.devices.join(", "), t.serves),
    ]);
    table.row(vec![
        format!("network path to {}", t.host),
        format!("{}; round trip {rtt} ({})", t.network_path, t.rtt_method),
    ]);
    table.row(vec![
        format!("transport to {}", t.host),
        format!("{}; set-up {:.0} ms, a command over it {:.1} ms", t.transport, t.ssh_setup_ms, t.ssh_command_ms),
    ]);
    if !t.access.is_empty() {
        table.row(vec![format!("access to {}'s exports", t.host), t.access.clone()]);
    }
    if !t.kernel.is_empty() {
        table.row(vec![format!("kernel of {}", t.host), format!("Linux {}; `{}`", t.kernel, t.kernel_cmdline)]);
    }
}

/// Each device: class, block device, mount options, DAX and throttles.
pub(super) fn devices(doc: &mut Document, m: &Manifest) {
    doc.heading(2, "Devices");
    let mut t = Table::new(&["device", "class", "what it is", "block device", "mount options (effective)", "DAX"]);
    for d in &m.devices {
        let dax = match d.dax_requested {
            DaxRequest::Off => "not requested".to_string(),
            _ if d.dax_honoured => "requested, in effect".to_string(),
            _ => "**requested, NOT in effect** (page-cache I/O)".to_string(),
        };
        t.row(vec![
            d.name.clone(),
            d.class.to_string(),
            d.description.clone(),
            d.block_device.clone(),
            d.effective_mount_options.join(","),
            dax,
        ]);
    }
    doc.table(t.caption("The devices as provisioned: class, block device, mount options as the kernel shows them, and whether DAX was in effect."));
    let mut notes: Vec<String> =
        m.devices.iter().filter(|d| !d.dax_note.is_empty()).map(|d| format!("{}: {}", d.name, d.dax_note)).collect();
    for t in &m.targets {
        let rtt = t.rtt_ms.map(|r| format!("{r:.3} ms")).unwrap_or_else(|| "not measured".into());
        for d in &t.devices {
            notes.push(format!("{d} is served by host {} at {} ({}; round trip {rtt})", t.host, t.address, t.serves));
        }
    }
    for d in &m.devices {
        if let Some(t) = &d.throttle {
            notes.push(format!("{} is capped to behave like a slower device: {t}", d.name));
        }
    }
    doc.list(notes);
}

/// What fio measured on each device before the matrix.
pub(super) fn device_ceilings(d: &mut Document, m: &Manifest) {
    if !m.device_probes.is_empty() {
        d.heading(3, "Device ceilings (fio, before the matrix)");
        let mut t = Table::new(&[
            "device",
            "8 KiB write+fdatasync IOPS:",
            "fdatasync p50 / p99 (us):",
            "4 KiB random read QD32 IOPS:",
            "read p99 (us):",
            "raw",
        ]);
        for p in &m.device_probes {
            t.row(vec![
                p.device.clone(),
                format!("{:.0}", p.wal_write_iops),
                format!("{:.0} / {:.0}", p.wal_sync_p50_us, p.wal_sync_p99_us),
                match p.randread_depth {
                    Some(depth) if depth < 32 => format!("{:.0} (depth reached: {depth})", p.randread_iops),
                    _ => format!("{:.0}", p.randread_iops),
                },
                format!("{:.0}", p.randread_p99_us),
                p.raw_files.iter().map(|f| format!("[{f}]({f})")).collect::<Vec<_>>().join(" "),
            ]);
        }
        d.table(t.caption("Device ceilings measured by fio before the matrix (one run each, no interval). The random reads ask libaio for 32 in flight; where fewer were (a DAX file, whose reads complete as they are submitted), the depth reached is given beside the IOPS."));
    }
}

/// Where each placement puts PGDATA and pg_wal.
pub(super) fn placements(d: &mut Document, m: &Manifest) {
    d.heading(2, "Placements");
    d.list(m.placements.iter().map(|p| {
        format!(
            "**{}**: PGDATA on `{}`, pg_wal on `{}`{}{}{}",
            p.name,
            p.data_device,
            p.wal_device,
            p.profile.as_ref().map(|f| format!(", its server on profile `{f}`")).unwrap_or_default(),
            p.build.as_ref().map(|b| format!(", on build `{b}`")).unwrap_or_default(),
            if p.description.is_empty() { String::new() } else { format!(" ({})", p.description) }
        )
    }));
}

/// The settings of each profile as written and as the server reported them.
pub(super) fn settings(d: &mut Document, set: &ResultSet) {
    let m = &set.manifest;
    d.heading(2, "PostgreSQL settings");
    for (profile, settings) in &m.postgres.profiles {
        d.para(format!(
            "Profile **{profile}** (written by pgtier): {}",
            if settings.is_empty() {
                "PostgreSQL defaults".into()
            } else {
                settings.iter().map(|(k, v)| format!("`{k} = {v}`")).collect::<Vec<_>>().join(", ")
            }
        ));
        if let Some(r) = set.runs.iter().find(|r| &r.cell.profile == profile && !r.server_settings.is_empty()) {
            d.para(format!(
                "Non-default settings while running (pg_settings, run {}): {}",
                r.run_id,
                r.server_settings.iter().map(|(k, v)| format!("`{k}={v}`")).collect::<Vec<_>>().join(", ")
            ));
        }
    }
    if !m.postgres.skipped_settings.is_empty() {
        d.para(format!("Skipped settings: {}", m.postgres.skipped_settings.join("; ")));
    }
}

/// The file beside report.md that lists every run in order with its exact command.
pub const RUN_ORDER_FILE: &str = "report-run-order.md";

/// How the matrix ran: the command, the data sets, the procedure per run and the run order.
pub(super) fn method(d: &mut Document, set: &ResultSet) {
    let m = &set.manifest;
    d.heading(2, "Method");
    d.para(format!("Command: `{}`", m.command_line));
    let mut items: Vec<Item> = m
        .datasets
        .iter()
        .map(|ds| {
            item(format!(
                "Data set `{}`: `{}`; database {:.0} MiB, PGDATA+WAL {:.0} MiB; built once in {:.1} s, then copied onto each placement ({}).",
                ds.key,
                ds.command,
                ds.database_size_bytes as f64 / 1048576.0,
                ds.pgdata_size_bytes as f64 / 1048576.0,
                ds.build_seconds,
                ds.relocate_seconds.iter().map(|(p, t)| format!("{p} {t:.1} s")).collect::<Vec<_>>().join(", ")
            ))
        })
        .collect();
    let seed =
        m.measurement.seed.map(|s| format!(" (random order seed {s}; `--seed {s}` repeats it)")).unwrap_or_default();
    if m.measurement.design == Design::Slices {
        slices_method(&mut items, set, &seed);
    } else {
        items.push(item(
            "Before every measured run: the placement's server is started (in its memory-limited cgroup where a limit is set), CHECKPOINT, sync, page cache dropped, a ramp-up run whose figures are discarded, then the measured run; the server is stopped afterwards.",
        ));
        items.push(item(
            "The copy is made once per placement and data set: later runs on a placement start from the data as earlier runs left it (read-write workloads grow history tables and leave dead tuples). The run order spreads that drift across placements; it is not reset between runs.",
        ));
        items.push(item(format!(
            "{} repetitions per cell, {} order{seed} ({} runs):",
            m.repetitions,
            m.order,
            m.run_order.len()
        )));
    }
    items.push(item(match &m.measurement.pinning {
        Some(p) => format!(
            "CPU pinning: pgbench ran on {} and every server (its backends too) on {}, as the kernel reported back for each postmaster and each pgbench started; the client did not compete with the servers for a CPU.",
            cpus_named(&p.client),
            cpus_named(&p.servers)
        ),
        None => "No CPU pinning: the kernel's scheduler placed the workload client and the servers on any CPU.".into(),
    }));
    if let Some(h) = &m.measurement.handicap {
        items.push(item(format!(
            "**A test of the method, not a measurement of storage**: every server life ran under a CPU quota of its own, {} CPUs times exp({}% x z), z standard normal drawn per life from the seed (`handicap_cpus`, `handicap_spread`; each life's quota in `sessions/<session>/handicap.tsv`), so the lives of one placement differ by an offset of about {}% where the servers are CPU-bound at their quota.",
            h.cpus, h.spread_pct, h.spread_pct
        )));
    }
    if let Some(text) = settle(set) {
        items.push(item(text));
    }
    if let Some(text) = prewarm(set) {
        items.push(item(text));
    }
    if let Some(text) = machine_state(set) {
        items.push(item(text));
    }
    d.items(items);
    let mut order = Document::default();
    order.list(set.runs.iter().map(|r| {
        format!(
            "`{}` ({}): `{}`",
            r.run_id,
            if r.status == results::RunStatus::Ok { "ok" } else { "failed" },
            r.command
        )
    }));
    d.appendix("Run order and exact commands", RUN_ORDER_FILE, order.blocks);
    if !m.phase_seconds.is_empty() {
        d.para(format!(
            "Time spent: {}",
            m.phase_seconds.iter().map(|(k, v)| format!("{k} {v:.0} s")).collect::<Vec<_>>().join(", ")
        ));
    }
    d.para(
        "Raw output of every run (pgbench stdout/stderr, server log) is in `runs/<run id>/`; figures per run in `runs.csv`, per cell in `summary.csv`, per second in `series.csv`; `manifest.json` holds the resolved configuration and environment.",
    );
}

/// What the prewarm before each contest read (slices, `[measurement] prewarm`): None when it was
/// off or the result set predates it.
fn prewarm(set: &ResultSet) -> Option<String> {
    let m = &set.manifest.measurement;
    if !m.prewarm || m.prewarms.is_empty() {
        return None;
    }
    let range = |v: Vec<f64>, digits: usize| {
        let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        if (hi - lo).abs() < 10f64.powi(-(digits as i32)) {
            format!("{lo:.digits$}")
        } else {
            format!("{lo:.digits$}-{hi:.digits$}")
        }
    };
    let p = &m.prewarms;
    let cache: Vec<f64> = p.iter().filter_map(|x| x.page_cache_mib).collect();
    Some(format!(
        "Prewarm: before every contest's warm-up (and after a restart), each placement's server read the workload's tables and indexes into its memory (pg_prewarm, largest first): {} prewarms of {} MiB in {} s each{}; per relation in `sessions/<session>/prewarm-*.txt`, per prewarm in manifest.json (`measurement.prewarms`).",
        p.len(),
        range(p.iter().map(|x| x.mib).collect(), 0),
        range(p.iter().map(|x| x.seconds).collect(), 1),
        if cache.is_empty() {
            String::new()
        } else {
            format!(", leaving {} MiB in its cgroup's page cache", range(cache, 0))
        }
    ))
}

/// What the settles before contests did (slices, `[measurement] settle`): None when it was off
/// or the result set predates it; a sentence saying none was needed when no contest followed one
/// that wrote.
fn settle(set: &ResultSet) -> Option<String> {
    let m = &set.manifest.measurement;
    if !m.settle {
        return None;
    }
    let ok: Vec<&results::manifest::SettleRecord> = m.settles.iter().filter(|s| s.error.is_none()).collect();
    let failed = m.settles.len() - ok.len();
    if m.settles.is_empty() {
        return Some("Settle: no contest followed one that wrote to the placements' databases, so none was vacuumed (`[measurement] settle`).".into());
    }
    let mut contests: Vec<&str> = Vec::new();
    for s in &m.settles {
        if !contests.contains(&s.contest.as_str()) {
            contests.push(&s.contest);
        }
    }
    let span = |v: Vec<f64>, digits: usize| {
        let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        if v.is_empty() {
            "-".to_string()
        } else if (hi - lo).abs() < 10f64.powi(-(digits as i32)) {
            format!("{lo:.digits$}")
        } else {
            format!("{lo:.digits$}-{hi:.digits$}")
        }
    };
    let failures = if failed > 0 {
        format!(" {failed} failed, and their contests went on without (manifest.json's warnings).")
    } else {
        String::new()
    };
    Some(format!(
        "Settle: before {} ({}), each placement's database, which an earlier contest had written to, was vacuumed as a DBA would before measuring: {} of every table by its own server, then CHECKPOINT, so that the contest did not begin by pruning dead rows and setting hint bits on what the earlier one updated: {} settles, each finding {} dead rows in its database, VACUUM {} s, CHECKPOINT {} s.{failures} Per table in `sessions/<session>/settle-*.txt`, per settle in manifest.json (`measurement.settles`).",
        if contests.len() == 1 { "1 contest".to_string() } else { format!("{} contests", contests.len()) },
        contests.join("; "),
        ok.first().map(|s| s.command.as_str()).filter(|c| !c.is_empty()).unwrap_or("VACUUM (ANALYZE)"),
        m.settles.len(),
        span(ok.iter().map(|s| s.dead_rows as f64).collect(), 0),
        span(ok.iter().map(|s| s.vacuum_seconds).collect(), 1),
        span(ok.iter().map(|s| s.checkpoint_seconds).collect(), 1),
    ))
}

/// Under which load the figures hold: the ranges of the machine's state over the successful
/// runs (slices) that recorded it; None for result sets of older versions.
fn machine_state(set: &ResultSet) -> Option<String> {
    let ok = set.runs.iter().filter(|r| r.status == results::RunStatus::Ok);
    let r = analysis::warnings::MachineRanges::of(ok)?;
    let span = |v: Option<(f64, f64)>, decimals: usize, unit: &str| match v {
        Some((lo, hi)) => format!("{lo:.decimals$}-{hi:.decimals$}{unit}"),
        None => "not known".into(),
    };
    let runs = if set.manifest.measurement.design == Design::Slices { "slices" } else { "runs" };
    Some(format!(
        "The figures hold under this machine state, over the {} measured {runs} ({} CPUs): 1-minute load {} (at each {}'s start and end; it counts the study's own client and backends), CPU used outside the study {} of the machine (its busy time less the servers' cgroups and pgtier with its client), steal {}. Per run in `runs.csv` (`load1_start`, `load1_end`, `steal_pct`, `outside_cpu_pct`).",
        r.rounds,
        r.cpus,
        span(r.load, 1, ""),
        &runs[..runs.len() - 1],
        span(r.outside_pct, 0, "%"),
        span(r.steal_pct, 1, "%"),
    ))
}

fn item(text: impl Into<String>) -> Item {
    Item { text: text.into(), children: Vec::new() }
}

/// How the slices design ran: one session per memory limit and profile, rounds of slices, why
/// each contest stopped.
fn slices_method(items: &mut Vec<Item>, set: &ResultSet, seed: &str) {
    let m = &set.manifest;
    items.push(item(format!(
        "Design **slices**: for each memory limit and profile, every placement's server was started at once (each in its own cgroup with the limit, on its own port of the private socket), CHECKPOINTed, then the page cache was dropped once. Each contest (a workload and client count) began with a discarded warm-up per placement, then rounds of one slice per placement in a random order{seed}. Idle placements wait between their slices (their background writer and the kernel's write-back go on meanwhile), alike for every placement."
    )));
    let budget = m.measurement.budget_s.map(|b| format!("a budget of {b:.0} s")).unwrap_or_else(|| "no budget".into());
    let target =
        m.measurement.target_halfwidth_pct.map(|t| format!("a target of ±{t}%")).unwrap_or_else(|| "no target".into());
    items.push(Item {
        text: format!(
            "Rounds per contest were decided as the run went ({budget}, {target}); why each contest stopped:"
        ),
        children: m.measurement.stopped.iter().map(|(c, why)| format!("{c}: {why}")).collect(),
    });
    items.push(item(if m.measurement.settle {
        "The copy is made once per placement and data set: later slices start from the data as earlier ones left it (read-write workloads grow history tables), alike for every placement; before a contest that follows one that wrote, each database was vacuumed (Settle, below)."
    } else {
        "The copy is made once per placement and data set: later slices start from the data as earlier ones left it (read-write workloads grow history tables and leave dead tuples), alike for every placement."
    }));
    items.push(item(format!("{} slices:", set.runs.len())));
}

/// "CPU 0" for one CPU, "CPUs 1-3" for a list.
fn cpus_named(list: &str) -> String {
    if list.contains(['-', ',']) { format!("CPUs {list}") } else { format!("CPU {list}") }
}
