//! Load once, place many: each data set is built once into a stopped "golden" cluster, then
//! copied onto every placement (PGDATA to the data device, pg_wal to the WAL device), so every
//! placement starts from the same physical data.

use std::collections::BTreeMap;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::Serialize;
use tokio::io::{AsyncBufReadExt, BufReader};

use crate::env::RunnerEnv;
use crate::error::IoContext;
use crate::pgbench;
use crate::server::{self, Server};
use crate::{DATABASE, RunnerError};

/// What a data set is built from; equal keys share one golden copy.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub enum DatasetSpec {
    /// `pgbench -i -s SCALE [init args]`, with tables and indexes in pgtier's tablespaces
    /// when `tablespaces` names those roles.
    Pgbench { scale: u32, init_args: Vec<String>, tablespaces: Vec<String> },
    /// The nine TPC-C tables with `warehouses` warehouses (tpcc crate loader, `workers` parallel
    /// connections; the data does not depend on them).
    /// `hammerdb_schema`: HammerDB 4.12's schema, population and functions (the faithful
    /// mode's database, a data set of its own), else pgtier's (the spec and hammerdb modes).
    Tpcc { warehouses: u32, workers: u32, hammerdb_schema: bool },
}

impl DatasetSpec {
    /// A short name usable as a directory name.
    pub fn key(&self) -> String {
        match self {
            DatasetSpec::Pgbench { scale, init_args, tablespaces } => {
                let mut k = format!("pgbench-s{scale}");
                for a in init_args {
                    k.push('-');
                    k.extend(a.chars().filter(|c| c.is_ascii_alphanumeric()));
                }
                for t in tablespaces {
                    k.push_str("-ts");
                    k.push_str(t);
                }
                k
            }
            DatasetSpec::Tpcc { warehouses, hammerdb_schema: false, .. } => format!("tpcc-w{warehouses}"),
            DatasetSpec::Tpcc { warehouses, hammerdb_schema: true, .. } => format!("tpcc-hammerdb-w{warehouses}"),
        }
    }

    /// Rough size of the tables and indexes: pgbench needs about 16 MiB per scale unit with its
    /// indexes, TPC-C about 110 MiB per warehouse.
    pub fn data_bytes(&self) -> u64 {
        const MIB: u64 = 1 << 20;
        match self {
            DatasetSpec::Pgbench { scale, .. } => u64::from(*scale) * 16 * MIB,
            DatasetSpec::Tpcc { warehouses, .. } => u64::from(*warehouses) * 110 * MIB,
        }
    }

    /// A generous estimate of the bytes the built cluster takes (PGDATA and WAL), used to
    /// refuse a build that would fill a filesystem: the data, the WAL of the load and the
    /// template databases.
    pub fn estimated_bytes(&self) -> u64 {
        let data = self.data_bytes();
        data + data / 2 + 256 * (1 << 20)
    }
}

/// Bytes available to an unprivileged writer on the filesystem holding `path` (or its
/// nearest existing ancestor).
pub fn available_bytes(path: &Path) -> Option<u64> {
    let mut p = path;
    loop {
        if p.exists() {
            let st = nix::sys::statvfs::statvfs(p).ok()?;
            return Some(st.blocks_available() as u64 * st.fragment_size() as u64);
        }
        p = p.parent()?;
    }
}

/// Refuses to write `needed` bytes below `path` when its filesystem has less free space
/// (with a 5% margin), naming what would have filled it.
pub fn ensure_space(path: &Path, needed: u64, what: &str) -> Result<(), RunnerError> {
    let Some(avail) = available_bytes(path) else { return Ok(()) };
    if avail < needed + needed / 20 {
        return Err(RunnerError::Setup(format!(
            "not enough space for {what} at {}: needs about {:.0} MiB, the filesystem has {:.0} MiB free \
             (free space there, pick a smaller scale, or set PGTIER_STATE_DIR to a larger filesystem)",
            path.display(),
            needed as f64 / 1048576.0,
            avail as f64 / 1048576.0
        )));
    }
    Ok(())
}

