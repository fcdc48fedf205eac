//! `cargo xtask bench fidelity`: does measuring with pgtier change what is measured? On one
//! emulated placement (a loop device over a sparse file, XFS), pgtier's full run procedure
//! (server start, CHECKPOINT, drop caches, pgbench with -P 1 -r and a sampled transaction log,
//! the once-a-second sampler) alternates with a plain pgbench run by hand with the same options
//! on the same data (server start, CHECKPOINT, drop caches, `pgbench -c -j -T`). Medians of each
//! are compared; the sampler's own CPU is reported as the monitoring cost.

use std::path::Path;
use std::process::ExitCode;
use std::time::{Duration, SystemTime};

use anyhow::{Context, Result, bail};
use journal::{CommandLine, Journal};
use results::record::CellKey;
use results::{ResultsDir, RunStatus, timestamp};
use runner::dataset::{self, DatasetSpec};
use runner::execute::{RunInputs, execute_run};
use runner::matrix::{
    DeviceRole, MemoryLimit, PgbenchWorkload, PlacementTarget, PlannedRun, Profile, WorkloadKind, WorkloadSpec,
};
use runner::pgbench::{self, Builtin};
use runner::server::{self, Server, ServerLaunch};
use runner::{DATABASE, DbUser, PgInstall, RunnerEnv};
use tiers::spec::{Backing, DeviceClass, DeviceSpec, RealDevice};

use stats::median;

use pgtier::paths;
use pgtier::signals::Interrupts;

pub struct FidelityArgs {
    pub runs: u32,
    pub duration: Duration,
    pub scale: u32,
    pub clients: u32,
    pub builtin: Builtin,
}

pub async fn fidelity(args: FidelityArgs) -> ExitCode {
    if !nix::unistd::geteuid().is_root() {
        eprintln!("error: the benchmark provisions a loop device and needs root");
        return ExitCode::FAILURE;
    }
    let interrupts = Interrupts::install();
    if let Err(e) = paths::ensure_state_dirs() {
        eprintln!("error: {}", pgtier::error_chain::chain(&e));
        return ExitCode::FAILURE;
    }
    let id = format!("bench-fidelity-{}", timestamp::compact(SystemTime::now()));
    let journal = match Journal::begin(&paths::journal_dir(), &id, "cargo xtask bench fidelity") {
        Ok(j) => j,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    };
    let out = paths::repo_root().join("results").join("bench-fidelity").join(timestamp::compact(SystemTime::now()));
    let result = run(&args, &journal, &interrupts, &id, &out).await;
    interrupts.tearing_down.store(true, std::sync::atomic::Ordering::SeqCst);
    let report = journal.teardown(|_, _| {});
    match (result, report.is_clean()) {
        (Ok(text), true) => {
            print!("{text}");
            println!("{}", out.display());
            ExitCode::SUCCESS
        }
        (Err(e), _) => {
            eprintln!("error: {}", pgtier::error_chain::chain(&e));
            ExitCode::FAILURE
        }
        (Ok(_), false) => {
            eprintln!("error: teardown left: {}", report.failed.join("; "));
            ExitCode::FAILURE
        }
    }
}

