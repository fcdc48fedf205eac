//! Places in the file: byte spans of values, and the dotted key path at a place (for errors the
//! TOML parser reports, which carry a span but no key).

use std::ops::Range;

use toml::Spanned;

use crate::error::{ConfigError, Source};

/// The span of a value, as the errors take it.
pub(crate) fn span<T>(s: &Spanned<T>) -> Option<Range<usize>> {
    Some(s.span())
}

/// A TOML or schema error from the parser, with its line and the key it concerns.
pub(crate) fn toml_error(src: &Source, e: &toml::de::Error) -> ConfigError {
    let span = e.span();
    let key = span.as_ref().and_then(|s| path_at(src.text, s.start));
    let mut message = e.message().trim().to_string();
    if message.contains("untagged enum RawMemoryLimit") {
        message = "a memory limit is \"unlimited\", a size such as \"1GiB\", or a table such as { limit = \"1GiB\", settings = { shared_buffers = \"256MB\" } }".into();
    }
    // serde names Rust's types; the file has TOML's.
    for (rust, toml) in [
        ("expected u16", "expected a whole number"),
        ("expected u32", "expected a whole number"),
        ("expected u64", "expected a whole number"),
        ("expected i64", "expected a whole number"),
        ("expected f64", "expected a number"),
        ("expected a sequence", "expected a list ([...])"),
    ] {
        if let Some(head) = message.strip_suffix(rust) {
            message = format!("{head}{toml}");
        }
    }
    if message.starts_with("unknown field") {
        message.push_str("; remove it or check its spelling");
    }
    src.error(span, key, message)
}

/// The dotted key path at a byte offset (`workload[rw].emulate.size`). Tables from `[[x]]` only
/// span their header, so every key is searched, not only containing spans.
fn path_at(text: &str, offset: usize) -> Option<String> {
    let root = toml::de::DeTable::parse(text).ok()?;
    find_in_table(root.get_ref(), offset).map(|segs| segs.join("").trim_start_matches('.').to_string())
}

fn find_in_table(t: &toml::de::DeTable, offset: usize) -> Option<Vec<String>> {
    for (k, v) in t.iter() {
        let key = format!(".{}", k.get_ref());
        if k.span().contains(&offset) {
            return Some(vec![key]);
        }
        if let Some(mut rest) = find_in_value(v, offset) {
            rest.insert(0, key);
            return Some(rest);
        }
    }
    None
}

fn find_in_value(v: &toml::Spanned<toml::de::DeValue>, offset: usize) -> Option<Vec<String>> {
    match v.get_ref() {
        toml::de::DeValue::Table(t) => find_in_table(t, offset),
        toml::de::DeValue::Array(a) => {
            for (i, item) in a.iter().enumerate() {
                let label = match item.get_ref() {
                    toml::de::DeValue::Table(t) => t
                        .iter()
                        .find(|(k, _)| k.get_ref() == "name")
                        .and_then(|(_, v)| v.get_ref().as_str().map(str::to_string))
                        .unwrap_or_else(|| i.to_string()),
                    _ => i.to_string(),
                };
                if let Some(mut rest) = find_in_value(item, offset) {
                    rest.insert(0, format!("[{label}]"));
                    return Some(rest);
                }
                if item.span().contains(&offset) {
                    return Some(vec![format!("[{label}]")]);
                }
            }
            // The parser may put an error about an item on the whole array (untagged enums do).
            v.span().contains(&offset).then(Vec::new)
        }
        _ => v.span().contains(&offset).then(Vec::new),
    }
}
