//! Initial database population (clause 4.3.3.1), written as binary COPY chunks.

use bytes::Bytes;

use crate::copy::CopyWriter;
use crate::random::{A_C_LAST, Rng, last_name_into};
use crate::schema::copy_sql;

/// Items in ITEM and STOCK rows per warehouse.
pub const ITEMS: i32 = 100_000;
/// Districts per warehouse.
pub const DISTRICTS: i32 = 10;
/// Customers per district.
pub const CUSTOMERS: i32 = 3_000;
/// Orders per district at load.
pub const ORDERS: i32 = 3_000;
/// The first order id still undelivered at load (orders 2101..=3000 are in NEW-ORDER).
pub const FIRST_NEW_ORDER: i32 = 2_101;

/// Bytes per chunk handed to COPY.
const CHUNK: usize = 256 * 1024;

/// One table's data for one warehouse (or ITEM).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Table {
    /// ITEM (100,000 rows, loaded once).
    Item,
    /// WAREHOUSE (1 row per warehouse).
    Warehouse,
    /// DISTRICT (10 per warehouse).
    District,
    /// STOCK (100,000 per warehouse).
    Stock,
    /// CUSTOMER (30,000 per warehouse).
    Customer,
    /// HISTORY (30,000 per warehouse).
    History,
    /// ORDERS (30,000 per warehouse).
    Orders,
    /// NEW_ORDER (9,000 per warehouse).
    NewOrder,
    /// ORDER_LINE (about 300,000 per warehouse).
    OrderLine,
}

impl Table {
    /// The tables loaded for each warehouse, in load order.
    pub const PER_WAREHOUSE: [Table; 8] = [
        Table::Warehouse,
        Table::District,
        Table::Stock,
        Table::Customer,
        Table::History,
        Table::Orders,
        Table::NewOrder,
        Table::OrderLine,
    ];

    /// The COPY statement for this table.
    pub fn copy_sql(self) -> &'static str {
        match self {
            Table::Item => copy_sql::ITEM,
            Table::Warehouse => copy_sql::WAREHOUSE,
            Table::District => copy_sql::DISTRICT,
            Table::Stock => copy_sql::STOCK,
            Table::Customer => copy_sql::CUSTOMER,
            Table::History => copy_sql::HISTORY,
            Table::Orders => copy_sql::ORDERS,
            Table::NewOrder => copy_sql::NEW_ORDER,
            Table::OrderLine => copy_sql::ORDER_LINE,
        }
    }

    /// The SQL table name.
    pub fn name(self) -> &'static str {
        match self {
            Table::Item => "item",
            Table::Warehouse => "warehouse",
            Table::District => "district",
            Table::Stock => "stock",
            Table::Customer => "customer",
            Table::History => "history",
            Table::Orders => "orders",
            Table::NewOrder => "new_order",
            Table::OrderLine => "order_line",
        }
    }

    fn index(self) -> u64 {
        self as u64
    }
}

/// What the generator needs besides the table and warehouse.
#[derive(Clone, Copy, Debug)]
pub struct GenParams {
    /// Seed of the whole load; each (table, warehouse) derives its own stream from it.
    pub seed: u64,
    /// The load's C for C_LAST.
    pub c_last_load: i64,
    /// "Current date/time" of the load, microseconds since the Unix epoch.
    pub now_unix_micros: i64,
}

fn stream_seed(p: &GenParams, table: u64, w_id: i32, d_id: i32) -> u64 {
    let mut x = p.seed ^ (table << 56) ^ ((w_id as u64) << 8) ^ d_id as u64;
    // splitmix64 finaliser, so nearby inputs give unrelated streams
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// Generates `table` for warehouse `w_id` (ignored for ITEM), handing chunks of binary COPY
/// data (the first with the header, the last with the trailer) to `emit`. Stops early when
/// `emit` returns false. Returns the number of rows generated.
pub fn generate(table: Table, w_id: i32, p: &GenParams, emit: &mut dyn FnMut(Bytes) -> bool) -> u64 {
    let mut g = Gen {
        w: CopyWriter::new(CHUNK + 4096, true),
        rng: Rng::seeded(stream_seed(p, table.index(), w_id, 0)),
        rows: 0,
        emit,
        stopped: false,
        s: Vec::with_capacity(600),
    };
    match table {
        Table::Item => g.items(),
        Table::Warehouse => g.warehouse(w_id),
        Table::District => g.districts(w_id),
        Table::Stock => g.stock(w_id),
        Table::Customer => g.customers(w_id, p),
        Table::History => g.history(w_id, p),
        Table::Orders => g.orders(w_id, p),
        Table::NewOrder => g.new_orders(w_id),
        Table::OrderLine => g.order_lines(w_id, p),
    }
    if !g.stopped {
        g.w.trailer();
        let last = g.w.take();
        if !(g.emit)(last) {
            g.stopped = true;
        }
    }
    g.rows
}

/// The order-line count of each order of a district, drawn from its own stream so ORDERS and
/// ORDER_LINE (loaded by separate COPY statements) agree without keeping state.
fn ol_count_stream(p: &GenParams, w_id: i32, d_id: i32) -> Rng {
    Rng::seeded(stream_seed(p, 100, w_id, d_id))
}

struct Gen<'a> {
    w: CopyWriter,
    rng: Rng,
    rows: u64,
    emit: &'a mut dyn FnMut(Bytes) -> bool,
    stopped: bool,
    s: Vec<u8>,
}

