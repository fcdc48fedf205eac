//! The virtual users: one transaction after another from their terminal, server-side over
//! the wire frontend on driver threads or client-side on pooled connections, each outcome
//! accounted in its statistics.

use super::*;

/// A failed transaction, whichever path ran it.
pub(super) struct TxError {
    kind: &'static str,
    message: String,
    closed: bool,
}

impl From<WireError> for TxError {
    fn from(e: WireError) -> TxError {
        TxError { kind: e.kind(), message: e.to_string(), closed: e.is_closed() }
    }
}

impl From<tokio_postgres::Error> for TxError {
    fn from(e: tokio_postgres::Error) -> TxError {
        TxError { kind: error_kind(&e), message: describe_pg_error(&e), closed: e.is_closed() }
    }
}

/// Counts one finished transaction (or failure) of `kind` that took `us` microseconds.
/// Returns true when the connection must be replaced.
pub(super) fn account(
    stats: &mut VuStats,
    shared: &Shared,
    vu: usize,
    kind: TxKind,
    result: Result<Outcome, TxError>,
    us: u64,
) -> bool {
    let measuring = shared.measuring.load(Ordering::Relaxed);
    let i = kind.index();
    match result {
        Ok(outcome @ (Outcome::Committed | Outcome::RolledBack)) => {
            let rolled_back = outcome == Outcome::RolledBack;
            let mine = &shared.counters[vu];
            mine.completed.fetch_add(1, Ordering::Relaxed);
            mine.latency_us.fetch_add(us, Ordering::Relaxed);
            if kind == TxKind::NewOrder && !rolled_back {
                mine.new_orders.fetch_add(1, Ordering::Relaxed);
            }
            if measuring {
                // record() grows the auto-resizing histogram; saturating_record() would clamp
                // to its current (initially tiny) range.
                let _ = stats.hist[i].record(us.max(1));
                if rolled_back {
                    stats.rollbacks[i] += 1;
                }
            }
            false
        }
        Ok(Outcome::NoCustomer(msg)) => {
            if measuring {
                *stats.errors[i].entry("other".into()).or_default() += 1;
            }
            shared.sample(format!("{}: {msg}", kind.name()));
            false
        }
        Err(e) => {
            if measuring {
                *stats.errors[i].entry(e.kind.into()).or_default() += 1;
            }
            shared.sample(format!("{}: {}", kind.name(), e.message));
            e.closed
        }
    }
}

/// Counts a failed connection attempt before a transaction of `kind`.
pub(super) fn account_connect_failure(stats: &mut VuStats, shared: &Shared, kind: TxKind, msg: String) {
    if shared.measuring.load(Ordering::Relaxed) {
        *stats.errors[kind.index()].entry("other".into()).or_default() += 1;
    }
    shared.sample(msg);
}

/// Starts virtual user `vu`'s thread; its figures arrive on the returned channel.
pub(super) fn spawn_server_side_vu(
    vu: u32,
    ctx: VuContext,
    terminal: Terminal,
) -> std::io::Result<tokio::sync::oneshot::Receiver<Result<(VuStats, u32), String>>> {
    let (done_tx, done_rx) = tokio::sync::oneshot::channel();
    std::thread::Builder::new().name(format!("tpcc-vu-{vu}")).stack_size(512 * 1024).spawn(move || {
        let _ = done_tx.send(Ok((server_side_virtual_user(ctx, vu as usize, terminal), 0)));
    })?;
    Ok(done_rx)
}

/// Sleeps for `d` unless told to stop first; returns false when stopping.
pub(super) fn pause_blocking(stop: &AtomicBool, d: Duration) -> bool {
    let end = Instant::now() + d;
    loop {
        if stop.load(Ordering::Relaxed) {
            return false;
        }
        let now = Instant::now();
        if now >= end {
            return true;
        }
        std::thread::sleep((end - now).min(Duration::from_millis(100)));
    }
}

/// A server-side virtual user's connection: the statements parsed on it and how to bind them.
pub(super) struct WireSession {
    conn: WireConn,
    names: [String; 5],
    format: Format,
    scratch: Scratch,
}

pub(super) fn wire_session(ctx: &VuContext) -> Result<WireSession, String> {
    let mut conn = WireConn::connect(&ctx.conn, "pgtier-tpcc", Duration::from_secs(30), ctx.stop.abandon.clone())
        .map_err(|e| format!("connect: {e}"))?;
    if ctx.mode == Mode::HammerDbFaithful {
        conn.simple(crate::faithful::sql::SESSION_SETUP).map_err(|e| format!("set up the session: {e}"))?;
    }
    let (statements, format) = wire_statements(ctx.mode);
    let names: [String; 5] = std::array::from_fn(|i| format!("s{i}"));
    for (name, (sql, oids)) in names.iter().zip(&statements) {
        conn.prepare(name, sql, oids).map_err(|e| format!("prepare statements: {e}"))?;
    }
    Ok(WireSession { conn, names, format, scratch: Scratch::default() })
}

