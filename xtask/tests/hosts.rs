//! A benchmark client on another host (`[[host]] roles = ["client"]`), for real: the "host" is
//! a network namespace of this machine with its own OpenSSH server (Debian's sshd, a host key
//! and an authorized key made for the test, strict host-key checking against a known_hosts file
//! written by the test), reached over a veth pair with link-local addresses. pgtier opens one
//! multiplexed ssh connection to it, runs pgbench there, and pgbench reaches PostgreSQL over TCP
//! at the server's address facing the namespace, authenticated by scram-sha-256.
//!
//! What this simulates: a second machine's network stack (its own interfaces, routes and
//! addresses, a real TCP path through a veth pair), its SSH server and the whole transport
//! (ControlMaster, quoting through a remote shell, host-key verification), and pg_hba.conf's
//! admission of exactly the client's address. What it cannot: the namespace shares this
//! machine's kernel, CPUs, filesystem and binaries (so pgbench "on the host" is the same file,
//! its files land on the same disk, and the round trip is a veth's, tens of microseconds, not a
//! network's), and nothing here tests a host's own clock or another OS.
//!
//! Addresses: a /30 of 169.254.0.0/24, which the emulated NVMe/TCP tier never uses (it takes
//! 169.254.1.0 to 169.254.254.255), chosen from the test's pid. Needs root and
//! openssh-server (`cargo xtask test` installs it); PGTIER_SKIP_ROOT_TESTS=1 skips it.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::ssh_host::*;
use common::*;

const EXPERIMENT: &str = r#"
[experiment]
name = "remote-client"
description = "integration test: pgbench on a client host"
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
size = "512MiB"

[[placement]]
name = "disk"
data = "disk"
wal = "disk"

[[workload]]
name = "rw"
kind = "pgbench"
builtin = "tpcb-like"
scale = 1
clients = [2]
duration = "2s"
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
        "remote.toml",
        &EXPERIMENT
            .replace("CLIENT_ADDRESS", &host.address)
            .replace("KEY_DIR", &keys.display().to_string())
            .replace("duration = \"2s\"", &format!("duration = \"{duration}\"")),
    )
}

