//! The emulated stand-ins for each device class: loop devices over files, tmpfs, zram, and NBD
//! over TCP (nbdkit in a network namespace, with its latency filter).

use super::*;

pub(super) fn emulated_device(plan: &mut Plan, d: &DeviceSpec, index: usize, ctx: &PlanContext) {
    match d.emulation.backing {
        Backing::LoopFile => loop_file_device(plan, d, ctx),
        Backing::TmpfsLoop => tmpfs_device(plan, d, ctx),
        Backing::Zram => zram_device(plan, d),
        Backing::Nbd => match &d.target_host {
            Some(t) => target::emulated_on_host(plan, d, t, index, ctx),
            None => nbd_device(plan, d, index, ctx),
        },
    }
    finish_filesystem(plan, d, Value::var(&d.name), ctx, true);
}

/// A sparse file on the local disk behind a direct-I/O loop device.
pub(super) fn loop_file_device(plan: &mut Plan, d: &DeviceSpec, ctx: &PlanContext) {
    let name = Some(d.name.as_str());
    let e = &d.emulation;
    let img_dir = ctx.work_dir.join("img");
    let img = img_dir.join(format!("{}.img", d.name));
    plan.push(name, Action::MakeDir { path: img_dir, mode: 0o700, remove_on_teardown: false }, "backing files");
    plan.push(
        name,
        Action::SparseFile { path: img.clone(), size: e.size_bytes },
        format!("local-disk file standing in for the {} device", d.class),
    );
    plan.push(
        name,
        Action::AttachLoop { file: img, direct_io: true, bind: d.name.clone() },
        "a real block device over the file; direct I/O so the host page cache does not absorb the I/O",
    );
    plan.push(
        name,
        Action::Run { command: mkfs_template(d, Value::var(&d.name), false, false), timeout_secs: 600 },
        "XFS with the experiment's options",
    );
}

/// A file on a tmpfs behind a loop device (RAM standing in for PMem).
pub(super) fn tmpfs_device(plan: &mut Plan, d: &DeviceSpec, ctx: &PlanContext) {
    let name = Some(d.name.as_str());
    let e = &d.emulation;
    let tmp = ctx.work_dir.join("tmpfs").join(&d.name);
    plan.push(name, Action::MakeDir { path: tmp.clone(), mode: 0o700, remove_on_teardown: false }, "tmpfs mount point");
    plan.push(
        name,
        Action::Mount {
            source: Value::lit("tmpfs"),
            target: tmp.clone(),
            fstype: "tmpfs".into(),
            options: vec![format!("size={}", e.size_bytes + (1 << 20)), "mode=0700".into()],
        },
        "RAM-backed storage standing in for persistent memory",
    );
    let img = tmp.join(format!("{}.img", d.name));
    plan.push(name, Action::SparseFile { path: img.clone(), size: e.size_bytes }, "file in RAM");
    plan.push(
        name,
        Action::AttachLoop { file: img, direct_io: false, bind: d.name.clone() },
        "a real block device over the RAM file",
    );
    plan.push(
        name,
        Action::Run { command: mkfs_template(d, Value::var(&d.name), false, false), timeout_secs: 600 },
        "XFS (reflink off where DAX is asked for)",
    );
}

/// A zram device (RAM standing in for PMem).
pub(super) fn zram_device(plan: &mut Plan, d: &DeviceSpec) {
    let name = Some(d.name.as_str());
    let e = &d.emulation;
    plan.push(
        name,
        Action::CreateZram { size: e.size_bytes, algorithm: e.zram_algorithm.clone(), bind: d.name.clone() },
        "a RAM-backed block device standing in for persistent memory (its memory is not charged to the server's cgroup)",
    );
    plan.push(
        name,
        Action::Run { command: mkfs_template(d, Value::var(&d.name), false, false), timeout_secs: 600 },
        "XFS (reflink off where DAX is asked for)",
    );
}

