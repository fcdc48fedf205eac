//! The loader of [`crate::Mode::HammerDbFaithful`]: HammerDB 4.12's population and build order
//! (`src/postgresql/pgoltp.tcl`, procs `do_tpcc`, `LoadItems`, `LoadWare`, `Stock`, `District`,
//! `LoadCust`, `Customer`, `LoadOrd`, `Orders`, `CreateIndexes`, `GatherStatistics`, and the
//! string helpers of `modules/tpcccommon-1.0.tm`), with pgtier's binary COPY instead of
//! HammerDB's CSV (the stored values are the same).
//!
//! Build order, as HammerDB's: tables with their primary keys; ITEM on one connection while
//! `workers` connections each load a contiguous run of warehouses (with one worker, ITEM first
//! on the same connection); per warehouse the WAREHOUSE row, STOCK (one COPY), DISTRICT, then
//! per district CUSTOMER and HISTORY in COPYs of 1,000 customers, then per district ORDERS,
//! NEW_ORDER and ORDER_LINE in COPYs of 100 orders, each COPY its own transaction; then the
//! indexes CUSTOMER_I2 and ORDERS_I2; then a database-wide plain `ANALYZE` (no VACUUM).
//!
//! Value distributions, as HammerDB's (they differ from the specification's, see the crate
//! README): C_CREDIT BC for 50% of customers; W_TAX and D_TAX 0.10-0.20 in steps of 0.01;
//! C_DISCOUNT 0.00-0.50 in steps of 0.01; about 9.5% of I_DATA and S_DATA with a lowercase
//! `original` (10,000 positions drawn with replacement, 9 characters replaced by 8); O_C_ID
//! uniform in [o_id, 3000] (HammerDB's shuffle never writes back its swap); delivered initial
//! lines (o_id <= 2100) with OL_AMOUNT 0.10-100.00 and undelivered ones with 0.00; C_ZIP and
//! W_ZIP/D_ZIP a number 0-9999 written over `000011111`; C_PHONE two numbers 0-99999999 each
//! written over `00000000`; C_LAST by NURand(255, 0, 999, 123).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use bytes::Bytes;
use futures_util::SinkExt;
use tokio::sync::mpsc;
use tokio_postgres::Client;

use crate::copy::CopyWriter;
use crate::generate::{CUSTOMERS, DISTRICTS, ITEMS, ORDERS, Table};
use crate::load::{Event, PhaseSeconds, check, join_all, load_report, progress_event, tally_copies};
use crate::random::{A_C_LAST, NurandConstants, Rng, last_name_into};
use crate::{ConnectSpec, LoadPhase, LoadProgress, LoadReport, TpccConfig, TpccError};

use super::{HAMMERDB_C_LAST, LOADER, SCHEMA_VERSION, sql};

mod rows;
pub(crate) use rows::Gen;

/// The tables, created with their primary keys (HammerDB's `CreateTables`).
pub(crate) const CREATE_TABLES: &str = include_str!("../../sql/faithful_schema.sql");

/// HammerDB's `CreateIndexes`, run after the rows are in.
pub(crate) const INDEXES: [(&str, &str); 2] = [
    ("customer_i2", "CREATE UNIQUE INDEX customer_i2 ON customer USING btree (c_w_id, c_d_id, c_last, c_first, c_id)"),
    ("orders_i2", "CREATE UNIQUE INDEX orders_i2 ON orders USING btree (o_w_id, o_d_id, o_c_id, o_id)"),
];

