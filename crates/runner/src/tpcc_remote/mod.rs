//! TPC-C drives on the client host (`[[host]] roles = ["client"]`). pgtier's own binary,
//! shipped to the host for the run, runs the `tpcc` crate's driver there against the server
//! over TCP, authenticated by scram-sha-256 (`pgtier tpcc-client`, hidden from `--help`).
//!
//! One driver process serves the whole run, started at the first drive over one ssh session
//! and kept up across drives (the ramp-up and measured drives of every run, every slice of a
//! `slices` session): a line protocol over the session's stdin and stdout. The runner writes a
//! [`Request`] per line (a drive, or cancel the drive under way); the driver answers each drive
//! with progress lines (one a second) and one [`Outcome`] line: the drive's report, exactly
//! what a local drive returns, with the driver's CPU time over the drive, or why it failed. The
//! runner starts the session through its [`ClientTransport`](crate::env::ClientTransport) and
//! knows nothing of ssh. The password is read on the host from the run's password file (mode
//! 0600, `PGPASSFILE`'s format), never from a command line or the session.
//!
//! The driver exits when its stdin ends: when the runner's session object is dropped, when the
//! harness dies (SIGKILL: the write end closes with it), or when the ssh connection goes
//! (teardown or `cargo xtask cleanup` close the master). Killing the local ssh would not do: over
//! a multiplexed connection the master holds the session's standard streams.

mod serve;

use std::io::Write;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};

use journal::CommandLine;
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncBufReadExt, BufReader};

use crate::RunnerError;
use crate::env::{RemoteClient, RunnerEnv};
use crate::error::IoContext;
use crate::run_inputs::Observer;
use crate::supervisor::{Stop, Supervised, Watch, supervise};
use crate::tpcc_drive::{Drive, live_line};

pub mod driver;
use driver::Session;
pub use driver::TpccDriver;

pub use serve::serve;

/// The hidden subcommand of pgtier's binary that serves drives on the client host.
pub const SUBCOMMAND: &str = "tpcc-client";
/// The first word of the driver's progress lines.
const PROGRESS: &str = "tpcc-progress";

/// One drive the driver on the client host is asked for. It holds no secret: the password is
/// in the file `passfile` names.
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

/// A line the runner writes to the driver.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Request {
    /// Run this drive.
    Drive(Box<RemoteDrive>),
    /// Cancel the drive under way (it answers [`Outcome::Cancelled`]).
    Cancel,
}

/// The driver's answer to a drive, one JSON line.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The drive finished: its report, and the driver's CPU seconds (user + system, all its
    /// threads) from the request to the report, connections included.
    Report { report: Box<tpcc::DriveReport>, cpu_seconds: f64 },
    /// The drive failed, and why.
    Failed(String),
    /// The drive was cancelled.
    Cancelled,
}

/// The command that starts the driver on the client host (the shipped binary, with a minimal
/// environment and the password file's path).
pub(crate) fn session_command(client: &RemoteClient) -> Result<CommandLine, RunnerError> {
    let Some(driver) = &client.tpcc_driver else {
        return Err(RunnerError::Workload(format!(
            "pgtier's binary was not shipped to client host {}: the TPC-C driver cannot run there",
            client.transport.host()
        )));
    };
    let mut words = driver.words.clone();
    words.push(SUBCOMMAND.into());
    Ok(client.wrap(&CommandLine::new(&words[0]).args(&words[1..])))
}

/// Starts the driver session: in the run record (its local ssh) until the run's teardown.
fn start(env: &RunnerEnv<'_>, client: &RemoteClient) -> Result<Session, RunnerError> {
    let cmd = session_command(client)?;
    let label = "the TPC-C driver on the client host";
    let (mut child, _record) = env.spawn_client_with_stdin(&cmd, Stdio::piped(), Stdio::piped(), label)?;
    let stdin = child.stdin.take().expect("piped").into_owned_fd().io_context(|| "the driver's stdin".into())?;
    let stdout = BufReader::new(child.stdout.take().expect("piped")).lines();
    let mut err_lines = BufReader::new(child.stderr.take().expect("piped")).lines();
    let stderr = Arc::new(Mutex::new(String::new()));
    let sink = stderr.clone();
    tokio::spawn(async move {
        while let Ok(Some(l)) = err_lines.next_line().await {
            let mut s = sink.lock().unwrap();
            s.push_str(&l);
            s.push('\n');
        }
    });
    let pid = child.id();
    Ok(Session { _child: child, stdin: std::fs::File::from(stdin), stdout, stderr, pid })
}

