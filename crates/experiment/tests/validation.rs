//! The experiment file: what it accepts, what --emulate changes, and errors that name the file,
//! line and key.

mod common;

use std::path::Path;
use std::time::Duration;

use common::*;
use experiment::{ConfigErrors, LoadOptions, parse};

fn errors(text: &str, emulate: bool) -> ConfigErrors {
    parse(Path::new("exp.toml"), text, &opts(emulate)).expect_err("should be rejected")
}

fn line_of(text: &str, needle: &str) -> usize {
    text.lines().position(|l| l.contains(needle)).expect("needle in text") + 1
}

#[test]
fn base_file_resolves() {
    let e = parse(Path::new("exp.toml"), BASE, &opts(false)).unwrap();
    assert_eq!(e.baseline, "fast");
    assert_eq!(e.repetitions, 3, "default repetitions");
    assert_eq!(e.devices.len(), 2);
    assert_eq!(e.devices[1].dax, tiers::DaxPolicy::Required, "pmem asks for DAX by default");
    let w = &e.workloads[0];
    // 1, 2, then 20% and 99.9% of 40 threads (truncated like seed 004's bc scale=0).
    assert_eq!(w.clients, vec![1, 2, 8, 39]);
    assert_eq!(w.duration, Duration::from_secs(600));
    assert_eq!(w.scale(), 100);
    assert_eq!(e.memory_limits.iter().map(|m| m.bytes).collect::<Vec<_>>(), vec![None]);
}

#[test]
fn emulate_overrides_apply_only_with_emulate() {
    let e = parse(Path::new("exp.toml"), BASE, &opts(true)).unwrap();
    let w = &e.workloads[0];
    assert_eq!(w.scale(), 5);
    assert_eq!(w.clients, vec![4]);
    assert_eq!(w.duration, Duration::from_secs(5));
    assert_eq!(e.memory_limits.iter().map(|m| m.bytes).collect::<Vec<_>>(), vec![Some(256 << 20)]);
    assert_eq!(e.devices[0].emulation.size_bytes, 1 << 30);
    assert_eq!(e.profiles[0].profile.settings.get("shared_buffers").map(String::as_str), Some("32MB"));
    let real = parse(Path::new("exp.toml"), BASE, &opts(false)).unwrap();
    assert!(real.profiles[0].profile.settings.is_empty(), "no emulate settings without --emulate");
}

#[test]
fn errors_in_emulate_overrides_name_the_emulate_line() {
    let text = BASE.replace("scale = 5", "scale = 0").replace("duration = \"5s\"", "duration = \"500ms\"");
    let errs = errors(&text, true);
    let find = |k: &str| errs.0.iter().find(|e| e.key.as_deref() == Some(k)).unwrap_or_else(|| panic!("{k}: {errs}"));
    assert_eq!(find("emulate.duration").line, Some(line_of(&text, "duration = \"500ms\"")));
    assert_eq!(find("emulate.scale").line, Some(line_of(&text, "scale = 0")));
    assert!(!errs.0.iter().any(|e| e.key.as_deref() == Some("workload[rw].duration")), "{errs}");
    // Without --emulate the overrides do not apply, and the workload's own values are fine.
    assert!(parse(Path::new("exp.toml"), &text, &opts(false)).is_ok());
}

#[test]
fn unknown_key_names_line_and_key() {
    let text = BASE.replace("builtin = \"tpcb-like\"", "builtin = \"tpcb-like\"\nbuiltinn = \"x\"");
    let errs = errors(&text, false);
    let e = &errs.0[0];
    assert_eq!(e.line, Some(line_of(&text, "builtinn")));
    assert_eq!(e.key.as_deref(), Some("workload[rw].builtinn"));
    assert!(e.message.contains("unknown key `builtinn`") && e.message.contains("did you mean `builtin`?"), "{e}");
    let shown = errs.to_string();
    assert!(shown.starts_with(&format!("exp.toml:{}:", line_of(&text, "builtinn"))), "{shown}");
}

#[test]
fn every_unknown_key_is_reported_with_the_rest_in_file_order() {
    let text = BASE
        .replace("baseline = \"fast\"", "baseline = \"fast\"\nrepetitons = 5")
        .replace("path = \"/dev/disk/by-id/nvme-A\"", "path = \"/dev/disk/by-id/nvme-A\"\nmount_option = [\"noatime\"]")
        .replace("data = \"d2\"", "data = \"d3\"")
        .replace("builtin = \"tpcb-like\"", "builtin = \"tpcb-like\"\nrepetitions = 2\ncolour = \"blue\"");
    let errs = errors(&text, false);
    let got: Vec<(Option<usize>, &str)> = errs.0.iter().map(|e| (e.line, e.key.as_deref().unwrap_or(""))).collect();
    assert_eq!(
        got,
        vec![
            (Some(line_of(&text, "repetitons")), "experiment.repetitons"),
            (Some(line_of(&text, "mount_option")), "device[d1].mount_option"),
            (Some(line_of(&text, "\"d3\"")), "placement[pm].data"),
            (Some(line_of(&text, "repetitions = 2")), "workload[rw].repetitions"),
            (Some(line_of(&text, "colour")), "workload[rw].colour"),
        ],
        "{errs}"
    );
    assert!(errs.0[0].message.ends_with("did you mean `repetitions`?"), "{errs}");
    assert!(errs.0[1].message.ends_with("did you mean `mount_options`?"), "{errs}");
    assert!(errs.0[3].message.contains("it is a key of [experiment] and [emulate]; move it there"), "{errs}");
    assert!(errs.0[4].message.contains("its keys are name, kind, builtin"), "{errs}");
    // An unknown section is a near miss among the sections.
    let text = BASE.replace("[[workload]]", "[[workloads]]");
    let errs = errors(&text, false);
    let e = errs.0.iter().find(|e| e.key.as_deref() == Some("workloads")).expect("the unknown section");
    assert!(e.message.contains("did you mean `workload`?"), "{errs}");
}

/// The issue's file with three mistakes: three errors, in the order of the file, each saying
/// what was written and how to fix it.
#[test]
fn three_mistakes_three_errors_in_file_order_each_with_its_fix() {
    let text = BASE
        .replace("baseline = \"fast\"", "baseline = \"fast\"\nrepetitons = 5")
        .replace("path = \"/dev/disk/by-id/nvme-A\"", "path = \"/srv/not-a-device\"")
        .replace("duration = \"10min\"", "duration = \"60\"");
    let errs = errors(&text, false);
    println!("{errs}");
    let shown: Vec<String> = errs.0.iter().map(ToString::to_string).collect();
    assert_eq!(
        shown,
        vec![
            format!(
                "exp.toml:{}:1: key `experiment.repetitons`: unknown key `repetitons` in [experiment]; did you mean `repetitions`?",
                line_of(&text, "repetitons")
            ),
            format!(
                "exp.toml:{}:8: key `device[d1].path`: path = \"/srv/not-a-device\": the real device is a path under /dev (best a stable /dev/disk/by-id/... name)",
                line_of(&text, "not-a-device")
            ),
            format!(
                "exp.toml:{}:12: key `workload[rw].duration`: \"60\" has no unit; write \"60s\" for seconds (or \"60ms\", \"60min\", \"60h\")",
                line_of(&text, "duration = \"60\"")
            ),
        ]
    );
}

/// A value of the wrong type does not hide the rest: each is reported (a number where a
/// duration goes with the fix), and validation runs on the others.
#[test]
fn values_of_the_wrong_type_are_all_reported_with_the_other_problems() {
    let text = BASE
        .replace("baseline = \"fast\"", "baseline = \"fast\"\nrepetitions = \"three\"")
        .replace("data = \"d2\"", "data = \"d3\"")
        .replace("scale = 100", "scale = \"big\"")
        .replace("duration = \"10min\"", "duration = 600")
        .replace("device_size = \"1GiB\"", "device_size = 4");
    let errs = errors(&text, false);
    println!("{errs}");
    let got: Vec<(Option<usize>, &str)> = errs.0.iter().map(|e| (e.line, e.key.as_deref().unwrap_or(""))).collect();
    assert_eq!(
        got,
        vec![
            (Some(line_of(&text, "\"three\"")), "experiment.repetitions"),
            (Some(line_of(&text, "\"d3\"")), "placement[pm].data"),
            (Some(line_of(&text, "\"big\"")), "workload[rw].scale"),
            (Some(line_of(&text, "duration = 600")), "workload[rw].duration"),
            (Some(line_of(&text, "device_size = 4")), "emulate.device_size"),
        ],
        "{errs}"
    );
    assert_eq!(errs.0[0].message, "invalid type: string \"three\", expected a whole number", "{errs}");
    assert!(errs.0[3].message.contains("write duration = \"600s\""), "{errs}");
    assert!(errs.0[4].message.contains("write device_size = \"4GiB\" (2^30 bytes) or \"4GB\""), "{errs}");
}

#[test]
fn sizes_and_durations_say_their_unit_but_postgres_settings_keep_postgres_units() {
    let text = BASE
        .replace("device_size = \"1GiB\"", "device_size = \"4\"")
        .replace("memory_limits = [\"256MiB\"]", "memory_limits = [\"512\"]")
        .replace("duration = \"5s\"", "duration = \"5\"");
    let errs = errors(&text, true);
    let find = |k: &str| errs.0.iter().find(|e| e.key.as_deref() == Some(k)).unwrap_or_else(|| panic!("{k}: {errs}"));
    assert!(find("emulate.device_size").message.contains("\"4\" has no unit; write \"4GiB\""), "{errs}");
    assert!(find("emulate.memory_limits").message.contains("\"512\" has no unit; write \"512GiB\""), "{errs}");
    assert!(find("emulate.duration").message.contains("write \"5s\""), "{errs}");
    // A PostgreSQL setting's bare number is PostgreSQL's own unit (8 kB pages for shared_buffers).
    let text = BASE.replace("shared_buffers = \"32MB\"", "shared_buffers = 4096");
    let e = parse(Path::new("exp.toml"), &text, &opts(true)).unwrap();
    assert_eq!(e.profiles[0].profile.settings.get("shared_buffers").map(String::as_str), Some("4096"));
    // Zero is zero in any unit.
    let text = BASE.replace("baseline = \"fast\"", "baseline = \"fast\"\ndevice_probe = \"0\"");
    assert!(parse(Path::new("exp.toml"), &text, &opts(false)).is_ok());
}

#[test]
fn undefined_device_in_placement() {
    let text = BASE.replace("data = \"d2\"", "data = \"d3\"");
    let errs = errors(&text, false);
    let e = errs.0.iter().find(|e| e.key.as_deref() == Some("placement[pm].data")).expect("placement error");
    assert_eq!(e.line, Some(line_of(&text, "data = \"d3\"")));
    assert!(e.message.contains("no device named \"d3\"") && e.message.contains("d1, d2"), "{e}");
}

