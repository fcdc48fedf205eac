//! The TPC-C driver on a client host (`[[host]] roles = ["client"]`, `kind = "tpcc"`), for
//! real: the "host" is a network namespace of this machine with its own OpenSSH server (see
//! `common/ssh_host.rs`). pgtier ships its own binary there over the ssh connection and runs its
//! hidden `tpcc-client` subcommand there, one driver session for the run serving every drive
//! (ramp-ups, measured drives, slices) over the session's stdin and stdout; the driver
//! reaches PostgreSQL over TCP at the server's address facing the namespace, authenticated by
//! scram-sha-256 with the run's password read from the mode-0600 password file on the host.
//!
//! What this simulates: the host's network stack, its SSH server, the whole transport, the
//! binary's copy and start there, and pg_hba.conf's admission of exactly the host's address.
//! What it cannot: the namespace shares this machine's kernel, CPUs, filesystem and C library
//! (so the shipped binary always starts, and its processes show in this machine's /proc), and
//! the round trip is a veth's. Needs root and openssh-server; PGTIER_SKIP_ROOT_TESTS=1 skips it.

mod common;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use common::ssh_host::*;
use common::*;

const EXPERIMENT: &str = r#"
[experiment]
name = "remote-tpcc"
description = "integration test: the TPC-C driver on a client host"
device_probe = "0s"
baseline = "disk"
repetitions = 1

[postgres]
profiles = ["default"]
memory_limits = ["256MiB"]
[postgres.settings]
log_connections = "on"

[[device]]
name = "disk"
class = "nvme"
path = "/dev/disk/by-id/not-used-when-emulating"
[device.emulate]
size = "768MiB"

[[placement]]
name = "disk"
data = "disk"
wal = "disk"

[[workload]]
name = "tpcc"
kind = "tpcc"
warehouses = 1
load_workers = 1
clients = [2]
duration = "3s"
ramp_up = "1s"

[[host]]
name = "loadgen"
address = "CLIENT_ADDRESS"
identity_file = "KEY_DIR/id_ed25519"
known_hosts = "KEY_DIR/known_hosts"
roles = ["client"]
"#;

fn experiment(env: &Env, host: &NsHost, keys: &Path, duration: &str) -> PathBuf {
    env.write(
        "remote-tpcc.toml",
        &EXPERIMENT
            .replace("CLIENT_ADDRESS", &host.address)
            .replace("KEY_DIR", &keys.display().to_string())
            .replace("duration = \"3s\"", &format!("duration = \"{duration}\"")),
    )
}

fn compare(env: &Env, cfg: &Path, out: &Path) {
    let t0 = Instant::now();
    let o = env
        .xtask(&["compare", "--config", cfg.to_str().unwrap(), "--emulate", "--out", out.to_str().unwrap()])
        .output()
        .unwrap();
    let (stdout, stderr) = text(&o);
    assert!(o.status.success(), "compare failed\nstdout:\n{stdout}\nstderr:\n{stderr}");
    eprintln!("compare took {:.0} s\n{stderr}", t0.elapsed().as_secs_f64());
}

/// The run's password is nowhere in the results nor the run record (the server log holds at
/// most its SCRAM verifier), and no password file line either.
fn assert_no_password(out: &Path, state: &Path) {
    for f in walk(out).into_iter().chain(walk(state)) {
        let Ok(bytes) = std::fs::read(&f) else { continue };
        let text = String::from_utf8_lossy(&bytes).into_owned();
        assert!(!text.contains(":*:*:postgres:"), "a password file line in {}", f.display());
        for (i, _) in text.match_indices("PASSWORD '") {
            assert!(text[i..].starts_with("PASSWORD 'SCRAM-SHA-256$"), "a password in {}", f.display());
        }
    }
}

/// A TPC-C driver (the shipped binary's `tpcc-client`) still running anywhere on the machine.
fn driver_running() -> bool {
    std::fs::read_dir("/proc").unwrap().flatten().any(|e| {
        std::fs::read(e.path().join("cmdline")).is_ok_and(|c| {
            let c = String::from_utf8_lossy(&c).replace('\0', " ");
            c.ends_with("/pgtier tpcc-client ")
        })
    })
}

fn wait_for_no_driver() {
    let t0 = Instant::now();
    while driver_running() && t0.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(!driver_running(), "the TPC-C driver still runs on the host");
    eprintln!("no driver on the host (waited {:.1} s)", t0.elapsed().as_secs_f64());
}

