//! Hosts for the multi-host tests: each a network namespace of this machine with its own
//! OpenSSH server (Debian's sshd), a host key and an authorised key made for the test, and a
//! known_hosts file naming that key, reached over a veth pair with link-local addresses.
//!
//! sshd is started with `nsenter --net` (not `ip netns exec`): only the network namespace is
//! the host's own. `ip netns exec` would also unshare the mount namespace and remount /sys,
//! which hides /sys/fs/cgroup, and a server host needs the cgroup hierarchies; so a "host"
//! here shares this machine's kernel, mounts, filesystem, CPUs and binaries, and has its own
//! interfaces, addresses, routes and SSH server.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub fn run(cmd: &mut Command) -> String {
    let o = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(o.status.success(), "{cmd:?}: {}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// The sshds of this process's tests that are running.
static SSHDS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

/// A host of this process made /run/sshd (it did not exist), so the last one removes it.
static MADE_RUN_SSHD: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// The client host: a network namespace with a veth link to this machine and an sshd in it.
/// Dropping it kills sshd and deletes the namespace and the link, also when the test fails.
pub struct NsHost {
    pub netns: String,
    pub link: String,
    pub server_address: String,
    pub address: String,
    sshd: Option<Child>,
    made_run_sshd: bool,
}

impl NsHost {
    /// Host `n` of this process (tests run in parallel): its own namespace, link and /30,
    /// the first /30 from `n`'s that no other process's host uses (chosen under a lock file,
    /// as other test processes of this machine may make hosts at the same time).
    pub fn new(keys: &Path, n: u32) -> NsHost {
        let pid = std::process::id();
        let lock = std::fs::File::create("/tmp/pgtier-test-hosts.lock").unwrap();
        lock.lock().unwrap();
        let taken = run(Command::new("ip").args(["-o", "-4", "addr", "show"]));
        let base = (0..64)
            .map(|k| ((pid * 2 + n + k) % 64) * 4)
            .find(|b| !taken.contains(&format!("169.254.0.{}/", b + 1)))
            .expect("a free /30 of 169.254.0.0/24");
        let mut h = NsHost {
            netns: format!("pgtier-test-client-{pid}-{n}"),
            link: format!("pgtc{}{n}", pid % 10_000_000),
            server_address: format!("169.254.0.{}", base + 1),
            address: format!("169.254.0.{}", base + 2),
            sshd: None,
            made_run_sshd: false,
        };
        // Counted from here: the drop below always uncounts it.
        SSHDS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let peer = format!("{}p", h.link);
        run(Command::new("ip").args(["netns", "add", &h.netns]));
        run(Command::new("ip").args(["link", "add", &h.link, "type", "veth", "peer", "name", &peer]));
        run(Command::new("ip").args(["link", "set", &peer, "netns", &h.netns]));
        run(Command::new("ip").args(["addr", "add", &format!("{}/30", h.server_address), "dev", &h.link]));
        run(Command::new("ip").args(["link", "set", &h.link, "up"]));
        drop(lock);
        let ns = |args: &[&str]| {
            let mut c = Command::new("ip");
            c.args(["netns", "exec", &h.netns]).args(args);
            run(&mut c);
        };
        ns(&["ip", "addr", "add", &format!("{}/30", h.address), "dev", &peer]);
        ns(&["ip", "link", "set", &peer, "up"]);
        ns(&["ip", "link", "set", "lo", "up"]);

        // Keys made for this test: the host's, and the controller's identity it authorises.
        for (name, comment) in [("host_ed25519", "pgtier-test-host"), ("id_ed25519", "pgtier-test-controller")] {
            run(Command::new("ssh-keygen")
                .args(["-q", "-t", "ed25519", "-N", "", "-C", comment, "-f"])
                .arg(keys.join(name)));
        }
        std::fs::copy(keys.join("id_ed25519.pub"), keys.join("authorized_keys")).unwrap();
        let host_key = std::fs::read_to_string(keys.join("host_ed25519.pub")).unwrap();
        let key: Vec<&str> = host_key.split_whitespace().take(2).collect();
        std::fs::write(keys.join("known_hosts"), format!("{} {}\n", h.address, key.join(" "))).unwrap();
        let config = format!(
            "ListenAddress {addr}:22\nHostKey {k}/host_ed25519\nAuthorizedKeysFile {k}/authorized_keys\nPidFile {k}/sshd.pid\n\
             PermitRootLogin prohibit-password\nPasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\n\
             StrictModes no\nX11Forwarding no\nAllowTcpForwarding no\nPrintMotd no\nMaxSessions 50\nLogLevel VERBOSE\n",
            addr = h.address,
            k = keys.display()
        );
        std::fs::write(keys.join("sshd_config"), config).unwrap();
        // sshd's privilege separation directory (the package's tmpfiles.d makes it at boot).
        if std::fs::create_dir("/run/sshd").is_ok() {
            h.made_run_sshd = true;
        }
        let log = std::fs::File::create(keys.join("sshd.log")).unwrap();
        h.sshd = Some(
            Command::new("nsenter")
                .arg(format!("--net=/run/netns/{}", h.netns))
                .args(["/usr/sbin/sshd", "-D", "-e", "-f"])
                .arg(keys.join("sshd_config"))
                .arg("-h")
                .arg(keys.join("host_ed25519"))
                .stdin(Stdio::null())
                .stdout(log.try_clone().unwrap())
                .stderr(log)
                .spawn()
                .unwrap(),
        );
        // Listening once a TCP connect to port 22 succeeds.
        let to: std::net::SocketAddr = format!("{}:22", h.address).parse().unwrap();
        let t0 = Instant::now();
        while std::net::TcpStream::connect_timeout(&to, Duration::from_millis(200)).is_err() {
            assert!(
                t0.elapsed() < Duration::from_secs(10),
                "sshd did not listen: {}",
                std::fs::read_to_string(keys.join("sshd.log")).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        h
    }
}

impl NsHost {
    /// Routes everything the host sends beyond its link through this machine (its default route
    /// is this machine's end of the link), so that hosts reach each other with this machine as
    /// their router (see [`Forwarding`]).
    pub fn route_via_this_machine(&self) {
        run(Command::new("ip").args(["-n", &self.netns, "route", "add", "default", "via", &self.server_address]));
    }
}

/// IPv4 forwarding on for the test (hosts reach each other through this machine), set back to
/// what it was when dropped.
pub struct Forwarding(String);

impl Forwarding {
    pub fn on() -> Forwarding {
        let was = std::fs::read_to_string("/proc/sys/net/ipv4/ip_forward").unwrap().trim().to_string();
        std::fs::write("/proc/sys/net/ipv4/ip_forward", "1").unwrap();
        Forwarding(was)
    }
}

impl Drop for Forwarding {
    fn drop(&mut self) {
        let _ = std::fs::write("/proc/sys/net/ipv4/ip_forward", &self.0);
    }
}

impl Drop for NsHost {
    fn drop(&mut self) {
        if let Some(mut c) = self.sshd.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
        let _ = Command::new("ip").args(["netns", "delete", &self.netns]).status();
        let _ = Command::new("ip").args(["link", "delete", &self.link]).stderr(Stdio::null()).status();
        // sshd's privilege separation directory goes with the last host of the process (one
        // test may hold several hosts, and tests run in parallel).
        if self.made_run_sshd {
            MADE_RUN_SSHD.store(true, std::sync::atomic::Ordering::SeqCst);
        }
        if SSHDS.fetch_sub(1, std::sync::atomic::Ordering::SeqCst) == 1
            && MADE_RUN_SSHD.swap(false, std::sync::atomic::Ordering::SeqCst)
        {
            let _ = std::fs::remove_dir("/run/sshd");
        }
    }
}

/// Control sockets left under the state directory's `hosts/`.
pub fn control_sockets(state: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(state.join("hosts"))
        .into_iter()
        .flatten()
        .flatten()
        .flat_map(|d| std::fs::read_dir(d.path()).into_iter().flatten().flatten().map(|e| e.path()))
        .collect()
}

/// Closes masters a failed run left (by their sockets under this test's state directory).
pub struct Masters(pub PathBuf);

impl Drop for Masters {
    fn drop(&mut self) {
        for s in control_sockets(&self.0) {
            let _ = Command::new("ssh")
                .args(["-F", "none", "-o"])
                .arg(format!("ControlPath={}", s.display()))
                .args(["-O", "exit", "x"])
                .stderr(Stdio::null())
                .status();
        }
    }
}

pub fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

/// The start of a test with namespace hosts: None (skip) unless root (see `root_or_skip`);
/// fails unless openssh-server is installed; a fresh test environment.
pub fn ssh_test_env() -> Option<super::Env> {
    if !super::root_or_skip() {
        return None;
    }
    assert!(
        Path::new("/usr/sbin/sshd").exists(),
        "needs openssh-server: `cargo xtask test` (or `cargo xtask setup --tests`) installs it"
    );
    Some(super::Env::new())
}

/// A test with one namespace host (number `n` of the test binary): its keys in `<env>/keys`,
/// the masters a failed run leaves closed at the end. Fields drop in this order: masters, host
/// (its sshd and namespace), then the environment's directory.
pub struct OneHost {
    _masters: Masters,
    pub host: NsHost,
    pub keys: PathBuf,
    pub env: super::Env,
}

/// [`ssh_test_env`] with one host; None when the test is skipped.
pub fn one_host(n: u32) -> Option<OneHost> {
    let env = ssh_test_env()?;
    let keys = env.dir.path().join("keys");
    std::fs::create_dir(&keys).unwrap();
    let host = NsHost::new(&keys, n);
    Some(OneHost { _masters: Masters(env.state()), host, keys, env })
}
