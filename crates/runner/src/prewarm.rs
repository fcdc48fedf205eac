//! Prewarm: every table and index of the data set read into a running server with PostgreSQL's
//! `pg_prewarm` (contrib), so that shared_buffers, and the page cache inside the server's memory
//! limit, hold as much of it as fits before anything is measured. The reads are the server's own
//! (a backend in the server's cgroup), so the page cache they fill is charged to that cgroup and
//! limited like the workload's. Relations are read largest first and, at equal size, tables
//! before indexes: when the data set does not fit, what stays cached is the last read, the small
//! hot relations and the indexes.

use std::time::Instant;

use tokio_postgres::Client;

use crate::RunnerError;

/// The extension, created in the data set's database when it is built
/// ([`dataset::build_golden`](crate::dataset::build_golden)) and, when missing there (a data set
/// built by an older pgtier), before the first prewarm.
pub const EXTENSION: &str = "pg_prewarm";

/// What one prewarm read.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Prewarmed {
    /// Each relation read (as `regclass` prints it) and the blocks `pg_prewarm` returned for it,
    /// in the order they were read.
    pub relations: Vec<(String, u64)>,
    /// The server's block size in bytes.
    pub block_size: u64,
    pub seconds: f64,
}

impl Prewarmed {
    /// Blocks read, over every relation.
    pub fn blocks(&self) -> u64 {
        self.relations.iter().map(|(_, b)| b).sum()
    }

    /// MiB read.
    pub fn mib(&self) -> f64 {
        (self.blocks() * self.block_size) as f64 / 1048576.0
    }

    /// The raw record, a line per relation (`<blocks>\t<relation>`) after a header: kept beside
    /// the parsed figures.
    pub fn raw(&self) -> String {
        let mut out = format!(
            "# pg_prewarm(relation, 'buffer') per relation, in the order read; block size {} bytes; {:.3} s\n# blocks\trelation\n",
            self.block_size, self.seconds
        );
        for (r, b) in &self.relations {
            out.push_str(&format!("{b}\t{r}\n"));
        }
        out
    }
}

/// `CREATE EXTENSION IF NOT EXISTS pg_prewarm` in the connected database; an error says that the
/// build lacks contrib's pg_prewarm and what to do.
pub async fn create_extension(client: &Client) -> Result<(), RunnerError> {
    client.batch_execute(&format!("CREATE EXTENSION IF NOT EXISTS {EXTENSION}")).await.map_err(RunnerError::query(
        format!("create extension {EXTENSION} (PostgreSQL's contrib; without it set [measurement] prewarm = false)"),
    ))
}

/// The relations to read: every table (with its TOAST table and materialized views) and index
/// made after initdb, with data, largest first, tables before indexes at equal size.
const RELATIONS: &str = "SELECT c.oid::regclass::text \
     FROM pg_class c \
     WHERE c.oid >= 16384 AND c.relkind IN ('r', 't', 'm', 'i') AND c.relpersistence <> 't' \
       AND pg_relation_size(c.oid) > 0 \
     ORDER BY pg_relation_size(c.oid) DESC, c.relkind = 'i', c.oid";

/// Reads every relation of the connected database into the server's shared_buffers (mode
/// `buffer`, which goes through the page cache), creating the extension first when the database
/// lacks it (Err(Setup) when the build has no such extension). `cancelled` is asked before each relation (Err(Cancelled) once it says yes): the
/// whole data set is read, which on a large one takes its read time.
pub async fn prewarm(client: &Client, cancelled: &dyn Fn() -> bool) -> Result<Prewarmed, RunnerError> {
    let started = Instant::now();
    let have = client
        .query_opt("SELECT 1 FROM pg_extension WHERE extname = $1", &[&EXTENSION])
        .await
        .map_err(RunnerError::query("look up pg_prewarm"))?;
    if have.is_none() {
        let available = client
            .query_opt("SELECT 1 FROM pg_available_extensions WHERE name = $1", &[&EXTENSION])
            .await
            .map_err(RunnerError::query("look up pg_prewarm"))?;
        if available.is_none() {
            return Err(RunnerError::Setup(format!(
                "this PostgreSQL build has no {EXTENSION} extension (PostgreSQL's contrib); install it, or set [measurement] prewarm = false"
            )));
        }
        create_extension(client).await?;
    }
    let block_size: i32 = client
        .query_one("SELECT current_setting('block_size')::int", &[])
        .await
        .map_err(RunnerError::query("read block_size"))?
        .get(0);
    let names: Vec<String> = client
        .query(RELATIONS, &[])
        .await
        .map_err(RunnerError::query("list the relations to prewarm"))?
        .iter()
        .map(|r| r.get(0))
        .collect();
    let mut relations = Vec::with_capacity(names.len());
    for name in names {
        if cancelled() {
            return Err(RunnerError::Cancelled);
        }
        let blocks: i64 = client
            .query_one("SELECT pg_prewarm($1::text::regclass, 'buffer')", &[&name])
            .await
            .map_err(RunnerError::query(format!("pg_prewarm {name}")))?
            .get(0);
        relations.push((name, blocks.max(0) as u64));
    }
    Ok(Prewarmed { relations, block_size: block_size.max(0) as u64, seconds: started.elapsed().as_secs_f64() })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_and_raw_record() {
        let p = Prewarmed {
            relations: vec![("pgbench_accounts".into(), 16394), ("pgbench_accounts_pkey".into(), 2745)],
            block_size: 8192,
            seconds: 1.5,
        };
        assert_eq!(p.blocks(), 19139);
        assert!((p.mib() - 19139.0 * 8192.0 / 1048576.0).abs() < 1e-9);
        let raw = p.raw();
        assert!(raw.contains("\n16394\tpgbench_accounts\n2745\tpgbench_accounts_pkey\n"), "{raw}");
    }
}
