//! Running one transaction on one connection: a single call of the server-side function, or
//! the same statements sent from the client inside BEGIN ... COMMIT.

use futures_util::future::{try_join, try_join_all, try_join3};
use tokio_postgres::error::SqlState;
use tokio_postgres::types::{ToSql, Type};
use tokio_postgres::{Client, Statement, Transaction};

use crate::terminal::{
    CustomerKey, DeliveryInput, NewOrderInput, OrderStatusInput, PaymentInput, StockLevelInput, TxInput,
};
use crate::wire::{Format, Param, WireConn, WireError};
use crate::{Mode, Side};

/// How a transaction that raised no error ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Committed.
    Committed,
    /// Rolled back on purpose (new-order with an unused item number, specification mode).
    RolledBack,
    /// Client-side SQL found no customer with the last name (the functions raise SQLSTATE
    /// TPC02 instead); rolled back and counted as an error of kind `other`.
    NoCustomer(String),
}

/// The kind an error is counted under: `serialization_failure` (SQLSTATE 40001), `deadlock`
/// (40P01), `invalid_transaction_termination` (2D000: what HammerDB's functions turn a caught
/// deadlock or serialization failure into, [`Mode::HammerDbFaithful`] only) or `other`.
pub fn error_kind(e: &tokio_postgres::Error) -> &'static str {
    match e.code() {
        Some(c) if *c == SqlState::T_R_SERIALIZATION_FAILURE => "serialization_failure",
        Some(c) if *c == SqlState::T_R_DEADLOCK_DETECTED => "deadlock",
        Some(c) if *c == SqlState::INVALID_TRANSACTION_TERMINATION => "invalid_transaction_termination",
        _ => "other",
    }
}

/// SQLSTATE the functions raise for the specification's rollback of a new-order.
const INVALID_ITEM: &str = "TPC01";

fn is_intended_rollback(e: &tokio_postgres::Error) -> bool {
    e.code().is_some_and(|c| c.code() == INVALID_ITEM)
}

const I4: Type = Type::INT4;

/// Statements of the server-side variant, in [`crate::terminal::TxKind`] order.
const SERVER: [(&str, &[Type]); 5] = [
    (
        "SELECT tpcc_new_order($1, $2, $3, $4, $5, $6, $7)",
        &[I4, I4, I4, Type::INT4_ARRAY, Type::INT4_ARRAY, Type::INT4_ARRAY, Type::BOOL],
    ),
    ("SELECT tpcc_payment($1, $2, $3, $4, $5, $6, $7)", &[I4, I4, I4, I4, I4, Type::VARCHAR, I4]),
    ("SELECT tpcc_order_status($1, $2, $3, $4)", &[I4, I4, I4, Type::VARCHAR]),
    ("SELECT tpcc_delivery($1, $2)", &[I4, I4]),
    ("SELECT tpcc_stock_level($1, $2, $3)", &[I4, I4, I4]),
];

// Client-side statements; the same SQL as the functions in sql/functions.sql.
const NO_WAREHOUSE: usize = 0;
const NO_DISTRICT: usize = 1;
const NO_CUSTOMER: usize = 2;
const NO_ORDER: usize = 3;
const NO_NEW_ORDER: usize = 4;
const NO_ITEM: usize = 5;
const NO_STOCK: usize = 6;
const NO_LINE: usize = 7;
const P_WAREHOUSE: usize = 8;
const P_DISTRICT: usize = 9;
const CUSTOMER_BY_NAME: usize = 10;
const P_CUSTOMER: usize = 11;
const P_HISTORY: usize = 12;
const OS_CUSTOMER: usize = 13;
const OS_ORDER: usize = 14;
const OS_LINES: usize = 15;
const D_OLDEST: usize = 16;
const D_ANY: usize = 17;
const D_DELETE: usize = 18;
const D_ORDER: usize = 19;
const D_LINES: usize = 20;
const D_CUSTOMER: usize = 21;
const SL_DISTRICT: usize = 22;
const SL_COUNT: usize = 23;

