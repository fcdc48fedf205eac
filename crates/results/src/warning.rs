//! What a reader of a result set must be warned about: a run's warnings (`result.json`) and the
//! whole run's (`manifest.json`). Each is stored as its sentence, exactly as earlier versions
//! wrote it; reading a sentence back gives its variant again (one that no variant says, such as
//! an experiment file's warning or an older version's, is [`Warning::Other`]).

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::record::MemoryLabel;

#[derive(Clone, Debug, PartialEq)]
pub enum Warning {
    /// A run: the benchmark client used most of the cores its threads can use.
    ClientCpuBound {
        /// `pgbench` or `TPC-C`.
        client: String,
        /// Share of one core the client used (100 = one full core).
        core_pct: f64,
        threads: u32,
    },
    /// A run: client and server together used nearly every hardware thread.
    MachineCpuBound { machine_pct: f64, hardware_threads: u32 },
    /// A run: checkpoints started inside its measured interval, at these seconds since its start.
    CheckpointInRun { at_s: Vec<f64> },
    /// A TPC-C run: transactions failed, by kind, with the first error message seen.
    TpccErrors { failed: u64, by_kind: Vec<(String, u64)>, example: String },
    /// The result set was continued (`compare --resume`) at these times.
    Resumed { at: Vec<String> },
    /// A placement's server did not start in a run, or its emulated tier broke; its later runs
    /// were not made.
    PlacementUnusable { placement: String, run_id: String, failure: String },
    /// Runs of the matrix failed.
    RunsFailed { count: usize },
    /// A device asked for DAX did not get it.
    DaxNotInEffect { device: String, note: String },
    /// A data set fits in the server's memory (its limit, or the host's memory when unlimited).
    FitsInMemory { dataset: String, size_mib: f64, memory: MemoryLabel },
    /// Any other sentence: the experiment file's warnings, and those of other versions.
    Other(String),
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Warning::ClientCpuBound { client, core_pct, threads } => write!(
                f,
                "the {client} client used {core_pct:.0}% of a core with {threads} thread(s): the client, not storage, may be the limit"
            ),
            Warning::MachineCpuBound { machine_pct, hardware_threads } => write!(
                f,
                "client and server together used {machine_pct:.0}% of all {hardware_threads} hardware threads: the run is CPU-bound, so storage differences are understated"
            ),
            Warning::CheckpointInRun { at_s } => write!(
                f,
                "a checkpoint started inside the measured run (at {} s): runs with and without a checkpoint are not comparable; prefer longer runs",
                at_s.iter().map(|t| format!("{t:.0}")).collect::<Vec<_>>().join(", ")
            ),
            Warning::TpccErrors { failed, by_kind, example } => write!(
                f,
                "{failed} TPC-C transactions failed ({}), none retried; e.g. {example}",
                by_kind.iter().map(|(k, v)| format!("{k} {v}")).collect::<Vec<_>>().join(", ")
            ),
            Warning::Resumed { at } => write!(
                f,
                "this result set was resumed ({}): the runs after the interruption were made on freshly provisioned devices with a freshly loaded data set",
                at.join(", ")
            ),
            Warning::PlacementUnusable { placement, run_id, failure } if failure.starts_with(TIER_LOST) => {
                write!(f, "placement {placement} unusable since run {run_id}: {failure}")
            }
            Warning::PlacementUnusable { placement, run_id, failure } => {
                write!(f, "placement {placement} unusable since run {run_id}: its server did not start ({failure})")
            }
            Warning::RunsFailed { count } => {
                write!(f, "{count} run(s) failed; see their failure column and runs/<id>/")
            }
            Warning::DaxNotInEffect { device, note } => {
                write!(f, "DAX asked for on {device} but not in effect: {note}")
            }
            Warning::FitsInMemory { dataset, size_mib, memory } => write!(
                f,
                "data set {dataset} ({size_mib:.0} MiB) fits in the server's memory ({memory}): reads are served from memory after warm-up, so read-only results do not exercise storage; use a memory limit well below the data set"
            ),
            Warning::Other(text) => f.write_str(text),
        }
    }
}

impl Warning {
    /// The warning a sentence says: the variant whose sentence it is (figures as printed), or
    /// [`Warning::Other`]. The warning always prints as exactly `text` again.
    pub fn from_text(text: &str) -> Warning {
        let parsers: [fn(&str) -> Option<Warning>; 9] = [
            client_cpu_bound,
            machine_cpu_bound,
            checkpoint_in_run,
            tpcc_errors,
            resumed,
            placement_unusable,
            runs_failed,
            dax_not_in_effect,
            fits_in_memory,
        ];
        parsers
            .iter()
            .filter_map(|parse| parse(text))
            .find(|w| w.to_string() == text)
            .unwrap_or_else(|| Warning::Other(text.to_string()))
    }
}

