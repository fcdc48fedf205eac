//! The run record as the runner makes it: one constructor for every record of a planned run,
//! and how a run sets its failure kind.

use results::manifest::WorkloadRecord;
use results::record::{FailureKind, Metrics, RunRecord, RunStatus};
use results::timestamp;

use crate::matrix::{PlannedRun, WorkloadKind, WorkloadSpec};

/// A new record of `planned` running `workload`, started at `started_at` (RFC 3339): status ok,
/// nothing measured, not finished.
pub fn new_record(planned: &PlannedRun, workload: &WorkloadSpec, started_at: String) -> RunRecord {
    let w = workload_record(workload);
    RunRecord {
        run_id: planned.run_id.clone(),
        sequence: planned.sequence,
        cell: planned.cell.clone(),
        repetition: planned.repetition,
        segment: planned.segment,
        workload_kind: w.kind.as_str().into(),
        script: w.script,
        threads: planned.threads,
        scale: w.scale,
        duration_s: w.duration_s,
        ramp_up_s: w.ramp_up_s,
        started_at,
        finished_at: String::new(),
        status: RunStatus::Ok,
        failure: None,
        failure_kind: None,
        faults: vec![],
        metrics: Metrics::default(),
        statements: vec![],
        series: vec![],
        devices: vec![],
        cpu: None,
        machine: None,
        postgres: None,
        wait_events: None,
        memory: None,
        checkpoints_at_s: vec![],
        io_series: vec![],
        sampler_cpu_s: 0.0,
        server_settings: Default::default(),
        command: String::new(),
        raw_files: vec![],
        warnings: vec![],
    }
}

/// The manifest's record of a workload; its runs' records say the same of it.
pub fn workload_record(workload: &WorkloadSpec) -> WorkloadRecord {
    use results::manifest::WorkloadKind as Kind;
    let (kind, script) = match &workload.kind {
        WorkloadKind::Pgbench(p) => (Kind::Pgbench, p.builtin.as_str().to_string()),
        WorkloadKind::Tpcc(t) => (Kind::Tpcc, t.script()),
    };
    WorkloadRecord {
        name: workload.name.clone(),
        kind,
        script,
        scale: workload.scale(),
        clients: workload.clients.clone(),
        threads: workload.threads,
        duration_s: workload.duration.as_secs_f64(),
        ramp_up_s: workload.ramp_up.as_secs_f64(),
    }
}

/// The record of a run that was not made (its placement became unusable), with the reason.
pub fn not_run(planned: &PlannedRun, workload: &WorkloadSpec, reason: &str) -> RunRecord {
    let now = timestamp::now_rfc3339();
    let mut r = new_record(planned, workload, now.clone());
    r.finished_at = now;
    r.status = RunStatus::Failed;
    r.failure = Some(reason.to_string());
    r
}

/// How the runner sets and reads a record's failure kind.
pub(crate) trait FailureKindExt {
    /// Sets the kind, replacing any earlier one.
    fn set_kind(&mut self, kind: FailureKind);
    /// Sets the kind unless one is set already.
    fn default_kind(&mut self, kind: FailureKind);
    fn kind_is(&self, kind: FailureKind) -> bool;
}

impl FailureKindExt for RunRecord {
    fn set_kind(&mut self, kind: FailureKind) {
        self.failure_kind = Some(kind);
    }

    fn default_kind(&mut self, kind: FailureKind) {
        self.failure_kind.get_or_insert(kind);
    }

    fn kind_is(&self, kind: FailureKind) -> bool {
        self.failure_kind == Some(kind)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::pgbench::Builtin;
    use crate::testing;

    #[test]
    fn a_new_record_describes_the_planned_run() {
        let (planned, workload) = (testing::planned(None), testing::workload(Duration::from_secs(5)));
        let r = new_record(&planned, &workload, "t0".into());
        assert_eq!(
            (r.run_id.as_str(), r.sequence, r.repetition, r.threads, r.scale),
            ("0003-A-tpcb-c4-r2", 3, 2, 2, 5)
        );
        assert_eq!((r.workload_kind.as_str(), r.script.as_str()), ("pgbench", Builtin::TpcbLike.as_str()));
        assert_eq!((r.duration_s, r.ramp_up_s, r.started_at.as_str()), (20.0, 5.0, "t0"));
        assert_eq!((r.status, r.failure_kind, r.cell.clone()), (RunStatus::Ok, None, planned.cell.clone()));
        let n = not_run(&planned, &workload, "not run: gone");
        assert_eq!((n.status, n.failure.as_deref()), (RunStatus::Failed, Some("not run: gone")));
        assert_eq!(n.started_at, n.finished_at);
    }

    #[test]
    fn the_manifest_record_of_a_workload_says_what_its_runs_say() {
        let (planned, workload) = (testing::planned(None), testing::workload(Duration::from_secs(5)));
        let (w, r) = (workload_record(&workload), new_record(&planned, &workload, "t0".into()));
        assert_eq!(
            (w.name.as_str(), w.kind.as_str(), w.script.as_str()),
            ("tpcb", "pgbench", Builtin::TpcbLike.as_str())
        );
        assert_eq!(
            (w.kind.as_str(), w.script.as_str(), w.scale),
            (r.workload_kind.as_str(), r.script.as_str(), r.scale)
        );
        assert_eq!(
            (w.duration_s, w.ramp_up_s, w.clients.clone(), w.threads),
            (20.0, 5.0, workload.clients.clone(), workload.threads)
        );
    }

    #[test]
    fn failure_kinds_set_and_default() {
        let mut r = new_record(&testing::planned(None), &testing::workload(Duration::ZERO), "t0".into());
        r.default_kind(FailureKind::Workload);
        r.default_kind(FailureKind::Setup);
        assert!(r.kind_is(FailureKind::Workload));
        r.set_kind(FailureKind::ServerCrash);
        assert!(r.kind_is(FailureKind::ServerCrash));
    }
}
