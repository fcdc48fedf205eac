//! pgbench: the command line for a run, and parsers for its summary, its `-P` progress lines and
//! its transaction log.

use std::path::Path;
use std::time::Duration;

use journal::CommandLine;
use serde::{Deserialize, Serialize};

/// pgbench's builtin scripts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Builtin {
    /// TPC-B (sort of): 3 UPDATEs, 1 SELECT, 1 INSERT per transaction.
    TpcbLike,
    /// `-N`: TPC-B without the branch and teller updates.
    SimpleUpdate,
    /// `-S`: one SELECT by primary key (read-only).
    SelectOnly,
}

impl Builtin {
    pub fn as_str(self) -> &'static str {
        match self {
            Builtin::TpcbLike => "tpcb-like",
            Builtin::SimpleUpdate => "simple-update",
            Builtin::SelectOnly => "select-only",
        }
    }

    pub fn parse(s: &str) -> Option<Builtin> {
        match s {
            "tpcb-like" => Some(Builtin::TpcbLike),
            "simple-update" => Some(Builtin::SimpleUpdate),
            "select-only" => Some(Builtin::SelectOnly),
            _ => None,
        }
    }
}

/// Where pgbench connects: the server's private socket directory and port.
#[derive(Clone, Debug)]
pub struct Target<'a> {
    pub socket_dir: &'a Path,
    pub port: u16,
    pub user: &'a str,
    pub database: &'a str,
}

fn connection_args(cmd: CommandLine, t: &Target) -> CommandLine {
    cmd.arg("-h").arg(t.socket_dir).arg("-p").arg(t.port.to_string()).arg("-U").arg(t.user)
}

/// `pgbench -i`: builds the data set at `scale`.
pub fn init_command(bin_dir: &Path, t: &Target, scale: u32, extra: &[String]) -> CommandLine {
    connection_args(CommandLine::new(bin_dir.join("pgbench").to_string_lossy()), t)
        .arg("-i")
        .arg("-s")
        .arg(scale.to_string())
        .args(extra)
        .arg(t.database)
}

/// One measured (or ramp-up) pgbench invocation.
#[derive(Clone, Debug)]
pub struct RunOptions {
    pub builtin: Builtin,
    pub clients: u32,
    pub threads: u32,
    pub duration: Duration,
    /// Seconds between `-P` progress lines.
    pub progress_s: u32,
    /// `-r`: per-statement latencies.
    pub per_statement: bool,
    /// Per-transaction log sampled at this rate (`-l --sampling-rate`), written with this prefix.
    pub transaction_log: Option<(f64, String)>,
    /// Extra pgbench arguments from the experiment file.
    pub extra: Vec<String>,
}

/// The pgbench command for a run.
pub fn run_command(bin_dir: &Path, t: &Target, o: &RunOptions) -> CommandLine {
    let mut cmd = connection_args(CommandLine::new(bin_dir.join("pgbench").to_string_lossy()), t)
        .arg(format!("--builtin={}", o.builtin.as_str()))
        .arg("-c")
        .arg(o.clients.to_string())
        .arg("-j")
        .arg(o.threads.to_string())
        .arg("-T")
        .arg(o.duration.as_secs().max(1).to_string())
        .arg("-P")
        .arg(o.progress_s.max(1).to_string());
    if o.per_statement {
        cmd = cmd.arg("-r");
    }
    if let Some((rate, prefix)) = &o.transaction_log {
        cmd = cmd.arg("-l").arg(format!("--sampling-rate={rate}")).arg(format!("--log-prefix={prefix}"));
    }
    cmd.args(&o.extra).arg(t.database)
}

/// The summary pgbench prints at the end of a run.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Summary {
    pub version: Option<String>,
    pub transaction_type: String,
    pub scale: Option<u32>,
    pub clients: Option<u32>,
    pub threads: Option<u32>,
    pub duration_s: Option<f64>,
    pub transactions: u64,
    pub failed: u64,
    pub retried: Option<u64>,
    pub latency_avg_ms: f64,
    pub latency_stddev_ms: Option<f64>,
    pub initial_connection_ms: Option<f64>,
    pub tps: f64,
    pub statements: Vec<Statement>,
}

/// One line of the per-statement report (`-r`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Statement {
    pub latency_ms: f64,
    pub failures: Option<u64>,
    pub retries: Option<u64>,
    pub text: String,
}

#[derive(Debug, thiserror::Error, PartialEq)]
#[error("pgbench output: {0}")]
pub struct ParseError(String);

fn after<'a>(line: &'a str, prefix: &str) -> Option<&'a str> {
    line.trim().strip_prefix(prefix).map(str::trim)
}

