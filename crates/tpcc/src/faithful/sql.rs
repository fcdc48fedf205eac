//! The server side of [`crate::Mode::HammerDbFaithful`]: HammerDB 4.12's PL/pgSQL *functions*
//! (its default on PostgreSQL, `pg_storedprocs = false`), re-written for pgtier from a reading
//! of `src/postgresql/pgoltp.tcl` (proc `CreateStoredProcs`, the function branch) so that each
//! runs the same statements, in the same order, on the same variable types, with the same
//! `EXCEPTION` block, as HammerDB's. Where HammerDB's SQL is wrong, this SQL is wrong the same
//! way (see the crate README, "HammerDB defects it reproduces").
//!
//! Also the five statements HammerDB's virtual users prepare (`fn_prep_statement` in the timed
//! driver script), with their quoted `'$8'` and `'$5'`.

/// `PREPARE`d by every HammerDB virtual user, in [`crate::terminal::TxKind`] order, with the
/// parameter types HammerDB declares. Payment's eighth and order-status's fifth parameter are
/// declared but never used: the statement text passes the literal strings `$8` and `$5`.
pub const PREPARED: [(&str, &[tokio_postgres::types::Type]); 5] = {
    use tokio_postgres::types::Type;
    const I: Type = Type::INT4;
    [
        ("SELECT neword($1, $2, $3, $4, $5, 0)", &[I, I, I, I, I]),
        ("SELECT payment($1, $2, $3, $4, $5, $6, $7, '$8', '0', 0)", &[I, I, I, I, I, I, Type::NUMERIC, Type::VARCHAR]),
        (
            "SELECT * FROM ostat($1, $2, $3, $4, '$5') AS (ol_i_id integer, ol_supply_w_id integer, \
             ol_quantity smallint, ol_amount numeric, ol_delivery_d timestamp with time zone, \
             out_os_c_id integer, out_os_c_last character varying, os_c_first character varying, \
             os_c_middle character varying, os_c_balance numeric, os_o_id integer, \
             os_entdate timestamp, os_o_carrier_id integer)",
            &[I, I, I, I, Type::VARCHAR],
        ),
        ("SELECT delivery($1, $2)", &[I, I]),
        ("SELECT slev($1, $2, $3)", &[I, I, I]),
    ]
};

/// What HammerDB's `ConnectToPostgres` runs on every new connection.
pub(crate) const SESSION_SETUP: &str = "SET client_min_messages TO 'ERROR'";

/// The handler HammerDB puts at the end of every transaction function (all but `dbms_random`).
/// A block with an EXCEPTION clause runs in a subtransaction; in a function the ROLLBACK it
/// would run is refused by PostgreSQL (SQLSTATE 2D000), which is what a caught deadlock turns
/// into.
const HANDLER: &str = "EXCEPTION
    WHEN serialization_failure OR deadlock_detected OR no_data_found THEN
        ROLLBACK;";

/// The names of the routines, for the driver's check that they exist.
pub(crate) const ROUTINES: [&str; 6] = ["dbms_random", "neword", "payment", "delivery", "ostat", "slev"];

/// Drops the routines (a previous load's, or HammerDB's own whose parameters have no names)
/// and creates them.
pub(crate) fn functions() -> String {
    let mut s = String::with_capacity(24 * 1024);
    s.push_str(
        "DROP FUNCTION IF EXISTS dbms_random(integer, integer), \
         neword(integer, integer, integer, integer, integer, integer), \
         delivery(integer, integer), \
         payment(integer, integer, integer, integer, integer, integer, numeric, varchar, varchar, numeric), \
         ostat(integer, integer, integer, integer, varchar), \
         slev(integer, integer, integer);\n",
    );
    s.push_str(DBMS_RANDOM);
    s.push_str(&new_order());
    s.push_str(&DELIVERY.replace("{HANDLER}", HANDLER));
    s.push_str(&PAYMENT.replace("{HANDLER}", HANDLER));
    s.push_str(&ORDER_STATUS.replace("{HANDLER}", HANDLER));
    s.push_str(&STOCK_LEVEL.replace("{HANDLER}", HANDLER));
    s
}

