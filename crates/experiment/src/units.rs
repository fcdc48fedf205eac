//! Sizes (`2GiB`, `300MiB`, `1GB`), durations (`600s`, `2min`, `1ms`) and percentages (`5%`) as
//! people write them.

use std::time::Duration;

/// Parses a size: binary units (`KiB`, `MiB`, `GiB`, `TiB`) are powers of 1024, decimal units
/// (`kB`, `MB`, `GB`, `TB`) powers of 1000, a bare number is bytes.
/// A percentage written `5%` or `2.5 %`, as its number; None when it is not one (or not finite).
pub fn parse_percent(text: &str) -> Option<f64> {
    let v: f64 = text.trim().strip_suffix('%')?.trim().parse().ok()?;
    v.is_finite().then_some(v)
}

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

/// Parses a duration: `us`, `ms`, `s`, `m`/`min`, `h`; a bare number is seconds.
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
}