async fn run(args: &FidelityArgs, journal: &Journal, interrupts: &Interrupts, id: &str, out: &Path) -> Result<String> {
    std::fs::create_dir_all(out.join("logs"))?;
    let (env, placement) = prepare(args, journal, interrupts, id, out).await?;
    let threads = args.clients.min(pgtier::host::hardware_threads()).max(1);
    let mut pairs = Pairs::default();
    for i in 1..=args.runs {
        if interrupts.cancelled() {
            bail!("interrupted");
        }
        // pgtier's procedure.
        let rec = pgtier_run(args, &env, &placement, threads, i, out).await?;
        if rec.status != RunStatus::Ok {
            bail!("pgtier run failed: {}", rec.failure.unwrap_or_default());
        }
        pairs.pgtier_tps.push(rec.metrics.tps);
        pairs.sampler_pct.push(rec.sampler_cpu_s / rec.duration_s * 100.0);
        if let Some(w) = &rec.wait_events {
            let backend = w.sampler_backend_cpu_s.unwrap_or(0.0);
            pairs.waits_pct.push((w.sampler_cpu_s + backend) / rec.duration_s * 100.0);
        }
        pairs.lines.push(format!("run {i} pgtier: {:.1} tps ({})", rec.metrics.tps, rec.command));
        // By hand: the same server start, CHECKPOINT and page-cache drop, then plain pgbench.
        let hand = by_hand(&env, &placement, args, threads, &out.join(format!("{i:04}-hand.log"))).await?;
        pairs.lines.push(format!("run {i} by hand: {hand:.1} tps"));
        eprintln!("{}\n{}", pairs.lines[pairs.lines.len() - 2], pairs.lines[pairs.lines.len() - 1]);
        pairs.hand_tps.push(hand);
    }
    let text = summary(args, threads, &pairs);
    std::fs::write(out.join("fidelity.txt"), &text)?;
    Ok(text)
}

/// The measurements of the pairs, in order.
#[derive(Default)]
struct Pairs {
    pgtier_tps: Vec<f64>,
    hand_tps: Vec<f64>,
    sampler_pct: Vec<f64>,
    /// The wait-event sampler: its thread and the server process answering it.
    waits_pct: Vec<f64>,
    lines: Vec<String>,
}

/// One emulated placement (a loop device over a sparse file, XFS) with the data set on it.
async fn prepare<'j>(
    args: &FidelityArgs,
    journal: &'j Journal,
    interrupts: &Interrupts,
    id: &str,
    out: &Path,
) -> Result<(RunnerEnv<'j>, PlacementTarget)> {
    let user = DbUser::lookup("postgres")?;
    let install = PgInstall::detect(None)?;
    let work_dir = paths::work_root().join(id);
    let mut device = DeviceSpec::new(
        "disk",
        DeviceClass::Nvme,
        RealDevice::Local { path: "/dev/null".into(), model: None, serial: None },
    );
    device.emulation.backing = Backing::LoopFile;
    device.emulation.size_bytes = 4 << 30;
    let ctx = tiers::PlanContext {
        short_id: format!("{:06x}", std::process::id() & 0xff_ffff),
        work_dir: work_dir.clone(),
        log_dir: out.join("logs"),
        owner_uid: user.uid,
        owner_gid: user.gid,
        emulate: true,
    };
    let plan = tiers::build_plan(std::slice::from_ref(&device), &ctx);
    let provisioned =
        tiers::execute(&plan, &[device], &mut tiers::system::RealSystem, journal, &interrupts.cancel, &mut |_| {})
            .context("provisioning")?;
    let dev = provisioned.device("disk").context("provisioned")?;
    let socket_dir = work_dir.join("sock");
    let server = ServerLaunch {
        install: install.clone(),
        user: user.clone(),
        journal,
        socket_dir: socket_dir.clone(),
        port: 5432,
        cpus: None,
    };
    let env = RunnerEnv {
        server,
        cgroups: None,
        run_token: id.to_string(),
        logs_dir: out.join("logs"),
        cancel: interrupts.cancel.clone(),
        drop_caches: true,
        watchdog_grace: None,
        throttles: vec![],
        client: None,
        client_cpus: None,
        handicap: None,
    };
    dataset::make_owned_dir(&env, &socket_dir)?;
    eprintln!("loading pgbench scale {}", args.scale);
    let spec = DatasetSpec::Pgbench { scale: args.scale, init_args: vec![], tablespaces: vec![] };
    let golden = dataset::build_golden(&env, &spec, &work_dir.join("golden"), &Default::default(), &mut |_| {}).await?;
    let placement = PlacementTarget {
        name: "disk".into(),
        data_dir: dev.mountpoint.join("bench").join("pgdata"),
        wal_dir: dev.mountpoint.join("bench").join("pg_wal"),
        devices: vec![DeviceRole {
            role: "data+wal".into(),
            device: "disk".into(),
            kernel_name: dev.facts.kernel_name.clone(),
        }],
        tablespaces: Default::default(),
        profile: None,
        install: None,
    };
    dataset::relocate(&env, &golden, &placement.data_dir, &placement.wal_dir, &placement.tablespaces)?;
    Ok((env, placement))
}