const CLIENT: [(&str, &[Type]); 24] = [
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

/// The statements one connection needs, prepared on it.
pub struct Prepared {
    side: Side,
    /// HammerDB's five prepared calls ([`Mode::HammerDbFaithful`]) instead of pgtier's.
    faithful: bool,
    stmts: Vec<Statement>,
}

impl Prepared {
    /// Prepares pgtier's statements of `side` on `client` (modes spec and hammerdb).
    pub async fn new(client: &Client, side: Side) -> Result<Prepared, tokio_postgres::Error> {
        let list: &[(&str, &[Type])] = match side {
            Side::ServerProcedures => &SERVER,
            Side::ClientSql => &CLIENT,
        };
        let mut stmts = Vec::with_capacity(list.len());
        for (sql, types) in list {
            stmts.push(client.prepare_typed(sql, types).await?);
        }
        Ok(Prepared { side, faithful: false, stmts })
    }

    /// Sets up `client` for `mode`: for [`Mode::HammerDbFaithful`] as a HammerDB virtual user
    /// does (`SET client_min_messages TO 'ERROR'`, then its five statements prepared with the
    /// parameter types it declares; `side` must be [`Side::ServerProcedures`]); otherwise
    /// [`Prepared::new`].
    pub async fn for_mode(client: &Client, mode: Mode, side: Side) -> Result<Prepared, tokio_postgres::Error> {
        if mode != Mode::HammerDbFaithful {
            return Prepared::new(client, side).await;
        }
        client.batch_execute(crate::faithful::sql::SESSION_SETUP).await?;
        let mut stmts = Vec::with_capacity(5);
        for (sql, types) in crate::faithful::sql::PREPARED {
            stmts.push(client.prepare_typed(sql, types).await?);
        }
        Ok(Prepared { side: Side::ServerProcedures, faithful: true, stmts })
    }
}

/// Runs one transaction on `client` with statements prepared on it. Errors are returned as they
/// are: never retried.
///
/// # Panics
///
/// When `input` is a [`TxInput::Faithful`] call and `p` was not prepared for
/// [`Mode::HammerDbFaithful`], or the other way round.
pub async fn execute(
    client: &mut Client,
    p: &Prepared,
    input: &TxInput,
    mode: Mode,
) -> Result<Outcome, tokio_postgres::Error> {
    if let TxInput::Faithful(call) = input {
        assert!(
            p.faithful,
            "a HammerDB-faithful call needs statements from Prepared::for_mode(.., HammerDbFaithful, ..)"
        );
        return crate::faithful::execute(client, &p.stmts, call).await;
    }
    assert!(!p.faithful, "statements prepared for the HammerDB-faithful mode run only its calls");
    match p.side {
        Side::ServerProcedures => execute_server(client, p, input, mode).await,
        Side::ClientSql => execute_client(client, p, input, mode).await,
    }
}

fn customer_args(key: &CustomerKey) -> (i32, Option<&str>) {
    match key {
        CustomerKey::Id(id) => (*id, None),
        CustomerKey::LastName(name) => (0, Some(name.as_str())),
    }
}

async fn execute_server(
    client: &Client,
    p: &Prepared,
    input: &TxInput,
    mode: Mode,
) -> Result<Outcome, tokio_postgres::Error> {
    let s = &p.stmts[input.kind().index()];
    let result = match input {
        TxInput::NewOrder(o) => {
            let supply: Vec<i32> = o.lines.iter().map(|l| l.supply_w_id).collect();
            let items: Vec<i32> = o.lines.iter().map(|l| l.i_id).collect();
            let qty: Vec<i32> = o.lines.iter().map(|l| l.quantity).collect();
            let commits = mode == Mode::HammerDb;
            client.query_one(s, &[&o.w_id, &o.d_id, &o.c_id, &supply, &items, &qty, &commits]).await
        }
        TxInput::Payment(pay) => {
            let (c_id, name) = customer_args(&pay.customer);
            client
                .query_one(s, &[&pay.w_id, &pay.d_id, &pay.c_w_id, &pay.c_d_id, &c_id, &name, &pay.amount_cents])
                .await
        }
        TxInput::OrderStatus(os) => {
            let (c_id, name) = customer_args(&os.customer);
            client.query_one(s, &[&os.w_id, &os.d_id, &c_id, &name]).await
        }
        TxInput::Delivery(d) => client.query_one(s, &[&d.w_id, &d.carrier_id]).await,
        TxInput::StockLevel(sl) => client.query_one(s, &[&sl.w_id, &sl.d_id, &sl.threshold]).await,
        TxInput::Faithful(_) => unreachable!("faithful calls are made by execute"),
    };
    match result {
        Ok(_) => Ok(Outcome::Committed),
        Err(e) if is_intended_rollback(&e) => Ok(Outcome::RolledBack),
        Err(e) => Err(e),
    }
}

/// Reused buffers for the arrays of a server-side new-order.
#[derive(Default)]
pub(crate) struct Scratch {
    supply: Vec<i32>,
    items: Vec<i32>,
    qty: Vec<i32>,
}

/// The statements the driver's lean path ([`crate::wire`]) parses on a connection for `mode`
/// (server side): SQL and parameter type OIDs, in [`crate::terminal::TxKind`] order; and how
/// parameters and results travel (text for HammerDB's calls, as its libpq client sends them;
/// binary for pgtier's, as tokio-postgres sends them).
pub(crate) fn wire_statements(mode: Mode) -> (Vec<(&'static str, Vec<u32>)>, Format) {
    let list: &[(&str, &[Type])] =
        if mode == Mode::HammerDbFaithful { &crate::faithful::sql::PREPARED } else { &SERVER };
    let stmts = list.iter().map(|(sql, types)| (*sql, types.iter().map(Type::oid).collect())).collect();
    (stmts, if mode == Mode::HammerDbFaithful { Format::Text } else { Format::Binary })
}

/// The statement (index into [`wire_statements`]) and parameters of `input` for the lean path:
/// the same arguments [`execute`] passes through tokio-postgres.
pub(crate) fn server_call<'a>(
    input: &'a TxInput,
    mode: Mode,
    scratch: &'a mut Scratch,
) -> (usize, [Param<'a>; 10], usize) {
    use Param::{Bool, Int, IntArray, Numeric, Text};
    let mut p = [Int(0); 10];
    let mut set = |values: &[Param<'a>]| {
        p[..values.len()].copy_from_slice(values);
        values.len()
    };
    let n = match input {
        TxInput::NewOrder(o) => {
            scratch.supply.clear();
            scratch.items.clear();
            scratch.qty.clear();
            for l in &o.lines {
                scratch.supply.push(l.supply_w_id);
                scratch.items.push(l.i_id);
                scratch.qty.push(l.quantity);
            }
            let s: &'a Scratch = scratch;
            set(&[
                Int(o.w_id),
                Int(o.d_id),
                Int(o.c_id),
                IntArray(&s.supply),
                IntArray(&s.items),
                IntArray(&s.qty),
                Bool(mode == Mode::HammerDb),
            ])
        }
        TxInput::Payment(pay) => {
            let (c_id, name) = customer_args(&pay.customer);
            set(&[
                Int(pay.w_id),
                Int(pay.d_id),
                Int(pay.c_w_id),
                Int(pay.c_d_id),
                Int(c_id),
                Text(name),
                Int(pay.amount_cents),
            ])
        }
        TxInput::OrderStatus(os) => {
            let (c_id, name) = customer_args(&os.customer);
            set(&[Int(os.w_id), Int(os.d_id), Int(c_id), Text(name)])
        }
        TxInput::Delivery(d) => set(&[Int(d.w_id), Int(d.carrier_id)]),
        TxInput::StockLevel(sl) => set(&[Int(sl.w_id), Int(sl.d_id), Int(sl.threshold)]),
        TxInput::Faithful(call) => {
            use crate::faithful::Call;
            match call {
                Call::NewOrder { w_id, max_w_id, d_id, c_id, ol_cnt } => {
                    set(&[Int(*w_id), Int(*max_w_id), Int(*d_id), Int(*c_id), Int(*ol_cnt)])
                }
                Call::Payment { w_id, d_id, c_w_id, c_d_id, c_id, by_name, amount_dollars, c_last } => set(&[
                    Int(*w_id),
                    Int(*d_id),
                    Int(*c_w_id),
                    Int(*c_d_id),
                    Int(*c_id),
                    Int(i32::from(*by_name)),
                    Numeric(i64::from(*amount_dollars)),
                    Text(Some(c_last)),
                ]),
                Call::OrderStatus { w_id, d_id, c_id, by_name, c_last } => {
                    set(&[Int(*w_id), Int(*d_id), Int(*c_id), Int(i32::from(*by_name)), Text(Some(c_last))])
                }
                Call::Delivery { w_id, carrier_id } => set(&[Int(*w_id), Int(*carrier_id)]),
                Call::StockLevel { w_id, d_id, threshold } => set(&[Int(*w_id), Int(*d_id), Int(*threshold)]),
            }
        }
    };
    (input.kind().index(), p, n)
}

/// One server-side transaction over the lean path: `statements[i]` is the name statement `i`
/// of [`wire_statements`] was parsed under.
pub(crate) fn execute_wire(
    conn: &mut WireConn,
    statements: &[&str],
    format: Format,
    input: &TxInput,
    mode: Mode,
    scratch: &mut Scratch,
) -> Result<Outcome, WireError> {
    let (i, params, n) = server_call(input, mode, scratch);
    match conn.call(statements[i], &params[..n], format) {
        Ok(_) => Ok(Outcome::Committed),
        Err(e) if e.code() == Some(INVALID_ITEM) => Ok(Outcome::RolledBack),
        Err(e) => Err(e),
    }
}

/// The customer id of a by-name lookup: the one at position ceil(n / 2) sorted by C_FIRST.
async fn customer_by_name(
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
async fn execute_client(
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

/// What a client-side transaction body returns: `Some(outcome)` to roll back with it, `None` to
/// commit.
type Ended = Result<Option<Outcome>, tokio_postgres::Error>;

async fn client_new_order(tx: &Transaction<'_>, p: &Prepared, o: &NewOrderInput, mode: Mode) -> Ended {
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

async fn client_payment(tx: &Transaction<'_>, p: &Prepared, pay: &PaymentInput) -> Ended {
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
        tx.query_one(
            &s[P_CUSTOMER],
            &[&pay.c_w_id, &pay.c_d_id, &c_id, &pay.amount_cents, &pay.d_id, &pay.w_id],
        ),
        tx.execute(
            &s[P_HISTORY],
            &[&c_id, &pay.c_d_id, &pay.c_w_id, &pay.d_id, &pay.w_id, &pay.amount_cents, &h_data],
        ),
    )
    .await?;
    Ok(None)
}

async fn client_order_status(tx: &Transaction<'_>, p: &Prepared, os: &OrderStatusInput) -> Ended {
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

async fn client_delivery(tx: &Transaction<'_>, p: &Prepared, d: &DeliveryInput) -> Ended {
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

async fn client_stock_level(tx: &Transaction<'_>, p: &Prepared, sl: &StockLevelInput) -> Ended {
    let s = &p.stmts;
    let next: i32 = tx.query_one(&s[SL_DISTRICT], &[&sl.w_id, &sl.d_id]).await?.get(0);
    tx.query_one(&s[SL_COUNT], &[&sl.w_id, &sl.d_id, &next, &sl.threshold]).await?;
    Ok(None)
}
