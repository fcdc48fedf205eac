//! NVMe/TCP devices served by a storage target host (`[[host]]` with the `target` role, named
//! by the device's `target`). With `--emulate` the host runs the nbdkit stand-in (its image file
//! in the run's directory there, nbdkit listening on the host's address facing this machine),
//! and this machine attaches it with nbdfuse over the real network path. On real hardware the
//! host's kernel target exports the device named by `export` (nvmet, through configfs), and
//! this machine connects with `nvme connect -t tcp` like to any NVMe/TCP subsystem.
//!
//! The configfs layout is the kernel's (drivers/nvme/target/configfs.c, as nvmetcli's
//! nvmet/nvme.py drives it): `/sys/kernel/config/nvmet/subsystems/<nqn>/` with
//! `attr_allow_any_host`, `allowed_hosts/<host nqn>` (a link to `hosts/<host nqn>`) and
//! `namespaces/<nsid>/{device_path,enable}`; `ports/<id>/` with `addr_trtype`, `addr_adrfam`,
//! `addr_traddr`, `addr_trsvcid`, and `subsystems/<nqn>`, a link to the subsystem. Items are
//! removed in reverse (links first, then the directories; removing a namespace disables it).

use journal::remote::RemoteOp;

use super::*;
use crate::plan::HostStep;
pub use crate::plan::host_words::{LINK_MARKED, MADE_NOT_MARKED, MKDIR_MARKED, NVMET_CONFLICTS, describe_words};
use crate::spec::TargetHost;

/// The root of nvmet's configfs tree.
pub const NVMET: &str = "/sys/kernel/config/nvmet";

/// Stands for this machine's host NQN (from /etc/nvme/hostnqn, as the connect uses it) in a
/// step on a target host; the executor puts the NQN in its place when the step runs.
pub const THIS_HOST_NQN: &str = "<host NQN of this machine>";

/// The first TCP port of the nbdkit stand-ins on a target host (one port per device).
const NBD_PORT: u16 = 10809;

/// Writes `$2` into the file `$1` (a configfs attribute), without a newline.
const WRITE: &str = r#"printf %s "$2" > "$1""#;

/// Exits 1 (saying why) unless nvmet there can ask for a DH-HMAC-CHAP key: Linux 6.0 or later
/// built with CONFIG_NVME_TARGET_AUTH (the kernel's config in /boot, else nvmet's module
/// depending on nvme-auth). Debian 12's 6.1 kernel is built without it.
pub const NVMET_AUTH_KERNEL: &str = r#"r=$(uname -r); major=${r%%.*}
fix="leave the device's dhchap_secret out (the export then admits this machine's host NQN unauthenticated), or use a kernel built with it there"
case "$major" in ''|*[!0-9]*) echo "cannot read the kernel release ($r)" >&2; exit 1 ;; esac
[ "$major" -ge 6 ] || { echo "Linux $r: nvmet has DH-HMAC-CHAP (hosts/<host NQN>/dhchap_key) from Linux 6.0 on; $fix" >&2; exit 1; }
cfg=/boot/config-$r
if [ -r "$cfg" ]; then
  grep -qx 'CONFIG_NVME_TARGET_AUTH=y' "$cfg" && exit 0
  echo "Linux $r is built without nvmet's in-band authentication (CONFIG_NVME_TARGET_AUTH is not set in $cfg), so nvmet would never ask for the key; $fix" >&2; exit 1
fi
deps=$(modinfo -F depends nvmet 2>/dev/null)
case ",$deps," in *,nvme-auth,*|*,nvme_auth,*) exit 0 ;; esac
echo "cannot tell that nvmet on Linux $r has in-band authentication (no $cfg; modinfo nvmet depends on: ${deps:-nothing read}); $fix" >&2
exit 1"#;

/// Copies the key file `$2` (mode 0600 in the run's directory there, written from stdin when
/// the connection opened) into nvmet's attribute `$1`, makes that attribute readable by root
/// alone (configfs shows it 0644, and reading it prints the key), and removes the file: the
/// key is on no command line and stays on the host only where nvmet needs it.
pub const COPY_KEY: &str = r#"cat -- "$2" > "$1" && chmod 600 -- "$1" && rm -f -- "$2""#;

