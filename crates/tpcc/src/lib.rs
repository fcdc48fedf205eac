//! A TPC-C-like OLTP workload for PostgreSQL, measured the way HammerDB's TPROC-C measures it.
//!
//! * [`create_schema_and_load`] creates the nine TPC-C tables and the five transaction
//!   functions, loads `warehouses` warehouses with parallel workers that each stream binary COPY
//!   over their own connection, then builds keys and indexes and runs VACUUM ANALYZE (in the
//!   faithful mode: HammerDB's schema and build order instead, see [`faithful`]).
//! * [`run`] drives the transaction mix with virtual users (for server-side calls one thread
//!   and connection each over a minimal frontend; for client-side SQL tokio tasks on
//!   tokio-postgres), ramp-up then a measured interval, and computes NOPM and TPM from the
//!   database's own counters as HammerDB does, with client-side latency histograms per
//!   transaction type.
//! * [`check_consistency`] checks the consistency conditions of clause 3.3.2.
//!
//! Three modes: [`Mode::Spec`] follows the TPC-C specification; [`Mode::HammerDb`] takes
//! HammerDB's transaction mix and input draws but runs pgtier's own correct transactions;
//! [`Mode::HammerDbFaithful`] does what HammerDB 4.12 does on the server, its defects included,
//! so NOPM can be compared like for like (see the crate README for the exact lists). Every
//! connection goes over a unix socket, or over TCP with scram-sha-256 ([`TcpTarget`]) when the
//! driver runs on another host than the server.

mod consistency;
pub mod copy;
pub mod cpu;
mod drive;
pub mod faithful;
pub mod generate;
mod load;
mod loading;
pub mod random;
pub mod schema;
pub mod terminal;
pub mod transactions;
mod tx;
mod wire;

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

pub use consistency::check_consistency;
pub use drive::run;
pub use loading::create_schema_and_load;
pub use random::NurandConstants;

/// Which rules the workload follows; serialised as [`Mode::as_str`] spells it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Mode {
    /// The TPC-C specification: NURand item and customer ids, the 45/43/4/4/4 mix, a new-order
    /// with an unused item number (1%) rolls back, C_LAST's run constant differs from the load's.
    #[default]
    #[serde(rename = "spec")]
    Spec,
    /// HammerDB TPROC-C on PostgreSQL: uniform item and customer ids, the 10/10/1/1/1-of-23 mix,
    /// the 1% invalid-item new-order commits, random home warehouse and stock-level district per
    /// virtual user, C_LAST generated with the load's constant. HammerDB's mix and inputs on
    /// pgtier's own (correct) schema, loader and transactions.
    #[serde(rename = "hammerdb")]
    HammerDb,
    /// HammerDB 4.12's own work on the server, defects included: its schema and loader (value
    /// distributions, keys present during the load, plain ANALYZE), its PL/pgSQL functions
    /// (server-side random numbers, an EXCEPTION block per call, by-name lookups that match
    /// nobody) and its client's prepared calls. Needs a database loaded in this mode, and
    /// [`Side::ServerProcedures`]. See the crate README for the list of what it reproduces.
    #[serde(rename = "hammerdb-faithful")]
    HammerDbFaithful,
}

impl Mode {
    /// Every mode, for messages and parsers.
    pub const ALL: [Mode; 3] = [Mode::Spec, Mode::HammerDb, Mode::HammerDbFaithful];

    /// `"spec"`, `"hammerdb"` or `"hammerdb-faithful"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Spec => "spec",
            Mode::HammerDb => "hammerdb",
            Mode::HammerDbFaithful => "hammerdb-faithful",
        }
    }

    /// The mode [`Mode::as_str`] names, if any.
    pub fn parse(s: &str) -> Option<Mode> {
        Mode::ALL.into_iter().find(|m| m.as_str() == s)
    }

    /// True for the two modes that follow HammerDB's transaction mix and client draws.
    pub fn hammerdb_mix(self) -> bool {
        matches!(self, Mode::HammerDb | Mode::HammerDbFaithful)
    }
}

