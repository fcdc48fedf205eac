//! CSV as every table writes it: a header from the row struct, numbers at a fixed precision.

use serde::{Serialize, Serializer};

/// A CSV file of `rows`, its header taken from the row struct (also when there are no rows).
pub(crate) fn csv_bytes<R: Serialize + Default>(rows: impl IntoIterator<Item = R>) -> Vec<u8> {
    let mut w = csv::Writer::from_writer(Vec::new());
    let mut any = false;
    for r in rows {
        w.serialize(r).expect("in-memory CSV of a flat row");
        any = true;
    }
    let bytes = w.into_inner().expect("in-memory CSV");
    if any {
        return bytes;
    }
    // No rows: the header alone, taken from a blank row's output.
    let mut w = csv::Writer::from_writer(Vec::new());
    w.serialize(R::default()).expect("in-memory CSV of a flat row");
    let blank = w.into_inner().expect("in-memory CSV");
    let end = blank.iter().position(|b| *b == b'\n').map_or(blank.len(), |i| i + 1);
    blank[..end].to_vec()
}

/// Numbers in CSV: fixed precision, empty for unknown.
pub(crate) fn num(v: f64, decimals: usize) -> String {
    if v.is_finite() { format!("{v:.decimals$}") } else { String::new() }
}

/// A number written with `D` decimals, empty when not finite (see [`num`]).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct Fixed<const D: usize>(pub f64);

impl<const D: usize> Serialize for Fixed<D> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&num(self.0, D))
    }
}
