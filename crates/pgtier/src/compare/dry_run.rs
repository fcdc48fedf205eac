//! `--dry-run`: the plan, the placements, the data sets, the server's memory and every run, as
//! they would be made; touches nothing and needs no root.

use runner::matrix::{MatrixSpec, PlannedRun, WorkloadKind};
use runner::memory::{MemoryKind, show};

use experiment::GoldenCopy;
use tiers::plan::human_bytes;

use super::golden;
use super::setup::Setup;
use crate::paths;

pub fn print(s: &Setup) {
    let (exp, plan) = (&s.exp, &s.plan);
    println!("# pgtier dry run: {} ({})", exp.name, exp.file.display());
    println!("# {} tiers; nothing below has been executed.", if exp.emulated { "emulated" } else { "REAL" });
    first_screen(s);
    if let Err(e) = &s.user {
        println!("# note: {e} (uid 0 is shown in chown steps)");
    }
    crate::remote::target::dry_run(exp, &s.ctx.short_id);
    println!("\n## Provisioning plan ({} steps; teardown undoes them newest first)\n", plan.steps.len());
    print!("{plan}");
    println!("\n## Placements\n");
    for (p, own) in s.matrix.placements.iter().zip(&s.exp.placements) {
        println!(
            "- {}: PGDATA {} , pg_wal {}{}{}",
            p.name,
            p.data_dir.display(),
            p.wal_dir.display(),
            own.profile
                .as_ref()
                .map(|f| format!(", its server on profile {} (in place of the matrix's)", f.profile.name))
                .unwrap_or_default(),
            own.build.as_ref().map(|b| format!(", on build {b}")).unwrap_or_default()
        );
    }
    client_host(&s.exp);
    builds(&s.exp);
    datasets(s);
    memory(&s.exp);
    match s.exp.measurement.design {
        experiment::Design::Runs => runs(&s.matrix, &s.runs),
        experiment::Design::Slices => slices(&s.exp, &s.matrix, &s.runs),
    }
    if let Some(p) = &s.exp.measurement.pinning {
        println!(
            "\nCPU pinning: pgbench on CPU {}, every server on CPU {} (each process's set is read back from the kernel after it starts).",
            runner::affinity::format_cpu_list(&p.client),
            runner::affinity::format_cpu_list(&p.servers)
        );
    }
    if let Some(h) = &s.exp.measurement.handicap {
        println!(
            "\nA test of the method: every server life gets a CPU quota of its own, {} CPUs times exp({}% x z), z drawn per life from the seed (handicap_cpus, handicap_spread).",
            h.cpus, h.spread_pct
        );
    }
    calibration(&s.exp);
    expected_time(s);
    claims(&s.exp);
}

/// Whether this host has a calibration for the study (`pgtier calibrate`): its intervals use it,
/// or the fallback's wider priors.
fn calibration(exp: &experiment::Experiment) {
    if exp.measurement.design != experiment::Design::Slices {
        return;
    }
    let first = exp.builds.first().and_then(|b| b.bin_dir.as_deref());
    match runner::PgInstall::detect(first) {
        Ok(install) => {
            let r = crate::calibration::for_study(exp, &crate::host::collect(), &install.version());
            println!("\n{}", crate::calibration::line(&r));
        }
        Err(e) => println!("\ncalibration: not looked up, PostgreSQL not found ({e})"),
    }
}

