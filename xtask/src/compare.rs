//! `cargo xtask compare`: validate everything, plan, provision, build each data set once, copy
//! it onto every placement, run the matrix, report, tear down. Teardown runs after success,
//! failure and interruption alike, from the run's journal.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::time::{Instant, SystemTime};

use anyhow::{Context, Result, anyhow, bail};
use experiment::{Experiment, LoadOptions};
use journal::Journal;
use results::manifest::{DatasetRecord, DeviceRecord, PlacementRecord, PostgresInfo};
use results::{Manifest, ResultsDir, RunStatus, timestamp};
use runner::cgroup::{BlkioThrottle, Hierarchy};
use runner::dataset::{self, Golden};
use runner::execute::{RunInputs, execute_run};
use runner::faults::{Fault, FaultAction};
use runner::matrix::{DeviceRole, MatrixSpec, PlacementTarget, plan_runs};
use runner::{DbUser, PgInstall, RunnerEnv, RunnerError};
use tiers::{PlanContext, Provisioned, build_plan};

use crate::host;
use crate::paths;
use crate::progress::MatrixProgress;
use crate::signals::Interrupts;

pub struct Args {
    /// The experiment file (with --resume: defaults to the one the results directory records).
    pub config: Option<PathBuf>,
    /// Continue the interrupted matrix in this results directory.
    pub resume: Option<PathBuf>,
    pub emulate: bool,
    pub dry_run: bool,
    pub out: Option<PathBuf>,
}

/// Exit codes: 0 success, 1 runtime failure (teardown still done), 2 invalid configuration.
pub async fn run(args: Args) -> ExitCode {
    let threads = host::hardware_threads();
    let opts = LoadOptions { emulate: args.emulate, configs_dir: paths::configs_dir(), hardware_threads: threads };
    let previous = match &args.resume {
        None => None,
        Some(dir) => match ResultsDir::new(dir).read_manifest() {
            Ok(m) => Some(m),
            Err(e) => {
                eprintln!("error: --resume {}: {e}", dir.display());
                return ExitCode::from(2);
            }
        },
    };
    let config = match (&args.config, &previous) {
        (Some(c), _) => c.clone(),
        (None, Some(m)) => PathBuf::from(&m.experiment_file),
        (None, None) => {
            eprintln!("error: give --config FILE (or --resume DIR)");
            return ExitCode::from(2);
        }
    };
    let exp = match experiment::load(&config, &opts) {
        Ok(e) => e,
        Err(errors) => {
            eprintln!("{errors}");
            eprintln!("The experiment file is invalid; nothing was touched.");
            return ExitCode::from(2);
        }
    };
    for w in &exp.warnings {
        eprintln!("warning: {w}");
    }
    let started = SystemTime::now();
    // Unique even for two runs of one experiment started in the same second (cgroups, network
    // namespaces and work directories are machine-wide).
    let stamp = format!("{}-{}", exp.name, timestamp::compact(started));
    let short_id = short_token(&stamp);
    let run_id = format!("{stamp}-{short_id}");
    let results_dir = match (&args.resume, &args.out) {
        (Some(r), _) => r.clone(),
        (None, Some(o)) => o.clone(),
        (None, None) => paths::repo_root()
            .join("results")
            .join(&exp.name)
            .join(format!("{}-{short_id}", timestamp::compact(started))),
    };
    // A new result set never mixes with an old one: only --resume continues a directory.
    if args.resume.is_none()
        && !args.dry_run
        && std::fs::read_dir(&results_dir).map(|mut d| d.next().is_some()).unwrap_or(false)
    {
        eprintln!(
            "error: --out {} is not empty; give a new directory (or --resume it to continue that result set)",
            results_dir.display()
        );
        eprintln!("Nothing was touched.");
        return ExitCode::from(2);
    }
    let work_dir = paths::work_root().join(&run_id);
    let user = DbUser::lookup(&exp.os_user);
    let (uid, gid) = match &user {
        Ok(u) => (u.uid, u.gid),
        Err(_) => (0, 0),
    };
    let devices: Vec<tiers::DeviceSpec> = exp.used_devices().into_iter().cloned().collect();
    let ctx = PlanContext {
        short_id,
        work_dir: work_dir.clone(),
        log_dir: results_dir.join("logs"),
        owner_uid: uid,
        owner_gid: gid,
        emulate: args.emulate,
    };
    let plan = build_plan(&devices, &ctx);
    let matrix = matrix_spec(&exp, &plan, None, threads);
    let runs = plan_runs(&matrix);

    if args.dry_run {
        print_dry_run(&exp, &plan, &matrix, &runs, user.as_ref().err());
        return ExitCode::SUCCESS;
    }
    if let Some(prev) = &previous
        && let Err(why) = resumable(prev, &exp, &runs)
    {
        eprintln!("error: cannot resume {}: {why}", results_dir.display());
        eprintln!("Nothing was touched; start a new result set instead (without --resume).");
        return ExitCode::from(2);
    }
    for f in &exp.faults {
        if f.run as usize > runs.len() {
            eprintln!(
                "warning: a fault is set for run {}, but the matrix has {} runs; it will not fire",
                f.run,
                runs.len()
            );
        }
    }

    // Everything that can be checked before touching the machine.
    let pre = match preflight(&exp, &plan, user) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("error: {e:#}");
            eprintln!("Nothing was touched.");
            return ExitCode::FAILURE;
        }
    };
    let interrupts = Interrupts::install();
    let journal = match prepare_state(&run_id, &exp) {
        Ok(j) => j,
        Err(e) => {
            eprintln!("error: {e:#}");
            return ExitCode::FAILURE;
        }
    };
    eprintln!(
        "pgtier: {} ({} placements, {} workloads, {} runs){}",
        exp.name,
        exp.placements.len(),
        exp.workloads.len(),
        runs.len(),
        if exp.emulated { ", emulated tiers" } else { "" }
    );
    eprintln!("results: {}", results_dir.display());
    eprintln!("run record: {}", journal.path().display());

    let mut session = Session {
        exp: &exp,
        journal: &journal,
        interrupts: interrupts.clone(),
        results: ResultsDir::new(&results_dir),
        pre,
        run_id: run_id.clone(),
        runs,
        started,
        manifest: Manifest::default(),
        previous,
        ctx: ctx.clone(),
    };
    // A panic inside the run must not skip teardown: it becomes an error like any other.
    let outcome = match futures_util::FutureExt::catch_unwind(std::panic::AssertUnwindSafe(session.go(&plan))).await {
        Ok(r) => r,
        Err(panic) => Err(anyhow!(
            "internal error (a bug in pgtier): {}",
            panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default()
        )),
    };

    // Teardown, whatever happened.
    interrupts.tearing_down.store(true, Ordering::SeqCst);
    eprintln!("teardown: undoing everything this run made, newest first");
    let t0 = Instant::now();
    let report = journal.teardown(|p, r| match r {
        Ok(journal::Outcome::Done) => eprintln!("  done: {}", p.undo),
        Ok(journal::Outcome::NothingLeft) => {}
        Err(e) => eprintln!("  FAILED: {}: {e}", p.undo),
    });
    session.manifest.phase_seconds.insert("teardown".into(), t0.elapsed().as_secs_f64());
    let closed = journal.path().with_extension("closed.jsonl");
    let _ = std::fs::copy(if closed.exists() { &closed } else { journal.path() }, results_dir.join("journal.jsonl"));

    let finished_ok = outcome.is_ok();
    if let Err(e) = &outcome {
        eprintln!("error: {e:#}");
    }
    // The report covers whatever finished, also after a failure or an interruption.
    eprintln!("reporting: tables, charts and report.md in {}", results_dir.display());
    let rendered = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| session.finish_report(finished_ok)))
        .unwrap_or_else(|_| Err(anyhow!("internal error while rendering the report (a bug in pgtier)")));
    if !report.is_clean() {
        eprintln!("error: teardown left {} thing(s) in place: {}", report.failed.len(), report.failed.join("; "));
        eprintln!("Run `cargo xtask cleanup` to retry; the run record is {}", journal.path().display());
        return ExitCode::FAILURE;
    }
    eprintln!("teardown complete: nothing of this run is left mounted or running");
    match (outcome, rendered) {
        (Ok(()), Ok(summary_text)) => {
            print!("{summary_text}");
            println!("{}", results_dir.display());
            ExitCode::SUCCESS
        }
        (Ok(()), Err(e)) => {
            eprintln!("error: report: {e:#}");
            println!("{}", results_dir.display());
            ExitCode::FAILURE
        }
        (Err(_), _) => {
            println!("{}", results_dir.display());
            ExitCode::FAILURE
        }
    }
}

