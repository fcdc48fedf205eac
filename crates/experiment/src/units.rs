//! Sizes (`2GiB`, `300MiB`, `1GB`), durations (`600s`, `2min`, `1ms`) and percentages (`5%`) as
//! people write them.

use std::time::Duration;

/// A percentage written `5%` or `2.5 %`, as its number; None when it is not one (or not finite).
pub fn parse_percent(text: &str) -> Option<f64> {
    let v: f64 = text.trim().strip_suffix('%')?.trim().parse().ok()?;
    v.is_finite().then_some(v)
}

/// Parses a size: binary units (`KiB`, `MiB`, `GiB`, `TiB`) are powers of 1024, decimal units
/// (`kB`, `MB`, `GB`, `TB`) powers of 1000, a bare number is bytes (the experiment file refuses
/// it: [`parse_size_with_unit`]).
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: f64 =
        num.parse().map_err(|_| format!("{s:?} is not a size; write it like \"512MiB\", \"2GiB\" or \"1GB\""))?;
    let mult: f64 = match unit.trim() {
        "" | "B" => 1.0,
        "K" | "KiB" | "k" => 1024.0,
        "M" | "MiB" => 1024.0 * 1024.0,
        "G" | "GiB" => 1024.0 * 1024.0 * 1024.0,
        "T" | "TiB" => 1024f64.powi(4),
        "kB" | "KB" => 1e3,
        "MB" => 1e6,
        "GB" => 1e9,
        "TB" => 1e12,
        other => {
            return Err(format!("unknown size unit {other:?} in {s:?}; use B, KiB, MiB, GiB, TiB (or kB, MB, GB, TB)"));
        }
    };
    let v = n * mult;
    if !(v.is_finite() && v >= 0.0) {
        return Err(format!("{s:?} is not a size"));
    }
    Ok(v.round() as u64)
}

/// Parses a duration: `us`, `ms`, `s`, `m`/`min`, `h`; a bare number is seconds (the experiment
/// file refuses it: [`parse_duration_with_unit`]).
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: f64 =
        num.parse().map_err(|_| format!("{s:?} is not a duration; write it like \"600s\", \"2min\" or \"1ms\""))?;
    let secs = match unit.trim() {
        "" | "s" | "sec" => n,
        "us" | "µs" => n / 1e6,
        "ms" => n / 1e3,
        "m" | "min" => n * 60.0,
        "h" => n * 3600.0,
        other => {
            return Err(format!("unknown duration unit {other:?} in {s:?}; use us, ms, s, min or h"));
        }
    };
    if !(secs.is_finite() && secs >= 0.0) {
        return Err(format!("{s:?} is not a duration"));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// A size that says its unit, as the experiment file requires: a bare number (other than 0) is
/// refused with the fix, since `"4"` may have meant 4 GiB as well as 4 bytes.
pub fn parse_size_with_unit(s: &str) -> Result<u64, String> {
    match bare_number(s) {
        Some(n) => Err(format!(
            "{s:?} has no unit; write \"{n}GiB\" (GiB = 2^30 bytes), \"{n}GB\" (GB = 10^9 bytes), \"{n}MiB\" or, for bytes, \"{n}B\""
        )),
        None => parse_size(s),
    }
}

/// A duration that says its unit, as the experiment file requires: a bare number (other than 0)
/// is refused with the fix (`"60"` -> `"60s"`).
pub fn parse_duration_with_unit(s: &str) -> Result<Duration, String> {
    match bare_number(s) {
        Some(n) => Err(format!("{s:?} has no unit; write \"{n}s\" for seconds (or \"{n}ms\", \"{n}min\", \"{n}h\")")),
        None => parse_duration(s),
    }
}

/// The number, when `s` is a number without a unit and not zero (zero is zero in any unit).
fn bare_number(s: &str) -> Option<&str> {
    let t = s.trim();
    let is_number = !t.is_empty() && t.chars().all(|c| c.is_ascii_digit() || c == '.') && t.parse::<f64>().is_ok();
    (is_number && t.parse::<f64>() != Ok(0.0)).then_some(t)
}

pub use runner::affinity::{format_cpu_list, parse_cpu_list};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentages() {
        assert_eq!(parse_percent("5%"), Some(5.0));
        assert_eq!(parse_percent(" 2.5 % "), Some(2.5));
        assert_eq!(parse_percent("5"), None);
        assert_eq!(parse_percent("NaN%"), None);
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size("2GiB"), Ok(2 << 30));
        assert_eq!(parse_size("300MiB"), Ok(300 << 20));
        assert_eq!(parse_size("1GB"), Ok(1_000_000_000));
        assert_eq!(parse_size("1.5GiB"), Ok(3 << 29));
        assert_eq!(parse_size("4096"), Ok(4096));
        assert!(parse_size("lots").is_err());
        assert!(parse_size("3 parsecs").unwrap_err().contains("unknown size unit"));
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("600s"), Ok(Duration::from_secs(600)));
        assert_eq!(parse_duration("2min"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("1ms"), Ok(Duration::from_millis(1)));
        assert_eq!(parse_duration("200us"), Ok(Duration::from_micros(200)));
        assert_eq!(parse_duration("30"), Ok(Duration::from_secs(30)));
        assert!(parse_duration("soon").is_err());
    }

    #[test]
    fn the_experiment_file_says_its_units() {
        assert_eq!(
            parse_duration_with_unit("60").unwrap_err(),
            "\"60\" has no unit; write \"60s\" for seconds (or \"60ms\", \"60min\", \"60h\")"
        );
        assert!(parse_size_with_unit("4").unwrap_err().contains("write \"4GiB\" (GiB = 2^30 bytes), \"4GB\""));
        assert!(parse_size_with_unit(" 1.5 ").unwrap_err().contains("\"1.5GiB\""));
        assert_eq!(parse_duration_with_unit("0"), Ok(Duration::ZERO));
        assert_eq!(parse_duration_with_unit("90s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_size_with_unit("0"), Ok(0));
        assert_eq!(parse_size_with_unit("4096B"), Ok(4096));
        assert!(parse_size_with_unit("lots").unwrap_err().contains("is not a size"));
    }
}
