//! Parsers for the text that pgtier's storage tools print.
//!
//! Every function here is a pure function over captured output: nothing runs a
//! command. The callers run `nvme`, `ndctl`, `lsblk`, `blkid`, `wipefs`,
//! `parted`, `mkfs.xfs`/`xfs_info` and `dmesg` themselves and hand the stdout
//! over. The parsers accept the output shapes of the tool versions found in
//! `tests/fixtures/` (see `tests/fixtures/SOURCES.md`).
//!
//! Conventions:
//! - A *listing* that printed nothing lists nothing: empty (or blank) input to
//!   `nvme::parse_list`, `nvme::parse_list_subsys`, `ndctl::parse_list`,
//!   `lsblk::parse`, `wipefs::parse_table`, `wipefs::parse_json` and
//!   `blkid::parse_export` gives an empty result. The caller must check the
//!   exit status, because the tools also print nothing when they fail.
//! - A *single report* that printed nothing is an error
//!   (`nvme::parse_id_ctrl`, `ndctl::parse_create_namespace`,
//!   `parted::parse_machine`, `xfs::parse_info`).
//! - Strings that the tools pad with spaces are trimmed; empty strings become
//!   `None`.

pub mod blkid;
pub mod dmesg;
pub mod lsblk;
pub mod ndctl;
pub mod nvme;
pub mod parted;
pub mod wipefs;
pub mod xfs;

use serde_json::Value;