#[test]
fn pgbench_runs_on_a_client_host_over_ssh_and_tcp() {
    let Some(t) = one_host(0) else { return };
    let OneHost { env, keys, host, .. } = &t;
    let cfg = experiment(env, host, keys, "2s");
    let out = env.dir.path().join("results");
    let t0 = Instant::now();
    let o = env
        .xtask(&["compare", "--config", cfg.to_str().unwrap(), "--emulate", "--out", out.to_str().unwrap()])
        .output()
        .unwrap();
    let (stdout, stderr) = text(&o);
    let sshd_log = std::fs::read_to_string(keys.join("sshd.log")).unwrap_or_default();
    assert!(o.status.success(), "compare failed\nstdout:\n{stdout}\nstderr:\n{stderr}\nsshd:\n{sshd_log}");
    eprintln!("compare took {:.0} s\n{stderr}", t0.elapsed().as_secs_f64());

    // The manifest says where the client ran, the path and its measured round trip.
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("manifest.json")).unwrap()).unwrap();
    let client = &manifest["client"];
    assert_eq!(client["host"], "loadgen", "{client}");
    assert_eq!(client["address"], host.address.as_str());
    assert_eq!(client["server_address"], host.server_address.as_str());
    let path = client["network_path"].as_str().unwrap();
    assert_eq!(path, format!("veth {} {} -> {}", host.link, host.server_address, host.address));
    let rtt = client["rtt_ms"].as_f64().expect("a measured round trip");
    assert!(rtt > 0.0 && rtt < 50.0, "a veth's round trip: {rtt} ms");
    assert!(client["ssh_setup_ms"].as_f64().unwrap() > 0.0 && client["ssh_command_ms"].as_f64().unwrap() > 0.0);
    assert!(client["pgbench"].as_str().unwrap().starts_with("pgbench (PostgreSQL) "), "{client}");

    // pgbench ran through ssh and reached the server over TCP at its address facing the host.
    let runs = csv_rows(&out.join("runs.csv"));
    assert_eq!(runs.len(), 1);
    let run_dir = out.join("runs").join(&runs[0]["run_id"]);
    let command = std::fs::read_to_string(run_dir.join("command.txt")).unwrap();
    assert!(command.starts_with("ssh -F none "), "{command}");
    assert!(command.contains(&format!("root@{} --", host.address)), "{command}");
    assert!(command.contains(&format!("-h {} -p", host.server_address)), "{command}");
    let log = std::fs::read_to_string(run_dir.join("postgres.log")).unwrap();
    let from_host = format!("connection received: host={}", host.address);
    assert!(log.contains(&from_host), "no TCP connection from the client host in the server log:\n{log}");
    assert!(log.contains("method=scram-sha-256"), "scram-sha-256 authentication:\n{log}");
    assert!(
        std::fs::metadata(run_dir.join("txlog.remote")).map(|m| m.len() > 0).unwrap_or(false),
        "the transaction log came back from the host"
    );
    let tps: f64 = runs[0]["tps"].parse().unwrap();
    assert!(tps > 0.0);
    // pgbench's CPU as the host's shell reported it (the harness's own child is only ssh).
    let result: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run_dir.join("result.json")).unwrap()).unwrap();
    assert!(result["cpu"]["client_cpu_s"].as_f64().unwrap() > 0.0, "{}", result["cpu"]);
    assert!(!result["warnings"].to_string().contains("did not report pgbench's CPU"), "{}", result["warnings"]);

    // report.md's environment section says where the client ran.
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(report.contains("Client host"), "report.md names the client host");
    assert!(report.contains(path), "report.md gives the network path");

    // The password is nowhere in the results nor the run record (the server log holds at most
    // its SCRAM verifier).
    for f in walk(&out).into_iter().chain(walk(&env.state())) {
        let text = String::from_utf8_lossy(&std::fs::read(&f).unwrap()).into_owned();
        assert!(!text.contains(":*:*:postgres:"), "a password file line in {}", f.display());
        for (i, _) in text.match_indices("PASSWORD '") {
            assert!(text[i..].starts_with("PASSWORD 'SCRAM-SHA-256$"), "a password in {}", f.display());
        }
    }

    // Nothing left: no master connection, its socket, the host's run directory, nor the rest.
    assert!(control_sockets(&env.state()).is_empty(), "control sockets left: {:?}", control_sockets(&env.state()));
    let remote_dir = client["work_dir"].as_str().unwrap();
    assert!(remote_dir.starts_with("/tmp/pgtier-"), "{client}");
    assert!(!Path::new(remote_dir).exists(), "the run's directory on the host is left: {remote_dir}");
    assert_nothing_left(&env.state());
}

/// The `slices` design: every placement's server up at once, each on its own port of the same
/// address facing the host, every slice's pgbench on the host.
#[test]
fn slices_of_every_placement_run_on_the_client_host() {
    let Some(t) = one_host(2) else { return };
    let OneHost { env, keys, host, .. } = &t;
    let sliced = std::fs::read_to_string(experiment(env, host, keys, "2s")).unwrap().replace(
        "[postgres]",
        "[measurement]\ndesign = \"slices\"\nslice = \"1s\"\nwarm_up = \"1s\"\nmin_rounds = 2\nbudget = \"4s\"\ntarget_halfwidth = \"80%\"\n\n[postgres]",
    )
    .replace("log_connections = \"on\"", "log_connections = \"on\"\nmax_wal_size = \"64MB\"")
        + "\n[[placement]]\nname = \"disk2\"\ndata = \"disk\"\nwal = \"disk\"\n";
    let cfg = env.write("sliced.toml", &sliced);
    let out = env.dir.path().join("results");
    let o = env
        .xtask(&["compare", "--config", cfg.to_str().unwrap(), "--emulate", "--out", out.to_str().unwrap()])
        .output()
        .unwrap();
    let (stdout, stderr) = text(&o);
    assert!(o.status.success(), "compare failed\nstdout:\n{stdout}\nstderr:\n{stderr}");
    let runs = csv_rows(&out.join("runs.csv"));
    assert!(runs.len() >= 4, "at least 2 rounds of 2 placements: {}", runs.len());
    for r in &runs {
        let command = std::fs::read_to_string(out.join("runs").join(&r["run_id"]).join("command.txt")).unwrap();
        assert!(command.starts_with("ssh -F none ") && command.contains(&format!("-h {} -p", host.server_address)));
    }
    let logs: Vec<PathBuf> =
        walk(&out.join("sessions")).into_iter().filter(|p| p.to_string_lossy().ends_with("-postgres.log")).collect();
    assert_eq!(logs.len(), 2, "{logs:?}");
    for l in logs {
        let log = std::fs::read_to_string(&l).unwrap();
        assert!(log.contains(&format!("connection received: host={}", host.address)), "{}:\n{log}", l.display());
    }
    assert!(control_sockets(&env.state()).is_empty());
    assert_nothing_left(&env.state());
}

