//! A TPC-C drive on the client host (`[[host]] roles = ["client"]`). pgtier's own binary,
//! shipped to the host for the run, runs the `tpcc` crate's driver there against the server
//! over TCP, authenticated by scram-sha-256 (`pgtier tpcc-client --spec JSON`, hidden from
//! `--help`): its progress goes to stderr, one line a second, and when it ends it prints one
//! JSON line on stdout, the drive's report (exactly what a local drive returns) or why it
//! failed. The runner starts it through its [`ClientTransport`](crate::env::ClientTransport),
//! like a remote pgbench (wrapped so that the host's shell reports its CPU time), and knows
//! nothing of ssh. The password is read on the host from the run's password file (mode 0600,
//! `PGPASSFILE`'s format), never from a command line.
//!
//! The driver stops by itself at the end of its drive, and cancels the drive and exits as
//! soon as its stdin closes: the runner holds the write end of the local ssh's stdin and closes
//! it to stop the drive (Ctrl-C, the watchdog), and it closes with the harness when that is
//! killed. Killing the local ssh alone would not do: over a multiplexed connection the master
//! holds the session's standard streams, and the session would last until the drive's end. A
//! progress line that fails to write (the session is gone) cancels it too.

use std::io::Write;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use journal::CommandLine;
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncBufReadExt, BufReader, Lines};
use tokio::process::{Child, ChildStderr, ChildStdin};

use crate::RunnerError;
use crate::env::{RemoteClient, RunnerEnv};
use crate::error::IoContext;
use crate::execute::Observer;
use crate::supervisor::{Stop, Supervised, Watch, supervise};
use crate::tpcc_run::{Drive, live_line};

/// The hidden subcommand of pgtier's binary that runs a drive on the client host.
pub const SUBCOMMAND: &str = "tpcc-client";
/// The first word of the driver's progress lines on stderr.
const PROGRESS: &str = "tpcc-progress";

/// What the driver on the client host is asked to do; its JSON is the subcommand's argument.
/// It holds no secret: the password is in the file `passfile` names.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RemoteDrive {
    /// The server's address facing the client host.
    pub address: IpAddr,
    /// The server's port.
    pub port: u16,
    /// The benchmark role.
    pub user: String,
    /// The database holding the TPC-C tables.
    pub database: String,
    /// The password file on the host (`hostname:port:database:username:password` lines).
    pub passfile: String,
    /// What to drive.
    pub config: tpcc::TpccConfig,
    /// Virtual users.
    pub virtual_users: u32,
    /// The drive's length (no ramp-up inside it: the runner's ramp-up is a drive of its own).
    pub duration_ms: u64,
}

/// What the driver prints on stdout when it ends, as one JSON line.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The drive finished: its report.
    Report(Box<tpcc::DriveReport>),
    /// The drive failed, and why.
    Failed(String),
    /// The drive was cancelled (its session was lost).
    Cancelled,
}

impl RemoteDrive {
    /// The words that run this drive on the host: `driver` (the shipped binary, with its
    /// environment) followed by the subcommand and the specification.
    pub fn words(&self, driver: &[String]) -> Vec<String> {
        let mut w = driver.to_vec();
        w.push(SUBCOMMAND.into());
        w.push("--spec".into());
        w.push(serde_json::to_string(self).expect("a drive's specification serialises"));
        w
    }
}

/// Runs the drive `spec_json` asks for, on this machine (the client host), and prints its
/// [`Outcome`] as one JSON line on stdout; returns the exit code (0: a report, 1: failed,
/// 130: cancelled).
pub fn serve(spec_json: &str) -> i32 {
    let outcome = match serde_json::from_str::<RemoteDrive>(spec_json) {
        Err(e) => Outcome::Failed(format!("the drive's specification: {e}")),
        Ok(spec) => drive_here(&spec),
    };
    let code = match &outcome {
        Outcome::Report(_) => 0,
        Outcome::Failed(e) => {
            let _ = writeln!(std::io::stderr(), "tpcc-client: {e}");
            1
        }
        Outcome::Cancelled => 130,
    };
    let line = serde_json::to_string(&outcome).unwrap_or_else(|e| format!("{{\"failed\":\"serialise: {e}\"}}"));
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}").and_then(|()| out.flush());
    code
}

