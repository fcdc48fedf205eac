//! The result model and its on-disk layout. Written by the harness as each run finishes (atomic
//! writes: temp file, fsync, rename), read by `report`. One directory per experiment run:
//!
//! ```text
//! manifest.json           resolved configuration, environment, devices, tool versions
//! runs/<run id>/          one directory per measured run: result.json + raw tool output
//! runs.csv                one row per measured run
//! summary.csv, charts/, report.md   written by `report`
//! ```

pub mod diskstats;
pub mod fleet;
pub mod manifest;
pub mod record;
pub mod set;
pub mod timestamp;
pub mod warning;

use std::io::Write;
use std::path::{Path, PathBuf};

pub use manifest::{DeviceRecord, Manifest};
pub use record::{FailureKind, RunRecord, RunStatus};
pub use set::ResultSet;
pub use warning::Warning;

/// Writes `contents` to `path` atomically: a temporary file in the same directory, fsync'd, then
/// renamed over `path`, then the directory fsync'd.
pub fn write_atomic(path: &Path, contents: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let tmp = dir.join(format!(
        ".{}.tmp-{}",
        path.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default(),
        std::process::id()
    ));
    {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(contents)?;
        f.sync_all()?;
    }
    std::fs::rename(&tmp, path)?;
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

/// The files of one results directory.
#[derive(Clone, Debug)]
pub struct ResultsDir {
    pub root: PathBuf,
}

impl ResultsDir {
    pub fn new(root: impl Into<PathBuf>) -> Self {
        ResultsDir { root: root.into() }
    }
    pub fn manifest(&self) -> PathBuf {
        self.root.join("manifest.json")
    }
    pub fn runs_dir(&self) -> PathBuf {
        self.root.join("runs")
    }
    pub fn run_dir(&self, run_id: &str) -> PathBuf {
        self.runs_dir().join(run_id)
    }
    pub fn runs_csv(&self) -> PathBuf {
        self.root.join("runs.csv")
    }
    pub fn summary_csv(&self) -> PathBuf {
        self.root.join("summary.csv")
    }
    /// The study's own contrast (report's `contrast.csv`), when it has one.
    pub fn contrast_csv(&self) -> PathBuf {
        self.root.join("contrast.csv")
    }
    pub fn summary_json(&self) -> PathBuf {
        self.root.join("summary.json")
    }
    pub fn series_csv(&self) -> PathBuf {
        self.root.join("series.csv")
    }
    pub fn devices_csv(&self) -> PathBuf {
        self.root.join("devices.csv")
    }
    pub fn statements_csv(&self) -> PathBuf {
        self.root.join("statements.csv")
    }
    pub fn charts_dir(&self) -> PathBuf {
        self.root.join("charts")
    }
    pub fn logs_dir(&self) -> PathBuf {
        self.root.join("logs")
    }
    pub fn report_md(&self) -> PathBuf {
        self.root.join("report.md")
    }

    /// Stores one run's record (`runs/<id>/result.json`) atomically.
    pub fn write_run(&self, record: &RunRecord) -> std::io::Result<()> {
        let json = serde_json::to_vec_pretty(record).map_err(std::io::Error::other)?;
        write_atomic(&self.run_dir(&record.run_id).join("result.json"), &json)
    }

    /// Every stored run record, in execution order.
    pub fn read_runs(&self) -> Result<Vec<RunRecord>, ReadError> {
        let mut out = Vec::new();
        let Ok(entries) = std::fs::read_dir(self.runs_dir()) else {
            return Ok(out);
        };
        for e in entries.flatten() {
            let p = e.path().join("result.json");
            if !p.exists() {
                continue;
            }
            let text = std::fs::read_to_string(&p).map_err(|source| ReadError::Io { path: p.clone(), source })?;
            let r: RunRecord = serde_json::from_str(&text)
                .map_err(|e| ReadError::Parse { path: p.clone(), message: e.to_string() })?;
            out.push(r);
        }
        out.sort_by_key(|r| r.sequence);
        Ok(out)
    }

    pub fn write_manifest(&self, m: &Manifest) -> std::io::Result<()> {
        let json = serde_json::to_vec_pretty(m).map_err(std::io::Error::other)?;
        write_atomic(&self.manifest(), &json)
    }

    pub fn read_manifest(&self) -> Result<Manifest, ReadError> {
        let p = self.manifest();
        let text = std::fs::read_to_string(&p).map_err(|source| ReadError::Io { path: p.clone(), source })?;
        serde_json::from_str(&text).map_err(|e| ReadError::Parse { path: p, message: e.to_string() })
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("{path}: {message}")]
    Parse { path: PathBuf, message: String },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atomic_write_replaces_whole_file() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("x/y.json");
        write_atomic(&p, b"one").unwrap();
        write_atomic(&p, b"two").unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "two");
        let leftovers: Vec<_> = std::fs::read_dir(p.parent().unwrap()).unwrap().flatten().collect();
        assert_eq!(leftovers.len(), 1, "no temp file left");
    }
}
