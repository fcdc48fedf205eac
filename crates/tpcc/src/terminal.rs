//! What an emulated terminal types: the choice of transaction and its inputs (clauses 2.4.1,
//! 2.5.1, 2.6.1, 2.7.1, 2.8.1 and 5.2.3), keying and think times (5.2.5), in either mode.

use std::time::Duration;

use crate::Mode;
use crate::generate::{CUSTOMERS, DISTRICTS, ITEMS};
use crate::random::{A_C_ID, A_C_LAST, A_OL_I_ID, NurandConstants, Rng, last_name};

pub use crate::tx::TxKind;

/// A customer chosen by id or by last name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CustomerKey {
    /// By C_ID.
    Id(i32),
    /// By C_LAST (the middle one of those with that name, sorted by C_FIRST).
    LastName(String),
}

/// One order line's input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LineInput {
    /// OL_SUPPLY_W_ID.
    pub supply_w_id: i32,
    /// OL_I_ID.
    pub i_id: i32,
    /// OL_QUANTITY.
    pub quantity: i32,
}

/// New-Order inputs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewOrderInput {
    /// Home warehouse.
    pub w_id: i32,
    /// District.
    pub d_id: i32,
    /// Customer id.
    pub c_id: i32,
    /// Lines, sorted by (supply warehouse, item) so concurrent orders lock stock rows in one
    /// order and cannot deadlock on them.
    pub lines: Vec<LineInput>,
    /// True when one line carries an unused item number (the 1% of clause 2.4.1.4).
    pub invalid_item: bool,
}

/// Payment inputs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PaymentInput {
    /// Home warehouse.
    pub w_id: i32,
    /// District.
    pub d_id: i32,
    /// Customer's warehouse (remote 15% of the time).
    pub c_w_id: i32,
    /// Customer's district.
    pub c_d_id: i32,
    /// The customer.
    pub customer: CustomerKey,
    /// H_AMOUNT in cents, 100..=500000.
    pub amount_cents: i32,
}

/// Order-Status inputs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OrderStatusInput {
    /// Home warehouse.
    pub w_id: i32,
    /// District.
    pub d_id: i32,
    /// The customer.
    pub customer: CustomerKey,
}

/// Delivery inputs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeliveryInput {
    /// Home warehouse.
    pub w_id: i32,
    /// O_CARRIER_ID, 1..=10.
    pub carrier_id: i32,
}

/// Stock-Level inputs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StockLevelInput {
    /// Home warehouse.
    pub w_id: i32,
    /// The terminal's fixed district.
    pub d_id: i32,
    /// Threshold, 10..=20.
    pub threshold: i32,
}

/// A transaction with its inputs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TxInput {
    /// New-Order.
    NewOrder(NewOrderInput),
    /// Payment.
    Payment(PaymentInput),
    /// Order-Status.
    OrderStatus(OrderStatusInput),
    /// Delivery.
    Delivery(DeliveryInput),
    /// Stock-Level.
    StockLevel(StockLevelInput),
    /// [`Mode::HammerDbFaithful`]: the arguments of one of HammerDB's prepared calls.
    Faithful(crate::faithful::Call),
}

impl TxInput {
    /// The transaction type.
    pub fn kind(&self) -> TxKind {
        match self {
            TxInput::NewOrder(_) => TxKind::NewOrder,
            TxInput::Payment(_) => TxKind::Payment,
            TxInput::OrderStatus(_) => TxKind::OrderStatus,
            TxInput::Delivery(_) => TxKind::Delivery,
            TxInput::StockLevel(_) => TxKind::StockLevel,
            TxInput::Faithful(c) => c.kind(),
        }
    }
}

/// The item number used for the 1% of new-orders that must fail (no item has it).
pub const UNUSED_ITEM_ID: i32 = ITEMS + 1;

/// One virtual user's terminal.
#[derive(Clone, Debug)]
pub struct Terminal {
    mode: Mode,
    warehouses: i32,
    home_w_id: i32,
    stock_level_d_id: i32,
    /// With "all warehouses": the warehouses this terminal spreads over.
    spread: Option<Vec<i32>>,
    nurand: NurandConstants,
    rng: Rng,
}