fn drive_here(spec: &RemoteDrive) -> Outcome {
    let text = match std::fs::read_to_string(&spec.passfile) {
        Ok(t) => t,
        Err(e) => return Outcome::Failed(format!("read the password file {}: {e}", spec.passfile)),
    };
    let Some(password) = password_for(&text, &spec.address.to_string(), spec.port, &spec.database, &spec.user) else {
        return Outcome::Failed(format!(
            "the password file {} has no line for {}:{} as role {}",
            spec.passfile, spec.address, spec.port, spec.user
        ));
    };
    let conn = tpcc::ConnectSpec {
        socket_dir: PathBuf::new(),
        port: spec.port,
        user: spec.user.clone(),
        database: spec.database.clone(),
        tcp: Some(tpcc::TcpTarget { address: spec.address, password }),
    };
    let rt = match tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build() {
        Ok(rt) => rt,
        Err(e) => return Outcome::Failed(format!("start the tokio runtime: {e}")),
    };
    let cancel = Arc::new(AtomicBool::new(false));
    watch_stdin(cancel.clone());
    let mut on_progress = |p: tpcc::DriveProgress| {
        let line =
            format!("{PROGRESS} {} {} {}", p.elapsed_seconds, p.transactions_per_second, p.new_orders_per_minute);
        // A session that is gone (Ctrl-C, cleanup) shows here: stop the drive.
        if writeln!(std::io::stderr(), "{line}").is_err() {
            cancel.store(true, Ordering::SeqCst);
        }
    };
    let duration = Duration::from_millis(spec.duration_ms);
    let run = tpcc::run(&conn, &spec.config, spec.virtual_users, Duration::ZERO, duration, &cancel, &mut on_progress);
    match rt.block_on(run) {
        Ok(mut report) => {
            // The server's processes are another host's: this one cannot see their CPU.
            report.server_cpu_seconds = None;
            Outcome::Report(Box::new(report))
        }
        Err(tpcc::TpccError::Cancelled) => Outcome::Cancelled,
        Err(e) => Outcome::Failed(e.to_string()),
    }
}

/// Raises `cancel` when stdin reaches its end or fails: the runner closed it (or died).
fn watch_stdin(cancel: Arc<AtomicBool>) {
    std::thread::spawn(move || {
        use std::io::Read;
        let mut buf = [0u8; 64];
        let mut stdin = std::io::stdin();
        while matches!(stdin.read(&mut buf), Ok(n) if n > 0) {}
        cancel.store(true, Ordering::SeqCst);
    });
}

/// The password of the first line of a password file (libpq's format: `host:port:db:user:pw`,
/// `*` matching anything, `\:` and `\\` escaped) that matches.
fn password_for(text: &str, host: &str, port: u16, database: &str, user: &str) -> Option<String> {
    let port = port.to_string();
    text.lines().filter(|l| !l.starts_with('#')).find_map(|line| {
        let fields = split_unescaped(line);
        let [h, p, d, u, pw] = fields.as_slice() else { return None };
        let ok = |f: &String, v: &str| f == "*" || f == v;
        (ok(h, host) && ok(p, &port) && ok(d, database) && ok(u, user)).then(|| pw.clone())
    })
}

fn split_unescaped(line: &str) -> Vec<String> {
    let (mut fields, mut cur, mut chars) = (Vec::new(), String::new(), line.chars());
    while let Some(c) = chars.next() {
        match c {
            '\\' => cur.extend(chars.next()),
            ':' if fields.len() < 4 => fields.push(std::mem::take(&mut cur)),
            c => cur.push(c),
        }
    }
    fields.push(cur);
    fields
}

/// The driver on the host as the supervisor sees it: the local ssh's stderr read line by line
/// (progress lines passed on) until it closes, then its exit status.
struct RemoteDriver {
    child: Child,
    /// The write end of the driver's stdin: dropped to stop it.
    stdin: Option<ChildStdin>,
    pid: Option<u32>,
    lines: Lines<BufReader<ChildStderr>>,
    closed: bool,
    stderr: String,
    progress: Vec<tpcc::DriveProgress>,
    reported: usize,
    ramp_up: bool,
}

