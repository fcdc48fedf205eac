//! A storage target host (`[[host]] roles = ["target"]`) serving an `nvme-tcp` device, for
//! real with `--emulate`: the "host" is a network namespace of this machine with its own
//! OpenSSH server (tests/common/ssh_host.rs); pgtier opens one multiplexed ssh connection to it,
//! makes the run's directory there, starts nbdkit there over ssh (listening on the host's
//! address facing this machine), and attaches it here with nbdfuse over the veth link, then a
//! loop device and XFS as for the local stand-in.
//!
//! What this simulates: the target's own network stack and SSH server, nbdkit started and
//! stopped over ssh with its undo in the run record, the NBD traffic crossing a real interface
//! to another address, teardown and `cargo xtask cleanup` on the host. What it cannot: the
//! namespace shares this machine's kernel, CPUs, filesystem and binaries (the image file "on
//! the host" lands on the same disk, and the round trip is a veth's), and the real-hardware
//! path (nvmet through configfs, `nvme connect -t tcp`) needs a kernel with nvmet, which this
//! machine lacks: its steps are checked in the dry run below, by tiers' unit tests, and for
//! real in the VM (tests/vm/target_host.rs).
//!
//! Needs root and openssh-server (`cargo xtask test` installs it); PGTIER_SKIP_ROOT_TESTS=1 skips it.

mod common;

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::ssh_host::*;
use common::*;

const EXPERIMENT: &str = r#"
[experiment]
name = "remote-target"
description = "integration test: an NVMe/TCP device served by a target host"
device_probe = "0s"
baseline = "remote"
repetitions = 1

[postgres]
profiles = ["default"]
memory_limits = ["256MiB"]

[[device]]
name = "remote"
class = "nvme-tcp"
target = "storage"
export = "/dev/disk/by-id/not-used-when-emulating"
[device.emulate]
size = "512MiB"

[[placement]]
name = "remote"
data = "remote"
wal = "remote"

[[workload]]
name = "rw"
kind = "pgbench"
builtin = "tpcb-like"
scale = 1
clients = [2]
duration = "2s"
ramp_up = "1s"

[[host]]
name = "storage"
address = "TARGET_ADDRESS"
identity_file = "KEY_DIR/id_ed25519"
known_hosts = "KEY_DIR/known_hosts"
roles = ["target"]
"#;

fn experiment(env: &Env, address: &str, keys: &Path, duration: &str) -> PathBuf {
    env.write(
        "target.toml",
        &EXPERIMENT
            .replace("TARGET_ADDRESS", address)
            .replace("KEY_DIR", &keys.display().to_string())
            .replace("duration = \"2s\"", &format!("duration = \"{duration}\"")),
    )
}

/// nbdkit processes of a pgtier run in `netns` (the target host's): their PIDs.
fn nbdkits_in(netns: &str) -> Vec<i32> {
    let Ok(ns) = std::fs::metadata(format!("/run/netns/{netns}")) else { return vec![] };
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| {
            let pid: i32 = e.file_name().to_str()?.parse().ok()?;
            let comm = std::fs::read_to_string(e.path().join("comm")).ok()?;
            let cmd = String::from_utf8_lossy(&std::fs::read(e.path().join("cmdline")).ok()?).into_owned();
            let net = std::fs::metadata(e.path().join("ns/net")).ok()?;
            (comm.trim() == "nbdkit" && cmd.contains("/tmp/pgtier-") && net.ino() == ns.ino()).then_some(pid)
        })
        .collect()
}

/// Stops the nbdkit a failed test left in its host's namespace (only that namespace's).
struct Nbdkits(String);

impl Drop for Nbdkits {
    fn drop(&mut self) {
        for pid in nbdkits_in(&self.0) {
            let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGKILL);
        }
    }
}

/// What the test saw while the run went on: nbdkit in the host's namespace, and this machine's
/// TCP connection to it.
#[derive(Default)]
struct Seen {
    nbdkit_in_host: bool,
    connection: String,
}

fn watch(host: &NsHost, seen: &mut Seen) {
    if !nbdkits_in(&host.netns).is_empty() {
        seen.nbdkit_in_host = true;
        if seen.connection.is_empty() {
            let o = std::process::Command::new("ss")
                .args(["-Htn", "state", "established", "dst", &format!("{}:10809", host.address)])
                .output()
                .unwrap();
            seen.connection = String::from_utf8_lossy(&o.stdout).trim().to_string();
        }
    }
}

