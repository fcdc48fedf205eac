//! [`crate::Mode::HammerDbFaithful`]: the work HammerDB 4.12's TPROC-C does on PostgreSQL, its
//! defects included, so pgtier's NOPM can stand next to HammerDB's for the same reasons.
//!
//! * [`sql`]: HammerDB's schema (`src/sql/faithful_schema.sql`), its six PL/pgSQL functions
//!   and the five statements its virtual users prepare;
//! * [`load`]: HammerDB's population (value distributions, load order, keys present during
//!   the load, two secondary indexes after it, plain ANALYZE);
//! * [`Call`], [`draw`] and [`execute`]: what a HammerDB virtual user draws on the client
//!   (`neword`, `payment`, `ostat`, `delivery`, `slev` procs of the timed driver script) and
//!   the prepared call it makes.
//!
//! Written for pgtier from a reading of HammerDB's source (`src/postgresql/pgoltp.tcl` and
//! `modules/tpcccommon-1.0.tm` at tag v4.12); no HammerDB code is included.

pub(crate) mod load;
pub mod sql;

use bytes::BytesMut;
use tokio_postgres::types::{IsNull, ToSql, Type, to_sql_checked};
use tokio_postgres::{Client, Statement};

use crate::generate::{CUSTOMERS, DISTRICTS};
use crate::random::{A_C_LAST, Rng, last_name};
use crate::tx::{Outcome, TxKind};

/// The C of NURand for C_LAST that HammerDB uses at load and at run time.
pub const HAMMERDB_C_LAST: i64 = 123;

/// What `tpcc_meta.loader` says for a database loaded by [`load`].
pub const LOADER: &str = "hammerdb-faithful";

/// Version of the faithful schema and functions, stored in `tpcc_meta.schema_version`.
pub const SCHEMA_VERSION: i32 = 1;

/// One call of a HammerDB function with the arguments its client passes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Call {
    /// `neword(w_id, max_w_id, d_id, c_id, ol_cnt, 0)`: the items, supply warehouses and
    /// quantities are drawn by the function.
    NewOrder {
        /// The virtual user's warehouse.
        w_id: i32,
        /// HammerDB's `max(w_id)` of WAREHOUSE; here the configured warehouse count (the same
        /// value on a complete load), not read from the database.
        max_w_id: i32,
        /// District, uniform 1-10.
        d_id: i32,
        /// Customer, uniform 1-3000.
        c_id: i32,
        /// Order lines, uniform 5-15.
        ol_cnt: i32,
    },
    /// `payment(w_id, d_id, c_w_id, c_d_id, c_id, byname, amount, '$8', '0', 0)`.
    Payment {
        /// The virtual user's warehouse.
        w_id: i32,
        /// District, uniform 1-10.
        d_id: i32,
        /// Customer's warehouse: home 85%, else uniform over the others.
        c_w_id: i32,
        /// Customer's district: `d_id` when home, else uniform 1-10.
        c_d_id: i32,
        /// Customer id, uniform 1-3000, drawn every time.
        c_id: i32,
        /// 60%: the function takes its by-name branch (and finds nobody).
        by_name: bool,
        /// H_AMOUNT in whole dollars, uniform 1-5000.
        amount_dollars: i32,
        /// NURand(255, 0, 999, 123) last name when by name, else empty. Bound as the eighth
        /// parameter, which the statement never reads.
        c_last: String,
    },
    /// `ostat(w_id, d_id, c_id, byname, '$5')`, returning the order lines as rows.
    OrderStatus {
        /// The virtual user's warehouse.
        w_id: i32,
        /// District, uniform 1-10.
        d_id: i32,
        /// Customer id, uniform 1-3000.
        c_id: i32,
        /// 60%: the by-name branch (which finds nobody).
        by_name: bool,
        /// The name drawn (unused by the statement, as `c_last` of payment).
        c_last: String,
    },
    /// `delivery(w_id, carrier_id)`.
    Delivery {
        /// The virtual user's warehouse.
        w_id: i32,
        /// Carrier, uniform 1-10.
        carrier_id: i32,
    },
    /// `slev(w_id, d_id, threshold)`.
    StockLevel {
        /// The virtual user's warehouse.
        w_id: i32,
        /// The virtual user's fixed stock-level district.
        d_id: i32,
        /// Threshold, uniform 10-20.
        threshold: i32,
    },
}

