//! What every runner step needs: the PostgreSQL installation, its OS user, the run's journal,
//! the cgroup hierarchy, the private socket and the cancellation flag.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use journal::{CommandLine, ProcessId, RecordId, Undo};

use crate::RunnerError;

use crate::cgroup::Hierarchy;
use crate::launch::ServerLaunch;

#[derive(Clone)]
pub struct RunnerEnv<'a> {
    /// How every server of the run is started (build, OS user, run record, socket, port).
    pub server: ServerLaunch<'a>,
    /// `None` when the machine has no usable cgroup hierarchy (then no memory limit can be set).
    pub cgroups: Option<Hierarchy>,
    /// Names this run's cgroups.
    pub run_token: String,
    /// Logs of servers and loads go here.
    pub logs_dir: PathBuf,
    pub cancel: Arc<AtomicBool>,
    /// Drop the kernel's page cache before each measured run (needs root).
    pub drop_caches: bool,
    /// How long a benchmark may outlive its duration before the watchdog kills it (None: 30 s
    /// or half the duration, whichever is longer).
    pub watchdog_grace: Option<std::time::Duration>,
    /// I/O caps applied to every server (each only affects I/O to its own device).
    pub throttles: Vec<crate::cgroup::BlkioThrottle>,
    /// The benchmark client's host when it is not this machine (`[[host]] roles = ["client"]`);
    /// None: pgbench runs here, on the private socket.
    pub client: Option<RemoteClient>,
    /// The CPUs the benchmark clients started here are confined to (`[measurement]
    /// pin_client`); None: any.
    pub client_cpus: Option<Vec<u32>>,
    /// A test of the method: each server life's own CPU quota (`[measurement] handicap_cpus`);
    /// None: no quota.
    pub handicap: Option<LifeHandicap>,
}

/// Each server life's CPU quota, `cpus * exp(spread * z)` with `z` standard normal, drawn from
/// the run's seed, the session, the placement and the life's number: the same run order gives
/// the same quotas. A server that is CPU-bound at its quota runs in proportion to it, so the
/// lives differ by an offset of known spread (a test of the method, not of storage).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LifeHandicap {
    pub cpus: f64,
    /// The standard deviation of the quota's logarithm, percent.
    pub spread_pct: f64,
    pub seed: u64,
}

