//! Real devices: the checks before anything is touched, NVMe/TCP connections with their host
//! identity and secret, PMem namespaces, whole disks and partitions.

use super::*;

/// Every safety check of every device, before anything writes to a device. An NVMe/TCP namespace
/// can only be checked once connected: its `nvme connect` comes first (it attaches the remote
/// subsystem and writes nothing; teardown disconnects it).
pub(super) fn real_checks(plan: &mut Plan, devices: &[DeviceSpec], ctx: &PlanContext) {
    let tcp: Vec<&DeviceSpec> = devices.iter().filter(|d| matches!(d.real, RealDevice::NvmeTcp(_))).collect();
    if !tcp.is_empty() {
        let secret = tcp.iter().any(|d| matches!(&d.real, RealDevice::NvmeTcp(t) if t.dhchap_secret.is_some()));
        plan.push(
            None,
            Action::Check(Check::NvmeCli { secret }),
            "nvme-cli's options and output differ by version (1.14 and older have no --output-format on connect, which is then left out; 1.16 has no DH-HMAC-CHAP options; 2.11 changed what --config does): know which one this is before the first NVMe/TCP step",
        );
    }
    // Every check on a target host, for every device, before the first export there; and the
    // exports of one host on distinct disks there.
    let mut by_host: Vec<(String, Vec<(String, std::path::PathBuf)>)> = Vec::new();
    for d in devices {
        if let (RealDevice::NvmeTcp(t), Some(host)) = (&d.real, &d.target_host) {
            super::target::nvmet_export_checks(plan, d, host, t);
            match by_host.iter_mut().find(|(h, _)| *h == host.name) {
                Some((_, list)) => list.push((d.name.clone(), host.export.clone())),
                None => by_host.push((host.name.clone(), vec![(d.name.clone(), host.export.clone())])),
            }
        }
    }
    for (host, exports) in by_host.into_iter().filter(|(_, e)| e.len() > 1) {
        plan.push(
            None,
            Action::HostDevicesDistinct { host: host.clone(), devices: exports },
            format!("two devices must not export one disk of host {host} (or a disk and a partition of it): nvmet holds neither, so no other check sees it, and the second mkfs would destroy the first"),
        );
    }
    for (i, d) in devices.iter().enumerate() {
        let name = Some(d.name.as_str());
        let not_in_use = |plan: &mut Plan, why: &str| {
            plan.push(
                name,
                Action::Check(Check::IsBlockDevice { device: Value::var(disk_var(d)) }),
                "refuse anything that is not a block device",
            );
            plan.push(
                name,
                Action::Check(Check::NotInUse { device: Value::var(disk_var(d)), allow_wipe: d.allow_wipe }),
                why,
            );
        };
        match &d.real {
            RealDevice::Local { path, model, serial } => {
                plan.push(
                    name,
                    Action::Resolve { what: Resolve::Canonical { path: path.clone() }, bind: disk_var(d) },
                    "stable names (/dev/disk/by-id/...) are links to the kernel's name, which can change at boot",
                );
                if model.is_some() || serial.is_some() {
                    plan.push(
                        name,
                        Action::Check(Check::Identity {
                            device: Value::var(disk_var(d)),
                            model: model.clone(),
                            serial: serial.clone(),
                        }),
                        "make sure this is the device the experiment file names (sysfs device/model, device/serial)",
                    );
                }
                not_in_use(plan, "never touch a device that holds data or backs the system");
            }
            RealDevice::Pmem { namespace, allow_reconfigure } => {
                plan.push(
                    name,
                    Action::Check(Check::PmemFsdax {
                        namespace: namespace.clone(),
                        allow_reconfigure: *allow_reconfigure,
                        dax: d.dax,
                    }),
                    "DAX needs an fsdax namespace, and one aligned to 2 MiB to map PostgreSQL's files with huge pages as the PMem guides' layout (mkfs.xfs -d su=2m) intends",
                );
                plan.push(
                    name,
                    Action::Check(Check::PmemNotInUse { namespace: namespace.clone(), allow_wipe: d.allow_wipe }),
                    "never touch a namespace that holds data or is in use",
                );
            }
            RealDevice::NvmeTcp(t) => {
                if let Some(host) = &d.target_host {
                    super::target::nvmet_export(plan, d, host, t, i, ctx);
                }
                nvme_tcp_checks(plan, devices, i, t, ctx);
                not_in_use(plan, "never touch a namespace that holds data");
            }
        }
    }
}

