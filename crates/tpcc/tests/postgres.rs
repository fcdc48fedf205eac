//! Against a real PostgreSQL: load two warehouses, check the population rules and the
//! consistency conditions, run the transactions one by one and in short driven runs (both
//! modes, both sides), and check consistency again. Needs root (the server runs as the OS
//! user postgres); PGTIER_SKIP_ROOT_TESTS=1 skips explicitly.

mod common;

use std::sync::atomic::AtomicBool;
use std::time::Duration;

use tpcc::terminal::{CustomerKey, LineInput, NewOrderInput, PaymentInput, TxInput, UNUSED_ITEM_ID};
use tpcc::transactions::{Outcome, Prepared, execute};
use tpcc::{
    DriveProgress, LoadPhase, LoadProgress, Mode, Side, TpccConfig, TpccError, check_consistency,
    create_schema_and_load, random, run,
};

use common::{Cluster, root_or_skip};

const WAREHOUSES: u32 = 2;

async fn one(client: &tokio_postgres::Client, sql: &str) -> i64 {
    client.query_one(sql, &[]).await.unwrap().get(0)
}

async fn assert_consistent(cluster: &Cluster, when: &str) {
    let violated = check_consistency(&cluster.conn).await.unwrap();
    assert!(violated.is_empty(), "{when}: {violated:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn load_drive_and_stay_consistent() {
    if !root_or_skip() {
        return;
    }
    let cluster = Cluster::start("lifecycle", Cluster::TEST_SETTINGS).await;
    let cancel = AtomicBool::new(false);
    let cfg = TpccConfig::new(WAREHOUSES);

    // Load.
    let mut events: Vec<LoadProgress> = Vec::new();
    let load = create_schema_and_load(&cluster.conn, &cfg, 2, &cancel, &mut |p| events.push(p))
        .await
        .unwrap_or_else(|e| panic!("load failed: {e}\nserver log:\n{}", cluster.log()));
    let rows = |t: &str| load.rows_per_table[t];
    assert_eq!(rows("item"), 100_000);
    assert_eq!(rows("warehouse"), 2);
    assert_eq!(rows("district"), 20);
    assert_eq!(rows("stock"), 200_000);
    assert_eq!(rows("customer"), 60_000);
    assert_eq!(rows("history"), 60_000);
    assert_eq!(rows("orders"), 60_000);
    assert_eq!(rows("new_order"), 18_000);
    assert_eq!(load.rows, load.rows_per_table.values().sum::<u64>());
    for phase in [LoadPhase::Schema, LoadPhase::Copy, LoadPhase::Index, LoadPhase::Analyze, LoadPhase::Done] {
        assert!(events.iter().any(|e| e.phase == phase), "no {phase:?} progress in {events:?}");
    }
    assert_eq!(events.last().unwrap().warehouses_done, WAREHOUSES);
    assert!(load.warehouses_per_minute > 0.0 && load.database_bytes > 0);

    let db = cluster.connect("tpcc").await;
    assert_eq!(one(&db, "SELECT count(*) FROM order_line").await as u64, rows("order_line"));

    // Population rules of clause 4.3.3.1, on the database as loaded.
    let bc_share: f64 =
        db.query_one("SELECT avg((c_credit = 'BC')::int)::float8 FROM customer", &[]).await.unwrap().get(0);
    assert!((0.08..=0.12).contains(&bc_share), "BC share {bc_share}");
    let original = one(&db, "SELECT count(*) FROM item WHERE i_data LIKE '%ORIGINAL%'").await;
    assert!((9_000..=11_000).contains(&original), "{original} items with ORIGINAL");
    let names = db
        .query("SELECT c_id, c_last FROM customer WHERE c_w_id = 2 AND c_d_id = 7 AND c_id <= 1000 ORDER BY c_id", &[])
        .await
        .unwrap();
    assert_eq!(names.len(), 1000);
    for r in &names {
        let id: i32 = r.get(0);
        assert_eq!(r.get::<_, String>(1), random::last_name(i64::from(id - 1)));
    }
    let checks = [
        // every district has every last name, and O_C_ID is a permutation of 1..3000
        "SELECT count(*) FROM (SELECT 1 FROM customer GROUP BY c_w_id, c_d_id HAVING count(DISTINCT c_last) <> 1000) x",
        "SELECT count(*) FROM (SELECT 1 FROM orders GROUP BY o_w_id, o_d_id HAVING count(DISTINCT o_c_id) <> 3000 OR min(o_c_id) <> 1 OR max(o_c_id) <> 3000) x",
        "SELECT count(*) FROM item WHERE i_price NOT BETWEEN 1.00 AND 100.00 OR i_im_id NOT BETWEEN 1 AND 10000",
        "SELECT count(*) FROM stock WHERE s_quantity NOT BETWEEN 10 AND 100 OR s_ytd <> 0 OR length(s_dist_05) <> 24",
        "SELECT count(*) FROM warehouse WHERE w_tax NOT BETWEEN 0 AND 0.2 OR w_ytd <> 300000 OR w_zip NOT LIKE '____11111'",
        "SELECT count(*) FROM district WHERE d_tax NOT BETWEEN 0 AND 0.2 OR d_ytd <> 30000 OR d_next_o_id <> 3001",
        "SELECT count(*) FROM customer WHERE c_discount NOT BETWEEN 0 AND 0.5 OR c_balance <> -10 OR c_ytd_payment <> 10 OR c_middle <> 'OE' OR length(c_data) NOT BETWEEN 300 AND 500",
        "SELECT count(*) FROM orders WHERE o_ol_cnt NOT BETWEEN 5 AND 15 OR (o_id < 2101) <> (o_carrier_id IS NOT NULL)",
        "SELECT count(*) FROM order_line WHERE (ol_o_id < 2101 AND ol_amount <> 0) OR (ol_o_id >= 2101 AND ol_amount NOT BETWEEN 0.01 AND 9999.99) OR ol_quantity <> 5",
        "SELECT count(*) FROM new_order WHERE no_o_id NOT BETWEEN 2101 AND 3000",
        "SELECT count(*) FROM tpcc_meta WHERE warehouses <> 2 OR c_last_load NOT BETWEEN 0 AND 255",
    ];
    for sql in checks {
        assert_eq!(one(&db, sql).await, 0, "{sql}");
    }
    assert_consistent(&cluster, "after the load").await;

    // One new-order with an unused item, both sides: rolled back in specification mode
    // (D_NEXT_O_ID unchanged), committed with its bogus line in HammerDB mode.
    let next_o_id = "SELECT d_next_o_id::int8 FROM district WHERE d_w_id = 1 AND d_id = 4";
    for side in [Side::ServerProcedures, Side::ClientSql] {
        let mut client = cluster.connect("tpcc").await;
        let prepared = Prepared::new(&client, side).await.unwrap();
        let order = TxInput::NewOrder(NewOrderInput {
            w_id: 1,
            d_id: 4,
            c_id: 17,
            lines: vec![
                LineInput { supply_w_id: 1, i_id: 5, quantity: 3 },
                LineInput { supply_w_id: 2, i_id: 99, quantity: 1 },
                LineInput { supply_w_id: 1, i_id: UNUSED_ITEM_ID, quantity: 2 },
            ],
            invalid_item: true,
        });
        let before = one(&db, next_o_id).await;
        let out = execute(&mut client, &prepared, &order, Mode::Spec).await.unwrap();
        assert_eq!(out, Outcome::RolledBack, "{side:?}");
        assert_eq!(one(&db, next_o_id).await, before, "{side:?}: rollback kept the order");
        let out = execute(&mut client, &prepared, &order, Mode::HammerDb).await.unwrap();
        assert_eq!(out, Outcome::Committed, "{side:?}");
        assert_eq!(one(&db, next_o_id).await, before + 1);
        let o_id = before;
        let lines = one(
            &db,
            &format!("SELECT count(*) FROM order_line WHERE ol_w_id = 1 AND ol_d_id = 4 AND ol_o_id = {o_id}"),
        )
        .await;
        assert_eq!(lines, 3);
        let remote = one(&db, "SELECT s_remote_cnt::int8 FROM stock WHERE s_w_id = 2 AND s_i_id = 99").await;
        assert!(remote >= 1);
        // A payment by last name lands on a real customer and keeps the YTD sums in step.
        let pay = TxInput::Payment(PaymentInput {
            w_id: 1,
            d_id: 2,
            c_w_id: 2,
            c_d_id: 3,
            customer: CustomerKey::LastName(random::last_name(371)),
            amount_cents: 12_345,
        });
        assert_eq!(execute(&mut client, &prepared, &pay, Mode::Spec).await.unwrap(), Outcome::Committed);
    }
    assert_eq!(one(&db, "SELECT count(*) FROM history WHERE h_amount = 123.45").await, 2);
    assert_consistent(&cluster, "after single transactions").await;

    // A short driven run: specification mode, server-side functions.
    let mut ticks: Vec<DriveProgress> = Vec::new();
    let spec =
        run(&cluster.conn, &cfg, 4, (Duration::from_secs(1), Duration::from_secs(4)), &cancel, &mut |p| ticks.push(p))
            .await
            .unwrap_or_else(|e| panic!("run failed: {e}\nserver log:\n{}", cluster.log()));
    assert_eq!(spec.mode, Mode::Spec);
    assert!(spec.new_orders > 0 && spec.nopm > 0.0, "{spec:#?}");
    assert!(spec.tpm > spec.nopm, "{spec:#?}");
    assert!(spec.commits >= spec.new_orders, "{spec:#?}");
    assert!(!spec.errors.contains_key("other"), "errors: {:?} {:?}", spec.errors, spec.error_samples);
    let names: Vec<&str> = spec.per_type.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["new_order", "payment", "order_status", "delivery", "stock_level"]);
    let no = &spec.per_type[0];
    assert!(no.count > 0 && no.rollbacks <= no.count);
    assert!(no.p50_ms <= no.p90_ms && no.p90_ms <= no.p99_ms && no.p99_ms <= no.max_ms);
    assert_eq!(spec.client_transactions, spec.per_type.iter().map(|t| t.count).sum::<u64>());
    assert!(spec.client_cpu_seconds > 0.0);
    assert!(spec.server_cpu_seconds.is_some_and(|s| s > 0.0), "{:?}", spec.server_cpu_seconds);
    assert!(!spec.per_second.is_empty());
    assert!(ticks.iter().any(|t| t.in_ramp_up) && ticks.iter().any(|t| !t.in_ramp_up));
    // The specification mode never leaves an unused item in ORDER-LINE.
    assert_eq!(one(&db, &format!("SELECT count(*) FROM order_line WHERE ol_i_id = {UNUSED_ITEM_ID}")).await, 2);
    assert_consistent(&cluster, "after the specification-mode run").await;

    // HammerDB mode, client-side SQL, all warehouses.
    let hcfg = TpccConfig { mode: Mode::HammerDb, side: Side::ClientSql, all_warehouses: true, ..cfg.clone() };
    let hammer = run(&cluster.conn, &hcfg, 3, (Duration::from_secs(1), Duration::from_secs(3)), &cancel, &mut |_| {})
        .await
        .unwrap_or_else(|e| panic!("run failed: {e}\nserver log:\n{}", cluster.log()));
    assert_eq!((hammer.mode, hammer.side), (Mode::HammerDb, Side::ClientSql));
    assert!(hammer.new_orders > 0, "{hammer:#?}");
    assert_eq!(hammer.per_type[0].rollbacks, 0, "HammerDB mode commits invalid items");
    assert!(!hammer.errors.contains_key("other"), "errors: {:?} {:?}", hammer.errors, hammer.error_samples);
    assert_consistent(&cluster, "after the HammerDB-mode run").await;

    drop(db);
    cluster.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refuses_unloaded_or_mismatched_databases_and_cancels() {
    if !root_or_skip() {
        return;
    }
    let cluster = Cluster::start("errors", Cluster::TEST_SETTINGS).await;
    let no = AtomicBool::new(false);
    let cfg = TpccConfig::new(1);
    let err =
        run(&cluster.conn, &cfg, 1, (Duration::ZERO, Duration::from_secs(1)), &no, &mut |_| {}).await.unwrap_err();
    assert!(matches!(err, TpccError::Schema(_)), "{err}");

    // Cancel the load as soon as rows start flowing.
    let cancel = AtomicBool::new(false);
    let err = create_schema_and_load(&cluster.conn, &cfg, 1, &cancel, &mut |p| {
        if p.phase == LoadPhase::Schema {
            cancel.store(true, std::sync::atomic::Ordering::SeqCst);
        }
    })
    .await
    .unwrap_err();
    assert!(matches!(err, TpccError::Cancelled), "{err}");

    // tpcc_meta says one warehouse: a two-warehouse configuration is refused.
    let err = run(&cluster.conn, &TpccConfig::new(2), 1, (Duration::ZERO, Duration::from_secs(1)), &no, &mut |_| {})
        .await
        .unwrap_err();
    assert!(matches!(err, TpccError::Config(_)), "{err}");

    // A raised cancel flag stops a run.
    let raised = AtomicBool::new(true);
    let err = run(&cluster.conn, &cfg, 2, (Duration::from_secs(5), Duration::from_secs(5)), &raised, &mut |_| {})
        .await
        .unwrap_err();
    assert!(matches!(err, TpccError::Cancelled), "{err}");

    let err = create_schema_and_load(&cluster.conn, &TpccConfig::new(0), 1, &no, &mut |_| {}).await.unwrap_err();
    assert!(matches!(err, TpccError::Config(_)), "{err}");
    cluster.shutdown().await;
}
