//! Parsers for nvme-cli output: `nvme version`, `nvme list -o json`, `nvme list-subsys -o json`,
//! `nvme id-ctrl -o json`, and the stdout of `nvme connect` / `nvme disconnect`.

use serde::Serialize;
use serde_json::Value;

use super::{InspectError, parse_json, str_field, u64_field};

mod nqn;
use nqn::controller_instance;
pub use nqn::{NqnMatch, SubsystemNamespace, find_namespace_for_nqn, match_namespace_for_nqn};

/// One NVMe namespace block device, as listed by `nvme list -o json`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NvmeNamespace {
    /// Block device path, e.g. `"/dev/nvme1n1"`.
    pub device: String,
    /// Namespace ID (`NameSpace` in the flat shape, `NSID` in the detailed one).
    pub nsid: Option<u32>,
    /// Subsystem NQN; only the detailed (2.11 / `-v`) shape carries it.
    pub subsystem_nqn: Option<String>,
    pub model: Option<String>,
    pub serial: Option<String>,
    pub firmware: Option<String>,
    /// Namespace capacity in bytes (`PhysicalSize`); `None` when missing or
    /// negative (the int overflow of some nvme-cli releases).
    pub size_bytes: Option<u64>,
    /// Transport of the controller (`"pcie"`, `"tcp"`, ...); detailed shape only.
    pub transport: Option<String>,
    /// Controller address (`"traddr=...,trsvcid=..."` or a PCI address);
    /// detailed shape only. For a multipath namespace, the address of the
    /// best path (ANA `optimized` first).
    pub address: Option<String>,
}

/// A subsystem as listed by `nvme list-subsys -o json`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NvmeSubsystem {
    /// Kernel name, e.g. `"nvme-subsys0"`.
    pub name: String,
    pub nqn: String,
    /// The controllers ("Paths" in nvme-cli's output) of the subsystem.
    pub controllers: Vec<NvmePath>,
}

/// One controller of a subsystem in `nvme list-subsys -o json`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NvmePath {
    /// Controller name, e.g. `"nvme2"`.
    pub name: String,
    /// `"tcp"`, `"rdma"`, `"pcie"`, ...; empty when not printed.
    pub transport: String,
    /// `"traddr=...,trsvcid=...[,src_addr=...]"`; empty when not printed.
    pub address: String,
    /// Controller state (`"live"`, `"connecting"`, `"deleting"`, ...);
    /// nvme-cli 1.x does not print it.
    pub state: Option<String>,
}

/// Identity of a controller, from `nvme id-ctrl -o json`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NvmeController {
    /// `mn`, trimmed.
    pub model: String,
    /// `sn`, trimmed.
    pub serial: String,
    /// `fr`, trimmed.
    pub firmware: String,
}

/// nvme-cli's version, from `nvme version` (`nvme --version` is the same command).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NvmeCliVersion {
    pub major: u32,
    pub minor: u32,
    /// As printed: `"1.16"`, `"2.3"`, `"2.16"`.
    pub text: String,
    /// libnvme's version, printed from nvme-cli 2.1 on (`libnvme version 1.3 (git 1.3)`).
    pub libnvme: Option<String>,
}

impl NvmeCliVersion {
    fn at_least(&self, major: u32, minor: u32) -> bool {
        (self.major, self.minor) >= (major, minor)
    }

    /// `nvme connect --dhchap-secret` and `--config` (libnvme's JSON with `dhchap_key`) came in
    /// nvme-cli 2.0 (commit 0571307d3); 1.16 rejects the option ("unrecognized option").
    pub fn has_dhchap(&self) -> bool {
        self.at_least(2, 0)
    }

    /// `nvme connect --output-format` (`-o`) came in nvme-cli 1.15 (fabrics_connect printing
    /// the controller it made); 1.14 and older print their usage and fail with EINVAL on it.
    pub fn connect_has_output_format(&self) -> bool {
        self.at_least(1, 15)
    }

    /// From nvme-cli 2.11 on (commit fbde909aa), `nvme connect -J FILE` connects every fabrics
    /// port of the file itself and prints no device name; before, `-J` only supplies host
    /// settings (such as the DH-HMAC-CHAP key) for the connection `-t/-a/-n` names.
    pub fn connect_config_connects_itself(&self) -> bool {
        self.at_least(2, 11)
    }
}

const VERSION: &str = "nvme version";

