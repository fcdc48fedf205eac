//! The supervisor of a running workload: the one loop that, every tick, checks for
//! cancellation, injects the faults that are due and stops a workload that outlives its
//! duration (the watchdog). pgbench runs and TPC-C drives, ramp-up and measured, run under it.

use std::time::{Duration, Instant};

use journal::ProcessId;

use crate::env::RunnerEnv;
use crate::faults::{self, Fault, Injected};
use crate::run_inputs::Observer;

/// How often the supervisor looks.
pub(crate) const TICK: Duration = Duration::from_millis(100);

/// What to watch while a workload runs: its duration (for the watchdog), faults to inject, and
/// the server they may target.
#[derive(Clone, Copy)]
pub struct Watch<'a> {
    pub duration: Duration,
    pub faults: &'a [Fault],
    pub server: Option<ProcessId>,
}

/// How long a workload of `duration` may run before the watchdog stops it: `grace` more, or
/// by default 30 s or half the duration more, whichever is longer.
pub(crate) fn watchdog_limit(duration: Duration, grace: Option<Duration>) -> Duration {
    duration + grace.unwrap_or(Duration::from_secs(30).max(duration / 2))
}

/// Why the supervisor stopped a workload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Stop {
    /// The run was cancelled (Ctrl-C, SIGTERM).
    Cancelled,
    /// The workload outlived its watchdog limit (hung client or stalled storage).
    Watchdog,
}

/// A workload under supervision.
pub(crate) trait Supervised {
    type Output;
    /// Waits for the workload's next step; `Some` once it has finished. It is dropped at every
    /// tick and called again, so it must not lose what it has read.
    async fn step(&mut self) -> Option<Self::Output>;
    /// Passes on what happened since the last call (progress) to the observer.
    fn report(&mut self, obs: &mut dyn Observer);
    /// Stops the workload; it is then waited for until it has finished.
    fn stop(&mut self, why: Stop);
    /// The client process a fault may stop, when the workload runs as a process of its own.
    fn client_pid(&self) -> Option<u32>;
}

/// How a supervised workload ended.
pub(crate) struct Supervision<T> {
    pub output: T,
    /// Set when the supervisor stopped the workload.
    pub stopped: Option<Stop>,
    /// The watchdog's limit.
    pub limit: Duration,
    /// The faults injected, as sentences; what they put in place is already removed.
    pub injected: Vec<String>,
}