#[test]
fn several_problems_are_reported_together() {
    let text = BASE
        .replace("baseline = \"fast\"", "baseline = \"slow\"")
        .replace("scale = 100", "scale = 0")
        .replace("duration = \"10min\"", "duration = \"10 fortnights\"");
    let errs = errors(&text, false);
    let keys: Vec<&str> = errs.0.iter().filter_map(|e| e.key.as_deref()).collect();
    assert!(keys.contains(&"experiment.baseline"), "{keys:?}");
    assert!(keys.contains(&"workload[rw].scale"), "{keys:?}");
    assert!(keys.contains(&"workload[rw].duration"), "{keys:?}");
}

#[test]
fn class_specific_keys() {
    let text = BASE.replace("path = \"/dev/disk/by-id/nvme-A\"", "");
    let e = &errors(&text, false).0[0];
    assert_eq!(e.key.as_deref(), Some("device[d1].path"));
    assert!(e.message.contains("needs `path`"), "{e}");
    let text = BASE.replace("namespace = \"namespace0.0\"", "namespace = \"namespace0.0\"\npath = \"/dev/pmem0\"");
    assert!(errors(&text, false).0.iter().any(|e| e.message.contains("does not apply to a pmem device")));
    let text = BASE.replace("class = \"pmem\"", "class = \"optane\"");
    let e = &errors(&text, false).0[0];
    assert_eq!(e.line, Some(line_of(&text, "optane")));
}

#[test]
fn bad_units_and_types() {
    let text = BASE.replace("device_size = \"1GiB\"", "device_size = \"1 lightyear\"");
    let e = &errors(&text, true).0[0];
    assert_eq!(e.key.as_deref(), Some("emulate.device_size"));
    assert!(e.message.contains("unknown size unit"), "{e}");
    let text = BASE.replace("scale = 100", "scale = \"big\"");
    let e = &errors(&text, false).0[0];
    assert_eq!(e.line, Some(line_of(&text, "scale = \"big\"")));
    let text = BASE.replace("clients = [1, 2, \"20%\", \"99.9%\"]", "clients = [0]");
    assert!(errors(&text, false).0[0].message.contains("not a client count"));
}

#[test]
fn duplicate_names() {
    let text = BASE.replace("name = \"d2\"", "name = \"d1\"");
    assert!(errors(&text, false).0.iter().any(|e| e.message.contains("defined twice")));
}

#[test]
fn memory_limit_below_shared_buffers_is_rejected() {
    let text = BASE.replace("shared_buffers = \"32MB\"", "shared_buffers = \"512MB\"");
    let e = errors(&text, true);
    assert!(e.0.iter().any(|e| e.message.contains("OOM killer")), "{e}");
}

#[test]
fn memory_limit_the_server_cannot_live_in_names_file_line_key_and_numbers() {
    // The limit's own entry sets shared_buffers: the error points at that entry.
    let text = BASE.replace(
        "memory_limits = [\"unlimited\"]",
        "memory_limits = [\"unlimited\", { limit = \"128MiB\", settings = { shared_buffers = \"120MB\" } }]",
    );
    let e = errors(&text, false);
    let err = e.0.iter().find(|e| e.message.contains("OOM killer")).unwrap_or_else(|| panic!("{e}"));
    assert_eq!(err.file, Path::new("exp.toml"));
    assert_eq!(err.line, Some(line_of(&text, "limit = \"128MiB\"")), "{err}");
    assert_eq!(err.key.as_deref(), Some("postgres.memory_limits[1]"), "{err}");
    for needle in ["the server always needs about", "shared_buffers 120 MiB", "shared_buffers at exp.toml:"] {
        assert!(err.message.contains(needle), "{needle:?} in {err}");
    }
}

#[test]
fn memory_limit_the_server_will_likely_outgrow_is_warned_about_with_the_setting_that_needs_it() {
    // A large statistics target: every automatic ANALYZE holds a big sample (an estimate, so a
    // warning that names where the setting is, not a refusal).
    let text = BASE.replace("[emulate.settings]\n", "[emulate.settings]\ndefault_statistics_target = 2000\n");
    let e = parse(Path::new("exp.toml"), &text, &opts(true)).unwrap();
    let line = line_of(&text, "default_statistics_target = 2000");
    let w = e.warnings.iter().find(|w| w.contains("will likely need")).unwrap_or_else(|| panic!("{:?}", e.warnings));
    assert!(w.contains("256MiB memory limit") && w.contains("default_statistics_target 2000"), "{w}");
    assert!(w.contains(&format!("exp.toml:{line} `emulate.settings.default_statistics_target`")), "{w}");
    // Without --emulate the limit is unlimited: nothing to warn about.
    let e = parse(Path::new("exp.toml"), &text, &opts(false)).unwrap();
    assert!(!e.warnings.iter().any(|w| w.contains("will likely need")), "{:?}", e.warnings);
}

#[test]
fn huge_pages_on_is_recorded_with_where_it_was_set() {
    let text = BASE.replace("[postgres]\n", "[postgres]\nsettings = { huge_pages = \"on\" }\n");
    let e = parse(Path::new("exp.toml"), &text, &opts(false)).unwrap();
    assert_eq!(e.huge_pages_needs.len(), 1);
    let n = &e.huge_pages_needs[0];
    assert_eq!(
        (n.origin.line, n.origin.key.as_str()),
        (Some(line_of(&text, "huge_pages")), "postgres.settings.huge_pages")
    );
    assert!(n.shared_memory_bytes > 128 << 20, "shared_buffers' default and more");
    // [emulate.settings] in BASE does not touch huge_pages: still on when emulating.
    assert_eq!(parse(Path::new("exp.toml"), &text, &opts(true)).unwrap().huge_pages_needs.len(), 1);
}

#[test]
fn nbd_latency_in_whole_microseconds() {
    let with = |lat: &str| {
        BASE.replace(
            "namespace = \"namespace0.0\"",
            &format!("namespace = \"namespace0.0\"\n[device.emulate]\nbacking = \"nbd\"\nlatency = \"{lat}\""),
        )
    };
    let e = parse(Path::new("exp.toml"), &with("200us"), &opts(true)).unwrap();
    assert_eq!(e.devices[1].emulation.latency, Some(Duration::from_micros(200)));
    assert!(e.warnings.iter().any(|w| w.contains("gcc")), "{:?}", e.warnings);
    let e = errors(&with("0.5us"), true);
    assert!(e.0.iter().any(|e| e.message.contains("whole microseconds")), "{e}");
}

#[test]
fn missing_profile_lists_the_known_ones() {
    let text = BASE.replace("profiles = [\"default\"]", "profiles = [\"turbo\"]");
    let e = &errors(&text, false).0[0];
    assert!(e.message.contains("no settings profile \"turbo\"") && e.message.contains("default"), "{e}");
}

#[test]
fn memory_limit_with_its_own_settings() {
    let text = BASE.replace(
        "memory_limits = [\"unlimited\"]",
        "memory_limits = [\"unlimited\", { limit = \"1GiB\", settings = { shared_buffers = \"256MB\" } }]",
    );
    let e = parse(Path::new("exp.toml"), &text, &opts(false)).unwrap();
    assert_eq!(e.memory_limits[1].bytes, Some(1 << 30));
    assert_eq!(e.memory_limits[1].settings["shared_buffers"], "256MB");
    let text = text.replace("shared_buffers = \"256MB\"", "shared_buffers = \"2GB\"");
    assert!(errors(&text, false).0.iter().any(|e| e.message.contains("OOM killer")));
}

#[test]
fn os_user_root_is_refused() {
    let text = BASE.replace("[postgres]", "[postgres]\nos_user = \"root\"");
    assert!(errors(&text, false).0.iter().any(|e| e.message.contains("never runs as root")));
}

#[test]
fn shipped_experiment_files_are_valid_both_ways() {
    let dir = repo().join("tiers");
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).unwrap().flatten() {
        let p = entry.path();
        if p.extension().and_then(|e| e.to_str()) != Some("toml") {
            continue;
        }
        for emulate in [false, true] {
            if let Err(e) =
                experiment::load(&p, &LoadOptions { emulate, configs_dir: repo().join("configs"), hardware_threads: 2 })
            {
                panic!("{} (emulate {emulate}):\n{e}", p.display());
            }
        }
        n += 1;
    }
    assert!(n >= 1, "no experiment files found in {}", dir.display());
}

/// The commented template of docs/experiment-file.md: two NVMe drives and a PMem namespace,
/// valid on real hardware and with --emulate.
#[test]
fn the_template_for_two_nvme_drives_and_pmem_is_valid() {
    let file = repo().join("tiers/template-two-nvme-and-pmem.toml");
    for emulate in [false, true] {
        let e = experiment::load(&file, &opts(emulate)).unwrap_or_else(|e| panic!("emulate {emulate}:\n{e}"));
        let classes: Vec<String> = e.devices.iter().map(|d| d.class.to_string()).collect();
        assert_eq!(classes, ["nvme", "nvme", "pmem"]);
        assert_eq!(e.placements.len(), 3);
        assert_eq!(e.baseline, "nvme");
        assert!(e.warnings.is_empty(), "emulate {emulate}: {:?}", e.warnings);
    }
}

#[test]
fn settings_that_pgtier_owns_or_that_run_commands_are_refused() {
    for (k, v) in [
        ("data_directory", "'/var/lib/postgresql/15/main'"),
        ("listen_addresses", "'*'"),
        ("archive_command", "'cp %p /x'"),
        ("include_dir", "'conf.d'"),
    ] {
        let text = BASE.replace("[emulate.settings]\n", &format!("[emulate.settings]\n{k} = {v}\n"));
        let e = errors(&text, true);
        assert!(e.0.iter().any(|e| e.key.as_deref() == Some(&format!("emulate.settings.{k}")[..])), "{k}: {e}");
    }
}

#[test]
fn mkfs_options_that_reach_other_devices_or_force_are_refused() {
    for opt in [
        "\"-l\", \"logdev=/dev/sdz,size=1g\"",
        "\"-r\", \"rtdev=/dev/sdz\"",
        "\"-Kf\"",
        "\"--force\"",
        "\"-d\", \"name=/dev/sdz\"",
    ] {
        let text = BASE.replace(
            "path = \"/dev/disk/by-id/nvme-A\"",
            &format!("path = \"/dev/disk/by-id/nvme-A\"\nmkfs_options = [{opt}]"),
        );
        let e = errors(&text, false);
        assert!(e.0.iter().any(|e| e.key.as_deref() == Some("device[d1].mkfs_options")), "{opt}: {e}");
    }
    let ok = BASE.replace(
        "path = \"/dev/disk/by-id/nvme-A\"",
        "path = \"/dev/disk/by-id/nvme-A\"\nmkfs_options = [\"-b\", \"size=4096\", \"-d\", \"agsize=2g\"]",
    );
    assert!(parse(Path::new("exp.toml"), &ok, &opts(false)).is_ok());
    let text = BASE.replace(
        "path = \"/dev/disk/by-id/nvme-A\"",
        "path = \"/dev/disk/by-id/nvme-A\"\nmount_options = [\"logdev=/dev/sdz\"]",
    );
    assert!(errors(&text, false).0.iter().any(|e| e.key.as_deref() == Some("device[d1].mount_options")));
}

