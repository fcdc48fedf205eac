//! `[experiment]`: name, run order, repetitions, the device probe and the watchdog's grace.

use std::time::Duration;

use runner::matrix::Order;

use super::Validator;
use super::emulate::Overrides;
use crate::LoadOptions;
use crate::raw::RawExperiment;

/// What `[experiment]` resolves to (name, description, study and baseline are taken as written).
pub(super) struct ExperimentSection {
    pub order: Order,
    pub repetitions: u32,
    pub device_probe: Duration,
    pub watchdog_grace: Option<Duration>,
}

impl Validator<'_> {
    pub(super) fn experiment_section(
        &mut self,
        ex: &RawExperiment,
        ov: &Overrides,
        opts: &LoadOptions,
    ) -> ExperimentSection {
        self.name(&ex.name, "experiment.name");
        if opts.emulate && !ov.present {
            self.warnings.push(
                "the experiment file has no [emulate] section: --emulate uses the real-hardware scale and durations"
                    .into(),
            );
        }
        let order = self.keyword_or(ex.order.as_ref(), "experiment.order", Order::Interleaved, Order::Interleaved);
        // The file's own probe is checked even when [emulate] overrides it.
        let own_probe = ex.device_probe.as_ref().and_then(|d| self.duration(d, "experiment.device_probe"));
        let default_probe = if opts.emulate { Duration::from_secs(3) } else { Duration::from_secs(20) };
        let device_probe = match ov.device_probe.get() {
            Some(c) => self.chosen_duration(&c),
            None => own_probe,
        }
        .unwrap_or(default_probe);
        let repetitions = match ov.repetitions.or(ex.repetitions.as_ref(), "experiment.repetitions") {
            None => 3,
            Some(c) => {
                if *c.get() == 0 {
                    self.err(c.span(), &c.key, "at least 1 repetition");
                }
                *c.get()
            }
        };
        let watchdog_grace = ex.watchdog_grace.as_ref().and_then(|d| self.duration(d, "experiment.watchdog_grace"));
        ExperimentSection { order, repetitions, device_probe, watchdog_grace }
    }
}