/// A uniform integer in [lo, hi], as HammerDB's `DBMS_RANDOM` computes it (on the server).
const DBMS_RANDOM: &str = "
CREATE FUNCTION dbms_random(p_lo integer, p_hi integer) RETURNS integer
LANGUAGE plpgsql STRICT AS $fn$
BEGIN
    RETURN trunc(random() * (p_hi - p_lo + 1) + p_lo);
END
$fn$;
";

/// HammerDB's NEWORD: the items, supply warehouses and quantities are drawn on the server
/// (about 1 + 3 * ol_cnt DBMS_RANDOM calls), in array order, unsorted; item 100001 (1% of
/// orders) finds no price and no stock row and is stored with NULL amount and district info;
/// the amount is `quantity + price * (1 + w_tax + d_tax) * (1 - c_discount)`; one of ten copies
/// of the bulk stock update, by district, returns that district's S_DIST column.
fn new_order() -> String {
    let branches: String = (1..=10)
        .map(|d| {
            NEW_ORDER_BRANCH
                .replace("{keyword}", if d == 1 { "IF" } else { "ELSIF" })
                .replace("{dd}", &format!("{d:02}"))
                .replace("{d}", &d.to_string())
        })
        .collect();
    NEW_ORDER.replace("{branches}", &branches).replace("{HANDLER}", HANDLER)
}

/// NEW_ORDER's stock update for district `{d}` (`{dd}`: its two digits, as in `s_dist_01`).
const NEW_ORDER_BRANCH: &str = "    {keyword} p_d_id = {d} THEN
        WITH updated AS (
            UPDATE stock
               SET s_quantity = (CASE WHEN s_quantity < (line.qty + 10) THEN s_quantity + 91
                                      ELSE s_quantity END) - line.qty
              FROM unnest(v_items, v_supply, v_qty, v_prices) AS line (item, supply, qty, price)
             WHERE stock.s_i_id = line.item
               AND stock.s_w_id = line.supply
               AND stock.s_w_id = ANY (v_supply)
            RETURNING stock.s_dist_{dd} AS dist, stock.s_quantity,
                      (line.qty + line.price * (1 + v_w_tax + v_d_tax) * (1 - v_c_discount)) AS amount)
        SELECT array_agg(dist), array_agg(s_quantity), array_agg(amount)
          FROM updated
          INTO v_dists, v_s_qty, v_amounts;
";

/// HammerDB's NEWORD; `{branches}` takes the ten districts' stock updates, `{HANDLER}` the
/// shared exception handler.
const NEW_ORDER: &str = "
CREATE FUNCTION neword(p_w_id integer, p_max_w_id integer, p_d_id integer, p_c_id integer,
                       p_ol_cnt integer, p_o_id integer) RETURNS numeric
LANGUAGE plpgsql AS $fn$
DECLARE
    v_c_discount numeric;
    v_c_last     varchar;
    v_c_credit   varchar;
    v_d_tax      numeric;
    v_w_tax      numeric;
    v_total      numeric;
    v_all_local  smallint;
    v_rbk        smallint;
    v_items      int[];
    v_supply     int[];
    v_qty        smallint[];
    v_numbers    smallint[];
    v_dists      char(24)[];
    v_s_qty      smallint[];
    v_prices     numeric(5,2)[];
    v_amounts    numeric(5,2)[];
