//! Golden tests: each fixture results directory (tests/fixtures/<name>/) is rendered by
//! `report::render` into a scratch copy, and every table, summary.json, report.md, the list of
//! files written and a few SVG charts are compared byte for byte with tests/golden/<name>/.
//!
//! After an intended change to an output, regenerate the goldens and review their diff:
//! `PGTIER_UPDATE_GOLDEN=1 cargo test -p report --test golden`.

mod common;

use common::{FIXTURES, Rendered, crate_dir, diff, rendered};

/// Compared for every fixture.
const OUTPUTS: [&str; 7] =
    ["summary.csv", "runs.csv", "statements.csv", "devices.csv", "series.csv", "summary.json", "report.md"];

/// Charts kept as goldens (the others are checked for their text extents, not their bytes).
const CHARTS: [(&str, &str); 4] = [
    ("seed003-tiers", "charts/scaling-tproc-c-mem160MiB.svg"),
    ("seed004-profiles", "charts/by-profile-tpcb-c1-mem160MiB.svg"),
    ("seed000-claims", "charts/waits-tpcb.svg"),
    ("seed004-sweep", "charts/forest-changes.svg"),
];

/// Tables only some fixtures have.
const TABLES: [(&str, &str); 2] = [("seed004-sweep", "contrast.csv"), ("seed004-profiles", "contrast.csv")];

fn update() -> bool {
    std::env::var_os("PGTIER_UPDATE_GOLDEN").is_some_and(|v| !v.is_empty() && v != "0")
}

/// Compares `actual` with the golden file, or rewrites it when updating; returns a failure message.
fn check(fixture: &str, rel: &str, actual: &str) -> Option<String> {
    let golden = crate_dir().join("tests/golden").join(fixture).join(rel);
    if update() {
        std::fs::create_dir_all(golden.parent().unwrap()).unwrap();
        std::fs::write(&golden, actual).unwrap();
        return None;
    }
    match std::fs::read_to_string(&golden) {
        Err(e) => Some(format!("{}: {e} (PGTIER_UPDATE_GOLDEN=1 writes it)", golden.display())),
        Ok(expected) if expected == actual => None,
        Ok(expected) => {
            Some(format!("{fixture}/{rel} differs from {}:\n{}", golden.display(), diff(&expected, actual)))
        }
    }
}