#[test]
fn pgbench_arguments_are_an_allow_list() {
    let with =
        |args: &str| BASE.replace("duration = \"10min\"", &format!("duration = \"10min\"\nextra_args = [{args}]"));
    assert!(
        parse(Path::new("exp.toml"), &with("\"-M\", \"prepared\", \"--max-tries=3\", \"-n\""), &opts(false)).is_ok()
    );
    for bad in ["\"-f\", \"x.sql\"", "\"--time=5\"", "\"-T5\"", "\"--log-prefix=/etc/x\"", "\"--client=9\""] {
        let e = errors(&with(bad), false);
        assert!(e.0.iter().any(|e| e.message.contains("is not accepted")), "{bad}: {e}");
    }
}

/// `text` with `[emulate] key = value` (replacing the key's line if the section has one).
fn with_override(text: &str, key: &str, value: &str) -> String {
    let mut out = Vec::new();
    let mut in_emulate = false;
    for l in text.lines() {
        if l.starts_with('[') {
            in_emulate = l == "[emulate]";
        }
        if in_emulate && l.starts_with(&format!("{key} =")) {
            continue;
        }
        out.push(l.to_string());
        if l == "[emulate]" {
            out.push(format!("{key} = {value}"));
        }
    }
    out.join("\n") + "\n"
}

/// `text` with a `[device.emulate]` table for device d2.
fn with_d2_emulate(text: &str, body: &str) -> String {
    text.replace("namespace = \"namespace0.0\"", &format!("namespace = \"namespace0.0\"\n[device.emulate]\n{body}"))
}

/// BASE with its pgbench workload made a TPC-C one (for `warehouses`).
fn tpcc_base() -> String {
    BASE.replace("kind = \"pgbench\"\nbuiltin = \"tpcb-like\"\nscale = 100", "kind = \"tpcc\"\nwarehouses = 2")
}

/// Every `[emulate]` override: a wrong override names `emulate.<key>` and its line when emulating;
/// a wrong value of the file's own names the file's key and line when not emulating.
#[test]
fn every_override_error_names_the_line_and_key_it_came_from() {
    struct Case {
        key: &'static str,
        bad: &'static str,
        own_key: &'static str,
        /// Makes the file's own value wrong; the needle finds its line.
        own: fn(&str) -> String,
        own_needle: &'static str,
        base: fn() -> String,
    }
    let base = || BASE.to_string();
    let cases = [
        Case {
            key: "threads",
            bad: "0",
            own_key: "workload[rw].threads",
            own: |t| t.replace("duration = \"10min\"", "duration = \"10min\"\nthreads = 0"),
            own_needle: "threads = 0",
            base,
        },
        Case {
            key: "repetitions",
            bad: "0",
            own_key: "experiment.repetitions",
            own: |t| t.replace("baseline = \"fast\"", "baseline = \"fast\"\nrepetitions = 0"),
            own_needle: "repetitions = 0",
            base,
        },
        Case {
            key: "device_size",
            bad: "\"1MiB\"",
            own_key: "device[d2].emulate.size",
            own: |t| with_d2_emulate(t, "size = \"1MiB\""),
            own_needle: "size = \"1MiB\"",
            base,
        },
        Case {
            key: "clients",
            bad: "[0]",
            own_key: "workload[rw].clients",
            own: |t| t.replace("clients = [1, 2, \"20%\", \"99.9%\"]", "clients = [0]"),
            own_needle: "clients = [0]",
            base,
        },
        Case {
            key: "ramp_up",
            bad: "\"soon\"",
            own_key: "workload[rw].ramp_up",
            own: |t| t.replace("duration = \"10min\"", "duration = \"10min\"\nramp_up = \"soon\""),
            own_needle: "ramp_up = \"soon\"",
            base,
        },
        Case {
            key: "device_probe",
            bad: "\"soon\"",
            own_key: "experiment.device_probe",
            own: |t| t.replace("baseline = \"fast\"", "baseline = \"fast\"\ndevice_probe = \"soon\""),
            own_needle: "device_probe = \"soon\"",
            base,
        },
        Case {
            key: "memory_limits",
            bad: "[\"1MiB\"]",
            own_key: "postgres.memory_limits",
            own: |t| t.replace("memory_limits = [\"unlimited\"]", "memory_limits = [\"1MiB\"]"),
            own_needle: "memory_limits = [\"1MiB\"]",
            base,
        },
        Case {
            key: "scale",
            bad: "0",
            own_key: "workload[rw].scale",
            own: |t| t.replace("scale = 100", "scale = 0"),
            own_needle: "scale = 0",
            base,
        },
        Case {
            key: "warehouses",
            bad: "0",
            own_key: "workload[rw].warehouses",
            own: |t| t.replace("warehouses = 2", "warehouses = 0"),
            own_needle: "warehouses = 0",
            base: tpcc_base,
        },
        Case {
            key: "duration",
            bad: "\"500ms\"",
            own_key: "workload[rw].duration",
            own: |t| t.replace("duration = \"10min\"", "duration = \"500ms\""),
            own_needle: "duration = \"500ms\"",
            base,
        },
    ];
    for c in &cases {
        let emulate_key = format!("emulate.{}", c.key);
        // A wrong override, the file's own value fine.
        let text = with_override(&(c.base)(), c.key, c.bad);
        let errs = errors(&text, true);
        let found: Vec<_> = errs.0.iter().filter(|e| e.key.as_deref() == Some(emulate_key.as_str())).collect();
        assert_eq!(found.len(), 1, "{emulate_key} reported once: {errs}");
        assert_eq!(found[0].line, Some(line_of(&text, &format!("{} = {}", c.key, c.bad))), "{emulate_key}: {errs}");
        assert!(!errs.0.iter().any(|e| e.key.as_deref() == Some(c.own_key)), "{emulate_key}: {errs}");
        // The file's own value wrong, not emulating.
        let text = (c.own)(&(c.base)());
        assert_ne!(text, (c.base)(), "{}: the case changes the file", c.own_key);
        let errs = errors(&text, false);
        let e = errs.0.iter().find(|e| e.key.as_deref() == Some(c.own_key)).unwrap_or_else(|| panic!("{errs}"));
        assert_eq!(e.line, Some(line_of(&text, c.own_needle)), "{}: {errs}", c.own_key);
        assert!(!errs.0.iter().any(|e| e.key.as_deref() == Some(emulate_key.as_str())), "{}: {errs}", c.own_key);
    }
}

#[test]
fn override_errors_name_the_override_for_threads_repetitions_and_device_size() {
    let text = with_override(&with_override(BASE, "threads", "0"), "repetitions", "0")
        .replace("device_size = \"1GiB\"", "device_size = \"1MiB\"");
    let errs = errors(&text, true);
    for (key, needle, message) in [
        ("emulate.threads", "threads = 0", "threads must be at least 1"),
        ("emulate.repetitions", "repetitions = 0", "at least 1 repetition"),
        ("emulate.device_size", "device_size = \"1MiB\"", "XFS needs at least 300 MB"),
    ] {
        let e = errs.0.iter().find(|e| e.key.as_deref() == Some(key)).unwrap_or_else(|| panic!("{key}: {errs}"));
        assert_eq!(e.line, Some(line_of(&text, needle)), "{e}");
        assert!(e.message.contains(message), "{e}");
    }
    // Both devices take the size from [emulate]: one error, not one per device.
    assert_eq!(errs.0.iter().filter(|e| e.key.as_deref() == Some("emulate.device_size")).count(), 1, "{errs}");
    assert!(!errs.0.iter().any(|e| e.key.as_deref().is_some_and(|k| k.starts_with("device["))), "{errs}");
}

#[test]
fn wrong_words_are_reported_together_with_the_words_allowed() {
    let text = BASE
        .replace("class = \"pmem\"", "class = \"optane\"")
        .replace("kind = \"pgbench\"", "kind = \"sysbench\"")
        .replace("baseline = \"fast\"", "baseline = \"fast\"\norder = \"random\"")
        .replace("path = \"/dev/disk/by-id/nvme-A\"", "path = \"/dev/disk/by-id/nvme-A\"\ndax = \"maybe\"")
        + "\n[kernel]\ntransparent_hugepages = \"sometimes\"\n"
        + "\n[[fault]]\nrun = 1\nafter = \"1s\"\nkind = \"meteor\"\n";
    let errs = errors(&text, false);
    for (key, needle, words) in [
        ("device[d2].class", "optane", &["\"nvme\"", "\"pmem\"", "\"nvme-tcp\""][..]),
        ("workload[rw].kind", "sysbench", &["\"pgbench\"", "\"tpcc\""]),
        ("experiment.order", "random", &["\"interleaved\"", "\"sequential\""]),
        ("device[d1].dax", "maybe", &["\"off\"", "\"optional\"", "\"required\""]),
        ("kernel.transparent_hugepages", "sometimes", &["\"always\"", "\"madvise\"", "\"never\""]),
        ("fault[0].kind", "meteor", &["io-errors", "fill-device", "kill-server", "stop-target", "hang-client"]),
    ] {
        let e = errs.0.iter().find(|e| e.key.as_deref() == Some(key)).unwrap_or_else(|| panic!("{key}: {errs}"));
        assert_eq!(e.line, Some(line_of(&text, needle)), "{e}");
        for w in words {
            assert!(e.message.contains(w), "{w} in {e}");
        }
    }
    let tpcc = tpcc_base().replace("warehouses = 2", "warehouses = 2\nmode = \"tpc-e\"\nside = \"both\"");
    let errs = errors(&tpcc, false);
    for (key, needle, words) in [
        ("workload[rw].mode", "tpc-e", &["\"spec\"", "\"hammerdb\""]),
        ("workload[rw].side", "both", &["\"procedures\"", "\"client-sql\""]),
    ] {
        let e = errs.0.iter().find(|e| e.key.as_deref() == Some(key)).unwrap_or_else(|| panic!("{key}: {errs}"));
        assert_eq!(e.line, Some(line_of(&tpcc, needle)), "{e}");
        assert!(words.iter().all(|w| e.message.contains(w)), "{e}");
    }
    let text = BASE.replace("builtin = \"tpcb-like\"", "builtin = \"tpcb\"");
    let e = &errors(&text, false).0[0];
    assert_eq!(e.key.as_deref(), Some("workload[rw].builtin"), "{e}");
    assert!(e.message.contains("\"tpcb-like\", \"simple-update\" or \"select-only\""), "{e}");
    let text = with_d2_emulate(BASE, "backing = \"floppy\"");
    let e = &errors(&text, false).0[0];
    assert_eq!((e.key.as_deref(), e.line), (Some("device[d2].emulate.backing"), Some(line_of(&text, "floppy"))), "{e}");
    assert!(e.message.contains("\"loop-file\", \"zram\", \"tmpfs-loop\" or \"nbd\""), "{e}");
}

