//! Settle: a database that earlier load wrote to brought back to a clean state, as a DBA would
//! before measuring: `VACUUM (ANALYZE)` of every table of the data set, then `CHECKPOINT`.
//!
//! Why: rows that a read-write workload (pgbench's TPC-B-like) updated leave dead versions and
//! tuples without hint bits. The first read-only scans over them prune the pages and set the hint
//! bits, which dirties them: right after a tpcb contest, a select-only contest wrote 378-1,920
//! data blocks a second in its first rounds, 0-12 when run alone (docs/benchmarks.md, "Prewarm per
//! placement"), and its throughput climbed with the writes fading. VACUUM does that work once,
//! before anything is measured: it prunes the dead versions (heap and index), sets the hint bits
//! and the visibility map. ANALYZE with it resets the counters autovacuum acts on (rows modified
//! since the last analyze, dead rows), so that autovacuum does not start its own VACUUM or ANALYZE
//! of the updated table in the middle of the next contest's rounds, and gives the planner the data
//! as it now is. No FREEZE: freezing changes nothing a read does (the hint bits and the visibility
//! map are what a read consults) and would rewrite every page the workload touched, which the data
//! set built by `pgbench -i` does not need (its rows are frozen or hinted already). With
//! `INDEX_CLEANUP ON` (PostgreSQL 12 and later): since 14, VACUUM skips the indexes when fewer than
//! 2% of the table's pages hold dead rows, which leaves their dead index entries for the next
//! contest's index scans to mark killed (writes again); on a large data set after a short
//! read-write contest that is the common case. The CHECKPOINT
//! then writes what the VACUUM dirtied, so the next contest's slices do not pay for it either.
//!
//! The work is the server's own (a backend in the server's cgroup, connected as the database
//! user), so its reads and writes are charged to that cgroup like the workload's.

use std::time::Instant;

use tokio_postgres::Client;

use crate::RunnerError;

/// One table's state before its VACUUM, and how long the VACUUM (ANALYZE) took.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TableSettled {
    /// The table, as `regclass` prints it.
    pub table: String,
    /// `pg_stat_user_tables.n_dead_tup` and `n_mod_since_analyze` before (None when the
    /// statistics had nothing for it).
    pub dead_rows: Option<i64>,
    pub modified_rows: Option<i64>,
    pub seconds: f64,
}

/// What one settle did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Settled {
    /// Each table vacuumed, in the order done.
    pub tables: Vec<TableSettled>,
    /// Dead rows over every table after the VACUUM (the statistics' count: 0 once every dead
    /// version was removed), None when unknown.
    pub dead_rows_after: Option<i64>,
    /// The command each table got (`VACUUM (ANALYZE, INDEX_CLEANUP ON)`).
    pub command: String,
    /// Seconds of the VACUUMs, and of the CHECKPOINT after them.
    pub vacuum_seconds: f64,
    pub checkpoint_seconds: f64,
}

impl Settled {
    /// Dead rows over every table before.
    pub fn dead_rows(&self) -> i64 {
        self.tables.iter().filter_map(|t| t.dead_rows).sum()
    }

    /// Rows modified since the last ANALYZE over every table before.
    pub fn modified_rows(&self) -> i64 {
        self.tables.iter().filter_map(|t| t.modified_rows).sum()
    }

    /// The raw record, a line per table (`<dead>\t<modified>\t<seconds>\t<table>`) after a
    /// header: kept beside the parsed figures.
    pub fn raw(&self) -> String {
        let opt = |v: Option<i64>| v.map(|v| v.to_string()).unwrap_or_else(|| "-".into());
        let mut out = format!(
            "# {} per table, in the order done ({:.3} s), then CHECKPOINT ({:.3} s); dead rows after: {}\n# n_dead_tup\tn_mod_since_analyze\tseconds\ttable\n",
            self.command,
            self.vacuum_seconds,
            self.checkpoint_seconds,
            opt(self.dead_rows_after)
        );
        for t in &self.tables {
            out.push_str(&format!("{}\t{}\t{:.3}\t{}\n", opt(t.dead_rows), opt(t.modified_rows), t.seconds, t.table));
        }
        out
    }
}