/// Whether `prev` (an interrupted result set) can be continued with `exp`: same resolved
/// configuration (the file's path aside) and the same planned runs.
fn resumable(prev: &Manifest, exp: &Experiment, runs: &[runner::matrix::PlannedRun]) -> Result<(), String> {
    let mut now = serde_json::to_value(exp).map_err(|e| e.to_string())?;
    let mut before = prev.resolved_config.clone();
    for v in [&mut now, &mut before] {
        if let Some(o) = v.as_object_mut() {
            o.remove("file");
            o.remove("warnings");
        }
    }
    let mut changes = Vec::new();
    report::compare::json_diff(&before, &now, "config", &mut changes);
    if !changes.is_empty() {
        let list: Vec<String> =
            changes.iter().take(10).map(|c| format!("{}: {} -> {}", c.what, c.baseline, c.contender)).collect();
        return Err(format!(
            "the configuration changed since those runs ({}); mixing cells of two configurations would make the deltas meaningless",
            list.join("; ")
        ));
    }
    let order: Vec<&String> = runs.iter().map(|r| &r.run_id).collect();
    if prev.run_order.iter().collect::<Vec<_>>() != order {
        return Err("the planned runs differ from the recorded run order".into());
    }
    Ok(())
}

/// A 6-character token naming this run's interfaces and namespaces.
fn short_token(run_id: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in run_id.bytes().chain(std::process::id().to_le_bytes()) {
        h ^= b as u64;
        h = h.wrapping_mul(0x100_0000_01b3);
    }
    format!("{:06x}", h & 0xff_ffff)
}

struct Preflight {
    install: PgInstall,
    user: DbUser,
    cgroups: Option<Hierarchy>,
}

/// `huge_pages = on` in a cell whose server this machine has too few huge pages for: refused
/// before anything is touched (PostgreSQL itself would stop at its first start, after
/// provisioning). Pages the experiment's `[kernel]` section reserves count, when it is applied.
fn check_huge_pages(exp: &Experiment, machine: Option<runner::memory::HugePages>) -> Result<()> {
    let Some(need) = exp.huge_pages_needs.iter().max_by_key(|n| n.shared_memory_bytes) else { return Ok(()) };
    let machine = machine.unwrap_or(runner::memory::HugePages { total: 0, free: 0, page_bytes: 2 << 20 });
    let reserved_by_file = exp
        .kernel
        .sysctls
        .get("vm.nr_hugepages")
        .filter(|_| exp.kernel.apply)
        .and_then(|v| v.trim().parse::<u64>().ok());
    let available = reserved_by_file.unwrap_or(machine.free);
    // PostgreSQL maps its whole shared memory in huge pages, rounded up to whole pages.
    let pages = machine.pages_for(need.shared_memory_bytes);
    if pages <= available {
        return Ok(());
    }
    let have = match reserved_by_file {
        Some(n) => format!("the experiment's [kernel] section reserves only {n}"),
        None => format!(
            "this machine has {} free of {} reserved (HugePages_Free / HugePages_Total in /proc/meminfo)",
            machine.free, machine.total
        ),
    };
    bail!(
        "{}: huge_pages = on (profile {:?}, memory limit {}) needs {pages} huge pages of {} for the server's about {} of shared memory, and {have}; PostgreSQL would refuse to start. Reserve them (sysctl vm.nr_hugepages={pages}, or [kernel] sysctls = {{ \"vm.nr_hugepages\" = \"{pages}\" }} in the experiment file), or set huge_pages = \"try\"",
        need.origin,
        need.profile,
        need.memory_limit,
        runner::memory::show(machine.page_bytes),
        runner::memory::show(need.shared_memory_bytes),
    )
}

