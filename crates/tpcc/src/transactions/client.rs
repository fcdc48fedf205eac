//! Client-side SQL: each transaction as prepared statements sent by the driver (pgtier's own
//! mode and HammerDB's client-side variant), and the statements themselves.

use super::*;

/// What a client-side transaction body returns: `Some(outcome)` to roll back with it, `None` to
/// commit.
pub(super) type Ended = Result<Option<Outcome>, tokio_postgres::Error>;

// Client-side statements; the same SQL as the functions in sql/functions.sql.
pub(super) const NO_WAREHOUSE: usize = 0;

pub(super) const NO_DISTRICT: usize = 1;

pub(super) const NO_CUSTOMER: usize = 2;

pub(super) const NO_ORDER: usize = 3;

pub(super) const NO_NEW_ORDER: usize = 4;

pub(super) const NO_ITEM: usize = 5;

pub(super) const NO_STOCK: usize = 6;

pub(super) const NO_LINE: usize = 7;

pub(super) const P_WAREHOUSE: usize = 8;

pub(super) const P_DISTRICT: usize = 9;

pub(super) const CUSTOMER_BY_NAME: usize = 10;

pub(super) const P_CUSTOMER: usize = 11;

pub(super) const P_HISTORY: usize = 12;

pub(super) const OS_CUSTOMER: usize = 13;

pub(super) const OS_ORDER: usize = 14;

pub(super) const OS_LINES: usize = 15;

pub(super) const D_OLDEST: usize = 16;

pub(super) const D_ANY: usize = 17;

pub(super) const D_DELETE: usize = 18;

pub(super) const D_ORDER: usize = 19;

pub(super) const D_LINES: usize = 20;

pub(super) const D_CUSTOMER: usize = 21;

pub(super) const SL_DISTRICT: usize = 22;

pub(super) const SL_COUNT: usize = 23;