impl Supervised for RemoteDriver {
    type Output = std::io::Result<ExitStatus>;

    async fn step(&mut self) -> Option<std::io::Result<ExitStatus>> {
        if !self.closed {
            match self.lines.next_line().await {
                Ok(Some(l)) => {
                    match parse_progress(&l, self.ramp_up) {
                        Some(p) => self.progress.push(p),
                        None => {
                            self.stderr.push_str(&l);
                            self.stderr.push('\n');
                        }
                    }
                    return None;
                }
                _ => self.closed = true,
            }
        }
        Some(self.child.wait().await)
    }

    fn report(&mut self, obs: &mut dyn Observer) {
        for p in &self.progress[self.reported..] {
            obs.live(&live_line(p, self.ramp_up));
        }
        self.reported = self.progress.len();
    }

    fn stop(&mut self, _why: Stop) {
        // The driver's stdin closes: it cancels its drive and exits, and the session ends.
        self.stdin = None;
    }

    fn client_pid(&self) -> Option<u32> {
        self.pid
    }
}

fn parse_progress(line: &str, ramp_up: bool) -> Option<tpcc::DriveProgress> {
    let rest = line.strip_prefix(PROGRESS)?;
    let v: Vec<f64> = rest.split_whitespace().map(str::parse).collect::<Result<_, _>>().ok()?;
    let [elapsed_seconds, transactions_per_second, new_orders_per_minute] = v[..] else { return None };
    Some(tpcc::DriveProgress { elapsed_seconds, in_ramp_up: ramp_up, transactions_per_second, new_orders_per_minute })
}

/// The command that runs `spec` on the client host (the shipped binary, wrapped so that the
/// host's shell reports its CPU time).
pub(crate) fn command(client: &RemoteClient, spec: &RemoteDrive) -> Result<CommandLine, RunnerError> {
    let Some(driver) = &client.tpcc_driver else {
        return Err(RunnerError::Workload(format!(
            "pgtier's binary was not shipped to client host {}: the TPC-C driver cannot run there",
            client.transport.host()
        )));
    };
    let words = spec.words(driver);
    Ok(client.wrap(&CommandLine::new(&words[0]).args(&words[1..])))
}

/// Runs `cmd` (from [`command`]) under the supervisor, keeping what it printed in
/// `<prefix>.stdout` and `<prefix>.stderr`; the drive's report, or why there is none, and
/// the CPU time the host's shell reported.
pub(crate) async fn drive(
    env: &RunnerEnv<'_>,
    cmd: &CommandLine,
    watch: Watch<'_>,
    obs: &mut dyn Observer,
    ramp_up: bool,
    prefix: &Path,
) -> Result<Drive, RunnerError> {
    let with_ext = |ext: &str| -> PathBuf { PathBuf::from(format!("{}.{ext}", prefix.display())) };
    let (stdout_path, stderr_path) = (with_ext("stdout"), with_ext("stderr"));
    let stdout_file = std::fs::File::create(&stdout_path).io_context(|| format!("create {}", stdout_path.display()))?;
    let label = "the TPC-C driver on the client host";
    let (mut child, record) = env.spawn_client_with_stdin(cmd, Stdio::piped(), Stdio::from(stdout_file), label)?;
    let lines = BufReader::new(child.stderr.take().expect("piped")).lines();
    let pid = child.id();
    let mut work = RemoteDriver {
        stdin: child.stdin.take(),
        child,
        pid,
        lines,
        closed: false,
        stderr: String::new(),
        progress: Vec::new(),
        reported: 0,
        ramp_up,
    };
    let run = supervise(env, watch, &mut work, obs).await;
    if let Some(r) = record {
        let _ = env.journal.release(r);
    }
    std::fs::write(&stderr_path, &work.stderr).io_context(|| format!("write {}", stderr_path.display()))?;
    if run.stopped == Some(Stop::Cancelled) {
        return Err(RunnerError::Cancelled);
    }
    let status = run.output.io_context(|| "wait for the TPC-C driver's ssh".into())?;
    let watchdog = (run.stopped == Some(Stop::Watchdog)).then(|| {
        format!(
            "the TPC-C driver on the client host did not finish within {} s of a {} s run and was stopped by the watchdog",
            run.limit.as_secs(),
            watch.duration.as_secs()
        )
    });
    let stdout = std::fs::read_to_string(&stdout_path).unwrap_or_default();
    let (report, error) = read_outcome(&stdout, &work.stderr, &crate::diagnose::exit_text(&status));
    let cpu = crate::env::remote_cpu_seconds(&work.stderr);
    Ok(Drive { report, error, injected: run.injected, watchdog, cpu })
}