BEGIN
    v_all_local := 1;
    SELECT c_discount, c_last, c_credit, w_tax
      INTO v_c_discount, v_c_last, v_c_credit, v_w_tax
      FROM customer, warehouse
     WHERE warehouse.w_id = p_w_id AND customer.c_w_id = p_w_id
       AND customer.c_d_id = p_d_id AND customer.c_id = p_c_id;
    v_rbk := round(dbms_random(1, 100));
    FOR n IN 1 .. p_ol_cnt LOOP
        IF n = p_ol_cnt AND v_rbk = 1 THEN
            v_items[n] := 100001;
        ELSE
            v_items[n] := round(dbms_random(1, 100000));
        END IF;
        IF round(dbms_random(1, 100)) > 1 THEN
            v_supply[n] := p_w_id;
        ELSE
            v_all_local := 0;
            v_supply[n] := 1 + mod(CAST(p_w_id + round(dbms_random(0, p_max_w_id - 1)) AS int), p_max_w_id);
        END IF;
        v_qty[n] := round(dbms_random(1, 10));
        v_numbers[n] := n;
    END LOOP;
    UPDATE district SET d_next_o_id = d_next_o_id + 1
     WHERE d_id = p_d_id AND d_w_id = p_w_id
    RETURNING d_next_o_id - 1, d_tax INTO p_o_id, v_d_tax;
    INSERT INTO orders (o_id, o_d_id, o_w_id, o_c_id, o_entry_d, o_ol_cnt, o_all_local)
    VALUES (p_o_id, p_d_id, p_w_id, p_c_id, current_timestamp, p_ol_cnt, v_all_local);
    INSERT INTO new_order (no_o_id, no_d_id, no_w_id) VALUES (p_o_id, p_d_id, p_w_id);
    SELECT array_agg(i_price) INTO v_prices
      FROM unnest(v_items) AS wanted (item) LEFT JOIN item ON i_id = wanted.item;
{branches}    END IF;
    INSERT INTO order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id,
                            ol_quantity, ol_amount, ol_dist_info)
    SELECT p_o_id, p_d_id, p_w_id, line.n, line.item, line.supply, line.qty, line.amount, line.dist
      FROM unnest(v_numbers, v_items, v_supply, v_qty, v_amounts, v_dists)
           AS line (n, item, supply, qty, amount, dist);
    v_total := 0;
    FOR n IN 1 .. p_ol_cnt LOOP
        v_total := v_total + CAST(v_amounts[n] AS numeric);
    END LOOP;
    RETURN v_total;
{HANDLER}
END
$fn$;
";

/// HammerDB's DELIVERY: four statements for the ten districts (delete the oldest NEW_ORDER row
/// of each, set the carrier, stamp the lines and sum them, add the sums to the balances). No
/// FOR UPDATE, no C_DELIVERY_CNT.
const DELIVERY: &str = "
CREATE FUNCTION delivery(p_w_id integer, p_carrier_id integer) RETURNS integer
LANGUAGE plpgsql AS $fn$
DECLARE
    v_counter   smallint;
    v_districts smallint[] := ARRAY[1, 2, 3, 4, 5, 6, 7, 8, 9, 10];
    v_d_ids     smallint[];
    v_o_ids     int[];
    v_c_ids     int[];
    v_orders    smallint;
    v_sums      numeric[];
    v_customers int;