/// Reads `nvme version`: `nvme version 1.16` (1.x, 2.0), or `nvme version 2.3 (git 2.3)` and
/// `libnvme version 1.3 (git 1.3)` (2.1 and later). The `libnvme` line's major is 1 even for
/// nvme-cli 2.x and is only recorded.
pub fn parse_version(stdout: &str) -> Result<NvmeCliVersion, InspectError> {
    if stdout.trim().is_empty() {
        return Err(InspectError::Empty { tool: VERSION });
    }
    let word_after = |prefix: &str| {
        stdout.lines().find_map(|l| l.trim().strip_prefix(prefix)).and_then(|r| r.split_whitespace().next())
    };
    let text = word_after("nvme version ")
        .ok_or_else(|| InspectError::unexpected(VERSION, "no \"nvme version X\" line"))?
        .trim_start_matches('v');
    let mut parts = text.split(|c: char| !c.is_ascii_digit());
    let major = parts.next().and_then(|p| p.parse().ok());
    let minor = parts.next().and_then(|p| p.parse().ok());
    let (Some(major), Some(minor)) = (major, minor) else {
        return Err(InspectError::unexpected(VERSION, format!("unreadable version {text:?}")));
    };
    Ok(NvmeCliVersion {
        major,
        minor,
        text: text.to_string(),
        libnvme: word_after("libnvme version ").map(str::to_string),
    })
}

const LIST: &str = "nvme list";
const LIST_SUBSYS: &str = "nvme list-subsys";
const ID_CTRL: &str = "nvme id-ctrl";
const LIST_NS: &str = "nvme list-ns";

/// Reads `nvme list -o json` (with or without `-v`).
///
/// Accepted shapes:
/// - flat `{"Devices":[{"DevicePath","NameSpace":<int>,...}]}` of nvme-cli
///   1.x and of 2.x without `-v` (2.0-2.10, 2.13+);
/// - detailed `{"Devices":[{"HostNQN","Subsystems":[{"SubsystemNQN",
///   "Controllers":[{...,"Namespaces":[...]}],"Namespaces":[...]}]}]}` of
///   2.11/2.12 and of `-v`, with namespaces under a controller (PCIe,
///   non-multipath) or under the subsystem (native multipath), and
///   subsystems without a `Controllers` key;
/// - the `--output-format-version=2` verbose schema (2.16+), where each
///   subsystem-level namespace lists its `Paths` with controller details.
///
/// Blank input gives an empty list (nvme-cli prints nothing when it fails;
/// check its exit status). A `DevicePath` without `/dev/` (nvme-cli 2.x prints the bare name
/// when the node does not exist yet: `nvme_dev_full_path()`) is given its `/dev/` path; the
/// caller waits for the node.
pub fn parse_list(json: &str) -> Result<Vec<NvmeNamespace>, InspectError> {
    if json.trim().is_empty() {
        return Ok(Vec::new());
    }
    let root = parse_json(LIST, json)?;
    let devices = match root.get("Devices") {
        Some(Value::Array(devices)) => devices,
        Some(_) => {
            return Err(InspectError::unexpected(LIST, "\"Devices\" is not an array"));
        }
        None => return Err(InspectError::unexpected(LIST, "no \"Devices\" key")),
    };
    let mut out = Vec::new();
    for device in devices {
        if let Some(subsystems) = device.get("Subsystems") {
            read_detailed_host(subsystems, &mut out)?;
        } else {
            out.push(read_flat_item(device)?);
        }
    }
    Ok(out)
}

/// One element of the flat `Devices` array.
fn read_flat_item(item: &Value) -> Result<NvmeNamespace, InspectError> {
    let device = str_field(item, "DevicePath")
        .ok_or_else(|| InspectError::unexpected(LIST, "device entry without \"DevicePath\""))?;
    let device = if device.starts_with('/') { device } else { format!("/dev/{device}") };
    Ok(NvmeNamespace {
        device,
        nsid: u64_field(item, "NameSpace").and_then(|n| u32::try_from(n).ok()),
        subsystem_nqn: None,
        model: str_field(item, "ModelNumber"),
        serial: str_field(item, "SerialNumber"),
        firmware: str_field(item, "Firmware"),
        size_bytes: u64_field(item, "PhysicalSize"),
        transport: None,
        address: None,
    })
}

