//! The loader: schema, parallel binary COPY per warehouse, keys and indexes, VACUUM ANALYZE.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures_util::SinkExt;
use tokio::sync::mpsc;
use tokio_postgres::Client;

use crate::generate::{GenParams, Table, generate};
use crate::random::{NurandConstants, Rng};
use crate::schema::{CREATE_TABLES, FUNCTIONS, INDEXES, SCHEMA_VERSION, TABLES};
use crate::{ConnectSpec, LoadPhase, LoadProgress, LoadReport, TpccConfig, TpccError};

/// How often the cancel flag is looked at while waiting.
pub(crate) const POLL: Duration = Duration::from_millis(100);

/// What workers tell the coordinator.
pub(crate) enum Event {
    /// A job finished: `warehouse` is `None` for ITEM; rows per table.
    Loaded { warehouse: Option<u32>, rows: Vec<(Table, u64)> },
    /// An index or a VACUUM ANALYZE finished.
    Step(String),
}

/// pgtier's own loader ([`crate::Mode::Spec`] and [`crate::Mode::HammerDb`]), behind
/// [`crate::create_schema_and_load`].
pub(crate) async fn create_schema_and_load(
    conn: &ConnectSpec,
    cfg: &TpccConfig,
    workers: u32,
    cancel: &AtomicBool,
    progress: &mut (dyn FnMut(LoadProgress) + Send),
) -> Result<LoadReport, TpccError> {
    let start = Instant::now();
    let total = cfg.warehouses;
    let report = progress_event(start, total);

    let admin = conn.connect("pgtier-tpcc-load").await?;
    let mut rng = Rng::from_entropy(u64::from(total));
    let nurand = create_schema(&admin, total, &mut rng).await?;
    let schema_seconds = start.elapsed().as_secs_f64();
    progress(report(LoadPhase::Schema, 0, 0, "tables and functions created".into()));
    check(cancel)?;

    let copy_start = Instant::now();
    let (rows_per_table, rows_total, done) =
        copy_rows(conn, cfg, (&mut rng, &nurand), workers, cancel, &mut |done, rows, detail| {
            progress(report(LoadPhase::Copy, done, rows, detail))
        })
        .await?;
    let copy_seconds = copy_start.elapsed().as_secs_f64();

    let (index_seconds, analyze_seconds) =
        index_and_analyze(conn, workers, cancel, &mut |phase, d| progress(report(phase, done, rows_total, d))).await?;
    progress(report(LoadPhase::Done, done, rows_total, "loaded".into()));
    let phases =
        PhaseSeconds { schema: schema_seconds, copy: copy_seconds, index: index_seconds, analyze: analyze_seconds };
    load_report(&admin, (total, workers), start, (rows_per_table, rows_total), phases, nurand).await
}

/// The tables, the functions and the load's row in `tpcc_meta` (with its NURand constants).
async fn create_schema(admin: &Client, total: u32, rng: &mut Rng) -> Result<NurandConstants, TpccError> {
    admin.batch_execute(CREATE_TABLES).await.map_err(|e| TpccError::sql("create the TPC-C tables", e))?;
    admin.batch_execute(FUNCTIONS).await.map_err(|e| TpccError::sql("create the TPC-C functions", e))?;
    let nurand = NurandConstants::for_load(rng);
    admin
        .execute(
            "INSERT INTO tpcc_meta (warehouses, c_last_load, c_id_load, ol_i_id_load, schema_version) \
             VALUES ($1, $2, $3, $4, $5)",
            &[
                &(total as i32),
                &(nurand.c_last as i32),
                &(nurand.c_id as i32),
                &(nurand.ol_i_id as i32),
                &SCHEMA_VERSION,
            ],
        )
        .await
        .map_err(|e| TpccError::sql("record the load in tpcc_meta", e))?;
    Ok(nurand)
}