/// The report in the driver's last stdout line, or why there is none.
fn read_outcome(stdout: &str, stderr: &str, exit: &str) -> (Option<tpcc::DriveReport>, Option<String>) {
    let last = stdout.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("");
    match serde_json::from_str::<Outcome>(last) {
        Ok(Outcome::Report(r)) => (Some(*r), None),
        Ok(Outcome::Failed(e)) => (None, Some(format!("on the client host: {e}"))),
        Ok(Outcome::Cancelled) => (None, Some("the driver on the client host lost its session and stopped".into())),
        Err(_) => {
            let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
            let tail = lines[lines.len().saturating_sub(5)..].join(" | ");
            (None, Some(format!("the driver on the client host ended ({exit}) without a report: {tail}")))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_password_file_line_that_matches() {
        let text = "# comment\n10.0.0.1:*:*:other:no\n10.0.0.1:*:*:postgres:s3cr\\:et\n*:*:*:*:late\n";
        assert_eq!(password_for(text, "10.0.0.1", 5433, "pgtier", "postgres").as_deref(), Some("s3cr:et"));
        assert_eq!(password_for(text, "10.0.0.2", 5433, "pgtier", "postgres").as_deref(), Some("late"));
        assert_eq!(password_for("fe80\\:\\:1:5432:db:u:p:w\n", "fe80::1", 5432, "db", "u").as_deref(), Some("p:w"));
        assert_eq!(password_for("10.0.0.1:5432:*:u:p\n", "10.0.0.1", 5433, "db", "u"), None);
    }

    #[test]
    fn the_specification_goes_on_the_command_line_and_back_without_a_password() {
        let spec = RemoteDrive {
            address: "169.254.0.1".parse().unwrap(),
            port: 5433,
            user: "postgres".into(),
            database: "pgtier".into(),
            passfile: "/tmp/pgtier-x/pgpass".into(),
            config: tpcc::TpccConfig::new(2),
            virtual_users: 2,
            duration_ms: 3000,
        };
        let words = spec.words(&["env".into(), "/tmp/pgtier-x/pgtier".into()]);
        assert_eq!(&words[..4], ["env", "/tmp/pgtier-x/pgtier", SUBCOMMAND, "--spec"]);
        assert_eq!(serde_json::from_str::<RemoteDrive>(&words[4]).unwrap(), spec);
        let mut config = tpcc::TpccConfig::new(4);
        (config.mode, config.side, config.all_warehouses) = (tpcc::Mode::HammerDb, tpcc::Side::ClientSql, true);
        let other = RemoteDrive { config, ..spec };
        let json = &other.words(&[])[2];
        assert!(json.contains(r#""mode":"hammerdb","side":"client-sql""#), "{json}");
        assert_eq!(serde_json::from_str::<RemoteDrive>(json).unwrap(), other);
    }

    #[test]
    fn progress_lines_and_outcomes() {
        let p = parse_progress("tpcc-progress 3 120.5 4000", false).unwrap();
        assert_eq!((p.elapsed_seconds, p.transactions_per_second, p.new_orders_per_minute), (3.0, 120.5, 4000.0));
        assert!(parse_progress("tpcc-progress 3 x 1", false).is_none() && parse_progress("other", true).is_none());
        let (r, e) = read_outcome("{\"failed\":\"connect: refused\"}\n", "", "exit code 1");
        assert!(r.is_none() && e.unwrap().contains("connect: refused"));
        let (_, e) = read_outcome("", "sh: 1: /tmp/x/pgtier: not found\n0m0.0s 0m0.0s\n", "exit code 127");
        assert!(e.unwrap().contains("ended (exit code 127) without a report: sh: 1: /tmp/x/pgtier: not found"));
    }
}