/// A drive on the host as the supervisor sees it: the driver's stdout lines until its outcome.
struct DriveOnHost<'s> {
    session: &'s mut Session,
    /// What the driver printed on stdout for this drive.
    lines: String,
    progress: Vec<tpcc::DriveProgress>,
    reported: usize,
    ramp_up: bool,
}

impl Supervised for DriveOnHost<'_> {
    type Output = Result<Outcome, String>;

    async fn step(&mut self) -> Option<Result<Outcome, String>> {
        match self.session.stdout.next_line().await {
            Ok(Some(l)) => {
                self.lines.push_str(&l);
                self.lines.push('\n');
                if let Some(p) = parse_progress(&l, self.ramp_up) {
                    self.progress.push(p);
                    return None;
                }
                serde_json::from_str::<Outcome>(&l).ok().map(Ok)
            }
            Ok(None) => Some(Err("its session ended".into())),
            Err(e) => Some(Err(format!("read its output: {e}"))),
        }
    }

    fn report(&mut self, obs: &mut dyn Observer) {
        for p in &self.progress[self.reported..] {
            obs.live(&live_line(p, self.ramp_up));
        }
        self.reported = self.progress.len();
    }

    fn stop(&mut self, _why: Stop) {
        let _ = send(&mut self.session.stdin, &Request::Cancel);
    }

    fn client_pid(&self) -> Option<u32> {
        self.session.pid
    }
}

fn send(stdin: &mut std::fs::File, request: &Request) -> std::io::Result<()> {
    let line = serde_json::to_string(request).expect("a request serialises");
    stdin.write_all(format!("{line}\n").as_bytes())
}

fn parse_progress(line: &str, ramp_up: bool) -> Option<tpcc::DriveProgress> {
    let rest = line.strip_prefix(PROGRESS)?;
    let v: Vec<f64> = rest.split_whitespace().map(str::parse).collect::<Result<_, _>>().ok()?;
    let [elapsed_seconds, transactions_per_second, new_orders_per_minute] = v[..] else { return None };
    Some(tpcc::DriveProgress { elapsed_seconds, in_ramp_up: ramp_up, transactions_per_second, new_orders_per_minute })
}

