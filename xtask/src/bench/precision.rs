//! `cargo xtask bench precision`: for each measurement design, how wide is a change's 95%
//! interval per minute of machine time, and how often does an A/A experiment (placements on
//! identical emulated devices) call them different? Every trial runs the real pipeline
//! (`cargo xtask compare --emulate` as a child process, on its own emulated devices) for two
//! generated experiments: the emulated seed-000 TPC-B cells (three placements, two memory
//! limits) and an A/A experiment (four placements on identical loop devices). Designs alternate
//! inside every trial (their order rotated), so the machine's state lands on each alike. The
//! figures go to `results/bench-precision/<time>/precision.md`, next to every result set.

use std::path::Path;
use std::process::ExitCode;
use std::time::{Instant, SystemTime};

use anyhow::{Context, Result, bail};
use results::timestamp;
use stats::Verdict;

use pgtier::paths;

mod aa;
use aa::aa_rates;

/// What to compare.
pub struct PrecisionArgs {
    pub trials: u32,
    pub aa_trials: u32,
    /// `runs`, `slices`, `slices:<slice>` (e.g. `slices:2s`), or `shipped` (the main job's own
    /// `[emulate.measurement]`: 2 s slices, warm-up rule, pilot, ±5% target, with `budget`),
    /// optionally with workload changes whose precision per minute is in question:
    /// `shipped+prepared` (pgbench `-M prepared`), `shipped+c4` (4 clients instead of 8),
    /// `shipped+pinned` (pgbench on CPU 0, the servers on the others).
    pub designs: Vec<String>,
    /// The slices designs' budget per experiment.
    pub budget: String,
    /// Before the trials, `calibrate --runs N` of each design's A/A experiment, kept in the
    /// campaign's own calibration directory, which every trial then uses (0: none; the trials
    /// use the host's calibration, if any).
    pub calibrate_runs: u32,
    /// Re-read the result sets of an earlier campaign in this directory instead of running one.
    pub from: Option<std::path::PathBuf>,
    /// With `from`: estimate every result set with this estimator instead of the one it
    /// recorded (the same rounds under another rule).
    pub estimator: Option<results::manifest::Estimator>,
    /// With `from`: the estimator's cut moves on past warm-up curves of at most this time
    /// constant (rounds) instead of the shipped one (a candidate rule replayed on real rounds).
    pub cut_tau: Option<f64>,
}

/// Throughput in each second of a slice relative to the slice's mean, per placement: a
/// placement whose idle time between slices lets write-back catch up starts its slices faster
/// than it ends them.
struct SliceProfile {
    experiment: &'static str,
    design: String,
    placement: String,
    relative: Vec<f64>,
    slices: usize,
}

/// One delta of one trial.
struct Row {
    experiment: &'static str,
    design: String,
    trial: u32,
    cell: String,
    placement: String,
    pct: f64,
    low: f64,
    high: f64,
    verdict: Verdict,
    /// The change's standard error on the log scale (the estimator's own).
    se: f64,
    method: &'static str,
    /// The whole command's wall time, seconds.
    wall_s: f64,
    rounds: usize,
    /// The machine's 1-minute load average when the experiment started.
    load: Option<f64>,
    /// The contender's place in the first session's server start order minus the baseline's
    /// (negative: started before it); None when not recorded.
    start_step: Option<i32>,
    /// The contender's data device's place in the order the emulated devices were made minus the
    /// baseline's data device's.
    device_step: Option<i32>,
}

pub fn precision(args: PrecisionArgs) -> ExitCode {
    if args.from.is_none() && !nix::unistd::geteuid().is_root() {
        eprintln!("error: the benchmark provisions emulated devices and needs root");
        return ExitCode::FAILURE;
    }
    let out = paths::repo_root().join("results").join("bench-precision").join(timestamp::compact(SystemTime::now()));
    let done = match &args.from {
        Some(dir) => reread(&args, dir),
        None => run(&args, &out),
    };
    match done {
        Ok(text) => {
            print!("{text}");
            println!("{}", out.display());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {}", pgtier::error_chain::chain(&e));
            ExitCode::FAILURE
        }
    }
}

