//! The experiment file (`tiers/*.toml`): strict parsing, validation with errors that name file,
//! line and key, `--emulate` overrides, and the resolved experiment that `tiers` and `runner`
//! consume. Nothing here touches the machine.
//!
//! `raw` is the file as written (enum-valued keys parsed by `keyword`), `validate` checks it one
//! section at a time (with `[emulate]` resolved in `validate::emulate`), `policy` says what a file
//! may not ask for, `schema` knows the keys of every table (unknown keys are found there, all of
//! them, before serde reads the file), `read` reads it past values of the wrong type (each one
//! reported), `spans` finds keys and lines, `model` is what validation resolves to, and
//! `golden` the room the data sets' golden copies need where the file puts them.

mod calibration;
pub mod error;
mod golden;
mod keyword;
mod memory_check;
mod model;
mod policy;
mod raw;
mod read;
mod schema;
mod spans;
pub mod units;
mod validate;

use std::path::{Path, PathBuf};

pub use calibration::TWIN_PREFIX;
use error::Source;
pub use error::{ConfigError, ConfigErrors};
pub use golden::{RoomNeed, RoomPart, wal_allowance};
pub use model::{
    Build, Claim, ClaimAcross, ClaimMetric, Design, Experiment, FaultKind, FaultSpec, GoldenCopy, Handicap, Host,
    HostRole, HugePagesNeed, KernelSettings, Measurement, Origin, Pinning, Placement, ProfileInfo, StudyRegime,
};
pub use model::{CONTROL_DEVICE_SUFFIX, CONTROL_PLACEMENT};
pub use policy::{reserved_setting, unsafe_mkfs_option};
/// PostgreSQL memory units (`128MB` = 128 MiB, `8kB`, `1GB`); bare numbers are 8 kB pages.
pub use runner::memory::pg_size;
pub use validate::parse_figure;

/// How to load.
#[derive(Clone, Debug)]
pub struct LoadOptions {
    pub emulate: bool,
    /// Where `postgres/<profile>.toml` files live (the repository's `configs/`).
    pub configs_dir: PathBuf,
    /// Hardware threads of this machine (for client counts given in %).
    pub hardware_threads: u32,
}

/// Reads, parses and validates an experiment file. All problems are reported at once.
pub fn load(path: &Path, opts: &LoadOptions) -> Result<Experiment, ConfigErrors> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        ConfigErrors(vec![ConfigError {
            file: path.to_path_buf(),
            line: None,
            column: None,
            key: None,
            message: format!("cannot read the experiment file: {e}"),
        }])
    })?;
    parse(path, &text, opts)
}

/// Parses and validates experiment text (`path` is used in messages and to find nothing else).
/// Every problem is reported, in the order of the file: unknown keys and values of the wrong
/// type (which serde would stop at) are reported and set aside, then the rest is validated.
pub fn parse(path: &Path, text: &str, opts: &LoadOptions) -> Result<Experiment, ConfigErrors> {
    let src = Source { path, text };
    let mut doc = toml::de::DeTable::parse(text).map_err(|e| ConfigErrors(vec![spans::toml_error(&src, &e)]))?;
    let mut errors = schema::take_unknown_keys(doc.get_mut(), schema::file(), &src);
    let mut read = read::raw_file(doc, &src);
    errors.append(&mut read.errors);
    let Some(raw) = read.raw else { return Err(in_file_order(path, errors)) };
    let mut v = validate::Validator::new(&src);
    let exp = v.resolve(&raw, opts);
    // What validation says about a stand-in for a value of the wrong type is already said.
    v.errors.retain(|e| !read.stand_ins.iter().any(|s| s.explains(e)));
    errors.append(&mut v.errors);
    if errors.is_empty() {
        let mut exp = exp.expect("resolved when there are no errors");
        exp.warnings = v.warnings;
        Ok(exp)
    } else {
        Err(in_file_order(path, errors))
    }
}

/// Errors sorted by their place in the file (those without one last; those of the profiles it
/// names after it), each reported once (an [emulate] value shared by several workloads or devices
/// is found once per use).
fn in_file_order(path: &Path, errors: Vec<ConfigError>) -> ConfigErrors {
    let mut unique: Vec<ConfigError> = Vec::new();
    for e in errors {
        if !unique.contains(&e) {
            unique.push(e);
        }
    }
    unique.sort_by(|a, b| {
        let place = |e: &ConfigError| (e.file != path, e.file.clone(), e.line.is_none(), e.line, e.column);
        place(a).cmp(&place(b))
    });
    ConfigErrors(unique)
}