/// Where the transaction logic runs.
/// Serialised as the experiment file spells it (`procedures`, `client-sql`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Side {
    /// One call of a PL/pgSQL function per transaction (HammerDB's default on PostgreSQL).
    #[default]
    #[serde(rename = "procedures")]
    ServerProcedures,
    /// The same statements sent one by one from the client inside BEGIN ... COMMIT.
    #[serde(rename = "client-sql")]
    ClientSql,
}

/// What to load and how to drive it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TpccConfig {
    /// Number of warehouses (the scale factor).
    pub warehouses: u32,
    /// Specification or HammerDB-compatible rules.
    pub mode: Mode,
    /// Server-side functions (default) or client-side SQL.
    pub side: Side,
    /// Keying and think times of clause 5.2.5 (off by default, as in HammerDB).
    pub keying_and_thinking: bool,
    /// HammerDB's "use all warehouses": each virtual user spreads its transactions over a set
    /// of warehouses instead of one home warehouse.
    pub all_warehouses: bool,
}

impl TpccConfig {
    /// `warehouses` warehouses, specification mode, server-side functions, no keying or
    /// thinking, one home warehouse per virtual user.
    pub fn new(warehouses: u32) -> TpccConfig {
        TpccConfig {
            warehouses,
            mode: Mode::Spec,
            side: Side::ServerProcedures,
            keying_and_thinking: false,
            all_warehouses: false,
        }
    }
}

/// How to reach the database: a unix-socket directory (or a TCP address, see [`TcpTarget`]),
/// port, role and database.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ConnectSpec {
    /// Directory holding the server's socket (`.s.PGSQL.<port>`).
    pub socket_dir: PathBuf,
    /// The server's port (names the socket file).
    pub port: u16,
    /// Database role.
    pub user: String,
    /// Database holding the TPC-C tables.
    pub database: String,
    /// Over TCP to this address, authenticated by scram-sha-256, instead of the socket (a
    /// driver on another host than the server); never serialised.
    #[serde(skip)]
    pub tcp: Option<TcpTarget>,
}

/// A server reached over TCP with the role's password (scram-sha-256).
#[derive(Clone, PartialEq, Eq)]
pub struct TcpTarget {
    /// The server's address.
    pub address: std::net::IpAddr,
    /// The role's password; `Debug` prints `<redacted>`.
    pub password: String,
}

impl std::fmt::Debug for TcpTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TcpTarget").field("address", &self.address).field("password", &"<redacted>").finish()
    }
}

impl ConnectSpec {
    /// The tokio-postgres configuration for this target, with `application_name`.
    pub fn pg_config(&self, application_name: &str) -> tokio_postgres::Config {
        let mut c = tokio_postgres::Config::new();
        match &self.tcp {
            None => c.host_path(&self.socket_dir),
            Some(t) => c.host(t.address.to_string()).password(&t.password),
        };
        c.port(self.port).user(&self.user).dbname(&self.database).application_name(application_name);
        c
    }

    /// Opens one connection; its connection task runs on the current tokio runtime.
    pub async fn connect(&self, application_name: &str) -> Result<tokio_postgres::Client, TpccError> {
        let (client, connection) =
            self.pg_config(application_name).connect(tokio_postgres::NoTls).await.map_err(|source| {
                TpccError::Connect { target: self.describe(), message: describe_pg_error(&source), source }
            })?;
        tokio::spawn(async move {
            let _ = connection.await;
        });
        Ok(client)
    }

    /// `database "db" as role "user" on socket dir/.s.PGSQL.port` (or `on address:port over
    /// TCP`), for messages.
    pub fn describe(&self) -> String {
        if let Some(t) = &self.tcp {
            let at = std::net::SocketAddr::new(t.address, self.port);
            return format!("database {:?} as role {:?} on {at} over TCP", self.database, self.user);
        }
        format!(
            "database {:?} as role {:?} on socket {}/.s.PGSQL.{}",
            self.database,
            self.user,
            self.socket_dir.display(),
            self.port
        )
    }
}