/// Where the DH-HMAC-CHAP key of this machine's host NQN waits in the run's directory `dir` on
/// a target host, for [`COPY_KEY`].
pub fn key_file(dir: &str) -> String {
    format!("{dir}/dhchap-key")
}

/// Where the marks of configfs items live on a target host: a directory only root can write
/// in. Not in /tmp, where the run's directory is: a local user who saw the run's token there
/// could make `<dir>.marks` first, and then a mark of theirs would let teardown remove another
/// owner's item, or a link of theirs in it would have root's `: > mark` truncate any file.
/// /run is a tmpfs, emptied at boot like configfs itself.
pub const MARKS_ROOT: &str = "/run/pgtier";

/// The mark of configfs item `path` for the run whose directory on the host is `dir`: in
/// [`MARKS_ROOT`], named after the run's directory (not in it: a teardown that must leave the
/// export under a busy filesystem still removes that directory, and `cleanup` needs the marks
/// later).
/// A name longer than a filesystem allows (255 bytes; a subsystem NQN may have 223, and an
/// allowed host's link names two) keeps its first 160 bytes and ends in the FNV-1a hash of the
/// whole path, so that it stays one per item.
fn mark_of(dir: &str, path: &str) -> String {
    let run = dir.trim_end_matches('/').rsplit('/').next().unwrap_or(dir);
    let mut name = format!("made{}", path.replace('/', "%"));
    if name.len() > MARK_NAME_MAX {
        let mut cut = 160;
        while !name.is_char_boundary(cut) {
            cut -= 1;
        }
        name = format!("{}#{:016x}", &name[..cut], fnv1a(path.as_bytes()));
    }
    format!("{MARKS_ROOT}/{run}.marks/{name}")
}

/// The longest mark name written whole (a file name may have 255 bytes).
const MARK_NAME_MAX: usize = 200;

/// FNV-1a, 64 bits: a stable hash (the same in every pgtier build) for long mark names.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3))
}

/// The configfs item an export step makes (a marked `mkdir` or `ln -s`), if it is one.
pub fn made_item(words: &[String]) -> Option<&str> {
    match words {
        [sh, c, script, _, path, _] if sh == "sh" && c == "-c" && script == MKDIR_MARKED => Some(path),
        [sh, c, script, _, _, at, _] if sh == "sh" && c == "-c" && script == LINK_MARKED => Some(at),
        _ => None,
    }
}

/// Runs `$2...` with stdin from /dev/null and its output into the log `$1`; on failure prints
/// the log on stderr. nbdkit binds its socket before it forks into the background, so it listens
/// when this returns.
const START: &str = r#"log=$1; shift; "$@" </dev/null >"$log" 2>&1 || { s=$?; cat "$log" >&2; exit $s; }"#;

/// The run's directory on the host (as the controller makes it: `/tmp/pgtier-<token>-t`).
pub fn host_dir(t: &TargetHost, ctx: &PlanContext) -> String {
    t.shell.as_ref().map(|s| s.work_dir.clone()).unwrap_or_else(|| format!("/tmp/pgtier-{}-t", ctx.short_id))
}

fn words<S: AsRef<str>>(w: &[S]) -> Vec<String> {
    w.iter().map(|s| s.as_ref().to_string()).collect()
}

fn on_host(
    plan: &mut Plan,
    d: &DeviceSpec,
    t: &TargetHost,
    step: (HostStep, Vec<String>, Option<RemoteOp>),
    why: String,
) {
    let (kind, words, undo) = step;
    plan.push(Some(&d.name), Action::OnHost { host: t.name.clone(), words, undo, kind }, why);
}

