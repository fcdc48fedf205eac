//! The keys each table of the experiment file may hold, derived once from the `raw` structs (the
//! field names serde itself matches), with which keys are tables in turn. Used to find every
//! unknown key of a file (with "did you mean" for a near miss) before serde reads it, and by the
//! test that keeps `docs/experiment-file.md` complete.

use std::sync::OnceLock;

use serde::Deserialize;
use serde::de::{self, Visitor};

use crate::error::{ConfigError, Source};
use crate::raw;

/// One table of the file.
pub(crate) struct Table {
    /// As the file writes its header: `[experiment]`, `[[device]]`, `[device.emulate]`.
    pub heading: &'static str,
    /// Every key it may hold, as serde names them.
    pub keys: &'static [&'static str],
    /// The keys whose values are tables (or lists of tables) with keys of their own.
    pub children: Vec<(&'static str, Child)>,
}

pub(crate) enum Child {
    /// A table with fixed keys.
    Table(Table),
    /// A list whose items, when they are tables, have fixed keys (`[[device]]`, `builds`).
    Items(Table),
    /// A table of free keys (PostgreSQL settings, sysctls, tablespace roles).
    Free,
}

impl Table {
    fn new(heading: &'static str, keys: &'static [&'static str], children: Vec<(&'static str, Child)>) -> Table {
        for (k, _) in &children {
            assert!(keys.contains(k), "{heading} has no key {k}");
        }
        Table { heading, keys, children }
    }

    fn child(&self, key: &str) -> Option<&Child> {
        self.children.iter().find(|(k, _)| *k == key).map(|(_, c)| c)
    }

    /// This table and every table below it, depth first.
    pub fn all(&self) -> Vec<&Table> {
        let mut out = vec![self];
        for (_, c) in &self.children {
            if let Child::Table(t) | Child::Items(t) = c {
                out.extend(t.all());
            }
        }
        out
    }
}

/// The experiment file's tables, from the root (whose keys are the sections).
pub(crate) fn file() -> &'static Table {
    static FILE: OnceLock<Table> = OnceLock::new();
    FILE.get_or_init(|| {
        use Child::{Free, Items, Table as T};
        let throttle = |h| Table::new(h, fields::<raw::RawThrottle>(), vec![]);
        let memory_limit = |h| Table::new(h, fields::<raw::RawMemoryLimitTable>(), vec![("settings", Free)]);
        let measurement = |h| Table::new(h, fields::<raw::RawMeasurement>(), vec![]);
        Table::new(
            "the top level",
            fields::<raw::RawFile>(),
            vec![
                (
                    "experiment",
                    T(Table::new(
                        "[experiment]",
                        fields::<raw::RawExperiment>(),
                        vec![(
                            "golden_copy",
                            T(Table::new("[experiment.golden_copy]", fields::<raw::RawGoldenCopy>(), vec![])),
                        )],
                    )),
                ),
                (
                    "postgres",
                    T(Table::new(
                        "[postgres]",
                        fields::<raw::RawPostgres>(),
                        vec![
                            ("settings", Free),
                            ("memory_limits", Items(memory_limit("[postgres.memory_limits]"))),
                            ("builds", Items(Table::new("[[postgres.builds]]", fields::<raw::RawBuild>(), vec![]))),
                        ],
                    )),
                ),
                (
                    "device",
                    Items(Table::new(
                        "[[device]]",
                        fields::<raw::RawDevice>(),
                        vec![
                            ("throttle", T(throttle("[device.throttle]"))),
                            (
                                "emulate",
                                T(Table::new(
                                    "[device.emulate]",
                                    fields::<raw::RawDeviceEmulate>(),
                                    vec![("throttle", T(throttle("[device.emulate.throttle]")))],
                                )),
                            ),
                        ],
                    )),
                ),
                (
                    "placement",
                    Items(Table::new("[[placement]]", fields::<raw::RawPlacement>(), vec![("tablespaces", Free)])),
                ),
                ("workload", Items(Table::new("[[workload]]", fields::<raw::RawWorkload>(), vec![]))),
                (
                    "emulate",
                    T(Table::new(
                        "[emulate]",
                        fields::<raw::RawEmulate>(),
                        vec![
                            ("settings", Free),
                            ("memory_limits", Items(memory_limit("[emulate.memory_limits]"))),
                            ("measurement", T(measurement("[emulate.measurement]"))),
                        ],
                    )),
                ),
                ("kernel", T(Table::new("[kernel]", fields::<raw::RawKernel>(), vec![("sysctls", Free)]))),
                ("fault", Items(Table::new("[[fault]]", fields::<raw::RawFault>(), vec![]))),
                ("measurement", T(measurement("[measurement]"))),
                (
                    "claim",
                    Items(Table::new(
                        "[[claim]]",
                        fields::<raw::RawClaim>(),
                        vec![("emulate", T(Table::new("[claim.emulate]", fields::<raw::RawClaimEmulate>(), vec![])))],
                    )),
                ),
                ("host", Items(Table::new("[[host]]", fields::<raw::RawHost>(), vec![]))),
            ],
        )
    })
}