#[test]
fn memory_limit_of_the_wrong_type_names_its_key() {
    let text = BASE.replace("memory_limits = [\"256MiB\"]", "memory_limits = [5]");
    let e = &errors(&text, true).0[0];
    assert_eq!(e.key.as_deref(), Some("emulate.memory_limits"), "{e}");
    assert_eq!(e.line, Some(line_of(&text, "memory_limits = [5]")), "{e}");
    assert!(e.message.contains("a memory limit is \"unlimited\""), "{e}");
}

#[test]
fn a_wrong_watchdog_grace_is_reported_with_the_other_problems() {
    let text = BASE.replace("baseline = \"fast\"", "baseline = \"slow\"\nwatchdog_grace = \"a while\"");
    let keys: Vec<String> = errors(&text, false).0.into_iter().filter_map(|e| e.key).collect();
    assert!(keys.contains(&"experiment.baseline".to_string()), "{keys:?}");
    assert!(keys.contains(&"experiment.watchdog_grace".to_string()), "{keys:?}");
}

#[test]
fn measurement_section_and_its_emulate_overrides() {
    let text = BASE.replace(
        "[emulate]\n",
        "[measurement]\ndesign = \"slices\"\nslice = \"5s\"\nbudget = \"20min\"\ntarget_halfwidth = \"3%\"\n\n[emulate]\n",
    ) + "[emulate.measurement]\nbudget = \"13min\"\nequivalence_margin = \"1.5%\"\n";
    let e = parse(Path::new("exp.toml"), &text, &opts(true)).unwrap();
    let m = &e.measurement;
    assert_eq!(m.design, experiment::Design::Slices);
    assert_eq!((m.slice, m.budget), (Duration::from_secs(5), Some(Duration::from_secs(13 * 60))));
    assert_eq!((m.target_halfwidth_pct, m.equivalence_margin_pct), (Some(3.0), 1.5));
    let real = parse(Path::new("exp.toml"), &text, &opts(false)).unwrap();
    assert_eq!(
        (real.measurement.budget, real.measurement.equivalence_margin_pct),
        (Some(Duration::from_secs(1200)), 2.0)
    );
    // Without the section: today's design, a 2% margin.
    let plain = parse(Path::new("exp.toml"), BASE, &opts(true)).unwrap();
    assert_eq!((plain.measurement.design, plain.measurement.equivalence_margin_pct), (experiment::Design::Runs, 2.0));
    // Errors name the key the value came from.
    let bad = text
        .replace("equivalence_margin = \"1.5%\"", "equivalence_margin = \"lots\"")
        .replace("design = \"slices\"", "design = \"slice\"");
    let e = errors(&bad, true);
    let margin =
        e.0.iter()
            .find(|e| e.key.as_deref() == Some("emulate.measurement.equivalence_margin"))
            .unwrap_or_else(|| panic!("{e}"));
    assert_eq!(margin.line, Some(line_of(&bad, "equivalence_margin = \"lots\"")));
    let design = e.0.iter().find(|e| e.key.as_deref() == Some("measurement.design")).unwrap_or_else(|| panic!("{e}"));
    assert!(design.message.contains("\"slices\"") && design.message.contains("\"runs\""), "{design}");
}

#[test]
fn prewarm_is_on_by_default_off_by_key_and_a_boolean() {
    let slices =
        |extra: &str| BASE.replace("[emulate]\n", &format!("[measurement]\ndesign = \"slices\"\n{extra}\n[emulate]\n"));
    let on = parse(Path::new("exp.toml"), &slices(""), &opts(true)).unwrap();
    assert!(on.measurement.prewarm, "prewarm is on unless the file turns it off");
    let off = parse(Path::new("exp.toml"), &slices("prewarm = false\n"), &opts(true)).unwrap();
    assert!(!off.measurement.prewarm);
    // [emulate.measurement] replaces it when emulating only.
    let text = slices("") + "[emulate.measurement]\nprewarm = false\n";
    assert!(!parse(Path::new("exp.toml"), &text, &opts(true)).unwrap().measurement.prewarm);
    assert!(parse(Path::new("exp.toml"), &text, &opts(false)).unwrap().measurement.prewarm);
    // Not a boolean: an error naming the key and its line.
    let bad = slices("prewarm = \"no\"\n");
    let e = errors(&bad, true);
    let err = e.0.iter().find(|e| e.key.as_deref() == Some("measurement.prewarm")).unwrap_or_else(|| panic!("{e}"));
    assert_eq!(err.line, Some(line_of(&bad, "prewarm = \"no\"")));
    // The runs design ignores it, and says so.
    let runs = BASE.replace("[emulate]\n", "[measurement]\nprewarm = false\n\n[emulate]\n");
    let e = parse(Path::new("exp.toml"), &runs, &opts(false)).unwrap();
    assert!(
        e.warnings.iter().any(|w| w.contains("measurement.prewarm applies to design = \"slices\" only")),
        "{:?}",
        e.warnings
    );
}

#[test]
fn settle_is_on_by_default_off_by_key_and_a_boolean() {
    let slices =
        |extra: &str| BASE.replace("[emulate]\n", &format!("[measurement]\ndesign = \"slices\"\n{extra}\n[emulate]\n"));
    let on = parse(Path::new("exp.toml"), &slices(""), &opts(true)).unwrap();
    assert!(on.measurement.settle, "settle is on unless the file turns it off");
    let off = parse(Path::new("exp.toml"), &slices("settle = false\n"), &opts(true)).unwrap();
    assert!(!off.measurement.settle);
    assert!(off.measurement.prewarm, "settle and prewarm are separate keys");
    // [emulate.measurement] replaces it when emulating only.
    let text = slices("") + "[emulate.measurement]\nsettle = false\n";
    assert!(!parse(Path::new("exp.toml"), &text, &opts(true)).unwrap().measurement.settle);
    assert!(parse(Path::new("exp.toml"), &text, &opts(false)).unwrap().measurement.settle);
    // Not a boolean: an error naming the key and its line.
    let bad = slices("settle = \"vacuum\"\n");
    let e = errors(&bad, true);
    let err = e.0.iter().find(|e| e.key.as_deref() == Some("measurement.settle")).unwrap_or_else(|| panic!("{e}"));
    assert_eq!(err.line, Some(line_of(&bad, "settle = \"vacuum\"")));
    // The runs design ignores it, and says so.
    let runs = BASE.replace("[emulate]\n", "[measurement]\nsettle = false\n\n[emulate]\n");
    let e = parse(Path::new("exp.toml"), &runs, &opts(false)).unwrap();
    assert!(
        e.warnings.iter().any(|w| w.contains("measurement.settle applies to design = \"slices\" only")),
        "{:?}",
        e.warnings
    );
}

#[test]
fn builds_are_named_and_checked() {
    let pg = repo().join("target"); // a directory without postgres in it
    let text = BASE.replace(
        "[postgres]\n",
        &format!("[postgres]\nbuilds = [{{ name = \"pg15\", bin_dir = \"auto\" }}, {{ name = \"pg17\", bin_dir = \"{}\" }}]\n", pg.display()),
    );
    let e = errors(&text, false);
    let err =
        e.0.iter().find(|e| e.key.as_deref() == Some("postgres.builds[1].bin_dir")).unwrap_or_else(|| panic!("{e}"));
    assert!(err.message.contains("has no postgres binary"), "{err}");
    assert_eq!(err.line, Some(line_of(&text, "builds = [")));
    // Two names alike, and bin_dir together with builds.
    let text = BASE.replace(
        "[postgres]\n",
        "[postgres]\nbin_dir = \"auto\"\nbuilds = [{ name = \"a\", bin_dir = \"auto\" }, { name = \"a\", bin_dir = \"auto\" }]\n",
    );
    let e = errors(&text, false);
    assert!(e.0.iter().any(|e| e.message.contains("named twice")), "{e}");
    assert!(e.0.iter().any(|e| e.key.as_deref() == Some("postgres.bin_dir") && e.message.contains("not both")), "{e}");
    // Without builds: one build, named default.
    let plain = parse(Path::new("exp.toml"), BASE, &opts(false)).unwrap();
    assert_eq!(plain.builds.len(), 1);
    assert_eq!((plain.builds[0].name.as_str(), plain.builds[0].bin_dir.as_ref()), ("default", None));
}

#[test]
fn settings_a_build_does_not_know_name_the_build_file_line_and_key() {
    let text = BASE.replace("[postgres]\n", "[postgres]\nsettings = { io_combine_limit = \"128kB\" }\n");
    let e = parse(Path::new("exp.toml"), &text, &opts(false)).unwrap();
    let known: std::collections::BTreeSet<String> = ["shared_buffers".to_string()].into();
    let errs = e.unknown_settings("pg15", "15.18", &known);
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert_eq!(errs[0].key.as_deref(), Some("postgres.settings.io_combine_limit"));
    assert_eq!(errs[0].line, Some(line_of(&text, "io_combine_limit")));
    assert!(
        errs[0].message.contains("build \"pg15\" (PostgreSQL 15.18)")
            && errs[0].message.contains("[optional_settings]")
    );
    let mut with = known.clone();
    with.insert("io_combine_limit".into());
    assert!(e.unknown_settings("pg17", "17.10", &with).is_empty());
}

#[test]
fn a_device_holding_several_placements_wal_needs_room_for_each() {
    // Two placements put their WAL on d2 (1 GiB when emulating): each may grow to max_wal_size.
    let text = BASE
        .replace("[[workload]]", "[[placement]]\nname = \"wal-pm\"\ndata = \"d1\"\nwal = \"d2\"\n\n[[workload]]")
        + "[emulate.measurement]\ndesign = \"slices\"\n";
    let e = errors(&text, true);
    let err = e.0.iter().find(|e| e.message.contains("holds the WAL of 2 placements")).unwrap_or_else(|| panic!("{e}"));
    assert_eq!(err.key.as_deref(), Some("emulate.device_size"));
    assert_eq!(err.line, Some(line_of(&text, "device_size = \"1GiB\"")));
    assert!(err.message.contains("(pm, wal-pm)") && err.message.contains("needs about 2790 MiB"), "{err}");
    // The runs design runs one server at a time: a warning.
    let runs = text.replace("design = \"slices\"", "design = \"runs\"");
    let e = parse(Path::new("exp.toml"), &runs, &opts(true)).unwrap();
    assert!(e.warnings.iter().any(|w| w.contains("holds the WAL of 2 placements")), "{:?}", e.warnings);
    // Room enough: nothing to say.
    let roomy = text.replace("device_size = \"1GiB\"", "device_size = \"3GiB\"");
    assert!(parse(Path::new("exp.toml"), &roomy, &opts(true)).is_ok());
}

/// BASE with claims appended (BASE: placements fast (baseline) and pm, workload rw at 1, 2, 8 and
/// 39 clients of 40 threads, [emulate] clients = [4], memory limit 256MiB when emulating).
fn with_claims(claims: &str) -> String {
    format!("{BASE}\n{claims}")
}

