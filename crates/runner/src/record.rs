//! The run record as the runner makes it: one constructor for every record of a planned run,
//! and the failure kinds a run sets (the only place that spells them).

use results::record::{Metrics, RunRecord, RunStatus};
use results::timestamp;

use crate::matrix::{PlannedRun, WorkloadKind, WorkloadSpec};

/// The `failure_kind`s the runner sets (result.json, runs.csv).
pub(crate) mod kind {
    /// Preparing the run failed (the default for a failure no other kind explains).
    pub const SETUP: &str = "setup";
    /// The placement could not run a server.
    pub const SERVER_START: &str = "server-start";
    /// A server process was killed by a signal or the postmaster ended.
    pub const SERVER_CRASH: &str = "server-crash";
    /// The kernel's OOM killer killed a process in the server's cgroup.
    pub const OUT_OF_MEMORY: &str = "out-of-memory";
    /// The workload failed while nothing happened to the server.
    pub const WORKLOAD: &str = "workload";
    /// The workload outlived its duration and was stopped.
    pub const WATCHDOG: &str = "watchdog";
}

/// A new record of `planned` running `workload`, started at `started_at` (RFC 3339): status ok,
/// nothing measured, not finished.
pub fn new_record(planned: &PlannedRun, workload: &WorkloadSpec, started_at: String) -> RunRecord {
    let (kind, script) = match &workload.kind {
        WorkloadKind::Pgbench(p) => ("pgbench", p.builtin.as_str().to_string()),
        WorkloadKind::Tpcc(t) => ("tpcc", t.script()),
    };
    RunRecord {
        run_id: planned.run_id.clone(),
        sequence: planned.sequence,
        cell: planned.cell.clone(),
        repetition: planned.repetition,
        workload_kind: kind.into(),
        script,
        threads: planned.threads,
        scale: workload.scale(),
        duration_s: workload.duration.as_secs_f64(),
        ramp_up_s: workload.ramp_up.as_secs_f64(),
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
    fn set_kind(&mut self, kind: &str);
    /// Sets the kind unless one is set already.
    fn default_kind(&mut self, kind: &str);
    fn kind_is(&self, kind: &str) -> bool;
}

impl FailureKindExt for RunRecord {
    fn set_kind(&mut self, kind: &str) {
        self.failure_kind = Some(kind.to_string());
    }

    fn default_kind(&mut self, kind: &str) {
        self.failure_kind.get_or_insert_with(|| kind.to_string());
    }

    fn kind_is(&self, kind: &str) -> bool {
        self.failure_kind.as_deref() == Some(kind)
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
        assert_eq!((r.status, r.failure_kind.as_deref(), r.cell.clone()), (RunStatus::Ok, None, planned.cell.clone()));
        let n = not_run(&planned, &workload, "not run: gone");
        assert_eq!((n.status, n.failure.as_deref()), (RunStatus::Failed, Some("not run: gone")));
        assert_eq!(n.started_at, n.finished_at);
    }

    #[test]
    fn failure_kinds_set_and_default() {
        let mut r = new_record(&testing::planned(None), &testing::workload(Duration::ZERO), "t0".into());
        r.default_kind(kind::WORKLOAD);
        r.default_kind(kind::SETUP);
        assert!(r.kind_is(kind::WORKLOAD));
        r.set_kind(kind::SERVER_CRASH);
        assert!(r.kind_is(kind::SERVER_CRASH));
    }
}
