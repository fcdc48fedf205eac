//! `[measurement] control = true`: the negative control, a twin of the baseline placement that is
//! measured as one more contender. When emulating, the twin gets identical stand-in devices of its
//! own (each of the baseline's devices cloned as `<name>-control`: same class, size and backing),
//! so that which device a placement gets is tested as well; on real hardware it shares the
//! baseline's own devices (pgtier cannot invent a second disk), in its own directories.

use tiers::spec::DeviceSpec;
use toml::Spanned;

use super::Validator;
use crate::LoadOptions;
use crate::model::{CONTROL_DEVICE_SUFFIX, CONTROL_PLACEMENT, Placement};
use crate::raw::RawFile;
use crate::spans::span;

impl Validator<'_> {
    /// Adds the control placement (and, emulating, its devices) when the file asks for it.
    pub(super) fn control_twin(
        &mut self,
        raw: &RawFile,
        devices: &mut Vec<DeviceSpec>,
        placements: &mut Vec<Placement>,
        opts: &LoadOptions,
    ) {
        let key = control_key(raw, opts);
        let Some((at, key)) = key else { return };
        let baseline_name = raw.experiment.get_ref().baseline.get_ref();
        let Some(baseline) = placements.iter().find(|p| &p.name == baseline_name).cloned() else {
            return; // already an error: no placement is the baseline
        };
        if placements.iter().any(|p| p.name == CONTROL_PLACEMENT) {
            self.err(
                at,
                key,
                format!(
                    "a placement is already called {CONTROL_PLACEMENT:?}, the name of the negative control's twin of the baseline; rename that placement or remove `control = true`"
                ),
            );
            return;
        }
        let mut twin = Placement {
            name: CONTROL_PLACEMENT.into(),
            description: format!(
                "negative control: a twin of {baseline_name}, {}",
                if opts.emulate { "on identical emulated devices of its own" } else { "on the baseline's own devices" }
            ),
            ..baseline.clone()
        };
        if opts.emulate {
            let twin_of = |name: &str| format!("{name}{CONTROL_DEVICE_SUFFIX}");
            let mut names = baseline.devices();
            names.sort();
            names.dedup();
            for name in names {
                let clone = twin_of(name);
                if devices.iter().any(|d| d.name == clone) {
                    self.err(
                        at.clone(),
                        key,
                        format!(
                            "a device is already called {clone:?}, the name of the control's twin of device {name:?}; rename that device or remove `control = true`"
                        ),
                    );
                    return;
                }
                if let Some(d) = devices.iter().find(|d| d.name == name).cloned() {
                    devices.push(DeviceSpec {
                        name: clone,
                        description: Some(format!("negative control: twin of {name}")),
                        ..d
                    });
                }
            }
            twin.data = twin_of(&baseline.data);
            twin.wal = twin_of(&baseline.wal);
            for dev in twin.tablespaces.values_mut() {
                *dev = twin_of(dev);
            }
        }
        placements.push(twin);
    }
}

/// Where `control = true` was said (`[emulate.measurement]` first when emulating), if it was.
fn control_key(raw: &RawFile, opts: &LoadOptions) -> Option<(Option<std::ops::Range<usize>>, &'static str)> {
    let emulated = raw
        .emulate
        .as_ref()
        .filter(|_| opts.emulate)
        .and_then(|e| e.get_ref().measurement.as_ref())
        .and_then(|m| m.get_ref().control.as_ref())
        .map(|c| (c, "emulate.measurement.control"));
    let own = raw.measurement.as_ref().and_then(|m| m.get_ref().control.as_ref()).map(|c| (c, "measurement.control"));
    let (value, key): (&Spanned<bool>, &str) = emulated.or(own)?;
    (*value.get_ref()).then(|| (span(value), key))
}
