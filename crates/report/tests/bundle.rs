//! `report::bundle`: a rendered result set as one .tar.gz, with the report, the tables, the
//! manifest and the charts, without the runs' raw outputs unless asked; never over a file.

mod common;

use std::io::Read;

use common::rendered;

fn entries(file: &std::path::Path) -> Vec<String> {
    let gz = flate2::read::GzDecoder::new(std::fs::File::open(file).unwrap());
    let mut tar = tar::Archive::new(gz);
    tar.entries().unwrap().map(|e| e.unwrap().path().unwrap().display().to_string()).collect()
}

#[test]
fn a_bundle_holds_the_report_and_tables_and_leaves_out_the_raw_runs() {
    let r = rendered("seed000-slices");
    let out = tempfile::tempdir().unwrap();
    let file = out.path().join("seed000.tar.gz");
    let b = report::bundle::write(&r.root, &file, false).unwrap();
    let names = entries(&file);
    for want in [
        "seed000/manifest.json",
        "seed000/summary.csv",
        "seed000/runs.csv",
        "seed000/series.csv",
        "seed000/report.md",
        "seed000/report.html",
        "seed000/report-run-order.md",
        "seed000/BUNDLE.txt",
    ] {
        assert!(names.iter().any(|n| n == want), "{want} missing from {names:?}");
    }
    assert!(names.iter().any(|n| n.starts_with("seed000/charts/") && n.ends_with(".svg")), "the charts");
    assert!(!names.iter().any(|n| n.starts_with("seed000/runs/")), "no raw outputs unless asked");
    assert!(b.entries.len() >= 8);
    let mut note = String::new();
    let gz = flate2::read::GzDecoder::new(std::fs::File::open(&file).unwrap());
    let mut tar = tar::Archive::new(gz);
    for e in tar.entries().unwrap() {
        let mut e = e.unwrap();
        if e.path().unwrap().ends_with("BUNDLE.txt") {
            e.read_to_string(&mut note).unwrap();
        }
    }
    assert!(note.contains("Left out: runs/"), "{note}");

    let err = report::bundle::write(&r.root, &file, false).unwrap_err();
    assert!(err.to_string().contains("exists"), "never over a file: {err}");
    let err = report::bundle::write(&r.root, &out.path().join("x.zip"), false).unwrap_err();
    assert!(err.to_string().contains(".tar.gz"), "{err}");

    let raw = out.path().join("raw.tgz");
    report::bundle::write(&r.root, &raw, true).unwrap();
    assert!(entries(&raw).iter().any(|n| n.starts_with("raw/runs/")), "--bundle-raw adds runs/");
}