const CLAIMS: &str = r#"
[[claim]]
name = "pm-tps"
text = "PMem improved throughput by 44.6%"
placement = "pm"
workload = "rw"
clients = 8
metric = "tps"
figure = "+44.6%"
[claim.emulate]
clients = 4

[[claim]]
text = "about 3.4x at the peak"
placement = "pm"
workload = "rw"
clients = "peak"
metric = "latency"
figure = "3.4x"
"#;

#[test]
fn claims_resolve_to_cells_of_the_matrix_both_ways() {
    let text = with_claims(CLAIMS);
    let real = parse(Path::new("exp.toml"), &text, &opts(false)).unwrap();
    assert_eq!(real.claims.len(), 2);
    let c = &real.claims[0];
    assert_eq!((c.name.as_str(), c.placement.as_str(), c.against.as_str()), ("pm-tps", "pm", "fast"));
    assert_eq!(
        (c.clients, c.at_peak, c.memory_limit.as_str(), c.profile.as_str()),
        (Some(8), false, "unlimited", "default")
    );
    assert_eq!((c.metric, c.across), (experiment::ClaimMetric::Tps, experiment::ClaimAcross::Placements));
    assert_eq!((c.low_pct, c.high_pct), (44.6, 44.6));
    assert_eq!(c.origin.line, Some(line_of(&text, "name = \"pm-tps\"") - 1), "the claim's [[claim]] line");
    let peak = &real.claims[1];
    assert_eq!((peak.name.as_str(), peak.clients, peak.at_peak), ("claim[1]", None, true));
    assert!((peak.low_pct - 240.0).abs() < 1e-9, "3.4x is +240%");
    // Emulated: [claim.emulate] picks the emulated cell; the one memory limit needs no naming.
    let emu = parse(Path::new("exp.toml"), &text, &opts(true)).unwrap();
    assert_eq!((emu.claims[0].clients, emu.claims[0].memory_limit.as_str()), (Some(4), "256MiB"));
    assert_eq!(emu.claims[1].clients, Some(4), "one emulated client count stands in for the peak");
    assert!(emu.claims[1].emulation_note.as_deref().unwrap().contains("stands in for the peak"));
    // Claims change what is checked, not what is measured: not in the resolved configuration.
    let json = serde_json::to_value(&real).unwrap();
    assert!(json.get("claims").is_none());
}

/// A claim on the study's own contrast: the claim's profile against the default profile of the
/// same placement (seed 004's question).
#[test]
fn a_claim_across_profiles_compares_a_profile_with_the_default_one() {
    let claim = r#"
[[claim]]
name = "tuned-tps"
text = "the performance profile is faster"
placement = "fast"
workload = "rw"
clients = 8
profile = "seed004-performance"
metric = "tps"
figure = "+10%"
across = "profiles"
"#;
    let two = BASE.replace("profiles = [\"default\"]", "profiles = [\"default\", \"seed004-performance\"]");
    let e = parse(Path::new("exp.toml"), &format!("{two}\n{claim}"), &opts(false)).unwrap();
    let c = &e.claims[0];
    assert_eq!(
        (c.across, c.placement.as_str(), c.against.as_str()),
        (experiment::ClaimAcross::Profiles, "fast", "fast")
    );
    assert_eq!(c.profile, "seed004-performance");
    // The default profile against itself: refused, naming the key.
    let text = format!("{two}\n{}", claim.replace("profile = \"seed004-performance\"", "profile = \"default\""));
    let errs = errors(&text, false);
    let err = errs.0.iter().find(|e| e.key.as_deref() == Some("claim[0].profile")).unwrap_or_else(|| panic!("{errs}"));
    assert!(err.message.contains("name a profile other than \"default\""), "{err}");
    assert_eq!(err.line, Some(line_of(&text, "profile = \"default\"")));
}

#[test]
fn claim_errors_name_the_file_line_and_key() {
    let text = with_claims(
        r#"
[[claim]]
text = "x"
placement = "nowhere"
workload = "rw"
clients = 3
metric = "throughput"
figure = "44.6"

[[claim]]
text = "y"
placement = "pm"
against = "pm"
workload = "ro"
metric = "tps"
figure = "+1%"

[[claim]]
text = "z"
placement = "pm"
workload = "rw"
clients = 8
metric = "nopm"
statement = "UPDATE pgbench_accounts"
figure = "+7%..+2%"
"#,
    );
    let errs = errors(&text, false);
    let find = |k: &str| errs.0.iter().find(|e| e.key.as_deref() == Some(k)).unwrap_or_else(|| panic!("{k}: {errs}"));
    let e = find("claim[0].placement");
    assert_eq!((e.file.as_path(), e.line), (Path::new("exp.toml"), Some(line_of(&text, "placement = \"nowhere\""))));
    assert!(e.message.contains("no placement named \"nowhere\"") && e.message.contains("fast, pm"), "{e}");
    let e = find("claim[0].clients");
    assert_eq!(e.line, Some(line_of(&text, "clients = 3")));
    assert!(e.message.contains("3 is not one of workload \"rw\"'s client counts (1, 2, 8, 39)"), "{e}");
    let e = find("claim[0].metric");
    assert_eq!(e.line, Some(line_of(&text, "metric = \"throughput\"")));
    assert!(e.message.contains("unknown metric \"throughput\"") && e.message.contains("\"device-iops\""), "{e}");
    let e = find("claim[0].figure");
    assert_eq!(e.line, Some(line_of(&text, "figure = \"44.6\"")));
    assert!(e.message.contains("\"3.4x\""), "{e}");
    assert!(find("claim[1].against").message.contains("compares placement \"pm\" with itself"));
    let e = find("claim[1].workload");
    assert!(e.message.contains("no workload named \"ro\"; defined workloads: rw"), "{e}");
    assert!(find("claim[2].metric").message.contains("not TPC-C: it has no NOPM"));
    let e = find("claim[2].statement");
    assert_eq!(e.line, Some(line_of(&text, "statement = \"UPDATE")));
    assert!(e.message.contains("only a statement-latency claim"), "{e}");
    assert!(find("claim[2].figure").message.contains("from the lower figure to the higher one"));
    // Shown as file:line:column: key `...`: message.
    assert!(errs.to_string().contains(&format!("exp.toml:{}:", line_of(&text, "placement = \"nowhere\""))));
}

#[test]
fn a_claim_states_the_studys_regime_with_both_sizes() {
    let claim = |keys: &str| {
        with_claims(&format!(
            "[[claim]]\ntext = \"x\"\nplacement = \"pm\"\nworkload = \"rw\"\nclients = 8\nmetric = \"tps\"\nfigure = \"+1%\"\n{keys}"
        ))
    };
    let e =
        parse(Path::new("exp.toml"), &claim("study_data_set = \"742GB\"\nstudy_memory = \"200GB\"\n"), &opts(false))
            .unwrap();
    assert_eq!(
        e.claims[0].study_regime,
        Some(experiment::StudyRegime { data_set_bytes: 742_000_000_000, memory_bytes: 200_000_000_000 })
    );
    assert_eq!(parse(Path::new("exp.toml"), &claim(""), &opts(false)).unwrap().claims[0].study_regime, None);
    let text = claim("study_data_set = \"742GB\"\n");
    let errs = errors(&text, false);
    let e =
        errs.0.iter().find(|e| e.key.as_deref() == Some("claim[0].study_data_set")).unwrap_or_else(|| panic!("{errs}"));
    assert_eq!(e.line, Some(line_of(&text, "study_data_set")));
    assert!(e.message.contains("go together"), "{e}");
    let text = claim("study_data_set = \"742\"\nstudy_memory = \"200GB\"\n");
    let errs = errors(&text, false);
    let e =
        errs.0.iter().find(|e| e.key.as_deref() == Some("claim[0].study_data_set")).unwrap_or_else(|| panic!("{errs}"));
    assert!(e.message.contains("has no unit"), "{e}");
}

#[test]
fn a_claim_on_a_cell_the_emulated_matrix_lacks_says_where_to_name_it() {
    let text = with_claims(
        r#"
[[claim]]
text = "at 2 clients, limited memory"
placement = "pm"
workload = "rw"
clients = 2
memory_limit = "1GiB"
metric = "tps"
figure = "+10%"
"#,
    );
    let errs = errors(&text, false);
    let e = errs.0.iter().find(|e| e.key.as_deref() == Some("claim[0].memory_limit")).expect("memory limit");
    assert!(e.message.contains("\"1GiB\" is not one of the memory limits (unlimited)"), "{e}");
    let errs = errors(&text, true);
    let e = errs.0.iter().find(|e| e.key.as_deref() == Some("claim[0].memory_limit")).expect("memory limit");
    assert!(e.message.contains("not one of the memory limits (256MiB); when emulating, give the emulated one in [claim.emulate] memory_limit"), "{e}");
    assert!(
        !errs.0.iter().any(|e| e.key.as_deref() == Some("claim[0].clients")),
        "one emulated client count stands in: {errs}"
    );
    // Named in [claim.emulate], the emulated cell is used, with the error at its own key.
    let fixed =
        text.replace("figure = \"+10%\"", "figure = \"+10%\"\n[claim.emulate]\nclients = 4\nmemory_limit = \"512MiB\"");
    let errs = errors(&fixed, true);
    let e = errs.0.iter().find(|e| e.key.as_deref() == Some("claim[0].emulate.memory_limit")).expect("emulate key");
    assert_eq!(e.line, Some(line_of(&fixed, "memory_limit = \"512MiB\"")));
}

#[test]
fn every_shipped_study_carries_its_claims() {
    let load = |f: &str, emulate: bool| {
        experiment::load(
            &repo().join("tiers").join(f),
            &LoadOptions { emulate, configs_dir: repo().join("configs"), hardware_threads: 2 },
        )
        .unwrap()
    };
    let figures = |f: &str| -> Vec<(String, String)> {
        load(f, true).claims.iter().map(|c| (c.metric.as_str().to_string(), c.figure.clone())).collect()
    };
    let s = |v: &[(&str, &str)]| v.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect::<Vec<_>>();
    assert_eq!(
        figures("pmem-vs-nvme.toml"),
        s(&[
            ("tps", "+13.4%"),
            ("latency", "-11.8%"),
            ("tps", "+44.6%"),
            ("latency", "-30.8%"),
            ("tps", "3.4x"),
            ("tps", "no change"),
            ("tps", "4.5x")
        ])
    );
    assert_eq!(figures("release-comparison.toml"), s(&[("tps", "+25%"), ("statement-latency", "-28%")]));
    assert_eq!(figures("pcie-ssd-vs-raid-hdd.toml"), s(&[("device-iops", "10x"), ("device-mb-s", "8x")]));
    assert_eq!(figures("nvme-vs-nvmeof.toml"), s(&[("nopm", "-4.52%"), ("nopm", "-2.10%")]));
    assert_eq!(figures("pgbench-thread-sweep.toml"), s(&[("tps", "+2%..+7%")]));
    // The 1 GB run is the emulated 192MiB limit; the study's 1GiB on real hardware.
    assert_eq!(load("pmem-vs-nvme.toml", true).claims[6].memory_limit, "192MiB");
    assert_eq!(load("pmem-vs-nvme.toml", false).claims[6].memory_limit, "1GiB");
    assert!(load("nvme-vs-nvmeof.toml", true).claims.iter().all(|c| c.at_peak));
}

