//! What `manifest.json` and `provision.log` say about a run: the manifest as a run begins (or
//! resumes), and the records of its devices, probes and data sets.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::SystemTime;

use anyhow::{Context, Result};
use experiment::Experiment;
use results::manifest::{DatasetRecord, DaxRequest, DeviceProbeRecord, DeviceRecord, PlacementRecord, PostgresInfo};
use results::record::MemoryLabel;
use results::{Manifest, Warning, timestamp};
use runner::dataset::Golden;
use runner::matrix::PlannedRun;
use tiers::Provisioned;

use super::preflight::Preflight;
use crate::host;
use crate::record::git_commit;

/// The manifest of a run that begins now; with `previous`, of a result set that resumes.
pub fn begin(
    exp: &Experiment,
    pre: &Preflight,
    plan: &tiers::Plan,
    runs: &[PlannedRun],
    started: SystemTime,
    previous: Option<&Manifest>,
) -> Manifest {
    let host = host::collect();
    let mut m = Manifest {
        pgtier_version: env!("CARGO_PKG_VERSION").into(),
        git_commit: git_commit(),
        command_line: format!(
            "{} {}",
            crate::record::invoked_as(),
            std::env::args().skip(1).collect::<Vec<_>>().join(" ")
        ),
        experiment_name: exp.name.clone(),
        experiment_description: exp.description.clone(),
        experiment_study: exp.study.clone(),
        experiment_file: exp.file.display().to_string(),
        baseline: exp.baseline.clone(),
        emulated: exp.emulated,
        repetitions: exp.repetitions,
        order: exp.order,
        resolved_config: serde_json::to_value(exp).unwrap_or_default(),
        started_at: timestamp::rfc3339(started),
        finished_at: None,
        host,
        postgres: postgres_info(exp, pre),
        tools: host::tool_versions(&pre.install.bin_dir, &programs(exp, plan)),
        devices: vec![],
        device_probes: vec![],
        placements: exp
            .placements
            .iter()
            .map(|p| PlacementRecord {
                name: p.name.clone(),
                description: p.description.clone(),
                data_device: p.data.clone(),
                wal_device: p.wal.clone(),
                tablespaces: p.tablespaces.clone(),
                profile: p.profile.as_ref().map(|i| i.profile.name.clone()),
                build: p.build.clone(),
            })
            .collect(),
        workloads: exp.workloads.iter().map(runner::record::workload_record).collect(),
        datasets: vec![],
        run_order: runs.iter().map(|r| r.run_id.clone()).collect(),
        planned_cells: runs.iter().map(|r| (r.run_id.clone(), r.cell.clone())).collect(),
        phase_seconds: BTreeMap::new(),
        resumed_at: vec![],
        kernel_changes: vec![],
        warnings: exp.warnings.iter().cloned().map(Warning::Other).collect(),
        measurement: results::manifest::MeasurementRecord {
            design: match exp.measurement.design {
                experiment::Design::Slices => results::manifest::Design::Slices,
                experiment::Design::Runs => results::manifest::Design::Runs,
            },
            equivalence_margin_pct: exp.measurement.equivalence_margin_pct,
            target_halfwidth_pct: exp.measurement.target_halfwidth_pct,
            budget_s: exp.measurement.budget.map(|b| b.as_secs_f64()),
            warm_up_rounds: exp.measurement.warm_up_rounds,
            min_rounds: exp.measurement.min_rounds,
            prewarm: exp.measurement.prewarm && exp.measurement.design == experiment::Design::Slices,
            settle: exp.measurement.settle && exp.measurement.design == experiment::Design::Slices,
            estimator: results::manifest::Estimator::LongWarmUp,
            control: exp.measurement.control.then(|| experiment::CONTROL_PLACEMENT.to_string()),
            pinning: exp.measurement.pinning.as_ref().map(|p| results::manifest::PinningRecord {
                client: runner::affinity::format_cpu_list(&p.client),
                servers: runner::affinity::format_cpu_list(&p.servers),
            }),
            handicap: exp
                .measurement
                .handicap
                .map(|h| results::manifest::HandicapRecord { cpus: h.cpus, spread_pct: h.spread_pct }),
            ..Default::default()
        },
        claims: exp.claims.iter().map(claim_record).collect(),
        // Set once the client host's connection is open (`Session::client_host`).
        client: None,
        targets: Vec::new(),
        // Set by the session (`Session::calibration`), or kept from the result set resumed.
        calibration: None,
    };
    if let Some(prev) = previous {
        m.started_at = prev.started_at.clone();
        m.resumed_at = prev.resumed_at.clone();
        m.resumed_at.push(timestamp::rfc3339(started));
        m.device_probes = prev.device_probes.clone();
        m.measurement.prewarms = prev.measurement.prewarms.clone();
        m.measurement.settles = prev.measurement.settles.clone();
        // Every round of a result set under one estimator: the one its first attempt began with.
        m.measurement.estimator = prev.measurement.estimator;
        m.warnings.push(Warning::Resumed { at: m.resumed_at.clone() });
    }
    m
}

