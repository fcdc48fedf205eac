-- pgtier TPC-C transactions as server-side PL/pgSQL functions (one call = one transaction,
-- as HammerDB's default on PostgreSQL). The terminal's inputs (clause 2.x.1) are drawn by the
-- client and passed in, so the same functions serve the specification mode and the
-- HammerDB-compatible mode; only p_invalid_item_commits differs between them.
--
-- SQLSTATE TPC01 is the specification's intended rollback of a new-order with an unused item
-- number (clause 2.4.2.3); TPC02 means no customer has the last name looked for.

CREATE OR REPLACE FUNCTION tpcc_new_order(
    p_w_id integer, p_d_id integer, p_c_id integer,
    p_supply_w_ids integer[], p_i_ids integer[], p_quantities integer[],
    p_invalid_item_commits boolean)
RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
    v_ol_cnt     integer := array_length(p_i_ids, 1);
    v_all_local  smallint := 1;
    v_w_tax      numeric;
    v_d_tax      numeric;
    v_o_id       integer;
    v_c_discount numeric;
    v_c_last     varchar;
    v_c_credit   char(2);
    v_price      numeric;
    v_i_name     varchar;
    v_i_data     varchar;
    v_s_data     varchar;
    v_dist       char(24);
    v_amount     numeric;
    v_total      numeric := 0;
    i            integer;
BEGIN
    SELECT w_tax INTO v_w_tax FROM warehouse WHERE w_id = p_w_id;
    UPDATE district SET d_next_o_id = d_next_o_id + 1
     WHERE d_w_id = p_w_id AND d_id = p_d_id
    RETURNING d_tax, d_next_o_id - 1 INTO v_d_tax, v_o_id;
    SELECT c_discount, c_last, c_credit INTO v_c_discount, v_c_last, v_c_credit
      FROM customer WHERE c_w_id = p_w_id AND c_d_id = p_d_id AND c_id = p_c_id;
    FOR i IN 1 .. v_ol_cnt LOOP
        IF p_supply_w_ids[i] <> p_w_id THEN
            v_all_local := 0;
        END IF;
    END LOOP;
    INSERT INTO orders (o_id, o_d_id, o_w_id, o_c_id, o_entry_d, o_carrier_id, o_ol_cnt, o_all_local)
    VALUES (v_o_id, p_d_id, p_w_id, p_c_id, now(), NULL, v_ol_cnt, v_all_local);
    INSERT INTO new_order (no_o_id, no_d_id, no_w_id) VALUES (v_o_id, p_d_id, p_w_id);
    FOR i IN 1 .. v_ol_cnt LOOP
        SELECT i_price, i_name, i_data INTO v_price, v_i_name, v_i_data
          FROM item WHERE i_id = p_i_ids[i];
        IF NOT FOUND THEN
            IF p_invalid_item_commits THEN
                -- HammerDB-compatible mode: the order commits, with a line for the unknown item.
                INSERT INTO order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id,
                                        ol_delivery_d, ol_quantity, ol_amount, ol_dist_info)
                VALUES (v_o_id, p_d_id, p_w_id, i, p_i_ids[i], p_supply_w_ids[i],
                        NULL, p_quantities[i], 0, repeat(' ', 24));
                CONTINUE;
            END IF;
            RAISE EXCEPTION 'Item number is not valid' USING ERRCODE = 'TPC01';
        END IF;
        UPDATE stock
           SET s_quantity = CASE WHEN s_quantity >= p_quantities[i] + 10
                                 THEN s_quantity - p_quantities[i]
                                 ELSE s_quantity - p_quantities[i] + 91 END,
               s_ytd = s_ytd + p_quantities[i],
               s_order_cnt = s_order_cnt + 1,
               s_remote_cnt = s_remote_cnt + CASE WHEN p_supply_w_ids[i] <> p_w_id THEN 1 ELSE 0 END
         WHERE s_w_id = p_supply_w_ids[i] AND s_i_id = p_i_ids[i]
        RETURNING s_data,
                  CASE p_d_id WHEN 1 THEN s_dist_01 WHEN 2 THEN s_dist_02 WHEN 3 THEN s_dist_03
                              WHEN 4 THEN s_dist_04 WHEN 5 THEN s_dist_05 WHEN 6 THEN s_dist_06
                              WHEN 7 THEN s_dist_07 WHEN 8 THEN s_dist_08 WHEN 9 THEN s_dist_09
                              ELSE s_dist_10 END
             INTO v_s_data, v_dist;
        v_amount := p_quantities[i] * v_price;
        v_total := v_total + v_amount;
        INSERT INTO order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id,
                                ol_delivery_d, ol_quantity, ol_amount, ol_dist_info)
        VALUES (v_o_id, p_d_id, p_w_id, i, p_i_ids[i], p_supply_w_ids[i],
                NULL, p_quantities[i], v_amount, v_dist);
    END LOOP;
    -- The terminal would show the total: v_total * (1 - v_c_discount) * (1 + v_w_tax + v_d_tax).
    RETURN v_o_id;
