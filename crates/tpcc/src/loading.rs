//! The data set's one entry point: the configuration checked, then pgtier's own loader or
//! HammerDB's order ([`crate::faithful`]).

use std::sync::atomic::AtomicBool;

use crate::{ConnectSpec, LoadProgress, LoadReport, Mode, TpccConfig, TpccError};

/// Creates the TPC-C schema in `conn`'s database (dropping any TPC-C tables already there),
/// loads `cfg.warehouses` warehouses with `workers` parallel connections, each streaming binary
/// COPY, then builds keys and indexes and runs VACUUM ANALYZE, both spread over the same
/// number of connections. With [`Mode::HammerDbFaithful`] it builds HammerDB's schema and
/// population in HammerDB's order instead (keys before the rows, `workers` connections, at most
/// one per warehouse, for the warehouses plus one for ITEM, or ITEM first with one worker; two
/// indexes after, plain ANALYZE; see [`crate::faithful`]); the other two modes share pgtier's
/// own loader. `progress` is called after the schema step, after ITEM, after each warehouse,
/// after each index and each table analysed (once for the database-wide ANALYZE in faithful
/// mode), and once at the end ([`crate::LoadPhase::Done`]). When `cancel` becomes true the load stops
/// within about 100 ms of the current statement and returns [`TpccError::Cancelled`], leaving a
/// partial database behind.
pub async fn create_schema_and_load(
    conn: &ConnectSpec,
    cfg: &TpccConfig,
    workers: u32,
    cancel: &AtomicBool,
    progress: &mut (dyn FnMut(LoadProgress) + Send),
) -> Result<LoadReport, TpccError> {
    if cfg.warehouses == 0 {
        return Err(TpccError::Config("warehouses must be at least 1".into()));
    }
    if workers == 0 {
        return Err(TpccError::Config("workers must be at least 1".into()));
    }
    if cfg.mode == Mode::HammerDbFaithful {
        return crate::faithful::load::create_schema_and_load(conn, cfg, workers, cancel, progress).await;
    }
    crate::load::create_schema_and_load(conn, cfg, workers, cancel, progress).await
}