/// Exactly the tools this run uses: those the plan requires, and fio for the probes.
fn programs<'p>(exp: &Experiment, plan: &'p tiers::Plan) -> Vec<&'p str> {
    let mut programs: Vec<&str> = plan
        .steps
        .iter()
        .filter_map(|s| match &s.action {
            tiers::plan::Action::RequireTool { program, .. } => Some(program.as_str()),
            _ => None,
        })
        .collect();
    if !exp.device_probe.is_zero() && !programs.contains(&"fio") {
        programs.push("fio");
    }
    programs
}

fn postgres_info(exp: &Experiment, pre: &Preflight) -> PostgresInfo {
    let builds = pre
        .builds
        .iter()
        .map(|b| results::manifest::BuildRecord {
            name: b.name.clone(),
            version: b.install.version_line.clone(),
            major: b.install.major,
            bin_dir: b.install.bin_dir.display().to_string(),
            configure: b.install.configure_options(),
            client_bin_dir: b.install.client_dir.display().to_string(),
            client_version: b.install.client_version_line.clone(),
            optional_left_out: exp
                .profiles_run_by(&b.name)
                .into_iter()
                .flat_map(|p| {
                    p.profile
                        .optional
                        .keys()
                        .filter(|k| !b.known_settings.contains(&k.to_ascii_lowercase()))
                        .map(move |k| format!("{}: {k}", p.profile.name))
                })
                .collect(),
        })
        .collect();
    PostgresInfo {
        builds,
        version: pre.install.version(),
        bin_dir: pre.install.bin_dir.display().to_string(),
        profiles: exp.run_profiles().iter().map(|p| (p.profile.name.clone(), p.profile.settings.clone())).collect(),
        skipped_settings: exp
            .run_profiles()
            .into_iter()
            .flat_map(|p| p.skipped.iter().map(move |(k, why)| format!("{} (profile {}): {why}", k, p.profile.name)))
            .collect(),
    }
}

pub fn device_record(d: &tiers::ProvisionedDevice) -> DeviceRecord {
    DeviceRecord {
        name: d.name.clone(),
        class: d.class.to_string(),
        emulated: d.emulated,
        description: d.description.clone(),
        block_device: d.block_device.display().to_string(),
        mountpoint: d.mountpoint.display().to_string(),
        requested_mount_options: d.mount.requested_options.clone(),
        effective_mount_options: d.mount.effective_options.clone(),
        dax_requested: match d.mount.dax.requested {
            tiers::DaxPolicy::Off => DaxRequest::Off,
            tiers::DaxPolicy::Optional => DaxRequest::Optional,
            tiers::DaxPolicy::Required => DaxRequest::Required,
        },
        dax_honoured: d.mount.dax.honoured,
        dax_note: d.mount.dax.note.clone(),
        throttle: None,
        facts: serde_json::to_value(&d.facts).unwrap_or_default(),
        nvme_tcp: d.nvme_tcp.as_ref().map(|c| results::manifest::NvmeTcpConnectionRecord {
            controller: c.controller.clone(),
            requested: c.requested.clone(),
            in_force: c.in_force.clone(),
        }),
    }
}

