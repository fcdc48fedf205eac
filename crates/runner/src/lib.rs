//! PostgreSQL and workloads: finding the binaries, running the server as its own OS user on a
//! private socket (in a memory-limited cgroup when asked), building each data set once and
//! copying it onto every placement, and measured pgbench and TPC-C runs with their raw output.
//! Knows nothing about devices (it gets directories) or charts (it writes run records).

pub mod affinity;
pub mod cgroup;
pub mod dataset;
pub mod diagnose;
pub mod env;
mod error;
mod evidence;
pub mod execute;
pub mod faults;
pub mod install;
pub mod launch;
pub mod matrix;
pub mod memory;
pub mod pgbench;
mod pgbench_run;
pub mod pgstats;
pub mod prewarm;
pub mod record;
mod run_inputs;
pub mod sampler;
pub mod server;
pub mod settle;
pub mod slices;
mod supervisor;
mod system;
#[cfg(test)]
mod testing;
mod tpcc_drive;
pub mod tpcc_remote;
mod tpcc_run;
pub mod waits;

pub use env::RunnerEnv;
pub use error::RunnerError;
pub use install::{DbUser, PgInstall};

/// The database every workload uses.
pub const DATABASE: &str = "pgtier";