/// The nbdkit stand-in on the target host, attached here with nbdfuse over the network.
pub(super) fn emulated_on_host(plan: &mut Plan, d: &DeviceSpec, t: &TargetHost, index: usize, ctx: &PlanContext) {
    let dir = host_dir(t, ctx);
    let h = &t.name;
    let img = format!("{dir}/{}.img", d.name);
    let pidfile = format!("{dir}/nbdkit-{}.pid", d.name);
    let port = NBD_PORT + index as u16;
    on_host(
        plan,
        d,
        t,
        (HostStep::Check, words(&["nbdkit", "--version"]), None),
        format!("nbdkit serves the device from host {h}: it must be installed there (Debian package nbdkit)"),
    );
    let size = d.emulation.size_bytes.to_string();
    on_host(
        plan,
        d,
        t,
        (HostStep::Change, words(&["truncate", "-s", &size, "--", &img]), None),
        format!(
            "the target's storage: a sparse file of {} in the run's directory on host {h} (removed with that directory at teardown)",
            crate::plan::human_bytes(d.emulation.size_bytes)
        ),
    );
    let mut w = words(&["sh", "-c", START, "sh", &format!("{dir}/nbdkit-{}.log", d.name), "nbdkit"]);
    w.extend(words(&["--pidfile", &pidfile, "--ipaddr", &t.address, "--port", &port.to_string()]));
    let delay = d.emulation.latency.and_then(EmulatedDelay::for_latency);
    match delay {
        Some(EmulatedDelay::DelayFilter { ms }) => {
            w.extend(words(&["--filter=delay", "file", &img]));
            w.extend([format!("delay-read={ms}ms"), format!("delay-write={ms}ms")]);
        }
        // Validation refuses sub-millisecond latencies on a target host (the plugin would have
        // to be compiled there).
        _ => w.extend(words(&["file", &img])),
    }
    let op = RemoteOp::StopProcess { program: "nbdkit".into(), pidfile };
    on_host(
        plan,
        d,
        t,
        (HostStep::Change, w, Some(op)),
        format!(
            "the NBD target on host {h}, listening on its address facing this machine, {}:{port}{}; it forks into the background once listening (its undo, recorded first, stops it by its --pidfile on the host's process list)",
            t.address,
            match delay {
                Some(delay) => format!(", adding {}", delay.describe()),
                None => String::new(),
            }
        ),
    );
    nbd_client(plan, d, ctx, &t.address, port);
}

/// The nvmet port of device `index` of a run on its target host: a number from the run's token,
/// so that runs of other experiments on the same host do not collide (a taken port's `mkdir`
/// fails, and the run stops before anything is written).
pub fn nvmet_port_id(short_id: &str, index: usize) -> u16 {
    let h = short_id.bytes().fold(2_166_136_261u32, |a, b| (a ^ b as u32).wrapping_mul(16_777_619));
    1000 + ((h.wrapping_add(index as u32)) % 60_000) as u16
}

/// The NSID of the namespace pgtier makes in a target host's subsystem when the file gives none.
pub(super) const EXPORTED_NSID: u32 = 1;

/// The `device_uuid` the export of device `device` (subsystem `nqn`) gets in a run with token
/// `short_id`: a UUID (version 4 layout) made from the three, so that the plan is pure and the
/// initiator knows which namespace to expect.
pub fn namespace_uuid(short_id: &str, device: &str, nqn: &str) -> String {
    let fnv = |seed: u64| {
        [short_id, device, nqn].iter().fold(seed, |a, s| {
            s.bytes().chain([0u8]).fold(a, |a, b| (a ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3))
        })
    };
    let (hi, lo) = (fnv(0xcbf2_9ce4_8422_2325), fnv(0x8422_2325_cbf2_9ce4));
    let hi = (hi & !0xf000) | 0x4000; // version 4
    let lo = (lo & !(0xc << 60)) | (0x8 << 60); // variant 10xx
    format!(
        "{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
        hi >> 32,
        (hi >> 16) & 0xffff,
        hi & 0xffff,
        lo >> 48,
        lo & 0xffff_ffff_ffff
    )
}