fn preflight(exp: &Experiment, plan: &tiers::Plan, user: Result<DbUser, RunnerError>) -> Result<Preflight> {
    check_huge_pages(exp, runner::memory::HugePages::of_this_machine())?;
    if !nix::unistd::geteuid().is_root() {
        bail!("provisioning block devices needs root; run as root, or use --dry-run to see the plan");
    }
    let mut missing = Vec::new();
    for s in &plan.steps {
        if let tiers::plan::Action::RequireTool { program, package } = &s.action
            && journal::command::which(program).is_none()
        {
            missing.push(format!("{program} (package {package})"));
        }
    }
    if !exp.device_probe.is_zero() && journal::command::which("fio").is_none() {
        missing.push("fio (package fio; or set device_probe = \"0s\")".into());
    }
    let install = PgInstall::detect(exp.bin_dir.as_deref()).map_err(|e| anyhow!("{e}"))?;
    if journal::command::which("pgbench").is_none() && !install.program("pgbench").exists() {
        missing.push("pgbench (package postgresql-contrib or postgresql)".into());
    }
    if !missing.is_empty() {
        bail!("missing programs: {}; run `cargo xtask setup` (as root) to install them", missing.join(", "));
    }
    let user = user.map_err(|e| anyhow!("{e}"))?;
    let cgroups = Hierarchy::detect();
    if cgroups.is_none() && exp.memory_limits.iter().any(|m| m.bytes.is_some()) {
        bail!(
            "the experiment limits the server's memory, but this machine has no cgroup memory controller (looked at /sys/fs/cgroup)"
        );
    }
    if !exp.emulated {
        let local: Vec<(&str, &std::path::Path)> = exp
            .devices
            .iter()
            .filter_map(|d| match &d.real {
                tiers::spec::RealDevice::Local { path, .. } => Some((d.name.as_str(), path.as_path())),
                _ => None,
            })
            .collect();
        tiers::safety::check_distinct(&mut tiers::system::RealSystem, &local).map_err(|e| anyhow!("{e}"))?;
    }
    if exp.emulated
        && exp.devices.iter().any(|d| d.emulation.backing == tiers::Backing::Zram)
        && !Path::new("/sys/class/zram-control/hot_add").exists()
    {
        bail!(
            "zram is not available (/sys/class/zram-control/hot_add is missing); load the zram module or use backing = \"tmpfs-loop\""
        );
    }
    Ok(Preflight { install, user, cgroups })
}

fn prepare_state(run_id: &str, exp: &Experiment) -> Result<Journal> {
    paths::ensure_state_dirs()?;
    Journal::begin(&paths::journal_dir(), run_id, &format!("cargo xtask compare: {}", exp.file.display()))
        .map_err(|e| anyhow!("{e}"))
}

/// The matrix as the runner sees it; directories come from the plan's mount points.
fn matrix_spec(exp: &Experiment, plan: &tiers::Plan, provisioned: Option<&Provisioned>, threads: u32) -> MatrixSpec {
    // Every device a placement names is in the plan (used_devices covers data, WAL and
    // tablespaces); a missing one would be a bug, and a relative path must never be used.
    let mount = |dev: &str| {
        plan.mountpoints
            .iter()
            .find(|(n, _)| n == dev)
            .map(|(_, p)| p.clone())
            .unwrap_or_else(|| panic!("device {dev} has no mount point in the plan"))
    };
    let kernel = |dev: &str| {
        provisioned
            .and_then(|p| p.device(dev))
            .map(|d| d.facts.kernel_name.clone())
            .unwrap_or_else(|| format!("<{dev}>"))
    };
    let placements = exp
        .placements
        .iter()
        .map(|p| {
            let mut devices: Vec<DeviceRole> = Vec::new();
            let mut add = |role: &str, dev: &str| match devices.iter_mut().find(|d| d.device == dev) {
                Some(d) => d.role = format!("{}+{role}", d.role),
                None => devices.push(DeviceRole { role: role.into(), device: dev.into(), kernel_name: kernel(dev) }),
            };
            add("data", &p.data);
            add("wal", &p.wal);
            for (role, dev) in &p.tablespaces {
                add(role, dev);
            }
            PlacementTarget {
                name: p.name.clone(),
                data_dir: mount(&p.data).join(&p.name).join("pgdata"),
                wal_dir: mount(&p.wal).join(&p.name).join("pg_wal"),
                devices,
                tablespaces: p
                    .tablespaces
                    .iter()
                    .map(|(role, dev)| (role.clone(), mount(dev).join(&p.name).join(format!("ts_{role}"))))
                    .collect(),
            }
        })
        .collect();
    MatrixSpec {
        placements,
        workloads: exp.workloads.clone(),
        memory_limits: exp.memory_limits.clone(),
        profiles: exp.profiles.iter().map(|p| p.profile.clone()).collect(),
        repetitions: exp.repetitions,
        order: exp.order,
        cores: threads,
    }
}