/// The harness SIGKILLed while pgbench runs on the host: the master connection, the run's
/// directory on the host, the server and the devices stay; `cargo xtask cleanup` undoes them
/// from the run record.
#[test]
fn cleanup_after_a_killed_run_closes_the_connection() {
    use std::io::{BufRead, BufReader};
    let Some(t) = one_host(1) else { return };
    let OneHost { env, keys, host, .. } = &t;
    let cfg = experiment(env, host, keys, "30s");
    let out = env.dir.path().join("results");
    let mut child = env
        .xtask(&["compare", "--config", cfg.to_str().unwrap(), "--emulate", "--out", out.to_str().unwrap()])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut seen = Vec::new();
    for line in BufReader::new(child.stderr.take().unwrap()).lines().map_while(Result::ok) {
        let hit = line.contains("measuring");
        seen.push(line);
        if hit {
            break;
        }
    }
    assert!(seen.last().is_some_and(|l| l.contains("measuring")), "never measured:\n{}", seen.join("\n"));
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), nix::sys::signal::Signal::SIGKILL).unwrap();
    child.wait().unwrap();

    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("manifest.json")).unwrap()).unwrap();
    let remote_dir = manifest["client"]["work_dir"].as_str().expect("the client record").to_string();
    assert_eq!(control_sockets(&env.state()).len(), 1, "a killed harness leaves its master connection");
    assert!(Path::new(&remote_dir).exists(), "and the run's directory on the host");
    // The password file on the host: mode 0600, and its password nowhere on the controller's
    // side (results, server logs, run record).
    let passfile = Path::new(&remote_dir).join("pgpass");
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(std::fs::metadata(&passfile).unwrap().permissions().mode() & 0o777, 0o600);
    let line = std::fs::read_to_string(&passfile).unwrap();
    let password = line.trim().rsplit(':').next().unwrap().to_string();
    assert_eq!(password.len(), 32, "128 random bits in hex");
    // (The emulated device's image is skipped: its filesystem is walked at its mount point.)
    for f in walk(&out).into_iter().chain(walk(&env.state())).filter(|f| f.extension().is_none_or(|e| e != "img")) {
        let Ok(bytes) = std::fs::read(&f) else { continue };
        assert!(!String::from_utf8_lossy(&bytes).contains(&password), "the password is in {}", f.display());
    }

    let o = env.xtask(&["cleanup"]).output().unwrap();
    let (stdout, stderr) = text(&o);
    assert!(o.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("ssh -O exit") || stderr.contains("ssh -O exit"), "{stdout}\n{stderr}");
    assert!(control_sockets(&env.state()).is_empty(), "control sockets left: {:?}", control_sockets(&env.state()));
    assert!(!Path::new(&remote_dir).exists(), "the run's directory on the host is left: {remote_dir}");
    // pgbench on the host lost its ssh session and with it its stderr: it is gone too.
    let t0 = Instant::now();
    while pgbench_from(&host.address) && t0.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(!pgbench_from(&host.address), "pgbench still runs on the host");
    assert_nothing_left(&env.state());
}