/// The checks on the target host before the device `export` is exported by nvmet as subsystem
/// `t.nqn` ([`nvmet_export`]): its identity, that nothing uses it, the kernel's target, and that
/// nvmet's configuration there leaves room. The plan holds these for every device of the run
/// before any export step, so that no check meets an item the run itself made (two devices on
/// two ports or with two host NQNs of one host).
pub(super) fn nvmet_export_checks(plan: &mut Plan, d: &DeviceSpec, t: &TargetHost, nt: &NvmeTcpTarget) {
    let h = &t.name;
    if t.export_model.is_some() || t.export_serial.is_some() {
        plan.push(
            Some(&d.name),
            Action::HostDeviceIdentity {
                host: h.clone(),
                device: t.export.clone(),
                model: t.export_model.clone(),
                serial: t.export_serial.clone(),
            },
            format!("make sure the device host {h} exports is the one the experiment file names (its sysfs device/model and serial, read there)"),
        );
    }
    plan.push(
        Some(&d.name),
        Action::HostDeviceCheck { host: h.clone(), device: t.export.clone(), allow_wipe: d.allow_wipe },
        format!("never export a device of host {h} that holds data, is in use (the O_EXCL open made there by perl) or another nvmet export serves (checked there over ssh)"),
    );
    if nt.dhchap_secret.is_some() && !t.allow_any_host {
        on_host(
            plan,
            d,
            t,
            (HostStep::Check, words(&["sh", "-c", NVMET_AUTH_KERNEL, "sh"]), None),
            format!("DH-HMAC-CHAP on the export: nvmet on host {h} asks for the key from Linux 6.0 on"),
        );
    }
    on_host(
        plan,
        d,
        t,
        (HostStep::Check, words(&["modprobe", "-n", "-a", "nvmet", "nvmet-tcp"]), None),
        format!(
            "host {h} has the kernel's NVMe target and its TCP transport (modules nvmet, nvmet-tcp; a dry run of modprobe loads nothing)"
        ),
    );
    let admit = (!t.allow_any_host).then(|| nt.host_nqn.as_deref().unwrap_or(THIS_HOST_NQN));
    let mut conflicts = words(&["sh", "-c", NVMET_CONFLICTS, "sh", NVMET, &nt.address, &nt.port.to_string()]);
    conflicts.extend(admit.map(str::to_string));
    // Every device's address, port and admitted host NQN are checked, all before the run makes
    // anything there (real_checks plans them first), so its own items are never in the way; the
    // same check once.
    let planned = plan
        .steps
        .iter()
        .any(|s| matches!(&s.action, Action::OnHost { host: o, words, .. } if o == &t.name && *words == conflicts));
    if !planned {
        on_host(
            plan,
            d,
            t,
            (HostStep::Check, conflicts, None),
            format!(
                "nvmet's configuration on host {h} leaves room for this run's: no port already on {} port {} (nor on the wildcard address), no hosts/ entry for the host NQN this run admits",
                nt.address, nt.port
            ),
        );
    }
}

