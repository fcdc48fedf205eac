//! A private PostgreSQL cluster for the tests, started with pgtier's runner crate as the
//! `postgres` OS user and always stopped (also when a test panics, through the journal).

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

#[path = "../../../../testsupport/skip.rs"]
pub mod skip;
#[allow(unused_imports)] // not every test binary skips
pub use skip::skip;

use journal::Journal;
use runner::server::{Server, ServerLaunch, initdb, write_config};
use runner::{DbUser, PgInstall};
use tpcc::ConnectSpec;

/// True when the test may run; panics with an explanation when it needs root and has not got
/// it, unless PGTIER_SKIP_ROOT_TESTS=1 asks to skip explicitly.
pub fn root_or_skip() -> bool {
    skip::root_or_skip(
        "needs root to run PostgreSQL as the postgres user (PGTIER_SKIP_ROOT_TESTS=1)",
        "this test starts a PostgreSQL server as the OS user postgres and needs root; run it as root or set PGTIER_SKIP_ROOT_TESTS=1 to skip it explicitly",
    )
}

/// A running private cluster. `shutdown` stops it; dropping it without `shutdown` (a panic)
/// stops it through the journal's undo records.
pub struct Cluster {
    server: Option<Server>,
    journal: Journal,
    pub conn: ConnectSpec,
    dir: tempfile::TempDir,
}

fn chown_dir(path: &Path, user: &DbUser, mode: u32) {
    std::fs::create_dir_all(path).unwrap();
    std::os::unix::fs::chown(path, Some(user.uid), Some(user.gid)).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

impl Cluster {
    /// Settings for tests: durability off, so they spend their time on the workload.
    pub const TEST_SETTINGS: &'static [(&'static str, &'static str)] = &[
        ("shared_buffers", "256MB"),
        ("max_connections", "60"),
        ("fsync", "off"),
        ("synchronous_commit", "off"),
        ("full_page_writes", "off"),
        ("max_wal_size", "2GB"),
    ];

    /// initdb, start with `settings`, and create database `tpcc`.
    pub async fn start(name: &str, settings: &[(&str, &str)]) -> Cluster {
        let install = PgInstall::detect(None).expect("PostgreSQL server binaries");
        let user = DbUser::lookup("postgres").expect("OS user postgres");
        let dir = tempfile::Builder::new().prefix(&format!("pgtier-tpcc-{name}-")).tempdir_in("/var/tmp").unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o711)).unwrap();
        let data = dir.path().join("data");
        let wal = dir.path().join("wal");
        let sock = dir.path().join("sock");
        for d in [&data, &wal, &sock] {
            chown_dir(d, &user, 0o700);
        }
        let journal = Journal::begin(&dir.path().join("journal"), name, "tpcc test").unwrap();
        initdb(&install, &user, &data, &wal, &dir.path().join("initdb.log")).await.expect("initdb");
        let settings: BTreeMap<String, String> = settings.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        let port = 5432;
        write_config(&data, port, &sock, &settings, user.uid, user.gid).unwrap();
        let log = dir.path().join("server.log");
        let launch = ServerLaunch { install, user, journal: &journal, socket_dir: sock.clone(), port, cpus: None };
        let server = match Server::start(&launch, &data, None, &log).await {
            Ok(s) => s,
            Err(e) => {
                // The journal may hold a half-started server: undo before failing.
                let _ = journal.teardown(|_, _| {});
                panic!("start PostgreSQL: {e}\nlog: {}", std::fs::read_to_string(&log).unwrap_or_default());
            }
        };
        let conn = ConnectSpec {
            socket_dir: sock,
            port,
            user: runner::server::DB_ROLE.to_string(),
            database: "tpcc".into(),
            tcp: None,
        };
        // From here on the guard stops the server whatever happens.
        let cluster = Cluster { server: Some(server), journal, conn, dir };
        let admin = cluster.connect("postgres").await;
        admin.batch_execute("CREATE DATABASE tpcc").await.unwrap();
        cluster
    }

    /// A connection to `database`.
    pub async fn connect(&self, database: &str) -> tokio_postgres::Client {
        let mut c = self.conn.clone();
        c.database = database.into();
        c.connect("test").await.unwrap()
    }

    /// The server log, for failure messages.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("server.log")).unwrap_or_default()
    }

    /// Stops the server and tears the journal down.
    pub async fn shutdown(mut self) {
        if let Some(s) = self.server.take() {
            s.stop(&self.journal).await.expect("stop PostgreSQL");
        }
        let report = self.journal.teardown(|_, _| {});
        assert!(report.is_clean(), "teardown left: {:?}", report.failed);
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        if self.server.is_some() {
            // A test failed before shutdown: the journal's undo record stops the server.
            let _ = self.journal.teardown(|_, _| {});
        }
    }
}