fn run(args: &PrecisionArgs, out: &Path) -> Result<String> {
    std::fs::create_dir_all(out).with_context(|| format!("create {}", out.display()))?;
    // Its own copy of this binary: a rebuild of the checkout meanwhile does not change what runs.
    let exe = out.join("xtask");
    std::fs::copy(std::env::current_exe()?, &exe).context("copy the xtask binary")?;
    let mut rows: Vec<Row> = Vec::new();
    let mut profiles: Vec<SliceProfile> = Vec::new();
    let mut plan: Vec<(&'static str, u32)> = Vec::new();
    // A failed trial (a full disk, a crashed server) is said and left out; the campaign goes on.
    let mut failed: Vec<String> = Vec::new();
    for t in 1..=args.trials.max(args.aa_trials) {
        if t <= args.trials {
            plan.push(("seed000-tpcb", t));
        }
        if t <= args.aa_trials {
            plan.push(("aa", t));
        }
    }
    // Every design understood before the first trial runs.
    for design in &args.designs {
        experiment_text("aa", design, &args.budget)?;
    }
    let started = Instant::now();
    // The campaign's own calibrations, apart from the host's.
    let calibrations = out.join("calibration");
    if args.calibrate_runs > 0 {
        for design in &args.designs {
            let config = out.join(format!("aa-{}.toml", dir_name(design)));
            std::fs::write(&config, experiment_text("aa", design, &args.budget)?)?;
            eprintln!(
                "[bench precision] calibrate design {design}: {} A/A runs (elapsed {:.0} s)",
                args.calibrate_runs,
                started.elapsed().as_secs_f64()
            );
            let log = out.join(format!("calibrate-{}.log", dir_name(design)));
            let status = std::process::Command::new(&exe)
                .args(["calibrate", "--config"])
                .arg(&config)
                .args(["--emulate", "--runs", &args.calibrate_runs.to_string(), "--budget", &args.budget])
                .env("PGTIER_CALIBRATION_DIR", &calibrations)
                .stdout(std::fs::File::create(log.with_extension("out"))?)
                .stderr(std::fs::File::create(&log)?)
                .status()
                .context("run calibrate")?;
            if !status.success() {
                bail!("calibrate of design {design} failed; see {}", log.display());
            }
        }
    }
    for (n, (experiment, trial)) in plan.iter().enumerate() {
        // Rotate the designs' order from one trial to the next.
        let k = args.designs.len();
        for i in 0..k {
            let design = &args.designs[(i + n) % k];
            let dir = out.join(format!("{experiment}-t{trial}-{}", dir_name(design)));
            let config = out.join(format!("{experiment}-{}.toml", dir_name(design)));
            std::fs::write(&config, experiment_text(experiment, design, &args.budget)?)?;
            eprintln!(
                "[bench precision] {experiment} trial {trial}, design {design} (elapsed {:.0} s)",
                started.elapsed().as_secs_f64()
            );
            let t0 = Instant::now();
            let mut compare = std::process::Command::new(&exe);
            if args.calibrate_runs > 0 {
                compare.env("PGTIER_CALIBRATION_DIR", &calibrations);
            }
            let status = compare
                .args(["compare", "--config"])
                .arg(&config)
                .args(["--emulate", "--out"])
                .arg(&dir)
                .stdout(std::process::Stdio::null())
                .stderr(std::fs::File::create(dir.with_extension("log"))?)
                .status()
                .context("run compare")?;
            let wall = t0.elapsed().as_secs_f64();
            std::fs::write(dir.with_extension("wall"), format!("{wall:.1}\n"))?;
            if status.success() {
                rows.extend(read_rows(&dir, experiment, design, *trial, wall, (None, None))?);
                profiles.extend(slice_profiles(&dir, experiment, design)?);
            } else {
                let why = format!(
                    "{experiment} trial {trial}, design {design}: compare failed (exit {}); see {}",
                    status.code().map_or("by a signal".to_string(), |c| c.to_string()),
                    dir.with_extension("log").display()
                );
                eprintln!("[bench precision] {why}; left out, going on");
                failed.push(why);
            }
            let text = render(args, &rows, &profiles, &failed, started.elapsed().as_secs_f64());
            std::fs::write(out.join("precision.md"), text)?;
        }
    }
    if rows.is_empty() && !failed.is_empty() {
        bail!("every trial failed: {}", failed.join("; "));
    }
    Ok(render(args, &rows, &profiles, &failed, started.elapsed().as_secs_f64()))
}

/// The figures of an earlier campaign's directory, read again (`--from DIR`): every
/// `<experiment>-t<trial>-<design>` result set in it, of the designs asked for. The wall time is
/// the one the campaign wrote beside each set, else the manifest's start to finish.
fn reread(args: &PrecisionArgs, dir: &Path) -> Result<String> {
    let mut rows = Vec::new();
    let mut profiles = Vec::new();
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .with_context(|| format!("read {}", dir.display()))?
        .filter_map(|e| e.ok())
        .filter(|e| e.path().join("manifest.json").is_file())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    for name in names {
        let Some((experiment, trial, design)) = campaign_entry(&name, &args.designs) else { continue };
        let set_dir = dir.join(&name);
        let wall = match std::fs::read_to_string(set_dir.with_extension("wall")) {
            Ok(t) => t.trim().parse().ok(),
            Err(_) => manifest_wall(&set_dir),
        };
        // Neither the campaign's wall time nor a finish in the manifest: still running (or
        // killed); its figures are not an experiment's.
        let Some(wall) = wall else { continue };
        rows.extend(read_rows(&set_dir, experiment, &design, trial, wall, (args.estimator, args.cut_tau))?);
        profiles.extend(slice_profiles(&set_dir, experiment, &design)?);
    }
    if rows.is_empty() {
        bail!("{} holds no result set of the designs {}", dir.display(), args.designs.join(","));
    }
    rows.sort_by(|a, b| (a.experiment, a.trial, &a.design).cmp(&(b.experiment, b.trial, &b.design)));
    Ok(render(args, &rows, &profiles, &[], f64::NAN))
}

/// A design as file and directory names spell it: `:` as `-`, `%` as `pct` and `.` as `_`
/// (so that `Path::with_extension` of a result set's directory keeps the whole name).
fn dir_name(design: &str) -> String {
    design.replace(':', "-").replace('%', "pct").replace('.', "_")
}

/// `aa-t12-shipped` -> ("aa", 12, "shipped") when the design is one of `designs` (their `:`
/// spelled as [`dir_name`] spells them).
fn campaign_entry(name: &str, designs: &[String]) -> Option<(&'static str, u32, String)> {
    let (experiment, rest) = ["seed000-tpcb", "aa"]
        .into_iter()
        .find_map(|e| name.strip_prefix(e).and_then(|r| r.strip_prefix("-t")).map(|r| (e, r)))?;
    let (trial, design) = rest.split_once('-')?;
    let design = designs.iter().find(|d| dir_name(d) == design)?;
    Some((experiment, trial.parse().ok()?, design.clone()))
}

/// Seconds from the manifest's `started_at` to its `finished_at` (RFC 3339, UTC).
fn manifest_wall(dir: &Path) -> Option<f64> {
    let m: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(dir.join("manifest.json")).ok()?).ok()?;
    let secs = |key: &str| -> Option<f64> {
        let t = m.get(key)?.as_str()?;
        let (date, time) = t.trim_end_matches('Z').split_once('T')?;
        let d: Vec<u32> = date.split('-').map(|x| x.parse().ok()).collect::<Option<_>>()?;
        let c: Vec<f64> = time.split(':').map(|x| x.parse().ok()).collect::<Option<_>>()?;
        let days = results::timestamp::days_from_civil(i64::from(*d.first()?), *d.get(1)?, *d.get(2)?);
        Some(days as f64 * 86_400.0 + c.first()? * 3600.0 + c.get(1)? * 60.0 + c.get(2)?)
    };
    Some(secs("finished_at")? - secs("started_at")?)
}

