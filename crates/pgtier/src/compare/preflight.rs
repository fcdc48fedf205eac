//! Everything that can be checked before the machine is touched (root, programs, PostgreSQL,
//! the database user, cgroups, zram, huge pages, distinct real devices), and the run record
//! that is begun once it passed.

use std::path::Path;

use anyhow::{Context, Result, bail};
use experiment::Experiment;
use runner::cgroup::Hierarchy;
use runner::{DbUser, PgInstall, RunnerError};

/// What the preflight found and the run uses.
pub struct Preflight {
    /// The first build's installation.
    pub install: PgInstall,
    pub user: DbUser,
    pub cgroups: Option<Hierarchy>,
    /// Every build's installation and the settings it knows, in the experiment's order.
    pub builds: Vec<BuildInstall>,
}

/// A build's binaries as found, and the settings its server knows.
pub struct BuildInstall {
    pub name: String,
    pub install: PgInstall,
    pub known_settings: std::collections::BTreeSet<String>,
}

/// An NVMe/TCP device that names no host NQN connects as this machine's (nvme-cli reads
/// `hostnqn_file`, /etc/nvme/hostnqn): without one, `nvme connect` would make one up or fail
/// after the checks, so it is said before anything is touched.
fn host_nqn_problems(exp: &Experiment, hostnqn_file: &Path) -> Vec<String> {
    if exp.emulated {
        return Vec::new();
    }
    let needs: Vec<&str> = exp
        .used_devices()
        .into_iter()
        .filter(|d| matches!(&d.real, tiers::spec::RealDevice::NvmeTcp(t) if t.host_nqn.is_none()))
        .map(|d| d.name.as_str())
        .collect();
    let has = std::fs::read_to_string(hostnqn_file).is_ok_and(|s| s.trim().starts_with("nqn."));
    if needs.is_empty() || has {
        return Vec::new();
    }
    vec![format!(
        "device(s) {} connect as this machine's NVMe host NQN, and {} holds none: run `nvme gen-hostnqn > {}` (and `uuidgen > /etc/nvme/hostid`), or give host_nqn and host_id in the experiment file ({})",
        needs.join(", "),
        hostnqn_file.display(),
        hostnqn_file.display(),
        exp.file.display()
    )]
}

