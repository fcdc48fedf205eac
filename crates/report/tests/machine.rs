//! The machine's state per round: the seed000-slices fixture (recorded before runs kept it) read
//! back, then given a machine state per slice, steady or moving, as the report reads it: the
//! summary's warning, report.md's method section and runs.csv's columns.

use std::path::PathBuf;

use report::export::Body;
use report::{CsvExporter, Exporter, MarkdownExporter, ResultSet, summarize};
use results::record::MachineState;

fn fixture() -> ResultSet {
    ResultSet::load(&PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/seed000-slices")).unwrap()
}

/// A slice's state on a 2-CPU machine: `outside` % of its CPU time used outside the study.
fn state(load: f64, outside: f64, steal: f64) -> MachineState {
    MachineState {
        load1_start: Some(load),
        load1_end: Some(load + 0.3),
        cpus: 2,
        cpu_time_s: 20.0,
        steal_pct: steal,
        busy_cpu_s: 16.0,
        study_cpu_s: Some(16.0 - outside / 100.0 * 20.0),
        outside_cpu_s: Some(outside / 100.0 * 20.0),
        outside_pct: Some(outside),
    }
}

fn text(out: Vec<report::Output>, file: &str) -> String {
    let o = out.into_iter().find(|o| o.path.to_string_lossy() == file).unwrap_or_else(|| panic!("no {file}"));
    match o.body {
        Body::Bytes(b) => String::from_utf8(b).unwrap(),
        _ => panic!("{file} is not text"),
    }
}

fn machine_warnings(set: &ResultSet) -> Vec<String> {
    summarize(set).warnings.iter().map(ToString::to_string).filter(|w| w.contains("machine's state moved")).collect()
}

#[test]
fn old_result_sets_load_without_a_machine_state_and_say_nothing_of_it() {
    let set = fixture();
    assert!(set.runs.iter().all(|r| r.machine.is_none()));
    assert!(machine_warnings(&set).is_empty());
    let summary = summarize(&set);
    let md = text(MarkdownExporter { charts: vec![] }.export(&set, &summary).unwrap(), "report.md");
    assert!(!md.contains("machine state"), "no state recorded, none claimed");
}

#[test]
fn a_steady_machine_gives_no_warning_and_the_method_says_the_load() {
    let mut set = fixture();
    for (i, r) in set.runs.iter_mut().enumerate() {
        // Outside CPU 4-13%, load 1.5-3.3, steal 0-2%: within every threshold.
        r.machine = Some(state(1.5 + (i % 4) as f64 * 0.5, 4.0 + (i % 10) as f64, (i % 3) as f64));
    }
    assert_eq!(machine_warnings(&set), Vec::<String>::new());
    let summary = summarize(&set);
    let md = text(MarkdownExporter { charts: vec![] }.export(&set, &summary).unwrap(), "report.md");
    let ok = set.runs.iter().filter(|r| r.status == results::RunStatus::Ok).count();
    let line = md.lines().find(|l| l.contains("The figures hold under this machine state")).expect(&md);
    assert!(line.contains(&format!("over the {ok} measured slices (2 CPUs)")), "{line}");
    assert!(line.contains("1-minute load 1.5-3.3"), "{line}");
    assert!(line.contains("CPU used outside the study 4-13% of the machine"), "{line}");
    assert!(line.contains("steal 0.0-2.0%"), "{line}");
    let runs = text(CsvExporter.export(&set, &summary).unwrap(), "runs.csv");
    let header = runs.lines().next().unwrap();
    assert!(header.ends_with(",load1_start,load1_end,steal_pct,outside_cpu_pct"), "{header}");
    assert!(runs.lines().nth(1).unwrap().ends_with(",1.50,1.80,0.00,4.00"), "{}", runs.lines().nth(1).unwrap());
}

#[test]
fn a_moving_machine_is_warned_of_naming_the_contest_the_placement_and_the_range() {
    let mut set = fixture();
    // Half-way through, someone else starts using most of the machine: outside CPU 5% -> 60%,
    // load 1.5 -> 7 (the seed's emulated cell measured +72% at load 1-4 and +133% at 5-9).
    let half = set.runs.iter().map(|r| r.repetition).max().unwrap() / 2;
    for r in set.runs.iter_mut() {
        let busy = r.repetition > half;
        r.machine = Some(if busy { state(7.0, 60.0, 1.0) } else { state(1.5, 5.0, 1.0) });
    }
    let w = machine_warnings(&set);
    assert_eq!(w.len(), 1, "one contest: {w:?}");
    let w = &w[0];
    assert!(w.starts_with("contest read-only c8 mem 192MiB seed000-tuned: the machine's state moved"), "{w}");
    assert!(
        w.contains("all-on-pmem: CPU used outside the study 5-60% of the machine, 1-minute load 1.5-7.3 on 2 CPUs"),
        "{w}"
    );
    assert!(w.contains("nvme: "), "every placement whose rounds saw it: {w}");
    let summary = summarize(&set);
    let md = text(MarkdownExporter { charts: vec![] }.export(&set, &summary).unwrap(), "report.md");
    assert!(
        md.contains("the machine's state moved between its rounds (all-on-pmem: "),
        "report.md's warnings say it too"
    );
    let json = text(report::JsonExporter.export(&set, &summary).unwrap(), "summary.json");
    assert!(json.contains("all-on-pmem: CPU used outside the study 5-60%"), "and summary.json");

    // Steal alone moving is warned of too; a moving load of less than 2 tasks per CPU is not.
    for r in set.runs.iter_mut() {
        let busy = r.repetition > half;
        r.machine = Some(state(if busy { 4.0 } else { 1.5 }, 5.0, if busy { 15.0 } else { 0.5 }));
    }
    let w = machine_warnings(&set);
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(w[0].contains("all-on-pmem: steal 0-15%") && !w[0].contains("load"), "{}", w[0]);
}
