//! Time-sliced interleaving (design `slices`): every placement's server of one memory limit and
//! settings profile is up at once (each on its own port of the private socket directory, in its
//! own cgroup with the limit), and the load alternates between them in short slices. Machine
//! noise on the scale of seconds then lands on every placement alike, and a change is measured
//! per round of slices, paired. The session starts the servers, CHECKPOINTs them and drops the
//! page cache once; each slice is a measured run of its own (`runs/<id>/`, raw output and
//! evidence as for any run), taken by [`execute::run_slice`](crate::execute) on a
//! [`RunSystem`] whose server is already up. Which slice runs when is the caller's decision.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use journal::{CommandError, Output};
use results::record::RunRecord;

use crate::cgroup::ServerCgroup;
use crate::env::RunnerEnv;
use crate::error::IoContext;
use crate::execute::{Observer, RunCtx, RunInputs, run_slice};
use crate::matrix::{MemoryLimit, PlacementTarget, Profile, WorkloadKind};
use crate::server::{self, Server};
use crate::system::{CgroupState, Postmaster, RunSystem, server_settings};
use crate::{DATABASE, RunnerError, pgbench_run, tpcc_run};

/// What a session runs: its servers' placements, profile and memory limit.
pub struct SessionSpec<'a> {
    /// Names the session's cgroups and log directory (`s1`, `s2`, ...).
    pub id: String,
    pub placements: Vec<&'a PlacementTarget>,
    pub profile: &'a Profile,
    pub memory: &'a MemoryLimit,
    /// Where the servers' logs and the discarded warm-up output go.
    pub dir: PathBuf,
}

/// One placement's server in a session.
struct Member<'e> {
    placement: String,
    /// The runner's environment with this server's port.
    env: RunnerEnv<'e>,
    server: Option<Server>,
    log: PathBuf,
    /// Where the server log stood when the current slice began, and the OOM kills by then:
    /// each slice is judged on what happened during it.
    log_start: usize,
    oom_before: u64,
    /// Server lives started so far (a restart begins another).
    lives: u32,
}

/// Servers of one memory limit and profile, up at once.
pub struct Session<'e> {
    pub id: String,
    dir: PathBuf,
    members: Vec<Member<'e>>,
}

/// One placement's prewarm: what was read, and the page cache its server's cgroup held after it.
#[derive(Clone, Debug)]
pub struct Prewarm {
    pub read: crate::prewarm::Prewarmed,
    /// The server cgroup's page cache right after the prewarm (None without a cgroup).
    pub page_cache_bytes: Option<u64>,
    /// The server cgroup's memory limit, when it has one.
    pub limit_bytes: Option<u64>,
}

/// One placement's settle: what the VACUUM (ANALYZE) and CHECKPOINT did.
#[derive(Clone, Debug)]
pub struct Settle {
    pub done: crate::settle::Settled,
}

/// A session that could not start: which placement's server failed, and why. The servers that
/// had started are stopped again.
#[derive(Debug)]
pub struct StartFailure {
    pub placement: String,
    pub error: RunnerError,
}