fn print_dry_run(
    exp: &Experiment,
    plan: &tiers::Plan,
    matrix: &MatrixSpec,
    runs: &[runner::matrix::PlannedRun],
    user_err: Option<&RunnerError>,
) {
    println!("# pgtier dry run: {} ({})", exp.name, exp.file.display());
    println!("# {} tiers; nothing below has been executed.", if exp.emulated { "emulated" } else { "REAL" });
    if let Some(e) = user_err {
        println!("# note: {e} (uid 0 is shown in chown steps)");
    }
    println!("\n## Provisioning plan ({} steps; teardown undoes them newest first)\n", plan.steps.len());
    print!("{plan}");
    println!("\n## Placements\n");
    for p in &matrix.placements {
        println!("- {}: PGDATA {} , pg_wal {}", p.name, p.data_dir.display(), p.wal_dir.display());
    }
    println!("\n## Data sets (built once, then copied onto each placement)\n");
    let golden_root = paths::work_root().join("<run id>").join("golden");
    let free = runner::dataset::available_bytes(&paths::work_root())
        .map(|b| format!("{:.0} MiB free there now", b as f64 / 1048576.0))
        .unwrap_or_else(|| "free space unknown".into());
    println!("Built below {} ({free}; set PGTIER_STATE_DIR to move it).\n", golden_root.display());
    let mut seen = Vec::new();
    for w in &matrix.workloads {
        let d = w.dataset(&matrix.tablespace_roles());
        if !seen.contains(&d) {
            match &w.kind {
                runner::matrix::WorkloadKind::Pgbench(_) => println!(
                    "- {}: pgbench -i -s {} (needs about {:.0} MiB)",
                    d.key(),
                    w.scale(),
                    d.estimated_bytes() as f64 / 1048576.0
                ),
                runner::matrix::WorkloadKind::Tpcc(t) => println!(
                    "- {}: TPC-C, {} warehouses, {} parallel binary-COPY loaders, then keys, indexes, VACUUM ANALYZE (needs about {:.0} MiB)",
                    d.key(),
                    t.warehouses,
                    t.load_workers,
                    d.estimated_bytes() as f64 / 1048576.0
                ),
            }
            seen.push(d);
        }
    }
    println!("\n## Server memory (per profile and memory limit, at the largest client count and data set)\n");
    for (profile, limit, plan) in exp.memory_plans() {
        use runner::memory::{MemoryKind, show};
        println!(
            "- profile {profile}, memory {limit}: certain {}, likely {} (an estimate), at most {}",
            show(plan.certain_bytes()),
            show(plan.likely_bytes()),
            show(plan.upper_bound_bytes())
        );
        for line in plan.describe(&[MemoryKind::Certain, MemoryKind::Likely, MemoryKind::UpperBound]) {
            println!("    {line}");
        }
    }
    for need in &exp.huge_pages_needs {
        println!(
            "- huge_pages = on ({}): about {} of shared memory in huge pages; checked against the machine's reserved pages before step 1",
            need.origin,
            runner::memory::show(need.shared_memory_bytes)
        );
    }
    println!(
        "\n## Runs ({}, {:?} order; each: start server, CHECKPOINT, drop caches, ramp-up, measure, stop)\n",
        runs.len(),
        matrix.order
    );
    for r in runs {
        let w = &matrix.workloads[r.workload];
        let what = match &w.kind {
            runner::matrix::WorkloadKind::Pgbench(p) => format!(
                "pgbench --builtin={} -c {} -j {} -T {} -P 1{}",
                p.builtin.as_str(),
                r.clients,
                r.threads,
                w.duration.as_secs(),
                if p.per_statement { " -r" } else { "" }
            ),
            runner::matrix::WorkloadKind::Tpcc(t) => {
                format!("TPC-C {} with {} virtual users for {} s", t.script(), r.clients, w.duration.as_secs())
            }
        };
        println!(
            "{}  {what}  (ramp-up {} s, memory {}, profile {})",
            r.run_id,
            w.ramp_up.as_secs(),
            r.cell.memory_limit,
            r.cell.profile
        );
    }
}

struct Session<'a> {
    exp: &'a Experiment,
    journal: &'a Journal,
    interrupts: Interrupts,
    results: ResultsDir,
    pre: Preflight,
    run_id: String,
    /// The planned runs, in execution order.
    runs: Vec<runner::matrix::PlannedRun>,
    started: SystemTime,
    manifest: Manifest,
    /// The manifest of the interrupted result set being resumed.
    previous: Option<Manifest>,
    ctx: PlanContext,
}

