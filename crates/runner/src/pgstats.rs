//! PostgreSQL's own counters (pg_stat_database, pg_stat_bgwriter, pg_stat_wal) before and after
//! a run, as deltas; checkpoints found in the server log; latency percentiles.

use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use results::record::PgCounters;

/// Counters at one moment.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Snapshot {
    pub db: [i64; 5],
    pub database_size: i64,
    pub bgwriter: Option<[i64; 5]>,
    pub wal: Option<(i64, i64, f64, f64)>,
}

impl Snapshot {
    /// The counters as read, one view per line, column names as in PostgreSQL (the raw values
    /// behind the deltas in a run's record).
    pub fn to_text(&self) -> String {
        let [hit, read, commit, rollback, temp] = self.db;
        let mut t = format!(
            "pg_stat_database: blks_hit={hit} blks_read={read} xact_commit={commit} xact_rollback={rollback} temp_bytes={temp} pg_database_size={}\n",
            self.database_size
        );
        if let Some([timed, req, checkpoint, clean, backend]) = self.bgwriter {
            t.push_str(&format!(
                "pg_stat_bgwriter: checkpoints_timed={timed} checkpoints_req={req} buffers_checkpoint={checkpoint} buffers_clean={clean} buffers_backend={backend}\n"
            ));
        }
        if let Some((bytes, sync, write_time, sync_time)) = self.wal {
            t.push_str(&format!(
                "pg_stat_wal: wal_bytes={bytes} wal_sync={sync} wal_write_time={write_time} wal_sync_time={sync_time}\n"
            ));
        }
        t
    }
}

/// Reads the counters of the connected database.
pub async fn snapshot(client: &tokio_postgres::Client) -> Result<Snapshot, tokio_postgres::Error> {
    let r = client
        .query_one(
            "SELECT blks_hit, blks_read, xact_commit, xact_rollback, temp_bytes, pg_database_size(datname)
             FROM pg_stat_database WHERE datname = current_database()",
            &[],
        )
        .await?;
    let db = [r.get(0), r.get(1), r.get(2), r.get(3), r.get(4)];
    let database_size: i64 = r.get(5);
    // PostgreSQL 17 moved the checkpoint counters to pg_stat_checkpointer; older ones lack
    // pg_stat_wal. Missing views give None, not an error.
    let bgwriter = client
        .query_one("SELECT checkpoints_timed, checkpoints_req, buffers_checkpoint, buffers_clean, buffers_backend FROM pg_stat_bgwriter", &[])
        .await
        .ok()
        .map(|r| [r.get(0), r.get(1), r.get(2), r.get(3), r.get(4)]);
    let wal = client
        .query_one("SELECT wal_bytes::bigint, wal_sync, wal_write_time, wal_sync_time FROM pg_stat_wal", &[])
        .await
        .ok()
        .map(|r| (r.get(0), r.get(1), r.get(2), r.get(3)));
    Ok(Snapshot { db, database_size, bgwriter, wal })
}

/// What changed between two snapshots.
pub fn delta(a: &Snapshot, b: &Snapshot) -> PgCounters {
    let bg = match (a.bgwriter, b.bgwriter) {
        (Some(x), Some(y)) => [y[0] - x[0], y[1] - x[1], y[2] - x[2], y[3] - x[3], y[4] - x[4]],
        _ => [0; 5],
    };
    let wal = match (a.wal, b.wal) {
        (Some(x), Some(y)) => Some((y.0 - x.0, y.1 - x.1, y.2 - x.2, y.3 - x.3)),
        _ => None,
    };
    PgCounters {
        blks_hit: b.db[0] - a.db[0],
        blks_read: b.db[1] - a.db[1],
        xact_commit: b.db[2] - a.db[2],
        xact_rollback: b.db[3] - a.db[3],
        temp_bytes: b.db[4] - a.db[4],
        checkpoints_timed: bg[0],
        checkpoints_req: bg[1],
        buffers_checkpoint: bg[2],
        buffers_clean: bg[3],
        buffers_backend: bg[4],
        wal_bytes: wal.map(|w| w.0),
        wal_sync: wal.map(|w| w.1),
        wal_write_time_ms: wal.map(|w| w.2),
        wal_sync_time_ms: wal.map(|w| w.3),
        database_size_bytes: b.database_size,
    }
}