/// Run `i` by pgtier's own procedure.
async fn pgtier_run(
    args: &FidelityArgs,
    env: &RunnerEnv<'_>,
    placement: &PlacementTarget,
    threads: u32,
    i: u32,
    out: &Path,
) -> Result<results::RunRecord> {
    let workload = WorkloadSpec {
        name: "fidelity".into(),
        kind: WorkloadKind::Pgbench(PgbenchWorkload {
            builtin: args.builtin,
            scale: args.scale,
            init_args: vec![],
            extra_args: vec![],
            per_statement: true,
        }),
        clients: vec![args.clients],
        threads: Some(threads),
        duration: args.duration,
        ramp_up: Duration::ZERO,
    };
    let planned = PlannedRun {
        sequence: i,
        run_id: format!("{i:04}-pgtier"),
        cell: CellKey {
            placement: "disk".into(),
            workload: "fidelity".into(),
            clients: args.clients,
            memory_limit: results::record::MemoryLabel::Unlimited,
            profile: "default".into(),
            build: runner::matrix::DEFAULT_BUILD.into(),
        },
        repetition: i,
        segment: 0,
        placement: 0,
        workload: 0,
        profile: 0,
        build: 0,
        memory: 0,
        memory_limit: None,
        clients: args.clients,
        threads,
    };
    let inputs = RunInputs {
        planned: &planned,
        placement,
        workload: &workload,
        profile: &Profile { name: "default".into(), settings: Default::default(), optional: Default::default() },
        memory: &MemoryLimit::unlimited(),
        results: &ResultsDir::new(out),
        faults: &[],
    };
    Ok(execute_run(env, &inputs, &mut NoProgress).await?)
}

fn summary(args: &FidelityArgs, threads: u32, pairs: &Pairs) -> String {
    let (m_p, m_h) = (median(&pairs.pgtier_tps), median(&pairs.hand_tps));
    let mut text = String::new();
    text.push_str(&format!(
        "pgbench {} scale {}, {} clients, {} threads, {} s, {} pairs, interleaved\n",
        args.builtin.as_str(),
        args.scale,
        args.clients,
        threads,
        args.duration.as_secs(),
        args.runs
    ));
    for l in &pairs.lines {
        text.push_str(l);
        text.push('\n');
    }
    text.push_str(&format!(
        "median pgtier {m_p:.1} tps, median by hand {m_h:.1} tps: pgtier / hand = {:.4} ({:+.2}%)\n",
        m_p / m_h,
        (m_p / m_h - 1.0) * 100.0
    ));
    // The pairs ran back to back: their ratio's geometric mean with a paired t interval on the
    // logs, and whether that shows "within 2%", refutes it, or cannot tell.
    let pairs_tps: Vec<(f64, f64)> = pairs.hand_tps.iter().copied().zip(pairs.pgtier_tps.iter().copied()).collect();
    if let Some(d) = stats::Delta::paired(&pairs_tps) {
        text.push_str(&format!(
            "pgtier / hand over the {} pairs: geometric mean {:.4} ({}), paired 95% interval on the logs; {}\n",
            pairs_tps.len(),
            d.ratio,
            d.text(""),
            within_2pct(&d)
        ));
    }
    text.push_str(&format!(
        "sampler (once a second: /proc/diskstats, /proc/stat): {:.3}% of one core (median over the pgtier runs)\n",
        median(&pairs.sampler_pct)
    ));
    if !pairs.waits_pct.is_empty() {
        text.push_str(&format!(
            "wait-event sampler (pg_stat_activity ten times a second; its thread and the server backend answering it): {:.3}% of one core (median over the pgtier runs)\n",
            median(&pairs.waits_pct)
        ));
    }
    text
}

