//! Other machines of the experiment (`[[host]]`), reached with the system's OpenSSH: one
//! multiplexed master connection per host (ControlMaster, its socket in the host's state
//! directory), opened at the start of a run, closed at teardown (the run record holds its undo,
//! so `cargo xtask cleanup` closes it after a crash). Host keys are verified
//! (`StrictHostKeyChecking=yes` against a known_hosts file), `BatchMode=yes` (no prompt), no
//! configuration file is read (`-F none`), nothing listens on a port of pgtier's own, and every
//! word of a remote command is quoted for the remote shell (`journal::command::posix_quote`).

use std::net::{IpAddr, SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use experiment::Host;
use journal::command::posix_command;
use journal::{CommandLine, Journal, Undo};
use results::manifest::ClientRecord;
use runner::RunnerError;
use runner::env::{ClientTransport, Password, RemoteClient};

pub mod binary;
pub mod target;

/// How long an ssh command may take before it is killed (opening the master included).
const SSH_TIMEOUT: Duration = Duration::from_secs(30);

/// How long copying pgtier's binary to a host may take (tens of MB).
const SHIP_TIMEOUT: Duration = Duration::from_secs(300);

/// One host as ssh reaches it.
#[derive(Clone, Debug)]
pub struct SshHost {
    pub name: String,
    /// `user@address`.
    pub destination: String,
    /// Every ssh option of every command to this host (the control socket included).
    pub options: Vec<String>,
    /// The master connection's socket.
    pub control_path: PathBuf,
    /// This run's directory on the host (mode 0700), removed at teardown.
    pub work_dir: String,
}

/// What opening a host's connection measured.
#[derive(Clone, Debug)]
pub struct Opened {
    /// `ssh -o ControlMaster=yes -N -f` until it returned (authenticated, in the background).
    pub setup: Duration,
    /// Median of `ssh host true` over the master.
    pub command_rtt: Duration,
}

/// The host's state directory on this machine: `$PGTIER_STATE_DIR/hosts/<name>`.
pub fn host_state_dir(name: &str) -> PathBuf {
    crate::paths::state_dir().join("hosts").join(name)
}

/// A path as the value of an ssh `-o` option: `%` doubled (ssh expands `%h`, `%C`, ... in these
/// paths), in double quotes when it holds whitespace (ssh splits option values on it). The
/// experiment file's paths cannot hold `"` or control characters (validation refuses them).
fn ssh_path(p: &Path) -> String {
    let s = p.display().to_string().replace('%', "%%");
    if s.chars().any(char::is_whitespace) { format!("\"{s}\"") } else { s }
}

/// The ssh options of every command to `host`, its control socket at `control_path`.
pub fn ssh_options(host: &Host, control_path: &Path) -> Vec<String> {
    let mut o: Vec<String> = vec!["-F".into(), "none".into(), "-p".into(), host.port.to_string()];
    let opt = |o: &mut Vec<String>, kv: String| {
        o.push("-o".into());
        o.push(kv);
    };
    opt(&mut o, format!("ControlPath={}", ssh_path(control_path)));
    opt(&mut o, "StrictHostKeyChecking=yes".into());
    if let Some(k) = &host.known_hosts {
        opt(&mut o, format!("UserKnownHostsFile={}", ssh_path(k)));
        opt(&mut o, "GlobalKnownHostsFile=none".into());
    }
    if let Some(i) = &host.identity_file {
        opt(&mut o, format!("IdentityFile={}", ssh_path(i)));
        opt(&mut o, "IdentitiesOnly=yes".into());
    }
    opt(&mut o, "BatchMode=yes".into());
    opt(&mut o, "ConnectTimeout=10".into());
    opt(&mut o, "ServerAliveInterval=15".into());
    o
}

impl SshHost {
    /// The host as this run reaches it (`token` names the control socket and the remote
    /// directory; it is the run id's short token).
    pub fn new(host: &Host, token: &str) -> SshHost {
        let control_path = host_state_dir(&host.name).join(format!("{token}.ssh"));
        SshHost {
            name: host.name.clone(),
            destination: format!("{}@{}", host.user, host.address),
            options: ssh_options(host, &control_path),
            control_path,
            // The host's name too: hosts that share a filesystem (or one host in two roles of
            // two runs) never meet in one directory.
            work_dir: format!("/tmp/pgtier-{token}-{}", host.name),
        }
    }

    /// `ssh <options> <destination> -- <words, quoted>`: runs `words` on the host over the
    /// master connection.
    pub fn command(&self, words: &[String]) -> CommandLine {
        CommandLine::new("ssh").args(&self.options).arg(&self.destination).arg("--").arg(posix_command(words))
    }

    /// `ssh ... -o ControlMaster=yes -o ControlPersist=yes -N -f <destination>`: opens the
    /// master connection and leaves it in the background.
    pub fn master_command(&self) -> CommandLine {
        CommandLine::new("ssh")
            .args(&self.options)
            .args(["-o", "ControlMaster=yes", "-o", "ControlPersist=yes", "-N", "-f"])
            .arg(&self.destination)
    }

    /// Opens the master connection (its undo recorded first), measures it and a command's
    /// round trip over it, and makes this run's directory on the host (its undo recorded first).
    pub fn open(&self, journal: &Journal) -> Result<Opened> {
        let dir = self.control_path.parent().expect("a control path has a directory");
        std::fs::create_dir_all(dir).with_context(|| format!("create {}", dir.display()))?;
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
            .with_context(|| format!("chmod 0700 {}", dir.display()))?;
        journal.record(
            Undo::CloseSshMaster {
                host: self.name.clone(),
                control_path: self.control_path.clone(),
                options: self.options.clone(),
                destination: self.destination.clone(),
            },
            format!("ssh connection to host {}", self.name),
        )?;
        let master = self.master_command();
        let t0 = Instant::now();
        master.run_with_timeout(Some(SSH_TIMEOUT)).with_context(|| {
            format!(
                "open the ssh connection to host {} ({}): is its key in the known_hosts file, and the identity authorised there?",
                self.name, self.destination
            )
        })?;
        let setup = t0.elapsed();
        let mut rtts = Vec::new();
        for _ in 0..5 {
            let t = Instant::now();
            self.run(&["true".into()]).with_context(|| format!("run `true` on host {}", self.name))?;
            rtts.push(t.elapsed());
        }
        journal.record(
            Undo::RemoveRemoteDir {
                host: self.name.clone(),
                options: self.options.clone(),
                destination: self.destination.clone(),
                path: self.work_dir.clone(),
            },
            format!("this run's directory on host {}", self.name),
        )?;
        // mkdir fails on an existing path: the directory is this run's own, never a link.
        self.run(&["mkdir".into(), "-m".into(), "700".into(), "--".into(), self.work_dir.clone()])
            .with_context(|| format!("make {} on host {}", self.work_dir, self.name))?;
        Ok(Opened { setup, command_rtt: median(rtts) })
    }

    /// Runs `words` on the host; fails on a non-zero exit with its stderr.
    pub fn run(&self, words: &[String]) -> Result<journal::Output, journal::CommandError> {
        self.command(words).run_with_timeout(Some(SSH_TIMEOUT))
    }

    /// Writes `contents` to `path` on the host, created mode 0600 (umask 077), from stdin: the
    /// contents are on no command line.
    pub fn write_private(&self, path: &str, contents: &[u8]) -> Result<()> {
        let words: Vec<String> =
            ["sh", "-c", r#"umask 077 && cat > "$1""#, "sh", path].iter().map(|s| s.to_string()).collect();
        self.command(&words)
            .run_with_input(contents, Some(SSH_TIMEOUT))
            .with_context(|| format!("write {path} on host {}", self.name))?;
        Ok(())
    }
}

/// pgtier's own binary and its settings profiles on a host, for the steps that run there.
#[derive(Clone, Debug)]
pub struct Shipped {
    /// The binary ([`binary::shipped_binary`]: the release `pgtier`), mode 0700 in the run's directory on the host.
    pub bin: String,
    /// `configs/` unpacked there (`$PGTIER_CONFIGS_DIR` of the commands that run the binary).
    pub configs: String,
    /// What the binary answered to `--version` on the host.
    pub version: String,
}

impl Shipped {
    /// The words that run the shipped binary on the host with `args`, its state directory
    /// `state_dir` there, its profiles and the controller's revision in its environment.
    pub fn words(&self, state_dir: &str, revision: Option<&str>, args: &[String]) -> Vec<String> {
        let mut w: Vec<String> =
            vec!["env".into(), format!("PGTIER_STATE_DIR={state_dir}"), format!("PGTIER_CONFIGS_DIR={}", self.configs)];
        if let Some(r) = revision {
            w.push(format!("PGTIER_REVISION={r}"));
        }
        w.push(self.bin.clone());
        w.extend(args.iter().cloned());
        w
    }
}

impl SshHost {
    /// Copies pgtier's binary ([`binary::shipped_binary`]) and `configs/` into the run's directory on the host (over ssh's
    /// stdin: no scp, no port) and checks that the binary starts there. The host must be able
    /// to run it: the same architecture and a C library at least as new as this machine's.
    pub fn ship_pgtier(&self) -> Result<Shipped> {
        let exe = binary::shipped_binary()?;
        let bytes = std::fs::read(&exe).with_context(|| format!("read {}", exe.display()))?;
        let bin = format!("{}/pgtier", self.work_dir);
        let t0 = Instant::now();
        let words: Vec<String> = ["sh", "-c", r#"umask 077 && cat > "$1" && chmod 700 "$1""#, "sh", &bin]
            .iter()
            .map(|s| s.to_string())
            .collect();
        self.command(&words)
            .run_with_input(&bytes, Some(SHIP_TIMEOUT))
            .with_context(|| format!("copy {} to {bin} on host {}", exe.display(), self.name))?;
        eprintln!(
            "  [{}] copied {} ({:.1} MiB) in {:.2} s",
            self.name,
            exe.display(),
            bytes.len() as f64 / (1024.0 * 1024.0),
            t0.elapsed().as_secs_f64()
        );
        let configs_dir = crate::paths::configs_dir();
        let tar = std::process::Command::new("tar")
            .arg("-C")
            .arg(&configs_dir)
            .args(["-cf", "-", "."])
            .output()
            .with_context(|| format!("pack {}", configs_dir.display()))?;
        if !tar.status.success() {
            bail!("pack {}: {}", configs_dir.display(), String::from_utf8_lossy(&tar.stderr).trim());
        }
        let configs = format!("{}/configs", self.work_dir);
        let words: Vec<String> = ["sh", "-c", r#"mkdir -m 700 -- "$1" && tar -C "$1" -xf -"#, "sh", &configs]
            .iter()
            .map(|s| s.to_string())
            .collect();
        self.command(&words)
            .run_with_input(&tar.stdout, Some(SHIP_TIMEOUT))
            .with_context(|| format!("unpack configs/ into {configs} on host {}", self.name))?;
        let version = self
            .run(&[bin.clone(), "--version".into()])
            .with_context(|| {
                format!(
                    "start pgtier's binary on host {} ({bin}): the host needs this machine's architecture and a C library at least as new",
                    self.name
                )
            })?
            .stdout
            .trim()
            .to_string();
        Ok(Shipped { bin, configs, version })
    }
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v.get(v.len() / 2).copied().unwrap_or_default()
}

/// The runner's view of a client host.
struct Transport(SshHost);

impl ClientTransport for Transport {
    fn host(&self) -> &str {
        &self.0.name
    }

    fn command(&self, words: &[String]) -> CommandLine {
        self.0.command(words)
    }

    fn work_dir(&self) -> &str {
        &self.0.work_dir
    }

    fn run(&self, words: &[String]) -> Result<Vec<u8>, RunnerError> {
        Ok(self.0.run(words)?.stdout.into_bytes())
    }
}

/// The major version in a `pgbench (PostgreSQL) 15.14 (Debian 15.14-0+deb12u1)` line.
pub fn major_version(version_line: &str) -> Option<u32> {
    let v = version_line.split_whitespace().find(|w| w.chars().next().is_some_and(|c| c.is_ascii_digit()))?;
    let digits: String = v.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

/// The host's `pgbench --version` (or why it did not answer) against this machine's: the same
/// major version, or an error saying what to install.
fn same_pgbench(host: &str, path: &str, local: &str, remote: Result<String, String>) -> Result<String> {
    let major = major_version(local).unwrap_or(0);
    match remote {
        Err(e) => bail!(
            "host {host}: `{path} --version` failed ({e}); install the PostgreSQL client of major {major} there (Debian: postgresql-client-{major}), at the same path as here"
        ),
        Ok(v) if major_version(&v) != Some(major) => bail!(
            "host {host} has {v:?} at {path}, this machine {local:?}: the client host must run pgbench of the same major version ({major}; Debian: postgresql-client-{major})"
        ),
        Ok(v) => Ok(v),
    }
}

/// The route to `to` as the kernel chose it: `ip -o route get`'s device and source address,
/// and the device's kind (veth, ...) from `ip -d link`.
pub fn network_path(to: IpAddr) -> Result<(IpAddr, String)> {
    let out = CommandLine::new("ip").args(["-o", "route", "get", &to.to_string()]).run()?;
    let words: Vec<&str> = out.stdout.split_whitespace().collect();
    let after = |k: &str| words.iter().position(|w| *w == k).and_then(|i| words.get(i + 1)).copied();
    let (Some(dev), Some(src)) = (after("dev"), after("src")) else {
        bail!("`ip route get {to}` names no device and source address: {}", out.stdout.trim());
    };
    let src: IpAddr = src.parse().with_context(|| format!("`ip route get {to}`: source {src:?}"))?;
    let kind = CommandLine::new("ip")
        .args(["-o", "-d", "link", "show", "dev", dev])
        .run()
        .ok()
        .and_then(|o| link_kind(&o.stdout))
        .unwrap_or_else(|| "link".into());
    Ok((src, format!("{kind} {dev} {src} -> {to}")))
}

/// The kind `ip -d link` prints after the link's attributes (`veth`, `bridge`, `vlan`, ...);
/// None for a physical interface, which has none.
fn link_kind(text: &str) -> Option<String> {
    const KINDS: [&str; 12] = [
        "veth",
        "bridge",
        "vlan",
        "bond",
        "macvlan",
        "macvtap",
        "ipvlan",
        "vxlan",
        "wireguard",
        "tun",
        "dummy",
        "geneve",
    ];
    let words: Vec<&str> = text.split_whitespace().collect();
    let i = words.iter().position(|w| *w == "promiscuity")?;
    words[i..].iter().find(|w| KINDS.contains(w)).map(|w| w.to_string())
}

/// The network round trip to the host: the median of 10 TCP connects to its SSH port (a SYN
/// and its SYN-ACK; no process of the host is involved beyond its kernel).
pub fn tcp_rtt(address: IpAddr, port: u16) -> Option<Duration> {
    let to = SocketAddr::new(address, port);
    let mut v = Vec::new();
    for _ in 0..10 {
        let t = Instant::now();
        let s = TcpStream::connect_timeout(&to, Duration::from_secs(5)).ok()?;
        v.push(t.elapsed());
        drop(s);
    }
    Some(median(v))
}

/// The first of `count` consecutive TCP ports from `from` that nothing listens on at `address`
/// (a listener on all addresses, such as another PostgreSQL's `*:5432`, takes the port of every
/// address); checked by binding each, so a port taken later still fails the server's start,
/// which its log then says.
pub fn free_ports(address: IpAddr, from: u16, count: u16) -> Option<u16> {
    let free = |p: u16| std::net::TcpListener::bind(SocketAddr::new(address, p)).is_ok();
    (from..from.saturating_add(1000)).find(|&base| (0..count).all(|i| base.checked_add(i).is_some_and(free)))
}

/// A random password (128 bits, hex) from the kernel's generator.
/// How a host's round trip is measured ([`tcp_rtt`]), for its record.
pub fn rtt_method(host: &Host) -> String {
    format!("median of 10 TCP connects from the server to {}:{}", host.address, host.port)
}

/// The transport to the hosts, for their records: this machine's OpenSSH and how it is used.
pub fn transport() -> String {
    let version = CommandLine::new("ssh").arg("-V").output(Some(SSH_TIMEOUT)).map(|o| o.stderr.trim().to_string());
    format!(
        "{}, one multiplexed connection (ControlMaster), StrictHostKeyChecking=yes",
        version.unwrap_or_else(|_| "OpenSSH".into())
    )
}

fn random_password() -> Result<String> {
    let mut buf = [0u8; 16];
    use std::io::Read;
    std::fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut buf)).context("read /dev/urandom")?;
    Ok(buf.iter().map(|b| format!("{b:02x}")).collect())
}

/// The client host made ready for a run: connection opened and measured, pgbench found there
/// in the same major version as this machine's, the route and its round trip measured, a
/// random password made and its password file written on the host (mode 0600, in the run's
/// directory there). The manifest's record says all of it but the password.
pub fn open_client(
    host: &Host,
    token: &str,
    journal: &Journal,
    local_pgbench: &Path,
    local_version_line: &str,
) -> Result<(RemoteClient, ClientRecord)> {
    let ssh = SshHost::new(host, token);
    eprintln!("opening the ssh connection to client host {} ({})", ssh.name, ssh.destination);
    let opened = ssh.open(journal)?;
    let pgbench = local_pgbench.display().to_string();
    let answer = ssh.run(&[pgbench.clone(), "--version".into()]).map(|o| o.stdout.trim().to_string());
    let remote_version = same_pgbench(&ssh.name, &pgbench, local_version_line, answer.map_err(|e| e.to_string()))?;
    let (server_address, path) = network_path(host.address)?;
    let rtt = tcp_rtt(host.address, host.port);
    let client = RemoteClient {
        transport: Arc::new(Transport(ssh.clone())),
        server_address,
        client_address: host.address,
        password: Password::new(random_password()?),
        passfile: format!("{}/pgpass", ssh.work_dir),
        pgbench,
        tpcc_driver: None,
    };
    ssh.write_private(&client.passfile, client.passfile_line().as_bytes())?;
    let record = ClientRecord {
        host: host.name.clone(),
        address: host.address.to_string(),
        server_address: server_address.to_string(),
        network_path: path,
        rtt_ms: rtt.map(|d| d.as_secs_f64() * 1e3),
        rtt_method: rtt_method(host),
        transport: transport(),
        ssh_setup_ms: opened.setup.as_secs_f64() * 1e3,
        ssh_command_ms: opened.command_rtt.as_secs_f64() * 1e3,
        pgbench: remote_version,
        authentication: format!(
            "TCP to {server_address}, pg_hba.conf admits only {}, scram-sha-256, a random password per run (recorded nowhere) in a mode-0600 PGPASSFILE on the host",
            host.address
        ),
        work_dir: ssh.work_dir.clone(),
        tpcc_driver: None,
    };
    eprintln!(
        "  client host {}: {} (TCP round trip {}, ssh set-up {:.0} ms, a command over it {:.1} ms)",
        record.host,
        record.network_path,
        record.rtt_ms.map(|r| format!("{r:.3} ms")).unwrap_or_else(|| "not measured".into()),
        record.ssh_setup_ms,
        record.ssh_command_ms
    );
    Ok((client, record))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host() -> Host {
        Host {
            name: "loadgen".into(),
            address: "169.254.200.2".parse().unwrap(),
            user: "root".into(),
            port: 2222,
            identity_file: Some("/k/id%h".into()),
            known_hosts: Some("/k/known hosts".into()),
            roles: vec![experiment::HostRole::Client],
            state_dir: None,
            origin: experiment::Origin { file: "x.toml".into(), line: None, key: "host".into() },
        }
    }

    #[test]
    fn every_command_verifies_the_host_key_and_goes_over_the_master() {
        let h = SshHost::new(&host(), "abc123");
        let c = h.command(&["echo".into(), "$(reboot)".into(), "it's".into()]);
        assert_eq!(c.program, "ssh");
        let joined = c.args.join("\n");
        for want in [
            "StrictHostKeyChecking=yes",
            "UserKnownHostsFile=\"/k/known hosts\"",
            "IdentityFile=/k/id%%h",
            "BatchMode=yes",
            "ControlPath=",
        ] {
            assert!(joined.contains(want), "{want}: {joined}");
        }
        assert!(!joined.contains("StrictHostKeyChecking=no") && !joined.contains("accept-new"));
        assert_eq!(&c.args[..2], ["-F", "none"], "no configuration file is read");
        let n = c.args.len();
        assert_eq!(&c.args[n - 3..n - 1], ["root@169.254.200.2", "--"]);
        assert_eq!(c.args[n - 1], r#"echo '$(reboot)' 'it'\''s'"#, "one string, every word quoted");
    }

    #[test]
    fn pgbench_on_the_host_must_be_there_and_of_the_same_major() {
        let here = "pgbench (PostgreSQL) 15.18 (Debian 15.18-0+deb12u1)";
        let p = "/usr/lib/postgresql/15/bin/pgbench";
        assert!(same_pgbench("h", p, here, Ok("pgbench (PostgreSQL) 15.3".into())).is_ok());
        let e = same_pgbench("h", p, here, Ok("pgbench (PostgreSQL) 16.4".into())).unwrap_err().to_string();
        assert!(e.contains("host h has \"pgbench (PostgreSQL) 16.4\"") && e.contains("postgresql-client-15"), "{e}");
        let e = same_pgbench("h", p, here, Err("exited with status 127: not found".into())).unwrap_err().to_string();
        assert!(e.contains("--version` failed (exited with status 127") && e.contains("postgresql-client-15"), "{e}");
    }

    #[test]
    fn ports_something_listens_on_are_skipped() {
        let lo: IpAddr = "127.0.0.1".parse().unwrap();
        let taken = std::net::TcpListener::bind((lo, 0)).unwrap();
        let port = taken.local_addr().unwrap().port();
        let base = free_ports(lo, port, 2).expect("free ports after it");
        assert!(base > port, "{base} after the taken {port}");
        assert!(free_ports(lo, port.saturating_sub(1), 3).is_none_or(|b| b > port));
    }

    #[test]
    fn versions_and_link_kinds() {
        assert_eq!(major_version("pgbench (PostgreSQL) 15.14 (Debian 15.14-0+deb12u1)"), Some(15));
        assert_eq!(major_version("pgbench (PostgreSQL) 17beta1"), Some(17));
        assert_eq!(major_version("no version"), None);
        let veth = "7: pgtc0@if6: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1500 qdisc noqueue state UP mode DEFAULT group default qlen 1000\\    link/ether 2e:1f:aa:bb:cc:dd brd ff:ff:ff:ff:ff:ff link-netns x promiscuity 0 allmulti 0 minmtu 68 maxmtu 65535 \\    veth addrgenmode eui64 numtxqueues 2";
        assert_eq!(link_kind(veth).as_deref(), Some("veth"));
        let phys = "2: eth0: <UP> mtu 1500\\    link/ether 00:11:22:33:44:55 promiscuity 0 minmtu 68 maxmtu 9000 addrgenmode eui64 numtxqueues 1";
        assert_eq!(link_kind(phys), None);
    }
}
