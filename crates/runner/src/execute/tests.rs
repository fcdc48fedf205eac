//! The run logic against a fake system: the order of its steps, and how it names failures.

use std::collections::BTreeMap;
use std::os::unix::process::ExitStatusExt;
use std::time::Duration;

use journal::{CommandError, Output};
use results::ResultsDir;
use results::record::{FailureKind, RunRecord, RunStatus};

use super::{RunInputs, run};
use crate::RunnerError;
use crate::cgroup::MemoryStats;
use crate::execute::Observer;
use crate::system::{CgroupState, Postmaster, RunSystem};
use crate::testing;

const MIB: u64 = 1 << 20;

/// Records every step it is asked to take and answers as it is told.
struct FakeRun {
    calls: Vec<String>,
    start_error: Option<RunnerError>,
    ramp_up_tps: Option<f64>,
    /// What the measured interval ends with (figures are filled when it succeeds).
    measure_error: Option<RunnerError>,
    cgroup: Option<CgroupState>,
    postmaster: Postmaster,
    started: bool,
    server_log: String,
    kernel_log: String,
}

impl FakeRun {
    fn new() -> FakeRun {
        FakeRun {
            calls: vec![],
            start_error: None,
            ramp_up_tps: Some(1234.0),
            measure_error: None,
            cgroup: Some(CgroupState {
                limit_bytes: None,
                memory: MemoryStats { current: Some(50 * MIB), peak: Some(60 * MIB), page_cache: Some(10 * MIB) },
                oom_kills: Some(0),
                kernel_path: "/pgtier/run/0003-A-tpcb-c4-r2".into(),
            }),
            postmaster: Postmaster { pid: 14646, running: true, exit: None },
            started: false,
            server_log: "2026-12-01 09:34:11.002 UTC [14646] LOG:  database system is ready to accept connections\n"
                .into(),
            kernel_log: "[    1.000000] Linux version 6.18\n".into(),
        }
    }

    fn call(&mut self, what: impl Into<String>) {
        self.calls.push(what.into());
    }
}

impl RunSystem for FakeRun {
    async fn start_server(&mut self) -> Result<(), RunnerError> {
        self.call("start server");
        match self.start_error.take() {
            Some(e) => Err(e),
            None => {
                self.started = true;
                Ok(())
            }
        }
    }
    async fn read_settings(&mut self) -> Result<BTreeMap<String, String>, RunnerError> {
        self.call("read settings");
        Ok(BTreeMap::from([("shared_buffers".to_string(), "16384 8kB".to_string())]))
    }
    async fn checkpoint(&mut self) -> Result<(), RunnerError> {
        self.call("CHECKPOINT");
        Ok(())
    }
    fn sync(&mut self) {
        self.call("sync");
    }
    fn drop_caches(&mut self) -> Result<(), RunnerError> {
        self.call("drop caches");
        Ok(())
    }
    fn reset_peak(&mut self) {
        self.call("reset peak");
    }
    async fn ramp_up(&mut self, _obs: &mut dyn Observer) -> Result<Option<f64>, RunnerError> {
        self.call("ramp-up");
        Ok(self.ramp_up_tps)
    }
    async fn measure(
        &mut self,
        expected_tps: Option<f64>,
        record: &mut RunRecord,
        _obs: &mut dyn Observer,
    ) -> Result<(), RunnerError> {
        self.call(format!("measure expecting {expected_tps:?} tps"));
        match self.measure_error.take() {
            Some(e) => Err(e),
            None => {
                record.metrics.tps = 1000.0;
                Ok(())
            }
        }
    }
    fn cgroup(&mut self) -> Option<CgroupState> {
        self.cgroup.clone()
    }
    fn postmaster(&mut self) -> Option<Postmaster> {
        self.started.then_some(self.postmaster)
    }
    fn server_log(&mut self) -> String {
        self.server_log.clone()
    }
    fn dmesg(&mut self) -> Result<Output, CommandError> {
        self.call("dmesg");
        Ok(Output { status: 0, stdout: self.kernel_log.clone(), stderr: String::new() })
    }
    async fn stop_server(&mut self, grace: Duration) -> Result<(), RunnerError> {
        self.call(format!("stop server within {} s", grace.as_secs()));
        Ok(())
    }
    async fn remove_cgroup(&mut self) -> Result<(), RunnerError> {
        self.call("remove cgroup");
        Ok(())
    }
}

