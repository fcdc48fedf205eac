//! Which block device of a connected subsystem is the namespace an experiment names: the
//! subsystem found by NQN in `nvme list-subsys`, its live controllers, and the namespace (by
//! NSID, or the only one) among what `nvme list` shows. Never "the first match": several
//! namespaces without an NSID asked for are [`NqnMatch::NeedsNsid`].

use std::collections::BTreeSet;

use super::{NvmeNamespace, NvmePath, NvmeSubsystem};

/// What [`match_namespace_for_nqn`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NqnMatch {
    /// The namespace block device, e.g. `"/dev/nvme2n1"`.
    Found(String),
    /// `nvme list-subsys` does not list the subsystem (not connected, or not yet).
    NotListed,
    /// The subsystem is listed, but every controller is connecting, deleting or dead.
    NoLiveController,
    /// The subsystem is listed, but no namespace (with the NSID asked for) belongs to it.
    NoNamespace,
    /// The flat `nvme list` names no subsystem, and `nvmeXnY` reads as two different devices
    /// (X as subsystem instance or as controller): these candidates, not a guess.
    Ambiguous(Vec<String>),
    /// No NSID was asked for and the subsystem exposes more than one namespace: these, one
    /// device per namespace, in NSID order. Which one is meant is for the experiment file to
    /// say (`nsid`), never for list order to decide.
    NeedsNsid(Vec<SubsystemNamespace>),
}

/// A namespace of a subsystem as `nvme list` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubsystemNamespace {
    pub device: String,
    pub nsid: Option<u32>,
}

impl std::fmt::Display for SubsystemNamespace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.nsid {
            Some(n) => write!(f, "{} (NSID {n})", self.device),
            None => write!(f, "{} (NSID not shown)", self.device),
        }
    }
}

/// Of `candidates` (every listed device of one subsystem that fits), one answer: the only
/// namespace, or [`NqnMatch::NeedsNsid`] when no NSID was asked for and they are several
/// namespaces. Several devices of one NSID are one namespace seen through several controllers
/// (no native multipath): the first of them is as good as any.
fn one_namespace(candidates: &[&NvmeNamespace], nsid: Option<u32>) -> Option<NqnMatch> {
    let first = candidates.first()?;
    if nsid.is_none() {
        let mut distinct: Vec<SubsystemNamespace> = Vec::new();
        for ns in candidates {
            let same = |d: &SubsystemNamespace| match (d.nsid, ns.nsid) {
                (Some(a), Some(b)) => a == b,
                _ => d.device == ns.device,
            };
            if !distinct.iter().any(same) {
                distinct.push(SubsystemNamespace { device: ns.device.clone(), nsid: ns.nsid });
            }
        }
        if distinct.len() > 1 {
            distinct.sort_by_key(|d| (d.nsid.is_none(), d.nsid, d.device.clone()));
            return Some(NqnMatch::NeedsNsid(distinct));
        }
    }
    Some(NqnMatch::Found(first.device.clone()))
}

/// Finds the namespace block device (e.g. `"/dev/nvme2n1"`) of the subsystem
/// with NQN `nqn`, from `nvme list -o json` ([`parse_list`]) and
/// `nvme list-subsys -o json` ([`parse_list_subsys`]). With `nsid`, only
/// that namespace ID qualifies; without it, the subsystem's only namespace: when it
/// lists more than one, there is no answer ([`NqnMatch::NeedsNsid`]), never the first
/// in list order (namespaces appear asynchronously, so list order is not stable).
///
/// 1. A namespace whose `subsystem_nqn` is `nqn` (detailed list shape).
/// 2. Otherwise, among namespaces without a known NQN (flat list shape),
///    one whose device name `nvmeXnY` matches the subsystem through `X`:
///    - native multipath: `X` is the subsystem instance (`nvme-subsysX`);
///    - without multipath: `X` is a controller (`nvmeX`) of the subsystem,
///      skipping controllers whose state is `connecting`, `deleting`
///      (also `deleting (no IO)`) or `dead`.
///
///    A subsystem whose listed controllers are all in those states gives
///    `None` in this step.
///
///    The two readings can point at different devices. Then the listing
///    decides: a reading is ruled out if some listed device's `X` is not a
///    subsystem instance (resp. not a controller) known to `subsystems`. If
///    both readings stay possible and disagree, this returns `None` rather
///    than guess.
///
/// `None` in every case but a single match; [`match_namespace_for_nqn`] says why.
pub fn find_namespace_for_nqn(
    list: &[NvmeNamespace],
    subsystems: &[NvmeSubsystem],
    nqn: &str,
    nsid: Option<u32>,
) -> Option<String> {
    match match_namespace_for_nqn(list, subsystems, nqn, nsid) {
        NqnMatch::Found(d) => Some(d),
        _ => None,
    }
}

