//! `--dry-run`: the plan, the placements, the data sets, the server's memory and every run, as
//! they would be made; touches nothing and needs no root.

use runner::matrix::{MatrixSpec, PlannedRun, WorkloadKind};
use runner::memory::{MemoryKind, show};

use super::setup::Setup;
use crate::paths;

pub fn print(s: &Setup) {
    let (exp, plan) = (&s.exp, &s.plan);
    println!("# pgtier dry run: {} ({})", exp.name, exp.file.display());
    println!("# {} tiers; nothing below has been executed.", if exp.emulated { "emulated" } else { "REAL" });
    if let Err(e) = &s.user {
        println!("# note: {e} (uid 0 is shown in chown steps)");
    }
    println!("\n## Provisioning plan ({} steps; teardown undoes them newest first)\n", plan.steps.len());
    print!("{plan}");
    println!("\n## Placements\n");
    for p in &s.matrix.placements {
        println!("- {}: PGDATA {} , pg_wal {}", p.name, p.data_dir.display(), p.wal_dir.display());
    }
    datasets(&s.matrix);
    memory(&s.exp);
    runs(&s.matrix, &s.runs);
}

fn datasets(matrix: &MatrixSpec) {
    println!("\n## Data sets (built once, then copied onto each placement)\n");
    let golden_root = paths::work_root().join("<run id>").join("golden");
    let free = runner::dataset::available_bytes(&paths::work_root())
        .map(|b| format!("{:.0} MiB free there now", b as f64 / 1048576.0))
        .unwrap_or_else(|| "free space unknown".into());
    println!("Built below {} ({free}; set PGTIER_STATE_DIR to move it).\n", golden_root.display());
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
        let what = match &w.kind {
            WorkloadKind::Pgbench(p) => format!(
                "pgbench --builtin={} -c {} -j {} -T {} -P 1{}",
                p.builtin.as_str(),
                r.clients,
                r.threads,
                w.duration.as_secs(),
                if p.per_statement { " -r" } else { "" }
            ),
            WorkloadKind::Tpcc(t) => {
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