/// Device `devices[i]`, a namespace of subsystem `t`: the host identity checked; the first
/// device of a subsystem connects it (once it is known not to be connected already), the others
/// use that connection; then the namespace is found by its subsystem NQN.
pub(super) fn nvme_tcp_checks(plan: &mut Plan, devices: &[DeviceSpec], i: usize, t: &NvmeTcpTarget, ctx: &PlanContext) {
    let d = &devices[i];
    let name = Some(d.name.as_str());
    // One connection per subsystem: a second namespace of it is found on the
    // connection the first device made.
    let first = devices[..i].iter().find(|o| matches!(&o.real, RealDevice::NvmeTcp(ot) if same_connection(ot, t)));
    if let Some(first) = first {
        plan.push(
            name,
            Action::Check(Check::NvmeHostIdentity { host_nqn: t.host_nqn.clone(), host_id: t.host_id.clone() }),
            format!("uses the connection to {} made for device {}", t.nqn, first.name),
        );
    } else {
        plan.push(
            name,
            Action::Check(Check::NvmeHostIdentity { host_nqn: t.host_nqn.clone(), host_id: t.host_id.clone() }),
            "nvme-cli pairs a host NQN given alone with this machine's /etc/nvme/hostid, and Linux 6.5 and later reject a host ID already known with another NQN (EINVAL): pgtier passes the file's pair, or (neither given) this machine's",
        );
        plan.push(
            name,
            Action::Check(Check::NvmeNotConnected { nqn: t.nqn.clone() }),
            "teardown disconnects the subsystem, so pgtier must not reuse someone else's connection",
        );
        let sharing: Vec<String> = devices
            .iter()
            .filter(|o| matches!(&o.real, RealDevice::NvmeTcp(ot) if same_connection(ot, t)))
            .map(|o| o.name.clone())
            .collect();
        let secret_file = t.dhchap_secret.as_ref().map(|_| secret_config_file(ctx, &d.name));
        plan.push(
            name,
            Action::NvmeConnect { target: t.clone(), secret_file, devices: sharing.clone() },
            format!(
                "attach the remote subsystem so that its namespace{} can be checked (writes nothing); teardown disconnects the controller this connect creates; connection settings: {} (the manifest records them with the values the controller reports){}",
                if sharing.len() > 1 { format!("s ({})", sharing.join(", ")) } else { String::new() },
                crate::plan::connect_settings_text(),
                if t.dhchap_secret.is_some() {
                    "; the DH-HMAC-CHAP secret is read when the command runs and never reaches a command line, the plan or any record"
                } else {
                    ""
                }
            ),
        );
    }
    // A target host's subsystem is pgtier's own, with the one namespace it made there.
    let nsid = if d.target_host.is_some() { Some(t.nsid.unwrap_or(super::target::EXPORTED_NSID)) } else { t.nsid };
    plan.push(
        name,
        Action::Resolve { what: Resolve::NvmeNamespace { nqn: t.nqn.clone(), nsid }, bind: disk_var(d) },
        "kernel names like nvme2n1 are not stable: find the namespace by its subsystem NQN",
    );
    if let Some(id) = &t.uuid {
        plan.push(
            name,
            Action::Check(Check::NvmeNamespaceNamed { device: Value::var(disk_var(d)), id: id.clone() }),
            "the experiment file names the namespace by its UUID/NGUID: any other namespace is refused before anything is written",
        );
    }
    if d.target_host.is_some() {
        plan.push(
            name,
            Action::Check(Check::NvmeNamespaceUuid {
                device: Value::var(disk_var(d)),
                uuid: super::target::namespace_uuid(&ctx.short_id, &d.name, &t.nqn),
            }),
            "end to end: the namespace found is the one the target host exports (another target answering at that address with that NQN is refused before anything is written)",
        );
    }
}

/// Where a connect's libnvme configuration (carrying the DH-HMAC-CHAP key) is written: next to
/// the run's work directory, which does not exist yet when the checks run.
pub fn secret_config_file(ctx: &PlanContext, device: &str) -> PathBuf {
    let name = ctx.work_dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    ctx.work_dir.with_file_name(format!("{name}.nvme-{device}.json"))
}

/// Devices that share one NVMe/TCP connection: the same address, port, subsystem and host.
pub fn same_connection(a: &NvmeTcpTarget, b: &NvmeTcpTarget) -> bool {
    a.address == b.address && a.port == b.port && a.nqn == b.nqn && a.host_nqn == b.host_nqn && a.host_id == b.host_id
}