impl Session<'_> {
    fn write_manifest(&mut self) -> Result<()> {
        self.results.write_manifest(&self.manifest).context("write manifest.json")
    }

    async fn go(&mut self, plan: &tiers::Plan) -> Result<()> {
        std::fs::create_dir_all(self.results.logs_dir())
            .with_context(|| format!("create {}", self.results.root.display()))?;
        std::fs::write(self.results.root.join("plan.txt"), plan.to_string())?;
        self.init_manifest(plan);
        self.write_manifest()?;

        // Kernel settings the experiment asks for (restored at teardown from the run record).
        if !self.exp.kernel.is_empty() {
            if self.exp.kernel.apply {
                let applied = crate::kernel::apply(&self.exp.kernel, self.journal)?;
                for line in &applied {
                    eprintln!("kernel: {line}");
                }
                self.manifest.kernel_changes = applied;
            } else {
                self.manifest.kernel_changes =
                    vec!["[kernel] settings listed in the experiment file were NOT applied (emulated run)".into()];
            }
            self.write_manifest()?;
        }

        // Provision.
        let t0 = Instant::now();
        let devices: Vec<tiers::DeviceSpec> = self.exp.used_devices().into_iter().cloned().collect();
        eprintln!("provisioning {} device(s), {} steps", devices.len(), plan.steps.len());
        let mut sys = tiers::system::RealSystem;
        let provisioned =
            tiers::execute(plan, &devices, &mut sys, self.journal, &self.interrupts.cancel, &mut |e| match e {
                tiers::Event::Step { index, total, step } => {
                    if step.action.is_destructive() {
                        eprintln!(
                            "  [{index}/{total}] {}{}",
                            step.device.as_deref().map(|d| format!("[{d}] ")).unwrap_or_default(),
                            step.action.describe()
                        );
                    }
                }
                tiers::Event::Note(n) => eprintln!("  note: {n}"),
            });
        self.manifest.phase_seconds.insert("provision".into(), t0.elapsed().as_secs_f64());
        let provisioned = match provisioned {
            Ok(p) => p,
            Err(tiers::ProvisionError::Cancelled { .. }) => {
                bail!("interrupted during provisioning")
            }
            Err(e) => return Err(anyhow!("provisioning failed at {e}")),
        };
        write_provision_log(&self.results.root, &provisioned)?;
        self.manifest.devices = provisioned.devices.iter().map(device_record).collect();
        let throttles = self.throttles(&provisioned)?;
        for t in &throttles {
            if let Some(d) = self.manifest.devices.iter_mut().find(|d| d.name == t.device) {
                d.throttle = Some(describe_throttle(t));
            }
        }
        for d in &provisioned.devices {
            if d.mount.dax.requested != tiers::DaxPolicy::Off && !d.mount.dax.honoured {
                self.manifest
                    .warnings
                    .push(format!("DAX asked for on {} but not in effect: {}", d.name, d.mount.dax.note));
            }
        }
        self.write_manifest()?;

        // The physical ceilings of each device (fio), before any data is on it.
        if !self.exp.device_probe.is_zero() {
            let t0 = Instant::now();
            let dir = self.results.root.join("probes");
            std::fs::create_dir_all(&dir).with_context(|| format!("create {}", dir.display()))?;
            for d in &provisioned.devices {
                if self.interrupts.cancelled() {
                    bail!("interrupted while probing the devices");
                }
                eprintln!(
                    "probing {} with fio ({} s per job: 8 KiB write+fdatasync, 4 KiB random read QD32)",
                    d.name,
                    self.exp.device_probe.as_secs()
                );
                // Random reads over a small file hit the device's own cache: on real devices the
                // file spans a tenth of the free space, up to 4 GiB.
                let size_mib = if self.exp.emulated {
                    256
                } else {
                    runner::dataset::available_bytes(&d.mountpoint)
                        .map(|b| (b / 10 / 1048576).clamp(256, 4096))
                        .unwrap_or(1024)
                };
                let p = tiers::probe::probe(
                    &mut sys,
                    &d.name,
                    &d.mountpoint,
                    self.exp.device_probe,
                    size_mib,
                    &dir,
                    "probes",
                )
                .map_err(|e| anyhow!("{e}"))?;
                eprintln!(
                    "  {}: {:.0} write+fdatasync IOPS (sync p50 {:.0} us, p99 {:.0} us), {:.0} random-read IOPS",
                    d.name, p.wal_write_iops, p.wal_sync_p50_us, p.wal_sync_p99_us, p.randread_iops
                );
                self.manifest.device_probes.push(results::manifest::DeviceProbeRecord {
                    device: p.device,
                    fio_version: p.fio_version,
                    wal_write_iops: p.wal_write_iops,
                    wal_sync_p50_us: p.wal_sync_p50_us,
                    wal_sync_p99_us: p.wal_sync_p99_us,
                    randread_iops: p.randread_iops,
                    randread_p99_us: p.randread_p99_us,
                    runtime_s: p.runtime_s,
                    raw_files: p.raw_files,
                });
            }
            self.manifest.phase_seconds.insert("probe".into(), t0.elapsed().as_secs_f64());
            self.write_manifest()?;
        }

        // The runner's environment.
        let socket_dir = self.ctx.work_dir.join("sock");
        let env = RunnerEnv {
            install: self.pre.install.clone(),
            user: self.pre.user.clone(),
            journal: self.journal,
            cgroups: self.pre.cgroups.clone(),
            run_token: self.run_id.clone(),
            socket_dir: socket_dir.clone(),
            port: 5432,
            logs_dir: self.results.logs_dir(),
            cancel: self.interrupts.cancel.clone(),
            drop_caches: true,
            watchdog_grace: self.exp.watchdog_grace,
            throttles,
        };
        dataset::make_owned_dir(&env, &socket_dir).map_err(|e| anyhow!("{e}"))?;
        let matrix = matrix_spec(self.exp, plan, Some(&provisioned), host::hardware_threads());
        let runs = self.runs.clone();

        // Data sets: built once each.
        let t0 = Instant::now();
        let mut goldens: HashMap<String, Golden> = HashMap::new();
        let load_settings = self.exp.profiles.first().map(|p| p.profile.settings.clone()).unwrap_or_default();
        for w in &matrix.workloads {
            let spec = w.dataset(&matrix.tablespace_roles());
            let key = spec.key();
            if goldens.contains_key(&key) {
                continue;
            }
            eprintln!("building data set {key} once (it is then copied onto every placement)");
            let mut last = Instant::now();
            let golden = dataset::build_golden(
                &env,
                &spec,
                &self.ctx.work_dir.join("golden").join(&key),
                &load_settings,
                &mut |line| {
                    if last.elapsed().as_secs() >= 5 {
                        eprintln!("  {line}");
                        last = Instant::now();
                    }
                },
            )
            .await
            .map_err(|e| anyhow!("building data set {key}: {e}"))?;
            eprintln!(
                "  data set {key}: database {:.0} MiB, built in {:.1} s",
                golden.database_size_bytes as f64 / 1048576.0,
                golden.build_seconds
            );
            self.manifest.datasets.push(DatasetRecord {
                key: key.clone(),
                command: golden.command.clone(),
                database_size_bytes: golden.database_size_bytes,
                pgdata_size_bytes: golden.pgdata_size_bytes,
                build_seconds: golden.build_seconds,
                relocate_seconds: BTreeMap::new(),
            });
            self.fits_in_memory_warning(&golden);
            goldens.insert(key, golden);
        }
        self.manifest.phase_seconds.insert("load".into(), t0.elapsed().as_secs_f64());
        self.write_manifest()?;

        // Runs. When resuming, finished runs are kept and an interrupted one is set aside.
        let done: std::collections::HashSet<String> = if self.previous.is_some() {
            self.results
                .read_runs()
                .map(|r| r.into_iter().filter(|r| r.status == RunStatus::Ok).map(|r| r.run_id).collect())
                .unwrap_or_default()
        } else {
            Default::default()
        };
        if self.previous.is_some() {
            set_aside_unfinished(&self.results, &done)?;
            eprintln!("resuming: {} of {} runs already finished; they are kept", done.len(), runs.len());
        }
        let mut progress = MatrixProgress::new(runs.len() - done.len().min(runs.len()));
        let mut broken: HashMap<String, String> = HashMap::new();
        let mut placed: HashMap<String, String> = HashMap::new();
        let mut relocate_total = 0.0;
        let mut measure_total = 0.0;
        let mut failures = 0;
        for planned in &runs {
            if self.interrupts.cancelled() {
                progress.finish();
                bail!("interrupted; {} of {} runs finished", progress_done(&self.results), runs.len());
            }
            if done.contains(&planned.run_id) {
                continue;
            }
            let placement = &matrix.placements[planned.placement];
            let workload = &matrix.workloads[planned.workload];
            if let Some(why) = broken.get(&placement.name) {
                // Contained: the placement is unusable; its remaining runs are recorded as not run.
                let mut r = runner::execute::not_run(planned, workload, &format!("not run: {why}"));
                r.failure_kind = Some("placement-unusable".into());
                self.results.write_run(&r).context("write result")?;
                failures += 1;
                continue;
            }
            let key = workload.dataset(&matrix.tablespace_roles()).key();
            if placed.get(&placement.name) != Some(&key) {
                let golden = &goldens[&key];
                progress.println(&format!("copying data set {key} onto placement {}", placement.name));
                let secs =
                    dataset::relocate(&env, golden, &placement.data_dir, &placement.wal_dir, &placement.tablespaces)
                        .map_err(|e| anyhow!("{e}"))?;
                relocate_total += secs;
                if let Some(d) = self.manifest.datasets.iter_mut().find(|d| d.key == key) {
                    d.relocate_seconds.insert(placement.name.clone(), secs);
                }
                placed.insert(placement.name.clone(), key.clone());
            }
            progress.start_run(&planned.run_id);
            let t0 = Instant::now();
            let inputs = RunInputs {
                planned,
                placement,
                workload,
                profile: &matrix.profiles[planned.profile],
                memory: &matrix.memory_limits[planned.memory],
                results: &self.results,
                faults: &self.faults_for(planned.sequence, &provisioned),
            };
            let record = match execute_run(&env, &inputs, &mut progress).await {
                Ok(r) => r,
                Err(RunnerError::Cancelled) => {
                    progress.finish();
                    bail!(
                        "interrupted during run {}; {} of {} runs finished",
                        planned.run_id,
                        progress_done(&self.results),
                        runs.len()
                    );
                }
                Err(e) => {
                    progress.finish();
                    return Err(anyhow!("run {}: {e}", planned.run_id));
                }
            };
            measure_total += t0.elapsed().as_secs_f64();
            let line = match record.status {
                RunStatus::Ok => {
                    format!("{:.1} tps, {:.3} ms average latency", record.metrics.tps, record.metrics.latency_ms_avg)
                }
                RunStatus::Failed => {
                    failures += 1;
                    format!("FAILED: {}", record.failure.as_deref().unwrap_or("unknown"))
                }
            };
            progress.finish_run(&line);
            if record.failure_kind.as_deref() == Some("server-start") {
                let why = format!(
                    "placement {} unusable since run {}: its server did not start ({})",
                    placement.name,
                    planned.run_id,
                    record.failure.as_deref().unwrap_or("")
                );
                progress.println(&format!("  {why}; its remaining runs are skipped"));
                self.manifest.warnings.push(why.clone());
                if placement.name == self.exp.baseline {
                    progress.finish();
                    let _ = report::refresh_tables(&self.results.root);
                    bail!("{why}; the baseline is needed for every delta, so the matrix stops here");
                }
                broken.insert(placement.name.clone(), why);
            }
            if let Err(e) = report::refresh_tables(&self.results.root) {
                progress.println(&format!("  warning: could not refresh the tables: {e}"));
            }
        }
        progress.finish();
        self.manifest.phase_seconds.insert("relocate".into(), relocate_total);
        self.manifest.phase_seconds.insert("measure".into(), measure_total);
        if failures > 0 {
            self.manifest.warnings.push(format!("{failures} run(s) failed; see their failure column and runs/<id>/"));
            // The matrix ran to its end; only some of its runs failed.
            self.manifest.finished_at = Some(timestamp::now_rfc3339());
            bail!(
                "{failures} of {} runs failed (each with its reason in runs.csv and its evidence in runs/<id>/); the report covers the rest",
                runs.len()
            );
        }
        Ok(())
    }

    /// The faults the experiment file injects into run number `sequence`, made concrete.
    fn faults_for(&self, sequence: u32, provisioned: &Provisioned) -> Vec<Fault> {
        use experiment::FaultKind;
        self.exp
            .faults
            .iter()
            .filter(|f| f.run == sequence)
            .filter_map(|f| {
                let dev = f.device.as_deref().and_then(|d| provisioned.device(d));
                let (action, description) = match f.kind {
                    FaultKind::IoErrors => (
                        FaultAction::CreateFile(tiers::build::error_file(&self.ctx, f.device.as_deref()?)),
                        format!("every I/O of {} fails with EIO (nbdkit error filter)", f.device.as_deref()?),
                    ),
                    FaultKind::FillDevice => {
                        let name = f.device.as_deref()?;
                        // A WAL device: the server is also made to need a new segment file soon.
                        let holds_wal = self.exp.placements.iter().any(|p| p.wal == name);
                        (
                            FaultAction::FillFilesystem { dir: dev?.mountpoint.clone(), switch_wal: holds_wal },
                            format!(
                                "the filesystem of {name} is filled up{}",
                                if holds_wal { " (and WAL segment switches are requested)" } else { "" }
                            ),
                        )
                    }
                    FaultKind::KillServer => {
                        (FaultAction::KillServer, "the PostgreSQL server is killed (SIGKILL)".into())
                    }
                    FaultKind::StopTarget => {
                        let (_, process) = dev?.helpers.iter().find(|(l, _)| l == "nbdkit")?;
                        (
                            FaultAction::KillProcess { label: "nbdkit".into(), process: *process },
                            format!("the target of {} goes away (nbdkit killed)", f.device.as_deref()?),
                        )
                    }
                    FaultKind::HangClient => (FaultAction::StopClient, "the pgbench client hangs (SIGSTOP)".into()),
                };
                Some(Fault { after: f.after, action, description })
            })
            .collect()
    }

    /// I/O caps for devices that emulate a slower class, by device number.
    fn throttles(&self, provisioned: &Provisioned) -> Result<Vec<BlkioThrottle>> {
        use std::os::unix::fs::MetadataExt;
        let mut out = Vec::new();
        for spec in self.exp.used_devices() {
            let Some(t) = &spec.throttle else { continue };
            let dev =
                provisioned.device(&spec.name).ok_or_else(|| anyhow!("device {} was not provisioned", spec.name))?;
            let rdev = std::fs::metadata(&dev.block_device)
                .with_context(|| format!("stat {}", dev.block_device.display()))?
                .rdev();
            out.push(BlkioThrottle {
                device: spec.name.clone(),
                major: nix::sys::stat::major(rdev) as u32,
                minor: nix::sys::stat::minor(rdev) as u32,
                read_iops: t.read_iops,
                write_iops: t.write_iops,
                read_bytes_per_sec: t.read_bytes_per_sec,
                write_bytes_per_sec: t.write_bytes_per_sec,
            });
        }
        Ok(out)
    }

    fn fits_in_memory_warning(&mut self, g: &Golden) {
        let host_mem = self.manifest.host.memory_bytes;
        for limit in &self.exp.memory_limits {
            let limit = &limit.bytes;
            let available = limit.unwrap_or(host_mem);
            if g.database_size_bytes <= available {
                self.manifest.warnings.push(format!(
                    "data set {} ({:.0} MiB) fits in the server's memory ({}): reads are served from memory after warm-up, so read-only results do not exercise storage; use a memory limit well below the data set",
                    g.spec.key(),
                    g.database_size_bytes as f64 / 1048576.0,
                    runner::matrix::memory_label(*limit)
                ));
            }
        }
    }

    fn init_manifest(&mut self, plan: &tiers::Plan) {
        let exp = self.exp;
        let host = host::collect();
        // Exactly the tools this run uses: those the plan requires, and fio for the probes.
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
        let runs = &self.runs;
        self.manifest = Manifest {
            pgtier_version: env!("CARGO_PKG_VERSION").into(),
            git_commit: git_commit(),
            command_line: format!("cargo xtask {}", std::env::args().skip(1).collect::<Vec<_>>().join(" ")),
            experiment_name: exp.name.clone(),
            experiment_description: exp.description.clone(),
            experiment_file: exp.file.display().to_string(),
            baseline: exp.baseline.clone(),
            emulated: exp.emulated,
            repetitions: exp.repetitions,
            order: match exp.order {
                runner::matrix::Order::Interleaved => "interleaved".into(),
                runner::matrix::Order::Sequential => "sequential".into(),
            },
            resolved_config: serde_json::to_value(exp).unwrap_or_default(),
            started_at: timestamp::rfc3339(self.started),
            finished_at: None,
            host,
            postgres: PostgresInfo {
                version: self.pre.install.version(),
                bin_dir: self.pre.install.bin_dir.display().to_string(),
                profiles: exp.profiles.iter().map(|p| (p.profile.name.clone(), p.profile.settings.clone())).collect(),
                skipped_settings: exp
                    .profiles
                    .iter()
                    .flat_map(|p| {
                        p.skipped.iter().map(move |(k, why)| format!("{} (profile {}): {why}", k, p.profile.name))
                    })
                    .collect(),
            },
            tools: host::tool_versions(&self.pre.install.bin_dir, &programs),
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
                })
                .collect(),
            datasets: vec![],
            run_order: runs.iter().map(|r| r.run_id.clone()).collect(),
            planned_cells: runs.iter().map(|r| (r.run_id.clone(), r.cell.clone())).collect(),
            phase_seconds: BTreeMap::new(),
            resumed_at: vec![],
            kernel_changes: vec![],
            warnings: exp.warnings.clone(),
            measurement: results::manifest::MeasurementRecord {
                design: exp.measurement.design.as_str().into(),
                equivalence_margin_pct: exp.measurement.equivalence_margin_pct,
                target_halfwidth_pct: exp.measurement.target_halfwidth_pct,
                budget_s: exp.measurement.budget.map(|b| b.as_secs_f64()),
                ..Default::default()
            },
        };
        if let Some(prev) = &self.previous {
            self.manifest.started_at = prev.started_at.clone();
            self.manifest.resumed_at = prev.resumed_at.clone();
            self.manifest.resumed_at.push(timestamp::rfc3339(self.started));
            self.manifest.device_probes = prev.device_probes.clone();
            self.manifest.warnings.push(format!(
                "this result set was resumed ({}): the runs after the interruption were made on freshly provisioned devices with a freshly loaded data set",
                self.manifest.resumed_at.join(", ")
            ));
        }
    }

    /// Writes the final manifest and renders the report; returns a short text summary.
    fn finish_report(&mut self, finished: bool) -> Result<String> {
        if !self.results.manifest().exists() {
            return Ok(String::new());
        }
        if finished {
            self.manifest.finished_at = Some(timestamp::now_rfc3339());
        }
        let t0 = Instant::now();
        self.write_manifest()?;
        let (summary, files) = report::render(&self.results.root).map_err(|e| anyhow!("{e}"))?;
        self.manifest.phase_seconds.insert("report".into(), t0.elapsed().as_secs_f64());
        self.write_manifest()?;
        let mut text = report::text::summary_table(&summary);
        let mut warnings = self.manifest.warnings.clone();
        warnings.extend(summary.warnings.iter().cloned());
        for w in &warnings {
            text.push_str(&format!("warning: {w}\n"));
        }
        text.push_str(&format!("{} files written; report: {}\n", files.len(), self.results.report_md().display()));
        Ok(text)
    }
}