/// The study's published figures and the cells they will be checked on.
fn claims(exp: &experiment::Experiment) {
    println!("\n## Published claims ({}; report.md opens with them against what is measured)\n", exp.claims.len());
    if exp.claims.is_empty() {
        println!("None: the experiment file has no [[claim]].");
    }
    for c in &exp.claims {
        // A profiles claim compares one placement with itself under the default profile.
        let against = if c.across == experiment::ClaimAcross::Profiles {
            format!("{} under profile default", c.against)
        } else {
            c.against.clone()
        };
        println!(
            "- {}: {} {} of {} against {against}, {}: \"{}\"",
            c.name,
            c.metric.as_str(),
            c.figure,
            c.placement,
            claim_cell(c),
            c.text
        );
        if c.across == experiment::ClaimAcross::ResultSets {
            println!("    across result sets: judged by `cargo xtask report --baseline A --contender B`");
        }
        if let Some(n) = &c.emulation_note {
            println!("    emulated cell: {n}");
        }
        if let Some(r) = &c.study_regime {
            println!(
                "    the study's regime: a data set of {} on {} of memory ({:.1}% of it out of memory); judged only where the cell's data set sits in memory alike (within {} points), else \"not comparable here\"",
                tiers::plan::human_bytes(r.data_set_bytes),
                tiers::plan::human_bytes(r.memory_bytes),
                analysis::claims::out_of_memory_pct(r.data_set_bytes, r.memory_bytes),
                analysis::claims::REGIME_TOLERANCE_PCT
            );
        }
        println!("    ({})", c.origin);
    }
}

fn claim_cell(c: &experiment::Claim) -> String {
    let clients = match (c.at_peak, c.clients) {
        (true, _) | (false, None) => "at the peak of the scaling curve".to_string(),
        (false, Some(n)) => format!("{n} clients"),
    };
    let statement = c.statement.as_ref().map(|s| format!(", statement {s}")).unwrap_or_default();
    format!("workload {} {clients}, memory {}, profile {}{statement}", c.workload, c.memory_limit, c.profile)
}

/// The sliced design: sessions, contests, what a slice runs, and the budget.
fn slices(exp: &experiment::Experiment, matrix: &MatrixSpec, cells: &[PlannedRun]) {
    let m = &exp.measurement;
    println!("\n## Measurement: design slices\n");
    println!(
        "For each memory limit and profile, every placement's server starts at once (its own cgroup and port), CHECKPOINT, caches dropped once; each contest then gets {}{}a discarded warm-up per placement ({}), and rounds of one {} s slice per placement in a random order, at least {} rounds, {} and {}. Rounds are decided as the run goes.",
        if m.settle {
            "a settle per placement when an earlier contest wrote to its database (VACUUM (ANALYZE) of every table, then CHECKPOINT), then "
        } else {
            "no settle (settle = false: the data as earlier contests left it), "
        },
        if m.prewarm {
            "a prewarm per placement (every table and index of its data set read into its server with pg_prewarm: shared_buffers and the page cache within its memory limit), then "
        } else {
            "no prewarm (prewarm = false: cold caches), "
        },
        m.warm_up
            .map(|w| format!("{} s", w.as_secs()))
            .unwrap_or_else(|| "the workload's ramp_up, or two slices".into()),
        m.slice.as_secs(),
        m.min_rounds,
        m.budget
            .map(|b| format!("within a budget of {:.0} s for all contests", b.as_secs_f64()))
            .unwrap_or_else(|| "without a budget".into()),
        m.target_halfwidth_pct
            .map(|t| format!("until every change is within ±{t}%"))
            .unwrap_or_else(|| "with no target".into()),
    );
    println!("\n## Contests and their slices\n");
    for r in cells.iter().filter(|r| r.placement == 0 || matrix.placements.len() == 1) {
        let w = &matrix.workloads[r.workload];
        let what = what_runs(w, r, m.slice.as_secs());
        let names: Vec<&str> = matrix.placements.iter().map(|p| p.name.as_str()).collect();
        println!(
            "- {} c{} (memory {}, profile {}): per slice `{what}`, on {}",
            w.name,
            r.clients,
            r.cell.memory_limit,
            r.cell.profile,
            names.join(", ")
        );
    }
}

/// Seconds a run costs beyond its ramp-up and measured time: server start, CHECKPOINT, sync,
/// cache drop, stop (about 10 s here, more with large shared_buffers).
const RUN_OVERHEAD_S: f64 = 15.0;

/// What the run would take, in seconds after the data sets' builds: the copies onto the
/// placements and the matrix.
struct Estimate {
    copy_s: f64,
    matrix_s: f64,
}