#[test]
fn tpcc_runs_on_a_client_host_over_ssh_and_tcp() {
    let Some(t) = one_host(0) else { return };
    let OneHost { env, keys, host, .. } = &t;
    let out = env.dir.path().join("results");
    compare(env, &experiment(env, host, keys, "3s"), &out);

    // The manifest and the report say where the TPC-C client ran.
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("manifest.json")).unwrap()).unwrap();
    let client = &manifest["client"];
    assert_eq!(client["host"], "loadgen", "{client}");
    assert_eq!(client["server_address"], host.server_address.as_str());
    let remote_dir = client["work_dir"].as_str().unwrap().to_string();
    let driver = client["tpcc_driver"].as_str().expect("the shipped driver in the manifest");
    assert!(driver.contains(&format!("{remote_dir}/pgtier, shipped for the run")), "{driver}");
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(report.contains("| TPC-C client | the TPC-C driver ran on loadgen:"), "{report}");

    // The drive ran on the host, over TCP to the server's address facing it, by scram-sha-256.
    let runs = csv_rows(&out.join("runs.csv"));
    assert_eq!(runs.len(), 1);
    let run_dir = out.join("runs").join(&runs[0]["run_id"]);
    let command = std::fs::read_to_string(run_dir.join("command.txt")).unwrap();
    let facing = format!("{}:", host.server_address);
    assert!(command.starts_with("pgtier TPC-C driver on client host loadgen, over TCP to "), "{command}");
    assert!(command.contains(&facing), "{command}");
    assert!(command.contains(&format!("root@{} --", host.address)) && command.contains("tpcc-client"), "{command}");
    let log = std::fs::read_to_string(run_dir.join("postgres.log")).unwrap();
    assert!(log.contains(&format!("connection received: host={}", host.address)), "no TCP connection:\n{log}");
    assert!(log.contains("method=scram-sha-256"), "scram-sha-256 authentication:\n{log}");
    assert!(log.contains("application_name=pgtier-tpcc"), "the virtual users' connections:\n{log}");
    let nopm: f64 = runs[0]["nopm"].parse().unwrap();
    assert!(nopm > 0.0, "NOPM {nopm}");

    // What the runner recorded: the driver's report, its per-second series, the host's CPU.
    let result: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run_dir.join("result.json")).unwrap()).unwrap();
    assert!(result["metrics"]["tpm"].as_f64().unwrap() > 0.0, "{}", result["metrics"]);
    assert!(result["series"].as_array().is_some_and(|s| s.len() >= 2), "{}", result["series"]);
    assert!(result["statements"].to_string().contains("TPC-C new_order"), "{}", result["statements"]);
    assert!(result["cpu"]["client_cpu_s"].as_f64().unwrap() > 0.0, "{}", result["cpu"]);
    assert!(!result["warnings"].to_string().contains("did not report"), "{}", result["warnings"]);
    let drive: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run_dir.join("tpcc-report.json")).unwrap()).unwrap();
    assert_eq!(drive["virtual_users"], 2);
    assert!(drive["server_cpu_seconds"].is_null(), "the host cannot see the server's CPU: {drive}");
    let answer = std::fs::read_to_string(run_dir.join("tpcc.stdout")).unwrap();
    assert!(answer.lines().last().unwrap().starts_with(r#"{"report":{"report":{"#), "{answer}");
    assert!(answer.lines().any(|l| l.starts_with("tpcc-progress ")), "{answer}");

    assert_no_password(&out, &env.state());
    assert!(control_sockets(&env.state()).is_empty(), "control sockets left");
    assert!(!Path::new(&remote_dir).exists(), "the run's directory on the host is left: {remote_dir}");
    wait_for_no_driver();
    assert_nothing_left(&env.state());
}

/// The `slices` design: both placements' servers up at once, every warm-up and slice a drive
/// of the one driver session on the host, against each server's own port.
#[test]
fn tpcc_slices_run_on_the_client_host() {
    let Some(t) = one_host(1) else { return };
    let OneHost { env, keys, host, .. } = &t;
    let sliced = std::fs::read_to_string(experiment(env, host, keys, "3s")).unwrap().replace(
        "[postgres]",
        "[measurement]\ndesign = \"slices\"\nslice = \"2s\"\nwarm_up = \"1s\"\nmin_rounds = 2\nbudget = \"8s\"\ntarget_halfwidth = \"80%\"\n\n[postgres]",
    )
    .replace("log_connections = \"on\"", "log_connections = \"on\"\nmax_wal_size = \"64MB\"")
        + "\n[[placement]]\nname = \"disk2\"\ndata = \"disk\"\nwal = \"disk\"\n";
    let cfg = env.write("sliced.toml", &sliced);
    let out = env.dir.path().join("results");
    compare(env, &cfg, &out);
    let runs = csv_rows(&out.join("runs.csv"));
    assert!(runs.len() >= 4, "at least 2 rounds of 2 placements: {}", runs.len());
    let mut ports = std::collections::BTreeSet::new();
    for r in &runs {
        let command = std::fs::read_to_string(out.join("runs").join(&r["run_id"]).join("command.txt")).unwrap();
        assert!(command.starts_with("pgtier TPC-C driver on client host loadgen"), "{command}");
        let at = command.split(" over TCP to ").nth(1).unwrap().split(' ').next().unwrap().to_string();
        assert!(at.starts_with(&format!("{}:", host.server_address)), "{command}");
        ports.insert(at);
        assert!(r["nopm"].parse::<f64>().unwrap() > 0.0, "{r:?}");
    }
    assert_eq!(ports.len(), 2, "one port per placement's server: {ports:?}");
    // One driver served every drive (warm-ups and slices of both placements): it said so once.
    let started: Vec<PathBuf> = walk(&out)
        .into_iter()
        .filter(|f| f.to_string_lossy().ends_with(".stderr"))
        .filter(|f| std::fs::read_to_string(f).unwrap_or_default().contains("tpcc-client: serving drives"))
        .collect();
    assert_eq!(started.len(), 1, "one driver session for the run: {started:?}");
    assert_no_password(&out, &env.state());
    assert!(control_sockets(&env.state()).is_empty());
    wait_for_no_driver();
    assert_nothing_left(&env.state());
}

/// `compare` with a 60 s drive, once the driver measures on the host: the harness, its stderr
/// lines so far (a thread keeps reading the rest into the channel) and the host's run directory.
fn measuring(env: &Env, host: &NsHost, keys: &Path) -> (Child, mpsc::Receiver<String>, Vec<String>, String) {
    let cfg = experiment(env, host, keys, "60s");
    let out = env.dir.path().join("results");
    let mut child = env
        .xtask(&["compare", "--config", cfg.to_str().unwrap(), "--emulate", "--out", out.to_str().unwrap()])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut seen = Vec::new();
    while let Ok(line) = rx.recv_timeout(Duration::from_secs(300)) {
        let hit = line.contains("measuring");
        seen.push(line);
        if hit {
            break;
        }
    }
    assert!(seen.last().is_some_and(|l| l.contains("measuring")), "never measured:\n{}", seen.join("\n"));
    assert!(driver_running(), "the driver runs on the host while it measures");
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("manifest.json")).unwrap()).unwrap();
    let remote_dir = manifest["client"]["work_dir"].as_str().expect("the client record").to_string();
    assert!(Path::new(&remote_dir).join("pgtier").exists(), "the shipped binary is on the host");
    (child, rx, seen, remote_dir)
}