fn progress_done(results: &ResultsDir) -> usize {
    results.read_runs().map(|r| r.len()).unwrap_or(0)
}

fn git_commit() -> Option<String> {
    journal::CommandLine::new("git")
        .args(["-C", &paths::repo_root().display().to_string(), "rev-parse", "--short", "HEAD"])
        .output(Some(std::time::Duration::from_secs(5)))
        .ok()
        .filter(|o| o.status == 0)
        .map(|o| o.stdout.trim().to_string())
}

fn device_record(d: &tiers::ProvisionedDevice) -> DeviceRecord {
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
            tiers::DaxPolicy::Off => "off".into(),
            tiers::DaxPolicy::Optional => "optional".into(),
            tiers::DaxPolicy::Required => "required".into(),
        },
        dax_honoured: d.mount.dax.honoured,
        dax_note: d.mount.dax.note.clone(),
        throttle: None,
        facts: serde_json::to_value(&d.facts).unwrap_or_default(),
    }
}

fn write_provision_log(dir: &Path, p: &Provisioned) -> Result<()> {
    let mut s = String::new();
    for c in &p.commands {
        s.push_str(&format!("## step {} ({:.2} s, exit {})\n$ {}\n", c.step, c.seconds, c.status, c.command));
        if !c.stdout.trim().is_empty() {
            s.push_str(&c.stdout);
            if !c.stdout.ends_with('\n') {
                s.push('\n');
            }
        }
        if !c.stderr.trim().is_empty() {
            s.push_str("stderr:\n");
            s.push_str(&c.stderr);
            if !c.stderr.ends_with('\n') {
                s.push('\n');
            }
        }
        s.push('\n');
    }
    std::fs::write(dir.join("provision.log"), s).context("write provision.log")
}

