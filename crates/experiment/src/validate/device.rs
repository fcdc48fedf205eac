//! `[[device]]`: the device class and the real device it names, filesystem options, DAX,
//! preconditioning, throttles, and how `--emulate` stands it in.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::Duration;

use runner::matrix::WorkloadSpec;
use tiers::spec::{
    Backing, DaxPolicy, DeviceClass, DeviceSpec, Emulation, NvmeTcpTarget, PartitionSpec, Precondition, RealDevice,
    SecretSource, Throttle,
};
use toml::Spanned;

use super::Validator;
use super::emulate::Overrides;
use crate::LoadOptions;
use crate::model::Placement;
use crate::policy::{unsafe_mkfs_option, unsafe_mount_option};
use crate::raw::{RawDevice, RawDeviceEmulate, RawFile, RawThrottle};
use crate::spans::span;

/// The size of an emulated device that gives none and no `[emulate] device_size`.
const DEFAULT_EMULATED_SIZE: u64 = 4 << 30;

impl Validator<'_> {
    pub(super) fn devices(&mut self, raw: &RawFile, ov: &Overrides, opts: &LoadOptions) -> Vec<DeviceSpec> {
        let mut devices = Vec::new();
        let mut seen = BTreeSet::new();
        for d in &raw.device {
            self.unique(&mut seen, "device", &d.get_ref().name);
            if let Some(spec) = self.device(d, ov, opts) {
                devices.push(spec);
            }
        }
        if raw.device.is_empty() {
            self.err(span(&raw.experiment), "device", "the experiment defines no [[device]]");
        }
        self.namespaces_of_one_connection(raw, &devices);
        devices
    }

    /// NVMe/TCP devices on one connection (same address, port, subsystem and host identity)
    /// are namespaces of one subsystem: each names its own with a distinct `nsid`, as without
    /// one pgtier could only take whichever namespace is listed first. A target host's devices
    /// are each their own subsystem, with the one namespace pgtier makes (checked with hosts).
    fn namespaces_of_one_connection(&mut self, raw: &RawFile, devices: &[DeviceSpec]) {
        let served = |name: &str| {
            raw.device.iter().any(|rd| rd.get_ref().name.get_ref() == name && rd.get_ref().target.is_some())
        };
        let devices: Vec<&DeviceSpec> = devices.iter().filter(|d| !served(&d.name)).collect();
        for (i, d) in devices.iter().enumerate() {
            let RealDevice::NvmeTcp(t) = &d.real else { continue };
            let Some((first, ft)) = devices[..i].iter().find_map(|o| match &o.real {
                RealDevice::NvmeTcp(ot) if tiers::build::same_connection(ot, t) => Some((o, ot)),
                _ => None,
            }) else {
                continue;
            };
            let at = raw.device.iter().find(|rd| rd.get_ref().name.get_ref() == &d.name).map(span).unwrap_or(None);
            let key = format!("device[{}].nsid", d.name);
            let msg = match (ft.nsid, t.nsid) {
                (Some(a), Some(b)) if a != b => continue,
                (Some(a), Some(_)) => format!(
                    "devices {:?} and {:?} both name namespace {a} of subsystem {} at {}:{}: give each device its own namespace (`nvme list-ns` on the connected controller lists them)",
                    first.name, d.name, t.nqn, t.address, t.port
                ),
                _ => format!(
                    "devices {:?} and {:?} share one connection to subsystem {} at {}:{}, so they are two of its namespaces: give each its `nsid` (e.g. nsid = 1 and nsid = 2); without it pgtier cannot tell which namespace a device is",
                    first.name, d.name, t.nqn, t.address, t.port
                ),
            };
            self.err(at, key, msg);
        }
    }

    fn device(&mut self, d: &Spanned<RawDevice>, ov: &Overrides, opts: &LoadOptions) -> Option<DeviceSpec> {
        let r = d.get_ref();
        let n = r.name.get_ref().clone();
        let key = |k: &str| format!("device[{n}].{k}");
        self.name(&r.name, &key("name"));
        let class = self.keyword(&r.class, key("class"))?;
        let real = self.real_device(d, class, &key);
        if let (RealDevice::Local { path, .. }, false) = (&real, opts.emulate)
            && is_kernel_name(&path.display().to_string())
        {
            self.warnings.push(format!(
                "device {:?}: path {} is a kernel name, which can name another disk after a reboot or a hot-plug (NVMe and SCSI names follow probe order); a stable /dev/disk/by-id/... name, or model and serial, make sure it is this disk",
                d.get_ref().name.get_ref(),
                path.display()
            ));
        }
        let default_dax = if class == DeviceClass::Pmem { DaxPolicy::Required } else { DaxPolicy::Off };
        let dax = self.keyword_or(r.dax.as_ref(), &key("dax"), default_dax, DaxPolicy::Off);
        let precondition = r.precondition_fill.as_ref().and_then(|f| {
            let v = *f.get_ref();
            if !(0.0 < v && v <= 1.0) {
                self.err(
                    span(f),
                    key("precondition_fill"),
                    "a fraction of the device between 0 and 1 (1.0 = the whole device)",
                );
                None
            } else {
                Some(Precondition { fill_fraction: v })
            }
        });
        let throttle = r.throttle.as_ref().map(|t| self.throttle(t, &key("throttle")));
        let (emulation, emu_throttle) = self.emulation(&n, class, r.emulate.as_ref().map(|e| e.get_ref()), ov, opts);
        for o in r.mkfs_options.iter().filter_map(|o| unsafe_mkfs_option(o)) {
            self.err(span(d), key("mkfs_options"), o);
        }
        for o in r.mount_options.iter().filter_map(|o| unsafe_mount_option(o)) {
            self.err(span(d), key("mount_options"), o);
        }
        Some(DeviceSpec {
            name: n,
            class,
            description: r.description.clone(),
            real,
            mkfs_options: r.mkfs_options.clone(),
            mount_options: r.mount_options.clone(),
            dax,
            partition: r.partition.unwrap_or(false).then_some(PartitionSpec { start_sector: 2048 }),
            allow_wipe: r.allow_wipe.unwrap_or(false),
            discard: r.discard.unwrap_or(false),
            precondition,
            throttle: if opts.emulate { emu_throttle.or(throttle) } else { throttle },
            emulation,
            // Set by `target_devices` once the hosts are known.
            target_host: None,
        })
    }

    /// The real device of its class, with the keys that class needs (and no others).
    fn real_device(&mut self, d: &Spanned<RawDevice>, class: DeviceClass, key: &dyn Fn(&str) -> String) -> RealDevice {
        let r = d.get_ref();
        let need = |v: &mut Self, present: bool, what: &str, example: &str| {
            if !present {
                v.err(span(d), key(what), format!("a {class} device needs `{what}` (for example {example})"));
            }
        };
        let real = match class {
            DeviceClass::Nvme => {
                need(self, r.path.is_some(), "path", "path = \"/dev/disk/by-id/nvme-...\"");
                if let Some(p) = &r.path
                    && !p.get_ref().starts_with("/dev/")
                {
                    self.err(
                        span(p),
                        key("path"),
                        "the real device is a path under /dev (best a stable /dev/disk/by-id/... name)",
                    );
                }
                RealDevice::Local {
                    path: r.path.as_ref().map(|p| PathBuf::from(p.get_ref())).unwrap_or_default(),
                    model: r.model.clone(),
                    serial: r.serial.clone(),
                }
            }
            DeviceClass::Pmem => {
                need(self, r.namespace.is_some(), "namespace", "namespace = \"namespace0.0\"");
                RealDevice::Pmem {
                    namespace: r.namespace.as_ref().map(|s| s.get_ref().clone()).unwrap_or_default(),
                    allow_reconfigure: r.allow_reconfigure.unwrap_or(false),
                }
            }
            // A target host's device: its address is the host's, its NQN pgtier's own by default.
            DeviceClass::NvmeTcp if r.target.is_some() => RealDevice::NvmeTcp(self.nvme_tcp_target(d, key)),
            DeviceClass::NvmeTcp => {
                need(self, r.address.is_some(), "address", "address = \"192.0.2.10\"");
                need(self, r.nqn.is_some(), "nqn", "nqn = \"nqn.2016-01.com.lightbitslabs:uuid:...\"");
                RealDevice::NvmeTcp(self.nvme_tcp_target(d, key))
            }
        };
        for (present, what) in [
            (r.path.is_some() && class != DeviceClass::Nvme, "path"),
            (r.namespace.is_some() && class != DeviceClass::Pmem, "namespace"),
            ((r.address.is_some() || r.nqn.is_some()) && class != DeviceClass::NvmeTcp, "address/nqn"),
            ((r.nsid.is_some() || r.uuid.is_some()) && class != DeviceClass::NvmeTcp, "nsid/uuid"),
        ] {
            if present {
                self.err(span(d), key(what), format!("`{what}` does not apply to a {class} device"));
            }
        }
        // model and serial identify a disk: a local one's `path`, or the `export` of a target
        // host (checked there); a remote subsystem's namespace is found by its NQN.
        let identifies = class == DeviceClass::Nvme || (class == DeviceClass::NvmeTcp && r.target.is_some());
        for (present, what) in [(r.model.is_some(), "model"), (r.serial.is_some(), "serial")] {
            if present && !identifies {
                self.err(
                    span(d),
                    key(what),
                    format!("`{what}` identifies a local device's `path` or the `export` of a target host; a {class} device{} has neither, so it would be unused: leave it out", if class == DeviceClass::NvmeTcp { " without `target`" } else { "" }),
                );
            }
        }
        real
    }

    fn nvme_tcp_target(&mut self, d: &Spanned<RawDevice>, key: &dyn Fn(&str) -> String) -> NvmeTcpTarget {
        let r = d.get_ref();
        if r.dhchap_secret_env.is_some() && r.dhchap_secret_file.is_some() {
            self.err(
                span(d),
                key("dhchap_secret_env"),
                "give the DH-HMAC-CHAP secret either from the environment or from a file, not both",
            );
        }
        let secret = match (&r.dhchap_secret_env, &r.dhchap_secret_file) {
            (Some(e), _) => Some(SecretSource::Env { name: e.clone() }),
            (None, Some(f)) => Some(SecretSource::File { path: f.into() }),
            _ => None,
        };
        let host_id = r.host_id.as_ref().map(|s| s.get_ref().trim().to_ascii_lowercase());
        // nvme connect's traddr, and nvmet's addr_traddr on a target host, take an IP address;
        // a host name meets EINVAL only when the kernel parses it.
        if let Some(a) = &r.address
            && a.get_ref().trim().parse::<std::net::IpAddr>().is_err()
        {
            self.err(
                span(a),
                key("address"),
                format!("address {:?} is not an IP address: NVMe/TCP connects to an IPv4 or IPv6 address (nvme connect --traddr), not a host name; give the target's address, e.g. \"192.0.2.10\" (`getent hosts <name>` resolves one)", a.get_ref()),
            );
        }
        if r.nsid == Some(0) {
            self.err(
                span(d),
                key("nsid"),
                "nsid 0 is not a namespace ID: NSIDs start at 1 (`nvme list-ns /dev/nvmeX` lists them)",
            );
        }
        if let Some(u) = &r.uuid {
            let hex = tiers::safety::hex_id(u.get_ref());
            if hex.len() != 32 || !hex.chars().all(|c| c.is_ascii_hexdigit()) {
                self.err(
                    span(u),
                    key("uuid"),
                    format!("uuid {:?} is neither a UUID nor an NGUID: give the namespace's 128-bit identifier as 32 hex digits, with or without dashes (`nvme id-ns /dev/nvmeXnY -o json` shows its nguid, `cat /sys/block/nvmeXnY/uuid` its UUID)", u.get_ref()),
                );
            }
        }
        match (&r.host_nqn, &r.host_id) {
            (_, Some(id)) if !is_uuid(id.get_ref()) => self.err(
                span(id),
                key("host_id"),
                format!("{:?} is not a host ID: give a UUID such as \"4c4c4544-0031-3910-8034-b4c04f4a3332\" (cat /etc/nvme/hostid)", id.get_ref()),
            ),
            (None, Some(id)) => self.err(
                span(id),
                key("host_id"),
                "host_id needs host_nqn as well: nvme connect takes the host's NQN and ID as a pair",
            ),
            (Some(n), None) if tiers::build::uuid_of_host_nqn(n).is_none() => self.err(
                span(d),
                key("host_nqn"),
                format!("host_nqn {n:?} is not a uuid NQN, so it implies no host ID: add host_id (cat /etc/nvme/hostid on the host whose identity the target allows)"),
            ),
            _ => {}
        }
        // The NVMe base specification's limit (the kernel and nvme-cli refuse a longer one).
        if let Some(n) = r.nqn.as_ref().filter(|n| n.get_ref().len() > NQN_MAX_BYTES) {
            self.err(
                span(n),
                key("nqn"),
                format!("nqn is {} bytes long; an NQN has at most {NQN_MAX_BYTES} (NVMe base specification): give the subsystem's own, shorter NQN", n.get_ref().len()),
            );
        }
        if let Some(n) = r.host_nqn.as_ref().filter(|n| n.len() > NQN_MAX_BYTES) {
            self.err(
                span(d),
                key("host_nqn"),
                format!("host_nqn is {} bytes long; an NQN has at most {NQN_MAX_BYTES} (NVMe base specification): give a shorter one (cat /etc/nvme/hostnqn)", n.len()),
            );
        }
        NvmeTcpTarget {
            address: r.address.as_ref().map(|s| s.get_ref().clone()).unwrap_or_default(),
            port: r.port.unwrap_or(4420),
            nqn: r.nqn.as_ref().map(|s| s.get_ref().clone()).unwrap_or_default(),
            host_nqn: r.host_nqn.clone(),
            host_id,
            dhchap_secret: secret,
            nsid: r.nsid,
            uuid: r.uuid.as_ref().map(|u| u.get_ref().clone()),
        }
    }

    /// How the device is emulated, and the throttle that applies when emulating.
    fn emulation(
        &mut self,
        n: &str,
        class: DeviceClass,
        e: Option<&RawDeviceEmulate>,
        ov: &Overrides,
        opts: &LoadOptions,
    ) -> (Emulation, Option<Throttle>) {
        let key = |k: &str| format!("device[{n}].emulate.{k}");
        let default_backing = class.default_backing();
        let backing =
            self.keyword_or(e.and_then(|e| e.backing.as_ref()), &key("backing"), default_backing, default_backing);
        // The device's own size, else [emulate] device_size.
        let size = match e
            .and_then(|e| e.size.as_ref())
            .map(|s| (s, key("size")))
            .or_else(|| ov.device_size.get().map(|c| (c.value, c.key)))
        {
            None => Some(DEFAULT_EMULATED_SIZE),
            Some((s, k)) => self.size(s, &k).inspect(|&bytes| {
                if bytes < 320 << 20 {
                    self.err(span(s), k, "XFS needs at least 300 MB; give emulated devices 512MiB or more");
                }
            }),
        };
        let latency = e.and_then(|e| e.latency.as_ref()).and_then(|l| self.latency(n, l, backing, opts));
        let throttle = e.and_then(|e| e.throttle.as_ref()).map(|t| self.throttle(t, &key("throttle")));
        let emulation = Emulation {
            backing,
            size_bytes: size.unwrap_or(DEFAULT_EMULATED_SIZE),
            latency,
            zram_algorithm: e.and_then(|e| e.zram_algorithm.clone()).unwrap_or_else(|| "lz4".into()),
            error_injection: false,
        };
        (emulation, throttle)
    }

    /// Latency added to every I/O of an nbd-backed device.
    fn latency(&mut self, n: &str, l: &Spanned<String>, backing: Backing, opts: &LoadOptions) -> Option<Duration> {
        let key = format!("device[{n}].emulate.latency");
        let d = self.duration(l, &key)?;
        if backing != Backing::Nbd {
            self.err(span(l), key, "added latency needs the \"nbd\" backing");
        } else if opts.emulate && d.as_nanos() % 1000 != 0 {
            self.err(span(l), key, "added latency is applied in whole microseconds; give e.g. \"200us\" or \"1ms\"");
        } else if opts.emulate && d.as_micros() % 1000 != 0 {
            self.warnings.push(format!(
                "device {n:?}: a latency below whole milliseconds ({}) is added by a small nbdkit plugin compiled with gcc at start (nbdkit's delay filter only takes whole milliseconds)",
                l.get_ref()
            ));
        }
        Some(d)
    }

    fn throttle(&mut self, t: &Spanned<RawThrottle>, key: &str) -> Throttle {
        let r = t.get_ref();
        let th = Throttle {
            read_iops: r.read_iops,
            write_iops: r.write_iops,
            read_bytes_per_sec: r.read_bandwidth.as_ref().and_then(|b| self.size(b, &format!("{key}.read_bandwidth"))),
            write_bytes_per_sec: r
                .write_bandwidth
                .as_ref()
                .and_then(|b| self.size(b, &format!("{key}.write_bandwidth"))),
        };
        if th.is_empty() {
            self.err(
                span(t),
                key,
                "a throttle needs at least one of read_iops, write_iops, read_bandwidth, write_bandwidth",
            );
        }
        th
    }

    /// Checks across sections: emulated devices too small for the data sets.
    pub(super) fn cross_checks(
        &mut self,
        devices: &[DeviceSpec],
        placements: &[Placement],
        workloads: &[WorkloadSpec],
        emulate: bool,
    ) {
        // pgbench data is about 15 MiB per scale unit, TPC-C about 100 MiB per warehouse.
        let need = workloads.iter().map(|w| w.estimated_bytes()).max().unwrap_or(0);
        let max_scale = workloads.iter().map(|w| w.scale()).max().unwrap_or(0);
        for d in devices {
            let copies = placements.iter().filter(|p| p.data == d.name).count() as u64;
            if emulate && copies > 0 && d.emulation.size_bytes < need * copies + (256 << 20) {
                self.warnings.push(format!(
                    "emulated device {:?} ({} MiB) may be too small for {copies} cop{} of a scale-{max_scale} data set (about {} MiB each)",
                    d.name,
                    d.emulation.size_bytes >> 20,
                    if copies == 1 { "y" } else { "ies" },
                    need >> 20
                ));
            }
        }
    }
}