/// The device `export` of the target host exported by nvmet as subsystem `t.nqn` on a port at
/// the host's address, once every device's checks there passed ([`nvmet_export_checks`]): the
/// subsystem, its namespace and the port made in configfs, each with its undo recorded first.
pub(super) fn nvmet_export(
    plan: &mut Plan,
    d: &DeviceSpec,
    t: &TargetHost,
    nt: &NvmeTcpTarget,
    index: usize,
    ctx: &PlanContext,
) {
    let export = |plan: &mut Plan, w: Vec<String>, undo: Option<RemoteOp>, why: &str| {
        on_host(plan, d, t, (HostStep::Export, w, undo), why.to_string());
    };
    let set = |plan: &mut Plan, path: &str, value: &str, why: &str| {
        export(plan, words(&["sh", "-c", WRITE, "sh", path, value]), None, why);
    };
    // Each item made is marked in the run's directory there, and its undo removes it only when
    // marked: an item that was in the way belongs to another owner, whatever happens between
    // the undo's record and the step's end (SIGKILL, a lost ssh connection).
    let dir = host_dir(t, ctx);
    let mkdir = |plan: &mut Plan, path: &str, why: &str| {
        let mark = mark_of(&dir, path);
        export(
            plan,
            words(&["sh", "-c", MKDIR_MARKED, "sh", path, &mark]),
            Some(RemoteOp::Rmdir { path: path.to_string(), mark: Some(mark.clone()) }),
            why,
        );
    };
    let link = |plan: &mut Plan, to: &str, at: &str, why: &str| {
        let mark = mark_of(&dir, at);
        export(
            plan,
            words(&["sh", "-c", LINK_MARKED, "sh", to, at, &mark]),
            Some(RemoteOp::Unlink { path: at.to_string(), mark: Some(mark.clone()) }),
            why,
        );
    };
    export(
        plan,
        words(&["modprobe", "-a", "nvmet", "nvmet-tcp"]),
        None,
        "the kernel's NVMe target and its TCP transport (left loaded at teardown)",
    );
    let subsys = format!("{NVMET}/subsystems/{}", nt.nqn);
    mkdir(plan, &subsys, "the subsystem (mkdir fails if it exists: pgtier never takes over another's subsystem)");
    if t.allow_any_host {
        set(
            plan,
            &format!("{subsys}/attr_allow_any_host"),
            "1",
            "allow_any_host = true in the experiment file: any host that reaches the port may connect and read and write the device",
        );
    } else {
        // This machine's host NQN: the file's, or /etc/nvme/hostnqn as the connect uses it
        // (read when the step runs).
        let host_nqn = nt.host_nqn.as_deref().unwrap_or(THIS_HOST_NQN);
        set(plan, &format!("{subsys}/attr_allow_any_host"), "0", "only the allowed host may connect");
        let host = format!("{NVMET}/hosts/{host_nqn}");
        // One hosts/ entry serves every subsystem of the run on this target host.
        let made = plan.steps.iter().any(|s| {
            matches!(&s.action, Action::OnHost { host: h, words, .. } if h == &t.name && made_item(words) == Some(host.as_str()))
        });
        if !made {
            mkdir(
                plan,
                &host,
                "this machine's host NQN (host_nqn, else /etc/nvme/hostnqn, as the connect uses it) as nvmet knows hosts (refused if another configuration has it)",
            );
            if nt.dhchap_secret.is_some() {
                export(
                    plan,
                    words(&["sh", "-c", COPY_KEY, "sh", &format!("{host}/dhchap_key"), &key_file(&dir)]),
                    None,
                    "DH-HMAC-CHAP: nvmet asks this host NQN for the key (the same secret this machine connects with), copied from the mode-0600 file written over ssh's stdin when the connection opened; removed with the run's directory and with the hosts/ entry at teardown",
                );
            }
        }
        link(plan, &host, &format!("{subsys}/allowed_hosts/{host_nqn}"), "admit this machine's host NQN alone");
    }
    let ns = format!("{subsys}/namespaces/{}", nt.nsid.unwrap_or(EXPORTED_NSID));
    mkdir(plan, &ns, "the namespace");
    set(
        plan,
        &format!("{ns}/device_uuid"),
        &namespace_uuid(&ctx.short_id, &d.name, &nt.nqn),
        "the namespace's UUID, made for this run (set before it is enabled, as nvmet requires): this machine checks it in /sys/block/<X>/wwid of the namespace it connects to before anything is written",
    );
    set(plan, &format!("{ns}/device_path"), &t.export.display().to_string(), "the block device it exports");
    set(plan, &format!("{ns}/enable"), "1", "enable the namespace (removing its directory at teardown disables it)");
    // One port per (address, TCP port) on the host, as nvmetcli lays it out: a second port
    // on the same address and trsvcid could not listen (EADDRINUSE), so a later device of the
    // run on the same pair links its subsystem into the port made for the first.
    let port = match port_made(plan, &t.name, &nt.address, nt.port) {
        Some(port) => port,
        None => {
            let port = format!("{NVMET}/ports/{}", nvmet_port_id(&ctx.short_id, index));
            mkdir(plan, &port, "a port of this run (mkdir fails if the number is taken)");
            let family = if nt.address.contains(':') { "ipv6" } else { "ipv4" };
            for (attr, value) in [
                ("addr_trtype", "tcp"),
                ("addr_adrfam", family),
                ("addr_traddr", &nt.address),
                ("addr_trsvcid", &nt.port.to_string()),
            ] {
                set(plan, &format!("{port}/{attr}"), value, "the port: TCP on the host's address facing this machine");
            }
            port
        }
    };
    link(
        plan,
        &subsys,
        &format!("{port}/subsystems/{}", nt.nqn),
        "the subsystem on the port: from here on it accepts connections",
    );
}

/// The nvmet port this plan already makes on host `host` for `address`:`trsvcid`, if any.
fn port_made(plan: &Plan, host: &str, address: &str, trsvcid: u16) -> Option<String> {
    let written = |attr: &str, value: &str| -> Vec<String> {
        plan.steps
            .iter()
            .filter_map(|s| match &s.action {
                Action::OnHost { host: h, words, .. } if h == host && words.len() == 6 && words[5] == value => words[4]
                    .strip_suffix(&format!("/{attr}"))
                    .filter(|p| p.starts_with(&format!("{NVMET}/ports/")))
                    .map(str::to_string),
                _ => None,
            })
            .collect()
    };
    let by_address = written("addr_traddr", address);
    written("addr_trsvcid", &trsvcid.to_string()).into_iter().find(|p| by_address.contains(p))
}
