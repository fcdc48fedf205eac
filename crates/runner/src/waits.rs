//! Wait events of the server's processes during a measured interval: `pg_stat_activity` sampled
//! about ten times a second on a connection of its own, from a thread of its own (so that its
//! CPU can be measured apart from everything else), for pgbench and TPC-C runs alike. Each
//! snapshot counts every client backend of the benchmark's database once, in the wait event it
//! is in (`CPU` when it is active with none), and the WAL writer, checkpointer, background
//! writer and autovacuum workers apart. The raw snapshots are kept in the run's directory.
//!
//! Sampling is statistics, not tracing: at 10 per second a 12 s run with 8 clients gives about
//! 960 backend samples, enough to rank events whose share is a few percent (a share's binomial
//! standard error is below 1.6 percentage points there).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use results::record::{WaitEvents, WaitShare};

use crate::sampler::thread_cpu_seconds;

/// How often pg_stat_activity is read.
pub const INTERVAL: Duration = Duration::from_millis(100);

/// The application names of pgtier's own measuring connections (never counted).
const OWN: [&str; 3] = ["pgtier", "pgtier-waits", "pgtier-tpcc-monitor"];

/// The backend types counted apart from the client backends.
pub const BACKGROUND: [&str; 4] = ["walwriter", "checkpointer", "background writer", "autovacuum worker"];

/// One snapshot, grouped: the function behind pg_stat_activity, without the view's joins to
/// pg_database and pg_authid (the database is matched by its oid, read once), which keeps the
/// server's share of the sampler's cost down.
const QUERY: &str = "SELECT S.backend_type, coalesce(S.state, ''), coalesce(S.wait_event_type, ''), coalesce(S.wait_event, ''), count(*)
     FROM pg_stat_get_activity(NULL) AS S
     WHERE S.pid <> pg_backend_pid()
       AND ((S.backend_type = 'client backend' AND S.datid = $3 AND NOT coalesce(S.application_name, '') = ANY($1))
            OR S.backend_type = ANY($2))
     GROUP BY 1, 2, 3, 4";

/// The same through the view, for a server whose pg_stat_get_activity differs.
const VIEW_QUERY: &str =
    "SELECT backend_type, coalesce(state, ''), coalesce(wait_event_type, ''), coalesce(wait_event, ''), count(*)
     FROM pg_stat_activity
     WHERE pid <> pg_backend_pid()
       AND ((backend_type = 'client backend' AND datid = $3 AND NOT coalesce(application_name, '') = ANY($1))
            OR backend_type = ANY($2))
     GROUP BY 1, 2, 3, 4";

/// Where the sampler connects: the server's private socket.
#[derive(Clone, Debug)]
pub struct Target {
    pub socket_dir: PathBuf,
    pub port: u16,
    pub user: String,
    pub database: String,
}

/// One group of processes of one snapshot, as pg_stat_activity showed it.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    pub backend_type: String,
    pub state: String,
    pub wait_event_type: String,
    pub wait_event: String,
    pub count: u64,
}

impl Row {
    /// `IO:WALSync`; `CPU` for an active process with no wait event; `Idle` for one that is not.
    pub fn event(&self) -> String {
        if !self.wait_event_type.is_empty() {
            format!("{}:{}", self.wait_event_type, self.wait_event)
        } else if self.state == "active" || self.backend_type != "client backend" {
            // Background processes report no state; without a wait event they are working.
            "CPU".into()
        } else {
            "Idle".into()
        }
    }
}

/// Snapshots as taken: seconds since the start of the interval and the rows.
#[derive(Clone, Debug, Default)]
pub struct Samples {
    pub snapshots: Vec<(f64, Vec<Row>)>,
    /// The error that ended sampling early, if any.
    pub error: Option<String>,
}

