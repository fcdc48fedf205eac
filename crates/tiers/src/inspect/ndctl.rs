//! Parsers for `ndctl list` and `ndctl create-namespace` (PMem namespaces).

use serde::Serialize;
use serde_json::Value;

use super::{InspectError, parse_json_stream, parse_size, str_field, u64_field, value_as_u64};

/// Namespace mode as printed by ndctl.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum PmemMode {
    /// `"fsdax"`; old ndctl releases print `"memory"`.
    Fsdax,
    /// `"devdax"`; old ndctl releases print `"dax"`.
    Devdax,
    /// `"sector"` (BTT).
    Sector,
    /// `"raw"`.
    Raw,
    /// Any other mode string, kept as printed.
    Other(String),
}

impl PmemMode {
    /// Maps ndctl's mode string, including the legacy names.
    pub fn from_ndctl(mode: &str) -> PmemMode {
        match mode.trim() {
            "fsdax" | "memory" => PmemMode::Fsdax,
            "devdax" | "dax" => PmemMode::Devdax,
            "sector" => PmemMode::Sector,
            "raw" => PmemMode::Raw,
            other => PmemMode::Other(other.to_string()),
        }
    }

    /// The current ndctl name of the mode (`"fsdax"`, `"devdax"`, ...).
    pub fn as_str(&self) -> &str {
        match self {
            PmemMode::Fsdax => "fsdax",
            PmemMode::Devdax => "devdax",
            PmemMode::Sector => "sector",
            PmemMode::Raw => "raw",
            PmemMode::Other(s) => s,
        }
    }
}

/// One PMem namespace from `ndctl list` or `ndctl create-namespace`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PmemNamespace {
    /// `"namespace0.0"`.
    pub dev: String,
    pub mode: PmemMode,
    /// Block device name without `/dev/`: `"pmem0"`, `"pmem0.1"`, `"pmem0s"`
    /// (sector mode). Devdax namespaces have none.
    pub blockdev: Option<String>,
    /// Character device of a devdax namespace, e.g. `"dax0.0"` (from
    /// `chardev` or from `daxregion.devices[0].chardev`).
    pub chardev: Option<String>,
    /// Size in bytes. With `-u`/`--human` ndctl prints `"123.04 GiB (132.12
    /// GB)"`; the binary figure is converted, so the value is approximate.
    pub size_bytes: Option<u64>,
    /// Namespace name (`-n` at creation).
    pub name: Option<String>,
    /// `false` when ndctl printed `"state":"disabled"`.
    pub enabled: bool,
    /// `"dev"` or `"mem"` (where the page map lives), fsdax/devdax only.
    pub map: Option<String>,
    /// Alignment in bytes: `align`, or else `daxregion.align` (devdax).
    pub align: Option<u64>,
    /// Region (`"region0"`) when the namespace was listed inside a region
    /// (`ndctl list -R -N`, `-D -R -N`); `None` otherwise.
    pub region: Option<String>,
}

const LIST: &str = "ndctl list";
const CREATE: &str = "ndctl create-namespace";

/// Reads `ndctl list` output that includes namespaces (`-N`, with any of
/// `-u`, `-i`, `-v`, `-R`, `-D`, `-B`, `-X`, `-M`).
///
/// Accepted shapes: nothing at all (no PMem: ndctl prints nothing and exits
/// 0) → empty list; a bare namespace object (one namespace); an array of
/// namespaces (several); `{"namespaces":[...]}`; `{"regions":[...]}` and
/// `{"dimms":[...],"regions":[...]}` with namespaces nested in the regions
/// (their `region` is filled); bus objects with `namespaces` or `regions`;
/// and several top-level objects written one after another (old ndctl
/// `-B -N` as shown in its man page). Objects that are not namespaces
/// (dimms, regions without namespaces) are skipped.
pub fn parse_list(json: &str) -> Result<Vec<PmemNamespace>, InspectError> {
    if json.trim().is_empty() {
        return Ok(Vec::new());
    }
    let mut out = Vec::new();
    for value in parse_json_stream(LIST, json)? {
        collect(LIST, &value, None, &mut out)?;
    }
    Ok(out)
}