/// Runs `work` to its end under supervision. Once it is stopped (cancelled or by the
/// watchdog) no further fault is injected and it is only waited for.
pub(crate) async fn supervise<W: Supervised>(
    env: &RunnerEnv<'_>,
    watch: Watch<'_>,
    work: &mut W,
    obs: &mut dyn Observer,
) -> Supervision<W::Output> {
    let limit = watchdog_limit(watch.duration, env.watchdog_grace);
    let started = Instant::now();
    let mut fired = vec![false; watch.faults.len()];
    let mut injected = Injected::default();
    let mut stopped = None;
    // Ticks at a steady pace, however often the workload steps (a client that prints many lines
    // must not keep the supervisor from looking).
    let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + TICK, TICK);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let output = loop {
        tokio::select! {
            done = work.step() => if let Some(out) = done {
                work.report(obs);
                break out;
            },
            _ = ticks.tick() => if stopped.is_none() {
                if env.cancelled() {
                    stopped = Some(Stop::Cancelled);
                } else {
                    let elapsed = started.elapsed();
                    let client = work.client_pid();
                    for note in faults::fire_due(watch.faults, &mut fired, elapsed, env, (watch.server, client), &mut injected) {
                        obs.note(&format!("fault injected: {note}"));
                    }
                    if elapsed > limit {
                        stopped = Some(Stop::Watchdog);
                    }
                }
                if let Some(why) = stopped {
                    work.stop(why);
                }
            }
        }
        work.report(obs);
    };
    Supervision { output, stopped, limit, injected: injected.revert(env.server.journal) }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    use super::*;
    use crate::faults::FaultAction;
    use crate::install::{DbUser, PgInstall};

    /// A workload that finishes after `steps_left` steps of 20 ms (faster than the tick), or
    /// once stopped.
    struct Sleeper {
        steps_left: u32,
        stops: Vec<Stop>,
        reports: u32,
    }

    impl Supervised for Sleeper {
        type Output = &'static str;
        async fn step(&mut self) -> Option<&'static str> {
            if !self.stops.is_empty() {
                return Some("stopped");
            }
            if self.steps_left == 0 {
                return Some("finished");
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
            self.steps_left -= 1;
            None
        }
        fn report(&mut self, _obs: &mut dyn Observer) {
            self.reports += 1;
        }
        fn stop(&mut self, why: Stop) {
            self.stops.push(why);
        }
        fn client_pid(&self) -> Option<u32> {
            None
        }
    }

    struct Notes(Vec<String>);
    impl Observer for Notes {
        fn note(&mut self, text: &str) {
            self.0.push(text.to_string());
        }
    }

    fn env<'a>(journal: &'a journal::Journal, grace: Duration, cancel: Arc<AtomicBool>) -> RunnerEnv<'a> {
        RunnerEnv {
            server: crate::server::ServerLaunch {
                install: PgInstall {
                    bin_dir: "/nonexistent".into(),
                    version_line: String::new(),
                    major: 0,
                    client_dir: "/nonexistent".into(),
                    client_version_line: String::new(),
                },
                user: DbUser { name: "postgres".into(), uid: 1, gid: 1, groups: vec![] },
                journal,
                socket_dir: "/nonexistent".into(),
                port: 1,
                cpus: None,
            },
            cgroups: None,
            run_token: "test".into(),
            logs_dir: "/nonexistent".into(),
            cancel,
            drop_caches: false,
            watchdog_grace: Some(grace),
            throttles: vec![],
            client: None,
            client_cpus: None,
            handicap: None,
        }
    }

    #[test]
    fn the_watchdog_limit() {
        let s = Duration::from_secs;
        assert_eq!(watchdog_limit(s(20), None), s(50));
        assert_eq!(watchdog_limit(s(100), None), s(150));
        assert_eq!(watchdog_limit(s(20), Some(s(2))), s(22));
    }

    #[tokio::test]
    async fn a_workload_that_finishes_is_left_alone_and_its_faults_are_reverted() {
        let dir = tempfile::tempdir().unwrap();
        let journal = journal::Journal::begin(&dir.path().join("j"), "t", "test").unwrap();
        let env = env(&journal, Duration::from_secs(5), Arc::default());
        let switch = dir.path().join("error-switch");
        let faults = [Fault {
            after: Duration::ZERO,
            action: FaultAction::CreateFile(switch.clone()),
            description: "an error switch".into(),
        }];
        let watch = Watch { duration: Duration::from_millis(100), faults: &faults, server: None };
        let mut work = Sleeper { steps_left: 15, stops: vec![], reports: 0 };
        let mut notes = Notes(vec![]);
        let s = supervise(&env, watch, &mut work, &mut notes).await;
        assert_eq!((s.output, s.stopped), ("finished", None));
        assert_eq!(s.injected.len(), 1, "{:?}", s.injected);
        assert!(s.injected[0].ends_with(": an error switch"), "{:?}", s.injected);
        assert_eq!(notes.0, vec![format!("fault injected: {}", s.injected[0])]);
        assert!(!switch.exists(), "the injected file is removed after the run");
        assert!(work.reports >= 15, "progress is passed on after every step");
        assert!(journal.pending().is_empty(), "{:?}", journal.pending());
    }

    #[tokio::test]
    async fn a_workload_that_outlives_its_limit_is_stopped_by_the_watchdog() {
        let dir = tempfile::tempdir().unwrap();
        let journal = journal::Journal::begin(&dir.path().join("j"), "t", "test").unwrap();
        let env = env(&journal, Duration::from_millis(100), Arc::default());
        let watch = Watch { duration: Duration::from_millis(100), faults: &[], server: None };
        let mut work = Sleeper { steps_left: u32::MAX, stops: vec![], reports: 0 };
        let t0 = Instant::now();
        let s = supervise(&env, watch, &mut work, &mut Notes(vec![])).await;
        assert_eq!((s.output, s.stopped, s.limit), ("stopped", Some(Stop::Watchdog), Duration::from_millis(200)));
        assert_eq!(work.stops, vec![Stop::Watchdog], "stopped once");
        assert!(t0.elapsed() >= Duration::from_millis(200));
    }

    #[tokio::test]
    async fn a_cancelled_run_stops_its_workload_and_injects_nothing_more() {
        let dir = tempfile::tempdir().unwrap();
        let journal = journal::Journal::begin(&dir.path().join("j"), "t", "test").unwrap();
        let cancel = Arc::new(AtomicBool::new(true));
        let env = env(&journal, Duration::from_secs(5), cancel.clone());
        let late: PathBuf = dir.path().join("late");
        let faults = [Fault {
            after: Duration::ZERO,
            action: FaultAction::CreateFile(late.clone()),
            description: "late".into(),
        }];
        let watch = Watch { duration: Duration::from_secs(10), faults: &faults, server: None };
        let mut work = Sleeper { steps_left: u32::MAX, stops: vec![], reports: 0 };
        let s = supervise(&env, watch, &mut work, &mut Notes(vec![])).await;
        assert_eq!((s.output, s.stopped), ("stopped", Some(Stop::Cancelled)));
        assert!(s.injected.is_empty() && !late.exists());
        assert!(cancel.load(Ordering::SeqCst));
    }
}
