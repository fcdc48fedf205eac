//! TPC-C's random-number rules (clause 2.1.6 and 4.3.2): uniform ranges, NURand with its
//! constants, customer last names, alphanumeric and numeric strings, zip codes.

/// A small, fast, seedable generator (wyrand). Not cryptographic; TPC-C only needs uniform,
/// independent draws, and a seed makes tests reproducible.
#[derive(Clone, Debug)]
pub struct Rng {
    state: u64,
}

impl Rng {
    /// A generator with a fixed seed (same seed, same sequence).
    pub fn seeded(seed: u64) -> Rng {
        let mut r = Rng { state: seed ^ 0x9e37_79b9_7f4a_7c15 };
        r.next_u64();
        r
    }

    /// A generator seeded from the clock, the process id and `salt`.
    pub fn from_entropy(salt: u64) -> Rng {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0);
        Rng::seeded(nanos ^ (u64::from(std::process::id()) << 32) ^ salt.wrapping_mul(0xff51_afd7_ed55_8ccd))
    }

    /// The next 64 random bits.
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0xa076_1d64_78bd_642f);
        let t = u128::from(self.state) * u128::from(self.state ^ 0xe703_7ed1_a0b4_28db);
        ((t >> 64) as u64) ^ (t as u64)
    }

    /// Uniform in `[lo, hi]` (both inclusive), TPC-C's `random(x, y)`.
    #[inline]
    pub fn range(&mut self, lo: i64, hi: i64) -> i64 {
        debug_assert!(lo <= hi);
        let n = (hi - lo) as u64 + 1;
        lo + ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as i64
    }

    /// [`Rng::range`] for `i32` bounds.
    #[inline]
    pub fn range_i32(&mut self, lo: i32, hi: i32) -> i32 {
        self.range(i64::from(lo), i64::from(hi)) as i32
    }

    /// Uniform in `[0, 1)`.
    #[inline]
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// TPC-C's non-uniform random function (clause 2.1.6):
    /// `NURand(A, x, y) = (((random(0, A) | random(x, y)) + C) % (y - x + 1)) + x`.
    #[inline]
    pub fn nurand(&mut self, a: i64, x: i64, y: i64, c: i64) -> i64 {
        (((self.range(0, a) | self.range(x, y)) + c) % (y - x + 1)) + x
    }

    /// Appends a random a-string (alphanumeric, clause 4.3.2.2) of a length uniform in
    /// `[min_len, max_len]`.
    pub fn astring_into(&mut self, out: &mut Vec<u8>, min_len: usize, max_len: usize) {
        let len = self.range(min_len as i64, max_len as i64) as usize;
        self.alnum_into(out, len);
    }

    /// Appends exactly `len` random alphanumeric characters.
    #[inline]
    pub fn alnum_into(&mut self, out: &mut Vec<u8>, len: usize) {
        const ALNUM: &[u8; 62] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
        let mut left = len;
        while left > 0 {
            // Five characters from one 64-bit draw: each step takes the integer part of
            // x * 62 as a digit and keeps the fraction (about 6 of 64 bits per character).
            let mut x = self.next_u64();
            for _ in 0..left.min(5) {
                let m = u128::from(x) * 62;
                out.push(ALNUM[(m >> 64) as usize]);
                x = m as u64;
            }
            left -= left.min(5);
        }
    }

    /// Appends exactly `len` random decimal digits (an n-string).
    #[inline]
    pub fn digits_into(&mut self, out: &mut Vec<u8>, len: usize) {
        for _ in 0..len {
            out.push(b'0' + self.range(0, 9) as u8);
        }
    }

    /// Appends a zip code: four random digits then `11111` (clause 4.3.2.7).
    pub fn zip_into(&mut self, out: &mut Vec<u8>) {
        self.digits_into(out, 4);
        out.extend_from_slice(b"11111");
    }

    /// Appends a random a-string of `[min_len, max_len]` characters in which, for 10% of
    /// calls, `ORIGINAL` is put at a random position (I_DATA and S_DATA, clause 4.3.3.1).
    pub fn data_with_original_into(&mut self, out: &mut Vec<u8>, min_len: usize, max_len: usize) {
        let start = out.len();
        self.astring_into(out, min_len, max_len);
        if self.range(1, 10) == 1 {
            let len = out.len() - start;
            let pos = self.range(0, (len - 8) as i64) as usize;
            out[start + pos..start + pos + 8].copy_from_slice(b"ORIGINAL");
        }
    }
}

/// The ten syllables of customer last names (clause 4.3.2.3).
pub const SYLLABLES: [&str; 10] = ["BAR", "OUGHT", "ABLE", "PRI", "PRES", "ESE", "ANTI", "CALLY", "ATION", "EING"];

/// Appends the last name for `num` in `[0, 999]`: the syllables of its three digits.
pub fn last_name_into(out: &mut Vec<u8>, num: i64) {
    debug_assert!((0..=999).contains(&num));
    out.extend_from_slice(SYLLABLES[(num / 100) as usize].as_bytes());
    out.extend_from_slice(SYLLABLES[((num / 10) % 10) as usize].as_bytes());
    out.extend_from_slice(SYLLABLES[(num % 10) as usize].as_bytes());
}

/// The last name for `num` in `[0, 999]`.
pub fn last_name(num: i64) -> String {
    let mut v = Vec::with_capacity(16);
    last_name_into(&mut v, num);
    String::from_utf8(v).expect("syllables are ASCII")
}

/// `A` of NURand for customer last names.
pub const A_C_LAST: i64 = 255;
/// `A` of NURand for customer ids.
pub const A_C_ID: i64 = 1023;
/// `A` of NURand for item ids.
pub const A_OL_I_ID: i64 = 8191;