END
$$;

CREATE OR REPLACE FUNCTION tpcc_payment(
    p_w_id integer, p_d_id integer, p_c_w_id integer, p_c_d_id integer,
    p_c_id integer, p_c_last varchar, p_h_amount_cents integer)
RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
    v_amount numeric(6,2) := p_h_amount_cents * 0.01;
    v_w      warehouse%ROWTYPE;
    v_d      district%ROWTYPE;
    v_c_id   integer := p_c_id;
    v_ids    integer[];
    v_n      integer;
    v_credit char(2);
BEGIN
    UPDATE warehouse SET w_ytd = w_ytd + v_amount WHERE w_id = p_w_id
    RETURNING * INTO v_w;
    UPDATE district SET d_ytd = d_ytd + v_amount WHERE d_w_id = p_w_id AND d_id = p_d_id
    RETURNING * INTO v_d;
    IF p_c_last IS NOT NULL THEN
        SELECT array_agg(c_id ORDER BY c_first) INTO v_ids
          FROM customer WHERE c_w_id = p_c_w_id AND c_d_id = p_c_d_id AND c_last = p_c_last;
        v_n := coalesce(array_length(v_ids, 1), 0);
        IF v_n = 0 THEN
            RAISE EXCEPTION 'no customer named % in warehouse % district %', p_c_last, p_c_w_id, p_c_d_id
                USING ERRCODE = 'TPC02';
        END IF;
        v_c_id := v_ids[(v_n + 1) / 2];
    END IF;
    UPDATE customer
       SET c_balance = c_balance - v_amount,
           c_ytd_payment = c_ytd_payment + v_amount,
           c_payment_cnt = c_payment_cnt + 1,
           c_data = CASE WHEN c_credit = 'BC'
                         THEN left(format('%s %s %s %s %s %s | ', v_c_id, p_c_d_id, p_c_w_id,
                                          p_d_id, p_w_id, v_amount) || c_data, 500)
                         ELSE c_data END
     WHERE c_w_id = p_c_w_id AND c_d_id = p_c_d_id AND c_id = v_c_id
    RETURNING c_credit INTO v_credit;
    INSERT INTO history (h_c_id, h_c_d_id, h_c_w_id, h_d_id, h_w_id, h_date, h_amount, h_data)
    VALUES (v_c_id, p_c_d_id, p_c_w_id, p_d_id, p_w_id, now(), v_amount,
            v_w.w_name || '    ' || v_d.d_name);
    RETURN v_c_id;
END
$$;

CREATE OR REPLACE FUNCTION tpcc_order_status(
    p_w_id integer, p_d_id integer, p_c_id integer, p_c_last varchar)
RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
    v_c_id    integer := p_c_id;
    v_ids     integer[];
    v_n       integer;
    v_balance numeric;
    v_first   varchar;
    v_middle  char(2);
    v_last    varchar;
    v_o_id    integer;
    v_entry   timestamptz;
    v_carrier smallint;
    v_lines   integer;
    v_text    text;
