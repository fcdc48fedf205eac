//! Parsers for `wipefs --no-act` (table) and `wipefs -J` (JSON) output.

use serde::Serialize;
use serde_json::Value;

use super::{InspectError, str_field};

/// One signature that wipefs found (or would erase).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WipefsSignature {
    /// Byte offset of the magic on the device (printed in hex).
    pub offset: u64,
    /// `"xfs"`, `"ext4"`, `"gpt"`, `"PMBR"`, `"dos"`, ...
    pub kind: String,
    pub uuid: Option<String>,
    pub label: Option<String>,
}

const TOOL: &str = "wipefs";

/// Reads the table that `wipefs --no-act DEV` (or plain `wipefs DEV`)
/// prints:
///
/// ```text
/// DEVICE  OFFSET TYPE UUID                                 LABEL
/// loop0p1 0x0    xfs  eeee9378-0741-40c7-9261-fa9fd17f6f74
/// ```
///
/// Columns are cut at the header's positions, so empty UUID/LABEL cells
/// and labels with spaces are read correctly. Also accepts the lines of
/// `wipefs --all --no-act` (`loop0p1: 4 bytes were erased at offset
/// 0x00000000 (xfs): 58 46 53 42`), which carry no UUID or label. Empty
/// output (nothing found) gives an empty list.
pub fn parse_table(text: &str) -> Result<Vec<WipefsSignature>, InspectError> {
    let mut out = Vec::new();
    let mut columns: Option<Vec<(String, usize)>> = None;
    for line in text.lines() {
        let line = line.trim_end_matches('\r');
        if line.trim().is_empty() {
            continue;
        }
        if let Some(sig) = parse_erased_line(line)? {
            out.push(sig);
            continue;
        }
        match &columns {
            None => {
                let header = read_header(line).ok_or_else(|| {
                    InspectError::unexpected(TOOL, format!("expected the table header, got {line:?}"))
                })?;
                columns = Some(header);
            }
            Some(cols) => out.push(read_row(cols, line)?),
        }
    }
    Ok(out)
}

/// Header words and their start positions (in characters).
fn read_header(line: &str) -> Option<Vec<(String, usize)>> {
    let mut cols = Vec::new();
    let mut start: Option<usize> = None;
    let mut word = String::new();
    for (i, c) in line.chars().enumerate() {
        if c.is_whitespace() {
            if let Some(s) = start.take() {
                cols.push((std::mem::take(&mut word), s));
            }
        } else {
            if start.is_none() {
                start = Some(i);
            }
            word.push(c);
        }
    }
    if let Some(s) = start {
        cols.push((word, s));
    }
    let has = |name: &str| cols.iter().any(|(n, _)| n == name);
    if has("OFFSET") && has("TYPE") { Some(cols) } else { None }
}

fn read_row(cols: &[(String, usize)], line: &str) -> Result<WipefsSignature, InspectError> {
    let chars: Vec<char> = line.chars().collect();
    let cell = |name: &str| -> Option<String> {
        let index = cols.iter().position(|(n, _)| n == name)?;
        let start = cols[index].1.min(chars.len());
        let end = cols.get(index + 1).map_or(chars.len(), |(_, s)| (*s).min(chars.len()));
        let text: String = chars[start..end].iter().collect();
        let text = text.trim();
        if text.is_empty() { None } else { Some(text.to_string()) }
    };
    let offset_text =
        cell("OFFSET").ok_or_else(|| InspectError::unexpected(TOOL, format!("row without offset: {line:?}")))?;
    let offset = parse_offset(&offset_text)
        .ok_or_else(|| InspectError::unexpected(TOOL, format!("unreadable offset {offset_text:?}")))?;
    let kind = cell("TYPE").ok_or_else(|| InspectError::unexpected(TOOL, format!("row without type: {line:?}")))?;
    Ok(WipefsSignature { offset, kind, uuid: cell("UUID"), label: cell("LABEL") })
}

/// `loop0p1: 4 bytes were erased at offset 0x00000000 (xfs): 58 46 53 42`
fn parse_erased_line(line: &str) -> Result<Option<WipefsSignature>, InspectError> {
    let Some((_, rest)) = line.split_once(" were erased at offset ") else {
        return Ok(None);
    };
    let malformed = || InspectError::unexpected(TOOL, format!("unreadable line {line:?}"));
    let (offset_text, rest) = rest.split_once(' ').ok_or_else(malformed)?;
    let offset = parse_offset(offset_text).ok_or_else(malformed)?;
    let kind = rest
        .strip_prefix('(')
        .and_then(|r| r.split_once(')'))
        .map(|(k, _)| k.trim().to_string())
        .filter(|k| !k.is_empty())
        .ok_or_else(malformed)?;
    Ok(Some(WipefsSignature { offset, kind, uuid: None, label: None }))
}

/// `"0x1fe"` -> 510; plain decimal is accepted too.
fn parse_offset(text: &str) -> Option<u64> {
    let text = text.trim();
    match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => text.parse().ok(),
    }
}