impl Validator<'_> {
    /// An emulated device that holds the WAL of several placements must have room for each to
    /// grow to max_wal_size (a soft limit: 30% on top) besides the data copies on it; a full WAL
    /// device stops the server with a PANIC. Refused for the slices design (its servers run at
    /// once), warned about for runs (a stopped server keeps its recycled segments).
    pub(super) fn wal_room(
        &mut self,
        devices: &[DeviceSpec],
        placements: &[Placement],
        pg: &super::postgres::PostgresSection,
        measurement: &crate::model::Measurement,
        raw: &crate::raw::RawFile,
    ) {
        let max_wal = super::placement::run_profiles(&pg.profiles, placements)
            .into_iter()
            .flat_map(|p| std::iter::once(&p.profile.settings).chain(pg.memory_limits.iter().map(|l| &l.settings)))
            .filter_map(|s| s.get("max_wal_size").and_then(|v| runner::memory::pg_size_mb_default(v)))
            .max()
            .unwrap_or(1 << 30);
        // Each placement keeps a copy per build the matrix runs; one when it names its own.
        let builds = if placements.iter().any(|p| p.build.is_some()) { 1 } else { pg.builds.len() as u64 };
        for d in devices {
            let wal: Vec<&str> = placements.iter().filter(|p| p.wal == d.name).map(|p| p.name.as_str()).collect();
            if wal.len() < 2 {
                continue;
            }
            let need = wal.len() as u64 * builds * crate::golden::wal_allowance(max_wal);
            if d.emulation.size_bytes >= need {
                continue;
            }
            let msg = format!(
                "emulated device {:?} ({} MiB) holds the WAL of {} placements ({}){}, each of which may grow to max_wal_size ({} MiB) and more under load: it needs about {} MiB; give it [device.emulate] size (or [emulate] device_size) of at least that, or lower max_wal_size",
                d.name,
                d.emulation.size_bytes >> 20,
                wal.len(),
                wal.join(", "),
                if builds > 1 { format!(" for {builds} builds") } else { String::new() },
                max_wal >> 20,
                need >> 20
            );
            if measurement.design == crate::model::Design::Slices {
                let at = raw.emulate.as_ref().and_then(|e| e.get_ref().device_size.as_ref()).map(|s| s.span());
                let key = if at.is_some() {
                    "emulate.device_size".to_string()
                } else {
                    format!("device[{}].emulate.size", d.name)
                };
                self.err(at, key, format!("{msg} (design slices runs these servers at once)"));
            } else {
                self.warnings.push(msg);
            }
        }
    }
}

