//! Where the data sets' golden copies are built (`[experiment] golden_copy`): below the state
//! directory (the default), in a directory pgtier makes on the mounted filesystem of a device of
//! the experiment, or in one it makes below a directory the file names. The room there is
//! checked before step 1 (a real device's size by the plan, an emulated one's by the experiment
//! file's validation, a directory's free space here); the directory pgtier makes is recorded in
//! the run record before it is made, so teardown and `cleanup` remove exactly it. The dry run
//! says where the golden copy goes, how large it is, the room there and how long the copies
//! onto the placements take.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use experiment::{ConfigError, ConfigErrors, Experiment, GoldenCopy, Origin};
use journal::{Journal, Undo};
use runner::matrix::{MatrixSpec, PlannedRun};
use runner::{DbUser, RunnerEnv};
use tiers::Plan;
use tiers::plan::human_bytes;
use tiers::spec::{Backing, DeviceClass, DeviceSpec, RealDevice};

use crate::paths;

/// The directory pgtier makes on a golden-copy device's filesystem (a placement's directories
/// there are named after it, and a placement name has no `.`).
const ON_DEVICE: &str = "pgtier.golden";

/// Where this run builds its golden copies.
#[derive(Clone, Debug, PartialEq)]
pub struct GoldenSite {
    /// Each data set's golden cluster goes to `root/<key>`.
    pub root: PathBuf,
    /// The directory the file names (`golden_copy = { dir = ... }`), below which `root` is made.
    pub named_dir: Option<PathBuf>,
    /// Made by pgtier and recorded in the run record (false: the run's work directory, which
    /// teardown removes with everything in it).
    pub own_record: bool,
}

/// Where `exp` puts the golden copies of run `run_id` (the plan gives the devices' mount points).
pub fn site(exp: &Experiment, plan: &Plan, run_id: &str) -> GoldenSite {
    match &exp.golden_copy {
        GoldenCopy::StateDir => GoldenSite { root: plan.work_dir.join("golden"), named_dir: None, own_record: false },
        GoldenCopy::Device { name, .. } => {
            let mount = plan
                .mountpoints
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, p)| p.clone())
                .unwrap_or_else(|| panic!("golden-copy device {name} has no mount point in the plan"));
            GoldenSite { root: mount.join(ON_DEVICE), named_dir: None, own_record: true }
        }
        GoldenCopy::Dir { path, .. } => GoldenSite {
            root: path.join(format!("{ON_DEVICE}.{run_id}")),
            named_dir: Some(path.clone()),
            own_record: true,
        },
    }
}

/// On real devices the plan checks, with the device's other checks, that a golden-copy device
/// holds the golden copy and what its placements put there (an emulated device's size is in the
/// file, which validation checked).
pub fn add_room_check(exp: &Experiment, plan: &mut Plan) {
    if let GoldenCopy::Device { name, .. } = &exp.golden_copy
        && !exp.emulated
    {
        let need = exp.golden_room();
        plan.add_room_check(
            name,
            need.with_margin(),
            &format!("the golden copy and what its placements put there, plus 5%: {}", need.describe()),
        );
    }
}

fn config_error(origin: &Origin, message: String) -> ConfigError {
    ConfigError { file: origin.file.clone(), line: origin.line, column: None, key: Some(origin.key.clone()), message }
}

/// A directory named by the file must exist (or its parent), lie outside pgtier's work
/// directory (where the placements' devices are mounted) and be reachable by the database user,
/// who builds the data set there. Checked before anything is touched; a dry run only notes it.
pub fn check_place(exp: &Experiment, site: &GoldenSite, user: &DbUser) -> Result<(), ConfigErrors> {
    let (Some(dir), Some(origin)) = (&site.named_dir, exp.golden_copy.origin()) else { return Ok(()) };
    match place_problem(dir, user) {
        None => Ok(()),
        Some(why) => Err(ConfigErrors(vec![config_error(origin, why)])),
    }
}

/// What is wrong with `dir` as the place of the golden copy, if anything.
fn place_problem(dir: &Path, user: &DbUser) -> Option<String> {
    let work = paths::work_root();
    if dir.starts_with(&work) {
        return Some(format!(
            "{} is inside pgtier's work directory {}, where the placements' devices are mounted (their PGDATA and pg_wal); name a directory outside it",
            dir.display(),
            work.display()
        ));
    }
    let parent_ok = dir.parent().is_some_and(Path::is_dir);
    if !dir.is_dir() && !parent_ok {
        return Some(format!(
            "neither {} nor its parent is a directory here; create it (mkdir -p {}) or name another",
            dir.display(),
            dir.display()
        ));
    }
    let existing = if dir.is_dir() { dir } else { dir.parent().expect("checked above") };
    for a in existing.ancestors().collect::<Vec<_>>().into_iter().rev() {
        let Ok(m) = std::fs::metadata(a) else { continue };
        let mode = m.mode();
        let x = if m.uid() == user.uid {
            mode & 0o100 != 0
        } else if m.gid() == user.gid || user.groups.contains(&m.gid()) {
            mode & 0o010 != 0
        } else {
            mode & 0o001 != 0
        };
        if !x {
            return Some(format!(
                "the database user {} cannot reach {}: {} is mode {:o} (owner {}, group {}), and the data set is built as that user; let it through (chmod o+x {}) or name another directory",
                user.name,
                dir.display(),
                a.display(),
                mode & 0o7777,
                m.uid(),
                m.gid(),
                a.display()
            ));
        }
    }
    None
}