/// COPY statements, columns in table order (the order the generator writes fields).
mod copy_sql {
    pub const ITEM: &str = "COPY item (i_id, i_im_id, i_name, i_price, i_data) FROM STDIN (FORMAT binary)";
    pub const WAREHOUSE: &str = "COPY warehouse (w_id, w_name, w_street_1, w_street_2, w_city, w_state, w_zip, w_tax, w_ytd) FROM STDIN (FORMAT binary)";
    pub const DISTRICT: &str = "COPY district (d_w_id, d_next_o_id, d_id, d_ytd, d_tax, d_name, d_street_1, d_street_2, d_city, d_state, d_zip) FROM STDIN (FORMAT binary)";
    pub const STOCK: &str = "COPY stock (s_i_id, s_w_id, s_ytd, s_quantity, s_order_cnt, s_remote_cnt, s_dist_01, s_dist_02, s_dist_03, s_dist_04, s_dist_05, s_dist_06, s_dist_07, s_dist_08, s_dist_09, s_dist_10, s_data) FROM STDIN (FORMAT binary)";
    pub const CUSTOMER: &str = "COPY customer (c_since, c_id, c_w_id, c_d_id, c_payment_cnt, c_delivery_cnt, c_first, c_middle, c_last, c_street_1, c_street_2, c_city, c_state, c_zip, c_phone, c_credit, c_credit_lim, c_discount, c_balance, c_ytd_payment, c_data) FROM STDIN (FORMAT binary)";
    pub const HISTORY: &str = "COPY history (h_date, h_c_id, h_c_w_id, h_w_id, h_c_d_id, h_d_id, h_amount, h_data) FROM STDIN (FORMAT binary)";
    pub const ORDERS: &str = "COPY orders (o_entry_d, o_id, o_w_id, o_c_id, o_d_id, o_carrier_id, o_ol_cnt, o_all_local) FROM STDIN (FORMAT binary)";
    pub const NEW_ORDER: &str = "COPY new_order (no_w_id, no_o_id, no_d_id) FROM STDIN (FORMAT binary)";
    pub const ORDER_LINE: &str = "COPY order_line (ol_delivery_d, ol_o_id, ol_w_id, ol_i_id, ol_supply_w_id, ol_d_id, ol_number, ol_quantity, ol_amount, ol_dist_info) FROM STDIN (FORMAT binary)";
}

/// Rows HammerDB sends between flushes of the STOCK and ITEM COPY streams.
const STOCK_CHUNK: i32 = 1000;
/// Customers per CUSTOMER/HISTORY COPY (and transaction).
const CUSTOMER_BATCH: i32 = 1000;
/// Orders per ORDERS/NEW_ORDER/ORDER_LINE COPY (and transaction).
const ORDER_BATCH: i32 = 100;
/// The last order id loaded as delivered.
const LAST_DELIVERED: i32 = 2100;

/// Loads as HammerDB's `do_tpcc` builds; see the module documentation.
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
    admin.batch_execute(CREATE_TABLES).await.map_err(|e| TpccError::sql("create HammerDB's TPC-C tables", e))?;
    admin.batch_execute(&sql::functions()).await.map_err(|e| TpccError::sql("create HammerDB's functions", e))?;
    admin
        .execute(
            "INSERT INTO tpcc_meta (warehouses, c_last_load, c_id_load, ol_i_id_load, schema_version, loader) \
             VALUES ($1, $2, 0, 0, $3, $4)",
            &[&(total as i32), &(HAMMERDB_C_LAST as i32), &SCHEMA_VERSION, &LOADER],
        )
        .await
        .map_err(|e| TpccError::sql("record the load in tpcc_meta", e))?;
    let schema_seconds = start.elapsed().as_secs_f64();
    progress(report(LoadPhase::Schema, 0, 0, "tables (with primary keys) and functions created".into()));
    check(cancel)?;

    let copy_start = Instant::now();
    let workers = workers.clamp(1, total);
    let (rows_per_table, rows_total, done) = copy_rows(conn, total, workers, cancel, &mut |done, rows, detail| {
        progress(report(LoadPhase::Copy, done, rows, detail))
    })
    .await?;
    let copy_seconds = copy_start.elapsed().as_secs_f64();

    // HammerDB's monitor builds the two secondary indexes one after the other, with the
    // server's default maintenance_work_mem, then runs one plain ANALYZE of the database.
    let index_start = Instant::now();
    for (name, statement) in INDEXES {
        check(cancel)?;
        admin.batch_execute(statement).await.map_err(|e| TpccError::sql(format!("create index {name}"), e))?;
        progress(report(LoadPhase::Index, done, rows_total, format!("index {name}")));
    }
    let index_seconds = index_start.elapsed().as_secs_f64();
    check(cancel)?;
    let analyze_start = Instant::now();
    admin.batch_execute("ANALYZE").await.map_err(|e| TpccError::sql("ANALYZE", e))?;
    progress(report(LoadPhase::Analyze, done, rows_total, "analyze (database-wide, no vacuum)".into()));
    let analyze_seconds = analyze_start.elapsed().as_secs_f64();

    progress(report(LoadPhase::Done, done, rows_total, "loaded".into()));
    let phases =
        PhaseSeconds { schema: schema_seconds, copy: copy_seconds, index: index_seconds, analyze: analyze_seconds };
    load_report(
        &admin,
        (total, workers),
        start,
        (rows_per_table, rows_total),
        phases,
        NurandConstants { c_last: HAMMERDB_C_LAST, c_id: 0, ol_i_id: 0 },
    )
    .await
}