/// Reads the JSON that `ndctl create-namespace` (also `-f -e`
/// reconfiguration) prints for the namespace it created. Empty output (the
/// command failed, e.g. `failed to create namespace: No such device or
/// address` on stderr with exit 237) is an error.
pub fn parse_create_namespace(json: &str) -> Result<PmemNamespace, InspectError> {
    if json.trim().is_empty() {
        return Err(InspectError::Empty { tool: CREATE });
    }
    let mut out = Vec::new();
    for value in parse_json_stream(CREATE, json)? {
        collect(CREATE, &value, None, &mut out)?;
    }
    out.into_iter().next().ok_or_else(|| InspectError::unexpected(CREATE, "no namespace object in the output"))
}

/// Finds a namespace by its `dev` (`"namespace0.0"`), block device (`"pmem0"`
/// or `"/dev/pmem0"`), character device (`"dax0.0"` or `"/dev/dax0.0"`) or
/// name, in that order of preference.
pub fn find<'a>(list: &'a [PmemNamespace], wanted: &str) -> Option<&'a PmemNamespace> {
    let wanted = wanted.trim();
    let short = wanted.strip_prefix("/dev/").unwrap_or(wanted);
    list.iter()
        .find(|ns| ns.dev == short)
        .or_else(|| {
            list.iter().find(|ns| ns.blockdev.as_deref() == Some(short) || ns.chardev.as_deref() == Some(short))
        })
        .or_else(|| list.iter().find(|ns| ns.name.as_deref() == Some(wanted)))
}

fn is_namespace_dev(obj: &Value) -> bool {
    obj.get("dev").and_then(Value::as_str).is_some_and(|d| d.starts_with("namespace"))
}

/// Walks any ndctl listing value and collects the namespaces in it.
fn collect(
    tool: &'static str,
    value: &Value,
    region: Option<&str>,
    out: &mut Vec<PmemNamespace>,
) -> Result<(), InspectError> {
    match value {
        Value::Array(items) => {
            for item in items {
                collect(tool, item, region, out)?;
            }
            Ok(())
        }
        Value::Object(_) if is_namespace_dev(value) => {
            out.push(read_namespace(tool, value, region)?);
            Ok(())
        }
        Value::Object(_) => {
            let dev = value.get("dev").and_then(Value::as_str);
            let own_region = match dev {
                Some(d) if d.starts_with("region") => Some(d),
                _ => region,
            };
            if let Some(namespaces) = value.get("namespaces") {
                let items = namespaces
                    .as_array()
                    .ok_or_else(|| InspectError::unexpected(tool, "\"namespaces\" is not an array"))?;
                for item in items {
                    out.push(read_namespace(tool, item, own_region)?);
                }
            }
            for key in ["regions", "buses"] {
                if let Some(nested) = value.get(key) {
                    if !nested.is_array() {
                        return Err(InspectError::unexpected(tool, format!("\"{key}\" is not an array")));
                    }
                    collect(tool, nested, own_region, out)?;
                }
            }
            Ok(())
        }
        _ => Err(InspectError::unexpected(tool, "expected JSON objects or arrays of objects")),
    }
}