/// The unit a key's value carries, for keys that take one (a string with its unit).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Unit {
    Duration,
    Size,
}

/// The unit of a key, by its name (the same name means the same kind of value in every table).
pub(crate) fn unit_of(key: &str) -> Option<Unit> {
    const DURATIONS: [&str; 9] =
        ["duration", "ramp_up", "slice", "warm_up", "budget", "device_probe", "watchdog_grace", "after", "latency"];
    const SIZES: [&str; 6] = ["size", "device_size", "read_bandwidth", "write_bandwidth", "limit", "memory_limit"];
    if DURATIONS.contains(&key) {
        Some(Unit::Duration)
    } else if SIZES.contains(&key) {
        Some(Unit::Size)
    } else {
        None
    }
}

/// Reports every key of `doc` that its table does not have, and takes it out (so that serde, which
/// would stop at the first, reads the rest); a near miss of a key the table lacks is put back
/// under that key.
pub(crate) fn take_unknown_keys(doc: &mut toml::de::DeTable, root: &Table, src: &Source) -> Vec<ConfigError> {
    let mut out = Vec::new();
    walk(doc, root, root, "", src, &mut out);
    out
}

/// A settings profile, `configs/postgres/<name>.toml`.
pub(crate) fn profile() -> &'static Table {
    static PROFILE: OnceLock<Table> = OnceLock::new();
    PROFILE.get_or_init(|| {
        Table::new(
            "a settings profile",
            fields::<raw::RawProfile>(),
            vec![("settings", Child::Free), ("optional_settings", Child::Free), ("skipped", Child::Free)],
        )
    })
}

fn walk(t: &mut toml::de::DeTable, root: &Table, schema: &Table, path: &str, src: &Source, out: &mut Vec<ConfigError>) {
    let join = |k: &str| if path.is_empty() { k.to_string() } else { format!("{path}.{k}") };
    let unknown: Vec<(String, std::ops::Range<usize>)> = t
        .iter()
        .filter(|(k, _)| !schema.keys.contains(&k.get_ref().as_ref()))
        .map(|(k, _)| (k.get_ref().to_string(), k.span()))
        .collect();
    for (k, at) in unknown {
        out.push(src.error(Some(at), Some(join(&k)), unknown_key_message(&k, root, schema)));
        let Some((written, value)) = t.remove_entry(k.as_str()) else { continue };
        // A near miss is read as the key it nearly is, so that what depends on it is checked
        // too (and a required key is not reported missing as well).
        if let Some(near) = nearest(&k, schema.keys)
            && !t.contains_key(near)
        {
            t.insert(toml::Spanned::new(written.span(), std::borrow::Cow::Borrowed(near)), value);
        }
    }
    for (k, v) in t.iter_mut() {
        let key = join(k.get_ref());
        match (schema.child(k.get_ref()), v.get_mut()) {
            (Some(Child::Table(s)), toml::de::DeValue::Table(inner)) => walk(inner, root, s, &key, src, out),
            (Some(Child::Items(s)), toml::de::DeValue::Array(items)) => {
                for (i, item) in items.iter_mut().enumerate() {
                    if let toml::de::DeValue::Table(inner) = item.get_mut() {
                        let label = inner
                            .get("name")
                            .and_then(|n| n.get_ref().as_str().map(str::to_string))
                            .unwrap_or_else(|| i.to_string());
                        walk(inner, root, s, &format!("{key}[{label}]"), src, out);
                    }
                }
            }
            _ => {}
        }
    }
}

