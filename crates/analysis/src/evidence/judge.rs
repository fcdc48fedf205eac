//! The bottleneck of a run or a cell by [`RULE`](super::RULE), with the figure that decided it.

use super::*;

/// A bottleneck with the clause of [`RULE`] that produced it, with its figures.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Judgement {
    pub bottleneck: Bottleneck,
    pub rule: String,
}

/// The bottleneck of a run or a cell, by [`RULE`].
pub fn judge(e: &Evidence) -> Judgement {
    if e.has_waits() {
        let cats = e.categories();
        let ((top, s1), (second, s2)) = (cats[0], cats[1]);
        let cpu = e.cpu_text().map(|c| format!("; client and server used {c}")).unwrap_or_default();
        if s1 >= SHARE && s1 >= LEAD * s2 {
            let detail = match top {
                Category::Cpu | Category::Client => String::new(),
                _ => format!(" ({})", e.events_of(top, 2)),
            };
            return Judgement {
                bottleneck: Bottleneck::of_category(top),
                rule: format!(
                    "{} {s1:.0}% of backend time{detail}, at least 40% and 1.5x the next ({} {s2:.0}%){cpu}",
                    top.label(),
                    second.label()
                ),
            };
        }
        return Judgement {
            bottleneck: Bottleneck::Mixed,
            rule: format!(
                "no category holds 40% of backend time and 1.5x the next: {} {s1:.0}%, {} {s2:.0}%{cpu}",
                top.label(),
                second.label()
            ),
        };
    }
    if let Some(p) = e.run_cpu_pct().filter(|p| *p >= CPU_SATURATED) {
        let server = e.server_cpu_s.unwrap_or(0.0) >= e.client_cpu_s.unwrap_or(0.0);
        return Judgement {
            bottleneck: if server { Bottleneck::CpuServer } else { Bottleneck::Client },
            rule: format!(
                "no wait-event samples; client and server used {p:.0}% of {} hardware threads (at least 90%), the {} more",
                e.hardware_threads,
                if server { "server" } else { "client" }
            ),
        };
    }
    if let Some(b) = e.wal_sync_busy_pct().filter(|b| *b >= WAL_BUSY) {
        return Judgement {
            bottleneck: Bottleneck::WalSync,
            rule: format!(
                "no wait-event samples; WAL fsync busy for {b:.0}% of the measured time (at least 50%; pg_stat_wal){}",
                e.wal_sync_us_per_sync().map(|u| format!(", {u:.0} µs per fsync")).unwrap_or_default()
            ),
        };
    }
    if let Some(d) = e.roles.get("data").filter(|d| d.util_pct.is_finite() && d.util_pct >= DEVICE_BUSY) {
        let reads = d.read_iops >= d.write_iops;
        return Judgement {
            bottleneck: if reads { Bottleneck::DataRead } else { Bottleneck::DataWrite },
            rule: format!(
                "no wait-event samples; the data device was busy {:.0}% of the time (at least 80%), {:.0} reads and {:.0} writes per second",
                d.util_pct, d.read_iops, d.write_iops
            ),
        };
    }
    Judgement {
        bottleneck: Bottleneck::NotJudged,
        rule: format!(
            "no wait-event samples, and no counter rule holds{}{}",
            e.cpu_text().map(|c| format!(" (client and server used {c}")).unwrap_or_else(|| " (".into()),
            e.wal_sync_busy_pct()
                .map(|b| format!(", WAL fsync busy {b:.0}% of the time)"))
                .unwrap_or_else(|| ")".into())
        ),
    }
}

/// A bottleneck with the figure that shows it: `WAL-sync-bound (45% of backend time in WAL sync, ...)`.
pub fn verdict_text(e: &Evidence) -> String {
    let j = judge(e);
    format!("{} ({})", j.bottleneck.label(), key_figure(e, j.bottleneck))
}

/// The figure that shows a bottleneck: `96% of 2 threads`, `IO:WALSync 55%`, ...
pub(super) fn key_figure(e: &Evidence, b: Bottleneck) -> String {
    let cpu = e.cpu_text().unwrap_or_else(|| "CPU n/a".into());
    match b {
        Bottleneck::CpuServer => cpu,
        Bottleneck::Client => {
            let share = if e.has_waits() {
                format!("{:.0}% of backend time waiting for the client, ", e.share(Category::Client))
            } else {
                String::new()
            };
            format!("{share}{cpu}")
        }
        Bottleneck::WalSync => {
            let waits = if e.has_waits() {
                format!("{:.0}% of backend time in WAL sync, ", e.share(Category::WalSync))
            } else {
                String::new()
            };
            let us = e
                .wal_sync_us_per_sync()
                .map(|u| format!("{u:.0} µs per WAL fsync"))
                .unwrap_or_else(|| "WAL fsync time n/a".into());
            format!("{waits}{us}")
        }
        Bottleneck::DataRead => {
            let waits = if e.has_waits() {
                format!("{:.0}% of backend time reading, ", e.share(Category::DataRead))
            } else {
                String::new()
            };
            let per = e.blocks_read_per_tx().map(|b| format!("{b:.1} blocks read per transaction")).unwrap_or_default();
            format!("{waits}{per}")
        }
        Bottleneck::DataWrite => {
            let waits = if e.has_waits() {
                format!("{:.0}% of backend time writing, ", e.share(Category::DataWrite))
            } else {
                String::new()
            };
            format!(
                "{waits}{} buffers written by backends, {} checkpoints",
                e.buffers_backend.map(|b| format!("{b:.0}")).unwrap_or_else(|| "n/a".into()),
                e.checkpoints.map(|c| format!("{c:.0}")).unwrap_or_else(|| "n/a".into())
            )
        }
        Bottleneck::Lock => e.events_of(Category::Lock, 2),
        Bottleneck::Mixed => {
            let c = e.categories();
            if e.has_waits() {
                format!("{} {:.0}%, {} {:.0}%", c[0].0.label(), c[0].1, c[1].0.label(), c[1].1)
            } else {
                cpu
            }
        }
        Bottleneck::NotJudged => cpu,
    }
}
