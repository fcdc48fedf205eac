//! Reading the file into the `raw` structs without stopping at the first value of the wrong type:
//! serde stops there, so each such value is reported, replaced by a stand-in of the type serde
//! expected (at the same place), and the file is read again. Validation then runs on the rest;
//! what it says about a stand-in is dropped, since the value's own error is already reported.

use std::ops::Range;

use serde::Deserialize;
use toml::Spanned;
use toml::de::{DeTable, DeValue};

use crate::error::{ConfigError, Source};
use crate::raw::RawFile;
use crate::spans::toml_error;

/// More wrong types than this in one file are reported up to here.
const MAX_TYPE_ERRORS: usize = 50;

/// What reading found.
pub(crate) struct Read {
    /// The file, when every value of the wrong type could be stood in for.
    pub raw: Option<RawFile>,
    pub errors: Vec<ConfigError>,
    /// (line, column) of each stand-in: validation errors there are about the stand-in.
    pub stand_ins: Vec<(usize, usize)>,
}

pub(crate) fn raw_file(mut doc: Spanned<DeTable<'_>>, src: &Source) -> Read {
    let mut errors = Vec::new();
    let mut stand_ins = Vec::new();
    loop {
        let e = match RawFile::deserialize(toml::de::Deserializer::from(doc.clone())) {
            Ok(raw) => return Read { raw: Some(raw), errors, stand_ins },
            Err(e) => e,
        };
        let mut err = toml_error(src, &e);
        let stood_in = errors.len() < MAX_TYPE_ERRORS
            && e.span()
                .is_some_and(|at| stand_in(e.message()).is_some_and(|value| replace_at(doc.get_mut(), &at, value)));
        if let Some(fix) = unit_fix(&err, src, e.span()) {
            err.message = fix;
        }
        if let (true, Some(l), Some(c)) = (stood_in, err.line, err.column) {
            stand_ins.push((l, c));
        }
        errors.push(err);
        if !stood_in {
            return Read { raw: None, errors, stand_ins };
        }
    }
}

/// A value of the type serde's message says it expected.
fn stand_in(message: &str) -> Option<DeValue<'static>> {
    let expected = message.split("expected ").nth(1)?;
    let text = if message.contains("did not match any variant of untagged enum RawMemoryLimit") {
        "\"unlimited\""
    } else if expected.starts_with("a string") || expected.starts_with("string") {
        "\"\""
    } else if expected.starts_with('u') || expected.starts_with('i') || expected.starts_with("an integer") {
        "1"
    } else if expected.starts_with('f') || expected.starts_with("a float") {
        "1.0"
    } else if expected.starts_with("a boolean") {
        "false"
    } else if expected.starts_with("a sequence") {
        "[]"
    } else {
        return None;
    };
    DeValue::parse(text).ok().map(Spanned::into_inner)
}

/// Replaces the value written at `at` (keeping its place); false when no value is there.
fn replace_at(t: &mut DeTable<'_>, at: &Range<usize>, value: DeValue<'static>) -> bool {
    let mut value = Some(value);
    for (_, v) in t.iter_mut() {
        if replace_in(v, at, &mut value) {
            return true;
        }
    }
    false
}

fn replace_in(v: &mut Spanned<DeValue<'_>>, at: &Range<usize>, value: &mut Option<DeValue<'static>>) -> bool {
    if v.span() == *at {
        if let Some(new) = value.take() {
            *v.get_mut() = new;
        }
        return true;
    }
    // Not by span: a `[[x]]` table spans only its header.
    match v.get_mut() {
        DeValue::Table(t) => t.iter_mut().any(|(_, item)| replace_in(item, at, value)),
        DeValue::Array(a) => a.iter_mut().any(|item| replace_in(item, at, value)),
        _ => false,
    }
}

/// A number where a duration or a size is expected: say how to write it.
fn unit_fix(err: &ConfigError, src: &Source, at: Option<Range<usize>>) -> Option<String> {
    let key = err.key.as_deref()?.rsplit('.').next()?;
    let written = src.text.get(at?)?.trim();
    if written.parse::<f64>().is_err() {
        return None;
    }
    let unit = crate::schema::unit_of(key)?;
    let example = match unit {
        crate::schema::Unit::Duration => format!("\"{written}s\""),
        crate::schema::Unit::Size => format!("\"{written}GiB\" (2^30 bytes) or \"{written}GB\" (10^9 bytes)"),
    };
    Some(format!("{written} is a number; `{key}` is a string with its unit: write {key} = {example}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stand_ins_for_what_serde_expected() {
        let word = |m: &str| stand_in(m).map(|v| v.type_str());
        assert_eq!(word("invalid type: integer `60`, expected a string"), Some("string"));
        assert_eq!(word("invalid type: string \"big\", expected u32"), Some("integer"));
        assert_eq!(word("invalid type: string \"x\", expected a boolean"), Some("boolean"));
        assert_eq!(word("invalid type: string \"x\", expected f64"), Some("float"));
        assert_eq!(word("invalid type: string \"x\", expected a sequence"), Some("array"));
        assert_eq!(word("missing field `name`"), None);
    }
}