/// "did you mean" for a near miss among the table's keys; else where the key belongs, if it is
/// a key of another table; else the keys the table has.
fn unknown_key_message(key: &str, root: &Table, schema: &Table) -> String {
    if let Some(near) = nearest(key, schema.keys) {
        return format!("unknown key `{key}` in {}; did you mean `{near}`?", schema.heading);
    }
    let elsewhere: Vec<&str> = root.all().into_iter().filter(|t| t.keys.contains(&key)).map(|t| t.heading).collect();
    if !elsewhere.is_empty() {
        return format!(
            "unknown key `{key}` in {}: it is a key of {}; move it there",
            schema.heading,
            elsewhere.join(" and ")
        );
    }
    format!(
        "unknown key `{key}` in {}; its keys are {} (docs/experiment-file.md lists them all)",
        schema.heading,
        schema.keys.join(", ")
    )
}

/// The key nearest to `key` in edit distance, when it is near enough to be a slip of the finger
/// (at most a third of the key's length, and at least one edit).
fn nearest(key: &str, candidates: &[&'static str]) -> Option<&'static str> {
    let key_l = key.to_ascii_lowercase();
    let limit = (key.chars().count() / 3).max(1);
    candidates
        .iter()
        .map(|c| (edit_distance(&key_l, c), *c))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

/// Optimal string alignment distance: insertions, deletions, substitutions and swaps of two
/// neighbours each cost one.
fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut v = (d[i - 1][j] + 1).min(d[i][j - 1] + 1).min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                v = v.min(d[i - 2][j - 2] + 1);
            }
            d[i][j] = v;
        }
    }
    d[a.len()][b.len()]
}

/// The field names a struct's derived `Deserialize` matches (serde hands them to
/// `deserialize_struct`, which this deserializer records and then declines).
fn fields<'de, T: Deserialize<'de>>() -> &'static [&'static str] {
    let mut found = None;
    let _ = T::deserialize(FieldProbe(&mut found));
    found.unwrap_or_else(|| panic!("{} is not a struct", std::any::type_name::<T>()))
}

struct FieldProbe<'a>(&'a mut Option<&'static [&'static str]>);