/// The tables to vacuum: every table (and materialized view) made after initdb, not temporary,
/// largest first, with what the statistics say of its dead and modified rows.
const TABLES: &str = "SELECT c.oid::regclass::text, s.n_dead_tup, s.n_mod_since_analyze \
     FROM pg_class c LEFT JOIN pg_stat_user_tables s ON s.relid = c.oid \
     WHERE c.oid >= 16384 AND c.relkind IN ('r', 'm') AND c.relpersistence <> 't' \
     ORDER BY pg_relation_size(c.oid) DESC, c.oid";

/// Dead rows over the same tables, as the statistics now say.
const DEAD_AFTER: &str = "SELECT sum(s.n_dead_tup)::bigint \
     FROM pg_class c JOIN pg_stat_user_tables s ON s.relid = c.oid \
     WHERE c.oid >= 16384 AND c.relkind IN ('r', 'm') AND c.relpersistence <> 't'";

/// `VACUUM (ANALYZE, INDEX_CLEANUP ON)` (without `INDEX_CLEANUP` before PostgreSQL 12) of every
/// table of the connected database, largest first, then `CHECKPOINT`. `cancelled` is asked before each table (Err(Cancelled) once it says yes).
pub async fn settle(client: &Client, cancelled: &dyn Fn() -> bool) -> Result<Settled, RunnerError> {
    let started = Instant::now();
    // The statistics as of now, not as cached in this session's first read of them.
    let _ = client.batch_execute("SELECT pg_stat_clear_snapshot()").await;
    let version: i32 = client
        .query_one("SELECT current_setting('server_version_num')::int", &[])
        .await
        .map_err(RunnerError::query("read server_version_num"))?
        .get(0);
    let command = vacuum_command(version);
    let rows = client.query(TABLES, &[]).await.map_err(RunnerError::query("list the tables to vacuum"))?;
    let mut tables = Vec::with_capacity(rows.len());
    for row in rows {
        if cancelled() {
            return Err(RunnerError::Cancelled);
        }
        let table: String = row.get(0);
        let t0 = Instant::now();
        // regclass's text is already quoted where it must be.
        client
            .batch_execute(&format!("{command} {table}"))
            .await
            .map_err(RunnerError::query(format!("{command} {table}")))?;
        tables.push(TableSettled {
            table,
            dead_rows: row.get(1),
            modified_rows: row.get(2),
            seconds: t0.elapsed().as_secs_f64(),
        });
    }
    let vacuum_seconds = started.elapsed().as_secs_f64();
    let t0 = Instant::now();
    client.batch_execute("CHECKPOINT").await.map_err(RunnerError::query("checkpoint"))?;
    let checkpoint_seconds = t0.elapsed().as_secs_f64();
    let _ = client.batch_execute("SELECT pg_stat_clear_snapshot()").await;
    let dead_rows_after = client.query_one(DEAD_AFTER, &[]).await.ok().and_then(|r| r.get::<_, Option<i64>>(0));
    Ok(Settled { tables, dead_rows_after, command, vacuum_seconds, checkpoint_seconds })
}

/// The VACUUM a table gets on a server of this `server_version_num`.
fn vacuum_command(version: i32) -> String {
    if version >= 120000 { "VACUUM (ANALYZE, INDEX_CLEANUP ON)" } else { "VACUUM (ANALYZE)" }.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_and_raw_record() {
        let s = Settled {
            tables: vec![
                TableSettled {
                    table: "pgbench_accounts".into(),
                    dead_rows: Some(41_000),
                    modified_rows: Some(52_000),
                    seconds: 0.8,
                },
                TableSettled { table: "pgbench_history".into(), dead_rows: None, modified_rows: None, seconds: 0.01 },
            ],
            dead_rows_after: Some(0),
            command: vacuum_command(150004),
            vacuum_seconds: 0.81,
            checkpoint_seconds: 0.2,
        };
        assert_eq!((s.dead_rows(), s.modified_rows()), (41_000, 52_000));
        let raw = s.raw();
        assert!(
            raw.starts_with("# VACUUM (ANALYZE, INDEX_CLEANUP ON) per table") && raw.contains("dead rows after: 0\n"),
            "{raw}"
        );
        assert_eq!(vacuum_command(110022), "VACUUM (ANALYZE)", "no INDEX_CLEANUP before 12");
        assert!(raw.contains("\n41000\t52000\t0.800\tpgbench_accounts\n-\t-\t0.010\tpgbench_history\n"), "{raw}");
    }
}
