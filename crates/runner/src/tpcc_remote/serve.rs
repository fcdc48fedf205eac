//! The driver's side, run on the client host by pgtier's shipped binary (`pgtier tpcc-client`):
//! drive requests read from stdin one line each, one drive at a time, progress and outcome
//! lines on stdout.

use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::{Outcome, PROGRESS, RemoteDrive, Request};

/// Serves drive requests from stdin until it ends: each [`Request::Drive`] is run and answered
/// with progress lines and one [`Outcome`] line on stdout; [`Request::Cancel`] cancels the
/// drive under way, and so does the end of stdin (after which the driver exits). Returns the
/// exit code (0, or 1 when stdout failed or the runtime did not start).
pub fn serve() -> i32 {
    let rt = match tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "tpcc-client: start the tokio runtime: {e}");
            return 1;
        }
    };
    let _ = writeln!(std::io::stderr(), "tpcc-client: serving drives (pid {})", std::process::id());
    let (tx, rx) = std::sync::mpsc::channel::<(RemoteDrive, Arc<AtomicBool>)>();
    std::thread::spawn(move || read_requests(tx));
    for (spec, cancel) in rx {
        let outcome = drive_here(&rt, &spec, &cancel);
        if let Outcome::Failed(e) = &outcome {
            let _ = writeln!(std::io::stderr(), "tpcc-client: {e}");
        }
        let line = serde_json::to_string(&outcome).unwrap_or_else(|e| format!("{{\"failed\":\"serialise: {e}\"}}"));
        let mut out = std::io::stdout().lock();
        if writeln!(out, "{line}").and_then(|()| out.flush()).is_err() {
            return 1;
        }
    }
    0
}

/// Reads requests from stdin: a drive goes to the driver's loop with a cancel flag of its own,
/// which a cancel request, or the end of stdin, raises.
fn read_requests(tx: std::sync::mpsc::Sender<(RemoteDrive, Arc<AtomicBool>)>) {
    let current = Mutex::new(Arc::new(AtomicBool::new(false)));
    for line in std::io::stdin().lock().lines() {
        let Ok(line) = line else { break };
        match serde_json::from_str::<Request>(&line) {
            Ok(Request::Drive(spec)) => {
                let flag = Arc::new(AtomicBool::new(false));
                *current.lock().unwrap() = flag.clone();
                if tx.send((*spec, flag)).is_err() {
                    break;
                }
            }
            Ok(Request::Cancel) => current.lock().unwrap().store(true, Ordering::SeqCst),
            Err(e) => {
                let _ = writeln!(std::io::stderr(), "tpcc-client: a request it cannot read ({e}): {line}");
            }
        }
    }
    current.lock().unwrap().store(true, Ordering::SeqCst);
}

/// One drive against the server, with this process's CPU time over it.
fn drive_here(rt: &tokio::runtime::Runtime, spec: &RemoteDrive, cancel: &AtomicBool) -> Outcome {
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
    let mut on_progress = |p: tpcc::DriveProgress| {
        let line =
            format!("{PROGRESS} {} {} {}", p.elapsed_seconds, p.transactions_per_second, p.new_orders_per_minute);
        let mut out = std::io::stdout().lock();
        // A session that is gone shows here: stop the drive.
        if writeln!(out, "{line}").and_then(|()| out.flush()).is_err() {
            cancel.store(true, Ordering::SeqCst);
        }
    };
    let duration = Duration::from_millis(spec.duration_ms);
    let cpu0 = tpcc::cpu::process_cpu_seconds();
    let run = tpcc::run(&conn, &spec.config, spec.virtual_users, (Duration::ZERO, duration), cancel, &mut on_progress);
    match rt.block_on(run) {
        Ok(mut report) => {
            // The server's processes are another host's: this one cannot see their CPU.
            report.server_cpu_seconds = None;
            Outcome::Report { report: Box::new(report), cpu_seconds: tpcc::cpu::process_cpu_seconds() - cpu0 }
        }
        Err(tpcc::TpccError::Cancelled) => Outcome::Cancelled,
        Err(e) => Outcome::Failed(e.to_string()),
    }
}

/// The password of the first line of a password file (libpq's format: `host:port:db:user:pw`,
/// `*` matching anything, `\:` and `\\` escaped) that matches.
pub(super) fn password_for(text: &str, host: &str, port: u16, database: &str, user: &str) -> Option<String> {
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