pub(super) const CLIENT: [(&str, &[Type]); 24] = [
    ("SELECT w_tax FROM warehouse WHERE w_id = $1", &[I4]),
    (
        "UPDATE district SET d_next_o_id = d_next_o_id + 1 WHERE d_w_id = $1 AND d_id = $2 \
         RETURNING d_tax, d_next_o_id - 1",
        &[I4, I4],
    ),
    (
        "SELECT c_discount, c_last, c_credit FROM customer \
         WHERE c_w_id = $1 AND c_d_id = $2 AND c_id = $3",
        &[I4, I4, I4],
    ),
    (
        "INSERT INTO orders (o_id, o_d_id, o_w_id, o_c_id, o_entry_d, o_carrier_id, o_ol_cnt, o_all_local) \
         VALUES ($1, $2, $3, $4, now(), NULL, $5, $6)",
        &[I4, I4, I4, I4, I4, I4],
    ),
    ("INSERT INTO new_order (no_o_id, no_d_id, no_w_id) VALUES ($1, $2, $3)", &[I4, I4, I4]),
    ("SELECT (i_price * 100)::int4, i_name, i_data FROM item WHERE i_id = $1", &[I4]),
    (
        "UPDATE stock SET s_quantity = CASE WHEN s_quantity >= $3 + 10 THEN s_quantity - $3 \
         ELSE s_quantity - $3 + 91 END, s_ytd = s_ytd + $3, s_order_cnt = s_order_cnt + 1, \
         s_remote_cnt = s_remote_cnt + $5 WHERE s_w_id = $1 AND s_i_id = $2 \
         RETURNING s_data, CASE $4 WHEN 1 THEN s_dist_01 WHEN 2 THEN s_dist_02 WHEN 3 THEN s_dist_03 \
         WHEN 4 THEN s_dist_04 WHEN 5 THEN s_dist_05 WHEN 6 THEN s_dist_06 WHEN 7 THEN s_dist_07 \
         WHEN 8 THEN s_dist_08 WHEN 9 THEN s_dist_09 ELSE s_dist_10 END",
        &[I4, I4, I4, I4, I4],
    ),
    (
        "INSERT INTO order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id, \
         ol_delivery_d, ol_quantity, ol_amount, ol_dist_info) \
         VALUES ($1, $2, $3, $4, $5, $6, NULL, $7, $8 * 0.01, $9)",
        &[I4, I4, I4, I4, I4, I4, I4, I4, Type::TEXT],
    ),
    (
        "UPDATE warehouse SET w_ytd = w_ytd + $2 * 0.01 WHERE w_id = $1 \
         RETURNING w_name, w_street_1, w_street_2, w_city, w_state, w_zip",
        &[I4, I4],
    ),
    (
        "UPDATE district SET d_ytd = d_ytd + $3 * 0.01 WHERE d_w_id = $1 AND d_id = $2 \
         RETURNING d_name, d_street_1, d_street_2, d_city, d_state, d_zip",
        &[I4, I4, I4],
    ),
    (
        "SELECT c_id FROM customer WHERE c_w_id = $1 AND c_d_id = $2 AND c_last = $3 ORDER BY c_first",
        &[I4, I4, Type::VARCHAR],
    ),
    (
        "UPDATE customer SET c_balance = c_balance - $4 * 0.01, \
         c_ytd_payment = c_ytd_payment + $4 * 0.01, c_payment_cnt = c_payment_cnt + 1, \
         c_data = CASE WHEN c_credit = 'BC' THEN left(format('%s %s %s %s %s %s | ', $3, $2, $1, $5, $6, \
         ($4 * 0.01)::numeric(6,2)) || c_data, 500) ELSE c_data END \
         WHERE c_w_id = $1 AND c_d_id = $2 AND c_id = $3 \
         RETURNING c_first, c_middle, c_last, c_street_1, c_street_2, c_city, c_state, c_zip, \
         c_phone, c_since, c_credit, c_credit_lim, c_discount, c_balance",
        &[I4, I4, I4, I4, I4, I4],
    ),
    (
        "INSERT INTO history (h_c_id, h_c_d_id, h_c_w_id, h_d_id, h_w_id, h_date, h_amount, h_data) \
         VALUES ($1, $2, $3, $4, $5, now(), $6 * 0.01, $7)",
        &[I4, I4, I4, I4, I4, I4, Type::TEXT],
    ),
    (
        "SELECT c_balance, c_first, c_middle, c_last FROM customer \
         WHERE c_w_id = $1 AND c_d_id = $2 AND c_id = $3",
        &[I4, I4, I4],
    ),
    (
        "SELECT o_id, o_entry_d, o_carrier_id FROM orders \
         WHERE o_w_id = $1 AND o_d_id = $2 AND o_c_id = $3 ORDER BY o_id DESC LIMIT 1",
        &[I4, I4, I4],
    ),
    (
        "SELECT ol_i_id, ol_supply_w_id, ol_quantity, ol_amount, ol_delivery_d FROM order_line \
         WHERE ol_w_id = $1 AND ol_d_id = $2 AND ol_o_id = $3",
        &[I4, I4, I4],
    ),
    (
        "SELECT no_o_id FROM new_order WHERE no_w_id = $1 AND no_d_id = $2 \
         ORDER BY no_o_id LIMIT 1 FOR UPDATE",
        &[I4, I4],
    ),
    ("SELECT EXISTS (SELECT 1 FROM new_order WHERE no_w_id = $1 AND no_d_id = $2)", &[I4, I4]),
    ("DELETE FROM new_order WHERE no_w_id = $1 AND no_d_id = $2 AND no_o_id = $3", &[I4, I4, I4]),
    (
        "UPDATE orders SET o_carrier_id = $4 WHERE o_w_id = $1 AND o_d_id = $2 AND o_id = $3 \
         RETURNING o_c_id",
        &[I4, I4, I4, I4],
    ),
    (
        "WITH delivered AS (UPDATE order_line SET ol_delivery_d = now() \
         WHERE ol_w_id = $1 AND ol_d_id = $2 AND ol_o_id = $3 RETURNING ol_amount) \
         SELECT (coalesce(sum(ol_amount), 0) * 100)::int8 FROM delivered",
        &[I4, I4, I4],
    ),
    (
        "UPDATE customer SET c_balance = c_balance + $4 * 0.01, c_delivery_cnt = c_delivery_cnt + 1 \
         WHERE c_w_id = $1 AND c_d_id = $2 AND c_id = $3",
        &[I4, I4, I4, Type::INT8],
    ),
    ("SELECT d_next_o_id FROM district WHERE d_w_id = $1 AND d_id = $2", &[I4, I4]),
    (
        "SELECT count(DISTINCT s_i_id) FROM order_line JOIN stock ON s_w_id = $1 AND s_i_id = ol_i_id \
         WHERE ol_w_id = $1 AND ol_d_id = $2 AND ol_o_id >= $3 - 20 AND ol_o_id < $3 \
         AND s_quantity < $4",
        &[I4, I4, I4, I4],
    ),
];

/// The customer id of a by-name lookup: the one at position ceil(n / 2) sorted by C_FIRST.
pub(super) async fn customer_by_name(
    tx: &tokio_postgres::Transaction<'_>,
    p: &Prepared,
    w_id: i32,
    d_id: i32,
    name: &str,
) -> Result<Option<i32>, tokio_postgres::Error> {
    let rows = tx.query(&p.stmts[CUSTOMER_BY_NAME], &[&w_id, &d_id, &name]).await?;
    if rows.is_empty() {
        return Ok(None);
    }
    Ok(Some(rows[rows.len().div_ceil(2) - 1].get(0)))
}