/// Controller details shared by a controller object of the detailed shape
/// and a path object of the `--output-format-version=2` shape.
struct ControllerInfo<'a> {
    object: Option<&'a Value>,
}

impl ControllerInfo<'_> {
    fn get(&self, key: &str) -> Option<String> {
        self.object.and_then(|o| str_field(o, key))
    }
}

/// The `Subsystems` array of one host in the detailed shape.
fn read_detailed_host(subsystems: &Value, out: &mut Vec<NvmeNamespace>) -> Result<(), InspectError> {
    let subsystems =
        subsystems.as_array().ok_or_else(|| InspectError::unexpected(LIST, "\"Subsystems\" is not an array"))?;
    for subsystem in subsystems {
        let nqn = str_field(subsystem, "SubsystemNQN");
        let controllers: &[Value] =
            subsystem.get("Controllers").and_then(Value::as_array).map(Vec::as_slice).unwrap_or(&[]);

        // Namespaces attached to one controller (PCIe, non-multipath).
        for controller in controllers {
            for ns in array_field(controller, "Namespaces") {
                let info = ControllerInfo { object: Some(controller) };
                out.push(read_detailed_namespace(ns, &nqn, &info)?);
            }
        }

        // Namespaces of the subsystem (native multipath).
        for ns in array_field(subsystem, "Namespaces") {
            let ns_name = str_field(ns, "NameSpace").unwrap_or_default();
            let info = ControllerInfo {
                object: best_path_of_namespace(ns).or_else(|| best_controller_for(controllers, &ns_name)),
            };
            out.push(read_detailed_namespace(ns, &nqn, &info)?);
        }
    }
    Ok(())
}

fn array_field<'a>(obj: &'a Value, key: &str) -> &'a [Value] {
    obj.get(key).and_then(Value::as_array).map(Vec::as_slice).unwrap_or(&[])
}

fn read_detailed_namespace(
    ns: &Value,
    nqn: &Option<String>,
    controller: &ControllerInfo,
) -> Result<NvmeNamespace, InspectError> {
    let name = str_field(ns, "NameSpace")
        .ok_or_else(|| InspectError::unexpected(LIST, "namespace entry without \"NameSpace\""))?;
    let device = if name.starts_with('/') { name.clone() } else { format!("/dev/{name}") };
    let nsid = u64_field(ns, "NSID").or_else(|| u64_field(ns, "NameSpace")).and_then(|n| u32::try_from(n).ok());
    Ok(NvmeNamespace {
        device,
        nsid,
        subsystem_nqn: nqn.clone(),
        model: controller.get("ModelNumber"),
        serial: controller.get("SerialNumber"),
        firmware: controller.get("Firmware"),
        size_bytes: u64_field(ns, "PhysicalSize"),
        transport: controller.get("Transport"),
        address: controller.get("Address"),
    })
}

/// Rank of an ANA state: lower is better.
fn ana_rank(state: Option<&str>) -> u8 {
    match state {
        Some("optimized") => 0,
        Some("non-optimized") => 1,
        _ => 2,
    }
}

/// `--output-format-version=2`: a subsystem-level namespace has `Paths`
/// whose entries carry the controller details. Picks the best ANA state.
fn best_path_of_namespace(ns: &Value) -> Option<&Value> {
    array_field(ns, "Paths")
        .iter()
        .filter(|p| p.get("Controller").is_some_and(Value::is_string))
        .min_by_key(|p| ana_rank(p.get("ANAState").and_then(Value::as_str)))
}

/// Detailed shape, multipath: the controller whose `Paths` reach the
/// namespace in the best ANA state; else the first controller.
fn best_controller_for<'a>(controllers: &'a [Value], ns_name: &str) -> Option<&'a Value> {
    let mut best: Option<(&Value, u8)> = None;
    for controller in controllers {
        for path in array_field(controller, "Paths") {
            let reaches = str_field(path, "Path").and_then(|p| path_namespace_name(&p)).is_some_and(|n| n == ns_name);
            if !reaches {
                continue;
            }
            let rank = ana_rank(path.get("ANAState").and_then(Value::as_str));
            if best.is_none_or(|(_, r)| rank < r) {
                best = Some((controller, rank));
            }
        }
    }
    best.map(|(c, _)| c).or_else(|| controllers.first())
}