/// Runs `spec` on the client host under the supervisor (starting the driver session if it is
/// not up), keeping what the driver printed for it in `<prefix>.stdout` and `<prefix>.stderr`;
/// the drive's report, or why there is none, and the driver's CPU time over the drive.
pub(crate) async fn drive(
    env: &RunnerEnv<'_>,
    client: &RemoteClient,
    (spec, ramp_up): (&RemoteDrive, bool),
    watch: Watch<'_>,
    obs: &mut dyn Observer,
    prefix: &Path,
) -> Result<Drive, RunnerError> {
    session_command(client)?;
    let driver = client.tpcc_driver.as_ref().expect("session_command checked it");
    let mut guard = driver.session.lock().await;
    if guard.is_none() {
        *guard = Some(start(env, client)?);
    }
    let session = guard.as_mut().expect("just started");
    let err_start = session.stderr.lock().unwrap().len();
    let sent = send(&mut session.stdin, &Request::Drive(Box::new(spec.clone())));
    let mut work = DriveOnHost { session, lines: String::new(), progress: Vec::new(), reported: 0, ramp_up };
    let run = match sent {
        Ok(()) => Some(supervise(env, watch, &mut work, obs).await),
        Err(_) => None,
    };
    let stderr = work.session.stderr.lock().unwrap().get(err_start..).unwrap_or_default().to_string();
    let with_ext = |ext: &str| -> PathBuf { PathBuf::from(format!("{}.{ext}", prefix.display())) };
    for (ext, text) in [("stdout", &work.lines), ("stderr", &stderr)] {
        std::fs::write(with_ext(ext), text).io_context(|| format!("write {}", with_ext(ext).display()))?;
    }
    let Some(run) = run else {
        *guard = None;
        return Ok(lost(&stderr, "its session is gone", Vec::new(), None));
    };
    if run.stopped == Some(Stop::Cancelled) {
        return Err(RunnerError::Cancelled);
    }
    let watchdog = (run.stopped == Some(Stop::Watchdog)).then(|| {
        format!(
            "the TPC-C driver on the client host did not finish within {} s of a {} s run and was stopped by the watchdog",
            run.limit.as_secs(),
            watch.duration.as_secs()
        )
    });
    let injected = run.injected;
    Ok(match run.output {
        Ok(Outcome::Report { report, cpu_seconds }) => {
            Drive { report: Some(*report), error: None, injected, watchdog, cpu: Some(cpu_seconds) }
        }
        Ok(Outcome::Failed(e)) => {
            Drive { report: None, error: Some(format!("on the client host: {e}")), injected, watchdog, cpu: None }
        }
        Ok(Outcome::Cancelled) => {
            let e = "the driver on the client host cancelled the drive".to_string();
            Drive { report: None, error: Some(e), injected, watchdog, cpu: None }
        }
        Err(why) => {
            // The session is unusable: the next drive starts another.
            *guard = None;
            lost(&stderr, &why, injected, watchdog)
        }
    })
}

/// A drive whose driver session broke: why, with the tail of what the driver said.
fn lost(stderr: &str, why: &str, injected: Vec<String>, watchdog: Option<String>) -> Drive {
    let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    let tail = lines[lines.len().saturating_sub(5)..].join(" | ");
    let error = format!("the TPC-C driver on the client host gave no report ({why}): {tail}");
    Drive { report: None, error: Some(error), injected, watchdog, cpu: None }
}

#[cfg(test)]
mod tests {
    use super::serve::password_for;
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
    fn requests_carry_the_drive_without_a_password() {
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
        let mut config = tpcc::TpccConfig::new(4);
        (config.mode, config.side, config.all_warehouses) = (tpcc::Mode::HammerDb, tpcc::Side::ClientSql, true);
        let other = RemoteDrive { config, ..spec.clone() };
        for s in [spec, other] {
            let line = serde_json::to_string(&Request::Drive(Box::new(s.clone()))).unwrap();
            assert!(line.starts_with(r#"{"drive":{"address":"169.254.0.1","port":5433,"#), "{line}");
            match serde_json::from_str::<Request>(&line).unwrap() {
                Request::Drive(d) => assert_eq!(*d, s),
                r => panic!("{r:?}"),
            }
        }
        assert!(serde_json::to_string(&Request::Cancel).unwrap() == r#""cancel""#);
        assert!(matches!(serde_json::from_str::<Request>(r#""cancel""#), Ok(Request::Cancel)));
    }

    #[test]
    fn progress_lines_and_outcomes() {
        let p = parse_progress("tpcc-progress 3 120.5 4000", false).unwrap();
        assert_eq!((p.elapsed_seconds, p.transactions_per_second, p.new_orders_per_minute), (3.0, 120.5, 4000.0));
        assert!(parse_progress("tpcc-progress 3 x 1", false).is_none() && parse_progress("other", true).is_none());
        assert!(matches!(serde_json::from_str::<Outcome>(r#"{"failed":"connect: refused"}"#), Ok(Outcome::Failed(_))));
        assert!(matches!(serde_json::from_str::<Outcome>(r#""cancelled""#), Ok(Outcome::Cancelled)));
        let d = lost("sh: 1: /tmp/x/pgtier: not found\n", "its session ended", vec![], None);
        assert!(d.error.unwrap().contains("gave no report (its session ended): sh: 1: /tmp/x/pgtier: not found"));
    }
}