/// The error of every parser in this module. The message names the tool
/// whose output could not be read and what was wrong with it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InspectError {
    /// The output should have been JSON but was not.
    #[error("{tool}: output is not valid JSON: {detail}")]
    InvalidJson { tool: &'static str, detail: String },
    /// The tool printed nothing where a report was expected.
    #[error("{tool}: printed nothing")]
    Empty { tool: &'static str },
    /// The output was readable but did not have the expected shape or a
    /// required value was missing or malformed.
    #[error("{tool}: unexpected output: {detail}")]
    Unexpected { tool: &'static str, detail: String },
}

impl InspectError {
    /// The tool (command) whose output was being parsed, e.g. `"nvme list"`.
    pub fn tool(&self) -> &'static str {
        match self {
            InspectError::InvalidJson { tool, .. }
            | InspectError::Empty { tool }
            | InspectError::Unexpected { tool, .. } => tool,
        }
    }

    pub(crate) fn unexpected(tool: &'static str, detail: impl Into<String>) -> Self {
        InspectError::Unexpected { tool, detail: detail.into() }
    }
}

/// Parses one JSON value.
pub(crate) fn parse_json(tool: &'static str, text: &str) -> Result<Value, InspectError> {
    serde_json::from_str(text).map_err(|e| InspectError::InvalidJson { tool, detail: e.to_string() })
}

/// Parses a stream of JSON values written one after the other (old `ndctl`
/// printed several top-level objects without an enclosing array).
pub(crate) fn parse_json_stream(tool: &'static str, text: &str) -> Result<Vec<Value>, InspectError> {
    serde_json::Deserializer::from_str(text)
        .into_iter::<Value>()
        .map(|item| item.map_err(|e| InspectError::InvalidJson { tool, detail: e.to_string() }))
        .collect()
}

/// A string field, trimmed; `None` when absent, null, not a string or empty.
pub(crate) fn str_field(obj: &Value, key: &str) -> Option<String> {
    let s = obj.get(key)?.as_str()?.trim();
    if s.is_empty() { None } else { Some(s.to_string()) }
}

/// A non-negative integer field. Accepts JSON numbers (whole floats too) and
/// decimal strings. Negative numbers give `None` (nvme-cli's int overflow).
pub(crate) fn u64_field(obj: &Value, key: &str) -> Option<u64> {
    value_as_u64(obj.get(key)?)
}

pub(crate) fn value_as_u64(v: &Value) -> Option<u64> {
    match v {
        Value::Number(n) => {
            if let Some(u) = n.as_u64() {
                Some(u)
            } else if n.as_i64().is_some() {
                None // negative integer
            } else {
                let f = n.as_f64()?;
                if f.is_finite() && f >= 0.0 && f.fract() == 0.0 && f < 1.8e19 { Some(f as u64) } else { None }
            }
        }
        Value::String(s) => s.trim().parse::<u64>().ok(),
        _ => None,
    }
}

/// Parses a size with an optional unit into bytes.
///
/// Accepts plain byte counts (`"4096"`, `"512B"`), `lsblk`'s 1024-based
/// suffixes (`"1G"`, `"476.9G"`, `"1022M"`, `"4K"`, `"0B"`, also with a `,`
/// as decimal separator), and `ndctl --human` strings such as
/// `"123.04 GiB (132.12 GB)"`, of which the first (binary) figure is used.
/// Decimal units (`"132.12 GB"`) use 1000-based multipliers. Fractional
/// figures give approximate byte counts, rounded to the nearest byte.
pub(crate) fn parse_size(text: &str) -> Option<u64> {
    let first = text.split('(').next()?.trim();
    let split_at = first.find(|c: char| !(c.is_ascii_digit() || c == '.' || c == ',')).unwrap_or(first.len());
    let (number, unit) = first.split_at(split_at);
    let multiplier: u128 = match unit.trim() {
        "" | "B" => 1,
        "K" | "k" | "KiB" => 1 << 10,
        "M" | "MiB" => 1 << 20,
        "G" | "GiB" => 1 << 30,
        "T" | "TiB" => 1 << 40,
        "P" | "PiB" => 1 << 50,
        "E" | "EiB" => 1 << 60,
        "KB" | "kB" => 1_000,
        "MB" => 1_000_000,
        "GB" => 1_000_000_000,
        "TB" => 1_000_000_000_000,
        "PB" => 1_000_000_000_000_000,
        _ => return None,
    };
    let number = number.replace(',', ".");
    let (int_part, frac_part) = match number.split_once('.') {
        Some((i, f)) => (i, f),
        None => (number.as_str(), ""),
    };
    if int_part.is_empty() && frac_part.is_empty() {
        return None;
    }
    let all_digits = |s: &str| s.chars().all(|c| c.is_ascii_digit());
    if !all_digits(int_part) || !all_digits(frac_part) || frac_part.len() > 18 {
        return None;
    }
    let int_value: u128 = if int_part.is_empty() { 0 } else { int_part.parse().ok()? };
    let frac_value: u128 = if frac_part.is_empty() { 0 } else { frac_part.parse().ok()? };
    let scale = 10u128.pow(frac_part.len() as u32);
    let scaled = int_value.checked_mul(scale)?.checked_add(frac_value)?;
    let bytes = scaled.checked_mul(multiplier)?;
    let rounded = (bytes + scale / 2) / scale;
    u64::try_from(rounded).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_plain_and_lsblk_units() {
        assert_eq!(parse_size("4096"), Some(4096));
        assert_eq!(parse_size("0B"), Some(0));
        assert_eq!(parse_size("512B"), Some(512));
        assert_eq!(parse_size("4K"), Some(4096));
        assert_eq!(parse_size("1G"), Some(1 << 30));
        assert_eq!(parse_size("1022M"), Some(1022 << 20));
        assert_eq!(parse_size("476.9G"), Some(512_067_475_866));
        assert_eq!(parse_size("1,5G"), Some(3 << 29));
    }

    #[test]
    fn sizes_ndctl_human() {
        assert_eq!(parse_size("4.00 GiB (4.29 GB)"), Some(4 << 30));
        assert_eq!(parse_size("1024.00 MiB (1073.74 MB)"), Some(1 << 30));
        assert_eq!(parse_size("690.00 MiB (723.52 MB)"), Some(690 << 20));
        // 123.04 * 2^30, rounded
        assert_eq!(parse_size("123.04 GiB (132.12 GB)"), Some(132_113_194_025));
        assert_eq!(parse_size("132.12 GB"), Some(132_120_000_000));
    }

    #[test]
    fn sizes_rejected() {
        assert_eq!(parse_size(""), None);
        assert_eq!(parse_size("G"), None);
        assert_eq!(parse_size("12 furlongs"), None);
        assert_eq!(parse_size("-5G"), None);
        assert_eq!(parse_size("1.2.3G"), None);
    }

    #[test]
    fn integer_fields() {
        let v: Value = serde_json::json!({"a": 5, "b": -2147483648i64, "c": "77", "d": 3.0, "e": null});
        assert_eq!(u64_field(&v, "a"), Some(5));
        assert_eq!(u64_field(&v, "b"), None);
        assert_eq!(u64_field(&v, "c"), Some(77));
        assert_eq!(u64_field(&v, "d"), Some(3));
        assert_eq!(u64_field(&v, "e"), None);
        assert_eq!(u64_field(&v, "missing"), None);
    }

    #[test]
    fn error_messages_name_the_tool() {
        let e = parse_json("nvme list", "{").unwrap_err();
        assert_eq!(e.tool(), "nvme list");
        assert!(e.to_string().starts_with("nvme list: output is not valid JSON"));
        let e = InspectError::Empty { tool: "parted" };
        assert_eq!(e.to_string(), "parted: printed nothing");
    }

    #[test]
    fn json_stream_reads_concatenated_objects() {
        let values = parse_json_stream("ndctl list", "{\"a\":1}\n{\"b\":2}").unwrap();
        assert_eq!(values.len(), 2);
        assert!(parse_json_stream("ndctl list", "{\"a\":1} {").is_err());
    }
}