/// Each placement's per-second profile of its slices (none for a result set measured in runs).
fn slice_profiles(dir: &Path, experiment: &'static str, design: &str) -> Result<Vec<SliceProfile>> {
    let set = report::ResultSet::load(dir).with_context(|| format!("read {}", dir.display()))?;
    let mut out = Vec::new();
    if set.manifest.measurement.design != results::manifest::Design::Slices {
        return Ok(out);
    }
    for placement in set.placements() {
        let mut sums: Vec<f64> = Vec::new();
        let mut counts: Vec<usize> = Vec::new();
        let mut slices = 0;
        for r in set.runs.iter().filter(|r| r.cell.placement == placement && r.status == results::RunStatus::Ok) {
            let tps: Vec<f64> = r.series.iter().map(|s| s.tps).collect();
            let mean = tps.iter().sum::<f64>() / tps.len().max(1) as f64;
            if mean <= 0.0 {
                continue;
            }
            slices += 1;
            for (i, v) in tps.iter().enumerate() {
                if sums.len() <= i {
                    sums.push(0.0);
                    counts.push(0);
                }
                sums[i] += v / mean;
                counts[i] += 1;
            }
        }
        let relative = sums.iter().zip(&counts).map(|(s, n)| s / *n as f64).collect();
        out.push(SliceProfile { experiment, design: design.to_string(), placement, relative, slices });
    }
    Ok(out)
}

