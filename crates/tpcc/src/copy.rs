//! PostgreSQL's binary COPY format, written by hand so rows go straight from the generator
//! into the wire buffer (no per-field trait objects, no text formatting of numbers).

use bytes::{BufMut, BytesMut};

/// The 19-byte header of a binary COPY stream: signature, flags, header-extension length.
pub const HEADER: &[u8] = b"PGCOPY\n\xff\r\n\0\0\0\0\0\0\0\0\0";

/// Microseconds between the Unix epoch and PostgreSQL's epoch (2000-01-01 UTC).
pub const PG_EPOCH_OFFSET_MICROS: i64 = 946_684_800_000_000;

/// A buffer of binary COPY rows.
pub struct CopyWriter {
    buf: BytesMut,
}

impl CopyWriter {
    /// An empty buffer that starts with the stream header when `header` is true.
    pub fn new(capacity: usize, header: bool) -> CopyWriter {
        let mut buf = BytesMut::with_capacity(capacity);
        if header {
            buf.put_slice(HEADER);
        }
        CopyWriter { buf }
    }

    /// Bytes written so far.
    pub fn len(&self) -> usize {
        self.buf.len()
    }

    /// True when nothing was written.
    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    /// Takes the bytes written so far, leaving the buffer empty.
    pub fn take(&mut self) -> bytes::Bytes {
        self.buf.split().freeze()
    }

    /// Starts a row of `fields` columns.
    #[inline]
    pub fn row(&mut self, fields: i16) {
        self.buf.put_i16(fields);
    }

    /// Ends the stream (the trailer -1).
    pub fn trailer(&mut self) {
        self.buf.put_i16(-1);
    }

    /// A NULL field.
    #[inline]
    pub fn null(&mut self) {
        self.buf.put_i32(-1);
    }

    /// An `int2` field.
    #[inline]
    pub fn i16(&mut self, v: i16) {
        self.buf.put_i32(2);
        self.buf.put_i16(v);
    }

    /// An `int4` field.
    #[inline]
    pub fn i32(&mut self, v: i32) {
        self.buf.put_i32(4);
        self.buf.put_i32(v);
    }

    /// A `text`/`varchar`/`bpchar` field (the bytes must be valid UTF-8 in the database encoding).
    #[inline]
    pub fn text(&mut self, v: &[u8]) {
        self.buf.put_i32(v.len() as i32);
        self.buf.put_slice(v);
    }

    /// A `timestamptz` field given as microseconds since the Unix epoch.
    #[inline]
    pub fn timestamptz_unix_micros(&mut self, unix_micros: i64) {
        self.buf.put_i32(8);
        self.buf.put_i64(unix_micros - PG_EPOCH_OFFSET_MICROS);
    }

    /// A `numeric` field worth `unscaled / 10^scale` (scale at most 8), e.g. `(1234, 2)` is 12.34.
    pub fn numeric(&mut self, unscaled: i64, scale: u16) {
        let mut digits = [0i16; 8];
        let (n, _, _) = numeric_digits(unscaled, scale, &mut digits);
        self.buf.put_i32(8 + 2 * n as i32);
        put_numeric(&mut self.buf, unscaled, scale);
    }
}

/// Writes the binary `numeric` value `unscaled / 10^scale` (without a length word), as the
/// server's `numeric_recv` reads it: digit count, weight, sign, display scale, digits.
pub(crate) fn put_numeric(buf: &mut BytesMut, unscaled: i64, scale: u16) {
    let mut digits = [0i16; 8];
    let (n, weight, sign) = numeric_digits(unscaled, scale, &mut digits);
    buf.put_i16(n as i16);
    buf.put_i16(weight);
    buf.put_u16(sign);
    buf.put_u16(scale);
    for d in &digits[..n] {
        buf.put_i16(*d);
    }
}

/// Splits `unscaled / 10^scale` into base-10000 digits, most significant first, as PostgreSQL's
/// numeric wire format wants them: returns (number of digits, weight of the first digit, sign).
/// Leading and trailing zero digits are left out.
fn numeric_digits(unscaled: i64, scale: u16, out: &mut [i16; 8]) -> (usize, i16, u16) {
    assert!(scale <= 8, "numeric scale {scale} not supported");
    let sign = if unscaled < 0 { 0x4000 } else { 0 };
    let mut abs = u128::from(unscaled.unsigned_abs());
    if abs == 0 {
        return (0, 0, 0);
    }
    // Align the fraction to whole base-10000 digits.
    let frac_groups = scale.div_ceil(4);
    abs *= 10u128.pow(u32::from(frac_groups * 4 - scale));
    let mut groups = Vec::with_capacity(8); // least significant first
    while abs > 0 {
        groups.push((abs % 10_000) as i16);
        abs /= 10_000;
    }
    let total = groups.len() as i16;
    let mut weight = total - 1 - frac_groups as i16;
    // Drop trailing zero digits (least significant); weight counts from the first digit.
    let first_nonzero = groups.iter().position(|&g| g != 0).unwrap_or(0);
    let groups = &groups[first_nonzero..];
    // Leading zero digits cannot occur (the most significant group is non-zero).
    let n = groups.len();
    for (i, g) in groups.iter().rev().enumerate() {
        out[i] = *g;
    }
    if n == 0 {
        weight = 0;
    }
    (n, weight, sign)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn digits(unscaled: i64, scale: u16) -> (Vec<i16>, i16, u16) {
        let mut d = [0i16; 8];
        let (n, w, s) = numeric_digits(unscaled, scale, &mut d);
        (d[..n].to_vec(), w, s)
    }

    #[test]
    fn numeric_digit_groups() {
        // 12.34 -> digits [12, 3400], weight 0
        assert_eq!(digits(1234, 2), (vec![12, 3400], 0, 0));
        // 300000.00 -> [30] weight 1 (30 * 10000)
        assert_eq!(digits(30_000_000, 2), (vec![30], 1, 0));
        // -10.00 -> [10], weight 0, negative
        assert_eq!(digits(-1000, 2), (vec![10], 0, 0x4000));
        // 0.1234 (scale 4) -> [1234], weight -1
        assert_eq!(digits(1234, 4), (vec![1234], -1, 0));
        // 0.05 -> [500] weight -1
        assert_eq!(digits(5, 2), (vec![500], -1, 0));
        // 0 -> no digits
        assert_eq!(digits(0, 2), (vec![], 0, 0));
        // 123456789.01 -> [1, 2345, 6789, 100] weight 2
        assert_eq!(digits(12_345_678_901, 2), (vec![1, 2345, 6789, 100], 2, 0));
        // 50000 (scale 0) -> [5] weight 1
        assert_eq!(digits(50_000, 0), (vec![5], 1, 0));
    }

    #[test]
    fn row_layout() {
        let mut w = CopyWriter::new(64, true);
        w.row(3);
        w.i32(7);
        w.null();
        w.text(b"ab");
        w.trailer();
        let b = w.take();
        assert_eq!(&b[..19], HEADER);
        assert_eq!(&b[19..], &[0, 3, 0, 0, 0, 4, 0, 0, 0, 7, 255, 255, 255, 255, 0, 0, 0, 2, b'a', b'b', 255, 255]);
    }
}