fn first_number(s: &str) -> Option<f64> {
    s.split_whitespace().next().and_then(|w| w.parse().ok())
}

/// Parses pgbench's summary (stdout). Works for PostgreSQL 13 to 17 formats.
pub fn parse_summary(text: &str) -> Result<Summary, ParseError> {
    let mut s = Summary::default();
    let mut saw_tps = false;
    let mut saw_latency = false;
    let mut in_statements = false;
    for line in text.lines() {
        if in_statements {
            if let Some(st) = parse_statement_line(line) {
                s.statements.push(st);
                continue;
            }
            in_statements = false;
        }
        let l = line.trim();
        if let Some(v) = after(l, "pgbench (") {
            s.version = Some(v.trim_end_matches(')').to_string());
        } else if let Some(v) = after(l, "transaction type:") {
            s.transaction_type = v.to_string();
        } else if let Some(v) = after(l, "scaling factor:") {
            s.scale = v.parse().ok();
        } else if let Some(v) = after(l, "number of clients:") {
            s.clients = v.parse().ok();
        } else if let Some(v) = after(l, "number of threads:") {
            s.threads = v.parse().ok();
        } else if let Some(v) = after(l, "duration:") {
            s.duration_s = first_number(v);
        } else if let Some(v) = after(l, "number of transactions actually processed:") {
            // "123" or "123/456" when -t was used.
            s.transactions = v
                .split('/')
                .next()
                .and_then(|n| n.trim().parse().ok())
                .ok_or_else(|| ParseError(format!("bad transaction count {v:?}")))?;
        } else if let Some(v) = after(l, "number of failed transactions:") {
            s.failed = first_number(v).map(|f| f as u64).unwrap_or(0);
        } else if let Some(v) = after(l, "number of transactions retried:") {
            s.retried = first_number(v).map(|f| f as u64);
        } else if let Some(v) = after(l, "latency average =") {
            s.latency_avg_ms = first_number(v).ok_or_else(|| ParseError(format!("bad latency {v:?}")))?;
            saw_latency = true;
        } else if let Some(v) = after(l, "latency stddev =") {
            s.latency_stddev_ms = first_number(v);
        } else if let Some(v) = after(l, "initial connection time =") {
            s.initial_connection_ms = first_number(v);
        } else if let Some(v) = after(l, "tps =") {
            // PostgreSQL 13 printed two tps lines (including/excluding connections establishing);
            // 14+ prints one, "without initial connection time". Keep the excluding one.
            if !saw_tps || v.contains("without") || v.contains("excluding") {
                s.tps = first_number(v).ok_or_else(|| ParseError(format!("bad tps {v:?}")))?;
                saw_tps = true;
            }
        } else if l.starts_with("statement latencies in milliseconds") {
            in_statements = true;
        }
    }
    if !saw_tps {
        return Err(ParseError("no \"tps =\" line: pgbench did not finish a run".into()));
    }
    if !saw_latency {
        return Err(ParseError("no \"latency average\" line".into()));
    }
    Ok(s)
}

fn parse_statement_line(line: &str) -> Option<Statement> {
    let t = line.trim_start();
    let mut rest = t;
    let mut nums = Vec::new();
    for _ in 0..3 {
        let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
        let word = &rest[..end];
        match word.parse::<f64>() {
            Ok(v) => {
                nums.push(v);
                rest = rest[end..].trim_start();
            }
            Err(_) => break,
        }
    }
    if nums.is_empty() || rest.is_empty() {
        return None;
    }
    Some(Statement {
        latency_ms: nums[0],
        failures: nums.get(1).map(|v| *v as u64),
        retries: nums.get(2).map(|v| *v as u64),
        text: rest.to_string(),
    })
}

/// One `-P` progress line: `progress: 2.0 s, 944.9 tps, lat 2.112 ms stddev 1.254, 0 failed`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Progress {
    pub t: f64,
    pub tps: f64,
    pub latency_ms: f64,
    pub stddev_ms: Option<f64>,
    pub failed: Option<u64>,
}

/// Parses a progress line; other lines give `None`.
pub fn parse_progress(line: &str) -> Option<Progress> {
    let rest = line.trim().strip_prefix("progress:")?;
    let mut p = Progress { t: 0.0, tps: 0.0, latency_ms: 0.0, stddev_ms: None, failed: None };
    for part in rest.split(',') {
        let words: Vec<&str> = part.split_whitespace().collect();
        match words.as_slice() {
            [v, "s"] => p.t = v.parse().ok()?,
            [v, "tps"] => p.tps = v.parse().ok()?,
            ["lat", v, "ms", "stddev", sd] => {
                p.latency_ms = v.parse().ok()?;
                p.stddev_ms = sd.parse().ok();
            }
            ["lat", v, "ms"] => p.latency_ms = v.parse().ok()?,
            [v, "failed"] => p.failed = v.parse().ok(),
            _ => {}
        }
    }
    Some(p)
}