impl Terminal {
    /// The terminal of virtual user `vu` (0-based) of `virtual_users`, on a database of
    /// `warehouses` warehouses. In specification mode the home warehouse is `vu % W + 1` and
    /// the stock-level district `(vu / W) % 10 + 1`, so terminals share out (W, D) pairs as in
    /// clause 2.8.1.1; in the two HammerDB modes both are random, as HammerDB draws them.
    /// `nurand` must be the run's constants; in HammerDB mode its `c_last` should be the load's
    /// (the faithful mode uses HammerDB's 123 whatever it is given).
    pub fn new(
        mode: Mode,
        warehouses: u32,
        (vu, virtual_users): (u32, u32),
        all_warehouses: bool,
        nurand: NurandConstants,
        mut rng: Rng,
    ) -> Terminal {
        let w = warehouses.max(1) as i32;
        let (home_w_id, stock_level_d_id) = match mode {
            Mode::Spec => ((vu as i32 % w) + 1, ((vu as i32 / w) % DISTRICTS) + 1),
            Mode::HammerDb | Mode::HammerDbFaithful => (rng.range_i32(1, w), rng.range_i32(1, DISTRICTS)),
        };
        let spread = all_warehouses.then(|| spread_warehouses(vu, virtual_users, warehouses));
        Terminal { mode, warehouses: w, home_w_id, stock_level_d_id, spread, nurand, rng }
    }

    /// The home warehouse (with "all warehouses" still the mode's home warehouse, not one of
    /// the spread, from which each transaction picks its warehouse).
    pub fn home_w_id(&self) -> i32 {
        self.home_w_id
    }

    /// The fixed stock-level district.
    pub fn stock_level_d_id(&self) -> i32 {
        self.stock_level_d_id
    }

    /// The next transaction type of the mix: specification 45/43/4/4/4 (new-order, payment,
    /// order-status, delivery, stock-level); both HammerDB modes 10/10/1/1/1 out of 23.
    pub fn next_kind(&mut self) -> TxKind {
        match self.mode {
            Mode::Spec => match self.rng.range(1, 100) {
                1..=45 => TxKind::NewOrder,
                46..=88 => TxKind::Payment,
                89..=92 => TxKind::OrderStatus,
                93..=96 => TxKind::Delivery,
                _ => TxKind::StockLevel,
            },
            Mode::HammerDb | Mode::HammerDbFaithful => match self.rng.range(1, 23) {
                1..=10 => TxKind::NewOrder,
                11..=20 => TxKind::Payment,
                21 => TxKind::Delivery,
                22 => TxKind::StockLevel,
                _ => TxKind::OrderStatus,
            },
        }
    }

    /// Inputs for a transaction of type `kind`.
    pub fn input(&mut self, kind: TxKind) -> TxInput {
        let w_id = match &self.spread {
            Some(list) => list[self.rng.range(0, list.len() as i64 - 1) as usize],
            None => self.home_w_id,
        };
        if self.mode == Mode::HammerDbFaithful {
            return TxInput::Faithful(crate::faithful::draw(
                &mut self.rng,
                kind,
                w_id,
                self.warehouses,
                self.stock_level_d_id,
            ));
        }
        match kind {
            TxKind::NewOrder => TxInput::NewOrder(self.new_order(w_id)),
            TxKind::Payment => TxInput::Payment(self.payment(w_id)),
            TxKind::OrderStatus => TxInput::OrderStatus(OrderStatusInput {
                w_id,
                d_id: self.rng.range_i32(1, DISTRICTS),
                customer: self.customer_key(),
            }),
            TxKind::Delivery => TxInput::Delivery(DeliveryInput { w_id, carrier_id: self.rng.range_i32(1, 10) }),
            TxKind::StockLevel => TxInput::StockLevel(StockLevelInput {
                w_id,
                d_id: self.stock_level_d_id,
                threshold: self.rng.range_i32(10, 20),
            }),
        }
    }

    fn c_id(&mut self) -> i32 {
        match self.mode {
            Mode::Spec => self.rng.nurand(A_C_ID, 1, i64::from(CUSTOMERS), self.nurand.c_id) as i32,
            Mode::HammerDb | Mode::HammerDbFaithful => self.rng.range_i32(1, CUSTOMERS),
        }
    }

