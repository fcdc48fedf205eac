//! The command line resolved, before anything is checked on the machine: the experiment (and
//! with --resume the result set it continues), the run's identity, the results directory, the
//! provisioning plan (with the golden copy's room check on a real device), the planned runs and
//! where the golden copies go. Touches nothing.

use std::path::PathBuf;
use std::time::SystemTime;

use experiment::{Experiment, LoadOptions};
use results::{Manifest, ResultsDir, timestamp};
use runner::matrix::{DeviceRole, MatrixSpec, PlacementTarget, PlannedRun, plan_runs};
use runner::{DbUser, RunnerError};
use tiers::{Plan, PlanContext, Provisioned, build_plan};

use super::Args;
use super::golden::{self, GoldenSite};
use crate::error::CompareError;
use crate::measurement::MeasurementArgs;
use crate::record::short_token;
use crate::{host, paths};

pub struct Setup {
    pub exp: Experiment,
    /// The manifest of the interrupted result set being resumed.
    pub previous: Option<Manifest>,
    pub started: SystemTime,
    pub run_id: String,
    pub results_dir: PathBuf,
    /// The database's OS user (its absence is a preflight error; a dry run only notes it).
    pub user: Result<DbUser, RunnerError>,
    pub ctx: PlanContext,
    pub plan: Plan,
    /// The matrix with the plan's mount points (device kernel names are not known yet).
    pub matrix: MatrixSpec,
    /// The planned runs, in execution order (design `slices`: one per cell; the slices
    /// themselves are decided as the run goes).
    pub runs: Vec<PlannedRun>,
    /// The seed of the run order.
    pub seed: u64,
    /// Where the data sets' golden copies are built.
    pub golden: GoldenSite,
}

impl Setup {
    pub fn resolve(args: &Args) -> Result<Setup, CompareError> {
        let threads = host::hardware_threads();
        let (mut exp, previous) = load(args, threads)?;
        apply_overrides(&mut exp, &args.measurement)?;
        // A resumed result set repeats its recorded order.
        let seed =
            args.measurement.seed.or(previous.as_ref().and_then(|p| p.measurement.seed)).unwrap_or_else(fresh_seed);
        for w in &exp.warnings {
            eprintln!("warning: {w}");
        }
        let started = SystemTime::now();
        // Unique even for two runs of one experiment started in the same second (cgroups, network
        // namespaces and work directories are machine-wide).
        let stamp = format!("{}-{}", exp.name, timestamp::compact(started));
        let short_id = short_token(&stamp);
        let run_id = format!("{stamp}-{short_id}");
        crate::remote::target::attach_shells(&mut exp, &short_id);
        let results_dir = match (&args.resume, &args.out) {
            (Some(r), _) => r.clone(),
            (None, Some(o)) => o.clone(),
            (None, None) => {
                paths::results_root().join(&exp.name).join(format!("{}-{short_id}", timestamp::compact(started)))
            }
        };
        // A new result set never mixes with an old one: only --resume continues a directory.
        if args.resume.is_none()
            && !args.dry_run
            && std::fs::read_dir(&results_dir).map(|mut d| d.next().is_some()).unwrap_or(false)
        {
            return Err(CompareError::OutNotEmpty(results_dir));
        }
        let user = DbUser::lookup(&exp.os_user);
        let (uid, gid) = match &user {
            Ok(u) => (u.uid, u.gid),
            Err(_) => (0, 0),
        };
        let mut devices: Vec<tiers::DeviceSpec> = exp.used_devices().into_iter().cloned().collect();
        // No position: the emulated stand-ins are made in an order drawn from the seed (which
        // one gets the first loop device, zram id, link and port), recorded in the manifest.
        if args.emulate {
            runner::matrix::SplitMix64::new(seed ^ DEVICE_ORDER_SALT).shuffle(&mut devices);
        }
        let ctx = PlanContext {
            short_id,
            work_dir: paths::work_root().join(&run_id),
            log_dir: results_dir.join("logs"),
            owner_uid: uid,
            owner_gid: gid,
            emulate: args.emulate,
        };
        let mut plan = build_plan(&devices, &ctx);
        golden::add_room_check(&exp, &mut plan);
        let golden = golden::site(&exp, &plan, &run_id);
        let matrix = matrix_spec(&exp, &plan, None, threads, seed);
        let runs = match exp.measurement.design {
            experiment::Design::Runs => plan_runs(&matrix),
            experiment::Design::Slices => plan_runs(&MatrixSpec { repetitions: 1, ..matrix.clone() }),
        };
        Ok(Setup { exp, previous, started, run_id, results_dir, user, ctx, plan, matrix, runs, seed, golden })
    }
}