/// `"nvme9c11n1"` (path of controller 11 to namespace nvme9n1) -> `"nvme9n1"`.
fn path_namespace_name(path: &str) -> Option<String> {
    let rest = path.strip_prefix("nvme")?;
    let subsys_len = rest.find(|c: char| !c.is_ascii_digit())?;
    let (subsys, rest) = rest.split_at(subsys_len);
    let rest = rest.strip_prefix('c')?;
    let ctrl_len = rest.find(|c: char| !c.is_ascii_digit())?;
    let ns_part = &rest[ctrl_len..];
    if subsys.is_empty() || ctrl_len == 0 || !ns_part.starts_with('n') {
        return None;
    }
    Some(format!("nvme{subsys}{ns_part}"))
}

/// Reads `nvme list-subsys -o json`.
///
/// Accepted shapes:
/// - nvme-cli 1.x: `{"Subsystems":[{"Name","NQN"},{"Paths":[...]},...]}`
///   where a `Paths` element belongs to the subsystem before it (the
///   documented shape), or `{"Subsystems":[{"Name","NQN","Paths":[...]}]}`;
/// - nvme-cli 2.x: a top-level array of hosts
///   `[{"HostNQN","Subsystems":[{"Name","NQN","IOPolicy","Paths":[...]}]}]`;
/// - a single host object `{"HostNQN",...,"Subsystems":[...]}`;
/// - `{}`: nvme-cli 1.16 with no subsystem at all (it adds the `Subsystems` key only when there
///   is one, and exits 0), as an empty list.
///
/// Blank input gives an empty list.
pub fn parse_list_subsys(json: &str) -> Result<Vec<NvmeSubsystem>, InspectError> {
    if json.trim().is_empty() {
        return Ok(Vec::new());
    }
    let root = parse_json(LIST_SUBSYS, json)?;
    let mut out = Vec::new();
    match &root {
        Value::Array(hosts) => {
            for host in hosts {
                read_subsystems(host, &mut out)?;
            }
        }
        Value::Object(m) if m.is_empty() => {}
        Value::Object(_) => read_subsystems(&root, &mut out)?,
        _ => {
            return Err(InspectError::unexpected(LIST_SUBSYS, "top level is neither an object nor an array"));
        }
    }
    Ok(out)
}

fn read_subsystems(host: &Value, out: &mut Vec<NvmeSubsystem>) -> Result<(), InspectError> {
    let entries = match host.get("Subsystems") {
        Some(Value::Array(entries)) => entries,
        Some(_) => {
            return Err(InspectError::unexpected(LIST_SUBSYS, "\"Subsystems\" is not an array"));
        }
        None => {
            return Err(InspectError::unexpected(LIST_SUBSYS, "no \"Subsystems\" key"));
        }
    };
    // Index in `out` of the subsystem that a bare {"Paths":[...]} entry
    // belongs to (1.x shape); only subsystems read from this host count.
    let mut current: Option<usize> = None;
    for entry in entries {
        let paths = read_paths(entry)?;
        if entry.get("NQN").is_some() || entry.get("Name").is_some() {
            let name = str_field(entry, "Name").unwrap_or_default();
            let nqn = str_field(entry, "NQN")
                .ok_or_else(|| InspectError::unexpected(LIST_SUBSYS, format!("subsystem {name:?} has no NQN")))?;
            out.push(NvmeSubsystem { name, nqn, controllers: paths });
            current = Some(out.len() - 1);
        } else if entry.get("Paths").is_some() {
            let index = current
                .ok_or_else(|| InspectError::unexpected(LIST_SUBSYS, "\"Paths\" entry before any subsystem entry"))?;
            out[index].controllers.extend(paths);
        }
    }
    Ok(())
}

fn read_paths(entry: &Value) -> Result<Vec<NvmePath>, InspectError> {
    let mut paths = Vec::new();
    for path in array_field(entry, "Paths") {
        let name = str_field(path, "Name")
            .ok_or_else(|| InspectError::unexpected(LIST_SUBSYS, "path entry without \"Name\""))?;
        paths.push(NvmePath {
            name,
            transport: str_field(path, "Transport").unwrap_or_default(),
            address: str_field(path, "Address").unwrap_or_default(),
            state: str_field(path, "State"),
        });
    }
    Ok(paths)
}