/// The expected time in one line, for the real run's header.
pub(super) fn expected_line(s: &Setup) -> String {
    format!("expected: {}", expected_time_in_short(s))
}

/// `about 15 min after the data sets' builds (...)`.
fn expected_time_in_short(s: &Setup) -> String {
    let e = estimate(s);
    format!(
        "about {} after the data sets' builds ({} for the copies onto the placements, {} for the matrix)",
        human_duration(e.copy_s + e.matrix_s),
        human_duration(e.copy_s),
        human_duration(e.matrix_s)
    )
}

fn estimate(s: &Setup) -> Estimate {
    let m = &s.exp.measurement;
    let matrix_s: f64 = match m.design {
        experiment::Design::Runs => s
            .runs
            .iter()
            .map(|r| {
                let w = &s.matrix.workloads[r.workload];
                w.ramp_up.as_secs_f64() + w.duration.as_secs_f64() + RUN_OVERHEAD_S
            })
            .sum(),
        experiment::Design::Slices => {
            let contests = s.runs.iter().filter(|r| r.placement == 0).count() as f64;
            let warm = m.warm_up.map_or(2.0 * m.slice.as_secs_f64(), |w| w.as_secs_f64());
            let warm_ups = contests * s.matrix.placements.len() as f64 * warm;
            warm_ups + m.budget.map_or(0.0, |b| b.as_secs_f64())
        }
    };
    let planned = golden::planned_copies(&s.exp, &s.matrix, &s.runs);
    let copy_s: f64 = planned.iter().map(|c| c.seconds * f64::from(c.times)).sum();
    Estimate { copy_s, matrix_s }
}

/// The first lines of a dry run, before the plan: what gets formatted, how long it takes, where
/// the results go, and that the end says what the real run would refuse.
fn first_screen(s: &Setup) {
    let exp = &s.exp;
    let devices = exp.used_devices();
    if exp.emulated {
        println!(
            "# Devices: {} emulated (files, zram and nbdkit below {}); no disk of this machine is formatted.",
            devices.len(),
            paths::work_root().display()
        );
    } else {
        println!(
            "# FORMATS {} device(s): everything on them is lost (partitioned where the file says so, then mkfs.xfs):",
            devices.len()
        );
        for d in &devices {
            println!(
                "#   {}: {}{}",
                d.name,
                real_name(d),
                if d.allow_wipe { " (allow_wipe: its old signatures are erased first)" } else { "" }
            );
        }
    }
    println!("# Expected time: {}; see \"Expected time\".", expected_time_in_short(s));
    println!("# Results: {}", s.results_dir.display());
    if exp.server_hosts().is_empty() {
        println!(
            "# The end of this dry run lists what the real run would refuse (a device not here, no room, memory the machine lacks); it then exits 1."
        );
    }
}

/// How the file names a real device.
fn real_name(d: &tiers::spec::DeviceSpec) -> String {
    use tiers::spec::RealDevice;
    match (&d.real, &d.target_host) {
        (_, Some(t)) => format!("{} on target host {}", t.export.display(), t.name),
        (RealDevice::Local { path, .. }, None) => path.display().to_string(),
        (RealDevice::Pmem { namespace, .. }, None) => format!("PMem namespace {namespace}"),
        (RealDevice::NvmeTcp(t), None) => format!("NVMe/TCP {} at {}:{}", t.nqn, t.address, t.port),
    }
}

/// The dry run's last section: what the real run would refuse, or that nothing was seen.
pub fn print_refusals(refusals: &[String]) {
    println!("\n## What the real run would refuse\n");
    if refusals.is_empty() {
        println!(
            "Nothing that a dry run can see (it looks for the devices and the golden copy's room; the real run checks every device again, and more, before anything is written)."
        );
    }
    for r in refusals {
        println!("would refuse: {r}");
    }
}