struct Quiet;
impl Observer for Quiet {}

/// Runs the run logic on `sys`: a pgbench run with a 5 s ramp-up (none when `ramp_up` is
/// false) under `limit`, with profile `settings`; also returns the stored result.json.
async fn run_on(
    sys: &mut FakeRun,
    limit: Option<u64>,
    settings: &[(&str, &str)],
    ramp_up: bool,
    drop_caches: bool,
) -> (Result<RunRecord, RunnerError>, Option<RunRecord>) {
    let dir = tempfile::tempdir().unwrap();
    let results = ResultsDir::new(dir.path());
    let planned = testing::planned(limit);
    let workload = testing::workload(if ramp_up { Duration::from_secs(5) } else { Duration::ZERO });
    let (placement, profile, memory) = (testing::placement(), testing::profile(settings), testing::memory(limit));
    let inp = RunInputs {
        planned: &planned,
        placement: &placement,
        workload: &workload,
        profile: &profile,
        memory: &memory,
        results: &results,
        faults: &[],
    };
    let r = run(sys, &inp, drop_caches, &mut Quiet).await;
    let stored = results.read_runs().unwrap().pop();
    (r, stored)
}

fn steps(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

#[tokio::test]
async fn a_clean_run_takes_every_step_in_order() {
    let mut sys = FakeRun::new();
    let (r, stored) = run_on(&mut sys, None, &[], true, true).await;
    let r = r.unwrap();
    assert_eq!(
        sys.calls,
        steps(&[
            "start server",
            "read settings",
            "CHECKPOINT",
            "sync",
            "drop caches",
            "reset peak",
            "ramp-up",
            "measure expecting Some(1234.0) tps",
            "stop server within 60 s",
            "remove cgroup",
        ])
    );
    assert_eq!((r.status, r.failure.as_deref(), r.failure_kind), (RunStatus::Ok, None, None));
    assert_eq!(r.metrics.tps, 1000.0);
    assert_eq!(r.server_settings.get("shared_buffers").map(String::as_str), Some("16384 8kB"));
    let mem = r.memory.clone().unwrap();
    assert_eq!((mem.peak_bytes, mem.page_cache_bytes), (Some(60 * MIB), Some(10 * MIB)));
    assert!(!r.finished_at.is_empty());
    assert_eq!(stored.as_ref(), Some(&r), "the record is stored as result.json");
    assert!(r.raw_files.is_empty(), "a clean run keeps no dmesg.txt: {:?}", r.raw_files);
}

#[tokio::test]
async fn without_ramp_up_or_cache_dropping_those_steps_are_left_out() {
    let mut sys = FakeRun::new();
    sys.cgroup = None;
    let (r, _) = run_on(&mut sys, None, &[], false, false).await;
    let r = r.unwrap();
    assert_eq!(
        sys.calls,
        steps(&[
            "start server",
            "read settings",
            "CHECKPOINT",
            "sync",
            "reset peak",
            "measure expecting None tps",
            "stop server within 60 s",
            "remove cgroup",
        ])
    );
    assert_eq!((r.status, r.memory), (RunStatus::Ok, None));
}

#[tokio::test]
async fn a_server_that_does_not_start_fails_the_run_as_server_start() {
    let mut sys = FakeRun::new();
    sys.start_error = Some(RunnerError::Server(
        "postgres exited during start-up (exit status: 1); log tail: FATAL:  invalid value for parameter".into(),
    ));
    sys.server_log =
        "2026-12-01 09:34:11.002 UTC [14646] FATAL:  invalid value for parameter \"shared_buffers\"\n".into();
    let (r, stored) = run_on(&mut sys, None, &[], true, true).await;
    let r = r.unwrap();
    assert_eq!(sys.calls, steps(&["start server", "dmesg"]), "nothing runs on a server that did not start");
    assert_eq!((r.status, r.failure_kind), (RunStatus::Failed, Some(FailureKind::ServerStart)));
    let why = r.failure.clone().unwrap();
    assert!(why.starts_with("server: postgres exited during start-up"), "{why}");
    assert!(why.contains("; server log: 2026-12-01 09:34:11.002 UTC [14646] FATAL:  invalid value"), "{why}");
    assert_eq!(r.raw_files, vec!["dmesg.txt".to_string()], "the kernel's messages are kept next to it");
    assert_eq!(stored, Some(r));
}

#[tokio::test]
async fn an_oom_kill_in_the_cgroup_fails_the_run_as_out_of_memory() {
    let mut sys = FakeRun::new();
    let c = sys.cgroup.as_mut().unwrap();
    (c.limit_bytes, c.memory.peak, c.oom_kills) = (Some(96 * MIB), Some(95 * MIB), Some(1));
    sys.server_log.push_str(
        "2026-12-01 09:34:21.369 UTC [14646] LOG:  server process (PID 14708) was terminated by signal 9: Killed\n\
         2026-12-01 09:34:21.369 UTC [14646] DETAIL:  Failed process was running: autovacuum: ANALYZE public.pgbench_accounts\n",
    );
    sys.kernel_log.push_str(
        "[  481.800638] oom-kill:constraint=CONSTRAINT_MEMCG,oom_memcg=/pgtier/run/0003-A-tpcb-c4-r2,task=postgres,pid=14708\n\
         [  481.800655] Memory cgroup out of memory: Killed process 14708 (postgres) total-vm:229464kB\n",
    );
    // The workload itself finished: the kill still taints the run.
    let (r, _) = run_on(&mut sys, Some(96 * MIB), &[("default_statistics_target", "10000")], true, true).await;
    let r = r.unwrap();
    assert_eq!((r.status, r.failure_kind), (RunStatus::Failed, Some(FailureKind::OutOfMemory)));
    let why = r.failure.clone().unwrap();
    for needle in [
        "server: the kernel's OOM killer killed 1 process(es) in the server's memory cgroup",
        "limit 96 MiB",
        "peak 95 MiB",
        "a server process (PID 14708, running \"autovacuum: ANALYZE public.pgbench_accounts\") was killed by signal 9 (SIGKILL)",
        "kernel: Memory cgroup out of memory: Killed process 14708",
        "What these settings need (largest first)",
        "default_statistics_target 10000",
    ] {
        assert!(why.contains(needle), "the failure says {needle:?}: {why}");
    }
    assert!(!why.contains("The workload then failed"), "{why}");
    assert_eq!(sys.calls.iter().filter(|c| *c == "stop server within 10 s").count(), 1, "{:?}", sys.calls);
    assert_eq!(r.memory.unwrap().limit_bytes, Some(96 * MIB));
}

#[tokio::test]
async fn a_crash_in_the_server_log_fails_the_run_as_server_crash() {
    let mut sys = FakeRun::new();
    sys.measure_error = Some(RunnerError::Workload("pgbench failed (exit code 2): connection lost".into()));
    sys.server_log.push_str(
        "2026-12-01 09:34:21.369 UTC [14646] LOG:  server process (PID 14708) was terminated by signal 9: Killed\n",
    );
    let (r, _) = run_on(&mut sys, None, &[], true, true).await;
    let r = r.unwrap();
    assert_eq!((r.status, r.failure_kind), (RunStatus::Failed, Some(FailureKind::ServerCrash)));
    let why = r.failure.clone().unwrap();
    assert!(
        why.starts_with(
            "server: a server process (PID 14708) was killed by signal 9 (SIGKILL); the run then failed: workload: pgbench failed (exit code 2): connection lost"
        ),
        "{why}"
    );
    assert!(why.contains("; server log: ") && why.contains("terminated by signal 9"), "{why}");
    let tail = &sys.calls[sys.calls.len() - 4..];
    assert_eq!(tail, steps(&["dmesg", "stop server within 10 s", "remove cgroup", "dmesg"]), "{:?}", sys.calls);
}

#[tokio::test]
async fn a_postmaster_that_ended_is_a_server_crash_and_a_failure_on_a_healthy_server_is_the_workload() {
    let mut sys = FakeRun::new();
    sys.measure_error =
        Some(RunnerError::Workload("pgbench failed (exit code 2): server closed the connection".into()));
    sys.postmaster = Postmaster { pid: 14646, running: false, exit: Some(std::process::ExitStatus::from_raw(9)) };
    let (r, _) = run_on(&mut sys, None, &[], true, true).await;
    let r = r.unwrap();
    assert_eq!(r.failure_kind, Some(FailureKind::ServerCrash));
    assert!(r.failure.unwrap().starts_with("server: the postmaster (PID 14646) ended with signal 9 (SIGKILL)"));

    let mut sys = FakeRun::new();
    sys.measure_error = Some(RunnerError::Workload("pgbench failed (exit code 1): bad script".into()));
    let (r, _) = run_on(&mut sys, None, &[], true, true).await;
    let r = r.unwrap();
    assert_eq!(r.failure_kind, Some(FailureKind::Workload));
    assert_eq!(r.failure.as_deref(), Some("workload: pgbench failed (exit code 1): bad script"));
    assert!(sys.calls.contains(&"stop server within 60 s".to_string()), "{:?}", sys.calls);
}

#[tokio::test]
async fn a_cancelled_run_stops_the_server_and_stores_nothing() {
    let mut sys = FakeRun::new();
    sys.measure_error = Some(RunnerError::Cancelled);
    let (r, stored) = run_on(&mut sys, None, &[], true, true).await;
    assert!(matches!(r, Err(RunnerError::Cancelled)), "{r:?}");
    assert_eq!(stored, None, "an interrupted run has no result");
    assert_eq!(
        &sys.calls[sys.calls.len() - 3..],
        steps(&["measure expecting Some(1234.0) tps", "stop server within 60 s", "remove cgroup"]),
        "the server is stopped, and nothing is asked of the kernel"
    );
}

/// A slice of a sliced session: only the settings and the measured interval; the server was
/// started before and stays up.
#[tokio::test]
async fn a_slice_takes_only_the_measured_steps_and_keeps_the_server_up() {
    let mut sys = FakeRun::new();
    sys.started = true;
    let dir = tempfile::tempdir().unwrap();
    let results = ResultsDir::new(dir.path());
    let planned = testing::planned(None);
    let workload = testing::workload(Duration::ZERO);
    let (placement, profile, memory) = (testing::placement(), testing::profile(&[]), testing::memory(None));
    let inp = RunInputs {
        planned: &planned,
        placement: &placement,
        workload: &workload,
        profile: &profile,
        memory: &memory,
        results: &results,
        faults: &[],
    };
    let r = super::run_slice(&mut sys, &inp, Some(900.0), &mut Quiet).await.unwrap();
    assert_eq!(sys.calls, steps(&["read settings", "measure expecting Some(900.0) tps"]));
    assert_eq!((r.status, r.metrics.tps), (RunStatus::Ok, 1000.0));
    assert_eq!(results.read_runs().unwrap().len(), 1, "stored like any run");
    // An OOM kill during the slice (the session's counter is reported as the slice's own change).
    let mut sys = FakeRun::new();
    sys.started = true;
    sys.cgroup.as_mut().unwrap().oom_kills = Some(1);
    let r = super::run_slice(&mut sys, &inp, None, &mut Quiet).await.unwrap();
    assert_eq!((r.status, r.failure_kind), (RunStatus::Failed, Some(results::FailureKind::OutOfMemory)));
    assert!(!sys.calls.iter().any(|c| c.starts_with("stop server")), "the session stops its servers, not a slice");
}