BEGIN
    IF p_c_last IS NOT NULL THEN
        SELECT array_agg(c_id ORDER BY c_first) INTO v_ids
          FROM customer WHERE c_w_id = p_w_id AND c_d_id = p_d_id AND c_last = p_c_last;
        v_n := coalesce(array_length(v_ids, 1), 0);
        IF v_n = 0 THEN
            RAISE EXCEPTION 'no customer named % in warehouse % district %', p_c_last, p_w_id, p_d_id
                USING ERRCODE = 'TPC02';
        END IF;
        v_c_id := v_ids[(v_n + 1) / 2];
    END IF;
    SELECT c_balance, c_first, c_middle, c_last INTO v_balance, v_first, v_middle, v_last
      FROM customer WHERE c_w_id = p_w_id AND c_d_id = p_d_id AND c_id = v_c_id;
    SELECT o_id, o_entry_d, o_carrier_id INTO v_o_id, v_entry, v_carrier
      FROM orders WHERE o_w_id = p_w_id AND o_d_id = p_d_id AND o_c_id = v_c_id
     ORDER BY o_id DESC LIMIT 1;
    -- Every column the terminal shows is read (not just counted), so the heap rows are visited.
    SELECT count(*), string_agg(concat_ws(' ', ol_i_id, ol_supply_w_id, ol_quantity, ol_amount,
                                          ol_delivery_d), ',')
      INTO v_lines, v_text
      FROM order_line WHERE ol_w_id = p_w_id AND ol_d_id = p_d_id AND ol_o_id = v_o_id;
    RETURN v_lines;
END
$$;

CREATE OR REPLACE FUNCTION tpcc_delivery(p_w_id integer, p_carrier_id integer)
RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
    v_d     integer;
    v_o_id  integer;
    v_c_id  integer;
    v_total numeric;
    v_done  integer := 0;
BEGIN
    FOR v_d IN 1 .. 10 LOOP
        -- The oldest undelivered order. A concurrent delivery may hold and then delete it:
        -- FOR UPDATE then finds nothing, and we look again unless the district is empty.
        LOOP
            SELECT no_o_id INTO v_o_id FROM new_order
             WHERE no_w_id = p_w_id AND no_d_id = v_d
             ORDER BY no_o_id LIMIT 1 FOR UPDATE;
            EXIT WHEN FOUND OR NOT EXISTS (
                SELECT 1 FROM new_order WHERE no_w_id = p_w_id AND no_d_id = v_d);
        END LOOP;
        CONTINUE WHEN v_o_id IS NULL;
        DELETE FROM new_order WHERE no_w_id = p_w_id AND no_d_id = v_d AND no_o_id = v_o_id;
        UPDATE orders SET o_carrier_id = p_carrier_id
         WHERE o_w_id = p_w_id AND o_d_id = v_d AND o_id = v_o_id
        RETURNING o_c_id INTO v_c_id;
        WITH delivered AS (
            UPDATE order_line SET ol_delivery_d = now()
             WHERE ol_w_id = p_w_id AND ol_d_id = v_d AND ol_o_id = v_o_id
            RETURNING ol_amount)
        SELECT coalesce(sum(ol_amount), 0) INTO v_total FROM delivered;
        UPDATE customer SET c_balance = c_balance + v_total, c_delivery_cnt = c_delivery_cnt + 1
         WHERE c_w_id = p_w_id AND c_d_id = v_d AND c_id = v_c_id;
        v_done := v_done + 1;
    END LOOP;
    RETURN v_done;
END
$$;

CREATE OR REPLACE FUNCTION tpcc_stock_level(p_w_id integer, p_d_id integer, p_threshold integer)
RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
    v_next  integer;
    v_count integer;
BEGIN
    SELECT d_next_o_id INTO v_next FROM district WHERE d_w_id = p_w_id AND d_id = p_d_id;
    SELECT count(DISTINCT s_i_id) INTO v_count
      FROM order_line JOIN stock ON s_w_id = p_w_id AND s_i_id = ol_i_id
     WHERE ol_w_id = p_w_id AND ol_d_id = p_d_id
       AND ol_o_id >= v_next - 20 AND ol_o_id < v_next
       AND s_quantity < p_threshold;
    RETURN v_count;
END
$$;