/// A file served by nbdkit in a network namespace across a veth link, presented by nbdfuse and
/// a direct-I/O loop device (NVMe/TCP's stand-in: no nbd kernel module here).
pub(super) fn nbd_device(plan: &mut Plan, d: &DeviceSpec, index: usize, ctx: &PlanContext) {
    let name = Some(d.name.as_str());
    let e = &d.emulation;
    let img_dir = ctx.work_dir.join("img");
    let img = img_dir.join(format!("{}.img", d.name));
    plan.push(name, Action::MakeDir { path: img_dir.clone(), mode: 0o700, remove_on_teardown: false }, "backing files");
    plan.push(name, Action::SparseFile { path: img.clone(), size: e.size_bytes }, "the remote target's storage");
    let (netns, target_ip) = target_link(plan, d, index, ctx);
    let port = 10809u16;
    let (nbdkit, delay) = nbdkit_command(plan, d, ctx, &img, &target_ip, port);
    plan.push(
        name,
        Action::StartDaemon {
            label: format!("nbdkit ({})", d.name),
            command: nbdkit,
            netns: Some(netns),
            log: ctx.log_dir.join(format!("nbdkit-{}.log", d.name)),
            ready_tcp: Some((target_ip.clone(), port)),
        },
        {
            // Measured in docs/benchmarks.md ("Emulated NVMe/TCP: the stack's own latency").
            const OWN: &str = "nbdkit, nbdfuse and the loop device add about 0.2 ms of their own per I/O (4 KiB O_DIRECT reads, docs/benchmarks.md)";
            match delay {
                Some(delay) => format!(
                    "NBD target in its namespace, adding {}{}; {OWN}",
                    delay.describe(),
                    latency_note(e.latency.unwrap_or_default(), delay)
                ),
                None => format!("NBD target in its namespace; {OWN}"),
            }
        },
    );
    nbd_client(plan, d, ctx, &target_ip, port);
}

/// A network namespace standing in for the target host, and a veth link to it; the namespace
/// and the target's address.
fn target_link(plan: &mut Plan, d: &DeviceSpec, index: usize, ctx: &PlanContext) -> (String, String) {
    let name = Some(d.name.as_str());
    let netns = format!("pgt-{}-{index}", ctx.short_id);
    let host_if = format!("pgt{}{index}h", ctx.short_id);
    let target_if = format!("pgt{}{index}t", ctx.short_id);
    let (host_ip, target_ip) = link_addresses(&ctx.short_id, index);
    plan.push(
        name,
        Action::CreateNetns { name: netns.clone() },
        "a network namespace standing in for the storage target host",
    );
    plan.push(
        name,
        Action::CreateVeth {
            host_if,
            target_if,
            netns: netns.clone(),
            host_cidr: format!("{host_ip}/30"),
            target_cidr: format!("{target_ip}/30"),
        },
        "a link between this host and the target, so NBD traffic crosses a real network interface",
    );
    (netns, target_ip)
}

/// The client side: nbdfuse presents the export as a file, a loop device over it with direct
/// I/O, XFS on that.
pub(super) fn nbd_client(plan: &mut Plan, d: &DeviceSpec, ctx: &PlanContext, target_ip: &str, port: u16) {
    let name = Some(d.name.as_str());
    let fuse_dir = ctx.work_dir.join("fuse").join(&d.name);
    plan.push(
        name,
        Action::MakeDir { path: fuse_dir.clone(), mode: 0o700, remove_on_teardown: false },
        "nbdfuse mount point",
    );
    let file = fuse_dir.join("nbd");
    plan.push(
        name,
        Action::StartFuse {
            mountpoint: fuse_dir.clone(),
            command: Template::new("nbdfuse")
                .lit(fuse_dir.display().to_string())
                .lit(format!("nbd://{target_ip}:{port}")),
            file: file.clone(),
            log: ctx.log_dir.join(format!("nbdfuse-{}.log", d.name)),
        },
        "the NBD client side: the remote device appears as a file (no nbd kernel module here)",
    );
    plan.push(
        name,
        Action::AttachLoop { file, direct_io: true, bind: d.name.clone() },
        "a real block device over the remote file, direct I/O",
    );
    plan.push(
        name,
        Action::Run { command: mkfs_template(d, Value::var(&d.name), false, true), timeout_secs: 600 },
        "XFS; -K skips the discard pass, which is very slow over NBD",
    );
}

