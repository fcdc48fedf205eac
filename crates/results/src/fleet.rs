//! A fleet's result set: the same matrix run on several server hosts (`[[host]] roles =
//! ["server"]`), each host's own result set brought back under `hosts/<name>/`, and
//! `fleet.json`, the controller's record of the hosts:
//!
//! ```text
//! fleet.json              the hosts, how each was reached, its clock offset, how its part ended
//! hosts/<name>/           that host's result set (manifest.json, runs/, report.md, ...)
//! hosts/<name>.log        what the host's pgtier printed, line by line
//! report.md, charts/      the hosts compared, written by `report`
//! ```

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The file name of a fleet's record.
pub const FLEET_FILE: &str = "fleet.json";

/// How a server host's part of the fleet ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum HostStatus {
    /// Not run yet (or interrupted before it started).
    Pending,
    /// Every run of its matrix finished and its results are here.
    Complete,
    /// Its pgtier ended with an error (its runs are marked failed with the cause in its set).
    Failed,
    /// The ssh connection was lost while its runs were going on.
    Lost,
}

/// One server host of the fleet, as the controller reached it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct FleetHost {
    pub name: String,
    pub address: String,
    /// pgtier's state directory on the host (its own run records).
    pub state_dir: String,
    /// Where the host's pgtier writes its result set on the host, until it is brought back.
    pub remote_results: String,
    pub status: HostStatus,
    /// Why the host's part did not complete, naming the host.
    #[serde(default)]
    pub cause: Option<String>,
    /// The host's clock minus the controller's, in ms (midpoint of the fastest of several
    /// `date` round trips), and its uncertainty (half that round trip).
    #[serde(default)]
    pub clock_offset_ms: Option<f64>,
    #[serde(default)]
    pub clock_uncertainty_ms: Option<f64>,
    /// Opening the ssh master connection, and a command over it (median), in ms.
    #[serde(default)]
    pub ssh_setup_ms: Option<f64>,
    #[serde(default)]
    pub ssh_command_ms: Option<f64>,
    /// What the shipped binary said to `--version` on the host.
    #[serde(default)]
    pub pgtier_on_host: Option<String>,
    /// The host's result set is under `hosts/<name>/` here (false: it stays in
    /// `remote_results` on the host, or there is none).
    #[serde(default)]
    pub fetched: bool,
    /// When the host's part was started, resumed and ended (RFC 3339).
    #[serde(default)]
    pub attempts: Vec<String>,
}

/// `fleet.json`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct FleetRecord {
    pub experiment_name: String,
    pub experiment_file: String,
    /// The controller's run id (it names every host's remote result set).
    pub run_id: String,
    pub emulated: bool,
    /// The run order's seed, the same on every host.
    pub seed: u64,
    /// `--design`, `--budget`, `--target-halfwidth` given to every host.
    #[serde(default)]
    pub measurement_args: Vec<String>,
    pub command_line: String,
    pub started_at: String,
    #[serde(default)]
    pub finished_at: Option<String>,
    #[serde(default)]
    pub resumed_at: Vec<String>,
    pub hosts: Vec<FleetHost>,
}

impl FleetRecord {
    /// `fleet.json` of `dir`, if `dir` is a fleet's result set.
    pub fn read(dir: &Path) -> Option<std::io::Result<FleetRecord>> {
        let p = dir.join(FLEET_FILE);
        if !p.exists() {
            return None;
        }
        Some(std::fs::read(&p).and_then(|b| {
            serde_json::from_slice(&b).map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
        }))
    }

    pub fn write(&self, dir: &Path) -> std::io::Result<()> {
        let bytes = serde_json::to_vec_pretty(self).map_err(std::io::Error::other)?;
        crate::write_atomic(&dir.join(FLEET_FILE), &bytes)
    }

    /// Host `name`'s result set here.
    pub fn host_dir(dir: &Path, name: &str) -> PathBuf {
        dir.join("hosts").join(name)
    }
}