pub(super) fn server_side_virtual_user(ctx: VuContext, vu: usize, mut terminal: Terminal) -> VuStats {
    let mut stats = VuStats::new();
    let mut session: Option<WireSession> = None;
    let stop = &ctx.stop.flag;
    loop {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        let kind = terminal.next_kind();
        if ctx.keying_and_thinking && !pause_blocking(stop, Terminal::keying_time(kind)) {
            break;
        }
        if session.is_none() {
            match wire_session(&ctx) {
                Ok(s) => session = Some(s),
                Err(msg) => {
                    account_connect_failure(&mut stats, &ctx.shared, kind, msg);
                    if !pause_blocking(stop, Duration::from_millis(500)) {
                        break;
                    }
                    continue;
                }
            }
        }
        let s = session.as_mut().expect("connected above");
        let input = terminal.input(kind);
        let names: [&str; 5] = std::array::from_fn(|i| s.names[i].as_str());
        let t0 = Instant::now();
        let result = execute_wire(&mut s.conn, &names, s.format, &input, ctx.mode, &mut s.scratch);
        let us = t0.elapsed().as_micros() as u64;
        if account(&mut stats, &ctx.shared, vu, kind, result.map_err(TxError::from), us) {
            session = None;
        }
        if ctx.keying_and_thinking && !pause_blocking(stop, terminal.think_time(kind)) {
            break;
        }
    }
    stats
}

/// The virtual users of one driver thread (client-side SQL).
pub(super) struct DriverGroup {
    pub(super) pg: tokio_postgres::Config,
    /// The group's virtual users: their numbers and terminals.
    pub(super) terminals: Vec<(usize, Terminal)>,
    pub(super) ctx: VuContext,
}

impl DriverGroup {
    /// Runs the group's virtual users on a single-threaded runtime until told to stop.
    /// Returns their merged figures and how many did not stop in time.
    pub(super) fn run(self) -> Result<(VuStats, u32), String> {
        // Only the I/O and timer drivers: the signal and process drivers would be polled on
        // every turn for nothing.
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .enable_time()
            .build()
            .map_err(|e| format!("start a driver runtime: {e}"))?;
        rt.block_on(async move {
            let manager = Manager::from_config(
                self.pg,
                tokio_postgres::NoTls,
                ManagerConfig { recycling_method: RecyclingMethod::Fast },
            );
            let pool = Pool::builder(manager)
                .max_size(self.terminals.len().max(1))
                .build()
                .map_err(|e| format!("connection pool: {e}"))?;
            let mut handles = Vec::with_capacity(self.terminals.len());
            for (vu, terminal) in self.terminals {
                handles.push(tokio::spawn(client_side_virtual_user(self.ctx.clone(), pool.clone(), vu, terminal)));
            }
            let mut stop = self.ctx.stop.watch.clone();
            while !*stop.borrow() {
                if stop.changed().await.is_err() {
                    break;
                }
            }
            let deadline = tokio::time::Instant::now() + STOP_GRACE;
            let mut stats = VuStats::new();
            let mut lost = 0;
            for mut h in handles {
                match tokio::time::timeout_at(deadline, &mut h).await {
                    Ok(Ok(s)) => stats.merge(&s),
                    Ok(Err(e)) => {
                        lost += 1;
                        self.ctx.shared.sample(format!("virtual user task failed: {e}"));
                    }
                    Err(_) => {
                        h.abort();
                        lost += 1;
                    }
                }
            }
            pool.close();
            Ok((stats, lost))
        })
    }
}

/// Sleeps for `d` unless told to stop first; returns false when stopping.
pub(super) async fn pause(stop: &mut watch::Receiver<bool>, d: Duration) -> bool {
    if *stop.borrow() {
        return false;
    }
    tokio::select! {
        _ = tokio::time::sleep(d) => !*stop.borrow(),
        _ = stop.changed() => false,
    }
}

pub(super) async fn client_side_virtual_user(ctx: VuContext, pool: Pool, vu: usize, mut terminal: Terminal) -> VuStats {
    let mut stats = VuStats::new();
    let mut conn: Option<(deadpool_postgres::Object, Prepared)> = None;
    let mut stop = ctx.stop.watch.clone();
    loop {
        // Stop when told to, or when `run` was dropped (the sender is gone).
        if *stop.borrow() || stop.has_changed().is_err() {
            break;
        }
        let kind = terminal.next_kind();
        if ctx.keying_and_thinking && !pause(&mut stop, Terminal::keying_time(kind)).await {
            break;
        }
        if conn.is_none() {
            match pooled_connection(&pool, &ctx).await {
                Ok(c) => conn = Some(c),
                Err(msg) => {
                    account_connect_failure(&mut stats, &ctx.shared, kind, msg);
                    if !pause(&mut stop, Duration::from_millis(500)).await {
                        break;
                    }
                    continue;
                }
            }
        }
        let (client, prepared) = conn.as_mut().expect("connected above");
        let input = terminal.input(kind);
        let t0 = Instant::now();
        let result = execute(client, prepared, &input, ctx.mode).await;
        let us = t0.elapsed().as_micros() as u64;
        if account(&mut stats, &ctx.shared, vu, kind, result.map_err(TxError::from), us) {
            conn = None;
        }
        if ctx.keying_and_thinking && !pause(&mut stop, terminal.think_time(kind)).await {
            break;
        }
    }
    stats
}

pub(super) async fn pooled_connection(
    pool: &Pool,
    ctx: &VuContext,
) -> Result<(deadpool_postgres::Object, Prepared), String> {
    let obj = pool.get().await.map_err(|e| format!("connect: {e}"))?;
    let prepared = Prepared::for_mode(&obj, ctx.mode, ctx.side)
        .await
        .map_err(|e| format!("prepare statements: {}", describe_pg_error(&e)))?;
    Ok((obj, prepared))
}
