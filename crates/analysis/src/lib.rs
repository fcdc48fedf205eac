//! Judges a result set read back from disk: each cell's summary, each contender's change
//! against the baseline with its interval and verdict, steadiness, the negative control,
//! contrasts between placements, published claims against the measured figures, the evidence
//! for why a change happened, and the warnings. The numerics are `stats`'s; drawing and
//! writing files are `report`'s. Runs nothing and writes nothing, so the scheduler
//! (`pgtier compare`'s slices) uses its stopping rule without the renderer.

pub mod calibration;
pub mod cell;
pub mod claims;
pub mod contest;
pub mod contrast;
pub mod control;
pub mod evidence;
pub mod fidelity;
pub mod idle_io;
pub mod model;
pub mod priors;
pub mod summary;
pub mod warnings;

pub use contest::Rules;
pub use model::{ResultSet, Summary, rule_of, rules_of, summarize, summarize_with, summarize_with_priors};