/// Like [`find_namespace_for_nqn`], with the reason when there is no single answer.
pub fn match_namespace_for_nqn(
    list: &[NvmeNamespace],
    subsystems: &[NvmeSubsystem],
    nqn: &str,
    nsid: Option<u32>,
) -> NqnMatch {
    let nqn = nqn.trim();
    let wanted = |ns: &NvmeNamespace| nsid.is_none_or(|n| ns.nsid == Some(n));

    let named: Vec<&NvmeNamespace> =
        list.iter().filter(|ns| ns.subsystem_nqn.as_deref().map(str::trim) == Some(nqn) && wanted(ns)).collect();
    if let Some(answer) = one_namespace(&named, nsid) {
        return answer;
    }

    let targets: Vec<&NvmeSubsystem> = subsystems.iter().filter(|s| s.nqn.trim() == nqn).collect();
    if targets.is_empty() {
        return NqnMatch::NotListed;
    }
    let target_subsys: BTreeSet<u32> = targets.iter().filter_map(|s| subsystem_instance(&s.name)).collect();
    let target_ctrls: BTreeSet<u32> = targets
        .iter()
        .flat_map(|s| s.controllers.iter())
        .filter(|c| controller_usable(c))
        .filter_map(|c| controller_instance(&c.name))
        .collect();
    let has_controllers = targets.iter().any(|s| !s.controllers.is_empty());
    if has_controllers && target_ctrls.is_empty() {
        return NqnMatch::NoLiveController; // every controller of the subsystem is going away
    }

    let unattributed: Vec<&NvmeNamespace> = list.iter().filter(|ns| ns.subsystem_nqn.is_none()).collect();
    let fitting = |instances: &BTreeSet<u32>| -> Vec<&NvmeNamespace> {
        unattributed
            .iter()
            .copied()
            .filter(|ns| wanted(ns) && namespace_instance(&ns.device).is_some_and(|x| instances.contains(&x)))
            .collect()
    };
    let (subsys_reading, ctrl_reading) = (fitting(&target_subsys), fitting(&target_ctrls));

    let all_subsys: BTreeSet<u32> = subsystems.iter().filter_map(|s| subsystem_instance(&s.name)).collect();
    let all_ctrls: BTreeSet<u32> =
        subsystems.iter().flat_map(|s| s.controllers.iter()).filter_map(|c| controller_instance(&c.name)).collect();
    let consistent = |known: &BTreeSet<u32>| {
        unattributed.iter().all(|ns| namespace_instance(&ns.device).is_none_or(|x| known.contains(&x)))
    };
    let (multipath_possible, plain_possible) = match (consistent(&all_subsys), consistent(&all_ctrls)) {
        (false, false) => (true, true), // listing incomplete: nothing ruled out
        other => other,
    };
    let by_subsys = one_namespace(&subsys_reading, nsid).filter(|_| multipath_possible);
    let by_ctrl = one_namespace(&ctrl_reading, nsid).filter(|_| plain_possible);

    match (by_subsys, by_ctrl) {
        (Some(NqnMatch::Found(a)), Some(NqnMatch::Found(b))) if a == b => NqnMatch::Found(a),
        (Some(NqnMatch::Found(a)), Some(NqnMatch::Found(b))) => NqnMatch::Ambiguous(vec![a, b]),
        // Several namespaces under either reading: nsid is needed whichever device is meant.
        (Some(several @ NqnMatch::NeedsNsid(_)), _) | (_, Some(several @ NqnMatch::NeedsNsid(_))) => several,
        (Some(answer), None) | (None, Some(answer)) => answer,
        (Some(a), Some(_)) => a,
        (None, None) => NqnMatch::NoNamespace,
    }
}

fn controller_usable(path: &NvmePath) -> bool {
    match path.state.as_deref() {
        Some(state) => {
            let state = state.trim().to_ascii_lowercase();
            !(state.starts_with("deleting") || state == "connecting" || state == "dead")
        }
        None => true,
    }
}

/// `"nvme-subsys3"` -> 3.
fn subsystem_instance(name: &str) -> Option<u32> {
    name.trim().strip_prefix("nvme-subsys")?.parse().ok()
}

/// `"nvme2"` -> 2.
pub(super) fn controller_instance(name: &str) -> Option<u32> {
    let digits = name.trim().strip_prefix("nvme")?;
    if digits.is_empty() || !digits.chars().all(|c| c.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// `"/dev/nvme2n1"` -> 2 (the `X` of `nvmeXnY`). Partitions and hidden path
/// devices (`nvme0c1n1`) give `None`.
fn namespace_instance(device: &str) -> Option<u32> {
    let base = device.rsplit('/').next()?;
    let (x, y) = base.strip_prefix("nvme")?.split_once('n')?;
    let is_number = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_digit());
    if !is_number(x) || !is_number(y) {
        return None;
    }
    x.parse().ok()
}