    fn i_id(&mut self) -> i32 {
        match self.mode {
            Mode::Spec => self.rng.nurand(A_OL_I_ID, 1, i64::from(ITEMS), self.nurand.ol_i_id) as i32,
            Mode::HammerDb | Mode::HammerDbFaithful => self.rng.range_i32(1, ITEMS),
        }
    }

    /// 60% by last name (NURand(255, 0, 999)), 40% by id.
    fn customer_key(&mut self) -> CustomerKey {
        if self.rng.range(1, 100) <= 60 {
            let n = self.rng.nurand(A_C_LAST, 0, 999, self.nurand.c_last);
            CustomerKey::LastName(last_name(n))
        } else {
            CustomerKey::Id(self.c_id())
        }
    }

    /// A warehouse other than `w_id`, uniformly (only called with more than one warehouse).
    fn other_warehouse(&mut self, w_id: i32) -> i32 {
        let o = self.rng.range_i32(1, self.warehouses - 1);
        if o >= w_id { o + 1 } else { o }
    }

    fn new_order(&mut self, w_id: i32) -> NewOrderInput {
        let d_id = self.rng.range_i32(1, DISTRICTS);
        let c_id = self.c_id();
        let ol_cnt = self.rng.range(5, 15) as usize;
        let invalid_item = self.rng.range(1, 100) == 1;
        let mut lines = Vec::with_capacity(ol_cnt);
        for n in 0..ol_cnt {
            let i_id = if invalid_item && n == ol_cnt - 1 { UNUSED_ITEM_ID } else { self.i_id() };
            let supply_w_id =
                if self.warehouses > 1 && self.rng.range(1, 100) == 1 { self.other_warehouse(w_id) } else { w_id };
            let quantity = self.rng.range_i32(1, 10);
            lines.push(LineInput { supply_w_id, i_id, quantity });
        }
        lines.sort_by_key(|l| (l.supply_w_id, l.i_id));
        NewOrderInput { w_id, d_id, c_id, lines, invalid_item }
    }

    fn payment(&mut self, w_id: i32) -> PaymentInput {
        let d_id = self.rng.range_i32(1, DISTRICTS);
        let (c_w_id, c_d_id) = if self.warehouses == 1 || self.rng.range(1, 100) <= 85 {
            (w_id, d_id)
        } else {
            let d = self.rng.range_i32(1, DISTRICTS);
            (self.other_warehouse(w_id), d)
        };
        let customer = self.customer_key();
        PaymentInput { w_id, d_id, c_w_id, c_d_id, customer, amount_cents: self.rng.range_i32(100, 500_000) }
    }

    /// Keying time before `kind` (clause 5.2.5.7): 18, 3, 2, 2, 2 seconds.
    pub fn keying_time(kind: TxKind) -> Duration {
        Duration::from_secs(match kind {
            TxKind::NewOrder => 18,
            TxKind::Payment => 3,
            TxKind::OrderStatus | TxKind::Delivery | TxKind::StockLevel => 2,
        })
    }

    /// Mean think time after `kind`: specification 12, 12, 10, 5, 5 seconds (new-order,
    /// payment, order-status, delivery, stock-level); HammerDB uses 5 for order-status and 10
    /// for delivery.
    pub fn mean_think_time(mode: Mode, kind: TxKind) -> Duration {
        Duration::from_secs(match (mode, kind) {
            (_, TxKind::NewOrder | TxKind::Payment) => 12,
            (Mode::Spec, TxKind::OrderStatus) => 10,
            (Mode::HammerDb | Mode::HammerDbFaithful, TxKind::Delivery) => 10,
            _ => 5,
        })
    }

    /// A think time: negative exponential with the type's mean, at most ten times the mean;
    /// in the faithful mode HammerDB's `thinktime` instead: rounded to whole seconds, no cap.
    pub fn think_time(&mut self, kind: TxKind) -> Duration {
        let mean = Terminal::mean_think_time(self.mode, kind).as_secs_f64();
        let r = 1.0 - self.rng.unit(); // (0, 1]
        if self.mode == Mode::HammerDbFaithful {
            return Duration::from_secs_f64((-r.ln() * mean).round());
        }
        Duration::from_secs_f64((-r.ln() * mean).min(10.0 * mean))
    }
}