fn read_rows(
    dir: &Path,
    experiment: &'static str,
    design: &str,
    trial: u32,
    wall_s: f64,
    (estimator, cut_tau): (Option<results::manifest::Estimator>, Option<f64>),
) -> Result<Vec<Row>> {
    let mut set = report::ResultSet::load(dir).with_context(|| format!("read {}", dir.display()))?;
    if let Some(e) = estimator {
        set.manifest.measurement.estimator = e;
    }
    let mut rule = analysis::rule_of(&set.manifest.measurement);
    if let Some(tau) = cut_tau {
        rule.cut_curve_max_tau = Some(tau);
    }

    let summary = analysis::summarize_with(&set, rule);
    let load = set.manifest.host.load_average.as_deref().and_then(|l| l.split_whitespace().next()?.parse().ok());
    let steps = Steps::of(&set.manifest);
    let mut rows = Vec::new();
    for c in summary.cells.iter().filter(|c| !c.is_baseline) {
        let Some(d) = c.tps_delta else { continue };
        rows.push(Row {
            experiment,
            design: design.to_string(),
            trial,
            cell: format!("{} {}", c.key.placement, c.key.memory_limit),
            placement: c.key.placement.clone(),
            pct: d.pct,
            low: d.pct_low,
            high: d.pct_high,
            verdict: d.verdict,
            se: d.se,
            method: d.method.as_str(),
            wall_s,
            rounds: c.runs,
            load,
            start_step: steps.start(&c.key.placement),
            device_step: steps.device(&c.key.placement),
        });
    }
    Ok(rows)
}

/// Where each placement stood in the orders a session draws (server start, device creation),
/// against the baseline.
struct Steps<'m> {
    manifest: &'m results::Manifest,
    /// The first session's server start order.
    servers: Option<&'m Vec<String>>,
}