/// A pgbench process connecting to the server from the host's side (its `-h` is the server's
/// address of that host's link).
fn pgbench_from(client_address: &str) -> bool {
    let server = {
        let o: Vec<u32> = client_address.split('.').map(|p| p.parse().unwrap()).collect();
        format!("{}.{}.{}.{}", o[0], o[1], o[2], o[3] - 1)
    };
    std::fs::read_dir("/proc").unwrap().flatten().any(|e| {
        std::fs::read(e.path().join("cmdline")).is_ok_and(|c| {
            let c = String::from_utf8_lossy(&c).replace('\0', " ");
            c.contains("pgbench") && c.contains(&format!("-h {server} "))
        })
    })
}

/// `--dry-run` says where pgbench will run and how the host is reached; needs no root and
/// touches nothing (the host need not exist).
#[test]
fn dry_run_names_the_client_host() {
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
    assert!(stdout.contains("-o StrictHostKeyChecking=yes -o UserKnownHostsFile=/nonexistent/known_hosts"), "{stdout}");
    assert!(stdout.contains("-o ControlMaster=yes -o ControlPersist=yes -N -f root@192.0.2.7"), "{stdout}");
    assert!(stdout.contains("pg_hba.conf admits 192.0.2.7/32 alone"), "{stdout}");
    assert!(!env.state().exists(), "a dry run touches nothing");
}

/// A known_hosts file that does not exist stops the run before anything is touched, naming the
/// host, the file and the line.
#[test]
fn a_missing_known_hosts_file_is_refused_before_anything_is_touched() {
    if !root_or_skip() {
        return;
    }
    let env = Env::new();
    let file = EXPERIMENT
        .replace("CLIENT_ADDRESS", "192.0.2.7")
        .replace("KEY_DIR/id_ed25519", "/nonexistent/id")
        .replace("KEY_DIR/known_hosts", "/nonexistent/known_hosts");
    let cfg = env.write("missing.toml", &file);
    let out = env.dir.path().join("results");
    let o = env
        .xtask(&["compare", "--config", cfg.to_str().unwrap(), "--emulate", "--out", out.to_str().unwrap()])
        .output()
        .unwrap();
    let (stdout, stderr) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(stderr.contains("host loadgen: its identity_file /nonexistent/id is not a file"), "{stderr}");
    assert!(stderr.contains("Nothing was touched"), "{stderr}");
    assert!(!out.exists(), "no results directory");
    assert_nothing_left(&env.state());
}

/// A host whose key is not the one in known_hosts is refused (StrictHostKeyChecking=yes): the
/// run stops before provisioning, says why, and leaves nothing (no master, no directory).
#[test]
fn a_host_key_other_than_the_known_one_is_refused() {
    let Some(t) = one_host(3) else { return };
    let OneHost { env, keys, host, .. } = &t;
    // known_hosts names another key for the host's address.
    run(Command::new("ssh-keygen").args(["-q", "-t", "ed25519", "-N", "", "-f"]).arg(keys.join("impostor")));
    let other = std::fs::read_to_string(keys.join("impostor.pub")).unwrap();
    let key: Vec<&str> = other.split_whitespace().take(2).collect();
    std::fs::write(keys.join("known_hosts"), format!("{} {}\n", host.address, key.join(" "))).unwrap();
    let cfg = experiment(env, host, keys, "2s");
    let out = env.dir.path().join("results");
    let o = env
        .xtask(&["compare", "--config", cfg.to_str().unwrap(), "--emulate", "--out", out.to_str().unwrap()])
        .output()
        .unwrap();
    let (stdout, stderr) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{stdout}\n{stderr}");
    eprintln!("{stderr}");
    assert!(stderr.contains("open the ssh connection to host loadgen"), "{stderr}");
    assert!(
        stderr.contains("REMOTE HOST IDENTIFICATION HAS CHANGED") || stderr.contains("Host key verification failed"),
        "{stderr}"
    );
    assert!(!stderr.contains("provisioning 1 device"), "nothing provisioned: {stderr}");
    let log = std::fs::read_to_string(keys.join("sshd.log")).unwrap_or_default();
    assert!(!log.contains("Accepted publickey"), "the client never authenticated:\n{log}");
    assert!(control_sockets(&env.state()).is_empty());
    assert_nothing_left(&env.state());
}
