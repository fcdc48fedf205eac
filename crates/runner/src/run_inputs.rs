//! What a run is given and what watches it: [`RunInputs`], the run's context shared by its
//! steps ([`RunCtx`]) and its [`Observer`]. A leaf below `execute` and the steps it takes
//! (`system`, `pgbench_run`, `tpcc_run`, `tpcc_remote`, `supervisor`), so that none of them
//! needs `execute`.

use std::path::Path;

use results::ResultsDir;

use crate::env::RunnerEnv;
use crate::faults::Fault;
use crate::matrix::{MemoryLimit, PlacementTarget, PlannedRun, Profile, WorkloadSpec};
use crate::pgbench::Progress;

/// Live reports while a run goes on.
pub trait Observer: Send {
    /// A `-P` progress line of the measured run (`ramp_up` true during the discarded ramp-up).
    fn progress(&mut self, _p: &Progress, _ramp_up: bool) {}
    fn note(&mut self, _text: &str) {}
    /// A live status line (replaces the previous one on a terminal).
    fn live(&mut self, _text: &str) {}
}

/// What a run needs.
pub struct RunInputs<'a> {
    pub planned: &'a PlannedRun,
    pub placement: &'a PlacementTarget,
    pub workload: &'a WorkloadSpec,
    pub profile: &'a Profile,
    pub memory: &'a MemoryLimit,
    pub results: &'a ResultsDir,
    /// Faults to inject into the measured interval.
    pub faults: &'a [Fault],
}

/// What the steps of a run share: the environment, the inputs and the run's directory.
#[derive(Clone, Copy)]
pub(crate) struct RunCtx<'c> {
    pub env: &'c RunnerEnv<'c>,
    pub inp: &'c RunInputs<'c>,
    pub run_dir: &'c Path,
}