fn read_namespace(tool: &'static str, obj: &Value, region: Option<&str>) -> Result<PmemNamespace, InspectError> {
    if !obj.is_object() {
        return Err(InspectError::unexpected(tool, "namespace entry is not an object"));
    }
    let dev = str_field(obj, "dev").ok_or_else(|| InspectError::unexpected(tool, "namespace without \"dev\""))?;
    let mode = str_field(obj, "mode")
        .map(|m| PmemMode::from_ndctl(&m))
        .ok_or_else(|| InspectError::unexpected(tool, format!("{dev} has no \"mode\"")))?;
    let size_bytes = match obj.get("size") {
        Some(Value::String(s)) => {
            Some(parse_size(s).ok_or_else(|| InspectError::unexpected(tool, format!("{dev}: unreadable size {s:?}")))?)
        }
        Some(v) => value_as_u64(v),
        None => None,
    };
    let daxregion = obj.get("daxregion");
    let chardev = str_field(obj, "chardev").or_else(|| {
        daxregion
            .and_then(|d| d.get("devices"))
            .and_then(Value::as_array)
            .and_then(|devices| devices.iter().find_map(|d| str_field(d, "chardev")))
    });
    let align = u64_field(obj, "align").or_else(|| daxregion.and_then(|d| u64_field(d, "align")));
    Ok(PmemNamespace {
        dev,
        mode,
        blockdev: str_field(obj, "blockdev"),
        chardev,
        size_bytes,
        name: str_field(obj, "name"),
        enabled: str_field(obj, "state").as_deref() != Some("disabled"),
        map: str_field(obj, "map"),
        align,
        region: region.map(str::to_string),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOCAL_LIST: &str = include_str!("../../tests/fixtures/local/ndctl-list.no-pmem.txt");
    const LOCAL_LIST_N: &str = include_str!("../../tests/fixtures/local/ndctl-list-N.no-pmem.txt");
    const LOCAL_LIST_NV: &str = include_str!("../../tests/fixtures/local/ndctl-list-N-v.no-pmem.txt");
    const LOCAL_LIST_NDR: &str = include_str!("../../tests/fixtures/local/ndctl-list-NDR.no-pmem.txt");
    const LOCAL_CREATE: &str = include_str!("../../tests/fixtures/local/ndctl-create-namespace-m-fsdax.no-pmem.txt");

    fn one(json: &str) -> PmemNamespace {
        let list = parse_list(json).unwrap();
        assert_eq!(list.len(), 1, "{list:?}");
        list.into_iter().next().unwrap()
    }

    #[test]
    fn list_without_pmem_is_empty() {
        for text in [LOCAL_LIST, LOCAL_LIST_N, LOCAL_LIST_NV, LOCAL_LIST_NDR, "", "\n"] {
            assert_eq!(parse_list(text).unwrap(), vec![]);
        }
    }

    #[test]
    fn list_bare_object_fsdax() {
        let ns = one(include_str!("../../tests/fixtures/ndctl/ndctl-list-N.fsdax.json"));
        assert_eq!(
            ns,
            PmemNamespace {
                dev: "namespace0.0".into(),
                mode: PmemMode::Fsdax,
                blockdev: Some("pmem0".into()),
                chardev: None,
                size_bytes: Some(4_294_967_296),
                name: None,
                enabled: true,
                map: Some("mem".into()),
                align: None,
                region: None,
            }
        );
    }

    #[test]
    fn list_human_sizes() {
        let ns = one(include_str!("../../tests/fixtures/ndctl/ndctl-list-Nu.fsdax.human.json"));
        assert_eq!(ns.size_bytes, Some(4 << 30));
        assert_eq!(ns.blockdev.as_deref(), Some("pmem0"));

        let list = parse_list(include_str!("../../tests/fixtures/ndctl/ndctl-list-u.two-fsdax.array.json")).unwrap();
        assert_eq!(list.len(), 2);
        assert_eq!(list[0].dev, "namespace1.0");
        assert_eq!(list[0].blockdev.as_deref(), Some("pmem1"));
        assert_eq!(list[1].dev, "namespace0.0");
        // 3.93 GiB
        assert_eq!(list[1].size_bytes, Some(4_219_805_368));
        assert!(list.iter().all(|ns| ns.mode == PmemMode::Fsdax && ns.region.is_none()));
    }

    #[test]
    fn list_namespaces_wrapper_raw() {
        let ns = one(include_str!(
            "../../tests/fixtures/ndctl/ndctl-list-Nu.raw-namespace.namespaces-wrapper.pmem-kb100000016.json"
        ));
        assert_eq!(ns.mode, PmemMode::Raw);
        assert_eq!(ns.size_bytes, Some(704 << 20));
        assert_eq!(ns.blockdev.as_deref(), Some("pmem0"));
        assert_eq!(ns.region, None);
    }

    #[test]
    fn list_disabled_namespaces() {
        let list =
            parse_list(include_str!("../../tests/fixtures/ndctl/ndctl-list-Ni.disabled-raw.array.json")).unwrap();
        assert_eq!(list.len(), 1);
        assert!(!list[0].enabled);
        assert_eq!(list[0].mode, PmemMode::Raw);
        assert_eq!(list[0].size_bytes, Some(0));
        assert_eq!(list[0].blockdev, None);

        let ns = one(include_str!("../../tests/fixtures/ndctl/ndctl-list-Ni-n.disabled.json"));
        assert!(!ns.enabled);
        assert_eq!(ns.name.as_deref(), Some("prod_web_db1"));
        assert_eq!(ns.size_bytes, Some(21_474_836_480));
    }

    #[test]
    fn list_regions_with_namespaces() {
        let ns = one(include_str!("../../tests/fixtures/ndctl/ndctl-list-RuN.region0-fsdax-map-dev.json"));
        assert_eq!(ns.region.as_deref(), Some("region0"));
        assert_eq!(ns.map.as_deref(), Some("dev"));
        assert_eq!(ns.size_bytes, Some(263_184_858_481)); // 245.11 GiB

        let ns = one(include_str!("../../tests/fixtures/ndctl/ndctl-list-RuN.region0-fsdax-map-mem.json"));
        assert_eq!(ns.region.as_deref(), Some("region0"));
        assert_eq!(ns.map.as_deref(), Some("mem"));
        assert_eq!(ns.size_bytes, Some(249 << 30));
    }

    #[test]
    fn list_dimms_regions_namespaces() {
        let ns = one(include_str!("../../tests/fixtures/ndctl/ndctl-list-DRN.dimms-regions-namespaces.json"));
        assert_eq!(ns.dev, "namespace1.0");
        assert_eq!(ns.region.as_deref(), Some("region1"));
        assert_eq!(ns.blockdev.as_deref(), Some("pmem1"));
        assert_eq!(ns.size_bytes, Some(526_366_277_632));
        assert_eq!(ns.map.as_deref(), Some("dev"));
    }

    #[test]
    fn list_concatenated_bus_objects() {
        let list = parse_list(include_str!("../../tests/fixtures/ndctl/ndctl-list-B-N.nfit_test-e820.ndctl-doc.json"))
            .unwrap();
        assert_eq!(list.len(), 2);
        assert_eq!(list[0].dev, "namespace9.0");
        assert_eq!(list[0].mode, PmemMode::Raw);
        assert_eq!(list[0].blockdev.as_deref(), Some("pmem9"));
        assert_eq!(list[0].size_bytes, Some(33_554_432));
        assert_eq!(list[1].dev, "namespace0.0");
        assert_eq!(list[1].mode, PmemMode::Fsdax);
        assert_eq!(list[1].size_bytes, Some(8_589_934_592));
    }

    #[test]
    fn list_devdax_and_media_errors() {
        let ns = one(include_str!("../../tests/fixtures/ndctl/ndctl-list-X.devdax.ndctl-doc.json"));
        assert_eq!(ns.mode, PmemMode::Devdax);
        assert_eq!(ns.blockdev, None);
        assert_eq!(ns.chardev.as_deref(), Some("dax0.0"));
        assert_eq!(ns.align, Some(2_097_152));
        assert_eq!(ns.size_bytes, Some(4_225_761_280));

        let ns = one(include_str!("../../tests/fixtures/ndctl/ndctl-list-M.raw-badblocks.ndctl-doc.json"));
        assert_eq!(ns.dev, "namespace7.0");
        assert_eq!(ns.mode, PmemMode::Raw);
        assert_eq!(ns.blockdev.as_deref(), Some("pmem7"));
    }

    #[test]
    fn list_reconfiguration_sequence() {
        let before = one(include_str!("../../tests/fixtures/ndctl/ndctl-list-N-n.fsdax-map-mem.before-reconfig.json"));
        assert_eq!(before.mode, PmemMode::Fsdax);
        assert_eq!(before.map.as_deref(), Some("mem"));
        assert_eq!(before.blockdev.as_deref(), Some("pmem0"));

        let after = one(include_str!("../../tests/fixtures/ndctl/ndctl-list-N-n.devdax.after-reconfig.json"));
        assert_eq!(after.mode, PmemMode::Devdax);
        assert_eq!(after.blockdev, None);
        assert_eq!(after.chardev.as_deref(), Some("dax0.0"));
        assert_eq!(after.size_bytes, Some(4_225_761_280));

        let named = one(include_str!("../../tests/fixtures/ndctl/ndctl-list-N-n.fsdax-enabled-named.json"));
        assert!(named.enabled);
        assert_eq!(named.name.as_deref(), Some("prod_web_db1"));
        assert_eq!(named.size_bytes, Some(21_137_195_008));
    }

    #[test]
    fn create_namespace_outputs() {
        let ns = parse_create_namespace(include_str!(
            "../../tests/fixtures/ndctl/ndctl-create-namespace.fsdax.default.json"
        ))
        .unwrap();
        assert_eq!(ns.dev, "namespace0.0");
        assert_eq!(ns.mode, PmemMode::Fsdax);
        assert_eq!(ns.blockdev.as_deref(), Some("pmem0"));
        assert_eq!(ns.size_bytes, Some(132_113_194_025));
        assert_eq!(ns.map.as_deref(), Some("dev"));

        let ns = parse_create_namespace(include_str!(
            "../../tests/fixtures/ndctl/ndctl-create-namespace-m-fsdax-s-50G.json"
        ))
        .unwrap();
        assert_eq!(ns.size_bytes, Some(52_849_572_577)); // 49.22 GiB

        let ns = parse_create_namespace(include_str!(
            "../../tests/fixtures/ndctl/ndctl-create-namespace.fsdax.second-ns-pmem0.1.json"
        ))
        .unwrap();
        assert_eq!(ns.dev, "namespace0.1");
        assert_eq!(ns.blockdev.as_deref(), Some("pmem0.1"));

        let ns =
            parse_create_namespace(include_str!("../../tests/fixtures/ndctl/ndctl-create-namespace-n-name.fsdax.json"))
                .unwrap();
        assert_eq!(ns.name.as_deref(), Some("PROD Web DB 1"));

        let ns =
            parse_create_namespace(include_str!("../../tests/fixtures/ndctl/ndctl-create-namespace-m-sector.json"))
                .unwrap();
        assert_eq!(ns.mode, PmemMode::Sector);
        assert_eq!(ns.blockdev.as_deref(), Some("pmem0s"));
        assert_eq!(ns.size_bytes, Some(134_088_878_981));

        let ns = parse_create_namespace(include_str!("../../tests/fixtures/ndctl/ndctl-create-namespace-m-raw.json"))
            .unwrap();
        assert_eq!(ns.mode, PmemMode::Raw);
        assert_eq!(ns.size_bytes, Some(125 << 30));
        assert_eq!(ns.map, None);
    }

    #[test]
    fn create_namespace_devdax() {
        for json in [
            include_str!("../../tests/fixtures/ndctl/ndctl-create-namespace-m-devdax.json"),
            include_str!("../../tests/fixtures/ndctl/ndctl-create-namespace-fe-mode-devdax.json"),
        ] {
            let ns = parse_create_namespace(json).unwrap();
            assert_eq!(ns.mode, PmemMode::Devdax);
            assert_eq!(ns.blockdev, None);
            assert_eq!(ns.chardev.as_deref(), Some("dax0.0"));
            assert_eq!(ns.align, Some(2 << 20));
        }
        let ns = parse_create_namespace(include_str!(
            "../../tests/fixtures/ndctl/ndctl-create-namespace-fe-mode-devdax.json"
        ))
        .unwrap();
        assert_eq!(ns.size_bytes, Some(4_230_542_787)); // 3.94 GiB
    }

    #[test]
    fn create_namespace_reconfigure_and_align() {
        let ns =
            parse_create_namespace(include_str!("../../tests/fixtures/ndctl/ndctl-create-namespace-fe-rename.json"))
                .unwrap();
        assert_eq!(ns.name.as_deref(), Some("prod_web_db1"));
        assert_eq!(ns.size_bytes, Some(52_849_572_577));

        let ns = parse_create_namespace(include_str!(
            "../../tests/fixtures/ndctl/ndctl-create-namespace-fe-resize-20G.json"
        ))
        .unwrap();
        assert_eq!(ns.size_bytes, Some(21_141_976_515)); // 19.69 GiB

        let ns = parse_create_namespace(include_str!(
            "../../tests/fixtures/ndctl/ndctl-create-namespace-r0-m-fsdax.with-align.pmem-kb100000005.json"
        ))
        .unwrap();
        assert_eq!(ns.align, Some(2_097_152));
        assert_eq!(ns.size_bytes, Some(1_598_125_118_587)); // 1488.37 GiB
        assert_eq!(ns.region, None);
    }

    #[test]
    fn create_namespace_legacy_mode_memory() {
        let ns = parse_create_namespace(include_str!(
            "../../tests/fixtures/ndctl/ndctl-create-namespace-fe-fsdax.LEGACY-mode-memory.pmem-kb100000016.json"
        ))
        .unwrap();
        assert_eq!(ns.mode, PmemMode::Fsdax);
        assert_eq!(ns.size_bytes, Some(690 << 20));
        assert_eq!(ns.blockdev.as_deref(), Some("pmem0"));
        assert_eq!(PmemMode::from_ndctl("dax"), PmemMode::Devdax);
        assert_eq!(PmemMode::from_ndctl("memory").as_str(), "fsdax");
        assert_eq!(PmemMode::from_ndctl("blk"), PmemMode::Other("blk".into()));
    }

    #[test]
    fn create_namespace_errors() {
        assert_eq!(
            parse_create_namespace(LOCAL_CREATE).unwrap_err(),
            InspectError::Empty { tool: "ndctl create-namespace" }
        );
        let err = parse_create_namespace("{\"dev\":").unwrap_err();
        assert!(matches!(err, InspectError::InvalidJson { tool: "ndctl create-namespace", .. }));
        assert!(parse_create_namespace(r#"{"dev":"region0"}"#).is_err());
        assert!(parse_create_namespace(r#"{"dev":"namespace0.0"}"#).is_err()); // no mode
    }

    #[test]
    fn list_errors() {
        let err = parse_list("{\"dev\":\"namespace0.0\",").unwrap_err();
        assert_eq!(err.tool(), "ndctl list");
        assert!(parse_list("42").is_err());
        assert!(parse_list(r#"{"namespaces":{}}"#).is_err());
        assert!(parse_list(r#"{"dev":"namespace0.0","mode":"fsdax","size":"lots"}"#).is_err());
        // dimm-only and region-only listings have no namespaces
        assert_eq!(parse_list(r#"{"dev":"nmem0","id":"x"}"#).unwrap(), vec![]);
        assert_eq!(parse_list(r#"[{"dev":"region0","size":1}]"#).unwrap(), vec![]);
    }

    #[test]
    fn find_by_dev_blockdev_chardev_or_name() {
        let mut list =
            parse_list(include_str!("../../tests/fixtures/ndctl/ndctl-list-u.two-fsdax.array.json")).unwrap();
        list.push(
            parse_create_namespace(include_str!("../../tests/fixtures/ndctl/ndctl-create-namespace-n-name.fsdax.json"))
                .unwrap(),
        );
        list.push(
            parse_list(include_str!("../../tests/fixtures/ndctl/ndctl-list-X.devdax.ndctl-doc.json"))
                .unwrap()
                .remove(0),
        );

        assert_eq!(find(&list, "namespace1.0").unwrap().blockdev.as_deref(), Some("pmem1"));
        assert_eq!(find(&list, "pmem1").unwrap().dev, "namespace1.0");
        assert_eq!(find(&list, "/dev/pmem1").unwrap().dev, "namespace1.0");
        // dev wins over a later entry with the same blockdev
        assert_eq!(find(&list, "/dev/pmem0").unwrap().dev, "namespace0.0");
        assert_eq!(find(&list, "PROD Web DB 1").unwrap().size_bytes, Some(132_113_194_025));
        assert_eq!(find(&list, "/dev/dax0.0").unwrap().mode, PmemMode::Devdax);
        assert!(find(&list, "pmem9").is_none());
        assert!(find(&[], "pmem0").is_none());
    }
}