/// True when `c_run` may be used for C_LAST at run time with `c_load` used at load time
/// (clause 2.1.6.1): the difference is in `[65, 119]` and is neither 96 nor 112.
pub fn valid_c_last_delta(c_load: i64, c_run: i64) -> bool {
    let delta = (c_run - c_load).abs();
    (65..=119).contains(&delta) && delta != 96 && delta != 112
}

/// Picks the run-time C for C_LAST in `[0, 255]` satisfying [`valid_c_last_delta`].
pub fn pick_c_last_run(rng: &mut Rng, c_load: i64) -> i64 {
    let candidates: Vec<i64> = (0..=A_C_LAST).filter(|&c| valid_c_last_delta(c_load, c)).collect();
    candidates[rng.range(0, candidates.len() as i64 - 1) as usize]
}

/// The NURand constants in force for one run (the same for every virtual user).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct NurandConstants {
    /// C for C_LAST.
    pub c_last: i64,
    /// C for C_ID.
    pub c_id: i64,
    /// C for OL_I_ID.
    pub ol_i_id: i64,
}

impl NurandConstants {
    /// Random constants for a load: each C uniform in `[0, A]`.
    pub fn for_load(rng: &mut Rng) -> NurandConstants {
        NurandConstants { c_last: rng.range(0, A_C_LAST), c_id: rng.range(0, A_C_ID), ol_i_id: rng.range(0, A_OL_I_ID) }
    }

    /// Constants for a run against a database loaded with `load`: C_LAST obeys the C-Run /
    /// C-Load rule; the C of C_ID and OL_I_ID are drawn afresh.
    pub fn for_run(rng: &mut Rng, load: &NurandConstants) -> NurandConstants {
        NurandConstants {
            c_last: pick_c_last_run(rng, load.c_last),
            c_id: rng.range(0, A_C_ID),
            ol_i_id: rng.range(0, A_OL_I_ID),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn range_is_inclusive_and_covers_all_values() {
        let mut r = Rng::seeded(1);
        let mut seen = [0u32; 11];
        for _ in 0..100_000 {
            let v = r.range(5, 15);
            assert!((5..=15).contains(&v));
            seen[(v - 5) as usize] += 1;
        }
        for (i, n) in seen.iter().enumerate() {
            // Each of 11 values expected ~9091 times.
            assert!(*n > 8500 && *n < 9700, "value {} drawn {n} times", i + 5);
        }
    }

    #[test]
    fn nurand_stays_in_range_and_is_skewed() {
        let mut r = Rng::seeded(2);
        let mut counts = vec![0u32; 3001];
        for _ in 0..300_000 {
            let v = r.nurand(A_C_ID, 1, 3000, 259);
            assert!((1..=3000).contains(&v));
            counts[v as usize] += 1;
        }
        let max = *counts.iter().max().unwrap();
        let min = *counts[1..].iter().min().unwrap();
        // Uniform would give ~100 each; NURand's OR makes some ids several times likelier.
        assert!(max > 3 * min.max(1), "max {max} min {min}");
        let mut r = Rng::seeded(3);
        for _ in 0..100_000 {
            let v = r.nurand(A_OL_I_ID, 1, 100_000, 7911);
            assert!((1..=100_000).contains(&v));
            let n = r.nurand(A_C_LAST, 0, 999, 123);
            assert!((0..=999).contains(&n));
        }
    }

    #[test]
    fn last_names_follow_the_syllable_rule() {
        assert_eq!(last_name(0), "BARBARBAR");
        assert_eq!(last_name(371), "PRICALLYOUGHT");
        assert_eq!(last_name(999), "EINGEINGEING");
        for n in 0..1000 {
            assert!(last_name(n).len() <= 16);
        }
    }

    #[test]
    fn c_run_obeys_the_delta_rule() {
        assert!(!valid_c_last_delta(100, 100 + 96));
        assert!(!valid_c_last_delta(100, 100 - 112));
        assert!(!valid_c_last_delta(100, 164));
        assert!(valid_c_last_delta(100, 165));
        assert!(valid_c_last_delta(200, 81));
        assert!(!valid_c_last_delta(200, 80));
        let mut r = Rng::seeded(4);
        for c_load in 0..=A_C_LAST {
            for _ in 0..20 {
                let load = NurandConstants { c_last: c_load, c_id: 0, ol_i_id: 0 };
                let run = NurandConstants::for_run(&mut r, &load);
                assert!((0..=A_C_LAST).contains(&run.c_last));
                assert!(valid_c_last_delta(c_load, run.c_last), "{c_load} -> {}", run.c_last);
                assert!((0..=A_C_ID).contains(&run.c_id));
                assert!((0..=A_OL_I_ID).contains(&run.ol_i_id));
            }
        }
    }

    #[test]
    fn strings_have_the_asked_lengths_and_alphabet() {
        let mut r = Rng::seeded(5);
        let mut with_original = 0;
        for _ in 0..10_000 {
            let mut v = Vec::new();
            r.astring_into(&mut v, 8, 16);
            assert!((8..=16).contains(&v.len()));
            assert!(v.iter().all(|c| c.is_ascii_alphanumeric()));
            let mut z = Vec::new();
            r.zip_into(&mut z);
            assert_eq!(z.len(), 9);
            assert!(z.ends_with(b"11111") && z.iter().all(u8::is_ascii_digit));
            let mut d = Vec::new();
            r.data_with_original_into(&mut d, 26, 50);
            assert!((26..=50).contains(&d.len()));
            if d.windows(8).any(|w| w == b"ORIGINAL") {
                with_original += 1;
            }
        }
        // 10% +- a little.
        assert!((900..=1100).contains(&with_original), "{with_original}");
    }
}