/// Seconds since the epoch of a log timestamp `2026-11-29 22:17:01.123 UTC` (log_timezone UTC).
pub fn parse_log_time(s: &str) -> Option<SystemTime> {
    let mut parts = s.split_whitespace();
    let date = parts.next()?;
    let time = parts.next()?;
    if parts.next()? != "UTC" {
        return None;
    }
    let mut d = date.split('-').map(|x| x.parse::<i64>());
    let (y, m, day) = (d.next()?.ok()?, d.next()?.ok()?, d.next()?.ok()?);
    let mut t = time.split(':');
    let (hh, mm): (u64, u64) = (t.next()?.parse().ok()?, t.next()?.parse().ok()?);
    let ss: f64 = t.next()?.parse().ok()?;
    let days = results::timestamp::days_from_civil(y, m as u32, day as u32);
    let secs = days as f64 * 86_400.0 + (hh * 3600 + mm * 60) as f64 + ss;
    (secs >= 0.0).then(|| UNIX_EPOCH + Duration::from_secs_f64(secs))
}

/// Offsets (seconds since `from`) of the checkpoints that started between `from` and `to`,
/// from a server log written with `log_line_prefix = '%m [%p] '` and `log_checkpoints = on`.
pub fn checkpoints_between(log: &str, from: SystemTime, to: SystemTime) -> Vec<f64> {
    log.lines()
        .filter(|l| l.contains("checkpoint starting:"))
        .filter_map(|l| {
            let ts: String = l.splitn(4, ' ').take(3).collect::<Vec<_>>().join(" ");
            parse_log_time(&ts)
        })
        .filter(|t| *t >= from && *t <= to)
        .filter_map(|t| t.duration_since(from).ok().map(|d| d.as_secs_f64()))
        .collect()
}

/// Latency percentiles (ms) of sampled transaction latencies (µs): p50, p90, p95, p99, p99.9.
pub fn percentiles_ms(mut us: Vec<u64>) -> Option<[f64; 5]> {
    if us.is_empty() {
        return None;
    }
    us.sort_unstable();
    let q = |p: f64| {
        let rank = ((p / 100.0) * us.len() as f64 - 1e-9).ceil() as usize;
        us[rank.clamp(1, us.len()) - 1] as f64 / 1000.0
    };
    Some([q(50.0), q(90.0), q(95.0), q(99.0), q(99.9)])
}

/// Latencies from every per-thread transaction log written with `prefix`.
pub fn read_transaction_logs(dir: &Path, prefix: &str) -> Vec<u64> {
    let mut out = Vec::new();
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            if e.file_name().to_string_lossy().starts_with(prefix)
                && let Ok(text) = std::fs::read_to_string(e.path())
            {
                out.extend(crate::pgbench::transaction_log_latencies_us(&text));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_times_and_checkpoints() {
        let log = "2026-11-29 22:17:01.500 UTC [12] LOG:  checkpoint starting: time\n\
                   2026-11-29 22:17:09.000 UTC [12] LOG:  checkpoint complete: wrote 3 buffers\n\
                   2026-11-29 22:18:00.000 UTC [12] LOG:  checkpoint starting: wal\n";
        let from = parse_log_time("2026-11-29 22:17:00.000 UTC").unwrap();
        let to = parse_log_time("2026-11-29 22:17:30.000 UTC").unwrap();
        assert_eq!(checkpoints_between(log, from, to), vec![1.5]);
        let t = parse_log_time("1970-01-02 00:00:01 UTC").unwrap();
        assert_eq!(t.duration_since(UNIX_EPOCH).unwrap().as_secs(), 86_401);
    }

    #[test]
    fn percentiles() {
        let v: Vec<u64> = (1..=1000).map(|i| i * 1000).collect();
        let p = percentiles_ms(v).unwrap();
        assert_eq!(p, [500.0, 900.0, 950.0, 990.0, 999.0]);
        assert!(percentiles_ms(vec![]).is_none());
    }
}
