-- pgtier TPC-C schema (clause 1.3): the nine tables, created without keys or indexes; the
-- loader adds those after the data is in (see schema.rs, INDEXES).
DROP TABLE IF EXISTS warehouse, district, customer, history, new_order, orders, order_line,
    item, stock, tpcc_meta CASCADE;

CREATE TABLE warehouse (
    w_id       integer       NOT NULL,
    w_name     varchar(10)   NOT NULL,
    w_street_1 varchar(20)   NOT NULL,
    w_street_2 varchar(20)   NOT NULL,
    w_city     varchar(20)   NOT NULL,
    w_state    char(2)       NOT NULL,
    w_zip      char(9)       NOT NULL,
    w_tax      numeric(4,4)  NOT NULL,
    w_ytd      numeric(16,2) NOT NULL
);

CREATE TABLE district (
    d_id        smallint      NOT NULL,
    d_w_id      integer       NOT NULL,
    d_name      varchar(10)   NOT NULL,
    d_street_1  varchar(20)   NOT NULL,
    d_street_2  varchar(20)   NOT NULL,
    d_city      varchar(20)   NOT NULL,
    d_state     char(2)       NOT NULL,
    d_zip       char(9)       NOT NULL,
    d_tax       numeric(4,4)  NOT NULL,
    d_ytd       numeric(16,2) NOT NULL,
    d_next_o_id integer       NOT NULL
);

CREATE TABLE customer (
    c_id           integer       NOT NULL,
    c_d_id         smallint      NOT NULL,
    c_w_id         integer       NOT NULL,
    c_first        varchar(16)   NOT NULL,
    c_middle       char(2)       NOT NULL,
    c_last         varchar(16)   NOT NULL,
    c_street_1     varchar(20)   NOT NULL,
    c_street_2     varchar(20)   NOT NULL,
    c_city         varchar(20)   NOT NULL,
    c_state        char(2)       NOT NULL,
    c_zip          char(9)       NOT NULL,
    c_phone        char(16)      NOT NULL,
    c_since        timestamptz   NOT NULL,
    c_credit       char(2)       NOT NULL,
    c_credit_lim   numeric(12,2) NOT NULL,
    c_discount     numeric(4,4)  NOT NULL,
    c_balance      numeric(12,2) NOT NULL,
    c_ytd_payment  numeric(12,2) NOT NULL,
    c_payment_cnt  integer       NOT NULL,
    c_delivery_cnt integer       NOT NULL,
    c_data         varchar(500)  NOT NULL
);

-- No primary key: the specification gives HISTORY none.
CREATE TABLE history (
    h_c_id   integer      NOT NULL,
    h_c_d_id smallint     NOT NULL,
    h_c_w_id integer      NOT NULL,
    h_d_id   smallint     NOT NULL,
    h_w_id   integer      NOT NULL,
    h_date   timestamptz  NOT NULL,
    h_amount numeric(6,2) NOT NULL,
    h_data   varchar(24)  NOT NULL
);

CREATE TABLE new_order (
    no_o_id integer  NOT NULL,
    no_d_id smallint NOT NULL,
    no_w_id integer  NOT NULL
);

CREATE TABLE orders (
    o_id         integer     NOT NULL,
    o_d_id       smallint    NOT NULL,
    o_w_id       integer     NOT NULL,
    o_c_id       integer     NOT NULL,
    o_entry_d    timestamptz NOT NULL,
    o_carrier_id smallint,
    o_ol_cnt     smallint    NOT NULL,
    o_all_local  smallint    NOT NULL
);

CREATE TABLE order_line (
    ol_o_id        integer      NOT NULL,
    ol_d_id        smallint     NOT NULL,
    ol_w_id        integer      NOT NULL,
    ol_number      smallint     NOT NULL,
    ol_i_id        integer      NOT NULL,
    ol_supply_w_id integer      NOT NULL,
    ol_delivery_d  timestamptz,
    ol_quantity    smallint     NOT NULL,
    ol_amount      numeric(6,2) NOT NULL,
    ol_dist_info   char(24)     NOT NULL
);

CREATE TABLE item (
    i_id    integer      NOT NULL,
    i_im_id integer      NOT NULL,
    i_name  varchar(24)  NOT NULL,
    i_price numeric(5,2) NOT NULL,
    i_data  varchar(50)  NOT NULL
);

CREATE TABLE stock (
    s_i_id       integer     NOT NULL,
    s_w_id       integer     NOT NULL,
    s_quantity   smallint    NOT NULL,
    s_dist_01    char(24)    NOT NULL,
    s_dist_02    char(24)    NOT NULL,
    s_dist_03    char(24)    NOT NULL,
    s_dist_04    char(24)    NOT NULL,
    s_dist_05    char(24)    NOT NULL,
    s_dist_06    char(24)    NOT NULL,
    s_dist_07    char(24)    NOT NULL,
    s_dist_08    char(24)    NOT NULL,
    s_dist_09    char(24)    NOT NULL,
    s_dist_10    char(24)    NOT NULL,
    s_ytd        integer     NOT NULL,
    s_order_cnt  integer     NOT NULL,
    s_remote_cnt integer     NOT NULL,
    s_data       varchar(50) NOT NULL
);

-- What the loader did, for the driver (warehouse count, the load's NURand constants).
CREATE TABLE tpcc_meta (
    warehouses    integer     NOT NULL,
    c_last_load   integer     NOT NULL,
    c_id_load     integer     NOT NULL,
    ol_i_id_load  integer     NOT NULL,
    loaded_at     timestamptz NOT NULL DEFAULT now(),
    schema_version integer    NOT NULL
);