/// Every problem found is reported at once (numbered), as validation does, so that a user
/// fixes them all in one go; nothing is touched before all of them pass.
pub fn preflight(exp: &Experiment, plan: &tiers::Plan, user: Result<DbUser, RunnerError>) -> Result<Preflight> {
    let mut problems: Vec<String> = Vec::new();
    let note = |problems: &mut Vec<String>, r: Result<()>| {
        if let Err(e) = r {
            problems.push(format!("{e:#}"));
        }
    };
    note(&mut problems, check_huge_pages(exp, runner::memory::HugePages::of_this_machine()));
    problems.extend(memory_problems(exp, crate::host::memory_bytes()));
    if !nix::unistd::geteuid().is_root() {
        problems.push("provisioning block devices needs root; run as root, or use --dry-run to see the plan".into());
    }
    let mut missing = Vec::new();
    for s in &plan.steps {
        if let tiers::plan::Action::RequireTool { program, package } = &s.action
            && journal::command::which(program).is_none()
        {
            missing.push(format!("{program} (package {package})"));
        }
    }
    if let Some(h) = exp.client_host()
        && journal::command::which("ssh").is_none()
    {
        missing.push(format!("ssh (package openssh-client), to reach host {} ({})", h.name, h.origin));
    }
    if let Some(h) = exp.client_host() {
        let files = [("identity_file", &h.identity_file), ("known_hosts", &h.known_hosts)];
        for (key, path) in files {
            if let Some(p) = path
                && !p.is_file()
            {
                problems.push(format!(
                    "host {}: its {key} {} is not a file ({}); create it, or fix the path",
                    h.name,
                    p.display(),
                    h.origin
                ));
            }
        }
    }
    if let Some(p) = &exp.measurement.pinning {
        let file = exp.file.display();
        for (cpus, key) in [(&p.client, "pin_client"), (&p.servers, "pin_servers")] {
            let key = format!("[measurement] {key} ({file})");
            note(&mut problems, runner::affinity::check_available(cpus, &key).map_err(Into::into));
        }
    }
    crate::remote::target::preflight(exp, &mut missing, &mut problems);
    problems.extend(host_nqn_problems(exp, Path::new("/etc/nvme/hostnqn")));
    if !exp.device_probe.is_zero() && journal::command::which("fio").is_none() {
        missing.push("fio (package fio; or set device_probe = \"0s\")".into());
    }
    let mut builds = Vec::new();
    for b in &exp.builds {
        let found = PgInstall::detect(b.bin_dir.as_deref())
            .with_context(|| format!("PostgreSQL build {:?} ({})", b.name, b.origin))
            .and_then(|install| {
                let known_settings = install
                    .known_settings()
                    .with_context(|| format!("build {:?}: postgres --describe-config", b.name))?;
                Ok(BuildInstall { name: b.name.clone(), install, known_settings })
            });
        match found {
            Ok(b) => builds.push(b),
            Err(e) => problems.push(format!("{e:#}")),
        }
    }
    if !missing.is_empty() {
        problems.push(format!(
            "missing programs: {}; run `cargo xtask setup` (as root) to install them",
            missing.join(", ")
        ));
    }
    let user = user.map_err(|e| problems.push(e.to_string())).ok();
    let cgroups = Hierarchy::detect();
    if cgroups.is_none() && exp.memory_limits.iter().any(|m| m.bytes.is_some()) {
        problems.push(
            "the experiment limits the server's memory, but this machine has no cgroup memory controller (looked at /sys/fs/cgroup)".into(),
        );
    }
    if !exp.emulated {
        problems.extend(local_device_problems(exp, &mut tiers::system::RealSystem));
        let release =
            nix::sys::utsname::uname().map(|u| u.release().to_string_lossy().into_owned()).unwrap_or_default();
        problems.extend(dax_problems(exp, &release));
    }
    if exp.emulated
        && exp.devices.iter().any(|d| d.emulation.backing == tiers::Backing::Zram)
        && !Path::new("/sys/class/zram-control/hot_add").exists()
    {
        problems.push(
            "zram is not available (/sys/class/zram-control/hot_add is missing); load the zram module or use backing = \"tmpfs-loop\"".into(),
        );
    }
    match (problems.as_slice(), user) {
        ([], Some(user)) if !builds.is_empty() => {
            let install = builds[0].install.clone();
            Ok(Preflight { install, user, cgroups, builds })
        }
        ([one], _) => bail!("{one}"),
        (all, _) => {
            let listed: Vec<String> = all.iter().enumerate().map(|(i, p)| format!("  {}. {p}", i + 1)).collect();
            bail!("the preflight found {} problems (nothing was touched):\n{}", all.len(), listed.join("\n"))
        }
    }
}

/// The real local devices: each a block device (what the plan's first check would say, said
/// here with every other problem), and no two naming one device.
fn local_device_problems(exp: &Experiment, sys: &mut dyn tiers::system::System) -> Vec<String> {
    let local: Vec<(&str, &Path)> = exp
        .used_devices()
        .into_iter()
        .filter_map(|d| match &d.real {
            tiers::spec::RealDevice::Local { path, .. } => Some((d.name.as_str(), path.as_path())),
            _ => None,
        })
        .collect();
    let mut problems = Vec::new();
    for (name, path) in &local {
        if let Err(r) = tiers::safety::check_block_device(sys, path) {
            problems.push(format!("device {name}: {r}"));
        }
    }
    if problems.is_empty()
        && let Err(r) = tiers::safety::check_distinct(sys, &local)
    {
        problems.push(r.to_string());
    }
    problems
}

