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
use report::stats::Verdict;
use results::timestamp;

use pgtier::paths;

/// What to compare.
pub struct PrecisionArgs {
    pub trials: u32,
    pub aa_trials: u32,
    /// `runs`, `slices`, `slices:<slice>` (e.g. `slices:2s`), or `shipped` (the main job's own
    /// `[emulate.measurement]`: 2 s slices, warm-up rule, pilot, ±5% target, with `budget`),
    /// optionally with workload changes whose precision per minute is in question:
    /// `shipped+prepared` (pgbench `-M prepared`), `shipped+c4` (4 clients instead of 8).
    pub designs: Vec<String>,
    /// The slices designs' budget per experiment.
    pub budget: String,
    /// Re-read the result sets of an earlier campaign in this directory instead of running one.
    pub from: Option<std::path::PathBuf>,
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
    for (n, (experiment, trial)) in plan.iter().enumerate() {
        // Rotate the designs' order from one trial to the next.
        let k = args.designs.len();
        for i in 0..k {
            let design = &args.designs[(i + n) % k];
            let dir = out.join(format!("{experiment}-t{trial}-{}", design.replace(':', "-")));
            let config = out.join(format!("{experiment}-{}.toml", design.replace(':', "-")));
            std::fs::write(&config, experiment_text(experiment, design, &args.budget)?)?;
            eprintln!(
                "[bench precision] {experiment} trial {trial}, design {design} (elapsed {:.0} s)",
                started.elapsed().as_secs_f64()
            );
            let t0 = Instant::now();
            let status = std::process::Command::new(&exe)
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
                rows.extend(read_rows(&dir, experiment, design, *trial, wall)?);
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
        rows.extend(read_rows(&set_dir, experiment, &design, trial, wall.unwrap_or(f64::NAN))?);
        profiles.extend(slice_profiles(&set_dir, experiment, &design)?);
    }
    if rows.is_empty() {
        bail!("{} holds no result set of the designs {}", dir.display(), args.designs.join(","));
    }
    rows.sort_by(|a, b| (a.experiment, a.trial, &a.design).cmp(&(b.experiment, b.trial, &b.design)));
    Ok(render(args, &rows, &profiles, &[], f64::NAN))
}

/// `aa-t12-shipped` -> ("aa", 12, "shipped") when the design is one of `designs` (their `:`
/// spelled `-` in directory names, as `run` writes them).
fn campaign_entry(name: &str, designs: &[String]) -> Option<(&'static str, u32, String)> {
    let (experiment, rest) = ["seed000-tpcb", "aa"]
        .into_iter()
        .find_map(|e| name.strip_prefix(e).and_then(|r| r.strip_prefix("-t")).map(|r| (e, r)))?;
    let (trial, design) = rest.split_once('-')?;
    let design = designs.iter().find(|d| d.replace(':', "-") == design)?;
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

fn read_rows(dir: &Path, experiment: &'static str, design: &str, trial: u32, wall_s: f64) -> Result<Vec<Row>> {
    let set = report::ResultSet::load(dir).with_context(|| format!("read {}", dir.display()))?;
    let summary = report::summarize(&set);
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
    let measurement = match design.split_once(':').unwrap_or((design, "")) {
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
            other => bail!("unknown workload change +{other}: use +prepared or +c4"),
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

/// The figures: per design, the mean half-width, the half-width per minute of machine time
/// (half-width x sqrt(minutes): a design twice as long halves the variance), the A/A verdicts.
fn render(args: &PrecisionArgs, rows: &[Row], profiles: &[SliceProfile], failed: &[String], elapsed: f64) -> String {
    let mut s = String::new();
    let when = match &args.from {
        Some(dir) => format!("the result sets in {}, read again", dir.display()),
        None => format!("{elapsed:.0} s so far"),
    };
    s.push_str(&format!(
        "# Precision benchmark\n\n`cargo xtask bench precision --trials {} --aa-trials {} --designs {} --budget {}` ({when})\n\n",
        args.trials,
        args.aa_trials,
        args.designs.join(","),
        args.budget,
    ));
    if !failed.is_empty() {
        s.push_str(&format!("Trials that failed and are left out of the figures ({}):\n\n", failed.len()));
        for f in failed {
            s.push_str(&format!("- {f}\n"));
        }
        s.push('\n');
    }
    s.push_str("| experiment | design | deltas | mean half-width | median wall time | half-width x sqrt(minutes) | real change / equivalent / inconclusive |\n|---|---|---:|---:|---:|---:|---|\n");
    for experiment in ["seed000-tpcb", "aa"] {
        for design in &args.designs {
            let r: Vec<&Row> = rows.iter().filter(|r| r.experiment == experiment && &r.design == design).collect();
            if r.is_empty() {
                continue;
            }
            let hw: Vec<f64> = r.iter().map(|r| (r.high - r.low) / 2.0).filter(|h| h.is_finite()).collect();
            let mean_hw = hw.iter().sum::<f64>() / hw.len().max(1) as f64;
            let walls: Vec<f64> = r.iter().map(|r| r.wall_s).collect();
            let wall = report::stats::median(&walls);
            let count = |v: Verdict| r.iter().filter(|r| r.verdict == v).count();
            s.push_str(&format!(
                "| {experiment} | {design} | {} | ±{mean_hw:.1}% | {wall:.0} s | {:.1} | {} / {} / {} |\n",
                r.len(),
                mean_hw * (wall / 60.0).sqrt(),
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

/// The A/A experiments' error rates per design: intervals that exclude 0 before any correction
/// (per change), experiments with a real change after Holm's correction (per experiment), each
/// with its Clopper-Pearson 95% interval, and every placement's mean change over the trials (a
/// position effect shows as a mean away from 0).
fn aa_rates(s: &mut String, args: &PrecisionArgs, rows: &[Row]) {
    for design in &args.designs {
        let r: Vec<&Row> = rows.iter().filter(|r| r.experiment == "aa" && &r.design == design).collect();
        if r.is_empty() {
            continue;
        }
        let with_interval: Vec<&&Row> = r.iter().filter(|r| r.low.is_finite()).collect();
        let excl = with_interval.iter().filter(|r| r.low > 0.0 || r.high < 0.0).count() as u64;
        let n = with_interval.len() as u64;
        let mut trials: Vec<u32> = r.iter().map(|r| r.trial).collect();
        trials.dedup();
        let bad =
            trials.iter().filter(|&&t| r.iter().any(|x| x.trial == t && x.verdict == Verdict::RealChange)).count();
        // A contest still moving gets no verdict; its interval is counted above all the same.
        let not_steady = r.iter().filter(|r| r.verdict == Verdict::NotSteady).count();
        let steady_excl =
            with_interval.iter().filter(|r| r.verdict != Verdict::NotSteady && (r.low > 0.0 || r.high < 0.0)).count();
        let loads: Vec<f64> = r.iter().filter_map(|r| r.load).collect();
        let (lo, hi) = loads.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &x| (a.min(x), b.max(x)));
        let (cl, ch) = report::stats::clopper_pearson(excl, n);
        let (el, eh) = report::stats::clopper_pearson(bad as u64, trials.len() as u64);
        s.push_str(&format!(
            "\nA/A, design {design}: {excl} of {n} intervals exclude 0 before any correction ({:.1}%, Clopper-Pearson 95% [{:.1}, {:.1}]); {bad} of {} experiments call a change real after Holm ({:.1}% [{:.1}, {:.1}]).\n\n",
            pct(excl, n),
            cl * 100.0,
            ch * 100.0,
            trials.len(),
            pct(bad as u64, trials.len() as u64),
            el * 100.0,
            eh * 100.0,
        ));
        s.push_str(&format!(
            "{not_steady} of {} changes were in contests called not steady (no verdict); {steady_excl} intervals of steady contests exclude 0. Load average at the experiments' start: {}.\n\n",
            r.len(),
            if loads.is_empty() { "not recorded".to_string() } else { format!("{lo:.1} to {hi:.1}") }
        ));
        s.push_str("| placement | trials | mean change [95% CI over trials] |\n|---|---:|---|\n");
        let mut placements: Vec<&str> = r.iter().map(|r| r.placement.as_str()).collect();
        placements.sort();
        placements.dedup();
        for p in placements {
            let v: Vec<f64> = r.iter().filter(|r| r.placement == p).map(|r| r.pct).collect();
            match report::stats::Estimate::of(&v) {
                Some(e) if e.has_interval() => s.push_str(&format!(
                    "| {p} | {} | {:+.2}% [{:+.2}, {:+.2}] |\n",
                    e.n,
                    e.mean,
                    e.mean - e.ci95,
                    e.mean + e.ci95
                )),
                Some(e) => s.push_str(&format!("| {p} | {} | {:+.2}% |\n", e.n, e.mean)),
                None => {}
            }
        }
        positions(s, &r);
    }
}

/// The A/A changes by where the contender stood against the baseline in each order a session
/// draws: an order that favours a server shows as a difference between before and after. And
/// the mean of each experiment's changes: something that favours the baseline itself (not drawn
/// at random) shows as a mean away from 0.
fn positions(s: &mut String, r: &[&Row]) {
    let interval = |v: &[f64]| match report::stats::Estimate::of(v) {
        Some(e) if e.has_interval() => {
            format!("{:+.2}% [{:+.2}, {:+.2}] ({})", e.mean, e.mean - e.ci95, e.mean + e.ci95, e.n)
        }
        Some(e) => format!("{:+.2}% ({})", e.mean, e.n),
        None => "none".to_string(),
    };
    type Step = fn(&Row) -> Option<i32>;
    let orders: [(&str, Step); 2] = [
        ("server start (data-set copy, port, cgroup)", |r| r.start_step),
        ("device creation (loop, zram, link, port)", |r| r.device_step),
    ];
    if r.iter().all(|r| r.start_step.is_none() && r.device_step.is_none()) {
        return;
    }
    s.push_str("\nBy position against the baseline (mean change [95% CI] (changes); an experiment's changes share its baseline's rounds, so these intervals are somewhat narrow):\n\n| order | contender before the baseline | contender after it |\n|---|---|---|\n");
    for (name, step) in orders {
        let side = |before: bool| -> Vec<f64> {
            r.iter().filter(|x| step(x).is_some_and(|k| (k < 0) == before)).map(|x| x.pct).collect()
        };
        s.push_str(&format!("| {name} | {} | {} |\n", interval(&side(true)), interval(&side(false))));
    }
    let mut trials: Vec<u32> = r.iter().map(|x| x.trial).collect();
    trials.sort();
    trials.dedup();
    let per_experiment: Vec<f64> = trials
        .iter()
        .filter_map(|&t| {
            let v: Vec<f64> = r.iter().filter(|x| x.trial == t).map(|x| x.pct).collect();
            (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
        })
        .collect();
    let above = per_experiment.iter().filter(|&&x| x > 0.0).count();
    s.push_str(&format!(
        "\nThe contenders against the baseline, the mean of each experiment's changes: {}; {above} of {} experiments above 0.\n",
        interval(&per_experiment),
        per_experiment.len()
    ));
}

fn pct(k: u64, n: u64) -> f64 {
    if n == 0 { f64::NAN } else { k as f64 / n as f64 * 100.0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failed_trials_are_listed_and_left_out() {
        let args = PrecisionArgs {
            trials: 0,
            aa_trials: 2,
            designs: vec!["slices:2s".into()],
            budget: "180s".into(),
            from: None,
        };
        let failed = vec!["aa trial 2, design slices:2s: compare failed (exit 1); see x.log".to_string()];
        let text = render(&args, &[], &[], &failed, 10.0);
        assert!(text.contains("Trials that failed and are left out of the figures (1):"), "{text}");
        assert!(text.contains("- aa trial 2, design slices:2s: compare failed (exit 1)"), "{text}");
        assert!(!render(&args, &[], &[], &[], 10.0).contains("Trials that failed"));
    }

    #[test]
    fn aa_rates_count_per_change_and_per_experiment() {
        let row = |trial, placement: &str, pct: f64, low: f64, high: f64, verdict| Row {
            experiment: "aa",
            design: "shipped".into(),
            trial,
            cell: placement.into(),
            placement: placement.into(),
            pct,
            low,
            high,
            verdict,
            method: "paired-log",
            wall_s: 60.0,
            rounds: 10,
            load: Some(1.5),
            start_step: Some(if placement == "b" { -1 } else { 1 }),
            device_step: None,
        };
        // Two experiments of two changes: one interval excludes 0 (trial 1, b) but is not a
        // real change after Holm; trial 2's c is one.
        let rows = [
            row(1, "b", 3.0, 0.5, 6.0, Verdict::Inconclusive),
            row(1, "c", -1.0, -4.0, 2.0, Verdict::Equivalent),
            row(2, "b", 1.0, -2.0, 4.0, Verdict::Equivalent),
            row(2, "c", 8.0, 4.0, 12.0, Verdict::RealChange),
        ];
        let args = PrecisionArgs {
            trials: 0,
            aa_trials: 2,
            designs: vec!["shipped".into()],
            budget: "5min".into(),
            from: None,
        };
        let mut s = String::new();
        aa_rates(&mut s, &args, &rows);
        // Clopper-Pearson 2/4: [6.76, 93.24]; 1/2: [1.26, 98.74].
        assert!(
            s.contains("2 of 4 intervals exclude 0 before any correction (50.0%, Clopper-Pearson 95% [6.8, 93.2])"),
            "{s}"
        );
        assert!(s.contains("1 of 2 experiments call a change real after Holm (50.0% [1.3, 98.7])"), "{s}");
        assert!(s.contains("0 of 4 changes were in contests called not steady"), "{s}");
        assert!(
            s.contains("2 intervals of steady contests exclude 0. Load average at the experiments' start: 1.5 to 1.5."),
            "{s}"
        );
        // b: mean 2.0, sd 1.414, t(0.975, 1) 12.706: +-12.71.
        assert!(s.contains("| b | 2 | +2.00% [-10.71, +14.71] |"), "{s}");
        // b started before the baseline in both trials (3, 1), c after it (-1, 8).
        assert!(s.contains("| server start (data-set copy, port, cgroup) | +2.00% [-10.71, +14.71] (2) | +3.50% [-53.68, +60.68] (2) |"), "{s}");
        assert!(s.contains("| device creation (loop, zram, link, port) | none | none |"), "{s}");
        // Per experiment: (3 - 1) / 2 = 1, (1 + 8) / 2 = 4.5; sd 2.475, t(0.975, 1) 12.706: +-22.24.
        assert!(
            s.contains(
                "the mean of each experiment's changes: +2.75% [-19.49, +24.99] (2); 2 of 2 experiments above 0."
            ),
            "{s}"
        );
        assert_eq!(campaign_entry("aa-t12-shipped", &["shipped".into()]), Some(("aa", 12, "shipped".into())));
        assert_eq!(
            campaign_entry("seed000-tpcb-t3-slices-2s", &["slices:2s".into()]),
            Some(("seed000-tpcb", 3, "slices:2s".into()))
        );
        assert_eq!(campaign_entry("aa-t12-shipped+c4", &["shipped".into()]), None);
        let prepared = experiment_text("aa", "shipped+prepared+c4", "5min").unwrap();
        assert!(prepared.contains("extra_args = [\"-M\", \"prepared\"]") && prepared.contains("clients = [4]"));
        assert!(prepared.contains("target_halfwidth = \"5%\""), "the shipped measurement all the same");
        assert!(experiment_text("aa", "shipped+pinned", "5min").is_err());
        assert!(experiment_text("aa", "slices+c4", "5min").is_err());
        assert!(
            experiment_text("aa", "shipped", "5min")
                .unwrap()
                .contains("target_halfwidth = \"5%\"\nequivalence_margin = \"5%\"\nbudget = \"5min\"")
        );
    }
}