impl<'e> Session<'e> {
    /// Starts every placement's server (ports after the runner's own), CHECKPOINTs each, syncs and
    /// drops the page cache once.
    pub async fn start(env: &RunnerEnv<'e>, spec: &SessionSpec<'_>) -> Result<Session<'e>, StartFailure> {
        let fail = |placement: &str, error| StartFailure { placement: placement.to_string(), error };
        std::fs::create_dir_all(&spec.dir)
            .io_context(|| format!("mkdir {}", spec.dir.display()))
            .map_err(|e| fail("(session)", e))?;
        let mut session = Session { id: spec.id.clone(), dir: spec.dir.clone(), members: Vec::new() };
        for (i, p) in spec.placements.iter().enumerate() {
            // Each member on its placement's own build when it names one.
            let mut env = p.env_for(env);
            env.server.port += 1 + i as u16;
            match start_member(&env, spec, p, 0).await {
                Ok((server, log)) => session.members.push(Member {
                    placement: p.name.clone(),
                    env,
                    server: Some(server),
                    log,
                    log_start: 0,
                    oom_before: 0,
                    lives: 1,
                }),
                Err(e) => {
                    let _ = session.stop().await;
                    return Err(fail(&p.name, e));
                }
            }
        }
        if let Err(e) = session.settle(env.drop_caches).await {
            let _ = session.stop().await;
            return Err(fail("(session)", e));
        }
        Ok(session)
    }

    /// CHECKPOINT on every server, sync, the page cache dropped, the memory peaks reset.
    async fn settle(&mut self, drop_caches: bool) -> Result<(), RunnerError> {
        for m in &self.members {
            let srv = m.server.as_ref().expect("started");
            let client = srv.connect(DATABASE).await?;
            client.batch_execute("CHECKPOINT").await.map_err(RunnerError::query("checkpoint"))?;
        }
        crate::dataset::sync_all();
        if drop_caches {
            std::fs::write("/proc/sys/vm/drop_caches", "3").io_context(|| "drop the page cache".into())?;
        }
        for m in &self.members {
            if let Some(c) = m.server.as_ref().and_then(|s| s.cgroup.as_ref()) {
                c.reset_peak();
            }
        }
        Ok(())
    }

    /// Before a contest: CHECKPOINT on every running server and sync, so that one contest's
    /// writes are on the devices before the next contest measures (no carry-over of dirty
    /// buffers or page cache from one contest into another's slices).
    pub async fn checkpoint(&mut self) -> Result<(), RunnerError> {
        for m in self.members.iter_mut() {
            let Some(srv) = m.server.as_mut() else { continue };
            if !srv.is_running() {
                continue;
            }
            let client = srv.connect(DATABASE).await?;
            client.batch_execute("CHECKPOINT").await.map_err(RunnerError::query("checkpoint"))?;
        }
        crate::dataset::sync_all();
        Ok(())
    }

    /// The placements in the order the servers were started.
    pub fn placements(&self) -> Vec<&str> {
        self.members.iter().map(|m| m.placement.as_str()).collect()
    }

    fn member(&mut self, placement: &str) -> Result<&mut Member<'e>, RunnerError> {
        self.members
            .iter_mut()
            .find(|m| m.placement == placement)
            .ok_or_else(|| RunnerError::Setup(format!("placement {placement} has no server in this session")))
    }

    /// Reads every table and index of the placement's database into its server
    /// ([`prewarm`](crate::prewarm)): shared_buffers and the page cache inside the server's
    /// memory limit. The per-relation record goes to `raw` (`<blocks>\t<relation>` lines).
    pub async fn prewarm(&mut self, placement: &str, raw: &Path) -> Result<Prewarm, RunnerError> {
        let m = self.member(placement)?;
        let srv = m.server.as_ref().ok_or_else(|| RunnerError::Server("the server is not running".into()))?;
        let client = srv.connect(DATABASE).await?;
        let env = &m.env;
        let read = crate::prewarm::prewarm(&client, &|| env.cancelled()).await?;
        if let Some(dir) = raw.parent() {
            std::fs::create_dir_all(dir).io_context(|| format!("mkdir {}", dir.display()))?;
        }
        std::fs::write(raw, read.raw()).io_context(|| format!("write {}", raw.display()))?;
        let cgroup = srv.cgroup.as_ref();
        Ok(Prewarm {
            page_cache_bytes: cgroup.and_then(|c| c.memory().page_cache),
            limit_bytes: cgroup.and_then(|c| c.limit_bytes),
            read,
        })
    }

    /// Brings the placement's database to a clean state ([`settle`](crate::settle)): `VACUUM
    /// (ANALYZE)` of every table, then `CHECKPOINT`, on its server (a backend in its cgroup). The
    /// per-table record goes to `raw` (`<dead>\t<modified>\t<seconds>\t<table>` lines).
    pub async fn settle_data(&mut self, placement: &str, raw: &Path) -> Result<Settle, RunnerError> {
        let m = self.member(placement)?;
        let srv = m.server.as_ref().ok_or_else(|| RunnerError::Server("the server is not running".into()))?;
        let client = srv.connect(DATABASE).await?;
        let env = &m.env;
        let done = crate::settle::settle(&client, &|| env.cancelled()).await?;
        if let Some(dir) = raw.parent() {
            std::fs::create_dir_all(dir).io_context(|| format!("mkdir {}", dir.display()))?;
        }
        std::fs::write(raw, done.raw()).io_context(|| format!("write {}", raw.display()))?;
        Ok(Settle { done })
    }

    /// Discarded load on one server (`inp.workload.ramp_up` long), its output kept below the
    /// session's directory (`warmup-<name>.*`); returns its throughput when it reported one.
    pub async fn warm_up(
        &mut self,
        inp: &RunInputs<'_>,
        name: &str,
        obs: &mut dyn Observer,
    ) -> Result<Option<f64>, RunnerError> {
        let dir = self.dir.join(format!("warmup-{name}"));
        std::fs::create_dir_all(&dir).io_context(|| format!("mkdir {}", dir.display()))?;
        let m = self.member(&inp.placement.name)?;
        let ctx = RunCtx { env: &m.env, inp, run_dir: &dir };
        let srv = m.server.as_mut().ok_or_else(|| RunnerError::Server("the server is not running".into()))?;
        match &inp.workload.kind {
            WorkloadKind::Pgbench(w) => pgbench_run::ramp_up(&ctx, srv, w, obs).await,
            WorkloadKind::Tpcc(w) => tpcc_run::ramp_up(&ctx, srv, w, obs).await.map(|()| None),
        }
    }

    /// One measured slice on the placement's server (`inp.workload.duration` long, no ramp-up):
    /// a run record of its own, stored like any run's. `expected_tps` sizes the transaction log.
    pub async fn slice(
        &mut self,
        inp: &RunInputs<'_>,
        expected_tps: Option<f64>,
        obs: &mut dyn Observer,
    ) -> Result<RunRecord, RunnerError> {
        let run_dir = inp.results.run_dir(&inp.planned.run_id);
        let m = self.member(&inp.placement.name)?;
        m.log_start = std::fs::read_to_string(&m.log).map(|t| t.len()).unwrap_or(0);
        m.oom_before = m.server.as_ref().and_then(|s| s.cgroup.as_ref()).and_then(|c| c.oom_kills()).unwrap_or(0);
        let env = m.env.clone();
        let ctx = RunCtx { env: &env, inp, run_dir: &run_dir };
        let mut sys = SliceRun { ctx, member: m };
        let record = run_slice(&mut sys, inp, expected_tps, obs).await;
        // The server log of the slice, next to its figures.
        let log = sys.server_log();
        let _ = std::fs::write(run_dir.join("postgres.log"), log);
        record
    }

    /// Whether the placement's postmaster still runs.
    pub fn is_running(&mut self, placement: &str) -> bool {
        self.member(placement).ok().and_then(|m| m.server.as_mut()).is_some_and(|s| s.is_running())
    }

    /// How the placement's server failed, as sentences: how its postmaster ended (once it
    /// has: a signal such as 9 (SIGKILL), or an exit code), the processes its log reports killed,
    /// the OOM kills its cgroup counted and the kernel's words about them, and the server log's
    /// last lines. Waits up to 2 s for a postmaster that is going down to be seen gone.
    pub async fn failure(&mut self, placement: &str) -> Vec<String> {
        for _ in 0..20 {
            if !self.is_running(placement) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let Ok(m) = self.member(placement) else { return Vec::new() };
        let Some(srv) = m.server.as_mut() else { return vec!["its server is not running".into()] };
        let mut out = srv.death_report();
        if let Some(c) = srv.cgroup.as_ref()
            && let Some(n) = c.oom_kills().filter(|&n| n > 0)
        {
            let limit = c.limit_bytes.map(|b| format!(" (memory limit {} MiB)", b / 1048576)).unwrap_or_default();
            out.push(format!("an OOM kill: the kernel's OOM killer killed {n} process(es) in its cgroup{limit}"));
        }
        let tail = server::log_tail(&m.log, 3);
        if !tail.is_empty() {
            out.push(format!("server log's last lines: {tail}"));
        }
        out
    }

    /// Starts the placement's server again on its own data (crash recovery), in a new cgroup of
    /// the same name, after its old one has stopped and its cgroup is removed; then CHECKPOINTs
    /// it. `spec` is the session's (it names the placement).
    pub async fn restart(&mut self, spec: &SessionSpec<'_>, placement: &str) -> Result<(), RunnerError> {
        let target = *spec
            .placements
            .iter()
            .find(|p| p.name == placement)
            .ok_or_else(|| RunnerError::Setup(format!("placement {placement} is not in session {}", self.id)))?;
        let m = self.member(placement)?;
        retire(m).await?;
        let (server, log) = start_member(&m.env, spec, target, m.lives).await?;
        m.lives += 1;
        let client = server.connect(DATABASE).await?;
        client.batch_execute("CHECKPOINT").await.map_err(RunnerError::query("checkpoint"))?;
        if let Some(c) = server.cgroup.as_ref() {
            c.reset_peak();
        }
        m.server = Some(server);
        m.log = log;
        Ok(())
    }

    /// Stops the placement's server (when it still runs) and removes its cgroup: the placement
    /// takes no further part in the session.
    pub async fn drop_placement(&mut self, placement: &str) -> Result<(), RunnerError> {
        let m = self.member(placement)?;
        let out = retire(m).await;
        self.members.retain(|m| m.placement != placement);
        out
    }

    /// Stops every server (fast shutdown) and removes its cgroup.
    pub async fn stop(mut self) -> Result<(), RunnerError> {
        let mut first_error = None;
        for m in self.members.iter_mut() {
            let Some(mut srv) = m.server.take() else { continue };
            let cgroup = srv.cgroup.take();
            let running = srv.is_running();
            if let Err(e) =
                srv.stop_within(m.env.server.journal, Duration::from_secs(if running { 60 } else { 10 })).await
            {
                first_error.get_or_insert(e);
            }
            if let Some(c) = cgroup {
                for _ in 0..50 {
                    if c.pids().is_empty() {
                        break;
                    }
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                if let Err(e) = c.remove(m.env.server.journal) {
                    first_error.get_or_insert(e);
                }
            }
        }
        first_error.map_or(Ok(()), Err)
    }
}

/// A member's server stopped (fast shutdown when it still runs) and its cgroup removed once
/// the processes left in it (backends of a killed postmaster) are gone; those still there after
/// 5 s are killed.
async fn retire(m: &mut Member<'_>) -> Result<(), RunnerError> {
    let Some(mut srv) = m.server.take() else { return Ok(()) };
    let cgroup = srv.cgroup.take();
    let running = srv.is_running();
    srv.stop_within(m.env.server.journal, Duration::from_secs(if running { 30 } else { 5 })).await?;
    if let Some(c) = cgroup {
        for i in 0..100 {
            let pids = c.pids();
            if pids.is_empty() {
                break;
            }
            if i == 50 {
                for pid in pids {
                    let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGKILL);
                }
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        c.remove(m.env.server.journal)?;
    }
    Ok(())
}

/// One placement's server: configuration for its port, its cgroup, started as the database user.
/// `life` counts the placement's earlier lives in this session (the handicap's draw).
async fn start_member(
    env: &RunnerEnv<'_>,
    spec: &SessionSpec<'_>,
    p: &PlacementTarget,
    life: u32,
) -> Result<(Server, PathBuf), RunnerError> {
    let settings = server_settings(spec.profile, spec.memory, p);
    server::write_config(
        &p.data_dir,
        env.server.port,
        &env.server.socket_dir,
        &settings,
        env.server.user.uid,
        env.server.user.gid,
    )?;
    if let Some(client) = &env.client {
        server::write_client_access(&p.data_dir, client, env.server.user.uid, env.server.user.gid)?;
    }
    let quota = env.handicap.map(|h| h.quota(&spec.id, &p.name, life));
    if let Some(q) = quota {
        record_quota(&spec.dir, &p.name, life, q)?;
    }
    let cgroup = match &env.cgroups {
        Some(h) => Some(ServerCgroup::create(
            env.server.journal,
            h,
            &env.run_token,
            &format!("{}-{}", spec.id, p.name),
            crate::cgroup::Limits { memory_bytes: spec.memory.bytes, throttles: &env.throttles, cpu_quota: quota },
        )?),
        None if quota.is_some() => {
            return Err(RunnerError::Setup(
                "a CPU quota (handicap_cpus) needs cgroups, and this machine has none".into(),
            ));
        }
        None if !env.throttles.is_empty() => {
            return Err(RunnerError::Setup("an I/O throttle needs cgroups, and this machine has none".into()));
        }
        None if spec.memory.bytes.is_some() => {
            return Err(RunnerError::Setup(
                "a memory limit needs a cgroup memory controller, and this machine has none".into(),
            ));
        }
        None => None,
    };
    let log = spec.dir.join(format!("{}-postgres.log", p.name));
    let srv = Server::start_for_client(&env.server, &p.data_dir, cgroup, &log, env.client.as_ref()).await?;
    Ok((srv, log))
}

/// The file in a session's directory that lists each server life's CPU quota (`handicap_cpus`):
/// `placement<TAB>life<TAB>cpus` per line, written before the life starts.
pub const HANDICAP_FILE: &str = "handicap.tsv";

fn record_quota(dir: &Path, placement: &str, life: u32, cpus: f64) -> Result<(), RunnerError> {
    use std::io::Write;
    let p = dir.join(HANDICAP_FILE);
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&p)
        .io_context(|| format!("open {}", p.display()))?;
    writeln!(f, "{placement}\t{life}\t{cpus:.4}").io_context(|| format!("write {}", p.display()))
}

/// A slice's steps on a server that is already up: no start, CHECKPOINT, cache drop or stop;
/// the cgroup's OOM counter and the server log as they changed during the slice.
struct SliceRun<'c, 'm, 'e> {
    ctx: RunCtx<'c>,
    member: &'m mut Member<'e>,
}

