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

mod client;
use client::*;

pub use crate::tx::Outcome;

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