impl Serialize for Warning {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Warning {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Warning, D::Error> {
        Ok(Warning::from_text(&String::deserialize(deserializer)?))
    }
}

/// The parts of `text` between the literal `pieces`: the first begins it, the last ends it,
/// the others are found from left to right. `None` when `text` is not of that shape.
fn holes<'t>(text: &'t str, pieces: &[&str]) -> Option<Vec<&'t str>> {
    let (first, rest) = pieces.split_first()?;
    let (last, middle) = rest.split_last()?;
    let mut rest = text.strip_prefix(first)?.strip_suffix(last)?;
    let mut out = Vec::new();
    for p in middle {
        let i = rest.find(p)?;
        out.push(&rest[..i]);
        rest = &rest[i + p.len()..];
    }
    out.push(rest);
    Some(out)
}

fn list(text: &str) -> Vec<&str> {
    if text.is_empty() { Vec::new() } else { text.split(", ").collect() }
}

fn client_cpu_bound(text: &str) -> Option<Warning> {
    let h = holes(
        text,
        &["the ", " client used ", "% of a core with ", " thread(s): the client, not storage, may be the limit"],
    )?;
    Some(Warning::ClientCpuBound { client: h[0].into(), core_pct: h[1].parse().ok()?, threads: h[2].parse().ok()? })
}

fn machine_cpu_bound(text: &str) -> Option<Warning> {
    let h = holes(
        text,
        &[
            "client and server together used ",
            "% of all ",
            " hardware threads: the run is CPU-bound, so storage differences are understated",
        ],
    )?;
    Some(Warning::MachineCpuBound { machine_pct: h[0].parse().ok()?, hardware_threads: h[1].parse().ok()? })
}

fn checkpoint_in_run(text: &str) -> Option<Warning> {
    let h = holes(
        text,
        &[
            "a checkpoint started inside the measured run (at ",
            " s): runs with and without a checkpoint are not comparable; prefer longer runs",
        ],
    )?;
    let at_s = list(h[0]).iter().map(|t| t.parse().ok()).collect::<Option<Vec<f64>>>()?;
    Some(Warning::CheckpointInRun { at_s })
}

fn tpcc_errors(text: &str) -> Option<Warning> {
    let h = holes(text, &["", " TPC-C transactions failed (", "), none retried; e.g. ", ""])?;
    let by_kind = list(h[1])
        .iter()
        .map(|kv| kv.rsplit_once(' ').and_then(|(k, v)| Some((k.to_string(), v.parse().ok()?))))
        .collect::<Option<Vec<_>>>()?;
    Some(Warning::TpccErrors { failed: h[0].parse().ok()?, by_kind, example: h[2].into() })
}

fn resumed(text: &str) -> Option<Warning> {
    let h = holes(
        text,
        &[
            "this result set was resumed (",
            "): the runs after the interruption were made on freshly provisioned devices with a freshly loaded data set",
        ],
    )?;
    Some(Warning::Resumed { at: list(h[0]).into_iter().map(String::from).collect() })
}

/// How the failure of a placement whose emulated tier broke begins (said without "its server
/// did not start").
const TIER_LOST: &str = "the emulated tier ";

fn placement_unusable(text: &str) -> Option<Warning> {
    if let Some(h) = holes(text, &["placement ", " unusable since run ", ": its server did not start (", ")"]) {
        return Some(Warning::PlacementUnusable { placement: h[0].into(), run_id: h[1].into(), failure: h[2].into() });
    }
    let h = holes(text, &["placement ", " unusable since run ", &format!(": {TIER_LOST}"), ""])?;
    Some(Warning::PlacementUnusable {
        placement: h[0].into(),
        run_id: h[1].into(),
        failure: format!("{TIER_LOST}{}", h[2]),
    })
}

fn runs_failed(text: &str) -> Option<Warning> {
    let h = holes(text, &["", " run(s) failed; see their failure column and runs/<id>/"])?;
    Some(Warning::RunsFailed { count: h[0].parse().ok()? })
}

fn dax_not_in_effect(text: &str) -> Option<Warning> {
    let h = holes(text, &["DAX asked for on ", " but not in effect: ", ""])?;
    Some(Warning::DaxNotInEffect { device: h[0].into(), note: h[1].into() })
}