#[test]
fn nvme_tcp_host_identity_is_a_pair() {
    let remote = |extra: &str| {
        BASE.replace(
            "[[device]]\nname = \"d2\"\nclass = \"pmem\"\nnamespace = \"namespace0.0\"\n",
            &format!("[[device]]\nname = \"d2\"\nclass = \"nvme-tcp\"\naddress = \"192.0.2.7\"\nnqn = \"nqn.2014-08.org.example:t\"\n{extra}"),
        )
    };
    // Both, or a uuid NQN alone (it implies its ID), or neither (the machine's /etc/nvme pair).
    let both =
        remote("host_nqn = \"nqn.2014-08.org.example:host\"\nhost_id = \"4C4C4544-0031-3910-8034-B4C04F4A3332\"\n");
    let e = parse(Path::new("exp.toml"), &both, &opts(false)).unwrap_or_else(|e| panic!("{e}"));
    let t = e
        .devices
        .iter()
        .find_map(|d| match &d.real {
            tiers::spec::RealDevice::NvmeTcp(t) => Some(t),
            _ => None,
        })
        .expect("an NVMe/TCP target");
    assert_eq!(t.host_id.as_deref(), Some("4c4c4544-0031-3910-8034-b4c04f4a3332"));
    let uuid = remote("host_nqn = \"nqn.2014-08.org.nvmexpress:uuid:4c4c4544-0031-3910-8034-b4c04f4a3332\"\n");
    assert!(parse(Path::new("exp.toml"), &uuid, &opts(false)).is_ok());
    assert!(parse(Path::new("exp.toml"), &remote(""), &opts(false)).is_ok());
    // One alone, or an ID that is no UUID: refused with the line and key.
    let text = remote("host_id = \"4c4c4544-0031-3910-8034-b4c04f4a3332\"\n");
    let err = errors(&text, false).0.into_iter().find(|e| e.key.as_deref() == Some("device[d2].host_id")).unwrap();
    assert!(err.message.contains("needs host_nqn"), "{err}");
    assert_eq!(err.line, Some(line_of(&text, "host_id =")));
    let text = remote("host_nqn = \"nqn.2014-08.org.example:host\"\n");
    let e = errors(&text, false);
    assert!(
        e.0.iter().any(|e| e.key.as_deref() == Some("device[d2].host_nqn") && e.message.contains("add host_id")),
        "{e}"
    );
    let text = remote("host_nqn = \"nqn.2014-08.org.example:host\"\nhost_id = \"host-1\"\n");
    assert!(errors(&text, false).0.iter().any(|e| e.message.contains("is not a host ID")));
}

/// BASE with `golden_copy = VALUE` in `[experiment]`.
fn with_golden(value: &str) -> String {
    BASE.replace("baseline = \"fast\"\n", &format!("baseline = \"fast\"\ngolden_copy = {value}\n"))
}

#[test]
fn the_golden_copy_goes_to_the_state_directory_a_device_or_a_directory() {
    let e = parse(Path::new("exp.toml"), BASE, &opts(false)).unwrap();
    assert_eq!(e.golden_copy, experiment::GoldenCopy::StateDir, "the default, as before the key existed");
    let text = with_golden("{ device = \"d1\" }");
    let e = parse(Path::new("exp.toml"), &text, &opts(false)).unwrap();
    let experiment::GoldenCopy::Device { name, origin } = &e.golden_copy else { panic!("{:?}", e.golden_copy) };
    assert_eq!(name, "d1");
    assert_eq!(
        (origin.line, origin.key.as_str()),
        (Some(line_of(&text, "golden_copy")), "experiment.golden_copy.device")
    );
    let e = parse(Path::new("exp.toml"), &with_golden("{ dir = \"/srv/pgtier\" }"), &opts(true)).unwrap();
    assert!(matches!(&e.golden_copy, experiment::GoldenCopy::Dir { path, .. } if path == Path::new("/srv/pgtier")));
    // Not part of the resolved configuration: a resume may move it.
    let json = serde_json::to_value(&e).unwrap();
    assert!(json.get("golden_copy").is_none(), "{json}");
}

#[test]
fn a_golden_copy_that_names_no_usable_place_is_refused_with_line_key_and_fix() {
    let cases = [
        ("{ device = \"d9\" }", "experiment.golden_copy.device", "no device named \"d9\"; defined devices: d1, d2"),
        ("{ device = \"d1\", dir = \"/srv\" }", "experiment.golden_copy", "`device` and `dir` conflict"),
        ("{}", "experiment.golden_copy", "say where the golden copy goes: golden_copy = { device = "),
        ("{ dir = \"srv/pgtier\" }", "experiment.golden_copy.dir", "is a relative path"),
        ("{ dir = \"/srv/../tmp\" }", "experiment.golden_copy.dir", "contains `..`"),
        ("{ dir = \"/dev/shm/golden\" }", "experiment.golden_copy.dir", "is below /dev"),
    ];
    for (value, key, says) in cases {
        let text = with_golden(value);
        let errs = errors(&text, false);
        let e = errs.0.iter().find(|e| e.key.as_deref() == Some(key)).unwrap_or_else(|| panic!("{value}: {errs}"));
        assert_eq!(e.line, Some(line_of(&text, "golden_copy")), "{value}: {e}");
        assert!(e.message.contains(says), "{value}: {e}");
        assert!(errs.to_string().starts_with(&format!("exp.toml:{}:", line_of(&text, "golden_copy"))), "{errs}");
    }
    // A misspelt key, with its line, its key and the key meant.
    let text = with_golden("{ devcie = \"d1\" }");
    let errs = errors(&text, false);
    let e = errs.0.iter().find(|e| e.key.as_deref() == Some("experiment.golden_copy.devcie")).expect("the key");
    assert_eq!(e.line, Some(line_of(&text, "golden_copy")));
    assert!(e.message.contains("unknown key `devcie`") && e.message.contains("did you mean `device`?"), "{e}");
}

#[test]
fn a_golden_copy_on_a_device_no_placement_uses_is_refused() {
    // d3 is defined, but no placement uses it: pgtier would not format or mount it.
    let text = with_golden("{ device = \"d3\" }").replace(
        "[[placement]]",
        "[[device]]\nname = \"d3\"\nclass = \"nvme\"\npath = \"/dev/disk/by-id/nvme-C\"\n\n[[placement]]",
    );
    let errs = errors(&text, false);
    let e = errs
        .0
        .iter()
        .find(|e| e.key.as_deref() == Some("experiment.golden_copy.device"))
        .unwrap_or_else(|| panic!("{errs}"));
    assert!(e.message.contains("used by no placement") && e.message.contains("(d1, d2)"), "{e}");
    assert_eq!(e.line, Some(line_of(&text, "golden_copy")));
}

#[test]
fn golden_copy_errors_come_with_every_other_error_of_the_file() {
    let text = with_golden("{ device = \"nope\" }").replace("scale = 100", "scale = 0");
    let errs = errors(&text, false);
    assert!(errs.0.iter().any(|e| e.key.as_deref() == Some("experiment.golden_copy.device")), "{errs}");
    assert!(errs.0.iter().any(|e| e.key.as_deref() == Some("workload[rw].scale")), "{errs}");
}

#[test]
fn the_room_a_device_needs_counts_the_golden_copy_and_its_placements_copies() {
    // d1 holds the baseline's PGDATA and pg_wal; the golden copy goes there too.
    let e = parse(Path::new("exp.toml"), &with_golden("{ device = \"d1\" }"), &opts(false)).unwrap();
    let need = e.golden_room();
    let parts: Vec<(&str, u64)> = need.parts.iter().map(|p| (p.what.as_str(), p.bytes)).collect();
    assert_eq!(
        parts,
        [
            ("the golden copy of pgbench-s100", 100 * 24 * (1 << 20) + (256 << 20)),
            ("fast's PGDATA", 100 * 16 * (1 << 20)),
            ("fast's pg_wal, up to max_wal_size + 30%", (1u64 << 30) / 10 * 13 + (64 << 20)),
        ]
    );
    assert_eq!(need.with_margin(), need.total() + need.total() / 20);
    // A directory holds the golden copy alone.
    let e = parse(Path::new("exp.toml"), &with_golden("{ dir = \"/srv/g\" }"), &opts(false)).unwrap();
    assert_eq!(e.golden_room().parts.len(), 1);
}

#[test]
fn an_emulated_device_too_small_for_the_golden_copy_is_refused_at_its_size() {
    // --emulate: scale 5 and [emulate] device_size = "1GiB"; d1 would hold the golden copy (376
    // MiB), the baseline's PGDATA (80 MiB) and its pg_wal (max_wal_size 1 GB + 30%).
    let text = with_golden("{ device = \"d1\" }");
    let errs = errors(&text, true);
    let e =
        errs.0.iter().find(|e| e.message.contains("cannot hold the golden copy")).unwrap_or_else(|| panic!("{errs}"));
    assert_eq!(e.key.as_deref(), Some("emulate.device_size"));
    assert_eq!(e.line, Some(line_of(&text, "device_size = \"1GiB\"")));
    for says in [
        "emulated device \"d1\" (1.0 GiB, about 993.3 MiB after XFS's own use)",
        &format!("exp.toml:{} `experiment.golden_copy.device`", line_of(&text, "golden_copy")),
        "the golden copy of pgbench-s5 (376.0 MiB), fast's PGDATA (80.0 MiB), fast's pg_wal, up to max_wal_size + 30% (1.4 GiB)",
        "size = \"2GiB\" or more",
    ] {
        assert!(e.message.contains(says), "{says:?} in {e}");
    }
    // The device's own size is the key to change when it has one.
    let own = text.replace(
        "path = \"/dev/disk/by-id/nvme-A\"\n",
        "path = \"/dev/disk/by-id/nvme-A\"\n[device.emulate]\nsize = \"1GiB\"\n",
    );
    let errs = errors(&own, true);
    let e =
        errs.0.iter().find(|e| e.message.contains("cannot hold the golden copy")).unwrap_or_else(|| panic!("{errs}"));
    assert_eq!(e.key.as_deref(), Some("device[d1].emulate.size"));
    assert_eq!(e.line, Some(line_of(&own, "size = \"1GiB\"")));
    // Room enough, or real devices (their size is checked by the plan, on the machine): accepted.
    assert!(
        parse(Path::new("exp.toml"), &text.replace("device_size = \"1GiB\"", "device_size = \"2GiB\""), &opts(true))
            .is_ok()
    );
    assert!(parse(Path::new("exp.toml"), &text, &opts(false)).is_ok());
}

