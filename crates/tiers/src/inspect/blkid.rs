//! Parser for `blkid -o export` / `blkid -p -o export` output.

use std::collections::BTreeMap;

use serde::Serialize;

/// A signature (filesystem, partition table, ...) that blkid found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Signature {
    /// `"filesystem"`, `"partition-table"`, or another blkid usage
    /// (`"raid"`, `"crypto"`, `"other"`).
    pub kind: String,
    /// `"xfs"`, `"ext4"`, `"gpt"`, `"dos"`, ...
    pub name: String,
    pub label: Option<String>,
    pub uuid: Option<String>,
}

/// Reads `blkid -p -o export DEV` or `blkid -o export DEV` into a map of
/// `KEY=value` lines. Empty text (exit status 2: nothing found, e.g. an
/// empty disk) gives an empty map. Only the first device block is read
/// (blkid separates devices with a blank line).
///
/// Values are decoded: blkid escapes shell specials with a backslash
/// (`LABEL=pg\ data`), and, unless run with `-d`, writes bytes >= 0x80 in
/// `M-` notation (`M-CM-$` for the UTF-8 bytes of `ä`). The `M-` notation
/// is decoded when the result is valid UTF-8; otherwise the value is kept
/// as printed (minus the backslashes).
pub fn parse_export(text: &str) -> BTreeMap<String, String> {
    let mut map = BTreeMap::new();
    for line in text.lines() {
        let line = line.trim_end_matches('\r');
        if line.trim().is_empty() {
            if map.is_empty() {
                continue;
            }
            break;
        }
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        let key = key.trim();
        if key.is_empty() {
            continue;
        }
        map.insert(key.to_string(), decode_value(value));
    }
    map
}

/// The signatures described by an export map: the content (`TYPE`, with
/// `USAGE` from `-p`, plus `LABEL`/`UUID`) and the partition table
/// (`PTTYPE`, `PTUUID`). Without `USAGE` (cache mode) the kind is guessed
/// from the type: swap is `"other"`, LVM/MD/ZFS members `"raid"`, LUKS
/// `"crypto"`, everything else `"filesystem"`.
pub fn signatures(export: &BTreeMap<String, String>) -> Vec<Signature> {
    let non_empty = |key: &str| export.get(key).filter(|v| !v.is_empty()).cloned();
    let mut out = Vec::new();
    if let Some(name) = non_empty("TYPE") {
        let kind = non_empty("USAGE").unwrap_or_else(|| guess_usage(&name).to_string());
        out.push(Signature { kind, name, label: non_empty("LABEL"), uuid: non_empty("UUID") });
    }
    if let Some(name) = non_empty("PTTYPE") {
        out.push(Signature { kind: "partition-table".to_string(), name, label: None, uuid: non_empty("PTUUID") });
    }
    out
}

fn guess_usage(fs_type: &str) -> &'static str {
    match fs_type {
        "swap" => "other",
        "LVM2_member" | "linux_raid_member" | "zfs_member" | "isw_raid_member" | "ddf_raid_member" => "raid",
        "crypto_LUKS" | "BitLocker" => "crypto",
        _ => "filesystem",
    }
}

/// Undoes blkid's `safe_print`: `\X` -> `X`; `M-X` -> byte X+0x80;
/// `M-^X` -> byte (X^0x40)+0x80.
fn decode_value(raw: &str) -> String {
    let plain = unescape_backslashes(raw);
    if !raw.contains("M-") {
        return plain;
    }
    let chars: Vec<char> = raw.chars().collect();
    let mut bytes: Vec<u8> = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let mut high = false;
        if chars[i] == 'M' && chars.get(i + 1) == Some(&'-') && i + 2 < chars.len() {
            high = true;
            i += 2;
        }
        let mut control = false;
        if high && chars[i] == '^' && i + 1 < chars.len() {
            control = true;
            i += 1;
        }
        if chars[i] == '\\' && i + 1 < chars.len() {
            i += 1;
        }
        let c = chars[i];
        i += 1;
        if high {
            if !c.is_ascii() {
                return plain;
            }
            let mut b = c as u8;
            if control {
                b ^= 0x40;
            }
            bytes.push(b | 0x80);
        } else {
            let mut buf = [0u8; 4];
            bytes.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
        }
    }
    String::from_utf8(bytes).unwrap_or(plain)
}

