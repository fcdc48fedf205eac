//! What a measured run does to processes and the database, in the spirit of `tiers::System`:
//! [`RunSystem`] is every step the run logic (`execute::run`) takes, [`RealRun`] takes them on
//! the machine (the server in its cgroup, pgbench or the TPC-C driver, the kernel), and the
//! unit tests of the run logic answer them from a fake that records every call.

use std::collections::BTreeMap;
use std::process::ExitStatus;
use std::time::Duration;

use journal::{CommandError, Output};
use results::record::RunRecord;

use crate::cgroup::{MemoryStats, ServerCgroup};
use crate::error::IoContext;
use crate::matrix::WorkloadKind;
use crate::run_inputs::{Observer, RunCtx};
use crate::server::{self, Server};
use crate::{DATABASE, RunnerError, pgbench_run, tpcc_run};

/// The server's cgroup as a run reads it.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct CgroupState {
    pub limit_bytes: Option<u64>,
    pub memory: MemoryStats,
    /// Processes the OOM killer killed in it; None when the kernel does not say.
    pub oom_kills: Option<u64>,
    /// Its path as the kernel's log names it (`/pgtier/<run>/<server>`).
    pub kernel_path: String,
}

/// The postmaster as a run sees it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Postmaster {
    pub pid: i32,
    pub running: bool,
    /// How it ended, once it has.
    pub exit: Option<ExitStatus>,
}

/// Every step a measured run takes on processes and the database, in the order the run logic
/// takes them.
pub(crate) trait RunSystem {
    /// Writes the server's configuration, makes its cgroup and starts it; a failure means the
    /// placement cannot run a server.
    async fn start_server(&mut self) -> Result<(), RunnerError>;
    /// The settings that differ from PostgreSQL's defaults (pg_settings).
    async fn read_settings(&mut self) -> Result<BTreeMap<String, String>, RunnerError>;
    async fn checkpoint(&mut self) -> Result<(), RunnerError>;
    /// Flushes every filesystem.
    fn sync(&mut self);
    /// Drops the kernel's page cache.
    fn drop_caches(&mut self) -> Result<(), RunnerError>;
    /// Resets the cgroup's peak memory counter, where the kernel allows it.
    fn reset_peak(&mut self);
    /// The discarded ramp-up; returns its throughput when it reported one.
    async fn ramp_up(&mut self, obs: &mut dyn Observer) -> Result<Option<f64>, RunnerError>;
    /// The measured interval with its evidence and faults; fills the record's figures.
    async fn measure(
        &mut self,
        expected_tps: Option<f64>,
        record: &mut RunRecord,
        obs: &mut dyn Observer,
    ) -> Result<(), RunnerError>;
    /// The server's cgroup, when it has one.
    fn cgroup(&mut self) -> Option<CgroupState>;
    /// The postmaster, once started.
    fn postmaster(&mut self) -> Option<Postmaster>;
    /// The server's log (`postgres.log` in the run's directory).
    fn server_log(&mut self) -> String;
    /// The kernel's ring buffer.
    fn dmesg(&mut self) -> Result<Output, CommandError>;
    /// Stops the server: fast shutdown, an immediate one after `grace`.
    async fn stop_server(&mut self, grace: Duration) -> Result<(), RunnerError>;
    /// Removes the server's cgroup once its processes have left it.
    async fn remove_cgroup(&mut self) -> Result<(), RunnerError>;
}

/// The settings a placement's server runs with: the profile's (the placement's own when it names
/// one, in place of the matrix's), the memory limit's, and the temporary tablespace when the
/// placement puts one on its own device.
pub(crate) fn server_settings(
    profile: &crate::matrix::Profile,
    memory: &crate::matrix::MemoryLimit,
    placement: &crate::matrix::PlacementTarget,
) -> BTreeMap<String, String> {
    let mut settings = placement.profile.as_ref().unwrap_or(profile).settings.clone();
    settings.extend(memory.settings.clone());
    if placement.tablespaces.contains_key("temp") {
        settings.insert("temp_tablespaces".into(), crate::dataset::tablespace_name("temp"));
    }
    settings
}

/// The run on this machine.
pub(crate) struct RealRun<'c> {
    ctx: RunCtx<'c>,
    server: Option<Server>,
    /// The cgroup of the stopped server, until it is removed.
    cgroup: Option<ServerCgroup>,
    /// The connection that read the settings, for the CHECKPOINT.
    client: Option<tokio_postgres::Client>,
}

impl<'c> RealRun<'c> {
    pub(crate) fn new(ctx: RunCtx<'c>) -> RealRun<'c> {
        RealRun { ctx, server: None, cgroup: None, client: None }
    }

    fn server(&mut self) -> Result<&mut Server, RunnerError> {
        self.server.as_mut().ok_or_else(|| RunnerError::Server("the server is not running".into()))
    }

    /// The server's cgroup: made per run, with the memory limit and the I/O throttles.
    fn make_cgroup(&self) -> Result<Option<ServerCgroup>, RunnerError> {
        let (env, p) = (self.ctx.env, self.ctx.inp.planned);
        match (&env.cgroups, p.memory_limit) {
            (Some(h), limit) => Ok(Some(ServerCgroup::create(
                env.server.journal,
                h,
                &env.run_token,
                &p.run_id,
                crate::cgroup::Limits { memory_bytes: limit, throttles: &env.throttles, cpu_quota: None },
            )?)),
            (None, _) if !env.throttles.is_empty() => {
                Err(RunnerError::Setup("an I/O throttle needs cgroups, and this machine has none".into()))
            }
            (None, Some(_)) => Err(RunnerError::Setup(
                "a memory limit needs a cgroup memory controller, and this machine has none".into(),
            )),
            (None, None) => Ok(None),
        }
    }
}

impl RunSystem for RealRun<'_> {
    async fn start_server(&mut self) -> Result<(), RunnerError> {
        let (env, inp) = (self.ctx.env, self.ctx.inp);
        let settings = server_settings(inp.profile, inp.memory, inp.placement);
        let data_dir = &inp.placement.data_dir;
        server::write_config(
            data_dir,
            env.server.port,
            &env.server.socket_dir,
            &settings,
            env.server.user.uid,
            env.server.user.gid,
        )?;
        if let Some(client) = &env.client {
            server::write_client_access(data_dir, client, env.server.user.uid, env.server.user.gid)?;
        }
        let cgroup = self.make_cgroup()?;
        let log = self.ctx.run_dir.join("postgres.log");
        let srv = Server::start_for_client(&env.server, data_dir, cgroup, &log, env.client.as_ref()).await?;
        self.server = Some(srv);
        Ok(())
    }