/// How long the copies and the matrix will take, so that a six-hour study is not a surprise.
fn expected_time(s: &Setup) {
    let m = &s.exp.measurement;
    let Estimate { copy_s, matrix_s } = estimate(s);
    let planned = golden::planned_copies(&s.exp, &s.matrix, &s.runs);
    let copies: u64 = planned.iter().map(|c| c.bytes * u64::from(c.times)).sum();
    println!("\n## Expected time\n");
    println!(
        "- the data sets' builds first: not estimated (pgbench -i and the TPC-C loader go at the speed of the CPU as much as of the golden copy's place; the manifest records each build's time)"
    );
    println!(
        "- the copies of the data sets onto the placements: about {} ({} cop{}, {} in all, at the bandwidths assumed above: an estimate)",
        human_duration(copy_s),
        planned.iter().map(|c| c.times).sum::<u32>(),
        if planned.iter().map(|c| c.times).sum::<u32>() == 1 { "y" } else { "ies" },
        human_bytes(copies)
    );
    println!(
        "- the matrix: about {} ({})",
        human_duration(matrix_s),
        match m.design {
            experiment::Design::Runs => format!(
                "{} runs, each its ramp-up and measured time and about {RUN_OVERHEAD_S:.0} s to start, checkpoint, drop caches and stop",
                s.runs.len()
            ),
            experiment::Design::Slices => {
                if m.budget.is_some() {
                    "the warm-ups and the measured phase's budget".into()
                } else {
                    "no budget: the warm-ups only; the rounds go on until every change meets its target".into()
                }
            }
        },
    );
    println!("- in all, after the builds: about {}", human_duration(copy_s + matrix_s));
}

fn human_duration(secs: f64) -> String {
    let m = (secs / 60.0).round() as u64;
    match m {
        0 => format!("{secs:.0} s"),
        1..=119 => format!("{m} min"),
        _ => format!("{} h {} min", m / 60, m % 60),
    }
}

/// The PostgreSQL builds, with the version and client each would run (binaries are only asked
/// for their version).
fn builds(exp: &experiment::Experiment) {
    if exp.builds.len() < 2 {
        return;
    }
    if exp.matrix_builds().is_empty() {
        println!(
            "\n## PostgreSQL builds (each placement's server runs its own, [[placement]] build; data sets are built per major version)\n"
        );
    } else {
        println!("\n## PostgreSQL builds (a matrix dimension; data sets are built per major version)\n");
    }
    for b in &exp.builds {
        let dir = b.bin_dir.as_ref().map(|d| d.display().to_string()).unwrap_or_else(|| "auto".into());
        match runner::PgInstall::detect(b.bin_dir.as_deref()) {
            Ok(i) => println!(
                "- {}: {} ({}), driven by {}{}",
                b.name,
                i.version_line,
                i.bin_dir.display(),
                i.client_version_line,
                if i.client_dir == i.bin_dir { String::new() } else { format!(" from {}", i.client_dir.display()) }
            ),
            Err(e) => println!("- {}: {dir} ({e})", b.name),
        }
    }
}

fn datasets(s: &Setup) {
    let matrix = &s.matrix;
    println!("\n## Data sets (built once, then copied onto each placement)\n");
    golden_place(s);
    let mut seen = Vec::new();
    for w in &matrix.workloads {
        let d = w.dataset(&matrix.tablespace_roles());
        if seen.contains(&d) {
            continue;
        }
        match &w.kind {
            WorkloadKind::Pgbench(_) => println!(
                "- {}: pgbench -i -s {} (needs about {:.0} MiB)",
                d.key(),
                w.scale(),
                d.estimated_bytes() as f64 / 1048576.0
            ),
            WorkloadKind::Tpcc(t) => println!(
                "- {}: TPC-C, {} warehouses, {} parallel binary-COPY loaders, then keys, indexes, VACUUM ANALYZE (needs about {:.0} MiB)",
                d.key(),
                t.warehouses,
                t.load_workers,
                d.estimated_bytes() as f64 / 1048576.0
            ),
        }
        seen.push(d);
    }
    copies(s);
}