#[test]
fn nbdkit_runs_on_the_target_host_and_nothing_is_left() {
    let Some(t) = one_host(0) else { return };
    let OneHost { env, keys, host, .. } = &t;
    let _nbdkits = Nbdkits(host.netns.clone());
    let cfg = experiment(env, &host.address, keys, "2s");
    let out = env.dir.path().join("results");
    let t0 = Instant::now();
    let mut child = env
        .xtask(&["compare", "--config", cfg.to_str().unwrap(), "--emulate", "--out", out.to_str().unwrap()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut seen = Seen::default();
    while child.try_wait().unwrap().is_none() {
        watch(host, &mut seen);
        std::thread::sleep(Duration::from_millis(100));
    }
    let o = child.wait_with_output().unwrap();
    let (stdout, stderr) = text(&o);
    assert!(o.status.success(), "compare failed\nstdout:\n{stdout}\nstderr:\n{stderr}");
    eprintln!("compare took {:.0} s\n{stderr}", t0.elapsed().as_secs_f64());

    // nbdkit ran in the host's network namespace, and this machine reached it over the link.
    assert!(seen.nbdkit_in_host, "no nbdkit in the host's namespace during the run");
    assert!(
        seen.connection.contains(&format!("{}:10809", host.address)),
        "a TCP connection to it: {:?}",
        seen.connection
    );
    assert!(
        seen.connection.contains(&host.server_address),
        "from this machine's address on the link: {:?}",
        seen.connection
    );

    // The manifest and report say which host served the device, where, and the round trip.
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("manifest.json")).unwrap()).unwrap();
    let t = &manifest["targets"][0];
    assert_eq!(t["host"], "storage", "{manifest}");
    assert_eq!(t["address"], host.address.as_str());
    assert_eq!(t["devices"], serde_json::json!(["remote"]));
    assert_eq!(
        t["network_path"].as_str().unwrap(),
        format!("veth {} {} -> {}", host.link, host.server_address, host.address)
    );
    let rtt = t["rtt_ms"].as_f64().expect("a measured round trip");
    assert!(rtt > 0.0 && rtt < 50.0, "a veth's round trip: {rtt} ms");
    let description = manifest["devices"][0]["description"].as_str().unwrap();
    assert!(description.contains(&format!("nbdkit on host storage at {}", host.address)), "{description}");
    let log = std::fs::read_to_string(out.join("provision.log")).unwrap();
    assert!(log.contains(&format!("--ipaddr {} --port 10809", host.address)), "nbdkit's command:\n{log}");
    assert!(log.contains(&format!("nbd://{}:10809", host.address)), "nbdfuse's command:\n{log}");
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(report.contains("| Target host | storage ("), "report.md names the target host");
    assert!(report.contains(t["network_path"].as_str().unwrap()), "report.md gives the network path");
    let served = format!("- remote is served by host storage at {} (nbdkit", host.address);
    assert!(report.contains(&served) && report.contains("; round trip 0."), "report.md's devices say who served them");
    let runs = csv_rows(&out.join("runs.csv"));
    assert_eq!(runs.len(), 1);
    assert!(runs[0]["tps"].parse::<f64>().unwrap() > 0.0);

    // Nothing left: nbdkit on the host, its directory there, the connection, the rest.
    let remote_dir = t["work_dir"].as_str().unwrap();
    assert!(remote_dir.starts_with("/tmp/pgtier-") && remote_dir.ends_with("-t-storage"), "{t}");
    assert!(!Path::new(remote_dir).exists(), "the run's directory on the host is left: {remote_dir}");
    assert!(nbdkits_in(&host.netns).is_empty(), "nbdkit still runs on the host");
    assert!(control_sockets(&env.state()).is_empty(), "control sockets left: {:?}", control_sockets(&env.state()));
    assert_nothing_left(&env.state());
}