/// The experiment, and with --resume the manifest of the result set it continues (whose
/// experiment file is the default).
fn load(args: &Args, threads: u32) -> Result<(Experiment, Option<Manifest>), CompareError> {
    let previous = match &args.resume {
        None => None,
        Some(dir) => Some(
            ResultsDir::new(dir)
                .read_manifest()
                .map_err(|source| CompareError::ResumeUnreadable { dir: dir.clone(), source })?,
        ),
    };
    let config = match (&args.config, &previous) {
        (Some(c), _) => c.clone(),
        (None, Some(m)) => PathBuf::from(&m.experiment_file),
        (None, None) => return Err(CompareError::NoConfig),
    };
    paths::use_experiment_file(&config);
    let opts = LoadOptions { emulate: args.emulate, configs_dir: paths::configs_dir(), hardware_threads: threads };
    let mut exp = experiment::load(&config, &opts).map_err(CompareError::Config)?;
    if let Some(name) = &args.as_host {
        if !exp.server_hosts().iter().any(|h| &h.name == name) {
            return Err(CompareError::BadArgument(format!(
                "--as-host {name:?}: {} has no [[host]] of that name with roles = [\"server\"]",
                config.display()
            )));
        }
        exp.as_server_host();
    }
    if let Some(twins) = args.calibrate {
        if !exp.server_hosts().is_empty() {
            return Err(CompareError::BadArgument(format!(
                "calibrate: {} runs on server hosts (a fleet); calibrating a fleet is not supported yet: run `pgtier calibrate` on each host with a file of its own",
                config.display()
            )));
        }
        exp = exp.calibration_form(twins);
    }
    Ok((exp, previous))
}

/// The command line's `--design`, `--budget` and `--target-halfwidth` over the file's
/// `[measurement]`.
fn apply_overrides(exp: &mut Experiment, m: &MeasurementArgs) -> Result<(), CompareError> {
    let bad = |what: &str, v: &str, how: &str| CompareError::BadArgument(format!("{what} {v:?}: {how}"));
    if let Some(d) = &m.design {
        exp.measurement.design =
            experiment::Design::from_word(d).ok_or_else(|| bad("--design", d, "use slices or runs"))?;
    }
    if let Some(b) = &m.budget {
        // The file's units and minimum: a bare number is refused (12 could mean minutes).
        let d = experiment::units::parse_duration_with_unit(b).map_err(|e| bad("--budget", b, &e))?;
        let least = exp.measurement.slice * 4;
        if d < least {
            return Err(bad(
                "--budget",
                b,
                &format!(
                    "the budget must hold at least a few rounds of slices ({} s at least with {} s slices); give minutes, e.g. \"13min\"",
                    least.as_secs(),
                    exp.measurement.slice.as_secs()
                ),
            ));
        }
        exp.measurement.budget = Some(d);
    }
    if let Some(t) = &m.target_halfwidth {
        let v = experiment::units::parse_percent(t)
            .filter(|v| *v > 0.0 && *v < 100.0)
            .ok_or_else(|| bad("--target-halfwidth", t, "give a percentage such as 5%"))?;
        exp.measurement.target_halfwidth_pct = Some(v);
    }
    Ok(())
}

/// Mixed into the seed for the order the emulated devices are made in, so that it is not the
/// run order's first draw.
const DEVICE_ORDER_SALT: u64 = 0xde71_ce0f_0bde_5eed;

/// A seed nobody chose: the clock and the process id.
fn fresh_seed() -> u64 {
    let nanos = SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(0);
    nanos ^ ((std::process::id() as u64) << 32)
}

/// The matrix as the runner sees it; directories come from the plan's mount points.
pub fn matrix_spec(
    exp: &Experiment,
    plan: &Plan,
    provisioned: Option<&Provisioned>,
    threads: u32,
    seed: u64,
) -> MatrixSpec {
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
                profile: p.profile.as_ref().map(|i| i.profile.clone()),
                // Filled per session with the build's installation (`Session::build_target`).
                install: None,
            }
        })
        .collect();
    MatrixSpec {
        placements,
        workloads: exp.workloads.clone(),
        memory_limits: exp.memory_limits.clone(),
        profiles: exp.profiles.iter().map(|p| p.profile.clone()).collect(),
        builds: matrix_builds(exp),
        repetitions: exp.repetitions,
        order: exp.order,
        cores: threads,
        seed: Some(seed),
    }
}

/// The builds the matrix runs as a dimension; when the placements name their builds, one
/// context (`default`, the first build's binaries) in which each placement runs its own.
fn matrix_builds(exp: &Experiment) -> Vec<runner::matrix::BuildTarget> {
    let target =
        |b: &experiment::Build| runner::matrix::BuildTarget { name: b.name.clone(), bin_dir: b.bin_dir.clone() };
    match exp.matrix_builds() {
        [] => exp
            .builds
            .iter()
            .take(1)
            .map(|b| runner::matrix::BuildTarget { name: runner::matrix::DEFAULT_BUILD.into(), ..target(b) })
            .collect(),
        builds => builds.iter().map(target).collect(),
    }
}