/// "Within 2%" against the paired interval: shown when the whole interval lies inside ±2%,
/// refuted when it lies outside ±2% entirely (a difference beyond 2% is shown), else unresolved.
/// An interval that excludes 0 but stays inside ±2% shows the 2%, it does not refute it.
fn within_2pct(d: &stats::Delta) -> &'static str {
    if !d.has_interval() {
        "within 2%: no interval (one pair)"
    } else if d.pct_low >= -2.0 && d.pct_high <= 2.0 {
        "within 2%: shown (the whole interval lies inside ±2%)"
    } else if d.pct_high < -2.0 || d.pct_low > 2.0 {
        "within 2%: refuted (the whole interval lies outside ±2%)"
    } else {
        "within 2%: unresolved (the interval reaches beyond ±2% and into it: run more pairs)"
    }
}

struct NoProgress;
impl runner::execute::Observer for NoProgress {}

async fn by_hand(
    env: &RunnerEnv<'_>,
    placement: &PlacementTarget,
    args: &FidelityArgs,
    threads: u32,
    log: &std::path::Path,
) -> Result<f64> {
    server::write_config(
        &placement.data_dir,
        env.server.port,
        &env.server.socket_dir,
        &Default::default(),
        env.server.user.uid,
        env.server.user.gid,
    )?;
    let srv = Server::start(&env.server, &placement.data_dir, None, log).await?;
    let client = srv.connect(DATABASE).await?;
    client.batch_execute("CHECKPOINT").await?;
    drop(client);
    dataset::sync_all();
    std::fs::write("/proc/sys/vm/drop_caches", "3")?;
    let cmd = CommandLine::new(env.server.install.client_dir.join("pgbench").to_string_lossy())
        .args([
            "-h",
            &env.server.socket_dir.to_string_lossy(),
            "-p",
            &env.server.port.to_string(),
            "-U",
            server::DB_ROLE,
        ])
        .arg(format!("--builtin={}", args.builtin.as_str()))
        .args(["-c", &args.clients.to_string(), "-j", &threads.to_string(), "-T", &args.duration.as_secs().to_string()])
        .arg(DATABASE);
    let out = tokio::task::spawn_blocking(move || cmd.run()).await??;
    // The raw pgbench output stays next to the figure parsed from it.
    std::fs::write(log.with_extension("pgbench.stdout"), &out.stdout)?;
    std::fs::write(log.with_extension("pgbench.stderr"), &out.stderr)?;
    srv.stop(env.server.journal).await?;
    let s = pgbench::parse_summary(&out.stdout)?;
    Ok(s.tps)
}

#[cfg(test)]
mod tests {
    use super::within_2pct;
    use stats::Delta;

    #[test]
    fn within_two_percent_is_judged_on_the_paired_interval() {
        // docs/benchmarks.md's three pairs (by hand, pgtier): ratios 0.980, 0.967, 1.006; their
        // geometric mean 0.984, -1.58% [-6.3, +3.4]: neither shown nor refuted.
        let d = Delta::paired(&[(1414.1, 1385.8), (1288.2, 1246.2), (1370.5, 1378.3)]).unwrap();
        assert!(
            (d.pct + 1.58).abs() < 0.01 && (d.pct_low + 6.3).abs() < 0.05 && (d.pct_high - 3.4).abs() < 0.05,
            "{d:?}"
        );
        assert!(within_2pct(&d).starts_with("within 2%: unresolved"));
        // Close pairs: -0.5% with a narrow interval inside ±2% (it excludes 0: still shown).
        let d = Delta::paired(&[(1000.0, 994.0), (1000.0, 996.0), (1000.0, 995.0)]).unwrap();
        assert!(d.pct_high < 0.0 && within_2pct(&d).starts_with("within 2%: shown"), "{d:?}");
        // 10% low in every pair: refuted.
        let d = Delta::paired(&[(1000.0, 900.0), (1000.0, 905.0), (1000.0, 898.0)]).unwrap();
        assert!(within_2pct(&d).starts_with("within 2%: refuted"), "{d:?}");
        assert!(within_2pct(&Delta::paired(&[(1000.0, 990.0)]).unwrap()).contains("no interval"));
    }
}