/// A built, stopped cluster to copy from.
#[derive(Clone, Debug, Serialize)]
pub struct Golden {
    pub spec: DatasetSpec,
    pub data_dir: PathBuf,
    pub wal_dir: PathBuf,
    pub command: String,
    pub database_size_bytes: u64,
    pub pgdata_size_bytes: u64,
    pub build_seconds: f64,
}

/// Creates `dir` (and missing parents) owned by the database user, mode 0700.
pub fn make_owned_dir(env: &RunnerEnv, dir: &Path) -> Result<(), RunnerError> {
    std::fs::create_dir_all(dir).io_context(|| format!("mkdir {}", dir.display()))?;
    std::os::unix::fs::chown(dir, Some(env.server.user.uid), Some(env.server.user.gid))
        .io_context(|| format!("chown {}", dir.display()))?;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
        .io_context(|| format!("chmod {}", dir.display()))
}

/// Builds the golden copy of `spec` below `dir`.
pub async fn build_golden(
    env: &RunnerEnv<'_>,
    spec: &DatasetSpec,
    dir: &Path,
    settings: &BTreeMap<String, String>,
    on_line: &mut (dyn FnMut(&str) + Send),
) -> Result<Golden, RunnerError> {
    let started = Instant::now();
    let data_dir = dir.join("pgdata");
    let wal_dir = dir.join("pg_wal");
    ensure_space(dir, spec.estimated_bytes(), &format!("data set {}", spec.key()))?;
    make_owned_dir(env, dir)?;
    // Named as the golden copy is (`<key>-pg<major>` when several majors build it), so that one
    // build's logs do not overwrite another's.
    let name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .filter(|n| n.starts_with(&spec.key()))
        .unwrap_or_else(|| spec.key());
    let logs = env.logs_dir.join(format!("dataset-{name}"));
    std::fs::create_dir_all(&logs).io_context(|| format!("mkdir {}", logs.display()))?;
    server::initdb(&env.server.install, &env.server.user, &data_dir, &wal_dir, &logs.join("initdb.log")).await?;
    // The load's WAL is not kept: with wal_recycle off, the checkpoints after the load remove the
    // segments instead of keeping them as future ones, so the golden pg_wal (copied onto every
    // placement's WAL device) holds a segment or two, not up to max_wal_size.
    let mut settings = settings.clone();
    if env.server.install.major >= 12 {
        settings.insert("wal_recycle".into(), "off".into());
    }
    server::write_config(
        &data_dir,
        env.server.port,
        &env.server.socket_dir,
        &settings,
        env.server.user.uid,
        env.server.user.gid,
    )?;
    let mut srv = Server::start(&env.server, &data_dir, None, &logs.join("postgres.log")).await?;
    let mut result = load(env, spec, &srv, &logs, on_line).await;
    if result.is_ok() {
        // pg_prewarm, for the slices design's prewarm ([measurement] prewarm); a build without
        // contrib's extension still gets its data set (the prewarm then says what is missing).
        if let Ok(db) = srv.connect(DATABASE).await {
            let _ = crate::prewarm::create_extension(&db).await;
        }
    }
    if result.is_ok() {
        result = match shed_wal(&srv).await {
            Ok(()) => result,
            Err(e) => Err(e),
        };
    }
    if let Err(e) = &result
        && !matches!(e, RunnerError::Cancelled)
    {
        // Say what happened to the server (killed, and by what), not only that a connection broke.
        let deaths = srv.death_report();
        if !deaths.is_empty() {
            result = Err(RunnerError::Server(format!(
                "{} while the data set was being built (server log: {}); the build then failed: {e}",
                deaths.join("; "),
                logs.join("postgres.log").display()
            )));
        }
    }
    let stop = srv.stop(env.server.journal).await;
    let (command, database_size_bytes) = result?;
    stop?;
    sync_all();
    Ok(Golden {
        spec: spec.clone(),
        pgdata_size_bytes: dir_size(&data_dir) + dir_size(&wal_dir),
        data_dir,
        wal_dir,
        command,
        database_size_bytes,
        build_seconds: started.elapsed().as_secs_f64(),
    })
}