/// nbdkit's command line for device `d` serving `img` on `target_ip:port`: the file plugin, or
/// the delay filter or pgtier's microsecond plugin (written next to the image) when a latency
/// is asked for, and the error filter when faults may be injected; with the delay applied.
pub(super) fn nbdkit_command(
    plan: &mut Plan,
    d: &DeviceSpec,
    ctx: &PlanContext,
    img: &Path,
    target_ip: &str,
    port: u16,
) -> (Template, Option<EmulatedDelay>) {
    let name = Some(d.name.as_str());
    let e = &d.emulation;
    let img_dir = ctx.work_dir.join("img");
    let mut nbdkit = Template::new("nbdkit").lits(["--foreground", "--ipaddr", target_ip, "--port", &port.to_string()]);
    if e.error_injection {
        let faults = ctx.work_dir.join("faults");
        plan.push(
            name,
            Action::MakeDir { path: faults.clone(), mode: 0o700, remove_on_teardown: false },
            "switches for injected faults",
        );
        nbdkit = nbdkit.lit("--filter=error");
    }
    let error_args: Vec<String> = if e.error_injection {
        vec!["error=EIO".into(), "error-rate=100%".into(), format!("error-file={}", error_file(ctx, &d.name).display())]
    } else {
        vec![]
    };
    let delay = e.latency.and_then(EmulatedDelay::for_latency);
    match delay {
        None => nbdkit = nbdkit.lit("file").lit(img.display().to_string()),
        Some(EmulatedDelay::DelayFilter { ms }) => {
            nbdkit = nbdkit
                .lit("--filter=delay")
                .lit("file")
                .lit(img.display().to_string())
                .lit(format!("delay-read={ms}ms"))
                .lit(format!("delay-write={ms}ms"));
        }
        Some(EmulatedDelay::MicrosecondPlugin { us }) => {
            let source = img_dir.join("pgtier-usdelay.c");
            plan.push(
                name,
                Action::WriteFile {
                    path: source.clone(),
                    contents: MICROSECOND_DELAY_PLUGIN.to_string(),
                    what: "nbdkit plugin source, part of pgtier".into(),
                },
                "nbdkit's delay filter takes whole milliseconds only; this small plugin sleeps a number of microseconds before each read and write",
            );
            nbdkit = nbdkit
                .lit("cc")
                .lit(source.display().to_string())
                .lit(format!("file={}", img.display()))
                .lit(format!("delay_us={us}"));
        }
    }
    nbdkit = nbdkit.lits(error_args);
    (nbdkit, delay)
}

/// Says when the applied delay differs from the one asked for (cut to whole microseconds).
pub(super) fn latency_note(asked: Duration, delay: EmulatedDelay) -> String {
    if asked == delay.applied() { String::new() } else { format!(" (asked for {asked:?}, cut to whole microseconds)") }
}

/// Link-local /30 addresses for device `index` of a run.
/// One of the 16,000-odd link-local /30 subnets (169.254.1.0 to 169.254.254.255, without
/// 169.254.169.0/24, where clouds serve instance metadata), chosen from the run's token and the
/// device index, so that concurrent runs do not collide.
pub(super) fn link_addresses(short_id: &str, index: usize) -> (String, String) {
    let h = short_id.bytes().fold(2_166_136_261u32, |a, b| (a ^ b as u32).wrapping_mul(16_777_619));
    let subnets = 253 * 64; // third octet 1..=254 except 169, 64 /30 subnets each
    // A block of 8 consecutive /30s per run (2,024 blocks): a run's devices never share one, and
    // two runs on one host share one with a chance of about 1 in 2,000 (a third octet per run gave
    // 1 in 253); provisioning refuses a subnet another interface already holds.
    let block = h % (subnets / 8);
    let n = (block * 8 + index as u32) % subnets;
    let mut third = 1 + n / 64;
    if third >= 169 {
        third += 1;
    }
    let base = (n % 64) * 4;
    (format!("169.254.{third}.{}", base + 1), format!("169.254.{third}.{}", base + 2))
}
