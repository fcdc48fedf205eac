//! The evidence as CSV columns (runs.csv, summary.csv).

use super::*;

/// Column names of the evidence appended to runs.csv (and, as cell means, to summary.csv).
pub const COLUMNS: [&str; 67] = [
    "wal_bytes",
    "wal_syncs",
    "wal_sync_time_ms",
    "wal_sync_busy_pct",
    "wal_sync_us_per_sync",
    "wal_bytes_per_tx",
    "device_writes_per_tx",
    "blocks_read_per_tx",
    "device_iops",
    "device_mb_s",
    "buffers_backend",
    "buffers_checkpoint",
    "buffers_clean",
    "checkpoints",
    "data_dev_read_iops",
    "data_dev_write_iops",
    "data_dev_read_mb_s",
    "data_dev_write_mb_s",
    "data_dev_avg_wait_ms",
    "data_dev_util_pct",
    "wal_dev_read_iops",
    "wal_dev_write_iops",
    "wal_dev_read_mb_s",
    "wal_dev_write_mb_s",
    "wal_dev_avg_wait_ms",
    "wal_dev_util_pct",
    "tables_dev_read_iops",
    "tables_dev_write_iops",
    "tables_dev_read_mb_s",
    "tables_dev_write_mb_s",
    "tables_dev_avg_wait_ms",
    "tables_dev_util_pct",
    "indexes_dev_read_iops",
    "indexes_dev_write_iops",
    "indexes_dev_read_mb_s",
    "indexes_dev_write_mb_s",
    "indexes_dev_avg_wait_ms",
    "indexes_dev_util_pct",
    "temp_dev_read_iops",
    "temp_dev_write_iops",
    "temp_dev_read_mb_s",
    "temp_dev_write_mb_s",
    "temp_dev_avg_wait_ms",
    "temp_dev_util_pct",
    "cpu_user_pct",
    "cpu_system_pct",
    "cpu_iowait_pct",
    "cpu_idle_pct",
    "run_cpu_pct",
    "client_cpu_ms_per_tx",
    "server_cpu_ms_per_tx",
    "wait_samples",
    "wait_wal_pct",
    "wait_data_read_pct",
    "wait_data_write_pct",
    "wait_lock_pct",
    "wait_cpu_pct",
    "wait_client_pct",
    "wait_other_pct",
    "wait_top1_event",
    "wait_top1_pct",
    "wait_top2_event",
    "wait_top2_pct",
    "wait_top3_event",
    "wait_top3_pct",
    "bottleneck",
    "bottleneck_rule",
];

pub(super) fn num(v: Option<f64>, decimals: usize) -> Option<String> {
    v.filter(|x| x.is_finite()).map(|x| format!("{x:.decimals$}"))
}

/// The evidence columns of one run or cell, in [`COLUMNS`] order (None = blank).
pub fn columns(e: &Evidence) -> Vec<Option<String>> {
    let mut v: Vec<Option<String>> = vec![
        num(e.wal_bytes, 0),
        num(e.wal_syncs, 0),
        num(e.wal_sync_time_ms, 1),
        num(e.wal_sync_busy_pct(), 1),
        num(e.wal_sync_us_per_sync(), 1),
        num(e.wal_bytes_per_tx(), 1),
        num(e.device_writes_per_tx(), 3),
        num(e.blocks_read_per_tx(), 3),
        num(e.device_iops, 1),
        num(e.device_mb_s, 2),
        num(e.buffers_backend, 0),
        num(e.buffers_checkpoint, 0),
        num(e.buffers_clean, 0),
        num(e.checkpoints, 1),
    ];
    for role in ROLES {
        let io = e.roles.get(role);
        v.push(num(io.map(|x| x.read_iops), 1));
        v.push(num(io.map(|x| x.write_iops), 1));
        v.push(num(io.map(|x| x.read_mb_s), 2));
        v.push(num(io.map(|x| x.write_mb_s), 2));
        v.push(num(io.map(|x| x.avg_wait_ms), 3));
        v.push(num(io.map(|x| x.util_pct), 1));
    }
    v.extend([
        num(e.cpu_user_pct, 1),
        num(e.cpu_system_pct, 1),
        num(e.cpu_iowait_pct, 1),
        num(e.cpu_idle_pct, 1),
        num(e.run_cpu_pct(), 1),
        num(e.client_cpu_ms_per_tx(), 4),
        num(e.server_cpu_ms_per_tx(), 4),
    ]);
    let sampled = e.has_waits();
    v.push(sampled.then(|| format!("{:.0}", e.wait_samples)));
    for c in Category::ALL {
        debug_assert_eq!(COLUMNS[v.len()], c.column());
        v.push(sampled.then(|| format!("{:.1}", e.share(c))));
    }
    for i in 0..3 {
        let top = e.waits.get(i);
        v.push(top.map(|(ev, _)| ev.clone()));
        v.push(top.map(|(_, s)| format!("{s:.1}")));
    }
    let j = judge(e);
    v.push(Some(j.bottleneck.label().to_string()));
    v.push(Some(j.rule));
    debug_assert_eq!(v.len(), COLUMNS.len());
    v
}

/// A row's evidence columns as a struct for the CSV writer: field names from [`COLUMNS`].
#[derive(Clone, Debug, Default)]
pub struct EvidenceColumns(pub Vec<Option<String>>);

impl Serialize for EvidenceColumns {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut st = s.serialize_struct("Evidence", COLUMNS.len())?;
        for (i, name) in COLUMNS.iter().enumerate() {
            st.serialize_field(name, &self.0.get(i).cloned().flatten().unwrap_or_default())?;
        }
        st.end()
    }
}