    async fn read_settings(&mut self) -> Result<BTreeMap<String, String>, RunnerError> {
        let client = self.server()?.connect(DATABASE).await?;
        let settings = server::non_default_settings(&client).await?;
        self.client = Some(client);
        Ok(settings)
    }

    async fn checkpoint(&mut self) -> Result<(), RunnerError> {
        let client = match self.client.take() {
            Some(c) => c,
            None => self.server()?.connect(DATABASE).await?,
        };
        client.batch_execute("CHECKPOINT").await.map_err(RunnerError::query("checkpoint"))
    }

    fn sync(&mut self) {
        crate::dataset::sync_all();
    }

    fn drop_caches(&mut self) -> Result<(), RunnerError> {
        std::fs::write("/proc/sys/vm/drop_caches", "3").io_context(|| "drop the page cache".into())
    }

    fn reset_peak(&mut self) {
        if let Some(c) = self.server.as_ref().and_then(|s| s.cgroup.as_ref()) {
            c.reset_peak();
        }
    }

    async fn ramp_up(&mut self, obs: &mut dyn Observer) -> Result<Option<f64>, RunnerError> {
        let ctx = self.ctx;
        let srv = self.server()?;
        match &ctx.inp.workload.kind {
            WorkloadKind::Pgbench(w) => pgbench_run::ramp_up(&ctx, srv, w, obs).await,
            WorkloadKind::Tpcc(w) => tpcc_run::ramp_up(&ctx, srv, w, obs).await.map(|()| None),
        }
    }

    async fn measure(
        &mut self,
        expected_tps: Option<f64>,
        record: &mut RunRecord,
        obs: &mut dyn Observer,
    ) -> Result<(), RunnerError> {
        let ctx = self.ctx;
        let srv = self.server()?;
        match &ctx.inp.workload.kind {
            WorkloadKind::Pgbench(w) => pgbench_run::measure(&ctx, srv, w, expected_tps, record, obs).await,
            WorkloadKind::Tpcc(w) => tpcc_run::measure(&ctx, srv, w, record, obs).await,
        }
    }

    fn cgroup(&mut self) -> Option<CgroupState> {
        let c = self.server.as_ref().and_then(|s| s.cgroup.as_ref()).or(self.cgroup.as_ref())?;
        Some(CgroupState {
            limit_bytes: c.limit_bytes,
            memory: c.memory(),
            oom_kills: c.oom_kills(),
            kernel_path: c.kernel_path(),
        })
    }

    fn postmaster(&mut self) -> Option<Postmaster> {
        let srv = self.server.as_mut()?;
        let running = srv.is_running();
        Some(Postmaster { pid: srv.process.pid, running, exit: srv.exit_status() })
    }

    fn server_log(&mut self) -> String {
        std::fs::read_to_string(self.ctx.run_dir.join("postgres.log")).unwrap_or_default()
    }

    fn dmesg(&mut self) -> Result<Output, CommandError> {
        crate::diagnose::dmesg()
    }

    async fn stop_server(&mut self, grace: Duration) -> Result<(), RunnerError> {
        let Some(mut srv) = self.server.take() else { return Ok(()) };
        self.cgroup = srv.cgroup.take();
        srv.stop_within(self.ctx.env.server.journal, grace).await
    }

    async fn remove_cgroup(&mut self) -> Result<(), RunnerError> {
        let Some(c) = self.cgroup.take() else { return Ok(()) };
        // Backends leave the cgroup a moment after the postmaster exits.
        for _ in 0..50 {
            if c.pids().is_empty() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        c.remove(self.ctx.env.server.journal)
    }
}

#[cfg(test)]
mod tests {
    use super::server_settings;
    use crate::testing::{memory, placement, profile};

    #[test]
    fn a_placement_s_own_profile_replaces_the_matrix_s_and_the_memory_limit_s_settings_win() {
        let matrix = profile(&[("work_mem", "4MB"), ("bgwriter_delay", "200ms")]);
        let mut limit = memory(Some(256 << 20));
        limit.settings.insert("shared_buffers".into(), "32MB".into());
        let mut p = placement();
        let plain = server_settings(&matrix, &limit, &p);
        assert_eq!(plain.get("work_mem").map(String::as_str), Some("4MB"));
        let mut own = profile(&[("bgwriter_delay", "10ms"), ("shared_buffers", "1GB")]);
        own.name = "performance".into();
        p.profile = Some(own);
        let s = server_settings(&matrix, &limit, &p);
        assert_eq!(s.get("work_mem"), None, "the matrix's profile is replaced, not merged");
        assert_eq!(s.get("bgwriter_delay").map(String::as_str), Some("10ms"));
        assert_eq!(s.get("shared_buffers").map(String::as_str), Some("32MB"), "the memory limit's settings on top");
    }
}