impl Call {
    /// The transaction type.
    pub fn kind(&self) -> TxKind {
        match self {
            Call::NewOrder { .. } => TxKind::NewOrder,
            Call::Payment { .. } => TxKind::Payment,
            Call::OrderStatus { .. } => TxKind::OrderStatus,
            Call::Delivery { .. } => TxKind::Delivery,
            Call::StockLevel { .. } => TxKind::StockLevel,
        }
    }
}

/// The draws of HammerDB's client for one transaction of type `kind` on warehouse `w_id`
/// (timed driver script, procs `neword`, `payment`, `ostat`, `delivery`, `slev`): uniform
/// inclusive ranges, C_LAST by NURand(255, 0, 999, 123), a remote payment warehouse redrawn
/// until it differs from the home one (unless there is only one warehouse, when it stays home
/// but the district is still drawn afresh).
pub(crate) fn draw(rng: &mut Rng, kind: TxKind, w_id: i32, warehouses: i32, stock_level_d_id: i32) -> Call {
    match kind {
        TxKind::NewOrder => Call::NewOrder {
            w_id,
            max_w_id: warehouses,
            d_id: rng.range_i32(1, DISTRICTS),
            c_id: rng.range_i32(1, CUSTOMERS),
            ol_cnt: rng.range_i32(5, 15),
        },
        TxKind::Payment => {
            let d_id = rng.range_i32(1, DISTRICTS);
            let x = rng.range(1, 100);
            let y = rng.range(1, 100);
            let (c_w_id, c_d_id) = if x <= 85 {
                (w_id, d_id)
            } else {
                let c_d_id = rng.range_i32(1, DISTRICTS);
                let mut c_w_id = rng.range_i32(1, warehouses);
                while c_w_id == w_id && warehouses != 1 {
                    c_w_id = rng.range_i32(1, warehouses);
                }
                (c_w_id, c_d_id)
            };
            let name = last_name(rng.nurand(A_C_LAST, 0, 999, HAMMERDB_C_LAST));
            let c_id = rng.range_i32(1, CUSTOMERS);
            let by_name = y <= 60;
            Call::Payment {
                w_id,
                d_id,
                c_w_id,
                c_d_id,
                c_id,
                by_name,
                amount_dollars: rng.range_i32(1, 5000),
                c_last: if by_name { name } else { String::new() },
            }
        }
        TxKind::OrderStatus => {
            let d_id = rng.range_i32(1, DISTRICTS);
            let name = last_name(rng.nurand(A_C_LAST, 0, 999, HAMMERDB_C_LAST));
            let c_id = rng.range_i32(1, CUSTOMERS);
            let by_name = rng.range(1, 100) <= 60;
            Call::OrderStatus { w_id, d_id, c_id, by_name, c_last: if by_name { name } else { String::new() } }
        }
        TxKind::Delivery => Call::Delivery { w_id, carrier_id: rng.range_i32(1, 10) },
        TxKind::StockLevel => Call::StockLevel { w_id, d_id: stock_level_d_id, threshold: rng.range_i32(10, 20) },
    }
}

/// A whole-dollar amount bound as a `numeric` parameter (HammerDB declares H_AMOUNT's
/// parameter NUMERIC and sends the integer's text).
#[derive(Clone, Copy, Debug)]
struct Dollars(i32);

impl ToSql for Dollars {
    fn to_sql(&self, _: &Type, out: &mut BytesMut) -> Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
        crate::copy::put_numeric(out, i64::from(self.0), 0);
        Ok(IsNull::No)
    }

    fn accepts(ty: &Type) -> bool {
        *ty == Type::NUMERIC
    }

    to_sql_checked!();
}