BEGIN
    WITH deleted AS (
        DELETE FROM new_order AS gone
         USING unnest(v_districts) AS dist (d)
         WHERE gone.no_d_id = dist.d
           AND gone.no_w_id = p_w_id
           AND gone.no_o_id = (SELECT min(oldest.no_o_id) FROM new_order AS oldest
                                WHERE oldest.no_d_id = dist.d AND oldest.no_w_id = p_w_id)
        RETURNING gone.no_o_id, gone.no_d_id)
    SELECT array_agg(no_o_id), array_agg(no_d_id)
      FROM deleted
      INTO v_o_ids, v_d_ids;
    UPDATE orders SET o_carrier_id = p_carrier_id
      FROM unnest(v_o_ids, v_d_ids) AS ids (o, d)
     WHERE orders.o_id = ids.o AND orders.o_d_id = ids.d AND orders.o_w_id = p_w_id;
    WITH stamped AS (
        UPDATE order_line SET ol_delivery_d = current_timestamp
          FROM unnest(v_o_ids, v_d_ids) AS ids (o, d)
         WHERE ol_o_id = ids.o AND ol_d_id = ids.d AND ol_w_id = p_w_id
        RETURNING ol_d_id, ol_o_id, ol_amount)
    SELECT array_agg(ol_d_id), array_agg(cust), array_agg(total)
      FROM (SELECT ol_d_id,
                   (SELECT DISTINCT o_c_id FROM orders
                     WHERE o_id = ol_o_id AND o_d_id = ol_d_id AND o_w_id = p_w_id) AS cust,
                   sum(ol_amount) AS total
              FROM stamped
             GROUP BY ol_d_id, ol_o_id) AS per_order
      INTO v_d_ids, v_c_ids, v_sums;
    UPDATE customer SET c_balance = coalesce(c_balance, 0) + paid.total
      FROM unnest(v_d_ids, v_c_ids, v_sums) AS paid (d, c, total)
     WHERE customer.c_id = paid.c AND customer.c_d_id = paid.d AND customer.c_w_id = p_w_id;
    RETURN 1;
{HANDLER}
END
$fn$;
";

/// HammerDB's PAYMENT: by id it reads the customer, then updates it with the balance it read
/// (not `c_balance - amount` in the row); by name it counts and opens a cursor, fetches
/// floor(n/2) rows, and otherwise keeps the caller's c_id, credit `'0'` and balance 0. The
/// C_DATA prefix has no date and no H_DATA. No C_YTD_PAYMENT or C_PAYMENT_CNT update.
const PAYMENT: &str = "
CREATE FUNCTION payment(p_w_id integer, p_d_id integer, p_c_w_id integer, p_c_d_id integer,
                        p_c_id_in integer, p_byname integer, p_h_amount numeric,
                        p_c_last_in varchar, p_c_credit_in varchar, p_c_balance_in numeric)
RETURNS integer
LANGUAGE plpgsql AS $fn$
DECLARE
    v_c_balance    numeric(12, 2);
    v_c_credit     char(2);
    v_c_last       varchar(16);
    v_c_id         integer;
    v_w_street_1   varchar(20);
    v_w_street_2   varchar(20);
    v_w_city       varchar(20);
    v_w_state      char(2);
    v_w_zip        char(9);
    v_d_street_1   varchar(20);
    v_d_street_2   varchar(20);
    v_d_city       varchar(20);
    v_d_state      char(2);
    v_d_zip        char(9);
    v_c_first      varchar(16);
    v_c_middle     char(2);
    v_c_street_1   varchar(20);
    v_c_street_2   varchar(20);
    v_c_city       varchar(20);
    v_c_state      char(2);
    v_c_zip        char(9);
    v_c_phone      char(16);
    v_c_since      timestamp;
    v_c_credit_lim numeric(12, 2);
    v_c_discount   numeric(4, 4);
    v_now          timestamp;
    v_d_name       varchar(11);
    v_w_name       varchar(11);
    v_c_data       varchar(500);
    v_name_count   smallint;
    by_name CURSOR FOR
        SELECT c_first, c_middle, c_id, c_street_1, c_street_2, c_city, c_state, c_zip,
               c_phone, c_credit, c_credit_lim, c_discount, c_balance, c_since
          FROM customer
         WHERE c_w_id = p_c_w_id AND c_d_id = p_c_d_id AND c_last = v_c_last
         ORDER BY c_first;
