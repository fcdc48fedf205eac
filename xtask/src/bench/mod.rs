//! `cargo xtask bench`: measurements of pgtier itself, quoted in docs/benchmarks.md.
//!
//! - `fidelity`: does measuring with pgtier change what is measured (pgtier against pgbench by
//!   hand, interleaved pairs)?
//! - `precision`: how wide is a change's interval per minute of machine time, and how often does
//!   an A/A experiment call two identical placements different, for each measurement design?

pub mod fidelity;
pub mod precision;

pub use fidelity::{FidelityArgs, fidelity};