/// The rows, as HammerDB's build does them: `workers` connections each loading a contiguous run
/// of warehouses, ITEM first on the only connection or alongside on its own. Returns rows per
/// table, rows in all and warehouses done.
async fn copy_rows(
    conn: &ConnectSpec,
    total: u32,
    workers: u32,
    cancel: &AtomicBool,
    on_loaded: &mut (dyn FnMut(u32, u64, String) + Send),
) -> Result<(std::collections::BTreeMap<String, u64>, u64, u32), TpccError> {
    let mut seed = Rng::from_entropy(u64::from(total) ^ 0x4841_4d4d);
    // HammerDB stamps rows with the load's clock at one-second resolution.
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64 * 1_000_000)
        .unwrap_or(0);
    let stop = Arc::new(AtomicBool::new(false));
    let (tx, mut rx) = mpsc::unbounded_channel();
    let chunks = chunks(total, workers);
    let mut handles = Vec::new();
    for (n, range) in chunks.into_iter().enumerate() {
        // With one worker, ITEM goes first on the same connection (HammerDB's single-threaded
        // build); otherwise on a connection of its own, alongside the warehouse workers.
        let with_items = workers == 1;
        let (conn, stop, tx, seed) = (conn.clone(), stop.clone(), tx.clone(), seed.next_u64() ^ n as u64);
        handles.push(tokio::spawn(async move {
            let result = warehouse_worker(&conn, range, with_items, (seed, now), &stop, &tx).await;
            if result.is_err() {
                stop.store(true, Ordering::SeqCst);
            }
            result
        }));
    }
    if workers > 1 {
        let (conn, stop, tx, seed) = (conn.clone(), stop.clone(), tx.clone(), seed.next_u64());
        handles.push(tokio::spawn(async move {
            let result = async {
                let client = conn.connect("pgtier-tpcc-load").await?;
                let rows = load_items(&client, &mut Gen::new(seed, now), &stop).await?;
                let _ = tx.send(Event::Loaded { warehouse: None, rows: vec![(Table::Item, rows)] });
                Ok(())
            }
            .await;
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

/// Contiguous runs of warehouses, one per worker, the first `W % n` one longer (the split of
/// HammerDB's `findchunk` when W is a multiple of n; otherwise it differs only in which
/// workers take the extra warehouses).
pub(crate) fn chunks(warehouses: u32, workers: u32) -> Vec<std::ops::RangeInclusive<u32>> {
    let n = workers.clamp(1, warehouses.max(1));
    let (base, extra) = (warehouses / n, warehouses % n);
    let mut next = 1;
    (0..n)
        .map(|k| {
            let len = base + u32::from(k < extra);
            let r = next..=next + len - 1;
            next += len;
            r
        })
        .collect()
}

async fn warehouse_worker(
    conn: &ConnectSpec,
    range: std::ops::RangeInclusive<u32>,
    with_items: bool,
    (seed, now): (u64, i64),
    stop: &AtomicBool,
    events: &mpsc::UnboundedSender<Event>,
) -> Result<(), TpccError> {
    let client = conn.connect("pgtier-tpcc-load").await?;
    let mut g = Gen::new(seed, now);
    if with_items {
        let rows = load_items(&client, &mut g, stop).await?;
        let _ = events.send(Event::Loaded { warehouse: None, rows: vec![(Table::Item, rows)] });
    }
    for w in range {
        let rows = load_warehouse(&client, &mut g, w as i32, stop).await?;
        let _ = events.send(Event::Loaded { warehouse: Some(w), rows });
    }
    Ok(())
}

fn stopped(stop: &AtomicBool) -> Result<(), TpccError> {
    if stop.load(Ordering::SeqCst) { Err(TpccError::Cancelled) } else { Ok(()) }
}

/// One COPY statement fed with `chunks` (the first starting with the header, the last ending
/// with the trailer); returns the rows the server copied.
async fn copy_chunks(
    client: &Client,
    sql: &str,
    context: &(dyn Fn() -> String + Sync),
    stop: &AtomicBool,
    mut next: impl FnMut() -> Option<Bytes> + Send,
) -> Result<u64, TpccError> {
    let sink = client.copy_in::<_, Bytes>(sql).await.map_err(|e| TpccError::sql(context(), e))?;
    futures_util::pin_mut!(sink);
    while let Some(chunk) = next() {
        stopped(stop)?; // dropping the unfinished sink aborts the COPY
        sink.send(chunk).await.map_err(|e| TpccError::sql(context(), e))?;
    }
    sink.as_mut().finish().await.map_err(|e| TpccError::sql(context(), e))
}

/// ITEM in one COPY, flushed every 1,000 rows.
async fn load_items(client: &Client, g: &mut Gen, stop: &AtomicBool) -> Result<u64, TpccError> {
    let original = g.original_positions();
    let mut i_id = 1;
    let mut w = CopyWriter::new(256 * 1024, true);
    copy_chunks(client, copy_sql::ITEM, &|| "COPY item".to_string(), stop, || {
        if i_id > ITEMS {
            return None;
        }
        let last = (i_id + STOCK_CHUNK - 1).min(ITEMS);
        for id in i_id..=last {
            g.item(&mut w, id, original[id as usize]);
        }
        if last == ITEMS {
            w.trailer();
        }
        i_id = last + 1;
        Some(w.take())
    })
    .await
}

/// A whole warehouse, in HammerDB's order and batches.
async fn load_warehouse(
    client: &Client,
    g: &mut Gen,
    w_id: i32,
    stop: &AtomicBool,
) -> Result<Vec<(Table, u64)>, TpccError> {
    let mut rows = Vec::with_capacity(8);
    let ctx = |t| copy_context(t, w_id);
    let one = |f: &mut dyn FnMut(&mut CopyWriter)| {
        let mut w = CopyWriter::new(64 * 1024, true);
        f(&mut w);
        w.trailer();
        w.take()
    };

    let bytes = one(&mut |w| g.warehouse(w, w_id));
    rows.push((
        Table::Warehouse,
        copy_chunks(client, copy_sql::WAREHOUSE, &ctx("warehouse"), stop, once(bytes)).await?,
    ));

    rows.push((Table::Stock, load_stock(client, g, w_id, stop).await?));

    let bytes = one(&mut |w| {
        for d_id in 1..=DISTRICTS {
            g.district(w, w_id, d_id);
        }
    });
    rows.push((Table::District, copy_chunks(client, copy_sql::DISTRICT, &ctx("district"), stop, once(bytes)).await?));

    let (customers, history) = load_customers(client, g, w_id, stop).await?;
    rows.push((Table::Customer, customers));
    rows.push((Table::History, history));

    let (orders, new_orders, lines) = load_orders(client, g, w_id, stop).await?;
    rows.push((Table::Orders, orders));
    rows.push((Table::NewOrder, new_orders));
    rows.push((Table::OrderLine, lines));
    Ok(rows)
}

/// What a COPY of table `t` for warehouse `w_id` is, for its error message.
fn copy_context(t: &'static str, w_id: i32) -> impl Fn() -> String + Sync {
    move || format!("COPY {t} for warehouse {w_id}")
}

/// STOCK of warehouse `w_id`, in chunks of `STOCK_CHUNK` items.
async fn load_stock(client: &Client, g: &mut Gen, w_id: i32, stop: &AtomicBool) -> Result<u64, TpccError> {
    let original = g.original_positions();
    let mut s_i_id = 1;
    let mut w = CopyWriter::new(512 * 1024, true);
    let n = copy_chunks(client, copy_sql::STOCK, &copy_context("stock", w_id), stop, || {
        if s_i_id > ITEMS {
            return None;
        }
        let last = (s_i_id + STOCK_CHUNK - 1).min(ITEMS);
        for id in s_i_id..=last {
            g.stock(&mut w, w_id, id, original[id as usize]);
        }
        if last == ITEMS {
            w.trailer();
        }
        s_i_id = last + 1;
        Some(w.take())
    })
    .await?;
    Ok(n)
}

/// CUSTOMER and HISTORY of warehouse `w_id`, a batch of customers at a time.
async fn load_customers(client: &Client, g: &mut Gen, w_id: i32, stop: &AtomicBool) -> Result<(u64, u64), TpccError> {
    let (mut customers, mut history) = (0, 0);
    for d_id in 1..=DISTRICTS {
        for first in (1..=CUSTOMERS).step_by(CUSTOMER_BATCH as usize) {
            let last = first + CUSTOMER_BATCH - 1;
            let mut cw = CopyWriter::new(512 * 1024, true);
            let mut hw = CopyWriter::new(64 * 1024, true);
            for c_id in first..=last {
                g.customer(&mut cw, w_id, d_id, c_id);
                g.history(&mut hw, w_id, d_id, c_id);
            }
            cw.trailer();
            hw.trailer();
            customers +=
                copy_chunks(client, copy_sql::CUSTOMER, &copy_context("customer", w_id), stop, once(cw.take())).await?;
            history +=
                copy_chunks(client, copy_sql::HISTORY, &copy_context("history", w_id), stop, once(hw.take())).await?;
        }
    }
    Ok((customers, history))
}

/// ORDERS, NEW_ORDER (the undelivered ones) and ORDER_LINE of warehouse `w_id`.
async fn load_orders(client: &Client, g: &mut Gen, w_id: i32, stop: &AtomicBool) -> Result<(u64, u64, u64), TpccError> {
    let (mut orders, mut new_orders, mut lines) = (0, 0, 0);
    for d_id in 1..=DISTRICTS {
        let o_c_ids = g.order_customers();
        for first in (1..=ORDERS).step_by(ORDER_BATCH as usize) {
            let last = first + ORDER_BATCH - 1;
            let mut ow = CopyWriter::new(8 * 1024, true);
            let mut nw = CopyWriter::new(4 * 1024, true);
            let mut lw = CopyWriter::new(128 * 1024, true);
            for o_id in first..=last {
                let mut out = rows::OrderWriters { orders: &mut ow, new_orders: &mut nw, lines: &mut lw };
                g.order(&mut out, w_id, d_id, o_id, o_c_ids[(o_id - 1) as usize]);
            }
            ow.trailer();
            nw.trailer();
            lw.trailer();
            orders +=
                copy_chunks(client, copy_sql::ORDERS, &copy_context("orders", w_id), stop, once(ow.take())).await?;
            if last > LAST_DELIVERED {
                new_orders +=
                    copy_chunks(client, copy_sql::NEW_ORDER, &copy_context("new_order", w_id), stop, once(nw.take()))
                        .await?;
            }
            lines +=
                copy_chunks(client, copy_sql::ORDER_LINE, &copy_context("order_line", w_id), stop, once(lw.take()))
                    .await?;
        }
    }
    Ok((orders, new_orders, lines))
}

fn once(b: Bytes) -> impl FnMut() -> Option<Bytes> {
    let mut b = Some(b);
    move || b.take()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_are_contiguous_and_cover_every_warehouse() {
        assert_eq!(chunks(4, 2), vec![1..=2, 3..=4]);
        assert_eq!(chunks(5, 2), vec![1..=3, 4..=5]);
        assert_eq!(chunks(2, 8), vec![1..=1, 2..=2]);
        assert_eq!(chunks(3, 1), vec![1..=3]);
    }

    #[test]
    fn order_customers_are_uniform_from_the_order_id_up() {
        let mut g = Gen::new(5, 0);
        let mut missing = 0;
        let mut late_sum = 0i64;
        for _ in 0..10 {
            let c = g.order_customers();
            for (i, &id) in c.iter().enumerate() {
                assert!((i as i32 + 1..=ORDERS).contains(&id));
            }
            let mut seen = vec![false; ORDERS as usize + 1];
            for &id in &c {
                seen[id as usize] = true;
            }
            missing += seen[1..].iter().filter(|s| !**s).count();
            late_sum += c[2900..].iter().map(|&x| i64::from(x)).sum::<i64>();
        }
        // About 1,500 of 3,000 customers per district have no order (research: 1,490).
        let per_district = missing / 10;
        assert!((1350..=1650).contains(&per_district), "{per_district}");
        // The last orders go to the last customers.
        assert!(late_sum / 1000 > 2900, "{}", late_sum / 1000);
    }

    #[test]
    fn strings_follow_hammerdbs_helpers() {
        let mut g = Gen::new(9, 0);
        let mut marked = 0;
        let positions = g.original_positions();
        let n = positions.iter().filter(|m| **m).count();
        // 10,000 draws with replacement from 100,001 positions: about 9,516 distinct.
        assert!((9_350..=9_700).contains(&n), "{n}");
        for _ in 0..2_000 {
            let mut w = CopyWriter::new(1024, false);
            g.data(&mut w, true);
            let b = w.take();
            let text = &b[4..];
            assert!((25..=50).contains(&text.len()), "{}", text.len());
            marked += usize::from(text.windows(8).any(|x| x == b"original"));
            let mut w = CopyWriter::new(64, false);
            g.zip(&mut w);
            let b = w.take();
            assert_eq!(b.len(), 4 + 9);
            assert!(b[4..].ends_with(b"11111") && b[4..].iter().all(u8::is_ascii_digit));
            let mut w = CopyWriter::new(64, false);
            g.phone(&mut w);
            assert_eq!(w.take().len(), 4 + 16);
        }
        assert_eq!(marked, 2_000);
    }
}