impl Gen<'_> {
    /// Ends a row: hands a chunk over when the buffer is full. False when told to stop.
    #[inline]
    fn end_row(&mut self) -> bool {
        self.rows += 1;
        if self.w.len() >= CHUNK {
            let chunk = self.w.take();
            if !(self.emit)(chunk) {
                self.stopped = true;
                return false;
            }
        }
        true
    }

    fn astring(&mut self, min: usize, max: usize) {
        self.s.clear();
        self.rng.astring_into(&mut self.s, min, max);
        self.w.text(&self.s);
    }

    fn alnum(&mut self, len: usize) {
        self.s.clear();
        self.rng.alnum_into(&mut self.s, len);
        self.w.text(&self.s);
    }

    fn zip(&mut self) {
        self.s.clear();
        self.rng.zip_into(&mut self.s);
        self.w.text(&self.s);
    }

    /// street 1, street 2, city, state, zip (clause 4.3.2.7 and 4.3.3.1).
    fn address(&mut self) {
        self.astring(10, 20);
        self.astring(10, 20);
        self.astring(10, 20);
        self.alnum(2);
        self.zip();
    }

    fn items(&mut self) {
        for i_id in 1..=ITEMS {
            self.w.row(5);
            self.w.i32(i_id);
            let im = self.rng.range_i32(1, 10_000);
            self.w.i32(im);
            self.astring(14, 24);
            let price = self.rng.range(100, 10_000);
            self.w.numeric(price, 2);
            self.s.clear();
            self.rng.data_with_original_into(&mut self.s, 26, 50);
            self.w.text(&self.s);
            if !self.end_row() {
                return;
            }
        }
    }

    fn warehouse(&mut self, w_id: i32) {
        self.w.row(9);
        self.w.i32(w_id);
        self.astring(6, 10);
        self.address();
        let tax = self.rng.range(0, 2_000);
        self.w.numeric(tax, 4);
        self.w.numeric(30_000_000, 2);
        self.end_row();
    }

    fn districts(&mut self, w_id: i32) {
        for d_id in 1..=DISTRICTS {
            self.w.row(11);
            self.w.i16(d_id as i16);
            self.w.i32(w_id);
            self.astring(6, 10);
            self.address();
            let tax = self.rng.range(0, 2_000);
            self.w.numeric(tax, 4);
            self.w.numeric(3_000_000, 2);
            self.w.i32(ORDERS + 1);
            if !self.end_row() {
                return;
            }
        }
    }

    fn stock(&mut self, w_id: i32) {
        for i_id in 1..=ITEMS {
            self.w.row(17);
            self.w.i32(i_id);
            self.w.i32(w_id);
            let q = self.rng.range(10, 100) as i16;
            self.w.i16(q);
            for _ in 0..10 {
                self.alnum(24);
            }
            self.w.i32(0);
            self.w.i32(0);
            self.w.i32(0);
            self.s.clear();
            self.rng.data_with_original_into(&mut self.s, 26, 50);
            self.w.text(&self.s);
            if !self.end_row() {
                return;
            }
        }
    }

    fn customers(&mut self, w_id: i32, p: &GenParams) {
        for d_id in 1..=DISTRICTS {
            for c_id in 1..=CUSTOMERS {
                self.w.row(21);
                self.w.i32(c_id);
                self.w.i16(d_id as i16);
                self.w.i32(w_id);
                self.astring(8, 16);
                self.w.text(b"OE");
                self.s.clear();
                let num =
                    if c_id <= 1000 { i64::from(c_id - 1) } else { self.rng.nurand(A_C_LAST, 0, 999, p.c_last_load) };
                last_name_into(&mut self.s, num);
                self.w.text(&self.s);
                self.address();
                self.s.clear();
                self.rng.digits_into(&mut self.s, 16);
                self.w.text(&self.s);
                self.w.timestamptz_unix_micros(p.now_unix_micros);
                let bad = self.rng.range(1, 10) == 1;
                self.w.text(if bad { b"BC" } else { b"GC" });
                self.w.numeric(5_000_000, 2);
                let discount = self.rng.range(0, 5_000);
                self.w.numeric(discount, 4);
                self.w.numeric(-1_000, 2);
                self.w.numeric(1_000, 2);
                self.w.i32(1);
                self.w.i32(0);
                self.astring(300, 500);
                if !self.end_row() {
                    return;
                }
            }
        }
    }

    fn history(&mut self, w_id: i32, p: &GenParams) {
        for d_id in 1..=DISTRICTS {
            for c_id in 1..=CUSTOMERS {
                self.w.row(8);
                self.w.i32(c_id);
                self.w.i16(d_id as i16);
                self.w.i32(w_id);
                self.w.i16(d_id as i16);
                self.w.i32(w_id);
                self.w.timestamptz_unix_micros(p.now_unix_micros);
                self.w.numeric(1_000, 2);
                self.astring(12, 24);
                if !self.end_row() {
                    return;
                }
            }
        }
    }

    fn orders(&mut self, w_id: i32, p: &GenParams) {
        for d_id in 1..=DISTRICTS {
            // O_C_ID: a random permutation of [1, 3000] (Fisher-Yates).
            let mut perm: Vec<i32> = (1..=CUSTOMERS).collect();
            for i in (1..perm.len()).rev() {
                let j = self.rng.range(0, i as i64) as usize;
                perm.swap(i, j);
            }
            let mut counts = ol_count_stream(p, w_id, d_id);
            for o_id in 1..=ORDERS {
                self.w.row(8);
                self.w.i32(o_id);
                self.w.i16(d_id as i16);
                self.w.i32(w_id);
                self.w.i32(perm[(o_id - 1) as usize]);
                self.w.timestamptz_unix_micros(p.now_unix_micros);
                if o_id < FIRST_NEW_ORDER {
                    let carrier = self.rng.range(1, 10) as i16;
                    self.w.i16(carrier);
                } else {
                    self.w.null();
                }
                let cnt = counts.range(5, 15) as i16;
                self.w.i16(cnt);
                self.w.i16(1);
                if !self.end_row() {
                    return;
                }
            }
        }
    }

    fn new_orders(&mut self, w_id: i32) {
        for d_id in 1..=DISTRICTS {
            for o_id in FIRST_NEW_ORDER..=ORDERS {
                self.w.row(3);
                self.w.i32(o_id);
                self.w.i16(d_id as i16);
                self.w.i32(w_id);
                if !self.end_row() {
                    return;
                }
            }
        }
    }

    fn order_lines(&mut self, w_id: i32, p: &GenParams) {
        for d_id in 1..=DISTRICTS {
            let mut counts = ol_count_stream(p, w_id, d_id);
            for o_id in 1..=ORDERS {
                let cnt = counts.range(5, 15) as i16;
                let delivered = o_id < FIRST_NEW_ORDER;
                for number in 1..=cnt {
                    self.w.row(10);
                    self.w.i32(o_id);
                    self.w.i16(d_id as i16);
                    self.w.i32(w_id);
                    self.w.i16(number);
                    let item = self.rng.range_i32(1, ITEMS);
                    self.w.i32(item);
                    self.w.i32(w_id);
                    if delivered {
                        self.w.timestamptz_unix_micros(p.now_unix_micros);
                    } else {
                        self.w.null();
                    }
                    self.w.i16(5);
                    if delivered {
                        self.w.numeric(0, 2);
                    } else {
                        let amount = self.rng.range(1, 999_999);
                        self.w.numeric(amount, 2);
                    }
                    self.alnum(24);
                    if !self.end_row() {
                        return;
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params() -> GenParams {
        GenParams { seed: 42, c_last_load: 77, now_unix_micros: 1_700_000_000_000_000 }
    }

    fn collect(table: Table, w: i32) -> (u64, Vec<u8>) {
        let mut all = Vec::new();
        let rows = generate(table, w, &params(), &mut |b| {
            all.extend_from_slice(&b);
            true
        });
        (rows, all)
    }

    #[test]
    fn row_counts_per_warehouse() {
        assert_eq!(collect(Table::Item, 0).0, 100_000);
        assert_eq!(collect(Table::Warehouse, 3).0, 1);
        assert_eq!(collect(Table::District, 3).0, 10);
        assert_eq!(collect(Table::Stock, 3).0, 100_000);
        assert_eq!(collect(Table::Customer, 3).0, 30_000);
        assert_eq!(collect(Table::History, 3).0, 30_000);
        assert_eq!(collect(Table::Orders, 3).0, 30_000);
        assert_eq!(collect(Table::NewOrder, 3).0, 9_000);
        let lines = collect(Table::OrderLine, 3).0;
        // 30,000 orders of 5..15 lines, 10 on average.
        assert!((290_000..=310_000).contains(&lines), "{lines}");
    }

    #[test]
    fn orders_and_order_lines_agree_on_line_counts() {
        let p = params();
        for d in 1..=DISTRICTS {
            let mut a = ol_count_stream(&p, 2, d);
            let mut b = ol_count_stream(&p, 2, d);
            for _ in 0..ORDERS {
                assert_eq!(a.range(5, 15), b.range(5, 15));
            }
        }
    }

    #[test]
    fn streams_end_with_the_trailer_and_stop_on_request() {
        let (_, bytes) = collect(Table::District, 1);
        assert!(bytes.starts_with(crate::copy::HEADER));
        assert!(bytes.ends_with(&[0xff, 0xff]));
        let mut chunks = 0;
        generate(Table::Stock, 1, &params(), &mut |_| {
            chunks += 1;
            false
        });
        assert_eq!(chunks, 1);
    }
}
