//! A results directory read back whole: its manifest and every run record, with the lookups
//! every reader of a result set needs.

use std::path::{Path, PathBuf};

use crate::manifest::{WorkloadKind, WorkloadRecord};
use crate::record::{CellKey, RunRecord, RunStatus};
use crate::{Manifest, ResultsDir};

/// A results directory, read back.
#[derive(Clone, Debug)]
pub struct ResultSet {
    pub dir: PathBuf,
    pub manifest: Manifest,
    pub runs: Vec<RunRecord>,
}

impl ResultSet {
    pub fn load(dir: &Path) -> Result<ResultSet, crate::ReadError> {
        let rd = ResultsDir::new(dir);
        Ok(ResultSet { dir: dir.to_path_buf(), manifest: rd.read_manifest()?, runs: rd.read_runs()? })
    }

    /// The settings profile placement `placement`'s server ran in a cell of profile `cell`: its
    /// own (`[[placement]] profile`) when it names one.
    pub fn profile_of<'a>(&'a self, placement: &str, cell: &'a str) -> &'a str {
        let own = self.manifest.placements.iter().find(|p| p.name == placement).and_then(|p| p.profile.as_deref());
        own.unwrap_or(cell)
    }

    /// The PostgreSQL build placement `placement`'s server ran in a cell of build `cell`: its
    /// own (`[[placement]] build`) when it names one.
    pub fn build_of<'a>(&'a self, placement: &str, cell: &'a str) -> &'a str {
        let own = self.manifest.placements.iter().find(|p| p.name == placement).and_then(|p| p.build.as_deref());
        own.unwrap_or(cell)
    }

    /// The successful runs of a cell that sampled device I/O: what every device table and chart
    /// is computed from.
    pub fn device_runs(&self, cell: &CellKey) -> Vec<&RunRecord> {
        self.runs.iter().filter(|r| &r.cell == cell && r.status == RunStatus::Ok && !r.devices.is_empty()).collect()
    }

    /// The workload named `name` as it ran: the manifest's record, or in a result set of an
    /// older version (no workloads in its manifest), what its first run's record says of it.
    pub fn workload(&self, name: &str) -> Option<WorkloadRecord> {
        if !self.manifest.workloads.is_empty() {
            return self.manifest.workloads.iter().find(|w| w.name == name).cloned();
        }
        let runs: Vec<&RunRecord> = self.runs.iter().filter(|r| r.cell.workload == name).collect();
        let first = runs.first()?;
        let mut clients: Vec<u32> = Vec::new();
        for r in &runs {
            if !clients.contains(&r.cell.clients) {
                clients.push(r.cell.clients);
            }
        }
        Some(WorkloadRecord {
            name: name.to_string(),
            kind: if first.workload_kind == WorkloadKind::Tpcc.as_str() {
                WorkloadKind::Tpcc
            } else {
                WorkloadKind::Pgbench
            },
            script: first.script.clone(),
            scale: first.scale,
            clients,
            threads: None,
            duration_s: first.duration_s,
            ramp_up_s: first.ramp_up_s,
        })
    }

    /// Placement names in the manifest's order (baseline first).
    pub fn placements(&self) -> Vec<String> {
        let mut names: Vec<String> = self.manifest.placements.iter().map(|p| p.name.clone()).collect();
        for r in &self.runs {
            if !names.contains(&r.cell.placement) {
                names.push(r.cell.placement.clone());
            }
        }
        if let Some(i) = names.iter().position(|n| *n == self.manifest.baseline) {
            let b = names.remove(i);
            names.insert(0, b);
        }
        names
    }
}