/// Reads `wipefs -J [--no-act] DEV`: `{"signatures":[{"device","offset",
/// "type","uuid","label"}]}` with hex offsets. Empty output gives an empty
/// list.
pub fn parse_json(json: &str) -> Result<Vec<WipefsSignature>, InspectError> {
    if json.trim().is_empty() {
        return Ok(Vec::new());
    }
    let root = super::parse_json(TOOL, json)?;
    let items = match root.get("signatures") {
        Some(Value::Array(items)) => items,
        Some(_) => {
            return Err(InspectError::unexpected(TOOL, "\"signatures\" is not an array"));
        }
        None => return Err(InspectError::unexpected(TOOL, "no \"signatures\" key")),
    };
    let mut out = Vec::new();
    for item in items {
        let offset = match item.get("offset") {
            Some(Value::String(s)) => parse_offset(s),
            Some(Value::Number(n)) => n.as_u64(),
            _ => None,
        }
        .ok_or_else(|| InspectError::unexpected(TOOL, "signature without a readable \"offset\""))?;
        let kind =
            str_field(item, "type").ok_or_else(|| InspectError::unexpected(TOOL, "signature without \"type\""))?;
        out.push(WipefsSignature { offset, kind, uuid: str_field(item, "uuid"), label: str_field(item, "label") });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const XFS: &str = include_str!("../../tests/fixtures/local/wipefs-no-act.xfs.txt");
    const EXT4: &str = include_str!("../../tests/fixtures/local/wipefs-no-act.ext4.txt");
    const GPT: &str = include_str!("../../tests/fixtures/local/wipefs-no-act.gpt-disk.txt");
    const MSDOS: &str = include_str!("../../tests/fixtures/local/wipefs-no-act.msdos-disk.txt");
    const EMPTY: &str = include_str!("../../tests/fixtures/local/wipefs-no-act.empty-disk.txt");
    const LABEL_SPACE: &str = include_str!("../../tests/fixtures/local/wipefs-no-act.xfs-label-space.txt");
    const LABEL_UTF8: &str = include_str!("../../tests/fixtures/local/wipefs-no-act.xfs-label-utf8.txt");
    const ALL_NO_ACT: &str = include_str!("../../tests/fixtures/local/wipefs-all-no-act.xfs.txt");
    const JSON_GPT: &str = include_str!("../../tests/fixtures/local/wipefs-json.gpt-disk.json");
    const JSON_LABEL: &str = include_str!("../../tests/fixtures/local/wipefs-json.xfs-label-space.json");

    fn sig(offset: u64, kind: &str, uuid: Option<&str>, label: Option<&str>) -> WipefsSignature {
        WipefsSignature { offset, kind: kind.into(), uuid: uuid.map(Into::into), label: label.map(Into::into) }
    }

    #[test]
    fn table_filesystems() {
        assert_eq!(parse_table(XFS).unwrap(), vec![sig(0, "xfs", Some("eeee9378-0741-40c7-9261-fa9fd17f6f74"), None)]);
        assert_eq!(
            parse_table(EXT4).unwrap(),
            vec![sig(0x438, "ext4", Some("ee81010c-1c84-476d-be4f-daf0addfa135"), None)]
        );
    }

    #[test]
    fn table_partition_tables() {
        assert_eq!(
            parse_table(GPT).unwrap(),
            vec![sig(0x200, "gpt", None, None), sig(0x7fff_fe00, "gpt", None, None), sig(0x1fe, "PMBR", None, None),]
        );
        assert_eq!(parse_table(MSDOS).unwrap(), vec![sig(0x1fe, "dos", None, None)]);
    }

    #[test]
    fn table_labels_with_spaces_and_utf8() {
        assert_eq!(
            parse_table(LABEL_SPACE).unwrap(),
            vec![sig(0, "xfs", Some("0a794247-0550-43b8-b996-49c1cd6e846c"), Some("pg data"))]
        );
        assert_eq!(
            parse_table(LABEL_UTF8).unwrap(),
            vec![sig(0, "xfs", Some("b5c72bc6-fe64-4ff0-936c-9e4f6f6feb37"), Some("pg dätä"))]
        );
    }

    #[test]
    fn table_all_no_act_lines() {
        assert_eq!(parse_table(ALL_NO_ACT).unwrap(), vec![sig(0, "xfs", None, None)]);
    }

    #[test]
    fn table_empty_and_malformed() {
        assert_eq!(parse_table(EMPTY).unwrap(), vec![]);
        let err = parse_table("wipefs: error: /dev/x: probing initialization failed\n").unwrap_err();
        assert_eq!(err.tool(), "wipefs");
        let err = parse_table("DEVICE OFFSET TYPE UUID LABEL\nloop0  zz     gpt\n").unwrap_err();
        assert!(err.to_string().contains("offset"));
        assert!(parse_table("DEVICE OFFSET TYPE UUID LABEL\nloop0  0x200\n").is_err());
        assert!(parse_table("x: 4 bytes were erased at offset 0x0 xfs\n").is_err());
    }

    #[test]
    fn json_outputs() {
        assert_eq!(
            parse_json(JSON_GPT).unwrap(),
            vec![sig(0x200, "gpt", None, None), sig(0x7fff_fe00, "gpt", None, None), sig(0x1fe, "PMBR", None, None),]
        );
        assert_eq!(
            parse_json(JSON_LABEL).unwrap(),
            vec![sig(0, "xfs", Some("0a794247-0550-43b8-b996-49c1cd6e846c"), Some("pg data"))]
        );
        assert_eq!(parse_json("").unwrap(), vec![]);
        assert_eq!(parse_json("{\"signatures\": [\n\n]}").unwrap(), vec![]);
    }

    #[test]
    fn json_malformed() {
        let err = parse_json("{\"signatures\": [").unwrap_err();
        assert!(matches!(err, InspectError::InvalidJson { tool: "wipefs", .. }));
        assert!(parse_json("{}").is_err());
        assert!(parse_json(r#"{"signatures":[{"offset":"nope","type":"xfs"}]}"#).is_err());
        assert!(parse_json(r#"{"signatures":[{"offset":"0x0"}]}"#).is_err());
    }
}