async fn load(
    env: &RunnerEnv<'_>,
    spec: &DatasetSpec,
    srv: &Server,
    logs: &Path,
    on_line: &mut (dyn FnMut(&str) + Send),
) -> Result<(String, u64), RunnerError> {
    let client = srv.connect("postgres").await?;
    client
        .batch_execute(&format!("CREATE DATABASE {DATABASE}"))
        .await
        .map_err(RunnerError::query("create database"))?;
    let (scale, init_args, tablespaces) = match spec {
        DatasetSpec::Pgbench { scale, init_args, tablespaces } => (scale, init_args, tablespaces),
        DatasetSpec::Tpcc { warehouses, workers, hammerdb_schema } => {
            return load_tpcc(env, (*warehouses, *workers), *hammerdb_schema, srv, logs, on_line).await;
        }
    };
    // Tablespaces first live in the golden directory; relocation moves them to their devices.
    let golden_dir = srv.data_dir.parent().expect("golden PGDATA has a parent").to_path_buf();
    let mut args = init_args.clone();
    for role in tablespaces {
        let dir = golden_dir.join(format!("ts_{role}"));
        make_owned_dir(env, &dir)?;
        client
            .batch_execute(&format!("CREATE TABLESPACE {} LOCATION '{}'", tablespace_name(role), dir.display()))
            .await
            .map_err(RunnerError::query(format!("create tablespace for {role}")))?;
        match role.as_str() {
            "tables" => args.push(format!("--tablespace={}", tablespace_name(role))),
            "indexes" => args.push(format!("--index-tablespace={}", tablespace_name(role))),
            _ => {}
        }
    }
    let target = pgbench::Target {
        socket_dir: &env.server.socket_dir,
        port: env.server.port,
        user: server::DB_ROLE,
        database: DATABASE,
    };
    let cmd = pgbench::init_command(&env.server.install.client_dir, &target, *scale, &args);
    init(env, &cmd, &logs.join("pgbench-init.log"), on_line).await?;
    let db = srv.connect(DATABASE).await?;
    db.batch_execute("CHECKPOINT").await.map_err(RunnerError::query("checkpoint"))?;
    let row = db
        .query_one("SELECT pg_database_size(current_database())", &[])
        .await
        .map_err(RunnerError::query("read the database size"))?;
    let size: i64 = row.get(0);
    Ok((cmd.to_string(), size as u64))
}

/// Two checkpoints after the load: the second's redo point is past every segment the load wrote,
/// so (with wal_recycle off) they are removed.
async fn shed_wal(srv: &Server) -> Result<(), RunnerError> {
    let db = srv.connect(DATABASE).await?;
    for _ in 0..2 {
        db.batch_execute("CHECKPOINT").await.map_err(RunnerError::query("checkpoint"))?;
    }
    Ok(())
}

