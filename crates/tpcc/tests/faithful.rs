//! Mode::HammerDbFaithful against a real PostgreSQL: HammerDB's schema and population, its
//! functions' defects one call at a time (by-name lookups that find nobody, read-before-update
//! balances, the C_DATA prefix, the subtransaction per call, a caught deadlock turned into
//! SQLSTATE 2D000), then a short driven run and what it leaves in the tables (item 100001 lines
//! with NULL amounts, the `+` amount formula, "remote" orders without a remote line, about 31
//! DBMS_RANDOM calls per new-order). Needs root; PGTIER_SKIP_ROOT_TESTS=1 skips explicitly.

mod common;

use std::sync::atomic::AtomicBool;
use std::time::Duration;

use tpcc::faithful::Call;
use tpcc::terminal::TxInput;
use tpcc::transactions::{Outcome, Prepared, execute};
use tpcc::{LoadPhase, Mode, Side, TpccConfig, TpccError, create_schema_and_load, run};

use common::{Cluster, root_or_skip};

async fn one(client: &tokio_postgres::Client, sql: &str) -> i64 {
    client.query_one(sql, &[]).await.unwrap_or_else(|e| panic!("{sql}: {e}")).get(0)
}

async fn text(client: &tokio_postgres::Client, sql: &str) -> String {
    client.query_one(sql, &[]).await.unwrap_or_else(|e| panic!("{sql}: {e}")).get(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hammerdb_faithful_mode_reproduces_hammerdb() {
    if !root_or_skip() {
        return;
    }
    let mut settings = Cluster::TEST_SETTINGS.to_vec();
    settings.push(("track_functions", "all"));
    let cluster = Cluster::start("faithful", &settings).await;
    let cancel = AtomicBool::new(false);
    let cfg = TpccConfig { mode: Mode::HammerDbFaithful, ..TpccConfig::new(2) };

    // Load as HammerDB builds.
    let mut phases = Vec::new();
    let load = create_schema_and_load(&cluster.conn, &cfg, 2, &cancel, &mut |p| phases.push(p.phase))
        .await
        .unwrap_or_else(|e| panic!("load failed: {e}\nserver log:\n{}", cluster.log()));
    for phase in [LoadPhase::Schema, LoadPhase::Copy, LoadPhase::Index, LoadPhase::Analyze, LoadPhase::Done] {
        assert!(phases.contains(&phase), "no {phase:?} in {phases:?}");
    }
    let rows = |t: &str| load.rows_per_table[t];
    for (t, n) in [
        ("item", 100_000),
        ("warehouse", 2),
        ("district", 20),
        ("stock", 200_000),
        ("customer", 60_000),
        ("history", 60_000),
        ("orders", 60_000),
        ("new_order", 18_000),
    ] {
        assert_eq!(rows(t), n, "{t}");
    }
    let db = cluster.connect("tpcc").await;
    assert_eq!(one(&db, "SELECT count(*) FROM order_line").await as u64, rows("order_line"));
    // HammerDB's keys and indexes, and its column order.
    let indexes = text(
        &db,
        "SELECT string_agg(indexname || ':' || regexp_replace(indexdef, '.*USING btree ', ''), ' ' ORDER BY indexname) \
         FROM pg_indexes WHERE schemaname = 'public' AND tablename <> 'tpcc_meta'",
    )
    .await;
    assert_eq!(
        indexes,
        "customer_i1:(c_w_id, c_d_id, c_id) customer_i2:(c_w_id, c_d_id, c_last, c_first, c_id) \
         district_i1:(d_w_id, d_id) item_i1:(i_id) new_order_i1:(no_w_id, no_d_id, no_o_id) \
         order_line_i1:(ol_w_id, ol_d_id, ol_o_id, ol_number) orders_i1:(o_w_id, o_d_id, o_id) \
         orders_i2:(o_w_id, o_d_id, o_c_id, o_id) stock_i1:(s_i_id, s_w_id) warehouse_i1:(w_id)"
    );
    assert_eq!(
        text(&db, "SELECT string_agg(attname, ',' ORDER BY attnum) FROM pg_attribute WHERE attrelid = 'stock'::regclass AND attnum > 0").await,
        "s_i_id,s_w_id,s_ytd,s_quantity,s_order_cnt,s_remote_cnt,s_dist_01,s_dist_02,s_dist_03,s_dist_04,s_dist_05,s_dist_06,s_dist_07,s_dist_08,s_dist_09,s_dist_10,s_data"
    );
    // Analysed, never vacuumed by the loader.
    assert_eq!(
        one(&db, "SELECT count(*) FROM pg_stat_user_tables WHERE last_analyze IS NULL AND relname <> 'tpcc_meta'")
            .await,
        0
    );
    assert_eq!(one(&db, "SELECT count(*) FROM pg_stat_user_tables WHERE last_vacuum IS NOT NULL").await, 0);

    // HammerDB's value distributions.
    let share = |sql: &'static str| {
        let db = &db;
        async move { db.query_one(sql, &[]).await.unwrap().get::<_, f64>(0) }
    };
    let bc = share("SELECT avg((c_credit = 'BC')::int)::float8 FROM customer").await;
    assert!((0.48..=0.52).contains(&bc), "BC share {bc}");
    let original = share("SELECT avg((i_data LIKE '%original%')::int)::float8 FROM item").await;
    assert!((0.09..=0.10).contains(&original), "original share {original}");
    let no_order = share(
        "SELECT avg((NOT EXISTS (SELECT 1 FROM orders WHERE o_w_id = c_w_id AND o_d_id = c_d_id AND o_c_id = c_id))::int)::float8 FROM customer",
    )
    .await;
    assert!((0.45..=0.55).contains(&no_order), "customers without an order: {no_order}");
    let checks = [
        "SELECT count(*) FROM item WHERE i_data LIKE '%ORIGINAL%' OR i_price NOT BETWEEN 1.00 AND 100.00",
        "SELECT count(*) FROM stock WHERE s_data LIKE '%ORIGINAL%' OR s_quantity NOT BETWEEN 10 AND 100",
        "SELECT count(*) FROM warehouse WHERE w_tax NOT BETWEEN 0.10 AND 0.20 OR w_tax <> round(w_tax, 2) OR w_ytd <> 300000",
        "SELECT count(*) FROM district WHERE d_tax NOT BETWEEN 0.10 AND 0.20 OR d_tax <> round(d_tax, 2) OR d_ytd <> 30000 OR d_next_o_id <> 3001",
        "SELECT count(*) FROM customer WHERE c_discount NOT BETWEEN 0 AND 0.5 OR c_discount <> round(c_discount, 2) OR c_balance <> -10 OR c_ytd_payment <> 10 OR c_credit_lim <> 50000 OR c_zip NOT LIKE '%11111' OR length(c_phone) <> 16",
        "SELECT count(*) FROM orders WHERE o_c_id < o_id OR (o_id <= 2100) <> (o_carrier_id IS NOT NULL)",
        "SELECT count(*) FROM order_line WHERE (ol_o_id <= 2100 AND (ol_amount NOT BETWEEN 0.10 AND 100.00 OR ol_delivery_d IS NULL)) OR (ol_o_id > 2100 AND (ol_amount <> 0 OR ol_delivery_d IS NOT NULL)) OR ol_quantity <> 5",
        "SELECT count(*) FROM history WHERE h_amount <> 10 OR h_c_id IS NULL",
    ];
    for sql in checks {
        assert_eq!(one(&db, sql).await, 0, "{sql}");
    }
    assert_eq!(one(&db, "SELECT count(DISTINCT c_discount) FROM customer").await, 51);
    assert_eq!(text(&db, "SELECT loader FROM tpcc_meta").await, "hammerdb-faithful");

    // One call at a time, on a connection set up as a HammerDB virtual user's.
    let mut vu = cluster.connect("tpcc").await;
    let p = Prepared::for_mode(&vu, Mode::HammerDbFaithful, Side::ServerProcedures).await.unwrap();
    let bc_customer = |d: i32| {
        format!(
            "SELECT c_id::int8 FROM customer WHERE c_w_id = 1 AND c_d_id = {d} AND c_credit = 'BC' ORDER BY c_id LIMIT 1"
        )
    };
    // By name: the name never reaches the query, so nobody is found; the random c_id is
    // charged as a good-credit customer with a balance of 0 - amount, C_DATA untouched.
    let c = one(&db, &bc_customer(3)).await as i32;
    let data_before =
        text(&db, &format!("SELECT c_data FROM customer WHERE c_w_id = 1 AND c_d_id = 3 AND c_id = {c}")).await;
    let name = text(&db, &format!("SELECT c_last FROM customer WHERE c_w_id = 1 AND c_d_id = 3 AND c_id = {c}")).await;
    let pay = |c_id, by_name, amount_dollars, c_last: &str| {
        TxInput::Faithful(Call::Payment {
            w_id: 1,
            d_id: 3,
            c_w_id: 1,
            c_d_id: 3,
            c_id,
            by_name,
            amount_dollars,
            c_last: c_last.to_string(),
        })
    };
    assert_eq!(
        execute(&mut vu, &p, &pay(c, true, 123, &name), Mode::HammerDbFaithful).await.unwrap(),
        Outcome::Committed
    );
    let row = db
        .query_one(
            &format!("SELECT c_balance::text, c_data FROM customer WHERE c_w_id = 1 AND c_d_id = 3 AND c_id = {c}"),
            &[],
        )
        .await
        .unwrap();
    assert_eq!(row.get::<_, String>(0), "-123.00", "by-name payment: balance from 0, not from -10");
    assert_eq!(row.get::<_, String>(1), data_before, "by-name payment leaves C_DATA");
    assert_eq!(one(&db, &format!("SELECT count(*) FROM history WHERE h_c_id = {c} AND h_amount = 123")).await, 1);
    // By id on a BC customer: read, then balance - amount, and the short C_DATA prefix.
    let c2 = one(&db, &bc_customer(4)).await as i32;
    let pay2 = TxInput::Faithful(Call::Payment {
        w_id: 1,
        d_id: 2,
        c_w_id: 1,
        c_d_id: 4,
        c_id: c2,
        by_name: false,
        amount_dollars: 77,
        c_last: String::new(),
    });
    execute(&mut vu, &p, &pay2, Mode::HammerDbFaithful).await.unwrap();
    let row = db
        .query_one(
            &format!("SELECT c_balance::text, c_data FROM customer WHERE c_w_id = 1 AND c_d_id = 4 AND c_id = {c2}"),
            &[],
        )
        .await
        .unwrap();
    assert_eq!(row.get::<_, String>(0), "-87.00");
    let prefix = format!("{c2} 4 1 2 1    77.00 | ");
    assert!(
        row.get::<_, String>(1).starts_with(&prefix),
        "{:?} does not start with {prefix:?}",
        row.get::<_, String>(1)
    );
    // Order-status: by name finds nobody (no rows); by id the latest order's lines.
    let with_order =
        one(&db, "SELECT o_c_id::int8 FROM orders WHERE o_w_id = 1 AND o_d_id = 5 ORDER BY o_id DESC LIMIT 1").await
            as i32;
    let lines =
        one(&db, "SELECT o_ol_cnt::int8 FROM orders WHERE o_w_id = 1 AND o_d_id = 5 ORDER BY o_id DESC LIMIT 1").await;
    let ostat = |by_name| {
        TxInput::Faithful(Call::OrderStatus { w_id: 1, d_id: 5, c_id: with_order, by_name, c_last: "BARBARBAR".into() })
    };
    let (ostat_sql, ostat_types) = tpcc::faithful::sql::PREPARED[2];
    let stmt = vu.prepare_typed(ostat_sql, ostat_types).await.unwrap();
    let rows_of = |by_name: i32, name: &'static str| {
        let (vu, stmt) = (&vu, &stmt);
        async move { vu.query(stmt, &[&1i32, &5i32, &with_order, &by_name, &name]).await.unwrap().len() as i64 }
    };
    assert_eq!(rows_of(1, "BARBARBAR").await, 0, "by name, whatever the name");
    assert_eq!(rows_of(0, "").await, lines, "by id: the latest order's lines");
    for by_name in [true, false] {
        assert_eq!(execute(&mut vu, &p, &ostat(by_name), Mode::HammerDbFaithful).await.unwrap(), Outcome::Committed);
    }
    // A new-order is two transaction ids: the call's and its EXCEPTION block's subtransaction.
    let xid = "SELECT pg_current_xact_id()::text::int8";
    let before = one(&vu, xid).await;
    let no = TxInput::Faithful(Call::NewOrder { w_id: 1, max_w_id: 2, d_id: 6, c_id: 10, ol_cnt: 10 });
    execute(&mut vu, &p, &no, Mode::HammerDbFaithful).await.unwrap();
    assert_eq!(one(&vu, xid).await - before, 3, "probe + new-order + its subtransaction");

    // A deadlock inside a function is caught by the handler, whose ROLLBACK PostgreSQL refuses:
    // the client sees SQLSTATE 2D000, not 40P01.
    let holder = cluster.connect("tpcc").await;
    holder
        .batch_execute("BEGIN; UPDATE customer SET c_balance = c_balance WHERE c_w_id = 2 AND c_d_id = 1 AND c_id = 5")
        .await
        .unwrap();
    let victim = tokio::spawn({
        let conn = cluster.conn.clone();
        async move {
            let mut c = conn.connect("victim").await.unwrap();
            let p = Prepared::for_mode(&c, Mode::HammerDbFaithful, Side::ServerProcedures).await.unwrap();
            let call = TxInput::Faithful(Call::Payment {
                w_id: 2,
                d_id: 1,
                c_w_id: 2,
                c_d_id: 1,
                c_id: 5,
                by_name: false,
                amount_dollars: 5,
                c_last: String::new(),
            });
            execute(&mut c, &p, &call, Mode::HammerDbFaithful).await
        }
    });
    // Wait until the payment holds warehouse 2 and waits for the customer row.
    let mut waited = 0;
    while one(
        &db,
        "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'victim' AND wait_event_type = 'Lock'",
    )
    .await
        == 0
    {
        tokio::time::sleep(Duration::from_millis(20)).await;
        waited += 1;
        assert!(waited < 500, "the payment never waited for the customer row");
    }
    let (victim, closing) =
        tokio::join!(victim, holder.batch_execute("UPDATE warehouse SET w_ytd = w_ytd WHERE w_id = 2"));
    let err = victim.unwrap().expect_err("one side of the deadlock must fail");
    closing.expect("the other side goes on");
    holder.batch_execute("ROLLBACK").await.unwrap();
    assert_eq!(err.code().map(|c| c.code()), Some("2D000"), "{err:?}");
    assert_eq!(tpcc::transactions::error_kind(&err), "invalid_transaction_termination");

    // Mode and database must match; the faithful mode has no client-side variant.
    let spec =
        run(&cluster.conn, &TpccConfig::new(2), 1, (Duration::ZERO, Duration::from_secs(1)), &cancel, &mut |_| {})
            .await
            .unwrap_err();
    assert!(matches!(spec, TpccError::Schema(ref m) if m.contains("hammerdb-faithful")), "{spec}");
    let client_side = TpccConfig { side: Side::ClientSql, ..cfg.clone() };
    let err = run(&cluster.conn, &client_side, 1, (Duration::ZERO, Duration::from_secs(1)), &cancel, &mut |_| {})
        .await
        .unwrap_err();
    assert!(matches!(err, TpccError::Config(_)), "{err}");

    // A short driven run.
    let start_o_id = one(&db, "SELECT max(o_id)::int8 FROM orders").await;
    let r = run(&cluster.conn, &cfg, 4, (Duration::from_secs(1), Duration::from_secs(4)), &cancel, &mut |_| {})
        .await
        .unwrap_or_else(|e| panic!("run failed: {e}\nserver log:\n{}", cluster.log()));
    assert_eq!(r.mode, Mode::HammerDbFaithful);
    assert!(r.new_orders > 0 && r.nopm > 0.0 && r.tpm > r.nopm, "{r:#?}");
    let errors: u64 =
        r.errors.iter().filter(|(k, _)| k.as_str() != "invalid_transaction_termination").map(|(_, v)| v).sum();
    assert_eq!(errors, 0, "{:?} {:?}", r.errors, r.error_samples);
    assert!(r.per_type.iter().all(|t| t.count > 0), "{:#?}", r.per_type);
    drop(vu);

    // What the run left: item 100001 committed with NULL amount and district info; amounts by
    // HammerDB's formula (quantity + price * (1 + taxes) * (1 - discount)); orders flagged
    // remote whose lines all come from home; about 31 DBMS_RANDOM calls per new-order.
    let new = format!("ol_o_id > {start_o_id}");
    let invalid = one(&db, &format!("SELECT count(*) FROM order_line WHERE {new} AND ol_i_id = 100001")).await;
    let invalid_null =
        one(&db, &format!("SELECT count(*) FROM order_line WHERE {new} AND ol_i_id = 100001 AND ol_amount IS NULL AND ol_dist_info IS NULL")).await;
    assert!(invalid > 0 && invalid == invalid_null, "{invalid} lines of item 100001, {invalid_null} with NULLs");
    let formula = db
        .query_one(
            &format!(
                "SELECT count(*), count(*) FILTER (WHERE ol_amount = round(ol_quantity + i_price * (1 + w_tax + d_tax) * (1 - c_discount), 2)) \
                 FROM order_line JOIN orders ON o_w_id = ol_w_id AND o_d_id = ol_d_id AND o_id = ol_o_id \
                 JOIN item ON i_id = ol_i_id JOIN warehouse ON w_id = ol_w_id \
                 JOIN district ON d_w_id = ol_w_id AND d_id = ol_d_id \
                 JOIN customer ON c_w_id = o_w_id AND c_d_id = o_d_id AND c_id = o_c_id WHERE {new}"
            ),
            &[],
        )
        .await
        .unwrap();
    let (all, matching): (i64, i64) = (formula.get(0), formula.get(1));
    assert!(all > 0 && matching as f64 >= 0.99 * all as f64, "{matching} of {all} lines follow the + formula");
    let flagged = one(&db, &format!("SELECT count(*) FROM orders WHERE o_id > {start_o_id} AND o_all_local = 0")).await;
    let home_only = one(
        &db,
        &format!(
            "SELECT count(*) FROM orders WHERE o_id > {start_o_id} AND o_all_local = 0 AND NOT EXISTS \
             (SELECT 1 FROM order_line WHERE ol_w_id = o_w_id AND ol_d_id = o_d_id AND ol_o_id = o_id AND ol_supply_w_id <> o_w_id)"
        ),
    )
    .await;
    assert!(flagged > 0 && home_only > 0, "{home_only} of {flagged} remote-flagged orders have no remote line");
    // Function statistics are flushed when the virtual users' backends exit.
    let mut ratio = 0.0;
    for _ in 0..50 {
        let row = db
            .query_one(
                "SELECT (SELECT calls FROM pg_stat_user_functions WHERE funcname = 'dbms_random')::float8 / \
                 (SELECT calls FROM pg_stat_user_functions WHERE funcname = 'neword')::float8",
                &[],
            )
            .await
            .unwrap();
        ratio = row.get::<_, Option<f64>>(0).unwrap_or(0.0);
        if (29.0..=33.0).contains(&ratio) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!((29.0..=33.0).contains(&ratio), "{ratio} DBMS_RANDOM calls per new-order");
    drop(db);
    drop(holder);
    cluster.shutdown().await;
}