impl LifeHandicap {
    /// The quota of one life, in CPUs.
    pub fn quota(&self, session: &str, placement: &str, life: u32) -> f64 {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325 ^ self.seed;
        for b in session.bytes().chain([0]).chain(placement.bytes()).chain([0]).chain(life.to_le_bytes()) {
            h = (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
        }
        let z = standard_normal(&mut h);
        self.cpus * (self.spread_pct / 100.0 * z).exp()
    }
}

/// splitmix64's next value.
fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A standard normal draw (Box-Muller) from two uniforms of splitmix64.
fn standard_normal(state: &mut u64) -> f64 {
    let uniform = |s: &mut u64| ((splitmix(s) >> 11) as f64 + 0.5) / (1u64 << 53) as f64;
    let (u1, u2) = (uniform(state), uniform(state));
    (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
}

#[cfg(test)]
mod handicap_tests {
    use super::LifeHandicap;

    #[test]
    fn quotas_spread_as_asked_and_repeat_with_the_seed() {
        let h = LifeHandicap { cpus: 0.6, spread_pct: 8.0, seed: 42 };
        let logs: Vec<f64> = (0..4000).map(|i| (h.quota("s1", "a", i) / 0.6).ln()).collect();
        let mean = logs.iter().sum::<f64>() / logs.len() as f64;
        let sd = (logs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (logs.len() - 1) as f64).sqrt();
        // 4000 draws: the mean's standard error is 0.13%, the sd's 0.09%.
        assert!(mean.abs() < 0.005, "{mean}");
        assert!((sd - 0.08).abs() < 0.004, "{sd}");
        assert_eq!(h.quota("s2", "b", 1), h.quota("s2", "b", 1));
        assert_ne!(h.quota("s2", "b", 1), h.quota("s2", "a", 1));
        assert_ne!(h.quota("s2", "b", 1), LifeHandicap { seed: 43, ..h }.quota("s2", "b", 1));
        assert_eq!(LifeHandicap { spread_pct: 0.0, ..h }.quota("s1", "a", 0), 0.6);
    }
}

/// How the runner reaches the host that runs the benchmark client; xtask implements it over
/// OpenSSH. The runner only builds argument vectors; the transport quotes them for the host.
pub trait ClientTransport: Send + Sync {
    /// The host's name in the experiment file.
    fn host(&self) -> &str;
    /// The local command that runs `words` on the host (each word quoted for its shell).
    fn command(&self, words: &[String]) -> CommandLine;
    /// A directory on the host for this run's files (the password file, transaction logs).
    fn work_dir(&self) -> &str;
    /// Runs `words` on the host and returns what it printed on stdout.
    fn run(&self, words: &[String]) -> Result<Vec<u8>, RunnerError>;
}

/// The benchmark client on another host: how it is reached, and how the server admits it
/// (over TCP, on the address facing the client, scram-sha-256 with a password made per run).
#[derive(Clone)]
pub struct RemoteClient {
    pub transport: Arc<dyn ClientTransport>,
    /// The address the server listens on, besides its private socket: the one facing the client.
    pub server_address: std::net::IpAddr,
    /// The client's address as the server sees it: pg_hba.conf admits only it.
    pub client_address: std::net::IpAddr,
    /// The run's password of the benchmark role; never written to results or logs.
    pub password: Password,
    /// The password file on the client host (mode 0600, `PGPASSFILE`).
    pub passfile: String,
    /// pgbench on the client host.
    pub pgbench: String,
    /// pgtier's own binary shipped to the client host, for the TPC-C driver (one session for
    /// the run, shared by every clone); None when no TPC-C workload needs it there.
    pub tpcc_driver: Option<Arc<crate::tpcc_remote::driver::TpccDriver>>,
}

/// The CPU seconds (user + system) of the command the host's shell ran, from the last two
/// lines `times` printed on stderr (the shell's, then its children's: `0m1.230000s 0m0.450000s`
/// in dash, `0m1.230s 0m0.450s` in bash).
pub fn remote_cpu_seconds(stderr: &str) -> Option<f64> {
    let parse = |w: &str| -> Option<f64> {
        let (m, s) = w.strip_suffix('s')?.split_once('m')?;
        Some(m.parse::<f64>().ok()? * 60.0 + s.parse::<f64>().ok()?)
    };
    let last = stderr.lines().rev().find(|l| !l.trim().is_empty())?;
    let words: Vec<&str> = last.split_whitespace().collect();
    match words.as_slice() {
        [user, sys] => Some(parse(user)? + parse(sys)?),
        _ => None,
    }
}

/// A password that prints as `<redacted>`.
#[derive(Clone)]
pub struct Password(String);

impl Password {
    pub fn new(secret: String) -> Password {
        Password(secret)
    }

    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Password {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("<redacted>")
    }
}

impl RemoteClient {
    /// The line of a password file (`hostname:port:database:username:password`) for any port
    /// of the server's address (a `slices` session's servers have one port each).
    pub fn passfile_line(&self) -> String {
        format!("{}:*:*:{}:{}\n", self.server_address, crate::launch::DB_ROLE, self.password.expose())
    }

    /// The local command that runs `cmd` on the client host, with a minimal environment and
    /// the password file; the host's shell then prints the CPU time of `cmd` on stderr
    /// (`times`, read back by [`remote_cpu_seconds`]), since the harness's own children are
    /// only ssh.
    pub fn wrap(&self, cmd: &CommandLine) -> CommandLine {
        let mut words: Vec<String> = vec![
            "sh".into(),
            "-c".into(),
            r#""$@"; s=$?; times >&2; exit $s"#.into(),
            "sh".into(),
            "env".into(),
            "-i".into(),
            "PATH=/usr/local/bin:/usr/bin:/bin".into(),
            "LC_ALL=C".into(),
            format!("PGPASSFILE={}", self.passfile),
            cmd.program.clone(),
        ];
        words.extend(cmd.args.iter().cloned());
        self.transport.command(&words)
    }
}

impl RunnerEnv<'_> {
    pub fn cancelled(&self) -> bool {
        self.cancel.load(Ordering::SeqCst)
    }

    /// Starts a benchmark client (pgbench, pgbench -i) in its own process group, with the minimal
    /// environment, stderr piped, and records it in the journal so that teardown stops it even
    /// after a crash of the harness. Release the record once the client has exited.
    pub(crate) fn spawn_client(
        &self,
        cmd: &CommandLine,
        stdout: std::process::Stdio,
        label: &str,
    ) -> Result<(tokio::process::Child, Option<RecordId>), RunnerError> {
        self.spawn_client_with_stdin(cmd, std::process::Stdio::null(), stdout, label)
    }

    /// [`spawn_client`](Self::spawn_client) with `stdin` (a client on another host that runs
    /// while its stdin stays open, the TPC-C driver).
    pub(crate) fn spawn_client_with_stdin(
        &self,
        cmd: &CommandLine,
        stdin: std::process::Stdio,
        stdout: std::process::Stdio,
        label: &str,
    ) -> Result<(tokio::process::Child, Option<RecordId>), RunnerError> {
        let mut command = tokio::process::Command::new(&cmd.program);
        command.args(&cmd.args);
        minimal_env(command.as_std_mut());
        if let Some(cpus) = &self.client_cpus {
            crate::affinity::confine(command.as_std_mut(), cpus);
        }
        let child = command
            .stdin(stdin)
            .stdout(stdout)
            .stderr(std::process::Stdio::piped())
            .process_group(0)
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| RunnerError::io(format!("start {cmd}"), e))?;
        let record = match child.id().and_then(|pid| ProcessId::of(pid as i32)) {
            Some(process) => Some(self.server.journal.record(
                Undo::StopProcess { label: label.into(), process, signal: "TERM".into(), grace_ms: 5000 },
                label,
            )?),
            None => None,
        };
        if let (Some(cpus), Some(pid)) = (&self.client_cpus, child.id()) {
            // An error here drops the child, which kill_on_drop stops.
            crate::affinity::verify(pid as i32, cpus, label)?;
        }
        Ok((child, record))
    }
}

/// Replaces a child's environment by a minimal one (PATH, LC_ALL=C): PG* variables of the
/// caller (PGOPTIONS, ...) would silently change the benchmark, and root's environment, which may
/// hold secrets such as an NVMe DH-HMAC-CHAP key, is not handed on.
pub(crate) fn minimal_env(cmd: &mut std::process::Command) {
    cmd.env_clear().env("PATH", "/usr/local/bin:/usr/bin:/bin").env("LC_ALL", "C");
}

#[cfg(test)]
mod tests {
    use super::remote_cpu_seconds;

    #[test]
    fn cpu_times_the_hosts_shell_prints() {
        let dash = "progress: 1.0 s, 10.0 tps\n0m0.004000s 0m0.001000s\n0m1.230000s 0m0.450000s\n";
        assert_eq!(remote_cpu_seconds(dash).map(|c| (c * 1000.0).round()), Some(1680.0));
        assert_eq!(remote_cpu_seconds("0m0.00s 0m0.00s\n1m2.500s 0m0.500s").map(|c| c.round()), Some(63.0));
        assert_eq!(remote_cpu_seconds("pgbench: error: connection refused\n"), None);
        assert_eq!(remote_cpu_seconds(""), None);
    }
}