/// Latencies (µs) from pgbench per-transaction log lines
/// (`client_id transaction_no time script_no time_epoch time_us [schedule_lag] ...`).
/// Failed transactions log `failed` in the time column and are skipped.
pub fn transaction_log_latencies_us(text: &str) -> Vec<u64> {
    text.lines().filter_map(|l| l.split_whitespace().nth(2)).filter_map(|t| t.parse::<u64>().ok()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const TPCB: &str = include_str!("../tests/fixtures/pgbench/pg15-tpcb-r.stdout");
    const TPCB_ERR: &str = include_str!("../tests/fixtures/pgbench/pg15-tpcb-r.stderr");
    const SELECT: &str = include_str!("../tests/fixtures/pgbench/pg15-select-only.stdout");
    const RETRIES: &str = include_str!("../tests/fixtures/pgbench/pg15-simple-update-retries.stdout");
    const PG14: &str = include_str!("../tests/fixtures/pgbench/pg14-seed004.stdout");

    #[test]
    fn summary_with_statements() {
        let s = parse_summary(TPCB).unwrap();
        assert_eq!(s.transaction_type, "<builtin: TPC-B (sort of)>");
        assert_eq!((s.scale, s.clients, s.threads), (Some(2), Some(2), Some(1)));
        assert_eq!(s.transactions, 2946);
        assert_eq!(s.failed, 0);
        assert_eq!(s.latency_avg_ms, 2.027);
        assert_eq!(s.latency_stddev_ms, Some(1.254));
        assert_eq!(s.initial_connection_ms, Some(9.339));
        assert_eq!(s.tps, 984.015263);
        assert_eq!(s.statements.len(), 11);
        let upd = &s.statements[5];
        assert!(upd.text.starts_with("UPDATE pgbench_accounts"));
        assert_eq!((upd.latency_ms, upd.failures), (0.232, Some(0)));
    }

    #[test]
    fn summary_select_only_and_retries_and_pg14() {
        let s = parse_summary(SELECT).unwrap();
        assert_eq!(s.tps, 19745.250384);
        assert!(s.statements.is_empty());
        let r = parse_summary(RETRIES).unwrap();
        assert_eq!(r.retried, Some(0));
        assert_eq!(r.statements[5].retries, Some(0));
        assert!(r.statements[5].text.starts_with("UPDATE pgbench_accounts"));
        let old = parse_summary(PG14).unwrap();
        assert_eq!((old.tps, old.latency_avg_ms, old.transactions), (38150.347817, 1.363, 22881325));
        assert_eq!(old.latency_stddev_ms, None);
    }

    #[test]
    fn truncated_output_is_an_error() {
        let cut: String = TPCB.lines().take(8).collect::<Vec<_>>().join("\n");
        assert!(parse_summary(&cut).is_err());
    }

    #[test]
    fn progress_lines() {
        let lines: Vec<Progress> = TPCB_ERR.lines().filter_map(parse_progress).collect();
        assert_eq!(lines.len(), 3);
        assert_eq!(
            lines[1],
            Progress { t: 2.0, tps: 944.9, latency_ms: 2.112, stddev_ms: Some(1.254), failed: Some(0) }
        );
        let retry =
            parse_progress("progress: 1.0 s, 1437.9 tps, lat 1.373 ms stddev 0.778, 0 failed, 0 retried, 0 retries")
                .unwrap();
        assert_eq!(retry.tps, 1437.9);
        assert!(parse_progress("starting vacuum...end.").is_none());
    }

    #[test]
    fn transaction_log() {
        let v = transaction_log_latencies_us(include_str!("../tests/fixtures/pgbench/pg15-txlog-sampled.txt"));
        assert_eq!(&v[..3], &[1036, 1413, 1577]);
    }

    #[test]
    fn command_lines() {
        let t = Target { socket_dir: Path::new("/run/x"), port: 5433, user: "postgres", database: "pgtier" };
        let o = RunOptions {
            builtin: Builtin::SelectOnly,
            clients: 8,
            threads: 2,
            duration: Duration::from_secs(30),
            progress_s: 1,
            per_statement: true,
            transaction_log: None,
            extra: vec![],
        };
        assert_eq!(
            run_command(Path::new("/usr/lib/postgresql/15/bin"), &t, &o).to_string(),
            "/usr/lib/postgresql/15/bin/pgbench -h /run/x -p 5433 -U postgres --builtin=select-only -c 8 -j 2 -T 30 -P 1 -r pgtier"
        );
    }
}