BEGIN
    v_now := current_timestamp;
    v_c_id := p_c_id_in;
    v_c_balance := p_c_balance_in;
    v_c_last := p_c_last_in;
    v_c_credit := p_c_credit_in;
    UPDATE warehouse SET w_ytd = w_ytd + p_h_amount
     WHERE w_id = p_w_id
    RETURNING w_street_1, w_street_2, w_city, w_state, w_zip, w_name
         INTO v_w_street_1, v_w_street_2, v_w_city, v_w_state, v_w_zip, v_w_name;
    UPDATE district SET d_ytd = d_ytd + p_h_amount
     WHERE d_w_id = p_w_id AND d_id = p_d_id
    RETURNING d_street_1, d_street_2, d_city, d_state, d_zip, d_name
         INTO v_d_street_1, v_d_street_2, v_d_city, v_d_state, v_d_zip, v_d_name;
    IF p_byname = 1 THEN
        SELECT count(c_last) INTO v_name_count
          FROM customer
         WHERE c_last = v_c_last AND c_d_id = p_c_d_id AND c_w_id = p_c_w_id;
        OPEN by_name;
        FOR n IN 1 .. CAST(v_name_count / 2 AS int) LOOP
            FETCH by_name
             INTO v_c_first, v_c_middle, v_c_id, v_c_street_1, v_c_street_2, v_c_city, v_c_state,
                  v_c_zip, v_c_phone, v_c_credit, v_c_credit_lim, v_c_discount, v_c_balance, v_c_since;
        END LOOP;
        CLOSE by_name;
    ELSE
        SELECT c_first, c_middle, c_last, c_street_1, c_street_2, c_city, c_state, c_zip,
               c_phone, c_credit, c_credit_lim, c_discount, c_balance, c_since
          INTO v_c_first, v_c_middle, v_c_last, v_c_street_1, v_c_street_2, v_c_city, v_c_state,
               v_c_zip, v_c_phone, v_c_credit, v_c_credit_lim, v_c_discount, v_c_balance, v_c_since
          FROM customer
         WHERE c_w_id = p_c_w_id AND c_d_id = p_c_d_id AND c_id = v_c_id;
    END IF;
    IF v_c_credit = 'BC' THEN
        UPDATE customer
           SET c_balance = v_c_balance - p_h_amount,
               c_data = substr((v_c_id || ' ' || p_c_d_id || ' ' || p_c_w_id || ' ' || p_d_id || ' ' ||
                                p_w_id || ' ' || to_char(p_h_amount, '9999.99') || ' | ') || c_data, 1, 500)
         WHERE c_w_id = p_c_w_id AND c_d_id = p_c_d_id AND c_id = v_c_id
        RETURNING c_balance, c_data INTO v_c_balance, v_c_data;
    ELSE
        UPDATE customer
           SET c_balance = v_c_balance - p_h_amount
         WHERE c_w_id = p_c_w_id AND c_d_id = p_c_d_id AND c_id = v_c_id
        RETURNING c_balance, ' ' INTO v_c_balance, v_c_data;
    END IF;
    INSERT INTO history (h_c_d_id, h_c_w_id, h_c_id, h_d_id, h_w_id, h_date, h_amount, h_data)
    VALUES (p_c_d_id, p_c_w_id, v_c_id, p_d_id, p_w_id, v_now, p_h_amount, v_w_name || ' ' || v_d_name);
    RETURN v_c_id;
{HANDLER}
END
$fn$;
";

/// HammerDB's OSTAT: by name it fetches ceil(n/2)+1 rows (all NULL when n is 0 or 1); the
/// customer's latest order through ORDERS_I2, and its lines returned as rows.
const ORDER_STATUS: &str = "
CREATE FUNCTION ostat(p_w_id integer, p_d_id integer, p_c_id integer, p_byname integer,
                      p_c_last varchar) RETURNS SETOF record
LANGUAGE plpgsql AS $fn$
DECLARE
    v_out_c_id   integer;
    v_out_c_last varchar;
    v_c_first    varchar;
    v_c_middle   varchar;
    v_c_balance  numeric;
    v_o_id       integer;
    v_entry_d    timestamp;
    v_carrier_id integer;
    v_line       record;
    v_name_count integer;
    by_name CURSOR FOR
        SELECT c_balance, c_first, c_middle, c_id
          FROM customer
         WHERE c_last = p_c_last AND c_d_id = p_d_id AND c_w_id = p_w_id
         ORDER BY c_first;
