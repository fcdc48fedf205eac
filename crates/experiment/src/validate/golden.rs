//! `[experiment] golden_copy`: where the data sets are built once before they are copied onto
//! the placements (a device of the file, or a directory), and whether an emulated device named
//! there has the room. A directory's room and existence are the machine's, checked by `compare`
//! before step 1.

use std::path::{Component, Path, PathBuf};

use toml::Spanned;

use super::Validator;
use crate::golden::RoomNeed;
use crate::model::{Experiment, GoldenCopy, Placement};
use crate::raw::{RawFile, RawGoldenCopy};
use crate::spans::span;

/// What `golden_copy = { ... }` looks like, for messages.
const SHAPES: &str =
    "golden_copy = { device = \"<a device of this file>\" } or golden_copy = { dir = \"/absolute/path\" }";

impl Validator<'_> {
    pub(super) fn golden_copy(&mut self, raw: &RawFile, placements: &[Placement]) -> GoldenCopy {
        let Some(g) = raw.experiment.get_ref().golden_copy.as_ref() else { return GoldenCopy::StateDir };
        match g.get_ref() {
            RawGoldenCopy { device: Some(_), dir: Some(dir) } => {
                self.err(
                    span(dir),
                    "experiment.golden_copy",
                    "`device` and `dir` conflict: the golden copy lives in one place; keep one of them",
                );
                GoldenCopy::StateDir
            }
            RawGoldenCopy { device: None, dir: None } => {
                self.err(
                    span(g),
                    "experiment.golden_copy",
                    format!(
                        "say where the golden copy goes: {SHAPES}; leave the key out to build it in the state directory ($PGTIER_STATE_DIR, default /var/lib/pgtier)"
                    ),
                );
                GoldenCopy::StateDir
            }
            RawGoldenCopy { device: Some(d), dir: None } => self.golden_device(raw, d, placements),
            RawGoldenCopy { device: None, dir: Some(p) } => self.golden_dir(p),
        }
    }

    fn golden_device(&mut self, raw: &RawFile, d: &Spanned<String>, placements: &[Placement]) -> GoldenCopy {
        let key = "experiment.golden_copy.device";
        let name = d.get_ref();
        let defined: Vec<&str> = raw.device.iter().map(|d| d.get_ref().name.get_ref().as_str()).collect();
        let used: Vec<&str> =
            defined.iter().copied().filter(|n| placements.iter().any(|p| p.devices().contains(n))).collect();
        if !defined.contains(&name.as_str()) {
            self.err(span(d), key, format!("no device named {name:?}; defined devices: {}", defined.join(", ")));
        } else if !used.contains(&name.as_str()) {
            self.err(
                span(d),
                key,
                format!(
                    "device {name:?} is used by no placement, so pgtier does not format or mount it; name a device a placement uses ({}), or a directory: golden_copy = {{ dir = \"/absolute/path\" }}",
                    used.join(", ")
                ),
            );
        }
        GoldenCopy::Device { name: name.clone(), origin: self.origin(span(d), key) }
    }

    fn golden_dir(&mut self, p: &Spanned<String>) -> GoldenCopy {
        let key = "experiment.golden_copy.dir";
        let path = Path::new(p.get_ref());
        if !path.is_absolute() {
            self.err(
                span(p),
                key,
                format!(
                    "{:?} is a relative path, which would depend on where pgtier is started; give an absolute path such as \"/srv/pgtier\"",
                    p.get_ref()
                ),
            );
        } else if path.components().any(|c| c == Component::ParentDir) {
            self.err(span(p), key, format!("{:?} contains `..`; give the directory's path without it", p.get_ref()));
        } else if let Some(fs) = ["/proc", "/sys", "/dev", "/run"].iter().find(|v| path.starts_with(v)) {
            self.err(
                span(p),
                key,
                format!(
                    "{:?} is below {fs}, which holds no data set (a virtual or memory filesystem); name a directory on a disk",
                    p.get_ref()
                ),
            );
        }
        GoldenCopy::Dir { path: PathBuf::from(p.get_ref()), origin: self.origin(span(p), key) }
    }

    /// An emulated device that would hold the golden copy: its size is in the file, so a device
    /// too small for the golden copy and what the placements put on it is refused here (on real
    /// devices the plan checks the device's size before anything is written).
    pub(super) fn golden_room_emulated(&mut self, exp: &Experiment, raw: &RawFile) {
        let GoldenCopy::Device { name, origin } = &exp.golden_copy else { return };
        let Some(d) = exp.device(name) else { return };
        let need = exp.golden_room();
        let size = d.emulation.size_bytes;
        // XFS keeps a few percent for its log and metadata (as the plan's room check counts).
        let usable = size / 100 * 97;
        if usable >= need.with_margin() {
            return;
        }
        let own = raw
            .device
            .iter()
            .find(|r| r.get_ref().name.get_ref() == name)
            .and_then(|r| r.get_ref().emulate.as_ref())
            .and_then(|e| e.get_ref().size.as_ref())
            .map(|s| (s.span(), format!("device[{name}].emulate.size")));
        let shared = raw
            .emulate
            .as_ref()
            .and_then(|e| e.get_ref().device_size.as_ref())
            .map(|s| (s.span(), "emulate.device_size".to_string()));
        let (at, key) = match own.or(shared) {
            Some((s, k)) => (Some(s), k),
            // Neither: the default size; the place to change is the golden copy's line.
            None => (
                raw.experiment
                    .get_ref()
                    .golden_copy
                    .as_ref()
                    .and_then(|g| g.get_ref().device.as_ref())
                    .map(|d| d.span()),
                origin.key.clone(),
            ),
        };
        self.err(at, key, emulated_too_small(name, size, usable, &need, origin));
    }
}

fn emulated_too_small(name: &str, size: u64, usable: u64, need: &RoomNeed, origin: &crate::Origin) -> String {
    use tiers::plan::human_bytes as show;
    // The size that holds it, rounded up to 256 MiB.
    let step = 256u64 << 20;
    let suggest = (need.with_margin() / 97 * 100).div_ceil(step) * step;
    let suggest =
        if suggest.is_multiple_of(1 << 30) { format!("{}GiB", suggest >> 30) } else { format!("{}MiB", suggest >> 20) };
    format!(
        "emulated device {name:?} ({}, about {} after XFS's own use) cannot hold the golden copy that {origin} puts on it with what the placements put there: about {} with a 5% margin ({}); give it [device.emulate] size = \"{suggest}\" or more, or put the golden copy elsewhere (golden_copy = {{ dir = \"/absolute/path\" }}, or no golden_copy: the state directory)",
        show(size),
        show(usable),
        show(need.with_margin()),
        need.describe()
    )
}