/// Reads `nvme list-ns <controller>`: the controller's active namespace IDs (Identify, CNS
/// 02h), which the controller reports whether or not the kernel has made their block devices
/// yet. Takes nvme-cli's plain shape (`[   0]:0x1`, one line a namespace, 1.x and 2.x) and its
/// JSON (`{"nsid_list":[{"nsid":1}]}`, 2.x with `-o json`).
pub fn parse_list_ns(text: &str) -> Result<Vec<u32>, InspectError> {
    let text = text.trim();
    if text.starts_with('{') {
        let root = parse_json(LIST_NS, text)?;
        let list = root
            .get("nsid_list")
            .and_then(Value::as_array)
            .ok_or_else(|| InspectError::unexpected(LIST_NS, "no \"nsid_list\" array"))?;
        return list
            .iter()
            .map(|e| {
                u64_field(e, "nsid")
                    .and_then(|n| u32::try_from(n).ok())
                    .ok_or_else(|| InspectError::unexpected(LIST_NS, "an entry without a numeric \"nsid\""))
            })
            .collect();
    }
    let mut ids = Vec::new();
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let value = line
            .strip_prefix('[')
            .and_then(|rest| rest.split_once("]:"))
            .map(|(_, v)| v.trim())
            .ok_or_else(|| InspectError::unexpected(LIST_NS, format!("line {line:?} is not `[index]:nsid`")))?;
        let id = match value.strip_prefix("0x").or_else(|| value.strip_prefix("0X")) {
            Some(hex) => u32::from_str_radix(hex, 16).ok(),
            None => value.parse().ok(),
        };
        ids.push(id.ok_or_else(|| InspectError::unexpected(LIST_NS, format!("{value:?} is not an NSID")))?);
    }
    Ok(ids)
}

/// Reads `nvme id-ctrl -o json`: model (`mn`), serial (`sn`) and firmware
/// (`fr`), with the space padding removed.
pub fn parse_id_ctrl(json: &str) -> Result<NvmeController, InspectError> {
    if json.trim().is_empty() {
        return Err(InspectError::Empty { tool: ID_CTRL });
    }
    let root = parse_json(ID_CTRL, json)?;
    if !root.is_object() {
        return Err(InspectError::unexpected(ID_CTRL, "top level is not an object"));
    }
    let field = |key: &str| {
        str_field(&root, key).ok_or_else(|| InspectError::unexpected(ID_CTRL, format!("missing \"{key}\"")))
    };
    Ok(NvmeController { model: field("mn")?, serial: field("sn")?, firmware: field("fr")? })
}

/// Reads the stdout of `nvme connect` and returns the new controller's name
/// (e.g. `"nvme1"`, without `/dev/`).
///
/// Recognises `connecting to device: nvme1` (nvme-cli 2.7+),
/// `device: nvme1` (1.15-2.6 with `-o normal`) and `{"device":"nvme1"}`
/// (`-o json`). Older releases print nothing on success: then `None`, and
/// the caller should look the controller up with `nvme list-subsys`.
pub fn connected_device(stdout: &str) -> Option<String> {
    let text = stdout.trim();
    if text.starts_with('{') {
        let value: Value = serde_json::from_str(text).ok()?;
        return str_field(&value, "device").filter(|d| controller_instance(d).is_some());
    }
    text.lines().find_map(|line| {
        let line = line.trim();
        let rest = line.strip_prefix("connecting to device:").or_else(|| line.strip_prefix("device:"))?;
        let name = rest.trim();
        controller_instance(name).map(|_| name.to_string())
    })
}

/// Reads the stdout of `nvme disconnect -n NQN` (`NQN:<nqn> disconnected
/// <n> controller(s)`, unchanged from 1.x to 2.16) or `nvme disconnect-all`
/// / `nvme disconnect -d` (`disconnected <n> controller(s)`). Several such
/// lines are added up; `None` when there is none.
pub fn disconnected_count(stdout: &str) -> Option<u32> {
    let mut total: Option<u32> = None;
    for line in stdout.lines() {
        let Some((_, after)) = line.split_once("disconnected ") else {
            continue;
        };
        let mut words = after.split_whitespace();
        let (Some(count), Some(unit)) = (words.next(), words.next()) else {
            continue;
        };
        if !unit.starts_with("controller") {
            continue;
        }
        if let Ok(n) = count.parse::<u32>() {
            total = Some(total.unwrap_or(0).saturating_add(n));
        }
    }
    total
}

#[cfg(test)]
mod tests;
