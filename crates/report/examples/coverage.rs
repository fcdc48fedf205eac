//! Prints the coverage of the shipped estimator and of the one before it on every series kind
//! of the coverage test (docs/benchmarks.md, "Coverage"):
//! `cargo run --release -p report --example coverage [REPLICATIONS]`.

use report::rounds::simulate::{Design, coverage, standard_contests};
use report::rounds::{Final, Rule};

fn main() {
    let n: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(4000);
    let shipped =
        Rule { discard: 2, pilot: 6, target: Some(0.05), trend_alpha: 0.05, cut_alpha: 0.2, interval: Final::Wider };
    let designs = [
        ("shipped", Design::Shipped(shipped)),
        ("Stein only", Design::Shipped(Rule { interval: Final::Stein, ..shipped })),
        ("full only", Design::Shipped(Rule { interval: Final::Full, ..shipped })),
        ("MSER-5 + first reach", Design::Mser5FirstReach { min_rounds: 6, target: 0.05 }),
    ];
    println!("{n} contests of two contenders each, fixed seed");
    println!("| series | design | covered or not steady | covered | not steady | mean half-width | mean rounds |");
    println!("|---|---|---|---|---|---|---|");
    for (name, contest) in standard_contests() {
        for (dname, d) in designs {
            let c = coverage(d, contest, n, 0x5eed);
            println!(
                "| {name} | {dname} | {:.1}% ± {:.1} | {:.1}% | {:.1}% | ±{:.1}% | {:.1} |",
                c.honest * 100.0,
                c.mc_error * 100.0,
                c.covered * 100.0,
                c.not_steady * 100.0,
                c.mean_half_width * 100.0,
                c.mean_rounds
            );
        }
    }
}