#[test]
fn a_negative_control_twins_the_baseline() {
    let text = BASE.replace("[emulate]\n", "[measurement]\ndesign = \"slices\"\ncontrol = true\n\n[emulate]\n");
    // Emulated: its own stand-ins, cloned from the baseline's device.
    let e = parse(Path::new("exp.toml"), &text, &opts(true)).unwrap();
    assert!(e.measurement.control);
    let control = e.placements.iter().find(|p| p.name == experiment::CONTROL_PLACEMENT).expect("the twin");
    assert_eq!((control.data.as_str(), control.wal.as_str()), ("d1-control", "d1-control"));
    let d1 = e.devices.iter().find(|d| d.name == "d1").unwrap();
    let twin = e.devices.iter().find(|d| d.name == "d1-control").expect("the twin's device");
    assert_eq!((twin.class, twin.emulation.size_bytes), (d1.class, d1.emulation.size_bytes));
    assert_eq!(e.used_devices().len(), 3);
    // Real hardware: the baseline's own devices, no invented disk.
    let real = parse(Path::new("exp.toml"), &text, &opts(false)).unwrap();
    let control = real.placements.iter().find(|p| p.name == experiment::CONTROL_PLACEMENT).unwrap();
    assert_eq!((control.data.as_str(), control.wal.as_str()), ("d1", "d1"));
    assert_eq!(real.devices.len(), 2);
    // Off by default, and a name clash is an error naming the key and its line.
    assert!(!parse(Path::new("exp.toml"), BASE, &opts(true)).unwrap().placements.iter().any(|p| p.name == "control"));
    let clash = text.replace("name = \"pm\"", "name = \"control\"");
    let errs = errors(&clash, true);
    let err =
        errs.0.iter().find(|e| e.key.as_deref() == Some("measurement.control")).unwrap_or_else(|| panic!("{errs}"));
    assert_eq!(err.line, Some(line_of(&clash, "control = true")));
    assert!(err.message.contains("rename"), "{err}");
}

#[test]
fn cpu_pinning_takes_two_disjoint_cpu_lists() {
    let pinned =
        |keys: &str| BASE.replace("[emulate]\n", &format!("[measurement]\ndesign = \"slices\"\n{keys}\n[emulate]\n"));
    let e = parse(Path::new("exp.toml"), &pinned("pin_client = \"0\"\npin_servers = \"1-3\"\n"), &opts(true)).unwrap();
    assert_eq!(e.measurement.pinning, Some(experiment::Pinning { client: vec![0], servers: vec![1, 2, 3] }));
    assert_eq!(parse(Path::new("exp.toml"), BASE, &opts(true)).unwrap().measurement.pinning, None, "off by default");
    // Each error names its key and line and says how to write it.
    let check = |keys: &str, key: &str, needle: &str, says: &str| {
        let text = pinned(keys);
        let errs = errors(&text, true);
        let err = errs.0.iter().find(|e| e.key.as_deref() == Some(key)).unwrap_or_else(|| panic!("{key}: {errs}"));
        assert_eq!(err.line, Some(line_of(&text, needle)), "{err}");
        assert!(err.message.contains(says), "{err}");
        assert_eq!(errs.0.len(), 1, "one error, not an echo: {errs}");
    };
    check("pin_client = \"0\"\n", "measurement.pin_client", "pin_client", "go together");
    check("pin_client = \"0-1\"\npin_servers = \"1\"\n", "measurement.pin_servers", "pin_servers", "CPU 1 is in both");
    check("pin_client = \"first\"\npin_servers = \"1\"\n", "measurement.pin_client", "pin_client", "\"1-3\"");
    // The TPC-C driver runs inside pgtier: nothing there would be pinned.
    let tpcc =
        tpcc_base().replace("[emulate]\n", "[measurement]\npin_client = \"0\"\npin_servers = \"1\"\n\n[emulate]\n");
    let errs = errors(&tpcc, true);
    let err =
        errs.0.iter().find(|e| e.key.as_deref() == Some("measurement.pin_client")).unwrap_or_else(|| panic!("{errs}"));
    assert_eq!(err.line, Some(line_of(&tpcc, "pin_client")));
    assert!(err.message.contains("is TPC-C") && err.message.contains("pinning is for pgbench"), "{err}");
}

#[test]
fn a_handicap_takes_a_cpu_quota_and_its_spread_between_lives() {
    let with = |design: &str, keys: &str| {
        BASE.replace("[emulate]\n", &format!("[measurement]\ndesign = \"{design}\"\n{keys}\n[emulate]\n"))
    };
    let e =
        parse(Path::new("exp.toml"), &with("slices", "handicap_cpus = 1.0\nhandicap_spread = \"8%\"\n"), &opts(true))
            .unwrap();
    assert_eq!(e.measurement.handicap, Some(experiment::Handicap { cpus: 1.0, spread_pct: 8.0 }));
    let e = parse(Path::new("exp.toml"), &with("slices", "handicap_cpus = 0.5\n"), &opts(true)).unwrap();
    assert_eq!(e.measurement.handicap, Some(experiment::Handicap { cpus: 0.5, spread_pct: 0.0 }), "no spread: 0");
    assert_eq!(parse(Path::new("exp.toml"), BASE, &opts(true)).unwrap().measurement.handicap, None, "off by default");
    let check = |design: &str, keys: &str, key: &str, needle: &str, says: &str| {
        let text = with(design, keys);
        let errs = errors(&text, true);
        let err = errs.0.iter().find(|e| e.key.as_deref() == Some(key)).unwrap_or_else(|| panic!("{key}: {errs}"));
        assert_eq!(err.line, Some(line_of(&text, needle)), "{err}");
        assert!(err.message.contains(says), "{err}");
        assert_eq!(errs.0.len(), 1, "one error, not an echo: {errs}");
    };
    check(
        "slices",
        "handicap_spread = \"8%\"\n",
        "measurement.handicap_spread",
        "handicap_spread",
        "needs handicap_cpus",
    );
    check("slices", "handicap_cpus = 0.01\n", "measurement.handicap_cpus", "handicap_cpus", "from 0.05 to 1024");
    check(
        "slices",
        "handicap_cpus = 1.0\nhandicap_spread = \"80%\"\n",
        "measurement.handicap_spread",
        "handicap_spread",
        "from \"0%\" to \"50%\"",
    );
    check("runs", "handicap_cpus = 1.0\n", "measurement.handicap_cpus", "handicap_cpus", "design = \"slices\"");
}

/// BASE with d1 an NVMe/TCP device with `d1` lines and a third device d3 on the same
/// subsystem with `d3` lines (d3 unused by any placement).
fn two_namespaces(d1: &str, d3: &str) -> String {
    let remote = |name: &str, extra: &str| {
        format!(
            "[[device]]\nname = \"{name}\"\nclass = \"nvme-tcp\"\naddress = \"192.0.2.7\"\nnqn = \"nqn.2014-08.org.example:t\"\n{extra}"
        )
    };
    BASE.replace(
        "[[device]]\nname = \"d1\"\nclass = \"nvme\"\npath = \"/dev/disk/by-id/nvme-A\"\n",
        &format!("{}\n{}", remote("d1", d1), remote("d3", d3)),
    )
}

#[test]
fn namespaces_of_one_nvme_tcp_connection_each_name_their_nsid() {
    // Distinct NSIDs: accepted, each device its namespace.
    let ok = two_namespaces("nsid = 1\n", "nsid = 2\n");
    let e = parse(Path::new("exp.toml"), &ok, &opts(false)).unwrap_or_else(|e| panic!("{e}"));
    let nsids: Vec<Option<u32>> = e
        .devices
        .iter()
        .filter_map(|d| match &d.real {
            tiers::spec::RealDevice::NvmeTcp(t) => Some(t.nsid),
            _ => None,
        })
        .collect();
    assert_eq!(nsids, [Some(1), Some(2)]);
    // Either without nsid: refused at the second device, naming both and the fix.
    for (d1, d3) in [("", ""), ("nsid = 1\n", ""), ("", "nsid = 2\n")] {
        let text = two_namespaces(d1, d3);
        let e = errors(&text, false);
        let err = e.0.iter().find(|e| e.key.as_deref() == Some("device[d3].nsid")).unwrap_or_else(|| panic!("{e}"));
        assert!(
            err.message.contains("\"d1\" and \"d3\" share one connection")
                && err.message.contains("give each its `nsid`"),
            "{err}"
        );
        assert_eq!(err.line, Some(line_of(&text, "name = \"d3\"") - 1), "at d3's [[device]]: {err}");
    }
    // The same NSID twice: refused.
    let e = errors(&two_namespaces("nsid = 1\n", "nsid = 1\n"), false);
    assert!(e.0.iter().any(|e| e.message.contains("both name namespace 1")), "{e}");
    // Another port is another connection: no NSID needed.
    let other_port = two_namespaces("", "port = 4421\n");
    assert!(parse(Path::new("exp.toml"), &other_port, &opts(false)).is_ok());
    // nsid 0 is no namespace.
    let e = errors(&two_namespaces("nsid = 0\n", "nsid = 2\n"), false);
    assert!(e.0.iter().any(|e| e.key.as_deref() == Some("device[d1].nsid") && e.message.contains("start at 1")), "{e}");
}

#[test]
fn nvme_tcp_uuid_and_address_are_checked_with_the_value_quoted() {
    let ok = two_namespaces(
        "nsid = 1\nuuid = \"6B2C2AC2-3F1E-4E0B-9C3A-0123456789AB\"\n",
        "nsid = 2\nuuid = \"000000000000000100a0980000000002\"\n",
    );
    let e = parse(Path::new("exp.toml"), &ok, &opts(false)).unwrap_or_else(|e| panic!("{e}"));
    assert!(e.devices.iter().any(|d| matches!(&d.real, tiers::spec::RealDevice::NvmeTcp(t) if t.uuid.as_deref() == Some("6B2C2AC2-3F1E-4E0B-9C3A-0123456789AB"))));
    let text = two_namespaces("nsid = 1\nuuid = \"not-a-uuid\"\n", "nsid = 2\n");
    let err = errors(&text, false).0.into_iter().find(|e| e.key.as_deref() == Some("device[d1].uuid")).unwrap();
    assert!(err.message.contains("\"not-a-uuid\" is neither a UUID nor an NGUID"), "{err}");
    assert_eq!(err.line, Some(line_of(&text, "not-a-uuid")));
    // A host name where NVMe/TCP takes an IP address.
    let text = two_namespaces("nsid = 1\n", "nsid = 2\n").replacen(
        "address = \"192.0.2.7\"",
        "address = \"storage.example\"",
        1,
    );
    let err = errors(&text, false).0.into_iter().find(|e| e.key.as_deref() == Some("device[d1].address")).unwrap();
    assert!(err.message.contains("\"storage.example\" is not an IP address"), "{err}");
    assert!(parse(Path::new("exp.toml"), &text.replace("storage.example", "2001:db8::7"), &opts(false)).is_ok());
    // nsid and uuid mean nothing on other classes.
    let text = BASE.replace("namespace = \"namespace0.0\"\n", "namespace = \"namespace0.0\"\nnsid = 1\n");
    assert!(errors(&text, false).0.iter().any(|e| e.message.contains("`nsid/uuid` does not apply to a pmem device")));
}