/// Ctrl-C while the driver measures on the host: teardown stops the drive's local ssh, the
/// driver on the host stops, and the run's directory there goes.
#[test]
fn ctrl_c_stops_the_driver_on_the_host() {
    let Some(t) = one_host(3) else { return };
    let OneHost { env, keys, host, .. } = &t;
    let (mut child, rx, mut seen, remote_dir) = measuring(env, host, keys);
    let t0 = Instant::now();
    kill(Pid::from_raw(child.id() as i32), Signal::SIGINT).unwrap();
    let status = child.wait().unwrap();
    let took = t0.elapsed();
    eprintln!("compare ended {:.1} s after Ctrl-C", took.as_secs_f64());
    while let Ok(l) = rx.recv_timeout(Duration::from_secs(2)) {
        seen.push(l);
    }
    let stderr = seen.join("\n");
    assert_eq!(status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("teardown complete"), "{stderr}");
    // The 60 s drive is stopped, not waited for (over a multiplexed connection, killing the
    // local ssh alone would leave the session up until the drive's end).
    assert!(took < Duration::from_secs(20), "Ctrl-C took {took:?}:\n{stderr}");
    assert!(!Path::new(&remote_dir).exists(), "the run's directory on the host is left: {remote_dir}");
    assert!(control_sockets(&env.state()).is_empty(), "control sockets left");
    wait_for_no_driver();
    assert_nothing_left(&env.state());
}