/// Runs `pgbench -i`, its progress (stderr) logged to `log_path` and shown through `on_line`;
/// killed (and `Cancelled` returned) on cancellation.
async fn init(
    env: &RunnerEnv<'_>,
    cmd: &journal::CommandLine,
    log_path: &Path,
    on_line: &mut (dyn FnMut(&str) + Send),
) -> Result<(), RunnerError> {
    let mut log = std::fs::File::create(log_path).io_context(|| format!("create {}", log_path.display()))?;
    let (mut child, record) = env.spawn_client(cmd, std::process::Stdio::null(), "pgbench -i")?;
    // pgbench -i reports progress on stderr, with carriage returns on a terminal.
    let stderr = child.stderr.take().expect("piped");
    let mut lines = BufReader::new(stderr).split(b'\n');
    let mut last = String::new();
    loop {
        tokio::select! {
            line = lines.next_segment() => {
                match line {
                    Ok(Some(bytes)) => {
                        let text = String::from_utf8_lossy(&bytes).replace('\r', "\n");
                        use std::io::Write;
                        let _ = log.write_all(text.as_bytes());
                        let _ = log.write_all(b"\n");
                        if let Some(l) = text.lines().rev().find(|l| !l.trim().is_empty()) {
                            last = l.to_string();
                            on_line(l);
                        }
                    }
                    _ => break,
                }
            }
            _ = tokio::time::sleep(std::time::Duration::from_millis(200)) => {
                if env.cancelled() {
                    let _ = child.start_kill();
                    let _ = child.wait().await;
                    if let Some(r) = record { let _ = env.server.journal.release(r); }
                    return Err(RunnerError::Cancelled);
                }
            }
        }
    }
    let status = child.wait().await.io_context(|| format!("wait for `{cmd}`"))?;
    if let Some(r) = record {
        let _ = env.server.journal.release(r);
    }
    if !status.success() {
        return Err(RunnerError::Workload(format!("`{cmd}` failed ({status}): {last}")));
    }
    Ok(())
}

/// Loads a TPC-C data set with the tpcc crate's parallel binary-COPY loader.
async fn load_tpcc(
    env: &RunnerEnv<'_>,
    (warehouses, workers): (u32, u32),
    hammerdb_schema: bool,
    srv: &Server,
    logs: &Path,
    on_line: &mut (dyn FnMut(&str) + Send),
) -> Result<(String, u64), RunnerError> {
    let conn = tpcc::ConnectSpec {
        socket_dir: env.server.socket_dir.clone(),
        port: env.server.port,
        user: server::DB_ROLE.into(),
        database: DATABASE.into(),
        tcp: None,
    };
    let workers = workers.clamp(1, warehouses.max(1));
    let mut cfg = tpcc::TpccConfig::new(warehouses);
    if hammerdb_schema {
        cfg.mode = tpcc::Mode::HammerDbFaithful;
    }
    let mut report_line = |p: tpcc::LoadProgress| {
        on_line(&format!(
            "tpcc load: {:?} {}/{} warehouses, {} rows, {:.0} s ({})",
            p.phase, p.warehouses_done, p.warehouses_total, p.rows, p.elapsed_seconds, p.detail
        ))
    };
    let report = tpcc::create_schema_and_load(&conn, &cfg, workers, &env.cancel, &mut report_line).await.map_err(
        |e| match e {
            tpcc::TpccError::Cancelled => RunnerError::Cancelled,
            other => RunnerError::Workload(format!("TPC-C load: {other}")),
        },
    )?;
    let json = serde_json::to_string_pretty(&report).unwrap_or_default();
    let report_file = logs.join("tpcc-load.json");
    std::fs::write(&report_file, json).io_context(|| format!("write {}", report_file.display()))?;
    let db = srv.connect(DATABASE).await?;
    db.batch_execute("CHECKPOINT").await.map_err(RunnerError::query("checkpoint"))?;
    Ok((
        format!(
            "tpcc loader: {warehouses} warehouses, {workers} workers, binary COPY, then keys, indexes and VACUUM ANALYZE ({:.1} warehouses/min)",
            report.warehouses_per_minute
        ),
        report.database_bytes.max(0) as u64,
    ))
}