fn goldens(r: &Rendered) {
    let mut failures = Vec::new();
    let listing: String = r.files.iter().map(|f| format!("{f}\n")).collect();
    failures.extend(check(r.name, "files.txt", &listing));
    let charts = CHARTS.iter().chain(&TABLES).filter(|(f, _)| *f == r.name).map(|(_, c)| *c);
    for rel in OUTPUTS.into_iter().chain(charts) {
        assert!(r.files.iter().any(|f| f == rel), "{}: render did not report {rel}", r.name);
        let text = r.read(rel);
        // Outputs must not depend on where the results directory is.
        let root = r.root.to_string_lossy();
        if text.contains(root.as_ref()) {
            failures.push(format!("{}/{rel} names the scratch directory {root}", r.name));
        }
        failures.extend(check(r.name, rel, &text));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn seed003_tiers_matches_its_goldens() {
    goldens(rendered(FIXTURES[0]));
}

#[test]
fn seed004_profiles_matches_its_goldens() {
    goldens(rendered(FIXTURES[1]));
}

#[test]
fn seed000_claims_matches_its_goldens() {
    goldens(rendered(FIXTURES[2]));
}

#[test]
fn seed000_slices_matches_its_goldens() {
    goldens(rendered(FIXTURES[3]));
}

#[test]
fn seed004_sweep_matches_its_goldens() {
    goldens(rendered(FIXTURES[4]));
}

#[test]
fn seed000_control_matches_its_goldens() {
    goldens(rendered(FIXTURES[5]));
}

/// A study with a negative control (a twin of the baseline, placement `control`): the report
/// opens with its check per contest, every figure it was checked on; the control is no
/// contender of the study's own Holm families; summary.csv says per contest that it held.
#[test]
fn the_negative_control_is_reported_per_contest() {
    let r = rendered(FIXTURES[5]);
    let md = r.read("report.md");
    let control = md.find("## Negative control").expect("a negative control section");
    assert!(control < md.find("## Findings").unwrap(), "the control first");
    assert!(md.contains("It held in all 1 contests on all 4 figures checked"), "{md}");
    assert!(
        md.contains(
            "| read-only c8 mem 192MiB seed000-tuned | -3.4% [-11.5, +5.4] | +3.5% [-6.1, +14.2] | 2 held | stand |"
        ),
        "the control's row"
    );
    let summary = r.read("summary.csv");
    let header: Vec<&str> = summary.lines().next().unwrap().split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let (placement, verdict, control) = (col("placement"), col("verdict"), col("control"));
    let rows: Vec<Vec<&str>> = summary.lines().skip(1).map(|l| l.split(',').collect()).collect();
    let of = |p: &str| rows.iter().find(|f| f[placement] == p).unwrap_or_else(|| panic!("{p}: {summary}"));
    assert_eq!((of("all-on-pmem")[verdict], of("all-on-pmem")[control]), ("real change", "held"));
    assert_eq!((of("control")[verdict], of("control")[control]), ("inconclusive", "held"));
    assert!(rows.iter().all(|f| f[control] == "held"), "the contest's every row, the baseline's too: {summary}");
    assert_eq!(rows.len(), 4, "the baseline, two contenders and the control");
}

/// The slices estimator on recorded rounds whose baseline warmed up: the cut falls by round,
/// alike for every placement, and moved on past the fixed 2 rounds; what is kept is said per
/// run; the contest is steady; the stability chart draws the cut.
#[test]
fn a_sliced_result_set_cuts_its_warm_up_by_round_alike_for_every_placement() {
    let r = rendered(FIXTURES[3]);
    let runs = r.read("runs.csv");
    let mut lines = runs.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let (rep, kept, placement) = (col("repetition"), col("kept"), col("placement"));
    let mut first_kept = std::collections::BTreeMap::new();
    for l in lines {
        let f: Vec<&str> = l.split(',').collect();
        let round: u32 = f[rep].parse().unwrap();
        if f[kept] == "true" {
            let e = first_kept.entry(f[placement].to_string()).or_insert(round);
            *e = (*e).min(round);
        } else {
            assert!(f[kept] == "false", "{l}");
        }
    }
    assert_eq!(first_kept.len(), 3, "{first_kept:?}");
    assert!(first_kept.values().all(|&r| r == 8), "7 rounds cut for every placement: {first_kept:?}");
    let summary = r.read("summary.csv");
    assert!(summary.lines().skip(1).filter(|l| !l.starts_with("nvme,")).all(|l| l.contains(",true,")), "{summary}");
    let md = r.read("report.md");
    assert!(md.contains("| read-only c8 mem 192MiB seed000-tuned | 7 | 15 |"), "the cut table");
    let chart = r.read("charts/stability-read-only-c8-mem192MiB-seed000-tuned.svg");
    assert!(chart.contains("kept from here (7 cut)"), "the chart marks the cut");
}

/// A bar's label shows the change's interval after Holm beside its 95% one where report.md
/// prints it (the verdict's interval), and only there.
#[test]
fn bar_labels_show_the_interval_after_holm_where_the_report_does() {
    let r = rendered(FIXTURES[3]);
    let md = r.read("report.md");
    assert!(md.contains("+143.9% [+86.6, +218.9], after Holm [+71.6, +246.8] **real change**"), "report.md");
    let chart = r.read("charts/throughput-read-only-c8-mem192MiB-seed000-tuned.svg");
    // The same change as a ratio (2.4x): 95% [1.866, 3.189], after Holm [1.716, 3.468].
    let line = |svg: &str, text: &str| svg.lines().any(|l| l == text);
    assert!(line(&chart, "95% [1.9, 3.2]") && line(&chart, "after Holm [1.7, 3.5]"), "{chart}");
    assert!(line(&chart, "[-13.7, +7.4]"), "wal-on-pmem's interval holds 0: no after-Holm line");
    assert_eq!(chart.matches("after Holm [").count(), 1, "one bar's label, and the footnote says what it is");
    let p99 = r.read("charts/latency-p99-read-only-c8-mem192MiB-seed000-tuned.svg");
    assert!(line(&p99, "95% [-68.8, -57.3]") && line(&p99, "after Holm [-69.7, -56.1]"), "{p99}");
}

/// The report's opening, up to its results table: the published-vs-measured table and the
/// findings, from a fixture with claims, wait events and QD1 probes.
#[test]
fn report_opens_with_published_vs_measured_and_findings() {
    let r = rendered(FIXTURES[2]);
    let md = r.read("report.md");
    let end = md.find("## Results").expect("a results section");
    let opening = &md[..end];
    let published = opening.find("## Published vs measured").expect("the claims section");
    let findings = opening.find("## Findings").expect("the findings section");
    assert!(published < findings, "claims first, then findings");
    assert!(!opening[..published].contains("\n## "), "nothing but the header before the claims");
    assert!(opening.contains("These verdicts come from **emulated** tiers"), "an emulated run says so");
    assert_eq!(
        opening.matches("\n| read-only-").count()
            + opening.matches("\n| wal-on-pmem-").count()
            + opening.matches("\n| all-on-pmem-").count(),
        6,
        "six claims of seed 000"
    );
    if let Some(failure) = check("seed000-claims", "report-opening.md", opening) {
        panic!("{failure}");
    }
}

#[test]
fn every_chart_has_a_png_beside_its_svg() {
    for f in FIXTURES {
        let r = rendered(f);
        let svgs = r.svgs();
        assert!(!svgs.is_empty(), "{f}: no charts");
        for svg in svgs {
            let png = svg.replace(".svg", ".png");
            assert!(r.files.contains(&png), "{f}: {svg} without {png}");
            let bytes = std::fs::read(r.root.join(&png)).unwrap();
            assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "{f}: {png}");
        }
    }
}