fn unescape_backslashes(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    let mut chars = raw.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            if let Some(next) = chars.next() {
                out.push(next);
            }
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const P_XFS: &str = include_str!("../../tests/fixtures/local/blkid-p-export.xfs.txt");
    const P_EXT4: &str = include_str!("../../tests/fixtures/local/blkid-p-export.ext4.txt");
    const P_GPT: &str = include_str!("../../tests/fixtures/local/blkid-p-export.gpt-disk.txt");
    const P_EMPTY: &str = include_str!("../../tests/fixtures/local/blkid-p-export.empty-disk.txt");
    const P_MSDOS: &str = include_str!("../../tests/fixtures/local/blkid-p-export.msdos-disk.txt");
    const P_LABEL_SPACE: &str = include_str!("../../tests/fixtures/local/blkid-p-export.xfs-label-space.txt");
    const P_LABEL_UTF8: &str = include_str!("../../tests/fixtures/local/blkid-p-export.xfs-label-utf8.txt");
    const CACHE_XFS: &str = include_str!("../../tests/fixtures/local/blkid-export.xfs.txt");

    #[test]
    fn probe_xfs_partition() {
        let map = parse_export(P_XFS);
        assert_eq!(map.len(), 13);
        assert_eq!(map["DEVNAME"], "/dev/loop0p1");
        assert_eq!(map["TYPE"], "xfs");
        assert_eq!(map["PART_ENTRY_NAME"], "xfsdata");
        assert_eq!(map["PART_ENTRY_OFFSET"], "2048");
        assert_eq!(
            signatures(&map),
            vec![Signature {
                kind: "filesystem".into(),
                name: "xfs".into(),
                label: None,
                uuid: Some("eeee9378-0741-40c7-9261-fa9fd17f6f74".into()),
            }]
        );
    }

    #[test]
    fn probe_ext4_partition() {
        let map = parse_export(P_EXT4);
        assert_eq!(map["VERSION"], "1.0");
        assert_eq!(map["PART_ENTRY_NUMBER"], "2");
        let sigs = signatures(&map);
        assert_eq!(sigs.len(), 1);
        assert_eq!(sigs[0].name, "ext4");
        assert_eq!(sigs[0].kind, "filesystem");
        assert_eq!(sigs[0].uuid.as_deref(), Some("ee81010c-1c84-476d-be4f-daf0addfa135"));
    }

    #[test]
    fn probe_partition_tables() {
        let map = parse_export(P_GPT);
        assert_eq!(map.len(), 3);
        assert_eq!(
            signatures(&map),
            vec![Signature {
                kind: "partition-table".into(),
                name: "gpt".into(),
                label: None,
                uuid: Some("1c1c0e4a-dc42-4d55-9572-2d8e0f502e98".into()),
            }]
        );
        let sigs = signatures(&parse_export(P_MSDOS));
        assert_eq!(sigs.len(), 1);
        assert_eq!(sigs[0].name, "dos");
        assert_eq!(sigs[0].uuid.as_deref(), Some("1d091565"));
    }

    #[test]
    fn empty_disk() {
        assert!(parse_export(P_EMPTY).is_empty());
        assert!(signatures(&parse_export(P_EMPTY)).is_empty());
        assert!(parse_export("\n\n").is_empty());
    }

    #[test]
    fn cache_mode_without_usage() {
        let map = parse_export(CACHE_XFS);
        assert!(!map.contains_key("USAGE"));
        assert_eq!(map["PARTLABEL"], "xfsdata");
        let sigs = signatures(&map);
        assert_eq!(sigs[0].kind, "filesystem");
        assert_eq!(sigs[0].name, "xfs");

        let mut swap = BTreeMap::new();
        swap.insert("TYPE".to_string(), "swap".to_string());
        assert_eq!(signatures(&swap)[0].kind, "other");
        swap.insert("TYPE".to_string(), "LVM2_member".to_string());
        assert_eq!(signatures(&swap)[0].kind, "raid");
    }

    #[test]
    fn escaped_labels() {
        let map = parse_export(P_LABEL_SPACE);
        assert_eq!(map["LABEL"], "pg data");
        assert_eq!(map["PART_ENTRY_SCHEME"], "dos");
        let sigs = signatures(&map);
        assert_eq!(sigs[0].label.as_deref(), Some("pg data"));
        assert_eq!(sigs[0].uuid.as_deref(), Some("0a794247-0550-43b8-b996-49c1cd6e846c"));

        // printed as `LABEL=pg\ dM-CM-\$tM-CM-\$`
        let map = parse_export(P_LABEL_UTF8);
        assert_eq!(map["LABEL"], "pg dätä");
        assert_eq!(decode_value(r"a\$b\ c"), "a$b c");
        assert_eq!(decode_value("M-"), "M-");
        assert_eq!(decode_value("XM-Y"), "XM-Y"); // 'Y'+0x80 alone is not UTF-8
    }

    #[test]
    fn only_first_device_block() {
        let text = "DEVNAME=/dev/a\nTYPE=xfs\n\nDEVNAME=/dev/b\nTYPE=ext4\n";
        let map = parse_export(text);
        assert_eq!(map["DEVNAME"], "/dev/a");
        assert_eq!(map["TYPE"], "xfs");
        assert_eq!(parse_export("garbage line\nTYPE=xfs\n")["TYPE"], "xfs");
    }
}
