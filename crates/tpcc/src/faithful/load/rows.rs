//! HammerDB 4.12's row generator for its loader: the values each column gets, in COPY text
//! format, drawn the way HammerDB's Tcl build draws them.

use super::*;

/// HammerDB's row generator (`tpcccommon` string helpers and the loader procs).
pub(crate) struct Gen {
    rng: Rng,
    /// The load's clock, whole seconds, as Unix microseconds.
    now: i64,
    s: Vec<u8>,
}

impl Gen {
    pub(crate) fn new(seed: u64, now_unix_micros: i64) -> Gen {
        Gen { rng: Rng::seeded(seed), now: now_unix_micros, s: Vec::with_capacity(600) }
    }

    /// `MakeAlphaString x y`: a length uniform in [x, y] of characters uniform over [0-9A-Za-z].
    pub(super) fn alpha(&mut self, w: &mut CopyWriter, min: usize, max: usize) {
        self.s.clear();
        self.rng.astring_into(&mut self.s, min, max);
        w.text(&self.s);
    }

    /// `Makezip`: a number uniform in [0, 9999], its decimal digits written over the start of
    /// `000011111`.
    pub(super) fn zip(&mut self, w: &mut CopyWriter) {
        let mut zip = *b"000011111";
        let digits = self.rng.range(0, 9999).to_string();
        zip[..digits.len()].copy_from_slice(digits.as_bytes());
        w.text(&zip);
    }

    /// `MakeAddress`: street 1, street 2, city (10-20 characters), state (2), zip.
    pub(super) fn address(&mut self, w: &mut CopyWriter) {
        self.alpha(w, 10, 20);
        self.alpha(w, 10, 20);
        self.alpha(w, 10, 20);
        self.alpha(w, 2, 2);
        self.zip(w);
    }

    /// `MakeNumberString`: two numbers uniform in [0, 99999999], each written over the start
    /// of `00000000`.
    pub(super) fn phone(&mut self, w: &mut CopyWriter) {
        let mut phone = *b"0000000000000000";
        for half in 0..2 {
            let digits = self.rng.range(0, 99_999_999).to_string();
            phone[half * 8..half * 8 + digits.len()].copy_from_slice(digits.as_bytes());
        }
        w.text(&phone);
    }

    /// Which ids get `original`: MAXITEMS/10 positions drawn with replacement from
    /// [0, MAXITEMS] (so about 9.5% distinct ids; position 0 matches no id).
    pub(super) fn original_positions(&mut self) -> Vec<bool> {
        let mut marked = vec![false; ITEMS as usize + 1];
        for _ in 0..ITEMS / 10 {
            marked[self.rng.range(0, i64::from(ITEMS)) as usize] = true;
        }
        marked
    }

    /// I_DATA / S_DATA: 26-50 characters; when marked, characters [first, first + 8] (nine of
    /// them, fewer at the end) are replaced by the eight of `original`, first uniform in
    /// [0, len - 8].
    pub(super) fn data(&mut self, w: &mut CopyWriter, marked: bool) {
        self.s.clear();
        self.rng.astring_into(&mut self.s, 26, 50);
        if marked {
            let len = self.s.len();
            let first = self.rng.range(0, len as i64 - 8) as usize;
            let end = (first + 9).min(len);
            self.s.splice(first..end, b"original".iter().copied());
        }
        w.text(&self.s);
    }

    /// Tax: uniform 10-20 hundredths.
    pub(super) fn tax(&mut self, w: &mut CopyWriter) {
        let t = self.rng.range(10, 20);
        w.numeric(t, 2);
    }

    pub(super) fn item(&mut self, w: &mut CopyWriter, i_id: i32, marked: bool) {
        w.row(5);
        w.i32(i_id);
        w.i32(self.rng.range_i32(1, 10_000));
        self.alpha(w, 14, 24);
        let price = self.rng.range(100, 10_000);
        w.numeric(price, 2);
        self.data(w, marked);
    }

    pub(super) fn warehouse(&mut self, w: &mut CopyWriter, w_id: i32) {
        w.row(9);
        w.i32(w_id);
        self.alpha(w, 6, 10);
        self.address(w);
        self.tax(w);
        w.numeric(30_000_000, 2);
    }

    pub(super) fn district(&mut self, w: &mut CopyWriter, w_id: i32, d_id: i32) {
        w.row(11);
        w.i32(w_id);
        w.i32(ORDERS + 1);
        w.i16(d_id as i16);
        w.numeric(3_000_000, 2);
        self.tax(w);
        self.alpha(w, 6, 10);
        self.address(w);
    }