/// Client-side SQL: one transaction of `input`, committed, or rolled back when the transaction
/// itself says so (an unknown item in the specification's mode, a customer name nobody has).
pub(super) async fn execute_client(
    client: &mut Client,
    p: &Prepared,
    input: &TxInput,
    mode: Mode,
) -> Result<Outcome, tokio_postgres::Error> {
    let tx = client.transaction().await?;
    let ended = match input {
        TxInput::NewOrder(o) => client_new_order(&tx, p, o, mode).await?,
        TxInput::Payment(pay) => client_payment(&tx, p, pay).await?,
        TxInput::OrderStatus(os) => client_order_status(&tx, p, os).await?,
        TxInput::Delivery(d) => client_delivery(&tx, p, d).await?,
        TxInput::StockLevel(sl) => client_stock_level(&tx, p, sl).await?,
        TxInput::Faithful(_) => unreachable!("faithful calls are made by execute"),
    };
    match ended {
        Some(outcome) => {
            tx.rollback().await?;
            Ok(outcome)
        }
        None => {
            tx.commit().await?;
            Ok(Outcome::Committed)
        }
    }
}

pub(super) async fn client_new_order(tx: &Transaction<'_>, p: &Prepared, o: &NewOrderInput, mode: Mode) -> Ended {
    let s = &p.stmts;
    // Statements that do not depend on each other's results are pipelined: sent
    // together, executed by the server one after the other in the order sent (so stock
    // rows are still locked in sorted order), answered together.
    let (_, district, _) = try_join3(
        tx.query_one(&s[NO_WAREHOUSE], &[&o.w_id]),
        tx.query_one(&s[NO_DISTRICT], &[&o.w_id, &o.d_id]),
        tx.query_one(&s[NO_CUSTOMER], &[&o.w_id, &o.d_id, &o.c_id]),
    )
    .await?;
    let o_id: i32 = district.get(1);
    let all_local = i32::from(o.lines.iter().all(|l| l.supply_w_id == o.w_id));
    let ol_cnt = o.lines.len() as i32;
    // (Parameter lists live here so the pipelined futures can borrow them.)
    let item_params: Vec<[&(dyn ToSql + Sync); 1]> = o.lines.iter().map(|l| [&l.i_id as _]).collect();
    let (_, _, items) = try_join3(
        tx.execute(&s[NO_ORDER], &[&o_id, &o.d_id, &o.w_id, &o.c_id, &ol_cnt, &all_local]),
        tx.execute(&s[NO_NEW_ORDER], &[&o_id, &o.d_id, &o.w_id]),
        try_join_all(item_params.iter().map(|params| tx.query_opt(&s[NO_ITEM], params))),
    )
    .await?;
    let prices: Vec<Option<i32>> = items.iter().map(|r| r.as_ref().map(|r| r.get(0))).collect();
    if mode == Mode::Spec && prices.iter().any(Option::is_none) {
        return Ok(Some(Outcome::RolledBack));
    }
    let remote: Vec<i32> = o.lines.iter().map(|l| i32::from(l.supply_w_id != o.w_id)).collect();
    // HammerDB mode: a line with an unknown item updates no stock and is stored with
    // amount 0 and a blank OL_DIST_INFO.
    let stock_params: Vec<[&(dyn ToSql + Sync); 5]> = o
        .lines
        .iter()
        .zip(&prices)
        .zip(&remote)
        .filter(|((_, price), _)| price.is_some())
        .map(|((l, _), r)| [&l.supply_w_id as _, &l.i_id as _, &l.quantity as _, &o.d_id as _, r as _])
        .collect();
    let stock_rows = try_join_all(stock_params.iter().map(|params| tx.query_one(&s[NO_STOCK], params))).await?;
    let blank = " ".repeat(24);
    let mut stock = stock_rows.iter();
    let mut dists: Vec<&str> = Vec::with_capacity(o.lines.len());
    let mut amounts: Vec<i32> = Vec::with_capacity(o.lines.len());
    for (l, price) in o.lines.iter().zip(&prices) {
        match price {
            Some(cents) => {
                dists.push(stock.next().expect("one stock row per known item").get(1));
                amounts.push(l.quantity * cents);
            }
            None => {
                dists.push(&blank);
                amounts.push(0);
            }
        }
    }
    let numbers: Vec<i32> = (1..=ol_cnt).collect();
    let line_params: Vec<[&(dyn ToSql + Sync); 9]> = o
        .lines
        .iter()
        .enumerate()
        .map(|(n, l)| {
            [
                &o_id as _,
                &o.d_id as _,
                &o.w_id as _,
                &numbers[n] as _,
                &l.i_id as _,
                &l.supply_w_id as _,
                &l.quantity as _,
                &amounts[n] as _,
                &dists[n] as _,
            ]
        })
        .collect();
    try_join_all(line_params.iter().map(|params| tx.execute(&s[NO_LINE], params))).await?;
    Ok(None)
}