/// The harness SIGKILLed while the driver measures on the host: the driver, its stdin closed
/// with the harness, stops by itself; `cargo xtask cleanup` then removes the run's directory
/// on the host (the shipped binary with it) and closes the master from the run record.
#[test]
fn cleanup_after_a_killed_run_stops_the_driver_on_the_host() {
    let Some(t) = one_host(2) else { return };
    let OneHost { env, keys, host, .. } = &t;
    let (mut child, _rx, _seen, remote_dir) = measuring(env, host, keys);
    kill(Pid::from_raw(child.id() as i32), Signal::SIGKILL).unwrap();
    child.wait().unwrap();
    // The harness's end closed the driver's stdin: it stops before any cleanup.
    wait_for_no_driver();
    assert_eq!(control_sockets(&env.state()).len(), 1, "a killed harness leaves its master connection");
    let line = std::fs::read_to_string(Path::new(&remote_dir).join("pgpass")).unwrap();
    let password = line.trim().rsplit(':').next().unwrap().to_string();
    let out = env.dir.path().join("results");
    for f in walk(&out).into_iter().chain(walk(&env.state())).filter(|f| f.extension().is_none_or(|e| e != "img")) {
        let Ok(bytes) = std::fs::read(&f) else { continue };
        assert!(!String::from_utf8_lossy(&bytes).contains(&password), "the password is in {}", f.display());
    }

    let o = env.xtask(&["cleanup"]).output().unwrap();
    let (stdout, stderr) = text(&o);
    assert!(o.status.success(), "{stdout}\n{stderr}");
    assert!(control_sockets(&env.state()).is_empty(), "control sockets left: {:?}", control_sockets(&env.state()));
    assert!(!Path::new(&remote_dir).exists(), "the run's directory on the host is left: {remote_dir}");
    wait_for_no_driver();
    assert_nothing_left(&env.state());
}

/// `--dry-run` says that the TPC-C driver runs on the client host, from pgtier's binary copied
/// there; needs no root and touches nothing (the host need not exist).
#[test]
fn dry_run_says_the_tpcc_driver_runs_on_the_client_host() {
    let env = Env::new();
    let file = EXPERIMENT
        .replace("CLIENT_ADDRESS", "192.0.2.7")
        .replace("KEY_DIR/id_ed25519", "/nonexistent/id")
        .replace("KEY_DIR/known_hosts", "/nonexistent/known_hosts");
    let cfg = env.write("dry.toml", &file);
    let o = env.xtask(&["compare", "--config", cfg.to_str().unwrap(), "--emulate", "--dry-run"]).output().unwrap();
    let (stdout, stderr) = text(&o);
    assert!(o.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("## Client host"), "{stdout}");
    assert!(stdout.contains("every TPC-C drive below runs there too"), "{stdout}");
    assert!(!env.state().exists(), "a dry run touches nothing");
}

/// The same experiment without its `[[host]]`: the driver runs inside pgtier on the private
/// socket as before (no client record, nothing shipped, the server's CPU seen by the driver).
#[test]
fn without_a_host_tpcc_runs_here_as_before() {
    if !root_or_skip() {
        return;
    }
    let env = Env::new();
    let local = EXPERIMENT[..EXPERIMENT.find("[[host]]").unwrap()].to_string();
    let cfg = env.write("local-tpcc.toml", &local);
    let out = env.dir.path().join("results");
    compare(&env, &cfg, &out);
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("manifest.json")).unwrap()).unwrap();
    assert!(manifest.get("client").is_none(), "no client record: {}", manifest["client"]);
    let runs = csv_rows(&out.join("runs.csv"));
    let run_dir = out.join("runs").join(&runs[0]["run_id"]);
    let command = std::fs::read_to_string(run_dir.join("command.txt")).unwrap();
    assert!(command.starts_with("pgtier TPC-C driver: 2 virtual users") && !command.contains("ssh"), "{command}");
    assert!(!run_dir.join("tpcc.stdout").exists(), "no remote driver output");
    let drive: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run_dir.join("tpcc-report.json")).unwrap()).unwrap();
    assert!(drive["server_cpu_seconds"].as_f64().is_some(), "{drive}");
    assert!(runs[0]["nopm"].parse::<f64>().unwrap() > 0.0);
    assert_nothing_left(&env.state());
}
