//! Where the data sets' golden copies live (`[experiment] golden_copy`), and the room that place
//! needs: the golden copies themselves, and on a device of the experiment also what the
//! placements using that device put on its filesystem (their copies of PGDATA and tablespaces,
//! and pg_wal, which grows towards max_wal_size under load while the golden copy is still there).

use runner::dataset::DatasetSpec;
use tiers::plan::human_bytes;

use crate::model::{Experiment, GoldenCopy};

/// What the golden copy's place must hold, part by part.
#[derive(Clone, Debug, PartialEq)]
pub struct RoomNeed {
    pub parts: Vec<RoomPart>,
}

/// One thing on the golden copy's filesystem, and its estimated size.
#[derive(Clone, Debug, PartialEq)]
pub struct RoomPart {
    pub what: String,
    pub bytes: u64,
}

impl RoomNeed {
    pub fn total(&self) -> u64 {
        self.parts.iter().map(|p| p.bytes).sum()
    }

    /// The total with the 5% margin a data set build keeps free (`runner::dataset::ensure_space`).
    pub fn with_margin(&self) -> u64 {
        let t = self.total();
        t + t / 20
    }

    /// `the golden copy of pgbench-s100 (2.6 GiB), PGDATA of nvme (1.6 GiB), ...`
    pub fn describe(&self) -> String {
        self.parts.iter().map(|p| format!("{} ({})", p.what, human_bytes(p.bytes))).collect::<Vec<_>>().join(", ")
    }
}

/// pg_wal may outgrow max_wal_size (a soft limit) under load: 30% on top, plus a few segments.
pub fn wal_allowance(max_wal_bytes: u64) -> u64 {
    max_wal_bytes / 10 * 13 + (64 << 20)
}

impl Experiment {
    /// The data sets the matrix builds, each once (per build), in workload order.
    pub fn datasets(&self) -> Vec<DatasetSpec> {
        let roles: Vec<String> = runner::matrix::TABLESPACE_ROLES
            .iter()
            .filter(|r| self.placements.iter().any(|p| p.tablespaces.contains_key(**r)))
            .map(|r| r.to_string())
            .collect();
        let mut out: Vec<DatasetSpec> = Vec::new();
        for w in &self.workloads {
            let d = w.dataset(&roles);
            if !out.contains(&d) {
                out.push(d);
            }
        }
        out
    }

    /// The largest max_wal_size of any profile or memory limit (PostgreSQL's 1 GB when none sets it).
    pub fn max_wal_bytes(&self) -> u64 {
        self.run_profiles()
            .into_iter()
            .flat_map(|p| std::iter::once(&p.profile.settings).chain(self.memory_limits.iter().map(|l| &l.settings)))
            .filter_map(|s| s.get("max_wal_size").and_then(|v| runner::memory::pg_size_mb_default(v)))
            .max()
            .unwrap_or(1 << 30)
    }

    /// The room the golden copies need where `golden_copy` puts them (an estimate: pgbench about
    /// 16 MiB per scale unit, TPC-C about 110 MiB per warehouse, half as much again for the
    /// load's WAL). On a device, the placements that use it add their copies: PGDATA and
    /// tablespaces (the largest data set, one copy per build the matrix runs) and pg_wal (max_wal_size + 30%).
    pub fn golden_room(&self) -> RoomNeed {
        let builds = self.builds.iter().filter(|b| self.runs_build(&b.name)).count().max(1) as u64;
        let per_build = if builds > 1 { format!(", one per build ({builds})") } else { String::new() };
        let datasets = self.datasets();
        let mut parts = vec![RoomPart {
            what: format!(
                "the golden cop{} of {}{per_build}",
                if datasets.len() == 1 { "y" } else { "ies" },
                datasets.iter().map(DatasetSpec::key).collect::<Vec<_>>().join(", ")
            ),
            bytes: datasets.iter().map(DatasetSpec::estimated_bytes).sum::<u64>() * builds,
        }];
        let GoldenCopy::Device { name, .. } = &self.golden_copy else { return RoomNeed { parts } };
        // A placement keeps a copy per build the matrix runs; one when it names its own.
        let copies = self.matrix_builds().len().max(1) as u64;
        let largest = datasets.iter().map(DatasetSpec::data_bytes).max().unwrap_or(0) * copies;
        let wal = wal_allowance(self.max_wal_bytes()) * copies;
        for p in &self.placements {
            let data: Vec<&str> = std::iter::once(("PGDATA", p.data.as_str()))
                .chain(p.tablespaces.iter().map(|(role, dev)| (role.as_str(), dev.as_str())))
                .filter(|(_, dev)| dev == name)
                .map(|(what, _)| what)
                .collect();
            if !data.is_empty() {
                parts.push(RoomPart { what: format!("{}'s {}", p.name, data.join(" and ")), bytes: largest });
            }
            if p.wal == *name {
                parts.push(RoomPart { what: format!("{}'s pg_wal, up to max_wal_size + 30%", p.name), bytes: wal });
            }
        }
        RoomNeed { parts }
    }
}