/// Every setting a profile or memory limit requires must be one the build's server knows
/// (`postgres --describe-config`): refused with the build's name, the file, line and key.
/// Optional settings (`[optional_settings]` of a profile) are left out where unknown instead.
pub fn check_settings_known(exp: &Experiment, pre: &Preflight) -> Result<(), experiment::ConfigErrors> {
    let mut errors = Vec::new();
    for b in &pre.builds {
        errors.extend(exp.unknown_settings(&b.name, &b.install.version(), &b.known_settings));
    }
    if errors.is_empty() { Ok(()) } else { Err(experiment::ConfigErrors(errors)) }
}

/// `huge_pages = on` in a cell whose server this machine has too few huge pages for: refused
/// before anything is touched (PostgreSQL itself would stop at its first start, after
/// provisioning). Pages the experiment's `[kernel]` section reserves count, when it is applied.
fn check_huge_pages(exp: &Experiment, machine: Option<runner::memory::HugePages>) -> Result<()> {
    let Some(need) = exp.huge_pages_needs.iter().max_by_key(|n| n.shared_memory_bytes) else { return Ok(()) };
    let machine = machine.unwrap_or(runner::memory::HugePages { total: 0, free: 0, page_bytes: 2 << 20 });
    let reserved_by_file = exp
        .kernel
        .sysctls
        .get("vm.nr_hugepages")
        .filter(|_| exp.kernel.apply)
        .and_then(|v| v.trim().parse::<u64>().ok());
    let available = reserved_by_file.unwrap_or(machine.free);
    // PostgreSQL maps its whole shared memory in huge pages, rounded up to whole pages.
    let pages = machine.pages_for(need.shared_memory_bytes);
    if pages <= available {
        return Ok(());
    }
    let have = match reserved_by_file {
        Some(n) => format!("the experiment's [kernel] section reserves only {n}"),
        None => format!(
            "this machine has {} free of {} reserved (HugePages_Free / HugePages_Total in /proc/meminfo)",
            machine.free, machine.total
        ),
    };
    bail!(
        "{}: huge_pages = on (profile {:?}, memory limit {}) needs {pages} huge pages of {} for the server's about {} of shared memory, and {have}; PostgreSQL would refuse to start. Reserve them (sysctl vm.nr_hugepages={pages}, or [kernel] sysctls = {{ \"vm.nr_hugepages\" = \"{pages}\" }} in the experiment file), or set huge_pages = \"try\"",
        need.origin,
        need.profile,
        need.memory_limit,
        runner::memory::show(machine.page_bytes),
        runner::memory::show(need.shared_memory_bytes),
    )
}

/// What the study asks of this machine's memory (`host_memory` bytes, MemTotal) that it cannot
/// have, each a problem the dry run shows and the real run refuses: a memory limit at or above
/// the machine's memory (it never binds, so a cell labelled limited measures an unlimited
/// server); emulated RAM-backed devices (zram, tmpfs-loop) larger together than the machine's
/// memory (they take RAM only as they are written, so only a size that could never be filled is
/// refused); and, design `slices` starting every placement's server of a memory limit and
/// profile at once, the servers' certain memory over 80% of it.
pub(super) fn memory_problems(exp: &Experiment, host_memory: u64) -> Vec<String> {
    use runner::memory::show;
    let mut out = Vec::new();
    if host_memory == 0 {
        return out;
    }
    let room = host_memory / 10 * 8;
    for m in &exp.memory_limits {
        if let Some(bytes) = m.bytes.filter(|b| *b >= host_memory) {
            out.push(format!(
                "memory limit {} is {} but this machine has {}: the limit would never bind, so its cells would measure servers with memory unlimited under a limited label; give a limit below {} (for the study's ratio of data set to memory, scale it to this machine in [emulate] memory_limits)",
                m.label(),
                show(bytes),
                show(host_memory),
                show(host_memory)
            ));
        }
    }
    let ram_devices: Vec<&tiers::spec::DeviceSpec> = if exp.emulated {
        exp.used_devices()
            .into_iter()
            .filter(|d| matches!(d.emulation.backing, tiers::Backing::Zram | tiers::Backing::TmpfsLoop))
            .collect()
    } else {
        Vec::new()
    };
    let ram: u64 = ram_devices.iter().map(|d| d.emulation.size_bytes).sum();
    let named = || {
        ram_devices
            .iter()
            .map(|d| format!("{} {}", d.name, show(d.emulation.size_bytes)))
            .collect::<Vec<_>>()
            .join(", ")
    };
    if ram > host_memory {
        out.push(format!(
            "the emulated devices held in memory ({}: {} in all; zram and tmpfs-loop take RAM as they are written) are larger than this machine's {}, so they could never be filled; make them smaller ([emulate] device_size, or the device's emulate.size) or back them with loop-file",
            named(),
            show(ram),
            show(host_memory)
        ));
    }
    if exp.measurement.design != experiment::Design::Slices {
        return out;
    }
    let servers = exp.placements.len() as u64;
    for (profile, limit, plan) in exp.memory_plans() {
        let each = plan.certain_bytes();
        if each * servers > room {
            out.push(format!(
                "design \"slices\" starts all {servers} placements' servers at once, and with profile {profile:?} (memory {limit}) each needs about {} for certain: {} in all, more than 80% of this machine's {}; set [measurement] design = \"runs\" (one server at a time) or lower shared_buffers",
                show(each),
                show(each * servers),
                show(host_memory)
            ));
            break;
        }
    }
    out
}

