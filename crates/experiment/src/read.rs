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
    /// Where each stand-in is: validation errors there are about the stand-in.
    pub stand_ins: Vec<StandIn>,
}

/// A stand-in's place (line, column), and for a missing key the key (it stands at its table's
/// header, where other errors about the table are too).
pub(crate) struct StandIn {
    pub line: usize,
    pub column: usize,
    pub missing: Option<&'static str>,
}

impl StandIn {
    /// Whether `e` is about this stand-in.
    pub fn explains(&self, e: &ConfigError) -> bool {
        (e.line, e.column) == (Some(self.line), Some(self.column))
            && self.missing.is_none_or(|k| e.key.as_deref().is_some_and(|key| key.ends_with(&format!(".{k}"))))
    }
}

pub(crate) fn raw_file(mut doc: Spanned<DeTable<'_>>, src: &Source) -> Read {
    let mut errors = Vec::new();
    let mut stand_ins = Vec::new();
    // A missing key stood in for, and which of MISSING_STAND_INS it has now.
    let mut trying: Option<(Range<usize>, &'static str, usize)> = None;
    loop {
        let e = match RawFile::deserialize(toml::de::Deserializer::from(doc.clone())) {
            Ok(raw) => return Read { raw: Some(raw), errors, stand_ins },
            Err(e) => e,
        };
        // The stand-in for a missing key has the wrong type: try the next.
        if let Some((at, field, n)) = trying.take()
            && e.span().as_ref() == Some(&at)
            && e.message().starts_with("invalid type")
            && let Some(next) = MISSING_STAND_INS.get(n + 1)
            && put_at(doc.get_mut(), &at, field, next)
        {
            trying = Some((at, field, n + 1));
            continue;
        }
        let mut err = toml_error(src, &e);
        let mut missing = None;
        let stood_in = errors.len() < MAX_TYPE_ERRORS
            && e.span().is_some_and(|at| match missing_field(e.message()) {
                Some(field) => {
                    let put = put_at(doc.get_mut(), &at, field, MISSING_STAND_INS[0]);
                    if put {
                        trying = Some((at, field, 0));
                        missing = Some(field);
                        err.key = Some(err.key.take().map_or(field.to_string(), |t| format!("{t}.{field}")));
                        err.message = format!("`{field}` is missing: it is required here (docs/experiment-file.md)");
                    }
                    put
                }
                None => stand_in(e.message()).is_some_and(|value| replace_at(doc.get_mut(), &at, value)),
            });
        if let Some(fix) = unit_fix(&err, src, e.span()) {
            err.message = fix;
        }
        if let (true, Some(line), Some(column)) = (stood_in, err.line, err.column) {
            stand_ins.push(StandIn { line, column, missing });
        }
        errors.push(err);
        if !stood_in {
            return Read { raw: None, errors, stand_ins };
        }
    }
}

/// Stand-ins for a missing key, tried in turn until serde takes one.
const MISSING_STAND_INS: [&str; 4] = ["\"\"", "[]", "1", "false"];

/// The key serde says is missing, as one of the file format's keys.
fn missing_field(message: &str) -> Option<&'static str> {
    let field = message.strip_prefix("missing field `")?.split('`').next()?;
    crate::schema::file().all().into_iter().flat_map(|t| t.keys.iter().copied()).find(|k| *k == field)
}

/// Puts `key = <text>` into the table written at `at` (with that place).
fn put_at(t: &mut DeTable<'_>, at: &Range<usize>, key: &'static str, text: &'static str) -> bool {
    let Some(value) = DeValue::parse(text).ok().map(Spanned::into_inner) else { return false };
    match table_at(t, at) {
        Some(table) => {
            table.insert(Spanned::new(at.clone(), std::borrow::Cow::Borrowed(key)), Spanned::new(at.clone(), value));
            true
        }
        None => false,
    }
}

fn table_at<'t, 'i>(t: &'t mut DeTable<'i>, at: &Range<usize>) -> Option<&'t mut DeTable<'i>> {
    t.iter_mut().find_map(|(_, v)| table_in(v, at))
}

fn table_in<'t, 'i>(v: &'t mut Spanned<DeValue<'i>>, at: &Range<usize>) -> Option<&'t mut DeTable<'i>> {
    let here = v.span() == *at;
    match v.get_mut() {
        DeValue::Table(t) => {
            if here {
                Some(t)
            } else {
                table_at(t, at)
            }
        }
        DeValue::Array(a) => a.iter_mut().find_map(|item| table_in(item, at)),
        _ => None,
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