/// The harness SIGKILLed while it measures: nbdkit on the host, its directory there and the
/// connection stay; `cargo xtask cleanup` undoes them from the run record.
#[test]
fn cleanup_after_a_killed_run_stops_nbdkit_on_the_host() {
    let Some(t) = one_host(1) else { return };
    let OneHost { env, keys, host, .. } = &t;
    let _nbdkits = Nbdkits(host.netns.clone());
    let cfg = experiment(env, &host.address, keys, "30s");
    let out = env.dir.path().join("results");
    let run = Watched::until(
        &mut env.xtask(&["compare", "--config", cfg.to_str().unwrap(), "--emulate", "--out", out.to_str().unwrap()]),
        |l, _| l.contains("measuring"),
    );
    run.signal(nix::sys::signal::Signal::SIGKILL);
    run.finish();

    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("manifest.json")).unwrap()).unwrap();
    let remote_dir = manifest["targets"][0]["work_dir"].as_str().expect("the target record").to_string();
    assert!(!nbdkits_in(&host.netns).is_empty(), "a killed harness leaves nbdkit on the host");
    assert!(Path::new(&remote_dir).join("remote.img").exists(), "and its image in the run's directory there");
    assert_eq!(control_sockets(&env.state()).len(), 1, "and the connection");

    let o = env.xtask(&["cleanup"]).output().unwrap();
    let (stdout, stderr) = text(&o);
    assert!(o.status.success(), "{stdout}\n{stderr}");
    let said = format!("{stdout}\n{stderr}");
    assert!(said.contains("stop nbdkit (--pidfile ") && said.contains("on host storage"), "{said}");
    assert!(nbdkits_in(&host.netns).is_empty(), "nbdkit still runs on the host");
    assert!(!Path::new(&remote_dir).exists(), "the run's directory on the host is left: {remote_dir}");
    assert!(control_sockets(&env.state()).is_empty(), "control sockets left: {:?}", control_sockets(&env.state()));
    assert_nothing_left(&env.state());
}

fn dry_run(env: &Env, emulate: bool) -> String {
    let file = EXPERIMENT
        .replace("TARGET_ADDRESS", "192.0.2.7")
        .replace("KEY_DIR/id_ed25519", "/nonexistent/id")
        .replace("KEY_DIR/known_hosts", "/nonexistent/known_hosts")
        .replace(
            "export = \"/dev/disk/by-id/not-used-when-emulating\"",
            "export = \"/dev/disk/by-id/nvme-target-ssd\"",
        );
    let cfg = env.write("dry.toml", &file);
    let mut args = vec!["compare", "--config", cfg.to_str().unwrap(), "--dry-run"];
    if emulate {
        args.push("--emulate");
    }
    let o = env.xtask(&args).output().unwrap();
    let (stdout, stderr) = text(&o);
    // A device served by a target host is not looked for here; nothing else is missing.
    assert!(o.status.success(), "{stdout}\n{stderr}");
    stdout
}