/// DAX on a kernel before 5.8: pgtier mounts with `dax=always`, which XFS takes only from 5.8
/// on (before, only the old `dax` option), and statx reports STATX_ATTR_DAX only from 5.8, so
/// DAX could not be confirmed either.
fn dax_problems(exp: &Experiment, release: &str) -> Vec<String> {
    let mut nums = release.split(|c: char| !c.is_ascii_digit()).map(|p| p.parse::<u32>().ok());
    let (Some(Some(major)), Some(Some(minor))) = (nums.next(), nums.next()) else { return Vec::new() };
    if (major, minor) >= (5, 8) {
        return Vec::new();
    }
    exp.used_devices()
        .into_iter()
        .filter(|d| d.dax != tiers::spec::DaxPolicy::Off && !d.mount_options.iter().any(|o| o.starts_with("dax")))
        .map(|d| {
            format!(
                "device {}: DAX mounts with dax=always, which XFS accepts only from Linux 5.8, and statx reports DAX only from 5.8; this kernel is {release}: set dax = \"off\", or dax = \"optional\" with mount_options = [\"dax\"] (the old option, which pgtier cannot confirm in effect here)",
                d.name
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_the_machine_does_not_have_is_a_problem() {
        let text = |placements: &str, extra: &str| {
            format!(
                r#"
[experiment]
name = "mem"
baseline = "a"
[postgres]
profiles = ["default"]
memory_limits = ["unlimited", "64GiB"]
[postgres.settings]
shared_buffers = "12GB"
[measurement]
design = "slices"
[[device]]
name = "pm"
class = "pmem"
namespace = "namespace0.0"
[device.emulate]
backing = "zram"
size = "64GiB"
{placements}
[[workload]]
name = "rw"
kind = "pgbench"
builtin = "tpcb-like"
scale = 1
clients = [1]
duration = "5s"
{extra}
"#
            )
        };
        let three = "[[placement]]\nname = \"a\"\ndata = \"pm\"\nwal = \"pm\"\n[[placement]]\nname = \"b\"\ndata = \"pm\"\nwal = \"pm\"\n[[placement]]\nname = \"c\"\ndata = \"pm\"\nwal = \"pm\"\n";
        let opts =
            experiment::LoadOptions { emulate: true, configs_dir: crate::paths::configs_dir(), hardware_threads: 2 };
        let gib = 1u64 << 30;
        let exp = experiment::parse(Path::new("mem.toml"), &text(three, ""), &opts).unwrap();
        let p = memory_problems(&exp, 23 * gib);
        assert_eq!(p.len(), 3, "{p:#?}");
        assert!(p[0].contains("memory limit 64GiB is 64.0 GiB but this machine has 23.0 GiB"), "{p:#?}");
        assert!(p[1].contains("the emulated devices held in memory (pm 64.0 GiB"), "{p:#?}");
        assert!(p[2].contains("starts all 3 placements' servers at once"), "{p:#?}");
        // The devices small enough: three servers of 12 GB shared_buffers each do not fit.
        let exp = experiment::parse(
            Path::new("mem.toml"),
            &text(three, "").replace("size = \"64GiB\"", "size = \"8GiB\"").replace(", \"64GiB\"", ""),
            &opts,
        )
        .unwrap();
        let p = memory_problems(&exp, 23 * gib);
        assert_eq!(p.len(), 1, "{p:#?}");
        assert!(p[0].contains("starts all 3 placements' servers at once"), "{p:#?}");
        // On a machine large enough, nothing.
        assert_eq!(memory_problems(&exp, 256 * gib), Vec::<String>::new());
    }

    #[test]
    fn dax_before_linux_5_8_is_a_preflight_problem() {
        let text = r#"
[experiment]
name = "dax"
baseline = "p"
[postgres]
profiles = ["default"]
[[device]]
name = "pmem"
class = "pmem"
namespace = "namespace0.0"
[[placement]]
name = "p"
data = "pmem"
wal = "pmem"
[[workload]]
name = "rw"
kind = "pgbench"
builtin = "tpcb-like"
scale = 1
clients = [1]
duration = "5s"
"#;
        let opts =
            experiment::LoadOptions { emulate: false, configs_dir: crate::paths::configs_dir(), hardware_threads: 2 };
        let exp = experiment::parse(Path::new("dax.toml"), text, &opts).unwrap();
        let old = dax_problems(&exp, "4.19.0-27-amd64");
        assert_eq!(old.len(), 1, "{old:?}");
        assert!(
            old[0].contains("device pmem: DAX mounts with dax=always") && old[0].contains("4.19.0-27-amd64"),
            "{old:?}"
        );
        assert!(dax_problems(&exp, "5.8.0").is_empty());
        assert!(dax_problems(&exp, "6.1.0-57-amd64").is_empty());
    }

    #[test]
    fn an_nvme_tcp_device_without_a_host_nqn_needs_this_machines() {
        let text = |extra: &str| {
            format!(
                r#"
[experiment]
name = "nqn"
baseline = "p"
[postgres]
profiles = ["default"]
[[device]]
name = "remote"
class = "nvme-tcp"
address = "192.0.2.7"
nqn = "nqn.2014-08.org.example:t"
{extra}
[[placement]]
name = "p"
data = "remote"
wal = "remote"
[[workload]]
name = "rw"
kind = "pgbench"
builtin = "tpcb-like"
scale = 1
clients = [1]
duration = "5s"
"#
            )
        };
        let opts =
            experiment::LoadOptions { emulate: false, configs_dir: crate::paths::configs_dir(), hardware_threads: 2 };
        let dir = tempfile::tempdir().unwrap();
        let (none, some) = (dir.path().join("absent"), dir.path().join("hostnqn"));
        std::fs::write(&some, "nqn.2014-08.org.nvmexpress:uuid:a66f1c42-4bce-a619-9c59-9ae6ac2ccb8a\n").unwrap();
        let exp = experiment::parse(Path::new("nqn.toml"), &text(""), &opts).unwrap();
        let p = host_nqn_problems(&exp, &none);
        assert_eq!(p.len(), 1, "{p:?}");
        assert!(p[0].contains("device(s) remote") && p[0].contains("nvme gen-hostnqn"), "{p:?}");
        assert!(host_nqn_problems(&exp, &some).is_empty());
        let own = text("host_nqn = \"nqn.2014-08.org.nvmexpress:uuid:a66f1c42-4bce-a619-9c59-9ae6ac2ccb8a\"");
        let exp = experiment::parse(Path::new("nqn.toml"), &own, &opts).unwrap();
        assert!(host_nqn_problems(&exp, &none).is_empty(), "the file names its own");
    }
}