/// The rows: job 0 is ITEM, job k (1..=W) is warehouse k; workers take the next job as they
/// finish one, so a slow worker never holds the others back. Returns rows per table, rows in
/// all and warehouses done.
async fn copy_rows(
    conn: &ConnectSpec,
    cfg: &TpccConfig,
    (rng, nurand): (&mut Rng, &NurandConstants),
    workers: u32,
    cancel: &AtomicBool,
    on_loaded: &mut (dyn FnMut(u32, u64, String) + Send),
) -> Result<(BTreeMap<String, u64>, u64, u32), TpccError> {
    let params = GenParams {
        seed: rng.next_u64(),
        c_last_load: nurand.c_last,
        now_unix_micros: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_micros() as i64)
            .unwrap_or(0),
    };
    let stop = Arc::new(AtomicBool::new(false));
    let next_job = Arc::new(AtomicUsize::new(0));
    let total = cfg.warehouses;
    let jobs = total as usize + 1;
    let (tx, mut rx) = mpsc::unbounded_channel();
    let mut handles = Vec::new();
    for _ in 0..(workers as usize).min(jobs) {
        let (conn, stop, next_job, tx) = (conn.clone(), stop.clone(), next_job.clone(), tx.clone());
        handles.push(tokio::spawn(async move {
            let result = copy_worker(&conn, params, jobs, &next_job, &stop, &tx).await;
            if result.is_err() {
                stop.store(true, Ordering::SeqCst);
            }
            result
        }));
    }
    drop(tx);
    let tally = tally_copies(&mut rx, cancel, &stop, on_loaded).await;
    join_all(handles, cancel).await?;
    Ok(tally)
}

/// Keys and indexes, then VACUUM ANALYZE, over `workers` connections; their seconds.
async fn index_and_analyze(
    conn: &ConnectSpec,
    workers: u32,
    cancel: &AtomicBool,
    on_done: &mut (dyn FnMut(LoadPhase, String) + Send),
) -> Result<(f64, f64), TpccError> {
    let index_start = Instant::now();
    let statements: Vec<(String, String)> =
        INDEXES.iter().map(|(name, sql)| (format!("index {name}"), sql.to_string())).collect();
    run_parallel(conn, statements, workers, cancel, &mut |d| on_done(LoadPhase::Index, d)).await?;
    let index_seconds = index_start.elapsed().as_secs_f64();

    let analyze_start = Instant::now();
    let statements: Vec<(String, String)> = TABLES
        .iter()
        .chain(std::iter::once(&"tpcc_meta"))
        .map(|t| (format!("vacuum analyze {t}"), format!("VACUUM ANALYZE {t}")))
        .collect();
    run_parallel(conn, statements, workers, cancel, &mut |d| on_done(LoadPhase::Analyze, d)).await?;
    let analyze_seconds = analyze_start.elapsed().as_secs_f64();

    Ok((index_seconds, analyze_seconds))
}

/// A load's progress events: `(phase, warehouses done, rows, detail)` for a load of `total`
/// warehouses that began at `start`; both loaders report through it.
pub(crate) fn progress_event(start: Instant, total: u32) -> impl Fn(LoadPhase, u32, u64, String) -> LoadProgress {
    move |phase, done, rows, detail| LoadProgress {
        phase,
        warehouses_done: done,
        warehouses_total: total,
        rows,
        elapsed_seconds: start.elapsed().as_secs_f64(),
        detail,
    }
}

pub(crate) fn check(cancel: &AtomicBool) -> Result<(), TpccError> {
    if cancel.load(Ordering::SeqCst) { Err(TpccError::Cancelled) } else { Ok(()) }
}

/// Hands events to `on_event` until every sender is gone, raising `stop` when `cancel` is.
/// How long each phase of a load took, seconds.
pub(crate) struct PhaseSeconds {
    pub schema: f64,
    pub copy: f64,
    pub index: f64,
    pub analyze: f64,
}