fn fits_in_memory(text: &str) -> Option<Warning> {
    let h = holes(
        text,
        &[
            "data set ",
            " (",
            " MiB) fits in the server's memory (",
            "): reads are served from memory after warm-up, so read-only results do not exercise storage; use a memory limit well below the data set",
        ],
    )?;
    Some(Warning::FitsInMemory { dataset: h[0].into(), size_mib: h[1].parse().ok()?, memory: h[2].parse().ok()? })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sentences as the versions before the type wrote them, one per variant.
    const WRITTEN: [&str; 9] = [
        "the pgbench client used 97% of a core with 2 thread(s): the client, not storage, may be the limit",
        "client and server together used 95% of all 2 hardware threads: the run is CPU-bound, so storage differences are understated",
        "a checkpoint started inside the measured run (at 3, 14 s): runs with and without a checkpoint are not comparable; prefer longer runs",
        "12 TPC-C transactions failed (deadlock 2, serialization_failure 10), none retried; e.g. db error: ERROR: could not serialize access due to concurrent update",
        "this result set was resumed (2026-12-01T10:00:00Z, 2026-12-01T11:00:00Z): the runs after the interruption were made on freshly provisioned devices with a freshly loaded data set",
        "placement remote unusable since run 0004-remote-tpcb-c8-r1: its server did not start (server: postgres exited during start-up (exit status 1); server log: FATAL:  could not open file)",
        "3 run(s) failed; see their failure column and runs/<id>/",
        "DAX asked for on pmem-wal but not in effect: the kernel mounted it without dax (dax=always not in /proc/mounts)",
        "data set pgbench-s5 (82 MiB) fits in the server's memory (96MiB): reads are served from memory after warm-up, so read-only results do not exercise storage; use a memory limit well below the data set",
    ];

    #[test]
    fn every_sentence_reads_back_as_its_variant_and_prints_as_it_was() {
        for text in WRITTEN {
            let w = Warning::from_text(text);
            assert!(!matches!(w, Warning::Other(_)), "{text}");
            assert_eq!(w.to_string(), text);
            let json = serde_json::to_string(&w).unwrap();
            assert_eq!(json, serde_json::to_string(text).unwrap(), "stored as the sentence");
            assert_eq!(serde_json::from_str::<Warning>(&json).unwrap(), w);
        }
        assert_eq!(
            Warning::from_text(WRITTEN[0]),
            Warning::ClientCpuBound { client: "pgbench".into(), core_pct: 97.0, threads: 2 }
        );
        assert_eq!(
            Warning::from_text(WRITTEN[3]),
            Warning::TpccErrors {
                failed: 12,
                by_kind: vec![("deadlock".into(), 2), ("serialization_failure".into(), 10)],
                example: "db error: ERROR: could not serialize access due to concurrent update".into(),
            }
        );
    }

    #[test]
    fn figures_print_as_before() {
        let w = Warning::ClientCpuBound { client: "TPC-C".into(), core_pct: 181.46, threads: 2 };
        assert_eq!(
            w.to_string(),
            "the TPC-C client used 181% of a core with 2 thread(s): the client, not storage, may be the limit"
        );
        let w = Warning::CheckpointInRun { at_s: vec![2.4, 17.6] };
        assert!(w.to_string().starts_with("a checkpoint started inside the measured run (at 2, 18 s): "), "{w}");
        let w = Warning::FitsInMemory { dataset: "tpcc-w4".into(), size_mib: 401.7, memory: MemoryLabel::Unlimited };
        assert!(w.to_string().starts_with("data set tpcc-w4 (402 MiB) fits in the server's memory (unlimited): "));
    }

    #[test]
    fn any_other_sentence_is_kept_as_it_is() {
        for text in [
            "the [kernel] settings are recorded but not applied when emulating (set [emulate] apply_kernel_settings = true to apply them)",
            "the pgbench client used many cores with 2 thread(s): the client, not storage, may be the limit",
            "3.5 run(s) failed; see their failure column and runs/<id>/",
            "",
        ] {
            let w: Warning = serde_json::from_str(&serde_json::to_string(text).unwrap()).unwrap();
            assert_eq!(w, Warning::Other(text.into()));
            assert_eq!(w.to_string(), text);
        }
    }

    #[test]
    fn a_placement_whose_tier_broke_is_not_said_to_have_failed_to_start() {
        let w = Warning::PlacementUnusable {
            placement: "b".into(),
            run_id: "0003-b-rw-c2-r1".into(),
            failure: "the emulated tier remote failed during 0002-c-rw-c2-r1: nbdkit is no longer running".into(),
        };
        let text = w.to_string();
        assert_eq!(
            text,
            "placement b unusable since run 0003-b-rw-c2-r1: the emulated tier remote failed during 0002-c-rw-c2-r1: nbdkit is no longer running"
        );
        assert_eq!(Warning::from_text(&text), w);
    }

    #[test]
    fn holes_between_pieces() {
        assert_eq!(holes("a1b22c", &["a", "b", "c"]), Some(vec!["1", "22"]));
        assert_eq!(holes("1 x", &["", " x"]), Some(vec!["1"]));
        assert_eq!(holes("a1c", &["a", "b", "c"]), None);
        assert_eq!(holes("zz", &["a", ""]), None);
    }
}
