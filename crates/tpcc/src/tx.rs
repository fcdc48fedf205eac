//! The five transaction types and what one transaction came to: the leaf the terminal, the
//! transactions and HammerDB's faithful procedures share.

/// The five transaction types.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TxKind {
    /// New-Order.
    NewOrder,
    /// Payment.
    Payment,
    /// Order-Status.
    OrderStatus,
    /// Delivery.
    Delivery,
    /// Stock-Level.
    StockLevel,
}

impl TxKind {
    /// All five, in report order.
    pub const ALL: [TxKind; 5] =
        [TxKind::NewOrder, TxKind::Payment, TxKind::OrderStatus, TxKind::Delivery, TxKind::StockLevel];

    /// Snake-case name used in reports.
    pub fn name(self) -> &'static str {
        match self {
            TxKind::NewOrder => "new_order",
            TxKind::Payment => "payment",
            TxKind::OrderStatus => "order_status",
            TxKind::Delivery => "delivery",
            TxKind::StockLevel => "stock_level",
        }
    }

    /// Position in [`TxKind::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }
}

/// How a transaction that raised no error ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Committed.
    Committed,
    /// Rolled back on purpose (new-order with an unused item number, specification mode).
    RolledBack,
    /// Client-side SQL found no customer with the last name (the functions raise SQLSTATE
    /// TPC02 instead); rolled back and counted as an error of kind `other`.
    NoCustomer(String),
}