    pub(super) fn stock(&mut self, w: &mut CopyWriter, w_id: i32, i_id: i32, marked: bool) {
        w.row(17);
        w.i32(i_id);
        w.i32(w_id);
        w.i32(0);
        w.i16(self.rng.range(10, 100) as i16);
        w.i16(0);
        w.i16(0);
        for _ in 0..10 {
            self.alpha(w, 24, 24);
        }
        self.data(w, marked);
    }

    pub(super) fn customer(&mut self, w: &mut CopyWriter, w_id: i32, d_id: i32, c_id: i32) {
        w.row(21);
        w.timestamptz_unix_micros(self.now);
        w.i32(c_id);
        w.i32(w_id);
        w.i16(d_id as i16);
        w.i16(1);
        w.i16(0);
        self.alpha(w, 8, 16);
        w.text(b"OE");
        self.s.clear();
        let num = if c_id <= 1000 { i64::from(c_id - 1) } else { self.rng.nurand(A_C_LAST, 0, 999, HAMMERDB_C_LAST) };
        last_name_into(&mut self.s, num);
        w.text(&self.s);
        self.address(w);
        self.phone(w);
        // `if {[RandomNumber 0 1] eq 1} GC else BC`: half the customers have bad credit.
        w.text(if self.rng.range(0, 1) == 1 { b"GC" } else { b"BC" });
        w.numeric(5_000_000, 2);
        let discount = self.rng.range(0, 50);
        w.numeric(discount, 2);
        w.numeric(-1_000, 2);
        w.numeric(1_000, 2);
        self.alpha(w, 300, 500);
    }

    pub(super) fn history(&mut self, w: &mut CopyWriter, w_id: i32, d_id: i32, c_id: i32) {
        w.row(8);
        w.timestamptz_unix_micros(self.now);
        w.i32(c_id);
        w.i32(w_id);
        w.i32(w_id);
        w.i16(d_id as i16);
        w.i16(d_id as i16);
        w.numeric(1_000, 2);
        self.alpha(w, 12, 24);
    }

    /// O_C_ID of orders 1..=3000 of a district as HammerDB's `Orders` leaves them: its shuffle
    /// sets `cust(i)` to `cust(r)` for r uniform in [i, 3000] but never writes `cust(r)` back,
    /// so order i gets customer r itself and about half the customers get no order.
    pub(crate) fn order_customers(&mut self) -> Vec<i32> {
        (1..=ORDERS).map(|i| self.rng.range_i32(i, ORDERS)).collect()
    }

    /// Order `o_id` of district `d_id` of warehouse `w_id`, by customer `c_id`: its ORDERS row,
    /// its NEW_ORDER row when undelivered, its ORDER_LINE rows.
    pub(super) fn order(&mut self, out: &mut OrderWriters<'_>, w_id: i32, d_id: i32, o_id: i32, c_id: i32) {
        let OrderWriters { orders: ow, new_orders: nw, lines: lw } = out;
        let carrier = self.rng.range(1, 10) as i16;
        let ol_cnt = self.rng.range(5, 15) as i16;
        let delivered = o_id <= LAST_DELIVERED;
        ow.row(8);
        ow.timestamptz_unix_micros(self.now);
        ow.i32(o_id);
        ow.i32(w_id);
        ow.i32(c_id);
        ow.i16(d_id as i16);
        if delivered {
            ow.i16(carrier);
        } else {
            ow.null();
            nw.row(3);
            nw.i32(w_id);
            nw.i32(o_id);
            nw.i16(d_id as i16);
        }
        ow.i16(ol_cnt);
        ow.i16(1);
        for number in 1..=ol_cnt {
            lw.row(10);
            let item = self.rng.range_i32(1, ITEMS);
            if delivered {
                lw.timestamptz_unix_micros(self.now);
            } else {
                lw.null();
            }
            lw.i32(o_id);
            lw.i32(w_id);
            lw.i32(item);
            lw.i32(w_id);
            lw.i16(d_id as i16);
            lw.i16(number);
            lw.i16(5);
            // Reversed from the specification: delivered lines carry 0.10-100.00, undelivered 0.
            if delivered {
                let amount = self.rng.range(10, 10_000);
                lw.numeric(amount, 2);
            } else {
                lw.numeric(0, 2);
            }
            self.alpha(lw, 24, 24);
        }
    }
}

/// The COPY streams an order's rows go to: ORDERS, NEW_ORDER, ORDER_LINE.
pub(super) struct OrderWriters<'w> {
    pub orders: &'w mut CopyWriter,
    pub new_orders: &'w mut CopyWriter,
    pub lines: &'w mut CopyWriter,
}
