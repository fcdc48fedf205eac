//! Finding PostgreSQL's binaries and the OS user it runs as.

use std::path::{Path, PathBuf};
use std::time::Duration;

use journal::CommandLine;
use serde::Serialize;

use crate::RunnerError;

/// A PostgreSQL installation: where its programs are and which version they are.
#[derive(Clone, Debug, Serialize)]
pub struct PgInstall {
    pub bin_dir: PathBuf,
    /// `postgres --version`, e.g. `postgres (PostgreSQL) 15.18 (Debian 15.18-0+deb12u1)`.
    pub version_line: String,
    pub major: u32,
    /// Where the benchmark client (pgbench) comes from: `bin_dir` when it has one, else the
    /// installed server's (a build without pgbench, such as a server-only package, is driven by
    /// the system's pgbench; the report says so).
    pub client_dir: PathBuf,
    /// `pgbench --version` of that client.
    pub client_version_line: String,
}

const PROGRAMS: [&str; 3] = ["initdb", "postgres", "pgbench"];
const SERVER_PROGRAMS: [&str; 2] = ["initdb", "postgres"];

impl PgInstall {
    /// Uses `bin_dir` when given; otherwise the newest `/usr/lib/postgresql/N/bin`, then
    /// `/usr/local/pgsql/bin`, then the directory of `postgres` on PATH.
    pub fn detect(bin_dir: Option<&Path>) -> Result<PgInstall, RunnerError> {
        let dir = match bin_dir {
            Some(d) => d.to_path_buf(),
            None => candidates().into_iter().find(|d| has_all(d)).ok_or_else(|| {
                RunnerError::Setup(
                    "no PostgreSQL server binaries found (looked in /usr/lib/postgresql/*/bin, /usr/local/pgsql/bin and PATH); install them with `apt-get install postgresql` or set [postgres] bin_dir".into(),
                )
            })?,
        };
        for p in SERVER_PROGRAMS {
            if !dir.join(p).exists() {
                return Err(RunnerError::Setup(format!(
                    "{} has no {p}; PostgreSQL's bin_dir must hold initdb and postgres",
                    dir.display()
                )));
            }
        }
        let version_line = version_of(&dir.join("postgres"))?;
        let major = parse_major(&version_line)
            .ok_or_else(|| RunnerError::Setup(format!("cannot read the version in {version_line:?}")))?;
        let client_dir = if dir.join("pgbench").exists() {
            dir.clone()
        } else {
            candidates().into_iter().find(|d| d.join("pgbench").exists()).ok_or_else(|| {
                RunnerError::Setup(format!(
                    "{} has no pgbench, and no other PostgreSQL installation has one; install postgresql-contrib (or postgresql)",
                    dir.display()
                ))
            })?
        };
        let client_version_line = version_of(&client_dir.join("pgbench"))?;
        Ok(PgInstall { bin_dir: dir, version_line, major, client_dir, client_version_line })
    }

    /// The settings this server knows (`postgres --describe-config`, one per line, the name
    /// first).
    pub fn known_settings(&self) -> Result<std::collections::BTreeSet<String>, RunnerError> {
        let out = CommandLine::new(self.program("postgres").to_string_lossy())
            .arg("--describe-config")
            .run_with_timeout(Some(Duration::from_secs(30)))?;
        Ok(out
            .stdout
            .lines()
            .filter_map(|l| l.split('\t').next())
            .map(str::to_string)
            .filter(|n| !n.is_empty())
            .collect())
    }

    /// `pg_config --configure` of the build, when it ships pg_config.
    pub fn configure_options(&self) -> Option<String> {
        let pg_config = self.program("pg_config");
        if !pg_config.exists() {
            return None;
        }
        CommandLine::new(pg_config.to_string_lossy())
            .arg("--configure")
            .run_with_timeout(Some(Duration::from_secs(30)))
            .ok()
            .map(|o| o.stdout.trim().to_string())
    }

    pub fn program(&self, name: &str) -> PathBuf {
        self.bin_dir.join(name)
    }

    /// The version number, e.g. `15.18`.
    pub fn version(&self) -> String {
        self.version_line
            .split_whitespace()
            .find(|w| w.chars().next().is_some_and(|c| c.is_ascii_digit()))
            .unwrap_or("")
            .to_string()
    }
}

fn version_of(program: &Path) -> Result<String, RunnerError> {
    let out =
        CommandLine::new(program.to_string_lossy()).arg("--version").run_with_timeout(Some(Duration::from_secs(30)))?;
    Ok(out.stdout.trim().to_string())
}

fn candidates() -> Vec<PathBuf> {
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .map(|rd| {
            rd.flatten()
                .filter_map(|e| {
                    let v = e.file_name().to_string_lossy().parse::<u32>().ok()?;
                    Some((v, e.path().join("bin")))
                })
                .collect()
        })
        .unwrap_or_default();
    versions.sort_by_key(|v| std::cmp::Reverse(v.0));
    let mut out: Vec<PathBuf> = versions.into_iter().map(|(_, p)| p).collect();
    out.push("/usr/local/pgsql/bin".into());
    if let Some(p) = journal::command::which("postgres").and_then(|p| std::fs::canonicalize(p).ok())
        && let Some(d) = p.parent()
    {
        out.push(d.to_path_buf());
    }
    out
}

fn has_all(d: &Path) -> bool {
    PROGRAMS.iter().all(|p| d.join(p).exists())
}

fn parse_major(line: &str) -> Option<u32> {
    let v = line.split_whitespace().find(|w| w.chars().next().is_some_and(|c| c.is_ascii_digit()))?;
    let digits: String = v.chars().take_while(|c| c.is_ascii_digit()).collect();
    digits.parse().ok()
}

/// The OS user PostgreSQL runs as (never root).
#[derive(Clone, Debug, Serialize)]
pub struct DbUser {
    pub name: String,
    pub uid: u32,
    pub gid: u32,
    /// Supplementary groups, computed before any process is spawned.
    pub groups: Vec<u32>,
}

impl DbUser {
    pub fn lookup(name: &str) -> Result<DbUser, RunnerError> {
        let user = nix::unistd::User::from_name(name)
            .map_err(|e| RunnerError::io(format!("look up user {name}"), e.into()))?
            .ok_or_else(|| {
                RunnerError::Setup(format!(
                    "there is no OS user {name:?}; PostgreSQL never runs as root. Installing PostgreSQL (apt-get install postgresql) creates it"
                ))
            })?;
        if user.uid.is_root() {
            return Err(RunnerError::Setup(format!(
                "user {name} is root; PostgreSQL must run as an unprivileged user"
            )));
        }
        let cname = std::ffi::CString::new(name).expect("user names have no NUL");
        let groups = nix::unistd::getgrouplist(&cname, user.gid)
            .map(|g| g.into_iter().map(|g| g.as_raw()).collect())
            .unwrap_or_else(|_| vec![user.gid.as_raw()]);
        Ok(DbUser { name: name.to_string(), uid: user.uid.as_raw(), gid: user.gid.as_raw(), groups })
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn major_version() {
        assert_eq!(super::parse_major("postgres (PostgreSQL) 15.18 (Debian 15.18-0+deb12u1)"), Some(15));
        assert_eq!(super::parse_major("postgres (PostgreSQL) 17beta1"), Some(17));
    }
}