/// Why a TPC-C step failed.
#[derive(Debug, thiserror::Error)]
pub enum TpccError {
    /// Could not connect.
    #[error("connect to {target}: {message}")]
    Connect {
        /// The connection target.
        target: String,
        /// The server's or the client library's explanation.
        message: String,
        /// The underlying error.
        #[source]
        source: tokio_postgres::Error,
    },
    /// A statement failed.
    #[error("{context}: {message}")]
    Sql {
        /// What was being done.
        context: String,
        /// The server's or the client library's explanation.
        message: String,
        /// The underlying error.
        #[source]
        source: tokio_postgres::Error,
    },
    /// The database does not hold what the operation expects (e.g. not loaded).
    #[error("database not as expected: {0}")]
    Schema(String),
    /// The arguments make no sense.
    #[error("invalid configuration: {0}")]
    Config(String),
    /// A worker task failed outside SQL (panicked or was aborted).
    #[error("internal: {0}")]
    Internal(String),
    /// A thread could not be started; `what` names it.
    #[error("internal: start {what}: {source}")]
    Thread {
        what: &'static str,
        #[source]
        source: std::io::Error,
    },
    /// A task panicked or was aborted; `what` names it.
    #[error("internal: {what}: {source}")]
    Task {
        what: String,
        #[source]
        source: tokio::task::JoinError,
    },
    /// The cancel flag was raised.
    #[error("cancelled")]
    Cancelled,
}

impl TpccError {
    pub(crate) fn sql(context: impl Into<String>, source: tokio_postgres::Error) -> TpccError {
        TpccError::Sql { context: context.into(), message: describe_pg_error(&source), source }
    }
}

/// The server's message, detail and SQLSTATE when there is one, else the client error's text.
pub(crate) fn describe_pg_error(e: &tokio_postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => {
            let mut s = format!("{}: {} (SQLSTATE {})", db.severity(), db.message(), db.code().code());
            if let Some(d) = db.detail() {
                s.push_str(&format!("; detail: {d}"));
            }
            s
        }
        None => {
            let mut s = e.to_string();
            let mut src = std::error::Error::source(e);
            while let Some(inner) = src {
                s.push_str(&format!(": {inner}"));
                src = inner.source();
            }
            s
        }
    }
}

/// Phase of a load.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LoadPhase {
    /// Creating tables and functions.
    Schema,
    /// Streaming rows with COPY.
    Copy,
    /// Building keys and indexes.
    Index,
    /// VACUUM ANALYZE of each table (pgtier's loader) or one database-wide plain ANALYZE
    /// (faithful loader).
    Analyze,
    /// Finished.
    Done,
}

/// Load progress, reported at each finished warehouse and phase step.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LoadProgress {
    /// Current phase.
    pub phase: LoadPhase,
    /// Warehouses whose rows are all in.
    pub warehouses_done: u32,
    /// Warehouses to load.
    pub warehouses_total: u32,
    /// Rows copied so far.
    pub rows: u64,
    /// Seconds since the load started.
    pub elapsed_seconds: f64,
    /// What just finished (e.g. `warehouse 3`, `index stock_pkey`).
    pub detail: String,
}

/// What a load did and how long it took.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LoadReport {
    /// Warehouses loaded.
    pub warehouses: u32,
    /// Parallel workers (connections) used.
    pub workers: u32,
    /// Wall time of the whole load, schema to analysed.
    pub seconds: f64,
    /// `warehouses / seconds * 60`.
    pub warehouses_per_minute: f64,
    /// Rows copied into all tables.
    pub rows: u64,
    /// Rows per table.
    pub rows_per_table: BTreeMap<String, u64>,
    /// Creating tables and functions.
    pub schema_seconds: f64,
    /// Streaming the rows.
    pub copy_seconds: f64,
    /// Building keys and indexes.
    pub index_seconds: f64,
    /// VACUUM ANALYZE of every table (pgtier's loader) or the plain ANALYZE (faithful loader).
    pub analyze_seconds: f64,
    /// `pg_database_size` after the load.
    pub database_bytes: i64,
    /// The NURand constants the load used (stored in `tpcc_meta`).
    pub nurand: NurandConstants,
}