/// Copies the golden cluster to a placement: PGDATA to `data_dir`, the WAL to `wal_dir`, and
/// `pg_wal` re-pointed at `wal_dir` (a plain `cp -a` would keep pointing at the golden WAL);
/// each tablespace to the directory its role has on this placement (`tablespaces`), or next to
/// PGDATA when the placement does not place that role. Returns the seconds it took, including
/// the sync.
pub fn relocate(
    env: &RunnerEnv,
    golden: &Golden,
    data_dir: &Path,
    wal_dir: &Path,
    tablespaces: &BTreeMap<String, PathBuf>,
) -> Result<f64, RunnerError> {
    let started = Instant::now();
    for d in [data_dir, wal_dir].into_iter().chain(tablespaces.values().map(PathBuf::as_path)) {
        if !d.is_absolute() {
            return Err(RunnerError::Setup(format!("refusing to place data at a relative path ({})", d.display())));
        }
    }
    let golden_root = golden.data_dir.parent().expect("golden PGDATA has a parent");
    let ts_dir = |role: &str| {
        tablespaces
            .get(role)
            .cloned()
            .unwrap_or_else(|| data_dir.parent().unwrap_or(data_dir).join(format!("ts_{role}")))
    };
    let roles: Vec<String> = match &golden.spec {
        DatasetSpec::Pgbench { tablespaces, .. } => tablespaces.clone(),
        DatasetSpec::Tpcc { .. } => vec![],
    };
    let mut targets = vec![data_dir.to_path_buf(), wal_dir.to_path_buf()];
    targets.extend(roles.iter().map(|r| ts_dir(r)));
    for d in &targets {
        if d.exists() {
            std::fs::remove_dir_all(d).io_context(|| format!("rm -r {}", d.display()))?;
        }
        if let Some(parent) = d.parent() {
            make_owned_dir(env, parent)?;
        }
    }
    check_relocation_space(
        golden,
        data_dir,
        wal_dir,
        &roles.iter().map(|r| (r.clone(), ts_dir(r))).collect::<Vec<_>>(),
    )?;
    let cancel = || env.cancelled();
    copy_tree(&golden.data_dir, data_dir, &cancel, &|rel: &Path| {
        rel == Path::new("pg_wal") || rel == Path::new("postmaster.pid")
    })?;
    copy_tree(&golden.wal_dir, wal_dir, &cancel, &|_| false)?;
    relink(env, &data_dir.join("pg_wal"), wal_dir)?;
    // pg_tblspc/<oid> links point into the golden directory: copy each and point it at its copy.
    let tblspc = data_dir.join("pg_tblspc");
    for e in std::fs::read_dir(&tblspc).io_context(|| format!("read {}", tblspc.display()))?.flatten() {
        let link = e.path();
        let Ok(target) = std::fs::read_link(&link) else { continue };
        let Some(role) = roles.iter().find(|r| target == golden_root.join(format!("ts_{r}"))) else {
            return Err(RunnerError::Setup(format!(
                "tablespace link {} points to {} (not pgtier's)",
                link.display(),
                target.display()
            )));
        };
        let dest = ts_dir(role);
        copy_tree(&target, &dest, &cancel, &|_| false)?;
        relink(env, &link, &dest)?;
    }
    sync_all();
    Ok(started.elapsed().as_secs_f64())
}

/// Sums what goes onto each filesystem (PGDATA, WAL, tablespaces; several may share one) and
/// refuses the copy when one of them lacks the room.
fn check_relocation_space(
    golden: &Golden,
    data_dir: &Path,
    wal_dir: &Path,
    tablespace_dirs: &[(String, PathBuf)],
) -> Result<(), RunnerError> {
    use std::os::unix::fs::MetadataExt as _;
    let golden_root = golden.data_dir.parent().expect("golden PGDATA has a parent");
    let mut parts =
        vec![(data_dir.to_path_buf(), dir_size(&golden.data_dir)), (wal_dir.to_path_buf(), dir_size(&golden.wal_dir))];
    for (role, d) in tablespace_dirs {
        parts.push((d.clone(), dir_size(&golden_root.join(format!("ts_{role}")))));
    }
    let mut by_fs: BTreeMap<u64, (PathBuf, u64)> = BTreeMap::new();
    for (dir, bytes) in parts {
        let parent = dir.parent().unwrap_or(&dir).to_path_buf();
        let dev = std::fs::metadata(&parent).map(|m| m.dev()).unwrap_or(0);
        by_fs.entry(dev).or_insert((parent, 0)).1 += bytes;
    }
    for (dir, bytes) in by_fs.values() {
        ensure_space(dir, *bytes, &format!("a copy of data set {}", golden.spec.key()))?;
    }
    Ok(())
}

