//! The schema: tables (created bare before the load), keys and indexes (built after it),
//! and the transaction functions.

/// Version of the schema and functions below, stored in `tpcc_meta.schema_version`.
pub const SCHEMA_VERSION: i32 = 1;

/// Drops any previous TPC-C tables and creates the nine tables plus `tpcc_meta`, unindexed.
pub const CREATE_TABLES: &str = include_str!("sql/schema.sql");

/// The five transaction functions (PL/pgSQL).
pub const FUNCTIONS: &str = include_str!("sql/functions.sql");

/// The nine TPC-C tables, largest first (the order keys are built and tables analysed in).
pub const TABLES: [&str; 9] =
    ["order_line", "stock", "customer", "orders", "history", "new_order", "item", "district", "warehouse"];

/// Primary keys and the two secondary indexes TPC-C's lookups need (customer by last name,
/// a customer's latest order), largest first so parallel builders finish together.
pub const INDEXES: [(&str, &str); 10] = [
    (
        "order_line_pkey",
        "ALTER TABLE order_line ADD CONSTRAINT order_line_pkey PRIMARY KEY (ol_w_id, ol_d_id, ol_o_id, ol_number)",
    ),
    ("stock_pkey", "ALTER TABLE stock ADD CONSTRAINT stock_pkey PRIMARY KEY (s_w_id, s_i_id)"),
    ("customer_pkey", "ALTER TABLE customer ADD CONSTRAINT customer_pkey PRIMARY KEY (c_w_id, c_d_id, c_id)"),
    ("customer_last_name", "CREATE INDEX customer_last_name ON customer (c_w_id, c_d_id, c_last, c_first)"),
    ("orders_pkey", "ALTER TABLE orders ADD CONSTRAINT orders_pkey PRIMARY KEY (o_w_id, o_d_id, o_id)"),
    ("orders_customer", "CREATE UNIQUE INDEX orders_customer ON orders (o_w_id, o_d_id, o_c_id, o_id)"),
    ("new_order_pkey", "ALTER TABLE new_order ADD CONSTRAINT new_order_pkey PRIMARY KEY (no_w_id, no_d_id, no_o_id)"),
    ("item_pkey", "ALTER TABLE item ADD CONSTRAINT item_pkey PRIMARY KEY (i_id)"),
    ("district_pkey", "ALTER TABLE district ADD CONSTRAINT district_pkey PRIMARY KEY (d_w_id, d_id)"),
    ("warehouse_pkey", "ALTER TABLE warehouse ADD CONSTRAINT warehouse_pkey PRIMARY KEY (w_id)"),
];

/// Column lists of the binary COPY statements, in the order the generator writes fields.
pub mod copy_sql {
    /// COPY into `warehouse`.
    pub const WAREHOUSE: &str = "COPY warehouse (w_id, w_name, w_street_1, w_street_2, w_city, w_state, w_zip, w_tax, w_ytd) FROM STDIN (FORMAT binary)";
    /// COPY into `district`.
    pub const DISTRICT: &str = "COPY district (d_id, d_w_id, d_name, d_street_1, d_street_2, d_city, d_state, d_zip, d_tax, d_ytd, d_next_o_id) FROM STDIN (FORMAT binary)";
    /// COPY into `customer`.
    pub const CUSTOMER: &str = "COPY customer (c_id, c_d_id, c_w_id, c_first, c_middle, c_last, c_street_1, c_street_2, c_city, c_state, c_zip, c_phone, c_since, c_credit, c_credit_lim, c_discount, c_balance, c_ytd_payment, c_payment_cnt, c_delivery_cnt, c_data) FROM STDIN (FORMAT binary)";
    /// COPY into `history`.
    pub const HISTORY: &str = "COPY history (h_c_id, h_c_d_id, h_c_w_id, h_d_id, h_w_id, h_date, h_amount, h_data) FROM STDIN (FORMAT binary)";
    /// COPY into `orders`.
    pub const ORDERS: &str = "COPY orders (o_id, o_d_id, o_w_id, o_c_id, o_entry_d, o_carrier_id, o_ol_cnt, o_all_local) FROM STDIN (FORMAT binary)";
    /// COPY into `new_order`.
    pub const NEW_ORDER: &str = "COPY new_order (no_o_id, no_d_id, no_w_id) FROM STDIN (FORMAT binary)";
    /// COPY into `order_line`.
    pub const ORDER_LINE: &str = "COPY order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id, ol_delivery_d, ol_quantity, ol_amount, ol_dist_info) FROM STDIN (FORMAT binary)";
    /// COPY into `item`.
    pub const ITEM: &str = "COPY item (i_id, i_im_id, i_name, i_price, i_data) FROM STDIN (FORMAT binary)";
    /// COPY into `stock`.
    pub const STOCK: &str = "COPY stock (s_i_id, s_w_id, s_quantity, s_dist_01, s_dist_02, s_dist_03, s_dist_04, s_dist_05, s_dist_06, s_dist_07, s_dist_08, s_dist_09, s_dist_10, s_ytd, s_order_cnt, s_remote_cnt, s_data) FROM STDIN (FORMAT binary)";
}