impl<'de> de::Deserializer<'de> for FieldProbe<'_> {
    type Error = de::value::Error;

    fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Self::Error> {
        Err(de::Error::custom("not a struct"))
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        _visitor: V,
    ) -> Result<V::Value, Self::Error> {
        *self.0 = Some(fields);
        Err(de::Error::custom("fields recorded"))
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf option unit
        unit_struct newtype_struct seq tuple tuple_struct map enum identifier ignored_any
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn near_misses() {
        let keys = fields::<raw::RawExperiment>();
        assert_eq!(nearest("repetitons", keys), Some("repetitions"));
        assert_eq!(nearest("Repetitions", keys), Some("repetitions"));
        assert_eq!(nearest("baselin", keys), Some("baseline"));
        assert_eq!(nearest("colour", keys), None);
        assert_eq!(nearest("mount_option", fields::<raw::RawDevice>()), Some("mount_options"));
        assert_eq!(edit_distance("ab", "ba"), 1);
    }

    /// docs/experiment-file.md documents every key of every table: a `## [table]` heading per
    /// table (`## [[device]]`, `## [device.emulate]`), a `### \`key\`` heading per key below it,
    /// and nothing it documents is not a key.
    #[test]
    fn the_reference_documents_every_key() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/experiment-file.md");
        let doc = std::fs::read_to_string(&path).expect("docs/experiment-file.md");
        let mut documented: std::collections::BTreeMap<String, Vec<String>> = Default::default();
        let mut section = None;
        for line in doc.lines() {
            if let Some(h) = line.strip_prefix("## ") {
                let table = h.split_whitespace().next().unwrap_or("").trim_matches(['[', ']', '`']).to_string();
                documented.entry(table.clone()).or_default();
                section = Some(table);
            } else if let Some(k) = line.strip_prefix("### ") {
                let table = section.clone().expect("a key heading below a table heading");
                documented.get_mut(&table).unwrap().push(k.trim().trim_matches('`').to_string());
            }
        }
        // A key that takes a unit says so in the first line of its entry.
        let mut entries: std::collections::BTreeMap<(String, String), String> = Default::default();
        let mut at: Option<(String, String)> = None;
        for line in doc.lines() {
            if let Some(h) = line.strip_prefix("## ") {
                let table = h.split_whitespace().next().unwrap_or("").trim_matches(['[', ']', '`']).to_string();
                at = Some((table, String::new()));
            } else if let Some(k) = line.strip_prefix("### ") {
                let table = at.clone().map(|(t, _)| t).unwrap_or_default();
                at = Some((table, k.trim().trim_matches('`').to_string()));
            } else if let Some(place) = at.clone().filter(|(_, k)| !k.is_empty())
                && !entries.contains_key(&place)
                && !line.trim().is_empty()
            {
                entries.insert(place, line.to_string());
            }
        }
        let mut unit_not_said = Vec::new();
        for ((table, key), first) in &entries {
            let said = match unit_of(key) {
                _ if first.starts_with("*As [") => true,
                Some(Unit::Duration) => first.contains("duration"),
                Some(Unit::Size) => first.contains("size"),
                None => true,
            };
            if !said {
                unit_not_said.push(format!("{table}.{key}"));
            }
        }
        assert!(unit_not_said.is_empty(), "entries that do not say their unit: {}", unit_not_said.join(", "));
        let mut missing = Vec::new();
        let mut unknown = Vec::new();
        for key in file().keys {
            if !documented.contains_key(*key) {
                missing.push(format!("the section [{key}]"));
            }
        }
        for t in file().all().into_iter().skip(1) {
            let table = t.heading.trim_matches(['[', ']']);
            let keys = documented.get(table).cloned().unwrap_or_default();
            missing.extend(t.keys.iter().filter(|k| !keys.iter().any(|d| d == *k)).map(|k| format!("{table}.{k}")));
            unknown.extend(keys.iter().filter(|d| !t.keys.contains(&d.as_str())).map(|d| format!("{table}.{d}")));
        }
        assert!(missing.is_empty(), "{} does not document: {}", path.display(), missing.join(", "));
        assert!(
            unknown.is_empty(),
            "{} documents keys the file format does not have: {}",
            path.display(),
            unknown.join(", ")
        );
    }

    #[test]
    fn the_schema_has_every_field_of_the_raw_structs() {
        let f = file();
        assert!(f.keys.contains(&"device") && f.keys.contains(&"host"));
        let device = f.all().into_iter().find(|t| t.heading == "[[device]]").unwrap();
        assert!(device.keys.contains(&"mkfs_options") && device.keys.contains(&"allow_wipe"));
        let headings: Vec<&str> = f.all().iter().map(|t| t.heading).collect();
        assert!(headings.contains(&"[device.emulate.throttle]") && headings.contains(&"[emulate.measurement]"));
    }
}