/// Makes `call` with the statements of [`sql::PREPARED`] prepared on `client`, in autocommit
/// (one call is one transaction, as in HammerDB). Every call that raises no error counts as
/// committed: HammerDB's new-order with item 100001 commits.
pub(crate) async fn execute(
    client: &Client,
    stmts: &[Statement],
    call: &Call,
) -> Result<Outcome, tokio_postgres::Error> {
    let s = &stmts[call.kind().index()];
    match call {
        Call::NewOrder { w_id, max_w_id, d_id, c_id, ol_cnt } => {
            client.query_one(s, &[w_id, max_w_id, d_id, c_id, ol_cnt]).await?;
        }
        Call::Payment { w_id, d_id, c_w_id, c_d_id, c_id, by_name, amount_dollars, c_last } => {
            let by_name = i32::from(*by_name);
            let amount = Dollars(*amount_dollars);
            let name: &str = c_last;
            client.query_one(s, &[w_id, d_id, c_w_id, c_d_id, c_id, &by_name, &amount, &name]).await?;
        }
        Call::OrderStatus { w_id, d_id, c_id, by_name, c_last } => {
            let by_name = i32::from(*by_name);
            let name: &str = c_last;
            client.query(s, &[w_id, d_id, c_id, &by_name, &name]).await?;
        }
        Call::Delivery { w_id, carrier_id } => {
            client.query_one(s, &[w_id, carrier_id]).await?;
        }
        Call::StockLevel { w_id, d_id, threshold } => {
            client.query_one(s, &[w_id, d_id, threshold]).await?;
        }
    }
    Ok(Outcome::Committed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_follow_hammerdbs_client() {
        let mut rng = Rng::seeded(11);
        let (mut remote, mut by_name, mut n) = (0, 0, 0);
        for _ in 0..100_000 {
            match draw(&mut rng, TxKind::Payment, 2, 4, 7) {
                Call::Payment { w_id, d_id, c_w_id, c_d_id, c_id, by_name: b, amount_dollars, c_last } => {
                    n += 1;
                    assert_eq!(w_id, 2);
                    assert!((1..=10).contains(&d_id) && (1..=10).contains(&c_d_id));
                    assert!((1..=3000).contains(&c_id));
                    assert!((1..=5000).contains(&amount_dollars));
                    assert!((1..=4).contains(&c_w_id));
                    if c_w_id != w_id {
                        remote += 1;
                    } else {
                        assert_eq!(c_d_id, d_id);
                    }
                    assert_eq!(b, !c_last.is_empty());
                    by_name += i32::from(b);
                }
                other => panic!("{other:?}"),
            }
        }
        let pct = |k: i32| f64::from(k) * 100.0 / f64::from(n);
        assert!((14.0..=16.0).contains(&pct(remote)), "{}", pct(remote));
        assert!((59.0..=61.0).contains(&pct(by_name)), "{}", pct(by_name));
        // One warehouse: "remote" stays home but its district is drawn afresh.
        let mut other_district = 0;
        for _ in 0..10_000 {
            if let Call::Payment { c_w_id, c_d_id, d_id, .. } = draw(&mut rng, TxKind::Payment, 1, 1, 1) {
                assert_eq!(c_w_id, 1);
                other_district += i32::from(c_d_id != d_id);
            }
        }
        assert!(other_district > 1000, "{other_district}");
        for _ in 0..10_000 {
            match draw(&mut rng, TxKind::NewOrder, 3, 4, 1) {
                Call::NewOrder { w_id: 3, max_w_id: 4, d_id, c_id, ol_cnt } => {
                    assert!((1..=10).contains(&d_id) && (1..=3000).contains(&c_id) && (5..=15).contains(&ol_cnt));
                }
                other => panic!("{other:?}"),
            }
            match draw(&mut rng, TxKind::StockLevel, 3, 4, 6) {
                Call::StockLevel { w_id: 3, d_id: 6, threshold } => assert!((10..=20).contains(&threshold)),
                other => panic!("{other:?}"),
            }
        }
    }

    #[test]
    fn dollars_are_numeric_with_scale_zero() {
        let mut b = BytesMut::new();
        Dollars(1234).to_sql(&Type::NUMERIC, &mut b).unwrap();
        // 1 digit group (1234), weight 0, positive, display scale 0.
        assert_eq!(&b[..], &[0, 1, 0, 0, 0, 0, 0, 0, 0x04, 0xd2]);
        assert!(Dollars::accepts(&Type::NUMERIC) && !Dollars::accepts(&Type::INT4));
    }
}