impl<'m> Steps<'m> {
    fn of(manifest: &'m results::Manifest) -> Steps<'m> {
        Steps { manifest, servers: manifest.measurement.server_order.values().next() }
    }

    fn start(&self, placement: &str) -> Option<i32> {
        let at = |p: &str| self.servers?.iter().position(|x| x == p);
        Some(at(placement)? as i32 - at(&self.manifest.baseline)? as i32)
    }

    fn device(&self, placement: &str) -> Option<i32> {
        let order = &self.manifest.measurement.device_order;
        let at = |p: &str| {
            let device = &self.manifest.placements.iter().find(|x| x.name == p)?.data_device;
            order.iter().position(|d| d == device)
        };
        Some(at(placement)? as i32 - at(&self.manifest.baseline)? as i32)
    }
}

/// The generated experiment for `experiment` measured with `design`.
fn experiment_text(experiment: &str, design: &str, budget: &str) -> Result<String> {
    let mut parts = design.split('+');
    let design = parts.next().unwrap_or(design);
    let changes: Vec<&str> = parts.collect();
    if !changes.is_empty() && design != "shipped" {
        bail!("workload changes (+{}) apply to design shipped only", changes.join("+"));
    }
    let mut measurement = match design.split_once(':').unwrap_or((design, "")) {
        ("runs", _) => "[measurement]\ndesign = \"runs\"\n".to_string(),
        ("shipped", _) => format!(
            "[measurement]\ndesign = \"slices\"\nslice = \"2s\"\nwarm_up = \"6s\"\nwarm_up_rounds = 2\nmin_rounds = 6\ntarget_halfwidth = \"5%\"\nequivalence_margin = \"5%\"\nbudget = \"{budget}\"\n"
        ),
        ("slices", slice) => format!(
            "[measurement]\ndesign = \"slices\"\nslice = \"{}\"\nwarm_up = \"8s\"\nmin_rounds = 6\nbudget = \"{budget}\"\n",
            if slice.is_empty() { "4s" } else { slice }
        ),
        _ => bail!("unknown design {design:?}: use runs, slices, slices:<slice length> or shipped"),
    };
    let mut body = match experiment {
        "seed000-tpcb" => SEED000_TPCB,
        "aa" => AA,
        _ => unreachable!("two experiments"),
    }
    .to_string();
    for change in changes {
        body = match change {
            "prepared" => body.replace("ramp_up = \"4s\"\n", "ramp_up = \"4s\"\nextra_args = [\"-M\", \"prepared\"]\n"),
            "c4" => body.replace("clients = [8]\n", "clients = [4]\n"),
            // The main job's read-only cells: select-only, all in memory when unlimited, CPU-bound;
            // named as the main job names it, whose name picks the estimator's priors.
            "readonly" => body.replace(
                "name = \"tpcb\"\nkind = \"pgbench\"\nbuiltin = \"tpcb-like\"\n",
                "name = \"read-only\"\nkind = \"pgbench\"\nbuiltin = \"select-only\"\n",
            ),
            h if h.starts_with("handicap:") => {
                // A test of the method: the servers CPU-bound at 1 CPU each life, the lives'
                // quotas spread by the percentage given (per life; a ratio of two lives spreads
                // sqrt(2) times as much).
                let spread = &h["handicap:".len()..];
                measurement.push_str(&format!("handicap_cpus = 1.0\nhandicap_spread = \"{spread}\"\n"));
                body
            }
            "pinned" => {
                // pgbench on the first CPU, the servers on the rest (on 2 CPUs: one each).
                let cpus = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
                if cpus < 2 {
                    bail!("+pinned needs at least 2 CPUs (pgbench on one, the servers on the others)");
                }
                let servers = if cpus == 2 { "1".to_string() } else { format!("1-{}", cpus - 1) };
                measurement.push_str(&format!("pin_client = \"0\"\npin_servers = \"{servers}\"\n"));
                body
            }
            other => bail!("unknown change +{other}: use +prepared, +c4, +readonly, +pinned or +handicap:<spread>"),
        };
    }
    Ok(format!("{body}\n{measurement}"))
}

/// The emulated seed-000 study's TPC-B cells, as tiers/pmem-vs-nvme.toml emulates them (3 GiB
/// devices: pmem-wal holds two placements' WAL, each of which may grow to max_wal_size).
const SEED000_TPCB: &str = r#"
[experiment]
name = "bench-precision-seed000"
baseline = "nvme"
repetitions = 3
device_probe = "0s"

[postgres]
profiles = ["seed000-tuned"]
memory_limits = ["unlimited", "192MiB"]

[[device]]
name = "nvme-data"
class = "nvme"
path = "/dev/disk/by-id/bench-nvme-data"
mount_options = ["noatime"]
[device.emulate]
size = "3GiB"

[[device]]
name = "nvme-wal"
class = "nvme"
path = "/dev/disk/by-id/bench-nvme-wal"
mount_options = ["noatime"]
[device.emulate]
size = "3GiB"

[[device]]
name = "pmem-data"
class = "pmem"
namespace = "namespace0.0"
mount_options = ["noatime"]
[device.emulate]
size = "3GiB"

[[device]]
name = "pmem-wal"
class = "pmem"
namespace = "namespace1.0"
mount_options = ["noatime"]
[device.emulate]
size = "3GiB"

[[placement]]
name = "nvme"
data = "nvme-data"
wal = "nvme-wal"

[[placement]]
name = "wal-on-pmem"
data = "nvme-data"
wal = "pmem-wal"

[[placement]]
name = "all-on-pmem"
data = "pmem-data"
wal = "pmem-wal"

[[workload]]
name = "tpcb"
kind = "pgbench"
builtin = "tpcb-like"
scale = 40
clients = [8]
threads = 2
duration = "12s"
ramp_up = "4s"

[emulate.settings]
huge_pages = "try"
shared_buffers = "64MB"
work_mem = "4MB"
max_wal_size = "1GB"
min_wal_size = "80MB"
"#;

/// Four placements on four identical loop devices: every change is 0 by construction (three
/// A/A deltas per trial).
const AA: &str = r#"
[experiment]
name = "bench-precision-aa"
baseline = "a"
repetitions = 3
device_probe = "0s"

[postgres]
profiles = ["seed000-tuned"]
memory_limits = ["unlimited"]

[[device]]
name = "da"
class = "nvme"
path = "/dev/disk/by-id/bench-a"
[device.emulate]
size = "2GiB"

[[device]]
name = "db"
class = "nvme"
path = "/dev/disk/by-id/bench-b"
[device.emulate]
size = "2GiB"

[[device]]
name = "dc"
class = "nvme"
path = "/dev/disk/by-id/bench-c"
[device.emulate]
size = "2GiB"

[[device]]
name = "dd"
class = "nvme"
path = "/dev/disk/by-id/bench-d"
[device.emulate]
size = "2GiB"

[[placement]]
name = "a"
data = "da"
wal = "da"

[[placement]]
name = "b"
data = "db"
wal = "db"

[[placement]]
name = "c"
data = "dc"
wal = "dc"

[[placement]]
name = "d"
data = "dd"
wal = "dd"

[[workload]]
name = "tpcb"
kind = "pgbench"
builtin = "tpcb-like"
scale = 40
clients = [8]
threads = 2
duration = "12s"
ramp_up = "4s"

[emulate.settings]
huge_pages = "try"
shared_buffers = "64MB"
work_mem = "4MB"
max_wal_size = "1GB"
min_wal_size = "80MB"
"#;

/// The half-width of a change's interval [low, high] (in %) as the stopping rule reads it against
/// its target: half the interval's width on the log scale h, said as exp(h) - 1, in %.
fn log_half_width(low: f64, high: f64) -> f64 {
    let h = ((1.0 + high / 100.0).ln() - (1.0 + low / 100.0).ln()) / 2.0;
    h.exp_m1() * 100.0
}

/// The figures: per design, the mean and median half-width (log scale), the half-width per minute of machine time
/// (half-width x sqrt(minutes): a design twice as long halves the variance), the A/A verdicts.
fn render(args: &PrecisionArgs, rows: &[Row], profiles: &[SliceProfile], failed: &[String], elapsed: f64) -> String {
    let mut s = String::new();
    let command = match &args.from {
        Some(dir) => format!(
            "`cargo xtask bench precision --designs {} --from {}{}{}` (the result sets of an earlier campaign, read again)",
            args.designs.join(","),
            dir.display(),
            args.estimator.map_or(String::new(), |e| format!(" --estimator {}", e.as_str())),
            args.cut_tau.map_or(String::new(), |t| format!(" --cut-tau {t}"))
        ),
        None => format!(
            "`cargo xtask bench precision --trials {} --aa-trials {} --designs {} --budget {}{}` ({elapsed:.0} s so far)",
            args.trials,
            args.aa_trials,
            args.designs.join(","),
            args.budget,
            if args.calibrate_runs > 0 { format!(" --calibrate-runs {}", args.calibrate_runs) } else { String::new() },
        ),
    };
    s.push_str(&format!("# Precision benchmark\n\n{command}\n\n"));
    if !failed.is_empty() {
        s.push_str(&format!("Trials that failed and are left out of the figures ({}):\n\n", failed.len()));
        for f in failed {
            s.push_str(&format!("- {f}\n"));
        }
        s.push('\n');
    }
    s.push_str("| experiment | design | deltas | mean / median half-width (as the target reads it) | median wall time | median half-width x sqrt(minutes) | real change / equivalent / inconclusive |\n|---|---|---:|---:|---:|---:|---|\n");
    for experiment in ["seed000-tpcb", "aa"] {
        for design in &args.designs {
            let r: Vec<&Row> = rows.iter().filter(|r| r.experiment == experiment && &r.design == design).collect();
            if r.is_empty() {
                continue;
            }
            // As the stopping rule compares an interval with its ±5% target (the log scale).
            let hw: Vec<f64> = r.iter().map(|r| log_half_width(r.low, r.high)).filter(|h| h.is_finite()).collect();
            let mean_hw = hw.iter().sum::<f64>() / hw.len().max(1) as f64;
            let median_hw = stats::median(&hw);
            let walls: Vec<f64> = r.iter().map(|r| r.wall_s).collect();
            let wall = stats::median(&walls);
            let count = |v: Verdict| r.iter().filter(|r| r.verdict == v).count();
            s.push_str(&format!(
                "| {experiment} | {design} | {} | ±{mean_hw:.1}% / ±{median_hw:.1}% | {wall:.0} s | {:.1} | {} / {} / {} |\n",
                r.len(),
                median_hw * (wall / 60.0).sqrt(),
                count(Verdict::RealChange),
                count(Verdict::Equivalent),
                count(Verdict::Inconclusive)
            ));
        }
    }
    aa_rates(&mut s, args, rows);
    if !profiles.is_empty() {
        s.push_str("\nIdle time between slices: each second's TPS relative to its slice's mean (1.00 = flat; a first second above the rest means the idle time let the placement's write-back catch up):\n\n| experiment | design | placement | slices | second 1, 2, ... |\n|---|---|---|---:|---|\n");
        for p in profiles {
            let v: Vec<String> = p.relative.iter().map(|x| format!("{x:.2}")).collect();
            s.push_str(&format!(
                "| {} | {} | {} | {} | {} |\n",
                p.experiment,
                p.design,
                p.placement,
                p.slices,
                v.join(" ")
            ));
        }
    }
    s.push_str("\nEvery delta (TPS change against the baseline placement):\n\n| experiment | trial | design | cell | change [95% CI] | verdict | method | slices/runs | wall |\n|---|---:|---|---|---|---|---|---:|---:|\n");
    for r in rows {
        s.push_str(&format!(
            "| {} | {} | {} | {} | {:+.1}% [{:+.1}, {:+.1}] | {} | {} | {} | {:.0} s |\n",
            r.experiment,
            r.trial,
            r.design,
            r.cell,
            r.pct,
            r.low,
            r.high,
            r.verdict.as_str(),
            r.method,
            r.rounds,
            r.wall_s
        ));
    }
    s
}

fn pct(k: u64, n: u64) -> f64 {
    if n == 0 { f64::NAN } else { k as f64 / n as f64 * 100.0 }
}

#[cfg(test)]
mod tests;