/// A directory named by the file must have the room for the golden copy, before step 1.
pub fn check_room(exp: &Experiment, site: &GoldenSite) -> Result<()> {
    let (Some(dir), Some(origin)) = (&site.named_dir, exp.golden_copy.origin()) else { return Ok(()) };
    let need = exp.golden_room();
    let Some(free) = runner::dataset::available_bytes(dir) else { return Ok(()) };
    if free < need.with_margin() {
        anyhow::bail!(
            "{origin}: the golden copy needs about {} at {} with a 5% margin ({}), and its filesystem has {} free; free space there, or name a larger filesystem or a device of the experiment (golden_copy = {{ device = \"...\" }})",
            human_bytes(need.with_margin()),
            dir.display(),
            need.describe(),
            human_bytes(free)
        );
    }
    Ok(())
}

/// Makes the golden copies' directory where the file put it, recorded in the run record first:
/// teardown removes what pgtier made (the named directory too when only its parent existed).
pub fn prepare(site: &GoldenSite, journal: &Journal, env: &RunnerEnv) -> Result<()> {
    if !site.own_record {
        return Ok(());
    }
    // The outermost directory this creates.
    let made = site
        .root
        .ancestors()
        .take_while(|a| !a.exists())
        .last()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| site.root.clone());
    if site.root.exists() {
        anyhow::bail!(
            "{} exists already; pgtier builds the golden copies in a directory of its own",
            site.root.display()
        );
    }
    journal
        .record(Undo::RemoveDirAll { path: made.clone() }, "the golden copies of the data sets")
        .context("record the golden copies' directory")?;
    runner::dataset::make_owned_dir(env, &site.root)?;
    eprintln!("golden copies: {} (removed at teardown)", site.root.display());
    Ok(())
}

/// Sequential bandwidth assumed for one place, with where the figure comes from.
#[derive(Clone, Debug, PartialEq)]
pub struct Bandwidth {
    pub bytes_per_sec: u64,
    pub basis: String,
}

const MB: u64 = 1_000_000;

/// pgtier measures no sequential bandwidth (its fio probe measures 8 KiB synchronous writes and
/// 4 KiB random reads, after provisioning), so copy times use nominal figures: the low end of
/// each class's sequential rates, or a device's own throttle when it has one.
pub fn device_bandwidth(d: &DeviceSpec, emulated: bool) -> Bandwidth {
    let (rate, basis) = if emulated {
        match d.emulation.backing {
            Backing::LoopFile => (500 * MB, "emulated on a file of the state directory's disk: assumed 500 MB/s"),
            Backing::Zram => (1000 * MB, "emulated in compressed RAM (zram): assumed 1 GB/s"),
            Backing::TmpfsLoop => (1000 * MB, "emulated on tmpfs: assumed 1 GB/s"),
            Backing::Nbd => (200 * MB, "emulated over NBD in a network namespace: assumed 200 MB/s"),
        }
    } else {
        match d.class {
            DeviceClass::Nvme => {
                (1000 * MB, "NVMe SSD: assumed 1 GB/s, the low end of datacenter drives' sequential writes")
            }
            DeviceClass::Pmem => (2000 * MB, "PMem: assumed 2 GB/s, about one Optane module's write bandwidth"),
            DeviceClass::NvmeTcp => (1000 * MB, "NVMe/TCP: assumed 1 GB/s, about a 10 GbE link"),
        }
    };
    let cap = d.throttle.as_ref().and_then(|t| match (t.read_bytes_per_sec, t.write_bytes_per_sec) {
        (Some(r), Some(w)) => Some(r.min(w)),
        (r, w) => r.or(w),
    });
    match cap {
        Some(c) if c < rate => Bandwidth { bytes_per_sec: c, basis: format!("its throttle: {} MB/s", c / MB) },
        _ => Bandwidth { bytes_per_sec: rate, basis: basis.into() },
    }
}

/// A directory's filesystem (the state directory's, or a named one): not one of the experiment's
/// devices, so nothing is known of it.
fn dir_bandwidth() -> Bandwidth {
    Bandwidth { bytes_per_sec: 500 * MB, basis: "a local filesystem: assumed 500 MB/s (a SATA SSD)".into() }
}

/// The bandwidth of the golden copy's place.
pub fn source_bandwidth(exp: &Experiment) -> Bandwidth {
    match &exp.golden_copy {
        GoldenCopy::Device { name, .. } => {
            exp.device(name).map(|d| device_bandwidth(d, exp.emulated)).unwrap_or_else(dir_bandwidth)
        }
        GoldenCopy::StateDir | GoldenCopy::Dir { .. } => dir_bandwidth(),
    }
}