/// HammerDB's "use all warehouses" assignment: virtual user `vu` (0-based) of `n` gets
/// warehouses `vu + 1, vu + 1 + n, vu + 1 + 2n, ...` (wrapping), ceil(W / n) of them.
pub fn spread_warehouses(vu: u32, n: u32, warehouses: u32) -> Vec<i32> {
    let n = n.max(1);
    let w = warehouses.max(1);
    let count = w.div_ceil(n);
    (0..count).map(|k| ((vu + k * n) % w) as i32 + 1).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nurand() -> NurandConstants {
        NurandConstants { c_last: 200, c_id: 300, ol_i_id: 4000 }
    }

    fn terminal(mode: Mode, w: u32, vu: u32, seed: u64) -> Terminal {
        Terminal::new(mode, w, (vu, 8), false, nurand(), Rng::seeded(seed))
    }

    #[test]
    fn spec_mix_is_45_43_4_4_4() {
        let mut t = terminal(Mode::Spec, 4, 0, 1);
        let mut n = [0u32; 5];
        for _ in 0..200_000 {
            n[t.next_kind().index()] += 1;
        }
        let pct = |i: usize| f64::from(n[i]) / 2000.0;
        assert!((pct(0) - 45.0).abs() < 0.5, "{n:?}");
        assert!((pct(1) - 43.0).abs() < 0.5, "{n:?}");
        for i in 2..5 {
            assert!((pct(i) - 4.0).abs() < 0.3, "{n:?}");
        }
    }

    #[test]
    fn hammerdb_mix_is_10_10_1_1_1_of_23() {
        let mut t = terminal(Mode::HammerDb, 4, 0, 2);
        let mut n = [0u32; 5];
        for _ in 0..230_000 {
            n[t.next_kind().index()] += 1;
        }
        assert!((f64::from(n[0]) / 10_000.0 - 10.0).abs() < 0.15, "{n:?}");
        assert!((f64::from(n[1]) / 10_000.0 - 10.0).abs() < 0.15, "{n:?}");
        for i in 2..5 {
            assert!((f64::from(n[i]) / 10_000.0 - 1.0).abs() < 0.05, "{n:?}");
        }
    }

    #[test]
    fn new_order_inputs_follow_clause_2_4_1() {
        let mut t = terminal(Mode::Spec, 5, 2, 3);
        let (mut invalid, mut lines_total, mut remote) = (0, 0, 0);
        let orders = 100_000;
        for _ in 0..orders {
            let TxInput::NewOrder(o) = t.input(TxKind::NewOrder) else { unreachable!() };
            assert_eq!(o.w_id, 3);
            assert!((1..=10).contains(&o.d_id));
            assert!((1..=3000).contains(&o.c_id));
            assert!((5..=15).contains(&o.lines.len()));
            let unused = o.lines.iter().filter(|l| l.i_id == UNUSED_ITEM_ID).count();
            assert_eq!(unused, usize::from(o.invalid_item));
            invalid += usize::from(o.invalid_item);
            for l in &o.lines {
                assert!((1..=10).contains(&l.quantity));
                assert!((1..=5).contains(&l.supply_w_id));
                assert!(l.i_id == UNUSED_ITEM_ID || (1..=100_000).contains(&l.i_id));
                remote += usize::from(l.supply_w_id != o.w_id);
                lines_total += 1;
            }
            assert!(o.lines.windows(2).all(|p| (p[0].supply_w_id, p[0].i_id) <= (p[1].supply_w_id, p[1].i_id)));
        }
        // 1% of new-orders carry the unused item (rolled back in specification mode).
        let pct = invalid as f64 * 100.0 / f64::from(orders);
        assert!((0.85..=1.15).contains(&pct), "{pct}% invalid");
        let remote_pct = remote as f64 * 100.0 / lines_total as f64;
        assert!((0.85..=1.15).contains(&remote_pct), "{remote_pct}% remote lines");
    }

    #[test]
    fn spec_ids_are_nurand_and_hammerdb_ids_uniform() {
        // NURand(8191, 1, 100000) concentrates on items whose id has many bits set in the low
        // 13 bits; uniform does not. Compare the share of the 1% most frequent ids.
        let top_share = |mode: Mode| {
            let mut t = terminal(mode, 1, 0, 4);
            let mut counts = vec![0u32; 100_002];
            let mut total = 0u32;
            for _ in 0..20_000 {
                if let TxInput::NewOrder(o) = t.input(TxKind::NewOrder) {
                    for l in o.lines {
                        counts[l.i_id as usize] += 1;
                        total += 1;
                    }
                }
            }
            counts.sort_unstable_by(|a, b| b.cmp(a));
            let top: u32 = counts[..1000].iter().sum();
            f64::from(top) / f64::from(total)
        };
        let spec = top_share(Mode::Spec);
        let hammer = top_share(Mode::HammerDb);
        assert!(spec > 2.0 * hammer, "spec top-1% share {spec}, hammerdb {hammer}");
    }

    #[test]
    fn payment_inputs_follow_clause_2_5_1() {
        let mut t = terminal(Mode::Spec, 3, 0, 5);
        let (mut remote, mut by_name) = (0, 0);
        let n = 100_000;
        for _ in 0..n {
            let TxInput::Payment(p) = t.input(TxKind::Payment) else { unreachable!() };
            assert_eq!(p.w_id, 1);
            assert!((100..=500_000).contains(&p.amount_cents));
            if p.c_w_id != p.w_id {
                remote += 1;
            } else {
                assert_eq!(p.c_d_id, p.d_id);
            }
            match p.customer {
                CustomerKey::LastName(name) => {
                    by_name += 1;
                    assert!(name.len() <= 16);
                }
                CustomerKey::Id(c) => assert!((1..=3000).contains(&c)),
            }
        }
        let remote_pct = f64::from(remote) * 100.0 / f64::from(n);
        let name_pct = f64::from(by_name) * 100.0 / f64::from(n);
        assert!((14.0..=16.0).contains(&remote_pct), "{remote_pct}");
        assert!((59.0..=61.0).contains(&name_pct), "{name_pct}");
        // One warehouse: never remote.
        let mut t = terminal(Mode::Spec, 1, 0, 6);
        for _ in 0..10_000 {
            if let TxInput::Payment(p) = t.input(TxKind::Payment) {
                assert_eq!((p.c_w_id, p.c_d_id), (1, p.d_id));
            }
        }
    }

    #[test]
    fn home_warehouses_and_districts() {
        // Spec: VUs share out warehouses round-robin, then stock-level districts.
        let homes: Vec<(i32, i32)> = (0..8)
            .map(|vu| {
                let t = terminal(Mode::Spec, 4, vu, 7);
                (t.home_w_id(), t.stock_level_d_id())
            })
            .collect();
        assert_eq!(homes, vec![(1, 1), (2, 1), (3, 1), (4, 1), (1, 2), (2, 2), (3, 2), (4, 2)]);
        for vu in 0..50 {
            let t = terminal(Mode::HammerDb, 4, vu, u64::from(vu));
            assert!((1..=4).contains(&t.home_w_id()));
            assert!((1..=10).contains(&t.stock_level_d_id()));
        }
    }

    #[test]
    fn all_warehouses_spread() {
        assert_eq!(spread_warehouses(0, 2, 5), vec![1, 3, 5]);
        assert_eq!(spread_warehouses(1, 2, 5), vec![2, 4, 1]);
        assert_eq!(spread_warehouses(3, 8, 4), vec![4]);
        let mut all: Vec<i32> = (0..3).flat_map(|vu| spread_warehouses(vu, 3, 10)).collect();
        all.sort_unstable();
        all.dedup();
        assert_eq!(all, (1..=10).collect::<Vec<_>>());
    }

    #[test]
    fn think_times_are_capped_and_average_the_mean() {
        let mut t = terminal(Mode::Spec, 1, 0, 8);
        let mut sum = 0.0;
        for _ in 0..100_000 {
            let d = t.think_time(TxKind::Payment).as_secs_f64();
            assert!((0.0..=120.0).contains(&d));
            sum += d;
        }
        let mean = sum / 100_000.0;
        assert!((11.5..=12.5).contains(&mean), "{mean}");
    }
}
