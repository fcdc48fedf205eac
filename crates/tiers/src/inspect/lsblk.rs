//! Parser for `lsblk -J` (JSON) output.

use serde::Serialize;
use serde_json::Value;

use super::{InspectError, parse_json, parse_size, str_field, value_as_u64};

/// One block device from `lsblk -J`, with its children (partitions, holders).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BlockDevice {
    /// `name` (or `kname` when `name` was not requested), e.g. `"nvme0n1p1"`.
    pub name: String,
    /// `path`, e.g. `"/dev/nvme0n1p1"`.
    pub path: Option<String>,
    /// `type`: `"disk"`, `"part"`, `"loop"`, ...
    pub kind: Option<String>,
    /// `size`: exact with `-b`; without it lsblk prints `"476.9G"`, which
    /// is converted with 1024-based multipliers (approximate).
    pub size_bytes: Option<u64>,
    /// `model`, trimmed.
    pub model: Option<String>,
    /// `serial`, trimmed.
    pub serial: Option<String>,
    /// `rev`, trimmed.
    pub revision: Option<String>,
    /// `rota`.
    pub rotational: Option<bool>,
    /// `fstype`. Without udev (containers, minimal VMs) lsblk prints null
    /// even for formatted devices: use `blkid -p` then.
    pub fstype: Option<String>,
    /// `mountpoints` (lsblk 2.37+, `[null]` when unmounted) and/or the
    /// scalar `mountpoint`; empty when not mounted or not requested.
    pub mountpoints: Vec<String>,
    /// `dax`.
    pub dax: Option<bool>,
    pub children: Vec<BlockDevice>,
}

const TOOL: &str = "lsblk";

/// Reads `lsblk -J [-b] [-o COLUMNS|-O] [DEVICE...]`.
///
/// Tolerates: sizes as numbers (`-b`) or strings (`"1G"`, `"476.9G"`; old
/// lsblk prints numbers as strings even with `-b`); booleans as `true`/
/// `false`, `0`/`1` or `"0"`/`"1"` (old lsblk); missing columns; `null`
/// values; `mountpoints: [null]`. Blank input gives an empty list.
pub fn parse(json: &str) -> Result<Vec<BlockDevice>, InspectError> {
    if json.trim().is_empty() {
        return Ok(Vec::new());
    }
    let root = parse_json(TOOL, json)?;
    let devices = match root.get("blockdevices") {
        Some(Value::Array(devices)) => devices,
        Some(_) => {
            return Err(InspectError::unexpected(TOOL, "\"blockdevices\" is not an array"));
        }
        None => return Err(InspectError::unexpected(TOOL, "no \"blockdevices\" key")),
    };
    devices.iter().map(read_device).collect()
}

/// All devices of a tree in pre-order (each device before its children).
pub fn flatten(devs: &[BlockDevice]) -> Vec<&BlockDevice> {
    let mut out = Vec::new();
    for dev in devs {
        out.push(dev);
        out.extend(flatten(&dev.children));
    }
    out
}

fn read_device(obj: &Value) -> Result<BlockDevice, InspectError> {
    if !obj.is_object() {
        return Err(InspectError::unexpected(TOOL, "device entry is not an object"));
    }
    let name = str_field(obj, "name")
        .or_else(|| str_field(obj, "kname"))
        .ok_or_else(|| InspectError::unexpected(TOOL, "device without \"name\" or \"kname\""))?;
    let size_bytes = match obj.get("size") {
        Some(Value::String(s)) => Some(
            parse_size(s).ok_or_else(|| InspectError::unexpected(TOOL, format!("{name}: unreadable size {s:?}")))?,
        ),
        Some(v) => value_as_u64(v),
        None => None,
    };

    let mut mountpoints: Vec<String> = Vec::new();
    if let Some(Value::Array(items)) = obj.get("mountpoints") {
        for item in items {
            if let Some(m) = item.as_str().filter(|m| !m.is_empty()) {
                mountpoints.push(m.to_string());
            }
        }
    }
    if let Some(m) = str_field(obj, "mountpoint")
        && !mountpoints.contains(&m)
    {
        mountpoints.push(m);
    }

    let children = match obj.get("children") {
        Some(Value::Array(items)) => items.iter().map(read_device).collect::<Result<Vec<_>, _>>()?,
        Some(Value::Null) | None => Vec::new(),
        Some(_) => {
            return Err(InspectError::unexpected(TOOL, format!("{name}: \"children\" is not an array")));
        }
    };

    Ok(BlockDevice {
        path: str_field(obj, "path"),
        kind: str_field(obj, "type"),
        size_bytes,
        model: str_field(obj, "model"),
        serial: str_field(obj, "serial"),
        revision: str_field(obj, "rev"),
        rotational: bool_field(obj, "rota"),
        fstype: str_field(obj, "fstype"),
        mountpoints,
        dax: bool_field(obj, "dax"),
        children,
        name,
    })
}