impl Samples {
    /// The raw file: one line per group per snapshot, tab-separated, with a header.
    pub fn to_text(&self) -> String {
        let mut t = String::from("t_s\tbackend_type\tstate\twait_event_type\twait_event\tcount\n");
        for (at, rows) in &self.snapshots {
            if rows.is_empty() {
                t.push_str(&format!("{at:.3}\t\t\t\t\t0\n"));
            }
            for r in rows {
                t.push_str(&format!(
                    "{at:.3}\t{}\t{}\t{}\t{}\t{}\n",
                    r.backend_type, r.state, r.wait_event_type, r.wait_event, r.count
                ));
            }
        }
        if let Some(e) = &self.error {
            t.push_str(&format!("# sampling stopped early: {e}\n"));
        }
        t
    }

    /// Parses [`Samples::to_text`] back (tests, and re-reading a run's raw file).
    pub fn parse(text: &str) -> Samples {
        let mut out = Samples::default();
        for line in text.lines().skip(1).filter(|l| !l.starts_with('#')) {
            let f: Vec<&str> = line.split('\t').collect();
            if f.len() != 6 {
                continue;
            }
            let Ok(at) = f[0].parse::<f64>() else { continue };
            if out.snapshots.last().is_none_or(|(t, _)| *t != at) {
                out.snapshots.push((at, Vec::new()));
            }
            let count = f[5].parse().unwrap_or(0);
            if count > 0 {
                out.snapshots.last_mut().expect("pushed").1.push(Row {
                    backend_type: f[1].into(),
                    state: f[2].into(),
                    wait_event_type: f[3].into(),
                    wait_event: f[4].into(),
                    count,
                });
            }
        }
        out
    }

    /// Shares per event: of the client backends, and per background process type.
    pub fn summarise(&self, interval: Duration) -> WaitEvents {
        let mut backend: BTreeMap<String, u64> = BTreeMap::new();
        let mut background: BTreeMap<String, BTreeMap<String, u64>> = BTreeMap::new();
        for (_, rows) in &self.snapshots {
            for r in rows {
                let into = if r.backend_type == "client backend" {
                    &mut backend
                } else {
                    background.entry(r.backend_type.clone()).or_default()
                };
                *into.entry(r.event()).or_default() += r.count;
            }
        }
        let backend_samples = backend.values().sum();
        WaitEvents {
            interval_ms: interval.as_secs_f64() * 1000.0,
            snapshots: self.snapshots.len() as u64,
            backend: shares(&backend),
            backend_samples,
            background: background.iter().map(|(k, v)| (k.clone(), shares(v))).collect(),
            ..Default::default()
        }
    }
}

/// Counts as shares of their total, largest first (ties by name).
fn shares(counts: &BTreeMap<String, u64>) -> Vec<WaitShare> {
    let total: u64 = counts.values().sum();
    let mut v: Vec<WaitShare> = counts
        .iter()
        .map(|(event, n)| WaitShare {
            event: event.clone(),
            samples: *n,
            share_pct: if total > 0 { *n as f64 / total as f64 * 100.0 } else { 0.0 },
        })
        .collect();
    v.sort_by(|a, b| b.samples.cmp(&a.samples).then_with(|| a.event.cmp(&b.event)));
    v
}

/// What the sampling thread hands back.
struct Output {
    samples: Samples,
    thread_cpu_s: f64,
    backend_cpu_s: Option<f64>,
}

/// A running sampler; [`WaitSampler::finish`] stops it.
pub struct WaitSampler {
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    handle: std::thread::JoinHandle<Output>,
    interval: Duration,
}

impl WaitSampler {
    /// Connects to `target` from a thread of its own and samples every `interval` until
    /// stopped. A sampler that cannot connect returns no samples and says why; it never fails
    /// the run.
    pub fn start(target: Target, interval: Duration) -> WaitSampler {
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let handle = std::thread::Builder::new()
            .name("pgtier-waits".into())
            .spawn(move || sample_thread(target, interval, stopped))
            .expect("spawn the wait-event sampler thread");
        WaitSampler { stop: Some(stop), handle, interval }
    }

    /// Stops sampling; the summary (with the sampler's own CPU) and the raw text.
    pub fn finish(mut self) -> (WaitEvents, String) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        let out = self.handle.join().unwrap_or_else(|_| Output {
            samples: Samples { error: Some("the sampler thread panicked".into()), ..Default::default() },
            thread_cpu_s: 0.0,
            backend_cpu_s: None,
        });
        let mut w = out.samples.summarise(self.interval);
        w.sampler_cpu_s = out.thread_cpu_s;
        w.sampler_backend_cpu_s = out.backend_cpu_s;
        (w, out.samples.to_text())
    }
}

