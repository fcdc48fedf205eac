//! A TPC-C drive's outcome and its live progress line, the same for a drive in this process
//! (`tpcc_run`) and one on a client host (`tpcc_remote`); a leaf below both.

/// How a drive ended, here or on the client host.
pub(crate) struct Drive {
    pub report: Option<tpcc::DriveReport>,
    pub error: Option<String>,
    pub injected: Vec<String>,
    pub watchdog: Option<String>,
    /// The CPU seconds of the driver on the client host over the drive (its own getrusage from
    /// the request to the report); None for a drive inside this process (the report's own
    /// figure is then the client's CPU).
    pub cpu: Option<f64>,
}

/// The progress line the observer shows while a drive runs.
pub(crate) fn live_line(p: &tpcc::DriveProgress, ramp_up: bool) -> String {
    format!(
        "{} {:>4.0} s  {:>9.1} tx/s  NOPM so far {:>9.0}",
        if ramp_up { "ramp-up" } else { "measuring" },
        p.elapsed_seconds,
        p.transactions_per_second,
        p.new_orders_per_minute
    )
}