/// Where the golden copy goes, how large it is and the room there.
fn golden_place(s: &Setup) {
    let exp = &s.exp;
    let need = exp.golden_room();
    let fits = |room: u64| {
        if room >= need.with_margin() {
            "it fits".to_string()
        } else {
            format!("it does NOT fit: {} short", human_bytes(need.with_margin() - room))
        }
    };
    match &exp.golden_copy {
        GoldenCopy::StateDir => {
            let golden_root = paths::work_root().join("<run id>").join("golden");
            let free = runner::dataset::available_bytes(&paths::work_root());
            let shown = free
                .map(|b| format!("{:.0} MiB free there now", b as f64 / 1048576.0))
                .unwrap_or_else(|| "free space unknown".into());
            println!("Built below {} ({shown}; set PGTIER_STATE_DIR to move it).", golden_root.display());
            if let Some(free) = free.filter(|f| *f < need.with_margin()) {
                println!(
                    "It does not fit there: the golden copy needs about {} with a 5% margin, {} free; name a place with room in [experiment] golden_copy = {{ device = \"<a device of this file>\" }} or {{ dir = \"/absolute/path\" }}.",
                    human_bytes(need.with_margin()),
                    human_bytes(free)
                );
            }
        }
        GoldenCopy::Device { name, origin } => golden_on_device(s, name, origin, &fits),
        GoldenCopy::Dir { path, origin } => {
            println!("Built in {} ({origin}), which pgtier makes and removes at teardown.", s.golden.root.display());
            let room = match runner::dataset::available_bytes(path) {
                Some(free) => format!(
                    "the filesystem of {} has {} free now: {}{}",
                    path.display(),
                    human_bytes(free),
                    fits(free),
                    if free < need.with_margin() { " (the run stops before step 1)" } else { "" }
                ),
                None => "free space unknown".into(),
            };
            println!("Room: about {} with a 5% margin ({}); {room}.", human_bytes(need.with_margin()), need.describe());
            if !path.is_dir() && !path.parent().is_some_and(std::path::Path::is_dir) {
                println!("Neither {} nor its parent exists here: the run refuses it before step 1.", path.display());
            }
        }
    }
    println!();
}

/// The dry run's lines for a golden copy on device `name`: where it goes and the room there.
fn golden_on_device(s: &Setup, name: &str, origin: &impl std::fmt::Display, fits: &dyn Fn(u64) -> String) {
    let exp = &s.exp;
    let need = exp.golden_room();
    println!(
        "Built on device {name} ({origin}), in {}, which pgtier makes once the device is mounted and removes at teardown.",
        s.golden.root.display()
    );
    let d = exp.device(name).expect("validated");
    let room = if exp.emulated {
        let size = d.emulation.size_bytes;
        format!(
            "{name} is emulated, {} ({} after XFS's own use): {}",
            human_bytes(size),
            human_bytes(size / 100 * 97),
            fits(size / 100 * 97)
        )
    } else {
        let step = s
            .plan
            .steps
            .iter()
            .position(|st| {
                matches!(
                    &st.action,
                    tiers::plan::Action::Check(tiers::plan::Check::Room { .. } | tiers::plan::Check::PmemRoom { .. })
                )
            })
            .map(|i| format!("step {}", i + 1))
            .unwrap_or_else(|| "a check".into());
        match golden::real_size(d) {
            Some((dev, size)) => format!(
                "{name} is {} here, {} ({} after XFS's own use): {}; {step} checks it again before anything is written",
                dev.display(),
                human_bytes(size),
                human_bytes(size / 100 * 97),
                fits(size / 100 * 97)
            ),
            None => format!(
                "the device's size is read at {step}, before anything is written, and the run stops there if it does not fit"
            ),
        }
    };
    println!("Room: about {} with a 5% margin ({}); {room}.", human_bytes(need.with_margin()), need.describe());
}