BEGIN
    IF p_byname = 1 THEN
        SELECT count(c_id) INTO v_name_count
          FROM customer
         WHERE c_last = p_c_last AND c_d_id = p_d_id AND c_w_id = p_w_id;
        IF mod(v_name_count, 2) = 1 THEN
            v_name_count := v_name_count + 1;
        END IF;
        OPEN by_name;
        FOR n IN 0 .. CAST(v_name_count / 2 AS integer) LOOP
            FETCH by_name INTO v_c_balance, v_c_first, v_c_middle, p_c_id;
        END LOOP;
        CLOSE by_name;
    ELSE
        SELECT c_balance, c_first, c_middle, c_last
          INTO v_c_balance, v_c_first, v_c_middle, p_c_last
          FROM customer
         WHERE c_id = p_c_id AND c_d_id = p_d_id AND c_w_id = p_w_id;
    END IF;
    SELECT o_id, o_carrier_id, o_entry_d INTO v_o_id, v_carrier_id, v_entry_d
      FROM (SELECT o_id, o_carrier_id, o_entry_d
              FROM orders
             WHERE o_d_id = p_d_id AND o_w_id = p_w_id AND o_c_id = p_c_id
             ORDER BY o_id DESC) AS latest
     LIMIT 1;
    FOR v_line IN
        SELECT ol_i_id, ol_supply_w_id, ol_quantity, ol_amount, ol_delivery_d, v_out_c_id,
               v_out_c_last, v_c_first, v_c_middle, v_c_balance, v_o_id, v_entry_d, v_carrier_id
          FROM order_line
         WHERE ol_o_id = v_o_id AND ol_d_id = p_d_id AND ol_w_id = p_w_id
    LOOP
        RETURN NEXT v_line;
    END LOOP;
{HANDLER}
END
$fn$;
";

/// HammerDB's SLEV: one join of ORDER_LINE, STOCK and DISTRICT.
const STOCK_LEVEL: &str = "
CREATE FUNCTION slev(p_w_id integer, p_d_id integer, p_threshold integer) RETURNS integer
LANGUAGE plpgsql AS $fn$
DECLARE
    v_count integer;
BEGIN
    SELECT count(DISTINCT (s_i_id)) INTO v_count
      FROM order_line, stock, district
     WHERE ol_w_id = p_w_id
       AND ol_d_id = p_d_id
       AND d_w_id = p_w_id
       AND d_id = p_d_id
       AND (ol_o_id < d_next_o_id)
       AND ol_o_id >= (d_next_o_id - 20)
       AND s_w_id = p_w_id
       AND s_i_id = ol_i_id
       AND s_quantity < p_threshold;
    RETURN v_count;
{HANDLER}
END
$fn$;
";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_routine_has_the_handler_and_new_order_ten_branches() {
        let sql = functions();
        // neword, delivery, payment, ostat, slev; dbms_random has none.
        assert_eq!(sql.matches("WHEN serialization_failure OR deadlock_detected OR no_data_found").count(), 5);
        assert!(!sql.contains("{HANDLER}"));
        for d in 1..=10 {
            assert!(sql.contains(&format!("p_d_id = {d} THEN")), "branch {d}");
            assert!(sql.contains(&format!("stock.s_dist_{d:02} AS dist")), "s_dist_{d:02}");
        }
        assert_eq!(sql.matches("CREATE FUNCTION").count(), ROUTINES.len());
        // The client-side defect: the last name is a quoted literal, not a parameter.
        assert!(PREPARED[1].0.contains("'$8'") && PREPARED[2].0.contains("'$5'"));
    }
}