fn sample_thread(target: Target, interval: Duration, stopped: tokio::sync::oneshot::Receiver<()>) -> Output {
    let rt = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            return Output {
                samples: Samples { error: Some(format!("tokio runtime: {e}")), ..Default::default() },
                thread_cpu_s: thread_cpu_seconds(),
                backend_cpu_s: None,
            };
        }
    };
    let cpu0 = thread_cpu_seconds();
    let (samples, backend_cpu_s) = rt.block_on(sample(target, interval, stopped));
    drop(rt);
    Output { samples, thread_cpu_s: thread_cpu_seconds() - cpu0, backend_cpu_s }
}

/// The sampler's connection, its prepared statement ([`QUERY`], or [`VIEW_QUERY`] where the
/// server's pg_stat_get_activity differs), the benchmark database's oid and the sampler's
/// backend pid.
async fn connect_sampler(
    target: &Target,
) -> Result<(tokio_postgres::Client, tokio_postgres::Statement, u32, Option<i32>), String> {
    let connected = tokio_postgres::Config::new()
        .host_path(&target.socket_dir)
        .port(target.port)
        .user(&target.user)
        .dbname(&target.database)
        .application_name("pgtier-waits")
        .connect(tokio_postgres::NoTls)
        .await;
    let client = match connected {
        Ok((client, conn)) => {
            tokio::spawn(async move {
                let _ = conn.await;
            });
            client
        }
        Err(e) => return Err(format!("connect: {e:#}")),
    };
    let pid: Option<i32> = client.query_one("SELECT pg_backend_pid()", &[]).await.ok().map(|r| r.get(0));
    let database: u32 =
        match client.query_one("SELECT oid FROM pg_database WHERE datname = current_database()", &[]).await {
            Ok(r) => r.get(0),
            Err(e) => return Err(format!("database oid: {e:#}")),
        };
    let statement = match client.prepare(QUERY).await {
        Ok(s) => s,
        Err(_) => match client.prepare(VIEW_QUERY).await {
            Ok(s) => s,
            Err(e) => return Err(format!("prepare: {e:#}")),
        },
    };
    Ok((client, statement, database, pid))
}

async fn sample(
    target: Target,
    interval: Duration,
    mut stopped: tokio::sync::oneshot::Receiver<()>,
) -> (Samples, Option<f64>) {
    let mut out = Samples::default();
    let (client, statement, database, pid) = match connect_sampler(&target).await {
        Ok(c) => c,
        Err(e) => {
            out.error = Some(e);
            return (out, None);
        }
    };
    let cpu0 = pid.and_then(process_cpu_seconds);
    let own: Vec<&str> = OWN.to_vec();
    let background: Vec<&str> = BACKGROUND.to_vec();
    let start = Instant::now();
    let mut next = tokio::time::Instant::now();
    loop {
        match client.query(&statement, &[&own, &background, &database]).await {
            Ok(rows) => {
                let at = start.elapsed().as_secs_f64();
                let rows = rows
                    .iter()
                    .map(|r| Row {
                        backend_type: r.get(0),
                        state: r.get(1),
                        wait_event_type: r.get(2),
                        wait_event: r.get(3),
                        count: r.get::<_, i64>(4).max(0) as u64,
                    })
                    .collect();
                out.snapshots.push((at, rows));
            }
            Err(e) => {
                out.error = Some(format!("query: {e:#}"));
                break;
            }
        }
        // The next tick; ticks missed on a busy machine are skipped, not made up.
        next += interval;
        let now = tokio::time::Instant::now();
        while next <= now {
            next += interval;
        }
        tokio::select! {
            _ = &mut stopped => break,
            _ = tokio::time::sleep_until(next) => {}
        }
    }
    let backend_cpu = match (cpu0, pid.and_then(process_cpu_seconds)) {
        (Some(a), Some(b)) => Some(b - a),
        _ => None,
    };
    (out, backend_cpu)
}