/// The load's report: its figures and the database's size as the server counts it.
pub(crate) async fn load_report(
    admin: &tokio_postgres::Client,
    (warehouses, workers): (u32, u32),
    start: Instant,
    (rows_per_table, rows): (BTreeMap<String, u64>, u64),
    phases: PhaseSeconds,
    nurand: NurandConstants,
) -> Result<LoadReport, TpccError> {
    let database_bytes: i64 = admin
        .query_one("SELECT pg_database_size(current_database())", &[])
        .await
        .map_err(|e| TpccError::sql("read the database size", e))?
        .get(0);
    let seconds = start.elapsed().as_secs_f64();
    Ok(LoadReport {
        warehouses,
        workers,
        seconds,
        warehouses_per_minute: f64::from(warehouses) / seconds * 60.0,
        rows,
        rows_per_table,
        schema_seconds: phases.schema,
        copy_seconds: phases.copy,
        index_seconds: phases.index,
        analyze_seconds: phases.analyze,
        database_bytes,
        nurand,
    })
}

/// Waits for the copy workers' `Loaded` events (see [`wait_events`]), counting rows per table and
/// finished warehouses, and reports each with `on_loaded(warehouses done, rows so far, what)`.
/// Returns the rows per table, the rows in all and the warehouses done.
pub(crate) async fn tally_copies(
    rx: &mut mpsc::UnboundedReceiver<Event>,
    cancel: &AtomicBool,
    stop: &AtomicBool,
    mut on_loaded: impl FnMut(u32, u64, String),
) -> (BTreeMap<String, u64>, u64, u32) {
    let mut rows_per_table: BTreeMap<String, u64> = BTreeMap::new();
    let mut rows_total = 0u64;
    let mut done = 0u32;
    wait_events(rx, cancel, stop, |ev| {
        if let Event::Loaded { warehouse, rows } = ev {
            for (t, n) in rows {
                *rows_per_table.entry(t.name().to_string()).or_default() += n;
                rows_total += n;
            }
            let detail = match warehouse {
                Some(w) => {
                    done += 1;
                    format!("warehouse {w}")
                }
                None => "item".to_string(),
            };
            on_loaded(done, rows_total, detail);
        }
    })
    .await;
    (rows_per_table, rows_total, done)
}

pub(crate) async fn wait_events(
    rx: &mut mpsc::UnboundedReceiver<Event>,
    cancel: &AtomicBool,
    stop: &AtomicBool,
    mut on_event: impl FnMut(Event),
) {
    loop {
        tokio::select! {
            ev = rx.recv() => match ev {
                Some(ev) => on_event(ev),
                None => return,
            },
            _ = tokio::time::sleep(POLL) => {
                if cancel.load(Ordering::SeqCst) {
                    stop.store(true, Ordering::SeqCst);
                }
            }
        }
    }
}

