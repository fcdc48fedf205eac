//! Prints the estimator's coverage, mean z^2 and nulls called real on machines unlike the
//! development machine (issue 48; docs/benchmarks.md, "Calibrated on the machine that
//! measures"), for the priors a user can have: this host's calibration of 1, 2 or 4 A/A runs
//! (`pgtier calibrate`), the fallback of an uncalibrated host (read-only's and tpcb's), and the
//! committed workload priors as shipped before calibration:
//! `cargo run --release -p stats --features simulate --example machines [CONTESTS]`.

use stats::rounds::Rule;
use stats::rounds::prior::Prior;
use stats::rounds::simulate::{Design, TYPICAL, coverage_of_kinds, machine_kinds};

fn main() {
    let n: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(4000);
    let rule = Rule::new(2, 6, Some(5.0), &TYPICAL);
    // The fallbacks of analysis::priors::fallback (read-only's own 5% offset, tpcb's raised to
    // the pooled 3.35%) and the committed priors before it (tpcb's offset 0).
    let fallback_ro = Prior {
        rho: 0.140,
        series: 18,
        life_sd_unlimited: 0.05,
        life_sd_limited: 0.0205,
        null_changes: 16,
        life_df: 8.0,
    };
    let fallback_tpcb = Prior {
        rho: 0.203,
        series: 18,
        life_sd_unlimited: 0.0335,
        life_sd_limited: 0.016,
        null_changes: 8,
        life_df: 4.0,
    };
    let committed_tpcb = Prior { life_sd_unlimited: 0.0, life_sd_limited: 0.0, ..fallback_tpcb };
    let designs: Vec<(String, Design)> = vec![
        ("calibrated, 1 A/A run".into(), Design::Calibrated { rule, runs: 1 }),
        ("calibrated, 2 A/A runs".into(), Design::Calibrated { rule, runs: 2 }),
        ("calibrated, 4 A/A runs".into(), Design::Calibrated { rule, runs: 4 }),
        ("fallback, read-only's".into(), Design::Fixed { rule, prior: fallback_ro, memory_limited: false }),
        ("fallback, tpcb's".into(), Design::Fixed { rule, prior: fallback_tpcb, memory_limited: false }),
        ("committed, tpcb's (before)".into(), Design::Fixed { rule, prior: committed_tpcb, memory_limited: false }),
    ];
    let kinds = machine_kinds();
    for (name, design) in designs {
        println!("\n### {name} ({n} contests per machine)\n");
        println!(
            "| the machine | covered or not steady | covered | mean z^2 | median half-width | nulls called real | error model failed (studies of 4 contests) |"
        );
        println!("|---|---:|---:|---:|---:|---:|---:|");
        for (kind, c) in coverage_of_kinds(design, &kinds, n, None, 2) {
            println!(
                "| {kind} | {:.1}% | {:.1}% | {:.2} | ±{:.1}% | {:.1}% | {:.1}% |",
                c.honest * 100.0,
                c.covered * 100.0,
                c.mean_z2,
                c.median_half_width * 100.0,
                c.nulls_called_real * 100.0,
                c.model_failed * 100.0
            );
        }
    }
}