/// `8-4-4-4-12` hexadecimal digits.
fn is_uuid(s: &str) -> bool {
    let s = s.trim();
    s.len() == 36
        && s.char_indices().all(|(i, c)| if [8, 13, 18, 23].contains(&i) { c == '-' } else { c.is_ascii_hexdigit() })
}

/// `/dev/nvme0n1`, `/dev/sdb`, `/dev/vdc1`, `/dev/nvme1n1p2`: names the kernel gives in probe
/// order, not stable across boots.
pub(super) fn is_kernel_name(path: &str) -> bool {
    let Some(name) = path.strip_prefix("/dev/") else { return false };
    let digits_then = |s: &str| s.trim_start_matches(|c: char| c.is_ascii_digit()).len() < s.len();
    if let Some(rest) = name.strip_prefix("nvme") {
        return digits_then(rest) && rest.contains('n');
    }
    ["sd", "vd", "xvd", "hd"].iter().any(|p| {
        name.strip_prefix(p).is_some_and(|rest| {
            let letters = rest.trim_start_matches(|c: char| c.is_ascii_lowercase());
            letters.len() < rest.len() && letters.chars().all(|c| c.is_ascii_digit())
        })
    })
}

/// The longest NVMe Qualified Name, in bytes (NVMe base specification).
const NQN_MAX_BYTES: usize = 223;