/// Driver progress, reported about once a second.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DriveProgress {
    /// Seconds since the virtual users started.
    pub elapsed_seconds: f64,
    /// True before the measured interval.
    pub in_ramp_up: bool,
    /// Transactions completed by the client in the last second.
    pub transactions_per_second: f64,
    /// New-orders committed per minute so far in the current phase (client count).
    pub new_orders_per_minute: f64,
}

/// One transaction type's figures over the measured interval (client side).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TxStats {
    /// `new_order`, `payment`, `order_status`, `delivery` or `stock_level`.
    pub name: String,
    /// Completed transactions (committed, plus new-orders rolled back on purpose).
    pub count: u64,
    /// New-orders rolled back on purpose (the specification's unused item number).
    pub rollbacks: u64,
    /// Failed transactions by kind: `serialization_failure`, `deadlock`,
    /// `invalid_transaction_termination` (faithful mode only), `other`.
    pub errors_by_kind: BTreeMap<String, u64>,
    /// Latency percentiles of completed transactions, milliseconds.
    pub p50_ms: f64,
    /// 90th percentile.
    pub p90_ms: f64,
    /// 95th percentile.
    pub p95_ms: f64,
    /// 99th percentile.
    pub p99_ms: f64,
    /// 99.9th percentile.
    pub p999_ms: f64,
    /// Mean latency.
    pub mean_ms: f64,
    /// Longest latency.
    pub max_ms: f64,
}

/// The result of one driver run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DriveReport {
    /// Which rules ran.
    pub mode: Mode,
    /// Server functions or client SQL.
    pub side: Side,
    /// Virtual users.
    pub virtual_users: u32,
    /// Warehouses in the database.
    pub warehouses: u32,
    /// HammerDB's "use all warehouses".
    pub all_warehouses: bool,
    /// Keying and think times on.
    pub keying_and_thinking: bool,
    /// New orders per minute: the growth of `sum(district.d_next_o_id)` over the measured
    /// interval, per minute (HammerDB's NOPM).
    pub nopm: f64,
    /// Transactions per minute: the growth of `sum(xact_commit + xact_rollback)` over all
    /// databases in `pg_stat_database`, per minute (HammerDB's TPM).
    pub tpm: f64,
    /// New orders the database recorded in the measured interval.
    pub new_orders: i64,
    /// Commits `pg_stat_database` counted in the measured interval (all databases).
    pub commits: i64,
    /// Rollbacks `pg_stat_database` counted in the measured interval (all databases).
    pub rollbacks: i64,
    /// Length of the measured interval, between the two counter snapshots.
    pub measured_seconds: f64,
    /// Ramp-up asked for.
    pub ramp_up_seconds: f64,
    /// Per transaction type, over the measured interval.
    pub per_type: Vec<TxStats>,
    /// Failed transactions in the measured interval by kind, all types together.
    pub errors: BTreeMap<String, u64>,
    /// The first distinct error messages seen (whole run), for diagnosis.
    pub error_samples: Vec<String>,
    /// Per second of the whole run (ramp-up included): seconds since start, transactions
    /// completed in that second, their mean latency in ms.
    pub per_second: Vec<(f64, f64, f64)>,
    /// Transactions the client completed in the measured interval.
    pub client_transactions: u64,
    /// User + system CPU seconds of this whole process (getrusage RUSAGE_SELF) over the measured
    /// interval. It includes anything else the calling process does at the same time.
    pub client_cpu_seconds: f64,
    /// CPU seconds of the PostgreSQL server (postmaster and all its children, read from /proc)
    /// over the measured interval; `None` when /proc does not show the server's processes.
    pub server_cpu_seconds: Option<f64>,
    /// The NURand constants of this run.
    pub nurand: NurandConstants,
}

impl DriveReport {
    /// Client CPU milliseconds per 1000 completed transactions.
    pub fn client_cpu_ms_per_1000_transactions(&self) -> f64 {
        if self.client_transactions == 0 {
            return 0.0;
        }
        self.client_cpu_seconds * 1e3 * 1000.0 / self.client_transactions as f64
    }
}