/// One copy of a data set onto a placement, as the planned runs make them.
#[derive(Clone, Debug, PartialEq)]
pub struct PlannedCopy {
    pub placement: String,
    pub dataset: String,
    pub bytes: u64,
    pub seconds: f64,
    /// How many times the planned order makes it (a placement that switches data sets gets a
    /// fresh copy each time).
    pub times: u32,
    /// The slower side of the copy: reading the golden copy's place, or writing a device of the
    /// placement.
    pub limited_by: String,
    pub bytes_per_sec: u64,
}

/// The copies the planned runs make, in order of first use, with their estimated times: PGDATA
/// (and its tablespaces) about the data set's size, at the slower of the golden copy's place and
/// the placement's devices.
pub fn planned_copies(exp: &Experiment, matrix: &MatrixSpec, runs: &[PlannedRun]) -> Vec<PlannedCopy> {
    let roles = matrix.tablespace_roles();
    let source = source_bandwidth(exp);
    let mut placed: std::collections::HashMap<String, String> = Default::default();
    let mut out: Vec<PlannedCopy> = Vec::new();
    for r in runs {
        let p = &exp.placements[r.placement];
        let d = matrix.workloads[r.workload].dataset(&roles);
        let slot = format!("{}/{}", p.name, r.cell.build);
        if placed.get(&slot) == Some(&d.key()) {
            continue;
        }
        placed.insert(slot, d.key());
        if let Some(c) = out.iter_mut().find(|c| c.placement == p.name && c.dataset == d.key()) {
            c.times += 1;
            continue;
        }
        let (mut rate, mut limited_by) = (source.bytes_per_sec, format!("the golden copy's {}", place_name(exp)));
        for dev in p.devices() {
            if let Some(spec) = exp.device(dev) {
                let b = device_bandwidth(spec, exp.emulated);
                if b.bytes_per_sec < rate {
                    (rate, limited_by) = (b.bytes_per_sec, format!("writing {dev}"));
                }
            }
        }
        // PGDATA copied from the golden copy onto the same device: it reads and writes at once.
        if let GoldenCopy::Device { name, .. } = &exp.golden_copy
            && (p.data == *name || p.tablespaces.values().any(|d| d == name))
        {
            (rate, limited_by) = (rate / 2, format!("reading and writing {name} at once"));
        }
        let bytes = d.data_bytes();
        out.push(PlannedCopy {
            placement: p.name.clone(),
            dataset: d.key(),
            bytes,
            seconds: bytes as f64 / rate.max(1) as f64,
            times: 1,
            limited_by,
            bytes_per_sec: rate,
        });
    }
    let index = |name: &str| exp.placements.iter().position(|p| p.name == name);
    out.sort_by_key(|c| index(&c.placement));
    out
}

/// The golden copy's place in a few words: `device nvme-wal`, `state directory`, `directory /srv/x`.
pub fn place_name(exp: &Experiment) -> String {
    match &exp.golden_copy {
        GoldenCopy::Device { name, .. } => format!("device {name}"),
        GoldenCopy::StateDir => "state directory".into(),
        GoldenCopy::Dir { path, .. } => format!("directory {}", path.display()),
    }
}

/// The size of a real local device as the kernel has it, when this machine has it (the dry run
/// reads it; the plan's room check reads it again before anything is written).
pub fn real_size(d: &DeviceSpec) -> Option<(PathBuf, u64)> {
    let RealDevice::Local { path, .. } = &d.real else { return None };
    let dev = std::fs::canonicalize(path).ok()?;
    let sectors: u64 = std::fs::read_to_string(Path::new("/sys/class/block").join(dev.file_name()?).join("size"))
        .ok()?
        .trim()
        .parse()
        .ok()?;
    Some((dev, sectors * 512))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user() -> DbUser {
        DbUser { name: "postgres".into(), uid: 4242, gid: 4242, groups: vec![] }
    }

    #[test]
    fn a_named_directory_must_exist_or_its_parent_and_be_reachable() {
        let t = tempfile::tempdir().unwrap();
        let top = t.path().join("top");
        std::fs::create_dir(&top).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(t.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::set_permissions(&top, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert_eq!(place_problem(&top, &user()), None);
        assert_eq!(place_problem(&top.join("new"), &user()), None, "its parent exists");
        let e = place_problem(&top.join("a/b"), &user()).unwrap();
        assert!(e.contains("nor its parent is a directory here; create it (mkdir -p"), "{e}");
        std::fs::set_permissions(&top, std::fs::Permissions::from_mode(0o700)).unwrap();
        let e = place_problem(&top.join("new"), &user()).unwrap();
        assert!(e.contains("the database user postgres cannot reach") && e.contains("is mode 700"), "{e}");
        let e = place_problem(&paths::work_root().join("x"), &user()).unwrap();
        assert!(e.contains("inside pgtier's work directory"), "{e}");
    }
}
