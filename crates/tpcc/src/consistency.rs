//! The consistency conditions of clause 3.3.2, checked on a quiet database.

use crate::{ConnectSpec, TpccError};

/// One condition: its number, what it says, and a query returning
/// `(violations bigint, example text)` over the whole database.
struct Condition {
    number: u32,
    text: &'static str,
    sql: &'static str,
}

const CONDITIONS: [Condition; 11] = [
    Condition {
        number: 1,
        text: "W_YTD = sum(D_YTD) for each warehouse",
        sql: "SELECT count(*), min(format('warehouse %s: w_ytd %s, sum(d_ytd) %s', w_id, w_ytd, s)) \
              FROM warehouse LEFT JOIN (SELECT d_w_id, sum(d_ytd) s FROM district GROUP BY d_w_id) d \
              ON d.d_w_id = w_id WHERE w_ytd IS DISTINCT FROM s",
    },
    Condition {
        number: 2,
        text: "D_NEXT_O_ID - 1 = max(O_ID) = max(NO_O_ID) for each district (NEW-ORDER only where it has rows)",
        sql: "SELECT count(*), min(format('warehouse %s district %s: d_next_o_id - 1 = %s, max(o_id) %s, max(no_o_id) %s', \
              d_w_id, d_id, d_next_o_id - 1, o.m, n.m)) \
              FROM district \
              LEFT JOIN (SELECT o_w_id, o_d_id, max(o_id) m FROM orders GROUP BY 1, 2) o \
                ON o.o_w_id = d_w_id AND o.o_d_id = d_id \
              LEFT JOIN (SELECT no_w_id, no_d_id, max(no_o_id) m FROM new_order GROUP BY 1, 2) n \
                ON n.no_w_id = d_w_id AND n.no_d_id = d_id \
              WHERE o.m IS DISTINCT FROM d_next_o_id - 1 OR (n.m IS NOT NULL AND n.m <> d_next_o_id - 1)",
    },
    Condition {
        number: 3,
        text: "max(NO_O_ID) - min(NO_O_ID) + 1 = rows in NEW-ORDER for each district",
        sql: "SELECT count(*), min(format('warehouse %s district %s: max - min + 1 = %s, rows %s', no_w_id, no_d_id, span, n)) \
              FROM (SELECT no_w_id, no_d_id, max(no_o_id) - min(no_o_id) + 1 span, count(*) n \
                    FROM new_order GROUP BY 1, 2) x WHERE span <> n",
    },
    Condition {
        number: 4,
        text: "sum(O_OL_CNT) = rows in ORDER-LINE for each district",
        sql: "SELECT count(*), min(format('warehouse %s district %s: sum(o_ol_cnt) %s, order lines %s', \
              coalesce(o.w, l.w), coalesce(o.d, l.d), o.s, l.n)) \
              FROM (SELECT o_w_id w, o_d_id d, sum(o_ol_cnt) s FROM orders GROUP BY 1, 2) o \
              FULL JOIN (SELECT ol_w_id w, ol_d_id d, count(*) n FROM order_line GROUP BY 1, 2) l \
                ON l.w = o.w AND l.d = o.d \
              WHERE o.s IS DISTINCT FROM l.n",
    },
    Condition {
        number: 5,
        text: "O_CARRIER_ID is null if and only if the order has a NEW-ORDER row",
        sql: "SELECT count(*), min(format('order %s/%s/%s: o_carrier_id %s, in new_order %s', \
              coalesce(o_w_id, no_w_id), coalesce(o_d_id, no_d_id), coalesce(o_id, no_o_id), \
              coalesce(o_carrier_id::text, 'null'), no_o_id IS NOT NULL)) \
              FROM orders FULL JOIN new_order ON no_w_id = o_w_id AND no_d_id = o_d_id AND no_o_id = o_id \
              WHERE o_id IS NULL OR (o_carrier_id IS NULL) <> (no_o_id IS NOT NULL)",
    },
    Condition {
        number: 6,
        text: "O_OL_CNT = rows in ORDER-LINE for each order",
        sql: "SELECT count(*), min(format('order %s/%s/%s: o_ol_cnt %s, lines %s', \
              coalesce(o.o_w_id, l.w), coalesce(o.o_d_id, l.d), coalesce(o.o_id, l.o), o.o_ol_cnt, l.n)) \
              FROM orders o FULL JOIN (SELECT ol_w_id w, ol_d_id d, ol_o_id o, count(*) n \
                                       FROM order_line GROUP BY 1, 2, 3) l \
                ON l.w = o.o_w_id AND l.d = o.o_d_id AND l.o = o.o_id \
              WHERE o.o_ol_cnt IS DISTINCT FROM l.n",
    },
    Condition {
        number: 7,
        text: "OL_DELIVERY_D is null if and only if the order's O_CARRIER_ID is null",
        sql: "SELECT count(*), min(format('order line %s/%s/%s/%s', ol_w_id, ol_d_id, ol_o_id, ol_number)) \
              FROM order_line JOIN orders ON o_w_id = ol_w_id AND o_d_id = ol_d_id AND o_id = ol_o_id \
              WHERE (ol_delivery_d IS NULL) <> (o_carrier_id IS NULL)",
    },
    Condition {
        number: 8,
        text: "W_YTD = sum(H_AMOUNT) for each warehouse",
        sql: "SELECT count(*), min(format('warehouse %s: w_ytd %s, sum(h_amount) %s', w_id, w_ytd, s)) \
              FROM warehouse LEFT JOIN (SELECT h_w_id, sum(h_amount) s FROM history GROUP BY 1) h \
                ON h.h_w_id = w_id WHERE w_ytd IS DISTINCT FROM s",
    },
    Condition {
        number: 9,
        text: "D_YTD = sum(H_AMOUNT) for each district",
        sql: "SELECT count(*), min(format('warehouse %s district %s: d_ytd %s, sum(h_amount) %s', d_w_id, d_id, d_ytd, s)) \
              FROM district LEFT JOIN (SELECT h_w_id, h_d_id, sum(h_amount) s FROM history GROUP BY 1, 2) h \
                ON h.h_w_id = d_w_id AND h.h_d_id = d_id WHERE d_ytd IS DISTINCT FROM s",
    },
    Condition {
        number: 10,
        text: "C_BALANCE = sum(OL_AMOUNT of delivered lines) - sum(H_AMOUNT) for each customer",
        sql: "SELECT count(*), min(format('customer %s/%s/%s: c_balance %s, delivered %s, paid %s', \
              c_w_id, c_d_id, c_id, c_balance, coalesce(ol.s, 0), coalesce(h.s, 0))) \
              FROM customer \
              LEFT JOIN (SELECT o_w_id, o_d_id, o_c_id, sum(ol_amount) s FROM orders \
                         JOIN order_line ON ol_w_id = o_w_id AND ol_d_id = o_d_id AND ol_o_id = o_id \
                         WHERE ol_delivery_d IS NOT NULL GROUP BY 1, 2, 3) ol \
                ON ol.o_w_id = c_w_id AND ol.o_d_id = c_d_id AND ol.o_c_id = c_id \
              LEFT JOIN (SELECT h_c_w_id, h_c_d_id, h_c_id, sum(h_amount) s FROM history GROUP BY 1, 2, 3) h \
                ON h.h_c_w_id = c_w_id AND h.h_c_d_id = c_d_id AND h.h_c_id = c_id \
              WHERE c_balance <> coalesce(ol.s, 0) - coalesce(h.s, 0)",
    },
    Condition {
        number: 12,
        text: "C_BALANCE + C_YTD_PAYMENT = sum(OL_AMOUNT of delivered lines) for each customer",
        sql: "SELECT count(*), min(format('customer %s/%s/%s: c_balance + c_ytd_payment %s, delivered %s', \
              c_w_id, c_d_id, c_id, c_balance + c_ytd_payment, coalesce(ol.s, 0))) \
              FROM customer \
              LEFT JOIN (SELECT o_w_id, o_d_id, o_c_id, sum(ol_amount) s FROM orders \
                         JOIN order_line ON ol_w_id = o_w_id AND ol_d_id = o_d_id AND ol_o_id = o_id \
                         WHERE ol_delivery_d IS NOT NULL GROUP BY 1, 2, 3) ol \
                ON ol.o_w_id = c_w_id AND ol.o_d_id = c_d_id AND ol.o_c_id = c_id \
              WHERE c_balance + c_ytd_payment <> coalesce(ol.s, 0)",
    },
];

