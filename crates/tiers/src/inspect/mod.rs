//! PLACEHOLDER: replaced by the full parsers (helper task). Minimal versions so the crate builds.
#![allow(dead_code)]

#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct InspectError(pub String);

pub mod ndctl {
    use super::InspectError;
    #[derive(Debug, Clone, PartialEq, serde::Serialize)]
    pub enum PmemMode { Fsdax, Devdax, Sector, Raw, Other(String) }
    #[derive(Debug, Clone, PartialEq, serde::Serialize)]
    pub struct PmemNamespace { pub dev: String, pub mode: PmemMode, pub blockdev: Option<String>, pub chardev: Option<String>, pub size_bytes: Option<u64>, pub name: Option<String>, pub enabled: bool, pub map: Option<String>, pub align: Option<u64>, pub region: Option<String> }
    pub fn parse_list(_json: &str) -> Result<Vec<PmemNamespace>, InspectError> { Err(InspectError("ndctl parser not yet available".into())) }
    pub fn find<'a>(list: &'a [PmemNamespace], wanted: &str) -> Option<&'a PmemNamespace> {
        list.iter().find(|n| n.dev == wanted || n.blockdev.as_deref() == Some(wanted.trim_start_matches("/dev/")))
    }
}

pub mod nvme {
    use super::InspectError;
    #[derive(Debug, Clone, PartialEq, serde::Serialize)]
    pub struct NvmeNamespace { pub device: String, pub nsid: Option<u32>, pub subsystem_nqn: Option<String>, pub model: Option<String>, pub serial: Option<String>, pub firmware: Option<String>, pub size_bytes: Option<u64>, pub transport: Option<String>, pub address: Option<String> }
    #[derive(Debug, Clone, PartialEq, serde::Serialize)]
    pub struct NvmeSubsystem { pub name: String, pub nqn: String, pub controllers: Vec<NvmePath> }
    #[derive(Debug, Clone, PartialEq, serde::Serialize)]
    pub struct NvmePath { pub name: String, pub transport: String, pub address: String, pub state: Option<String> }
    pub fn parse_list(_json: &str) -> Result<Vec<NvmeNamespace>, InspectError> { Err(InspectError("nvme parser not yet available".into())) }
    pub fn parse_list_subsys(_json: &str) -> Result<Vec<NvmeSubsystem>, InspectError> { Err(InspectError("nvme parser not yet available".into())) }
    pub fn find_namespace_for_nqn(_list: &[NvmeNamespace], _subsystems: &[NvmeSubsystem], _nqn: &str, _nsid: Option<u32>) -> Option<String> { None }
}

pub mod blkid {
    use std::collections::BTreeMap;
    #[derive(Debug, Clone, PartialEq, serde::Serialize)]
    pub struct Signature { pub kind: String, pub name: String, pub label: Option<String>, pub uuid: Option<String> }
    pub fn parse_export(text: &str) -> BTreeMap<String, String> {
        text.lines().filter_map(|l| l.split_once('=')).map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }
    pub fn signatures(export: &BTreeMap<String, String>) -> Vec<Signature> {
        let mut out = Vec::new();
        if let Some(t) = export.get("TYPE") { out.push(Signature { kind: "filesystem".into(), name: t.clone(), label: export.get("LABEL").cloned(), uuid: export.get("UUID").cloned() }); }
        if let Some(t) = export.get("PTTYPE") { out.push(Signature { kind: "partition-table".into(), name: t.clone(), label: None, uuid: export.get("PTUUID").cloned() }); }
        out
    }
}

pub mod parted {
    pub fn partition_node(disk: &str, number: u32) -> String {
        if disk.ends_with(|c: char| c.is_ascii_digit()) { format!("{disk}p{number}") } else { format!("{disk}{number}") }
    }
}

pub mod xfs {
    use super::InspectError;
    #[derive(Debug, Clone, PartialEq, serde::Serialize)]
    pub struct XfsInfo { pub block_size: u32, pub sector_size: u32, pub ag_count: u32, pub ag_size_blocks: u64, pub data_blocks: u64, pub reflink: Option<bool>, pub crc: Option<bool>, pub log_blocks: u64, pub sunit: u64, pub swidth: u64, pub raw: String }
    pub fn parse_info(_text: &str) -> Result<XfsInfo, InspectError> { Err(InspectError("xfs parser not yet available".into())) }
}
