//! Devices served by a storage target host: `target = "<host>"` on an `nvme-tcp` device names
//! a `[[host]]` with the `target` role, and `export` the block device nvmet exports there. The
//! device's address is then the host's unless `address` names the host's address on a storage
//! network (not with --emulate), its subsystem NQN pgtier's own unless `nqn` is given.

use std::path::PathBuf;

use tiers::spec::{Backing, DeviceClass, DeviceSpec, RealDevice, TargetHost};

use super::Validator;
use crate::LoadOptions;
use crate::keyword::Word;
use crate::model::{FaultKind, Host, HostRole};
use crate::raw::RawFile;
use crate::spans::span;

impl Validator<'_> {
    /// Resolves every device's `target` against `hosts`; a target host no device names is
    /// worth a warning.
    pub(super) fn target_devices(
        &mut self,
        raw: &RawFile,
        hosts: &[Host],
        devices: &mut [DeviceSpec],
        opts: &LoadOptions,
    ) {
        for rd in &raw.device {
            let r = rd.get_ref();
            let n = r.name.get_ref();
            let key = |k: &str| format!("device[{n}].{k}");
            let Some(t) = &r.target else {
                if let Some(e) = &r.export {
                    self.err(
                        span(e),
                        key("export"),
                        "`export` names the device a target host exports: give `target = \"<host>\"` too",
                    );
                }
                if let Some(a) = &r.allow_any_host {
                    self.err(
                        span(a),
                        key("allow_any_host"),
                        "`allow_any_host` opens the export of a target host to any initiator: it applies only with `target = \"<host>\"`",
                    );
                }
                continue;
            };
            let Some(dev) = devices.iter_mut().find(|d| &d.name == n) else { continue };
            if dev.class != DeviceClass::NvmeTcp {
                self.err(
                    span(t),
                    key("target"),
                    format!("only an nvme-tcp device is served by a target host; {n:?} is {}", dev.class),
                );
                continue;
            }
            let name = t.get_ref();
            let Some(host) = self.target_host(t, hosts, &key) else { continue };
            // `address`: where the data path goes (a storage network's address of the host); the
            // host's own address (ssh) by default. The stand-in listens on the host's address.
            if let Some(a) = &r.address
                && opts.emulate
            {
                self.err(
                    span(a),
                    key("address"),
                    format!("with --emulate, the stand-in on host {name:?} listens on the host's address; leave `address` out"),
                );
            }
            // DH-HMAC-CHAP: the key goes into nvmet's hosts/<host NQN>/dhchap_key there, which
            // exists only for a host admitted by name.
            let any_host = r.allow_any_host.as_ref().is_some_and(|a| *a.get_ref());
            for (k, given) in [
                ("dhchap_secret_env", r.dhchap_secret_env.is_some()),
                ("dhchap_secret_file", r.dhchap_secret_file.is_some()),
            ] {
                if given && any_host {
                    self.err(
                        span(rd),
                        key(k),
                        format!("DH-HMAC-CHAP with allow_any_host = true: nvmet asks a key only of a host it admits by name (hosts/<host NQN>/dhchap_key), so any host would still connect without one; leave allow_any_host out (host {name:?} then admits this machine's host NQN alone, with this key)"),
                    );
                }
            }
            let export = self.export(rd, &key);
            if opts.emulate {
                self.emulated_on_host(dev, name, span(t), raw, &key);
            }
            if let RealDevice::NvmeTcp(nt) = &mut dev.real {
                if r.address.is_none() || opts.emulate {
                    nt.address = host.address.to_string();
                }
                if nt.nqn.is_empty() {
                    nt.nqn = format!("nqn.2026-12.io.pgtier:{name}:{n}");
                }
            }
            let allow_any_host = r.allow_any_host.as_ref().is_some_and(|a| *a.get_ref());
            if allow_any_host && !opts.emulate {
                self.warnings.push(format!(
                    "device {n:?}: allow_any_host = true: any host that reaches {} may connect to the export of {name:?} and read and write it while the run lasts (leave it out to admit this machine's host NQN alone)",
                    match &dev.real {
                        RealDevice::NvmeTcp(nt) => format!("{}:{}", nt.address, nt.port),
                        _ => host.address.to_string(),
                    }
                ));
            }
            if !opts.emulate && super::device::is_kernel_name(&export.display().to_string()) {
                self.warnings.push(format!(
                    "device {n:?}: export {} is a kernel name on host {name:?}, which can name another disk there after a reboot or a hot-plug (NVMe and SCSI names follow probe order); a stable /dev/disk/by-id/... name, or model and serial, make sure it is this disk",
                    export.display()
                ));
            }
            dev.target_host = Some(TargetHost {
                name: name.clone(),
                address: host.address.to_string(),
                export,
                allow_any_host,
                export_model: r.model.clone(),
                export_serial: r.serial.clone(),
                shell: None,
            });
        }
        // One subsystem per device on a target host: a second `mkdir` of the same NQN fails.
        let mut seen: Vec<(String, String, String)> = Vec::new();
        for rd in &raw.device {
            let r = rd.get_ref();
            let n = r.name.get_ref();
            let Some(d) = devices.iter().find(|d| &d.name == n) else { continue };
            let (Some(t), RealDevice::NvmeTcp(nt)) = (&d.target_host, &d.real) else { continue };
            if let Some((_, _, first)) = seen.iter().find(|(h, q, _)| h == &t.name && q == &nt.nqn) {
                let at = r.nqn.as_ref().map(span).unwrap_or_else(|| span(rd));
                self.err(
                    at,
                    format!("device[{n}].nqn"),
                    format!("devices {first:?} and {n:?} are both served by host {:?} as subsystem {}: each device a target host exports is its own subsystem; give them different `nqn`s (or leave `nqn` out for pgtier's own)", t.name, nt.nqn),
                );
            } else {
                seen.push((t.name.clone(), nt.nqn.clone(), n.clone()));
            }
        }
        // One hosts/<host NQN> entry on a target host serves every device of the run there, and
        // it holds one key: the devices that host serves with a key share its source.
        let mut keyed: Vec<(String, String, Option<tiers::spec::SecretSource>)> = Vec::new();
        for rd in &raw.device {
            let n = rd.get_ref().name.get_ref();
            let Some(d) = devices.iter().find(|d| &d.name == n) else { continue };
            let (Some(t), RealDevice::NvmeTcp(nt)) = (&d.target_host, &d.real) else { continue };
            if t.allow_any_host {
                continue;
            }
            match keyed.iter().find(|(h, _, _)| h == &t.name) {
                Some((_, first, secret)) if secret != &nt.dhchap_secret => self.err(
                    span(rd),
                    format!("device[{n}].dhchap_secret_env"),
                    format!("devices {first:?} and {n:?} are served by host {:?}, whose one hosts/ entry for this machine holds one DH-HMAC-CHAP key: give both the same dhchap_secret_env or dhchap_secret_file (or neither)", t.name),
                ),
                Some(_) => {}
                None => keyed.push((t.name.clone(), n.clone(), nt.dhchap_secret.clone())),
            }
        }
        for h in hosts.iter().filter(|h| h.roles.contains(&HostRole::Target)) {
            if !devices.iter().any(|d| d.target_host.as_ref().is_some_and(|t| t.name == h.name)) {
                self.warnings.push(format!(
                    "host {:?} has the target role, but no device names it (target = {:?})",
                    h.name, h.name
                ));
            }
        }
    }

    /// The host a device's `target` names, when it is one with the `target` role.
    fn target_host<'h>(
        &mut self,
        t: &toml::Spanned<String>,
        hosts: &'h [Host],
        key: &dyn Fn(&str) -> String,
    ) -> Option<&'h Host> {
        let name = t.get_ref();
        let Some(host) = hosts.iter().find(|h| &h.name == name) else {
            let targets: Vec<&str> =
                hosts.iter().filter(|h| h.roles.contains(&HostRole::Target)).map(|h| h.name.as_str()).collect();
            self.err(
                span(t),
                key("target"),
                format!(
                    "no [[host]] named {name:?}{}",
                    if targets.is_empty() {
                        " (add one with roles = [\"target\"])".to_string()
                    } else {
                        format!(": the target hosts are {}", targets.join(", "))
                    }
                ),
            );
            return None;
        };
        if !host.roles.contains(&HostRole::Target) {
            self.err(span(t), key("target"), format!("host {name:?} has no \"target\" role: add it to its roles"));
            return None;
        }
        Some(host)
    }

    /// The block device the target host exports: a path under /dev.
    fn export(&mut self, rd: &toml::Spanned<crate::raw::RawDevice>, key: &dyn Fn(&str) -> String) -> PathBuf {
        let r = rd.get_ref();
        match &r.export {
            None => {
                self.err(span(rd), key("export"), "a device served by a target host needs `export`, the block device nvmet exports there (for example export = \"/dev/disk/by-id/nvme-...\"; with --emulate it is not touched)");
                PathBuf::new()
            }
            Some(e) if !e.get_ref().starts_with("/dev/") => {
                self.err(span(e), key("export"), "the exported device is a path under /dev on the target host (best a stable /dev/disk/by-id/... name)");
                PathBuf::new()
            }
            Some(e) => PathBuf::from(e.get_ref()),
        }
    }

    /// What the nbdkit stand-in on a target host does not do yet: another backing, a latency
    /// below whole milliseconds (its plugin is compiled on this machine), injected faults.
    fn emulated_on_host(
        &mut self,
        dev: &DeviceSpec,
        host: &str,
        at: Option<std::ops::Range<usize>>,
        raw: &RawFile,
        key: &dyn Fn(&str) -> String,
    ) {
        let n = &dev.name;
        if dev.emulation.backing != Backing::Nbd {
            self.err(
                at.clone(),
                key("emulate.backing"),
                format!("a device served by host {host:?} is emulated by nbdkit there: its backing is \"nbd\""),
            );
        }
        if dev.emulation.latency.is_some_and(|l| !l.is_zero() && l.as_micros() % 1000 != 0) {
            self.err(at.clone(), key("emulate.latency"), format!("on host {host:?} nbdkit adds whole milliseconds only (its delay filter); the sub-millisecond plugin is not built for target hosts yet"));
        }
        for (i, f) in raw.fault.iter().enumerate() {
            let r = f.get_ref();
            let through_nbdkit = matches!(r.kind.get_ref(), Word::Known(FaultKind::IoErrors | FaultKind::StopTarget));
            if through_nbdkit && r.device.as_ref().is_some_and(|d| d.get_ref() == n) {
                self.err(span(f), format!("fault[{i}].kind"), format!("faults injected through nbdkit are not built for a device served by a target host ({n:?} on {host:?})"));
            }
        }
    }
}
