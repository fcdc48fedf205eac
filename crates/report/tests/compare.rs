//! `report::compare` on a fixture against itself: nothing changed, every cell matches at 0%.

use std::path::PathBuf;

#[test]
fn a_set_against_itself() {
    let fixture = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/seed003-tiers");
    let out = tempfile::tempdir().unwrap();
    let (cmp, files) = report::compare::compare(&fixture, &fixture, out.path()).unwrap();
    assert!(cmp.changes.is_empty(), "{:?}", cmp.changes);
    assert_eq!(cmp.cells.len(), 6);
    assert!(cmp.unmatched.is_empty());
    let names: Vec<String> =
        files.iter().map(|f| f.strip_prefix(out.path()).unwrap().to_string_lossy().into_owned()).collect();
    assert_eq!(names, ["comparison.md", "comparison.csv", "comparison-throughput.png", "comparison-throughput.svg"]);
    let csv = std::fs::read_to_string(out.path().join("comparison.csv")).unwrap();
    let mut lines = csv.lines();
    assert_eq!(
        lines.next(),
        Some(
            "cell,baseline_tps,contender_tps,tps_delta_pct,tps_delta_ci95_low_pct,tps_delta_ci95_high_pct,latency_delta_pct,within_noise,tps_verdict,tps_delta_holm_low_pct,tps_delta_holm_high_pct,latency_delta_ci95_low_pct,latency_delta_ci95_high_pct,latency_verdict,latency_delta_holm_low_pct,latency_delta_holm_high_pct"
        )
    );
    let first: Vec<&str> = lines.next().unwrap().split(',').collect();
    assert_eq!(first[0], "das / tproc-c / 2 clients / memory 160MiB");
    assert_eq!(first[1], first[2], "same TPS on both sides");
    assert_eq!((first[3], first[6], first[7]), ("0.00", "0.00", "true"));
    // Two runs of 90% CV each side: an interval too wide to call the sets equivalent.
    assert_eq!(first[8], "inconclusive");
    assert_eq!(lines.count(), 5);
    let md = std::fs::read_to_string(out.path().join("comparison.md")).unwrap();
    assert!(md.contains("Nothing pgtier records differs"), "{md}");
}