fn describe_throttle(t: &BlkioThrottle) -> String {
    let mut parts = Vec::new();
    for (name, v) in [("read IOPS", t.read_iops), ("write IOPS", t.write_iops)] {
        if let Some(v) = v {
            parts.push(format!("{name} <= {v}"));
        }
    }
    for (name, v) in [("read", t.read_bytes_per_sec), ("write", t.write_bytes_per_sec)] {
        if let Some(v) = v {
            parts.push(format!("{name} <= {:.1} MiB/s", v as f64 / 1048576.0));
        }
    }
    format!(
        "cgroup blkio throttle on {}:{} for the server's processes: {} (direct and fsync'd I/O only; cgroup v1 does not attribute buffered writeback)",
        t.major,
        t.minor,
        parts.join(", ")
    )
}

/// Moves run directories without a finished record (an interrupted run) to `interrupted/`,
/// so that the run is made again and its partial output is kept as evidence.
fn set_aside_unfinished(results: &ResultsDir, done: &std::collections::HashSet<String>) -> Result<()> {
    let Ok(rd) = std::fs::read_dir(results.runs_dir()) else { return Ok(()) };
    for e in rd.flatten() {
        let id = e.file_name().to_string_lossy().into_owned();
        let finished = e.path().join("result.json").exists();
        if done.contains(&id) || !e.path().is_dir() {
            continue;
        }
        let to = results.root.join("interrupted").join(format!("{id}-{}", timestamp::compact(SystemTime::now())));
        std::fs::create_dir_all(to.parent().expect("has a parent"))?;
        std::fs::rename(e.path(), &to).with_context(|| format!("set aside {}", e.path().display()))?;
        eprintln!(
            "resuming: {} {} is made again (its earlier output is kept in {})",
            id,
            if finished { "failed and" } else { "was cut off and" },
            to.display()
        );
    }
    Ok(())
}