pub(super) async fn client_payment(tx: &Transaction<'_>, p: &Prepared, pay: &PaymentInput) -> Ended {
    let s = &p.stmts;
    let (w, d) = try_join(
        tx.query_one(&s[P_WAREHOUSE], &[&pay.w_id, &pay.amount_cents]),
        tx.query_one(&s[P_DISTRICT], &[&pay.w_id, &pay.d_id, &pay.amount_cents]),
    )
    .await?;
    let w_name: &str = w.get(0);
    let d_name: &str = d.get(0);
    let c_id = match &pay.customer {
        CustomerKey::Id(id) => *id,
        CustomerKey::LastName(name) => match customer_by_name(tx, p, pay.c_w_id, pay.c_d_id, name).await? {
            Some(id) => id,
            None => {
                return Ok(Some(Outcome::NoCustomer(format!(
                    "no customer named {name} in warehouse {} district {}",
                    pay.c_w_id, pay.c_d_id
                ))));
            }
        },
    };
    let h_data = format!("{w_name}    {d_name}");
    try_join(
        tx.query_one(&s[P_CUSTOMER], &[&pay.c_w_id, &pay.c_d_id, &c_id, &pay.amount_cents, &pay.d_id, &pay.w_id]),
        tx.execute(&s[P_HISTORY], &[&c_id, &pay.c_d_id, &pay.c_w_id, &pay.d_id, &pay.w_id, &pay.amount_cents, &h_data]),
    )
    .await?;
    Ok(None)
}

pub(super) async fn client_order_status(tx: &Transaction<'_>, p: &Prepared, os: &OrderStatusInput) -> Ended {
    let s = &p.stmts;
    let c_id = match &os.customer {
        CustomerKey::Id(id) => *id,
        CustomerKey::LastName(name) => match customer_by_name(tx, p, os.w_id, os.d_id, name).await? {
            Some(id) => id,
            None => {
                return Ok(Some(Outcome::NoCustomer(format!(
                    "no customer named {name} in warehouse {} district {}",
                    os.w_id, os.d_id
                ))));
            }
        },
    };
    tx.query_one(&s[OS_CUSTOMER], &[&os.w_id, &os.d_id, &c_id]).await?;
    if let Some(order) = tx.query_opt(&s[OS_ORDER], &[&os.w_id, &os.d_id, &c_id]).await? {
        let o_id: i32 = order.get(0);
        tx.query(&s[OS_LINES], &[&os.w_id, &os.d_id, &o_id]).await?;
    }
    Ok(None)
}

pub(super) async fn client_delivery(tx: &Transaction<'_>, p: &Prepared, d: &DeliveryInput) -> Ended {
    let s = &p.stmts;
    for d_id in 1..=10i32 {
        let o_id: i32 = loop {
            if let Some(row) = tx.query_opt(&s[D_OLDEST], &[&d.w_id, &d_id]).await? {
                break row.get(0);
            }
            let any: bool = tx.query_one(&s[D_ANY], &[&d.w_id, &d_id]).await?.get(0);
            if !any {
                break 0;
            }
        };
        if o_id == 0 {
            continue;
        }
        tx.execute(&s[D_DELETE], &[&d.w_id, &d_id, &o_id]).await?;
        let c_id: i32 = tx.query_one(&s[D_ORDER], &[&d.w_id, &d_id, &o_id, &d.carrier_id]).await?.get(0);
        let total_cents: i64 = tx.query_one(&s[D_LINES], &[&d.w_id, &d_id, &o_id]).await?.get(0);
        tx.execute(&s[D_CUSTOMER], &[&d.w_id, &d_id, &c_id, &total_cents]).await?;
    }
    Ok(None)
}

pub(super) async fn client_stock_level(tx: &Transaction<'_>, p: &Prepared, sl: &StockLevelInput) -> Ended {
    let s = &p.stmts;
    let next: i32 = tx.query_one(&s[SL_DISTRICT], &[&sl.w_id, &sl.d_id]).await?.get(0);
    tx.query_one(&s[SL_COUNT], &[&sl.w_id, &sl.d_id, &next, &sl.threshold]).await?;
    Ok(None)
}
