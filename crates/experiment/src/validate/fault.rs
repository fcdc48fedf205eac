//! `[[fault]]`: faults injected into measured runs, and the devices they need.

use tiers::spec::{Backing, DeviceSpec};
use toml::Spanned;

use super::Validator;
use crate::LoadOptions;
use crate::keyword::Keyword;
use crate::model::{FaultKind, FaultSpec};
use crate::raw::RawFault;
use crate::spans::span;

impl Validator<'_> {
    /// The faults; an I/O-error fault also turns on error injection in its device's emulation.
    pub(super) fn faults(
        &mut self,
        raw: &[Spanned<RawFault>],
        devices: &mut [DeviceSpec],
        opts: &LoadOptions,
    ) -> Vec<FaultSpec> {
        let mut out = Vec::new();
        for (i, f) in raw.iter().enumerate() {
            if let Some(spec) = self.fault(i, f, devices, opts) {
                out.push(spec);
            }
        }
        out
    }

    fn fault(
        &mut self,
        i: usize,
        f: &Spanned<RawFault>,
        devices: &mut [DeviceSpec],
        opts: &LoadOptions,
    ) -> Option<FaultSpec> {
        let r = f.get_ref();
        let key = |k: &str| format!("fault[{i}].{k}");
        let kind = self.keyword(&r.kind, key("kind"))?;
        let after = self.duration(&r.after, &key("after"))?;
        if *r.run.get_ref() == 0 {
            self.err(span(&r.run), key("run"), "runs are numbered from 1 in the executed order (see --dry-run)");
        }
        let needs_device = matches!(kind, FaultKind::IoErrors | FaultKind::FillDevice | FaultKind::StopTarget);
        match (&r.device, needs_device) {
            (None, true) => self.err(span(f), key("device"), format!("a {} fault needs `device`", kind.word())),
            (Some(d), false) => self.err(span(d), key("device"), format!("a {} fault takes no device", kind.word())),
            _ => {}
        }
        let device = r.device.as_ref().map(|d| d.get_ref().clone());
        if let Some(d) = &r.device {
            let dname = d.get_ref();
            match devices.iter_mut().find(|x| &x.name == dname) {
                None => self.err(span(d), key("device"), format!("no device named {dname:?}")),
                Some(dev) if matches!(kind, FaultKind::IoErrors | FaultKind::StopTarget) => {
                    if !opts.emulate || dev.emulation.backing != Backing::Nbd {
                        self.err(
                            span(f),
                            key("kind"),
                            format!(
                                "{} is injected through nbdkit: it needs --emulate and a device with the nbd backing",
                                kind.word()
                            ),
                        );
                    }
                    if kind == FaultKind::IoErrors {
                        dev.emulation.error_injection = true;
                    }
                }
                Some(_) => {}
            }
        }
        Some(FaultSpec { run: *r.run.get_ref(), after, kind, device })
    }
}