fn bool_field(obj: &Value, key: &str) -> Option<bool> {
    match obj.get(key)? {
        Value::Bool(b) => Some(*b),
        Value::Number(n) => match n.as_u64()? {
            0 => Some(false),
            1 => Some(true),
            _ => None,
        },
        Value::String(s) => match s.trim() {
            "0" | "false" => Some(false),
            "1" | "true" => Some(true),
            _ => None,
        },
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOOP_J: &str = include_str!("../../tests/fixtures/local/lsblk-J.loop.json");
    const LOOP_JO_ALL: &str = include_str!("../../tests/fixtures/local/lsblk-J-O.loop.json");
    const LOOP_J_O: &str = include_str!("../../tests/fixtures/local/lsblk-J-o.loop.json");
    const LOOP_J_B_O: &str = include_str!("../../tests/fixtures/local/lsblk-J-b-o.loop.json");
    const LOOP_MSDOS: &str = include_str!("../../tests/fixtures/local/lsblk-J-b-o.msdos-xfs.json");
    const NVME_SYSROOT: &str = include_str!("../../tests/fixtures/lsblk/lsblk-J-o.util-linux-simple-nvme-sysroot.json");
    const NVME_SYSROOT_B: &str =
        include_str!("../../tests/fixtures/lsblk/lsblk-J-b-o.util-linux-simple-nvme-sysroot.json");

    fn names(devs: &[BlockDevice]) -> Vec<&str> {
        flatten(devs).iter().map(|d| d.name.as_str()).collect()
    }

    #[test]
    fn default_columns() {
        let devs = parse(LOOP_J).unwrap();
        assert_eq!(names(&devs), ["loop0", "loop0p1", "loop0p2"]);
        let disk = &devs[0];
        assert_eq!(disk.kind.as_deref(), Some("loop"));
        assert_eq!(disk.size_bytes, Some(2 << 30));
        assert_eq!(disk.path, None);
        assert!(disk.mountpoints.is_empty());
        assert_eq!(disk.children[0].mountpoints, ["/srv/fixwork/mnt"]);
        assert_eq!(disk.children[1].size_bytes, Some(1022 << 20));
        assert!(disk.children[1].mountpoints.is_empty());
        assert_eq!(disk.rotational, None);
    }

    #[test]
    fn all_columns() {
        let devs = parse(LOOP_JO_ALL).unwrap();
        let all = flatten(&devs);
        assert_eq!(all.len(), 3);
        let disk = all[0];
        assert_eq!(disk.path.as_deref(), Some("/dev/loop0"));
        assert_eq!(disk.rotational, Some(true));
        assert_eq!(disk.dax, Some(false));
        assert_eq!(disk.fstype, None); // no udev in the capture VM
        assert_eq!(disk.model, None);
        let p1 = all[1];
        assert_eq!(p1.mountpoints, ["/srv/fixwork/mnt"]);
        assert_eq!(p1.size_bytes, Some(1 << 30));
        assert_eq!(p1.kind.as_deref(), Some("part"));
    }

    #[test]
    fn selected_columns_string_sizes() {
        let devs = parse(LOOP_J_O).unwrap();
        assert_eq!(names(&devs), ["loop0", "loop0p1", "loop0p2"]);
        assert_eq!(devs[0].size_bytes, Some(2 << 30));
        assert_eq!(devs[0].children[0].path.as_deref(), Some("/dev/loop0p1"));
        assert_eq!(devs[0].children[0].mountpoints, ["/srv/fixwork/mnt"]);
    }

    #[test]
    fn bytes_and_scalar_mountpoint() {
        let devs = parse(LOOP_J_B_O).unwrap();
        assert_eq!(devs[0].size_bytes, Some(2_147_483_648));
        assert_eq!(devs[0].children[0].size_bytes, Some(1_073_741_824));
        assert_eq!(devs[0].children[1].size_bytes, Some(1_071_644_672));
        assert_eq!(devs[0].children[0].mountpoints, ["/srv/fixwork/mnt"]);
        assert_eq!(devs[0].dax, Some(false));

        let devs = parse(LOOP_MSDOS).unwrap();
        assert_eq!(names(&devs), ["loop0", "loop0p1", "loop0p2"]);
        assert_eq!(devs[0].size_bytes, Some(4_294_967_296));
        assert_eq!(devs[0].children[0].size_bytes, Some(3_221_225_472));
        assert_eq!(devs[0].children[1].rotational, Some(true));
        assert_eq!(devs[0].children[1].revision, None);
    }

    #[test]
    fn nvme_sysroot_dump() {
        let devs = parse(NVME_SYSROOT).unwrap();
        assert_eq!(devs.len(), 3);
        let all = flatten(&devs);
        assert_eq!(all.len(), 13);
        let nvme = &devs[2];
        assert_eq!(nvme.name, "nvme0n1");
        assert_eq!(nvme.model.as_deref(), Some("KINGSTON SKC1000240G"));
        assert_eq!(nvme.serial.as_deref(), Some("50026B728203601D"));
        assert_eq!(nvme.rotational, Some(false));
        assert_eq!(nvme.size_bytes, Some(240_088_671_846)); // "223.6G"
        assert_eq!(nvme.children[1].mountpoints, ["/home"]);
        let sdb = &devs[1];
        assert_eq!(sdb.rotational, Some(true));
        assert_eq!(sdb.model.as_deref(), Some("WDC WD800JD-00MS"));

        let exact = parse(NVME_SYSROOT_B).unwrap();
        assert_eq!(exact[2].size_bytes, Some(240_057_409_536));
        assert_eq!(exact[0].children[3].mountpoints, ["/"]);
        assert_eq!(flatten(&exact).iter().map(|d| d.name.as_str()).collect::<Vec<_>>(), names(&devs));
    }

    #[test]
    fn old_lsblk_strings_and_numbers() {
        let json = r#"{"blockdevices": [
            {"name": "sda", "rm": "0", "size": "1073741824", "ro": "0", "type": "disk",
             "mountpoint": null, "rota": "1", "dax": 0},
            {"name": "pmem0", "size": 1024, "type": "disk", "rota": 0, "dax": "1",
             "mountpoint": "/mnt/pmem", "children": null}
        ]}"#;
        let devs = parse(json).unwrap();
        assert_eq!(devs[0].size_bytes, Some(1 << 30));
        assert_eq!(devs[0].rotational, Some(true));
        assert_eq!(devs[0].dax, Some(false));
        assert!(devs[0].mountpoints.is_empty());
        assert_eq!(devs[1].rotational, Some(false));
        assert_eq!(devs[1].dax, Some(true));
        assert_eq!(devs[1].mountpoints, ["/mnt/pmem"]);
    }

    #[test]
    fn several_mountpoints() {
        let json = r#"{"blockdevices":[{"kname":"vda1","mountpoint":"/a","mountpoints":["/a","/b"]}]}"#;
        let devs = parse(json).unwrap();
        assert_eq!(devs[0].name, "vda1");
        assert_eq!(devs[0].mountpoints, ["/a", "/b"]);
    }

    #[test]
    fn empty_and_malformed() {
        assert_eq!(parse("").unwrap(), vec![]);
        assert_eq!(parse(r#"{"blockdevices": []}"#).unwrap(), vec![]);
        let err = parse("{\"blockdevices\": [").unwrap_err();
        assert!(matches!(err, InspectError::InvalidJson { tool: "lsblk", .. }));
        assert!(parse("{}").is_err());
        assert!(parse(r#"{"blockdevices":[{"size":"1G"}]}"#).is_err());
        assert!(parse(r#"{"blockdevices":[{"name":"x","size":"huge"}]}"#).is_err());
        assert!(flatten(&[]).is_empty());
    }
}