/// CPU seconds (user + system) of a process, from /proc/<pid>/stat.
pub fn process_cpu_seconds(pid: i32) -> Option<f64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_proc_pid_stat_cpu(&text, clock_ticks())
}

fn clock_ticks() -> f64 {
    // SAFETY: sysconf has no preconditions.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 { t as f64 } else { 100.0 }
}

/// utime + stime (fields 14 and 15) of a /proc/<pid>/stat line, in seconds.
fn parse_proc_pid_stat_cpu(text: &str, ticks: f64) -> Option<f64> {
    // The command name (field 2) is in parentheses and may contain spaces: count from its end.
    let rest = &text[text.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // rest starts at field 3 (state): utime is field 14, i.e. index 11 here.
    let utime: f64 = f.get(11)?.parse().ok()?;
    let stime: f64 = f.get(12)?.parse().ok()?;
    Some((utime + stime) / ticks)
}

/// Writes the raw samples next to the run's figures; returns the file name.
pub fn write_raw(run_dir: &Path, text: &str) -> String {
    let name = "wait_events.tsv";
    let _ = std::fs::write(run_dir.join(name), text);
    name.into()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(backend_type: &str, state: &str, ty: &str, ev: &str, count: u64) -> Row {
        Row {
            backend_type: backend_type.into(),
            state: state.into(),
            wait_event_type: ty.into(),
            wait_event: ev.into(),
            count,
        }
    }

    #[test]
    fn shares_of_backend_time_with_cpu_for_no_wait() {
        let s = Samples {
            snapshots: vec![
                (
                    0.1,
                    vec![
                        row("client backend", "active", "IO", "WALSync", 5),
                        row("client backend", "active", "", "", 2),
                        row("client backend", "idle", "Client", "ClientRead", 1),
                        row("walwriter", "", "Activity", "WalWriterMain", 1),
                    ],
                ),
                (
                    0.2,
                    vec![
                        row("client backend", "active", "IO", "WALSync", 3),
                        row("client backend", "active", "LWLock", "WALWrite", 4),
                        row("client backend", "active", "", "", 1),
                        row("checkpointer", "", "", "", 1),
                    ],
                ),
            ],
            error: None,
        };
        let w = s.summarise(INTERVAL);
        assert_eq!((w.snapshots, w.backend_samples), (2, 16));
        let names: Vec<(&str, u64)> = w.backend.iter().map(|x| (x.event.as_str(), x.samples)).collect();
        assert_eq!(names, [("IO:WALSync", 8), ("LWLock:WALWrite", 4), ("CPU", 3), ("Client:ClientRead", 1)]);
        assert!((w.share("IO:WALSync") - 50.0).abs() < 1e-9);
        assert_eq!(w.share("Lock:transactionid"), 0.0);
        assert_eq!(w.background["walwriter"][0].event, "Activity:WalWriterMain");
        assert_eq!(w.background["checkpointer"][0].event, "CPU", "a background process without a wait works");
        assert!((w.interval_ms - 100.0).abs() < 1e-9);
        // The raw text reads back the same.
        let back = Samples::parse(&s.to_text());
        assert_eq!(back.snapshots, s.snapshots);
    }

    #[test]
    fn empty_snapshots_and_errors_survive_the_raw_file() {
        let s = Samples { snapshots: vec![(0.1, vec![]), (0.2, vec![])], error: Some("query: gone".into()) };
        let text = s.to_text();
        assert!(text.ends_with("# sampling stopped early: query: gone\n"), "{text}");
        assert_eq!(Samples::parse(&text).snapshots.len(), 2);
        assert_eq!(s.summarise(INTERVAL).backend_samples, 0);
    }

    #[test]
    fn cpu_of_a_process_from_its_stat_line() {
        // A command name with spaces and parentheses; utime 250, stime 50 ticks at 100 Hz.
        let line = "4242 (postgres: x (y) z) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 1 0 100 1000 10";
        assert_eq!(parse_proc_pid_stat_cpu(line, 100.0), Some(3.0));
        let own = process_cpu_seconds(std::process::id() as i32);
        assert!(own.is_some_and(|s| s >= 0.0));
    }
}