impl SliceRun<'_, '_, '_> {
    fn server(&mut self) -> Result<&mut Server, RunnerError> {
        self.member.server.as_mut().ok_or_else(|| RunnerError::Server("the server is not running".into()))
    }
}

impl RunSystem for SliceRun<'_, '_, '_> {
    async fn start_server(&mut self) -> Result<(), RunnerError> {
        Ok(())
    }

    async fn read_settings(&mut self) -> Result<BTreeMap<String, String>, RunnerError> {
        let client = self.server()?.connect(DATABASE).await?;
        server::non_default_settings(&client).await
    }

    async fn checkpoint(&mut self) -> Result<(), RunnerError> {
        Ok(())
    }

    fn sync(&mut self) {}

    fn drop_caches(&mut self) -> Result<(), RunnerError> {
        Ok(())
    }

    fn reset_peak(&mut self) {}

    async fn ramp_up(&mut self, _obs: &mut dyn Observer) -> Result<Option<f64>, RunnerError> {
        Ok(None)
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
        let before = self.member.oom_before;
        let c = self.member.server.as_ref()?.cgroup.as_ref()?;
        Some(CgroupState {
            limit_bytes: c.limit_bytes,
            memory: c.memory(),
            oom_kills: c.oom_kills().map(|n| n.saturating_sub(before)),
            kernel_path: c.kernel_path(),
        })
    }

    fn postmaster(&mut self) -> Option<Postmaster> {
        let srv = self.member.server.as_mut()?;
        let running = srv.is_running();
        Some(Postmaster { pid: srv.process.pid, running, exit: srv.exit_status() })
    }

    fn server_log(&mut self) -> String {
        let text = std::fs::read_to_string(&self.member.log).unwrap_or_default();
        text.get(self.member.log_start.min(text.len())..).unwrap_or("").to_string()
    }

    fn dmesg(&mut self) -> Result<Output, CommandError> {
        crate::diagnose::dmesg()
    }

    async fn stop_server(&mut self, _grace: Duration) -> Result<(), RunnerError> {
        Ok(())
    }

    async fn remove_cgroup(&mut self) -> Result<(), RunnerError> {
        Ok(())
    }
}

/// The session's directory below the results directory.
pub fn session_dir(results_root: &Path, id: &str) -> PathBuf {
    results_root.join("sessions").join(id)
}