/// Condition 11 holds only for the initial population: no new order has been entered yet.
const CONDITION_11: Condition = Condition {
    number: 11,
    text: "(rows in ORDER) - (rows in NEW-ORDER) = 2100 for each district (initial population)",
    sql: "SELECT count(*), min(format('warehouse %s district %s: orders %s, new orders %s', d_w_id, d_id, o.n, n.n)) \
          FROM district \
          LEFT JOIN (SELECT o_w_id, o_d_id, count(*) n FROM orders GROUP BY 1, 2) o \
            ON o.o_w_id = d_w_id AND o.o_d_id = d_id \
          LEFT JOIN (SELECT no_w_id, no_d_id, count(*) n FROM new_order GROUP BY 1, 2) n \
            ON n.no_w_id = d_w_id AND n.no_d_id = d_id \
          WHERE coalesce(o.n, 0) - coalesce(n.n, 0) <> 2100",
};

/// Checks the twelve consistency conditions of TPC-C clause 3.3.2 and returns one line per
/// violated condition (empty when the database is consistent). Condition 11 only holds for
/// the initial population, so it is checked only while every district's D_NEXT_O_ID is still
/// 3001. Run it while no transactions are running: it reads whole tables.
pub async fn check_consistency(conn: &ConnectSpec) -> Result<Vec<String>, TpccError> {
    let client = conn.connect("pgtier-tpcc-check").await?;
    client
        .batch_execute("SET work_mem = '256MB'; BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
        .await
        .map_err(|e| TpccError::sql("start the consistency check", e))?;
    let initial: bool = client
        .query_one("SELECT bool_and(d_next_o_id = 3001) FROM district", &[])
        .await
        .map_err(|e| TpccError::sql("read DISTRICT (is the database loaded?)", e))?
        .get::<_, Option<bool>>(0)
        .unwrap_or(false);
    let mut violated = Vec::new();
    let extra = initial.then_some(&CONDITION_11);
    for c in CONDITIONS.iter().chain(extra) {
        let row = client
            .query_one(c.sql, &[])
            .await
            .map_err(|e| TpccError::sql(format!("check consistency condition {}", c.number), e))?;
        let n: i64 = row.get(0);
        if n > 0 {
            let example: Option<String> = row.get(1);
            violated.push(format!(
                "condition {} ({}): {n} violation(s), e.g. {}",
                c.number,
                c.text,
                example.unwrap_or_default()
            ));
        }
    }
    let _ = client.batch_execute("COMMIT").await;
    violated.sort_by_key(|s| s.split_whitespace().nth(1).and_then(|n| n.parse::<u32>().ok()).unwrap_or(0));
    Ok(violated)
}