fn relink(env: &RunnerEnv, link: &Path, to: &Path) -> Result<(), RunnerError> {
    let _ = std::fs::remove_file(link);
    std::os::unix::fs::symlink(to, link).io_context(|| format!("link {}", link.display()))?;
    std::os::unix::fs::lchown(link, Some(env.server.user.uid), Some(env.server.user.gid))
        .io_context(|| format!("chown {}", link.display()))
}

/// Copies a directory tree with modes and ownership; `skip` gets paths relative to `from`.
/// Stops with `Cancelled` between files once `cancelled` says so.
fn copy_tree(
    from: &Path,
    to: &Path,
    cancelled: &dyn Fn() -> bool,
    skip: &dyn Fn(&Path) -> bool,
) -> Result<(), RunnerError> {
    let err = |p: &Path, e: std::io::Error| RunnerError::io(format!("copy {}", p.display()), e);
    let mut stack = vec![PathBuf::new()];
    while let Some(rel) = stack.pop() {
        if cancelled() {
            return Err(RunnerError::Cancelled);
        }
        let src = from.join(&rel);
        let dst = to.join(&rel);
        let meta = std::fs::symlink_metadata(&src).map_err(|e| err(&src, e))?;
        if meta.is_dir() {
            std::fs::create_dir_all(&dst).map_err(|e| err(&dst, e))?;
            for e in std::fs::read_dir(&src).map_err(|e| err(&src, e))? {
                let e = e.map_err(|e| err(&src, e))?;
                let child = rel.join(e.file_name());
                if !skip(&child) {
                    stack.push(child);
                }
            }
        } else if meta.file_type().is_symlink() {
            let target = std::fs::read_link(&src).map_err(|e| err(&src, e))?;
            std::os::unix::fs::symlink(target, &dst).map_err(|e| err(&dst, e))?;
        } else {
            copy_file_bytes(&src, &dst).map_err(|e| err(&src, e))?;
        }
        if !meta.file_type().is_symlink() {
            std::fs::set_permissions(&dst, std::fs::Permissions::from_mode(meta.mode() & 0o7777))
                .map_err(|e| err(&dst, e))?;
        }
        std::os::unix::fs::lchown(&dst, Some(meta.uid()), Some(meta.gid())).map_err(|e| err(&dst, e))?;
    }
    Ok(())
}

/// Copies the bytes of one file with plain reads and writes. `std::fs::copy` uses
/// copy_file_range, which on a reflink-capable filesystem (XFS, btrfs) may share extents
/// with the source instead of writing them: the placement would then not own its blocks.
fn copy_file_bytes(src: &Path, dst: &Path) -> std::io::Result<()> {
    use std::io::{Read, Write};
    let mut input = std::fs::File::open(src)?;
    let mut output = std::fs::OpenOptions::new().write(true).create_new(true).open(dst)?;
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = input.read(&mut buf)?;
        if n == 0 {
            break;
        }
        output.write_all(&buf[..n])?;
    }
    Ok(())
}

/// Total size of the files below `dir` (symlinks not followed).
pub fn dir_size(dir: &Path) -> u64 {
    let mut total = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            let Ok(m) = e.path().symlink_metadata() else {
                continue;
            };
            if m.is_dir() {
                stack.push(e.path());
            } else if m.is_file() {
                total += m.len();
            }
        }
    }
    total
}

/// Flushes every filesystem, so that the copy is on the device and not in the page cache.
pub fn sync_all() {
    // SAFETY: sync(2) has no preconditions.
    unsafe { libc::sync() };
}

/// The tablespace name pgtier gives a role.
pub fn tablespace_name(role: &str) -> String {
    format!("pgtier_{role}")
}