pub fn probe_record(p: tiers::probe::DeviceProbe) -> DeviceProbeRecord {
    DeviceProbeRecord {
        device: p.device,
        fio_version: p.fio_version,
        wal_write_iops: p.wal_write_iops,
        wal_sync_p50_us: p.wal_sync_p50_us,
        wal_sync_p99_us: p.wal_sync_p99_us,
        randread_iops: p.randread_iops,
        randread_p99_us: p.randread_p99_us,
        runtime_s: p.runtime_s,
        raw_files: p.raw_files,
        read_qd1_mean_us: p.read_qd1_mean_us,
        read_qd1_p50_us: p.read_qd1_p50_us,
        write_sync_qd1_mean_us: p.write_sync_qd1_mean_us,
        failure: p.failure,
        randread_depth: p.randread_depth,
    }
}

/// A `[[claim]]` as the report reads it.
pub fn claim_record(c: &experiment::Claim) -> results::manifest::ClaimRecord {
    results::manifest::ClaimRecord {
        name: c.name.clone(),
        text: c.text.clone(),
        origin: format!("{}{}", c.origin.file.display(), c.origin.line.map(|l| format!(":{l}")).unwrap_or_default()),
        placement: c.placement.clone(),
        against: c.against.clone(),
        workload: c.workload.clone(),
        clients: c.clients,
        at_peak: c.at_peak,
        memory_limit: Some(c.memory_limit.clone()),
        profile: Some(c.profile.clone()),
        metric: c.metric.as_str().into(),
        statement: c.statement.clone(),
        figure: c.figure.clone(),
        low_pct: c.low_pct,
        high_pct: c.high_pct,
        across: c.across.as_str().into(),
        emulation_note: c.emulation_note.clone(),
        study_data_set_bytes: c.study_regime.map(|r| r.data_set_bytes),
        study_memory_bytes: c.study_regime.map(|r| r.memory_bytes),
    }
}

pub fn dataset_record(key: &str, golden: &Golden, dir: &Path) -> DatasetRecord {
    DatasetRecord {
        key: key.to_string(),
        golden_dir: dir.display().to_string(),
        command: golden.command.clone(),
        database_size_bytes: golden.database_size_bytes,
        pgdata_size_bytes: golden.pgdata_size_bytes,
        build_seconds: golden.build_seconds,
        relocate_seconds: BTreeMap::new(),
    }
}

/// A warning for every memory limit (or the host's memory) the data set fits in.
pub fn fits_in_memory_warnings(exp: &Experiment, host_memory: u64, key: &str, g: &Golden) -> Vec<Warning> {
    let mut out = Vec::new();
    for limit in &exp.memory_limits {
        let limit = &limit.bytes;
        let available = limit.unwrap_or(host_memory);
        if g.database_size_bytes <= available {
            out.push(Warning::FitsInMemory {
                dataset: key.to_string(),
                size_mib: g.database_size_bytes as f64 / 1048576.0,
                memory: MemoryLabel::of(*limit),
            });
        }
    }
    out
}

/// `provision.log`: every provisioning command with its output.
pub fn write_provision_log(dir: &Path, p: &Provisioned) -> Result<()> {
    let mut s = String::new();
    for c in &p.commands {
        s.push_str(&format!("## step {} ({:.2} s, exit {})\n$ {}\n", c.step, c.seconds, c.status, c.command));
        for (heading, text) in [("", &c.stdout), ("stderr:\n", &c.stderr)] {
            if !text.trim().is_empty() {
                s.push_str(heading);
                s.push_str(text);
                if !text.ends_with('\n') {
                    s.push('\n');
                }
            }
        }
        s.push('\n');
    }
    std::fs::write(dir.join("provision.log"), s).context("write provision.log")
}
