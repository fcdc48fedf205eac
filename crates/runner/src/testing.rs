//! Inputs of a run for unit tests: a planned pgbench run, its workload, placement, profile and
//! memory limit.

use std::collections::BTreeMap;
use std::time::Duration;

use results::record::CellKey;

use crate::matrix::{MemoryLimit, PgbenchWorkload, PlacementTarget, PlannedRun, Profile, WorkloadKind, WorkloadSpec};
use crate::pgbench::Builtin;

pub(crate) fn planned(memory_limit: Option<u64>) -> PlannedRun {
    PlannedRun {
        sequence: 3,
        run_id: "0003-A-tpcb-c4-r2".into(),
        cell: CellKey {
            placement: "A".into(),
            workload: "tpcb".into(),
            clients: 4,
            memory_limit: results::record::MemoryLabel::of(memory_limit),
            profile: "default".into(),
            build: results::record::DEFAULT_BUILD.into(),
        },
        repetition: 2,
        segment: 0,
        placement: 0,
        workload: 0,
        profile: 0,
        build: 0,
        memory: 0,
        memory_limit,
        clients: 4,
        threads: 2,
    }
}

pub(crate) fn workload(ramp_up: Duration) -> WorkloadSpec {
    WorkloadSpec {
        name: "tpcb".into(),
        kind: WorkloadKind::Pgbench(PgbenchWorkload {
            builtin: Builtin::TpcbLike,
            scale: 5,
            init_args: vec![],
            extra_args: vec![],
            per_statement: true,
        }),
        clients: vec![4],
        threads: None,
        duration: Duration::from_secs(20),
        ramp_up,
    }
}

pub(crate) fn placement() -> PlacementTarget {
    PlacementTarget {
        name: "A".into(),
        data_dir: "/nonexistent/pgdata".into(),
        wal_dir: "/nonexistent/pg_wal".into(),
        devices: vec![],
        tablespaces: BTreeMap::new(),
        profile: None,
        install: None,
    }
}

pub(crate) fn profile(settings: &[(&str, &str)]) -> Profile {
    Profile {
        name: "default".into(),
        settings: settings.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
        optional: Default::default(),
    }
}

pub(crate) fn memory(bytes: Option<u64>) -> MemoryLimit {
    MemoryLimit { bytes, settings: BTreeMap::new() }
}
