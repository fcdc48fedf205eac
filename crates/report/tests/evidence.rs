//! The bottleneck rule and the claim verdicts on recorded evidence: the runs of the seed000-claims
//! fixture (an emulated run of tiers/pmem-vs-nvme.toml with wait-event samples, see
//! tests/fixtures/README.md), read back as the report reads them.

use std::path::PathBuf;

use analysis::claims::{ClaimVerdict, check_all};
use analysis::evidence::{Bottleneck, Category, Evidence, Study, judge};
use report::{ResultSet, summarize};

fn fixture() -> ResultSet {
    ResultSet::load(&PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/seed000-claims")).unwrap()
}

fn run_evidence(set: &ResultSet, id: &str) -> Evidence {
    let r = set.runs.iter().find(|r| r.run_id == id).unwrap_or_else(|| panic!("no run {id}"));
    Evidence::of_run(r, set.manifest.host.cpu_threads as f64)
}

#[test]
fn bottlenecks_of_recorded_runs() {
    let set = fixture();
    // nvme tpcb: the backends wait on the WAL (LWLock:WALWrite 32.3% + IO:WALSync 9.9% = 42%) about
    // as long as on the client (32.9%): no category leads by 1.5x.
    let e = run_evidence(&set, "0001-nvme-tpcb-c8-munlimited-r1");
    assert!((e.share(Category::WalSync) - 42.2).abs() < 0.5, "{}", e.share(Category::WalSync));
    let j = judge(&e);
    assert_eq!(j.bottleneck, Bottleneck::Mixed, "{}", j.rule);
    assert!(
        j.rule.starts_with("no category holds 40% of backend time and 1.5x the next: WAL sync 42%, client 33%"),
        "{}",
        j.rule
    );
    // With the WAL on the RAM-backed stand-in the WAL waits are gone and the backends wait for
    // their client (59.7%, more than 1.5x the data writes' 14.5%).
    let j = judge(&run_evidence(&set, "0002-wal-on-pmem-tpcb-c8-munlimited-r1"));
    assert_eq!(j.bottleneck, Bottleneck::Client, "{}", j.rule);
    // Read-only with 192 MiB on the emulated NVMe: data reads 46.4% against the client's 46.0%.
    let j = judge(&run_evidence(&set, "0023-wal-on-pmem-read-only-c8-m192MiB-r2"));
    assert_eq!(j.bottleneck, Bottleneck::Mixed, "{}", j.rule);
    // Every sampled run had about ten snapshots a second of its 12 s.
    for r in &set.runs {
        let w = r.wait_events.as_ref().expect("wait events recorded");
        assert!((110..=125).contains(&w.snapshots), "{}: {} snapshots", r.run_id, w.snapshots);
    }
}

#[test]
fn cause_and_claims_of_the_recorded_study() {
    let set = fixture();
    let summary = summarize(&set);
    let study = Study::of(&set, &summary);
    let tpcb = summary.cells.iter().find(|c| c.key.placement == "all-on-pmem" && c.key.workload == "tpcb").unwrap();
    let why = study.cause(&tpcb.key, "nvme", tpcb.tps_delta.as_ref()).unwrap();
    assert!(
        why.starts_with("Waiting for the client rose from 37% to 78% of backend time; WAL sync wait fell from"),
        "{why}"
    );
    assert!(why.contains("the run became client-bound"), "{why}");
    let checks = check_all(&set, &summary, &study);
    assert_eq!(checks.len(), 6);
    let names: Vec<&str> = checks.iter().map(|c| c.claim.name.as_str()).collect();
    assert_eq!(names[0], "wal-on-pmem-tps");
    // Two noisy runs per side on a busy machine: no claim can be decided.
    assert!(
        checks.iter().all(|c| c.verdict == ClaimVerdict::Inconclusive),
        "{:?}",
        checks.iter().map(|c| (&c.claim.name, c.verdict, &c.why)).collect::<Vec<_>>()
    );
    // The claim on the 1 GB run is checked on the emulated 192MiB cell, and says so.
    let gb = checks.iter().find(|c| c.claim.name == "read-only-1GB-pmem").unwrap();
    assert!(gb.cell.contains("memory 192MiB"), "{}", gb.cell);
    assert!(gb.claim.emulation_note.as_deref().unwrap().contains("the study's memory limit 1GiB; emulated 192MiB"));
}

#[test]
fn a_claim_across_result_sets_is_judged_by_the_comparison_only() {
    let a = fixture();
    let mut b = fixture();
    b.manifest.claims = vec![results::manifest::ClaimRecord {
        name: "releases-tps".into(),
        text: "the overall performance increased by 25%".into(),
        placement: "nvme".into(),
        against: "nvme".into(),
        workload: "tpcb".into(),
        clients: Some(8),
        memory_limit: Some("unlimited".into()),
        profile: Some("seed000-tuned".into()),
        metric: "tps".into(),
        figure: "+25%".into(),
        low_pct: 25.0,
        high_pct: 25.0,
        across: "result-sets".into(),
        ..Default::default()
    }];
    // In its own report the claim waits for a second set.
    let sb = summarize(&b);
    let own = check_all(&b, &sb, &Study::of(&b, &sb));
    assert_eq!(own[0].verdict, ClaimVerdict::NeedsTwoResultSets);
    // Against the same runs as the baseline set: no change at all, an interval around it.
    let sa = summarize(&a);
    let across = analysis::claims::check_across(&a, &sa, &b, &sb);
    assert_eq!(across.len(), 1);
    let d = across[0].measured.expect("a measured change");
    assert!(d.pct.abs() < 1e-9 && d.has_interval(), "{d:?}");
    assert_eq!(across[0].cell, "tpcb 8 clients, memory unlimited, profile seed000-tuned");
    let expected = if d.pct_high >= 25.0 { ClaimVerdict::Inconclusive } else { ClaimVerdict::Contradicted };
    assert_eq!(across[0].verdict, expected, "{:?}", across[0].why);
}

/// A claim across profiles (`across = "profiles"`) on the seed004-sweep fixture's own contrast:
/// judged by the contrast's change (Welch on the logs of separate runs, Holm over the contrast),
/// tpcb at 2 clients: +15.17% [-75.76, +447.16] (contrast.csv's golden row).
#[test]
fn a_claim_across_profiles_is_judged_by_the_studys_contrast() {
    let mut set =
        ResultSet::load(&PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/seed004-sweep")).unwrap();
    let mut claim = set.manifest.claims[0].clone();
    claim.name = "tuned-tps".into();
    claim.across = "profiles".into();
    claim.profile = Some("seed004-performance".into());
    claim.at_peak = false;
    claim.clients = Some(2);
    (claim.low_pct, claim.high_pct, claim.figure) = (10.0, 10.0, "+10%".into());
    set.manifest.claims = vec![claim];
    let summary = summarize(&set);
    let study = Study::of(&set, &summary);
    let checks = check_all(&set, &summary, &study);
    let c = &checks[0];
    let d = c.measured.expect("measured");
    assert!(
        (d.pct - 15.17).abs() < 0.01 && (d.pct_low + 75.76).abs() < 0.01 && (d.pct_high - 447.16).abs() < 0.01,
        "{d:?}"
    );
    assert_eq!(c.verdict, ClaimVerdict::Inconclusive, "{}", c.why);
    assert!(c.cell.contains("profile seed004-performance against default"), "{}", c.cell);
}

#[test]
fn a_pinned_client_that_bounds_cells_is_warned_of() {
    let markdown = |set: &ResultSet| {
        let summary = summarize(set);
        report::document::markdown::render(&report::markdown::document(set, &summary, &[]))
    };
    let mut set = fixture();
    let warning = "the pinned client may be their ceiling";
    assert!(!markdown(&set).contains(warning), "no pinning, no warning");
    set.manifest.measurement.pinning =
        Some(results::manifest::PinningRecord { client: "0".into(), servers: "1".into() });
    let text = markdown(&set);
    let line = text.lines().find(|l| l.contains(warning)).unwrap_or_else(|| panic!("{text}"));
    // The fixture's client-bound cells (wal-on-pmem tpcb, above) are named.
    assert!(line.starts_with("- pgbench was pinned (`pin_client = \"0\"`) and "), "{line}");
    assert!(line.contains("wal-on-pmem / tpcb / 8 clients"), "{line}");
    // A warning of the summary: summary.json and the terminal say it too.
    let json = serde_json::to_string(&summarize(&set).warnings).unwrap();
    assert!(json.contains(warning), "{json}");
}

#[test]
fn the_study_reproduced_is_cited_under_the_description_and_a_handicap_is_said() {
    let markdown = |set: &ResultSet| {
        let summary = summarize(set);
        report::document::markdown::render(&report::markdown::document(set, &summary, &[]))
    };
    let mut set = fixture();
    assert!(!markdown(&set).contains("Reproduces:"), "no study, no line");
    assert!(!markdown(&set).contains("A test of the method"), "no handicap, no line");
    set.manifest.experiment_study = Some("Andre Leibovici, \"Revisiting PostgreSQL Performance\"".into());
    set.manifest.measurement.handicap = Some(results::manifest::HandicapRecord { cpus: 1.0, spread_pct: 5.66 });
    let text = markdown(&set);
    assert!(text.contains("\nReproduces: Andre Leibovici, \"Revisiting PostgreSQL Performance\"\n"), "{text}");
    assert!(text.contains("**A test of the method, not a measurement of storage**: every server life ran under a CPU quota of its own, 1 CPUs times exp(5.66% x z)"), "{text}");
}

#[test]
fn a_claim_in_a_regime_unlike_the_studys_is_not_comparable_here() {
    // The study's 3.4x: 742 GB of data on a VM of 200 GB (73% out of memory); its 1 GB run
    // (99.9%). The fixture's read-only cells: the data set of scale 40 (about 600 MiB) with memory
    // unlimited (all held in memory) and in 192MiB (about 68% out of memory).
    let mut set = fixture();
    let gb = 1_000_000_000u64;
    for c in set.manifest.claims.iter_mut().filter(|c| c.workload == "read-only") {
        c.study_data_set_bytes = Some(742 * gb);
        c.study_memory_bytes = Some(if c.name == "read-only-1GB-pmem" { gb } else { 200 * gb });
    }
    let summary = summarize(&set);
    let study = Study::of(&set, &summary);
    let checks = check_all(&set, &summary, &study);
    let of = |name: &str| checks.iter().find(|c| c.claim.name == name).unwrap();
    let unlimited = of("read-only-pmem");
    assert_eq!(unlimited.verdict, ClaimVerdict::NotComparable, "{}", unlimited.why);
    assert!(
        unlimited.why.contains("the study: a data set 3.71 times the memory (73% of it out of memory)"),
        "{}",
        unlimited.why
    );
    assert!(unlimited.why.contains("this cell: a data set 0.0"), "{}", unlimited.why);
    assert!(unlimited.why.contains("(all held in memory)"), "{}", unlimited.why);
    // The 1 GB run against 192MiB: 99.9% against about 68% out of memory.
    let one = of("read-only-1GB-pmem");
    assert_eq!(one.verdict, ClaimVerdict::NotComparable, "{}", one.why);
    assert!(one.why.contains("(100% of it out of memory)") || one.why.contains("(99"), "{}", one.why);
    // The claims without a regime are judged as before; a regime alike would be judged and shown.
    assert_eq!(of("wal-on-pmem-tps").verdict, ClaimVerdict::Inconclusive);
    assert!(of("wal-on-pmem-tps").regime.is_none());
    assert!(
        (analysis::claims::out_of_memory_pct(742 * gb, 200 * gb)
            - analysis::claims::out_of_memory_pct(606 << 20, 192 << 20))
        .abs()
            <= analysis::claims::REGIME_TOLERANCE_PCT
    );
}