/// Waits for workers; the first real error wins over `Cancelled` caused by it.
pub(crate) async fn join_all(
    handles: Vec<tokio::task::JoinHandle<Result<(), TpccError>>>,
    cancel: &AtomicBool,
) -> Result<(), TpccError> {
    let mut first: Option<TpccError> = None;
    for h in handles {
        let r = h.await.unwrap_or_else(|source| Err(TpccError::Task { what: "load worker".into(), source }));
        if let Err(e) = r {
            let replace = match &first {
                None => true,
                Some(TpccError::Cancelled) => !matches!(e, TpccError::Cancelled),
                Some(_) => false,
            };
            if replace {
                first = Some(e);
            }
        }
    }
    if cancel.load(Ordering::SeqCst) {
        return Err(TpccError::Cancelled);
    }
    match first {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

async fn copy_worker(
    conn: &ConnectSpec,
    params: GenParams,
    jobs: usize,
    next_job: &AtomicUsize,
    stop: &Arc<AtomicBool>,
    events: &mpsc::UnboundedSender<Event>,
) -> Result<(), TpccError> {
    let client = conn.connect("pgtier-tpcc-load").await?;
    // Durability of each COPY's commit is not needed for a load that is redone on failure.
    client
        .batch_execute("SET synchronous_commit = off")
        .await
        .map_err(|e| TpccError::sql("set up a load connection", e))?;
    loop {
        if stop.load(Ordering::SeqCst) {
            return Err(TpccError::Cancelled);
        }
        let job = next_job.fetch_add(1, Ordering::SeqCst);
        if job >= jobs {
            return Ok(());
        }
        let (warehouse, tables): (Option<u32>, &[Table]) =
            if job == 0 { (None, &[Table::Item]) } else { (Some(job as u32), &Table::PER_WAREHOUSE) };
        let mut rows = Vec::with_capacity(tables.len());
        for &table in tables {
            let n = copy_table(&client, table, job as i32, params, stop).await?;
            rows.push((table, n));
        }
        let _ = events.send(Event::Loaded { warehouse, rows });
    }
}

/// Streams one table of one warehouse: a blocking task generates chunks, this task sends them.
async fn copy_table(
    client: &Client,
    table: Table,
    w_id: i32,
    params: GenParams,
    stop: &Arc<AtomicBool>,
) -> Result<u64, TpccError> {
    let context = || format!("COPY {} for warehouse {w_id}", table.name());
    let sink = client.copy_in::<_, Bytes>(table.copy_sql()).await.map_err(|e| TpccError::sql(context(), e))?;
    futures_util::pin_mut!(sink);
    let (tx, mut rx) = mpsc::channel::<Bytes>(4);
    let gen_stop = stop.clone();
    let generator = tokio::task::spawn_blocking(move || {
        generate(table, w_id, &params, &mut |chunk| {
            !gen_stop.load(Ordering::Relaxed) && tx.blocking_send(chunk).is_ok()
        })
    });
    while let Some(chunk) = rx.recv().await {
        sink.send(chunk).await.map_err(|e| TpccError::sql(context(), e))?;
    }
    let rows =
        generator.await.map_err(|source| TpccError::Task { what: format!("{}: generator", context()), source })?;
    if stop.load(Ordering::SeqCst) {
        // Dropping the unfinished sink aborts the COPY.
        return Err(TpccError::Cancelled);
    }
    let copied = sink.as_mut().finish().await.map_err(|e| TpccError::sql(context(), e))?;
    if copied != rows {
        return Err(TpccError::Internal(format!(
            "{}: generated {rows} rows but the server copied {copied}",
            context()
        )));
    }
    Ok(rows)
}

/// Runs `statements` (label, sql) over up to `workers` connections, each taking the next
/// statement when it finishes one; `on_done` gets each label as it completes.
async fn run_parallel(
    conn: &ConnectSpec,
    statements: Vec<(String, String)>,
    workers: u32,
    cancel: &AtomicBool,
    on_done: &mut (dyn FnMut(String) + Send),
) -> Result<(), TpccError> {
    let statements = Arc::new(statements);
    let next = Arc::new(AtomicUsize::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let (tx, mut rx) = mpsc::unbounded_channel();
    let mut handles = Vec::new();
    for _ in 0..(workers as usize).min(statements.len()) {
        let (conn, statements, next, stop, tx) =
            (conn.clone(), statements.clone(), next.clone(), stop.clone(), tx.clone());
        handles.push(tokio::spawn(async move {
            let result: Result<(), TpccError> = async {
                let client = conn.connect("pgtier-tpcc-load").await?;
                client
                    .batch_execute("SET maintenance_work_mem = '256MB'")
                    .await
                    .map_err(|e| TpccError::sql("set up an index connection", e))?;
                loop {
                    if stop.load(Ordering::SeqCst) {
                        return Err(TpccError::Cancelled);
                    }
                    let i = next.fetch_add(1, Ordering::SeqCst);
                    let Some((label, sql)) = statements.get(i) else {
                        return Ok(());
                    };
                    client.batch_execute(sql).await.map_err(|e| TpccError::sql(label.clone(), e))?;
                    let _ = tx.send(Event::Step(label.clone()));
                }
            }
            .await;
            if result.is_err() {
                stop.store(true, Ordering::SeqCst);
            }
            result
        }));
    }
    drop(tx);
    wait_events(&mut rx, cancel, &stop, |ev| {
        if let Event::Step(label) = ev {
            on_done(label);
        }
    })
    .await;
    join_all(handles, cancel).await
}