pub(super) fn real_device(plan: &mut Plan, d: &DeviceSpec, ctx: &PlanContext) {
    let name = Some(d.name.as_str());
    if let RealDevice::Pmem { namespace, allow_reconfigure } = &d.real {
        if *allow_reconfigure {
            plan.push(
                name,
                Action::PmemReconfigure { namespace: namespace.clone(), dax: d.dax },
                "the experiment file allows reconfiguring this namespace to fsdax (destroys its data)",
            );
        }
        plan.push(
            name,
            Action::Resolve { what: Resolve::PmemNamespace { namespace: namespace.clone() }, bind: disk_var(d) },
            "the namespace's block device (pmemN)",
        );
    }
    let disk = Value::var(disk_var(d));
    if d.discard {
        plan.push(
            name,
            run(Template::new("blkdiscard").val(disk.clone()), 3600),
            "start from a trimmed device (experiment file: discard = true)",
        );
    }
    if let Some(pre) = &d.precondition {
        let percent = ((pre.fill_fraction * 100.0).round() as u64).clamp(1, 100);
        plan.push(
            name,
            run(
                Template::new("fio")
                    .lits(["--name=precondition", "--filename"])
                    .val(disk.clone())
                    .lits(["--rw=write", "--bs=1M", "--direct=1", "--ioengine=libaio", "--iodepth=32"])
                    .lit(format!("--size={percent}%")),
                24 * 3600,
            ),
            format!(
                "precondition (seed 002): write {percent}% of the device so an SSD is measured in steady state, not fresh out of the box; keep the filesystem under 50% full (pgtier notes the limit after mounting)"
            ),
        );
    }
    let fs_dev = match &d.partition {
        Some(p) => partition(plan, d, p, &disk),
        None => disk.clone(),
    };
    let skip_discard = d.precondition.is_some();
    plan.push(
        name,
        Action::StillUnused { disk: disk_var(d) },
        "nothing may have taken the disk since the checks: udev's rules can activate an old volume group or array found on it (or on a new partition) after udevadm settle has returned, and mkfs would then meet EBUSY with a stray volume group left running",
    );
    plan.push(
        name,
        run(mkfs_template_for(d, fs_dev.clone(), d.allow_wipe, skip_discard, true), 3600),
        match (d.allow_wipe, skip_discard) {
            (true, false) => "XFS with the experiment's options (-f: the experiment file allows wiping)",
            (false, false) => {
                "XFS with the experiment's options (no -f: mkfs.xfs itself refuses a device that holds a filesystem)"
            }
            (true, true) => {
                "XFS with the experiment's options (-f: wiping allowed; -K: a discard would undo the preconditioning)"
            }
            (false, true) => "XFS with the experiment's options (-K: a discard would undo the preconditioning)",
        },
    );
    if d.partition.is_some() {
        plan.push(
            name,
            Action::UnlockDisk { disk: disk_var(d) },
            "the filesystem is made: let udev see the disk again",
        );
    }
    finish_filesystem(plan, d, fs_dev, ctx, false);
}

/// A GPT label and one optimally aligned partition on `disk`, the disk held locked once udev
/// has re-read the table (until mkfs is done); returns the partition, bound to the device's name.
pub(super) fn partition(plan: &mut Plan, d: &DeviceSpec, p: &PartitionSpec, disk: &Value) -> Value {
    let name = Some(d.name.as_str());
    let start = format!("{}.start", d.name);
    let least = if d.class == DeviceClass::Pmem { p.start_sector.max(4096) } else { p.start_sector };
    plan.push(
        name,
        Action::Resolve { what: Resolve::PartitionStart { disk: disk_var(d), least_sectors: least }, bind: start.clone() },
        if d.class == DeviceClass::Pmem {
            "PMem partitions start at 2 MiB at least, so that huge-page DAX mappings stay aligned; and where the device reports its geometry (a RAID stripe width that does not divide 1 MiB), at a start parted's align-check opt accepts"
        } else {
            "1 MiB, or where the device reports its geometry (a RAID stripe width that does not divide 1 MiB), a start parted's align-check opt accepts"
        },
    );
    if d.allow_wipe {
        plan.push(
            name,
            Action::WipeSignatures { device: disk_var(d), partitions_first: true },
            "the experiment file allows wiping: erase the signatures (magic strings only) of the disk's old partitions and of the disk, so that an old LVM PV or md member at the new partition's start is not found and activated by udev when parted writes the table (mkfs would then fail with EBUSY and a stray volume group or array stay running)",
        );
    }
    plan.push(
        name,
        run(
            Template::new("parted")
                .lits(["-s"])
                .val(disk.clone())
                .lits(["mklabel", "gpt", "mkpart", "primary"])
                .val(Value::var(&start))
                .lit("100%"),
            120,
        ),
        "a GPT label and one partition (seed 003)",
    );
    plan.push(
        name,
        run(Template::new("parted").lits(["-s"]).val(disk.clone()).lits(["align-check", "opt", "1"]), 60),
        "fail unless partition 1 is optimally aligned (with -s parted answers by exit status only)",
    );
    plan.push(
        name,
        Action::LockDisk { disk: disk_var(d) },
        "when parted closes the disk, systemd-udevd re-reads its partition table and the partition node disappears and comes back: wait until udev has done so, then hold the disk so that it does not happen again under mkfs (udevd skips a disk another process holds locked)",
    );
    plan.push(
        name,
        Action::Resolve { what: Resolve::Partition { disk: disk_var(d), number: 1 }, bind: d.name.clone() },
        "the partition node appears asynchronously",
    );
    if d.allow_wipe {
        plan.push(
            name,
            Action::WipeSignatures { device: d.name.clone(), partitions_first: false },
            "the experiment file allows wiping: erase any signature found inside the new partition (one an old layout left at its offsets) while the disk is held, before mkfs",
        );
    }
    Value::var(&d.name)
}