/// A misspelt required key is read as the key it nearly is (reported once, as a near miss); a
/// key left out is reported missing; neither hides the rest of the file.
#[test]
fn misspelt_or_missing_required_keys_do_not_hide_the_rest() {
    let text = BASE
        .replace("name = \"d1\"", "nam = \"d1\"")
        .replace("data = \"d2\"", "data = \"d3\"")
        .replace("duration = \"10min\"", "duraton = \"10min\"");
    let errs = errors(&text, false);
    let keys: Vec<&str> = errs.0.iter().filter_map(|e| e.key.as_deref()).collect();
    assert_eq!(keys, ["device[0].nam", "placement[pm].data", "workload[rw].duraton"], "{errs}");
    let text = BASE
        .replace("clients = [1, 2, \"20%\", \"99.9%\"]\n", "")
        .replace("duration = \"10min\"\n", "")
        .replace("data = \"d2\"", "data = \"d3\"")
        .replace("builtin = \"tpcb-like\"\n", "");
    let errs = errors(&text, false);
    println!("{errs}");
    let shown: Vec<(Option<usize>, &str, &str)> =
        errs.0.iter().map(|e| (e.line, e.key.as_deref().unwrap_or(""), e.message.as_str())).collect();
    let workload = line_of(&text, "[[workload]]");
    assert_eq!(
        shown,
        vec![
            (Some(line_of(&text, "\"d3\"")), "placement[pm].data", "no device named \"d3\"; defined devices: d1, d2"),
            (
                Some(workload),
                "workload[rw].clients",
                "`clients` is missing: it is required here (docs/experiment-file.md)"
            ),
            (
                Some(workload),
                "workload[rw].duration",
                "`duration` is missing: it is required here (docs/experiment-file.md)"
            ),
            (
                Some(workload),
                "workload[rw].builtin",
                "a pgbench workload needs `builtin` (\"tpcb-like\", \"simple-update\" or \"select-only\")"
            ),
        ],
        "{errs}"
    );
}

/// A settings profile's unknown keys are all reported too, with its own file and lines.
#[test]
fn every_unknown_key_of_a_profile_is_reported() {
    let configs = tempfile::tempdir().unwrap();
    std::fs::create_dir(configs.path().join("postgres")).unwrap();
    let profile = "descripton = \"x\"\n[setings]\nshared_buffers = \"1GB\"\n";
    std::fs::write(configs.path().join("postgres/mine.toml"), profile).unwrap();
    let text =
        BASE.replace("profiles = [\"default\"]", "profiles = [\"mine\"]").replace("data = \"d2\"", "data = \"d3\"");
    let o = LoadOptions { emulate: false, configs_dir: configs.path().to_path_buf(), hardware_threads: 40 };
    let errs = parse(Path::new("exp.toml"), &text, &o).expect_err("should be rejected");
    let shown: Vec<String> =
        errs.0.iter().map(|e| format!("{}:{:?}: {}", e.file.display(), e.line, e.message)).collect();
    let file = configs.path().join("postgres/mine.toml");
    assert_eq!(
        shown,
        vec![
            format!("exp.toml:Some({}): no device named \"d3\"; defined devices: d1, d2", line_of(&text, "\"d3\"")),
            format!(
                "{}:Some(1): unknown key `descripton` in a settings profile; did you mean `description`?",
                file.display()
            ),
            format!(
                "{}:Some(2): unknown key `setings` in a settings profile; did you mean `settings`?",
                file.display()
            ),
        ]
    );
}

/// `[[placement]] profile`: the placement's server runs that profile (with the file's settings on
/// top) in place of the matrix's; it is memory-checked, planned and listed like the others.
#[test]
fn a_placement_runs_its_own_profile_in_place_of_the_matrix_s() {
    let text =
        BASE.replace("data = \"d2\"\nwal = \"d2\"", "data = \"d2\"\nwal = \"d2\"\nprofile = \"seed004-performance\"");
    let e = parse(Path::new("exp.toml"), &text, &opts(true)).unwrap();
    assert!(e.placements[0].profile.is_none(), "the baseline runs the matrix's profile");
    let own = e.placements[1].profile.as_ref().expect("pm's own profile");
    assert_eq!(own.profile.name, "seed004-performance");
    assert_eq!(own.profile.settings.get("bgwriter_delay").map(String::as_str), Some("10ms"), "the profile file");
    assert_eq!(
        own.profile.settings.get("shared_buffers").map(String::as_str),
        Some("32MB"),
        "[emulate.settings] on top"
    );
    let names: Vec<&str> = e.run_profiles().iter().map(|p| p.profile.name.as_str()).collect();
    assert_eq!(names, ["default", "seed004-performance"]);
    let planned: Vec<String> = e.memory_plans().into_iter().map(|(p, l, _)| format!("{p} {l}")).collect();
    assert_eq!(planned, ["default 256MiB", "seed004-performance 256MiB"]);
    assert_eq!(e.max_wal_bytes(), 32 << 30, "the placement's profile's max_wal_size counts");
}

#[test]
fn a_placement_s_profile_must_exist_and_replace_a_single_matrix_profile() {
    let text = BASE.replace("data = \"d2\"\nwal = \"d2\"", "data = \"d2\"\nwal = \"d2\"\nprofile = \"seed004-perf\"");
    let errs = errors(&text, false);
    let e =
        errs.0.iter().find(|e| e.key.as_deref() == Some("placement[pm].profile")).unwrap_or_else(|| panic!("{errs}"));
    assert_eq!(e.line, Some(line_of(&text, "seed004-perf")));
    assert!(
        e.message.contains("no settings profile \"seed004-perf\"") && e.message.contains("seed004-performance"),
        "{e}"
    );
    let two = BASE
        .replace("profiles = [\"default\"]", "profiles = [\"default\", \"seed000-tuned\"]")
        .replace("data = \"d2\"\nwal = \"d2\"", "data = \"d2\"\nwal = \"d2\"\nprofile = \"seed004-performance\"");
    let errs = errors(&two, false);
    let e =
        errs.0.iter().find(|e| e.key.as_deref() == Some("placement[pm].profile")).unwrap_or_else(|| panic!("{errs}"));
    assert!(
        e.message.contains("replaces the matrix's") && e.message.contains("runs 2 (default, seed000-tuned)"),
        "{e}"
    );
}

/// `[[placement]] build`: the placement's server runs that build of `[postgres] builds`; the
/// others run the first, and builds stop being a matrix dimension (the slices design pairs them).
#[test]
fn a_placement_runs_its_own_build_and_builds_stop_being_a_dimension() {
    let text = BASE
        .replace(
            "profiles = [\"default\"]",
            "profiles = [\"default\"]\nbuilds = [{ name = \"old\", bin_dir = \"auto\" }, { name = \"new\", bin_dir = \"auto\" }]",
        )
        .replace("data = \"d2\"\nwal = \"d2\"", "data = \"d2\"\nwal = \"d2\"\nbuild = \"new\"");
    let e = parse(Path::new("exp.toml"), &text, &opts(true)).unwrap();
    let builds: Vec<Option<&str>> = e.placements.iter().map(|p| p.build.as_deref()).collect();
    assert_eq!(builds, [Some("old"), Some("new")], "the placement naming none runs the first build");
    assert_eq!((e.placement_build(0), e.placement_build(1)), (Some(0), Some(1)));
    assert!(e.matrix_builds().is_empty(), "no longer a matrix dimension");
    let plain = BASE.replace(
        "profiles = [\"default\"]",
        "profiles = [\"default\"]\nbuilds = [{ name = \"old\", bin_dir = \"auto\" }, { name = \"new\", bin_dir = \"auto\" }]",
    );
    let e = parse(Path::new("exp.toml"), &plain, &opts(true)).unwrap();
    assert_eq!(e.matrix_builds().len(), 2, "without placement builds, builds are a dimension");
    assert!(e.placements.iter().all(|p| p.build.is_none()));
}

#[test]
fn a_placement_s_build_must_be_one_of_the_listed_builds() {
    let named = "data = \"d2\"\nwal = \"d2\"\nbuild = \"pg17\"";
    let text = BASE.replace("data = \"d2\"\nwal = \"d2\"", named);
    let errs = errors(&text, false);
    let e = errs.0.iter().find(|e| e.key.as_deref() == Some("placement[pm].build")).unwrap_or_else(|| panic!("{errs}"));
    assert_eq!(e.line, Some(line_of(&text, "build = \"pg17\"")));
    assert!(e.message.contains("name the builds in [postgres] builds"), "{e}");
    let listed = text.replace(
        "profiles = [\"default\"]",
        "profiles = [\"default\"]\nbuilds = [{ name = \"pg15\", bin_dir = \"auto\" }, { name = \"pg16\", bin_dir = \"auto\" }]",
    );
    let errs = errors(&listed, false);
    let e = errs.0.iter().find(|e| e.key.as_deref() == Some("placement[pm].build")).unwrap_or_else(|| panic!("{errs}"));
    assert!(e.message.contains("no build named \"pg17\"") && e.message.contains("known builds: pg15, pg16"), "{e}");
}

/// With placement builds, a build's server is checked against the profiles it runs only, and a
/// listed build no placement runs is not checked at all.
#[test]
fn a_build_is_checked_against_the_profiles_its_placements_run() {
    let text = BASE
        .replace(
            "profiles = [\"default\"]",
            "profiles = [\"default\"]\nbuilds = [{ name = \"old\", bin_dir = \"auto\" }, { name = \"new\", bin_dir = \"auto\" }, { name = \"spare\", bin_dir = \"auto\" }]",
        )
        .replace(
            "data = \"d2\"\nwal = \"d2\"",
            "data = \"d2\"\nwal = \"d2\"\nbuild = \"new\"\nprofile = \"seed004-performance\"",
        );
    let e = parse(Path::new("exp.toml"), &text, &opts(true)).unwrap();
    let knows_nothing = std::collections::BTreeSet::new();
    let said = |b: &str| -> Vec<String> {
        e.unknown_settings(b, "99", &knows_nothing).into_iter().map(|x| x.message).collect::<Vec<_>>()
    };
    let old = said("old");
    assert!(old.iter().any(|m| m.contains("(profile default)")), "{old:?}");
    assert!(!old.iter().any(|m| m.contains("seed004-performance")), "old runs only the matrix's profile: {old:?}");
    let new = said("new");
    assert!(new.iter().any(|m| m.contains("bgwriter_delay (profile seed004-performance)")), "{new:?}");
    assert!(!new.iter().any(|m| m.contains("(profile default)")), "new runs only pm's own profile: {new:?}");
    assert!(said("spare").is_empty(), "a build no placement runs");
    assert!(
        e.warnings.iter().any(|w| w.contains("\"spare\"") && w.contains("run by no placement")),
        "{:?}",
        e.warnings
    );
}