/// `--dry-run` shows every step on the target host, in order, with its undo; needs no root
/// and touches nothing (the host need not exist).
#[test]
fn dry_runs_show_every_step_on_the_target_host() {
    let env = Env::new();
    let text = dry_run(&env, true);
    let order = [
        "## Target hosts",
        "-o ControlMaster=yes -o ControlPersist=yes -N -f root@192.0.2.7",
        "[on host storage] nbdkit --version",
        "[on host storage] truncate -s 536870912 -- /tmp/pgtier-",
        "nbdkit --pidfile /tmp/pgtier-",
        "--ipaddr 192.0.2.7 --port 10809 file /tmp/pgtier-",
        "nbdfuse ",
        "nbd://192.0.2.7:10809",
        "mkfs.xfs -K",
        "[on host storage] stop nbdkit (--pidfile /tmp/pgtier-",
    ];
    let mut at = 0;
    for needle in order {
        let i = text[at..].find(needle).unwrap_or_else(|| panic!("{needle:?} after offset {at}:\n{text}"));
        at += i + needle.len();
    }
    assert!(!text.contains("ip netns add"), "no local namespace stands in for the target: {text}");
    assert!(!text.contains("why: \n"), "every step has its reason");

    let text = dry_run(&env, false);
    let order = [
        "## Target hosts",
        "[on host storage] check /dev/disk/by-id/nvme-target-ssd is a block device",
        "[on host storage] modprobe -n -a nvmet nvmet-tcp",
        "[on host storage] check /sys/kernel/config/nvmet/ports/*/addr_* has no port on 192.0.2.7 port 4420 (nor on the wildcard address), and /sys/kernel/config/nvmet/hosts/ no entry <host NQN of this machine>",
        "[on host storage] modprobe -a nvmet nvmet-tcp",
        "[on host storage] mkdir -- /sys/kernel/config/nvmet/subsystems/nqn.2026-12.io.pgtier:storage:remote",
        "/sys/kernel/config/nvmet/subsystems/nqn.2026-12.io.pgtier:storage:remote/attr_allow_any_host 0",
        "mkdir -- '/sys/kernel/config/nvmet/hosts/<host NQN of this machine>'",
        "allowed_hosts/<host NQN of this machine>'",
        "mkdir -- /sys/kernel/config/nvmet/subsystems/nqn.2026-12.io.pgtier:storage:remote/namespaces/1",
        "namespaces/1/device_uuid ",
        "namespaces/1/device_path /dev/disk/by-id/nvme-target-ssd",
        "namespaces/1/enable 1",
        "mkdir -- /sys/kernel/config/nvmet/ports/",
        "addr_trtype tcp",
        "addr_adrfam ipv4",
        "addr_traddr 192.0.2.7",
        "addr_trsvcid 4420",
        "ln -s -T -- /sys/kernel/config/nvmet/subsystems/nqn.2026-12.io.pgtier:storage:remote /sys/kernel/config/nvmet/ports/",
        "nvme connect --transport tcp --traddr 192.0.2.7 --trsvcid 4420 --nqn nqn.2026-12.io.pgtier:storage:remote",
        "[remote] check /sys/block/<remote>/wwid is uuid.",
        "mkfs.xfs",
        "nvme disconnect -d <the controller this connect created>",
        "[on host storage] rm /sys/kernel/config/nvmet/ports/",
        "[on host storage] rmdir /sys/kernel/config/nvmet/ports/",
        "[on host storage] rmdir /sys/kernel/config/nvmet/subsystems/nqn.2026-12.io.pgtier:storage:remote/namespaces/1",
        "[on host storage] rm /sys/kernel/config/nvmet/subsystems/nqn.2026-12.io.pgtier:storage:remote/allowed_hosts/<host NQN of this machine>",
        "[on host storage] rmdir /sys/kernel/config/nvmet/hosts/<host NQN of this machine>",
        "[on host storage] rmdir /sys/kernel/config/nvmet/subsystems/nqn.2026-12.io.pgtier:storage:remote",
    ];
    let mut at = 0;
    for needle in order {
        let i = text[at..].find(needle).unwrap_or_else(|| panic!("{needle:?} after offset {at}:\n{text}"));
        at += i + needle.len();
    }
    assert!(!env.state().exists(), "a dry run touches nothing");
}

/// One host with both roles: pgbench runs there and it serves the device, over two ssh
/// connections of its own (each role its control socket and run directory).
#[test]
fn one_host_can_be_client_and_target() {
    let Some(t) = one_host(2) else { return };
    let OneHost { env, keys, host, .. } = &t;
    let _nbdkits = Nbdkits(host.netns.clone());
    let file = std::fs::read_to_string(experiment(env, &host.address, keys, "2s"))
        .unwrap()
        .replace("roles = [\"target\"]", "roles = [\"client\", \"target\"]");
    let cfg = env.write("both.toml", &file);
    let out = env.dir.path().join("results");
    let o = env
        .xtask(&["compare", "--config", cfg.to_str().unwrap(), "--emulate", "--out", out.to_str().unwrap()])
        .output()
        .unwrap();
    let (stdout, stderr) = text(&o);
    assert!(o.status.success(), "compare failed\nstdout:\n{stdout}\nstderr:\n{stderr}");
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(manifest["client"]["host"], "storage");
    assert_eq!(manifest["targets"][0]["host"], "storage");
    assert_ne!(manifest["client"]["work_dir"], manifest["targets"][0]["work_dir"]);
    let runs = csv_rows(&out.join("runs.csv"));
    let command = std::fs::read_to_string(out.join("runs").join(&runs[0]["run_id"]).join("command.txt")).unwrap();
    assert!(command.starts_with("ssh -F none "), "pgbench ran on the host: {command}");
    for dir in [&manifest["client"]["work_dir"], &manifest["targets"][0]["work_dir"]] {
        assert!(!Path::new(dir.as_str().unwrap()).exists(), "left on the host: {dir}");
    }
    assert!(nbdkits_in(&host.netns).is_empty(), "nbdkit still runs on the host");
    assert!(control_sockets(&env.state()).is_empty(), "control sockets left: {:?}", control_sockets(&env.state()));
    assert_nothing_left(&env.state());
}