/// Each copy onto a placement the planned runs make, and how long it takes at the assumed
/// bandwidths.
fn copies(s: &Setup) {
    let planned = golden::planned_copies(&s.exp, &s.matrix, &s.runs);
    if planned.is_empty() {
        return;
    }
    let source = golden::source_bandwidth(&s.exp);
    println!(
        "\nCopies onto the placements (PGDATA and tablespaces about the data set's size; at the slower of the golden copy's place and the placement's devices):\n"
    );
    for c in &planned {
        println!(
            "- {} onto {}: {} at {} MB/s (limited by {}), about {}{}",
            c.dataset,
            c.placement,
            human_bytes(c.bytes),
            c.bytes_per_sec / 1_000_000,
            c.limited_by,
            human_duration(c.seconds),
            if c.times > 1 {
                format!(", {} times in the planned order (it holds another data set in between)", c.times)
            } else {
                String::new()
            }
        );
    }
    println!(
        "\nBandwidths assumed (estimates: pgtier measures no sequential bandwidth; its fio probe measures 8 KiB synchronous writes and 4 KiB random reads, and the manifest records each copy's time):"
    );
    println!("- the golden copy's {}: {}", golden::place_name(&s.exp), source.basis);
    for d in s.exp.used_devices() {
        println!("- {}: {}", d.name, golden::device_bandwidth(d, s.exp.emulated).basis);
    }
}

fn memory(exp: &experiment::Experiment) {
    println!("\n## Server memory (per profile and memory limit, at the largest client count and data set)\n");
    for (profile, limit, plan) in exp.memory_plans() {
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
            show(need.shared_memory_bytes)
        );
    }
}

fn runs(matrix: &MatrixSpec, runs: &[PlannedRun]) {
    println!(
        "\n## Runs ({}, {:?} order; each: start server, CHECKPOINT, drop caches, ramp-up, measure, stop)\n",
        runs.len(),
        matrix.order
    );
    for r in runs {
        let w = &matrix.workloads[r.workload];
        let what = what_runs(w, r, w.duration.as_secs());
        println!(
            "{}  {what}  (ramp-up {} s, memory {}, profile {}{})",
            r.run_id,
            w.ramp_up.as_secs(),
            r.cell.memory_limit,
            r.cell.profile,
            if matrix.builds.len() > 1 { format!(", build {}", r.cell.build) } else { String::new() }
        );
    }
}

/// The client host, when the benchmark client runs on one: how it is reached and what the server
/// opens to it.
fn client_host(exp: &experiment::Experiment) {
    let Some(h) = exp.client_host() else { return };
    println!("\n## Client host\n");
    println!("- {} ({}): every pgbench run below runs there, over one ssh connection:", h.name, h.address);
    println!("  {}", crate::remote::SshHost::new(h, "<run token>").master_command());
    println!(
        "- the server listens on the address facing {} too (`ip route get {}` at the start), and pg_hba.conf admits {}/32 alone, by scram-sha-256 with a password made per run",
        h.name, h.address, h.address
    );
    if exp.workloads.iter().any(|w| matches!(w.kind, WorkloadKind::Tpcc(_))) {
        println!(
            "- every TPC-C drive below runs there too: pgtier's own binary and configs/ are copied to the host once (into /tmp/pgtier-<run token>/, removed at teardown) and run as `pgtier tpcc-client`"
        );
    }
    println!("- the data set is built over the private socket here");
}

/// What one run (or slice) of `secs` seconds runs, as the command a reader would type.
fn what_runs(w: &runner::matrix::WorkloadSpec, r: &PlannedRun, secs: u64) -> String {
    match &w.kind {
        WorkloadKind::Pgbench(p) => format!(
            "pgbench --builtin={} -c {} -j {} -T {secs} -P 1{}",
            p.builtin.as_str(),
            r.clients,
            r.threads,
            if p.per_statement { " -r" } else { "" }
        ),
        WorkloadKind::Tpcc(t) => format!("TPC-C {} with {} virtual users for {secs} s", t.script(), r.clients),
    }
}
