//! A PostgreSQL cluster run as the database's OS user (never root), as a direct child of the
//! harness, on a private port and socket directory, optionally inside a memory-limited cgroup.

use std::collections::BTreeMap;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use journal::{Journal, ProcessId, RecordId, Undo};
use tokio::process::Command;

use crate::RunnerError;
use crate::cgroup::ServerCgroup;
use crate::error::IoContext;
use crate::install::{DbUser, PgInstall};
pub use crate::launch::{DB_ROLE, ServerLaunch};

/// Sets up `cmd` to run as `user` in its own process group, joining the cgroups whose
/// `cgroup.procs` files are open as `cgroup_files` (those must stay open until spawn returns).
/// The environment is replaced by a minimal one (PATH, LC_ALL=C): root's environment, which
/// may hold secrets such as an NVMe DH-HMAC-CHAP key, is not handed to the database user.
/// With `cpus`, the process (and all it forks) runs on those CPUs only.
pub fn run_as(cmd: &mut Command, user: &DbUser, cgroup_files: &[std::fs::File], cpus: Option<&[u32]>) {
    crate::env::minimal_env(cmd.as_std_mut());
    if let Some(cpus) = cpus {
        crate::affinity::confine(cmd.as_std_mut(), cpus);
    }
    let fds: Vec<i32> = cgroup_files.iter().map(|f| f.as_raw_fd()).collect();
    let groups: Vec<libc::gid_t> = user.groups.clone();
    let (uid, gid) = (user.uid, user.gid);
    cmd.process_group(0);
    // SAFETY: between fork and exec only async-signal-safe calls are made (write, setgroups,
    // setgid, setuid); everything they use was allocated before the fork.
    unsafe {
        cmd.pre_exec(move || {
            for fd in &fds {
                if libc::write(*fd, b"0\n".as_ptr().cast(), 2) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            if libc::setgroups(groups.len(), groups.as_ptr()) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            if libc::setgid(gid) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            if libc::setuid(uid) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

/// Runs `initdb` as `user`: PGDATA in `data_dir`, WAL in `wal_dir` (`--waldir`).
pub async fn initdb(
    install: &PgInstall,
    user: &DbUser,
    data_dir: &Path,
    wal_dir: &Path,
    log: &Path,
) -> Result<(), RunnerError> {
    let log_file = std::fs::File::create(log).io_context(|| format!("create {}", log.display()))?;
    let mut cmd = Command::new(install.program("initdb"));
    cmd.arg("-D")
        .arg(data_dir)
        .arg("--waldir")
        .arg(wal_dir)
        .args(["-U", DB_ROLE, "-E", "UTF8", "--locale=C", "--auth-local=peer", "--auth-host=reject"])
        .current_dir("/")
        .stdin(Stdio::null())
        .stdout(log_file.try_clone().io_context(|| format!("open {}", log.display()))?)
        .stderr(log_file);
    run_as(&mut cmd, user, &[], None);
    let status = cmd.status().await.io_context(|| "start initdb".into())?;
    if !status.success() {
        return Err(RunnerError::Setup(format!(
            "initdb failed ({status}); its output: {}",
            std::fs::read_to_string(log).unwrap_or_default().trim()
        )));
    }
    Ok(())
}

/// Writes the files that make a cluster private to pgtier: peer authentication on the unix
/// socket only (root and postgres map to the `postgres` role), and `pgtier.conf`, included from
/// postgresql.conf, with the port, the socket directory and the settings profile.
pub fn write_config(
    data_dir: &Path,
    port: u16,
    socket_dir: &Path,
    settings: &BTreeMap<String, String>,
    uid: u32,
    gid: u32,
) -> Result<(), RunnerError> {
    let io = |p: &Path, e: std::io::Error| RunnerError::io(p.display().to_string(), e);
    let conf = data_dir.join("postgresql.conf");
    let text = std::fs::read_to_string(&conf).map_err(|e| io(&conf, e))?;
    if !text.contains("include_if_exists = 'pgtier.conf'") {
        write_owned(
            &conf,
            &format!("{text}\n# Added by pgtier: settings of the current run.\ninclude_if_exists = 'pgtier.conf'\n"),
            uid,
            gid,
        )
        .map_err(|e| io(&conf, e))?;
    }
    let mut body = String::from("# Written by pgtier for the current run; replaced at every server start.\n");
    body.push_str("# The settings profile first; pgtier's own lines last, so that they win.\n");
    for (k, v) in settings {
        body.push_str(&format!("{k} = '{}'\n", v.replace('\'', "''")));
    }
    body.push_str("listen_addresses = ''\n");
    body.push_str(&format!("port = {port}\n"));
    body.push_str(&format!("unix_socket_directories = '{}'\n", socket_dir.display()));
    body.push_str("unix_socket_permissions = 0700\n");
    body.push_str("logging_collector = off\n");
    body.push_str("log_line_prefix = '%m [%p] '\n");
    body.push_str("log_checkpoints = on\n");
    body.push_str("log_timezone = 'UTC'\n");
    // Evidence: WAL write and sync times in pg_stat_wal (a few clock reads per WAL write).
    body.push_str("track_wal_io_timing = on\n");
    let files = [
        (data_dir.join("pgtier.conf"), body),
        (
            data_dir.join("pg_hba.conf"),
            "# pgtier: unix socket only, peer authentication mapped by pg_ident.conf\nlocal all all peer map=pgtier\n"
                .to_string(),
        ),
        (
            data_dir.join("pg_ident.conf"),
            format!("# pgtier: OS user -> database role\npgtier root {DB_ROLE}\npgtier postgres {DB_ROLE}\n"),
        ),
    ];
    for (p, contents) in files {
        write_owned(&p, &contents, uid, gid).map_err(|e| io(&p, e))?;
    }
    Ok(())
}

/// Opens a configured cluster to one client on another host: the server listens on
/// `access.server_address` too (besides its private socket), and pg_hba.conf admits exactly
/// the client's address, to the benchmark database and role, with scram-sha-256. Call after
/// [`write_config`] (whose `listen_addresses = ''` this line, written after it, overrides).
pub fn write_client_access(
    data_dir: &Path,
    access: &crate::env::RemoteClient,
    uid: u32,
    gid: u32,
) -> Result<(), RunnerError> {
    let io = |p: &Path, e: std::io::Error| RunnerError::io(p.display().to_string(), e);
    let conf = data_dir.join("pgtier.conf");
    let mut body = std::fs::read_to_string(&conf).map_err(|e| io(&conf, e))?;
    body.push_str(&format!(
        "# pgtier: the benchmark client runs on host {}; listen on the address facing it only.\nlisten_addresses = '{}'\npassword_encryption = 'scram-sha-256'\n",
        access.transport.host(),
        access.server_address
    ));
    write_owned(&conf, &body, uid, gid).map_err(|e| io(&conf, e))?;
    let hba = data_dir.join("pg_hba.conf");
    let client = match access.client_address {
        std::net::IpAddr::V4(a) => format!("{a}/32"),
        std::net::IpAddr::V6(a) => format!("{a}/128"),
    };
    let text = format!(
        "# pgtier: unix socket with peer authentication mapped by pg_ident.conf, and the client host {} over TCP\nlocal all all peer map=pgtier\nhost {} {DB_ROLE} {client} scram-sha-256\n",
        access.transport.host(),
        crate::DATABASE
    );
    write_owned(&hba, &text, uid, gid).map_err(|e| io(&hba, e))
}

/// Writes a file in a directory the database user owns, as root, without following a symlink
/// planted there (O_NOFOLLOW), and hands it to the user through the open descriptor.
fn write_owned(path: &Path, contents: &str, uid: u32, gid: u32) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)?;
    f.write_all(contents.as_bytes())?;
    std::os::unix::fs::fchown(&f, Some(uid), Some(gid))
}

/// A running server.
pub struct Server {
    child: tokio::process::Child,
    pub process: ProcessId,
    record: RecordId,
    pub data_dir: PathBuf,
    pub socket_dir: PathBuf,
    pub port: u16,
    pub log: PathBuf,
    pub cgroup: Option<ServerCgroup>,
    /// How the postmaster ended, once it has.
    exit: Option<std::process::ExitStatus>,
}

impl Server {
    /// Starts `postgres -D data_dir` as the launch's user (inside `cgroup` when given), its output
    /// in `log`, and waits until it accepts connections.
    pub async fn start(
        launch: &ServerLaunch<'_>,
        data_dir: &Path,
        cgroup: Option<ServerCgroup>,
        log: &Path,
    ) -> Result<Server, RunnerError> {
        Server::start_listening(launch, data_dir, cgroup, log, None).await
    }

    /// [`Server::start`], for a server that, with a client host, also listens on the address
    /// facing it ([`write_client_access`]); then the benchmark role gets the run's password, set over
    /// the private socket as a SCRAM verifier (the password itself reaches no log).
    pub async fn start_for_client(
        launch: &ServerLaunch<'_>,
        data_dir: &Path,
        cgroup: Option<ServerCgroup>,
        log: &Path,
        client: Option<&crate::env::RemoteClient>,
    ) -> Result<Server, RunnerError> {
        let listen = client.map(|c| c.server_address);
        let server = Server::start_listening(launch, data_dir, cgroup, log, listen).await?;
        if let Some(client) = client
            && let Err(e) = server.set_password(&client.password).await
        {
            let _ = server.stop(launch.journal).await;
            return Err(e);
        }
        Ok(server)
    }

    async fn set_password(&self, password: &crate::env::Password) -> Result<(), RunnerError> {
        let c = self.connect("postgres").await?;
        let verifier = postgres_protocol::password::scram_sha_256(password.expose().as_bytes());
        c.batch_execute(&format!(
            "SET log_statement = 'none'; SET log_min_duration_statement = -1; ALTER ROLE {DB_ROLE} PASSWORD '{verifier}'"
        ))
        .await
        .map_err(RunnerError::query(format!("set the run's password of role {DB_ROLE}")))
    }

    async fn start_listening(
        launch: &ServerLaunch<'_>,
        data_dir: &Path,
        cgroup: Option<ServerCgroup>,
        log: &Path,
        listen: Option<std::net::IpAddr>,
    ) -> Result<Server, RunnerError> {
        let ServerLaunch { install, user, journal, socket_dir, port, cpus } = launch;
        let (socket_dir, port) = (socket_dir.as_path(), *port);
        let log_file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
            .io_context(|| format!("open {}", log.display()))?;
        let procs = match &cgroup {
            Some(c) => c.open_procs_files()?,
            None => Vec::new(),
        };
        let mut cmd = Command::new(install.program("postgres"));
        cmd.arg("-D")
            .arg(data_dir)
            .current_dir("/")
            .stdin(Stdio::null())
            .stdout(log_file.try_clone().io_context(|| format!("open {}", log.display()))?)
            .stderr(log_file)
            .kill_on_drop(false);
        run_as(&mut cmd, user, &procs, cpus.as_deref());
        let child = cmd.spawn().io_context(|| "start postgres".into())?;
        drop(procs);
        let pid = child.id().ok_or_else(|| RunnerError::Setup("postgres exited at once".into()))? as i32;
        let process = ProcessId::of(pid).ok_or_else(|| RunnerError::Setup("postgres exited at once".into()))?;
        let record = journal.record(
            Undo::StopProcess {
                label: format!("postgres -D {}", data_dir.display()),
                process,
                signal: "INT".into(),
                grace_ms: 60_000,
            },
            "PostgreSQL server",
        )?;
        let mut server = Server {
            child,
            process,
            record,
            data_dir: data_dir.to_path_buf(),
            socket_dir: socket_dir.to_path_buf(),
            port,
            log: log.to_path_buf(),
            cgroup,
            exit: None,
        };
        if let Err(e) = server.wait_ready(Duration::from_secs(120)).await {
            // Leave nothing behind: stop what started and remove its cgroup.
            let cgroup = server.cgroup.take();
            let _ = server.stop(journal).await;
            if let Some(c) = cgroup {
                for _ in 0..50 {
                    if c.pids().is_empty() {
                        break;
                    }
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                let _ = c.remove(journal);
            }
            return Err(e);
        }
        // The server must be the private one pgtier configured, whatever a profile said.
        if let Err(e) = server.verify_private(data_dir, listen).await {
            let _ = server.stop(journal).await;
            return Err(e);
        }
        // And on the CPUs it was pinned to, as the kernel says.
        if let Some(cpus) = cpus
            && let Err(e) = crate::affinity::verify(pid, cpus, &format!("postgres -D {}", data_dir.display()))
        {
            let _ = server.stop(journal).await;
            return Err(e);
        }
        Ok(server)
    }

    async fn wait_ready(&mut self, limit: Duration) -> Result<(), RunnerError> {
        let start = Instant::now();
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(RunnerError::Server(format!(
                    "postgres exited during start-up ({status}); log tail: {}",
                    log_tail(&self.log, 10)
                )));
            }
            if self.connect("postgres").await.is_ok() {
                return Ok(());
            }
            if start.elapsed() > limit {
                return Err(RunnerError::Server(format!(
                    "postgres did not accept connections within {limit:?}; log tail: {}",
                    log_tail(&self.log, 10)
                )));
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    async fn verify_private(&self, data_dir: &Path, expected: Option<std::net::IpAddr>) -> Result<(), RunnerError> {
        let c = self.connect("postgres").await?;
        let row = c
            .query_one("SELECT current_setting('listen_addresses'), current_setting('data_directory')", &[])
            .await
            .map_err(RunnerError::query("read settings"))?;
        let (listen, dir): (String, String) = (row.get(0), row.get(1));
        let expected = expected.map(|a| a.to_string()).unwrap_or_default();
        if listen != expected || Path::new(&dir) != data_dir {
            return Err(RunnerError::Server(format!(
                "the server is not the private one pgtier configured (listen_addresses {listen:?}, data_directory {dir}); stopped"
            )));
        }
        Ok(())
    }

    /// A connection over the private socket.
    pub async fn connect(&self, database: &str) -> Result<tokio_postgres::Client, RunnerError> {
        let (client, conn) = tokio_postgres::Config::new()
            .host_path(&self.socket_dir)
            .port(self.port)
            .user(DB_ROLE)
            .dbname(database)
            .application_name("pgtier")
            .connect(tokio_postgres::NoTls)
            .await
            .map_err(RunnerError::query("connect"))?;
        tokio::spawn(async move {
            let _ = conn.await;
        });
        Ok(client)
    }

    /// True while the postmaster runs.
    pub fn is_running(&mut self) -> bool {
        match self.child.try_wait() {
            Ok(None) => true,
            Ok(Some(status)) => {
                self.exit = Some(status);
                false
            }
            Err(_) => false,
        }
    }

    /// Why the server is not healthy, as sentences: the postmaster's exit, processes the log
    /// reports killed by a signal, and what the kernel said about them. Empty when nothing of
    /// that happened.
    pub fn death_report(&mut self) -> Vec<String> {
        let exit = if self.is_running() { None } else { self.exit };
        let log = std::fs::read_to_string(&self.log).unwrap_or_default();
        let cgroup = self.cgroup.as_ref().map(|c| c.kernel_path());
        crate::diagnose::death_report(
            self.process.pid,
            exit.as_ref(),
            &log,
            &crate::diagnose::kernel_log(),
            cgroup.as_deref(),
        )
    }

    /// How the postmaster ended, once [`Server::is_running`] has seen it end.
    pub fn exit_status(&self) -> Option<std::process::ExitStatus> {
        self.exit
    }

    /// Fast shutdown (SIGINT), escalating after a minute; the journal record is released.
    pub async fn stop(self, journal: &Journal) -> Result<(), RunnerError> {
        self.stop_within(journal, Duration::from_secs(60)).await
    }

    /// Fast shutdown, escalating to an immediate one after `grace` (a server that crashed and
    /// is recovering need not be waited for: the next start recovers it again).
    pub async fn stop_within(mut self, journal: &Journal, grace: Duration) -> Result<(), RunnerError> {
        if self.is_running() {
            let pid = nix::unistd::Pid::from_raw(self.process.pid);
            let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT);
            match tokio::time::timeout(grace, self.child.wait()).await {
                Ok(_) => {}
                Err(_) => {
                    let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGQUIT);
                    if tokio::time::timeout(Duration::from_secs(10), self.child.wait()).await.is_err() {
                        let _ = self.child.kill().await;
                    }
                }
            }
        }
        let _ = self.child.wait().await;
        // Backends exit just after the postmaster; the cgroup empties a moment later.
        Ok(journal.release(self.record)?)
    }
}

/// The settings that differ from PostgreSQL's defaults while it runs (pg_settings), with units.
pub async fn non_default_settings(
    client: &tokio_postgres::Client,
) -> Result<std::collections::BTreeMap<String, String>, RunnerError> {
    let rows = client
        .query("SELECT name, setting || coalesce(' ' || unit, '') FROM pg_settings WHERE source NOT IN ('default', 'override') ORDER BY name", &[])
        .await
        .map_err(RunnerError::query("read pg_settings"))?;
    Ok(rows.iter().map(|r| (r.get::<_, String>(0), r.get::<_, String>(1))).collect())
}

/// The last `n` lines of a log, joined for an error message.
pub fn log_tail(path: &Path, n: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join(" | ")
}
