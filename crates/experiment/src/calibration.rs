//! The A/A form of an experiment that `pgtier calibrate` measures: the baseline and twins of it
//! (`twin-1`, `twin-2`, ...), on identical emulated devices of their own when emulating, on the
//! baseline's own devices on real hardware (as the negative control), with the file's workloads,
//! memory limits, profiles and measurement; no claims, faults or control. Every change it
//! measures is 0 in truth: what it shows is the machine's own noise.

use crate::model::{CONTROL_PLACEMENT, Experiment};

/// The prefix of a calibration's twins' names.
pub const TWIN_PREFIX: &str = "twin-";

impl Experiment {
    /// This experiment's A/A form with `twins` twins of the baseline (at least 2: one twin's
    /// change has no spread to estimate an offset from).
    pub fn calibration_form(&self, twins: u32) -> Experiment {
        let mut e = self.clone();
        e.name = format!("{}-calibration", self.name);
        e.description = format!(
            "The dimensioning run of {}: the baseline ({}) and {twins} twins of it, so every change is 0 in truth.",
            self.name, self.baseline
        );
        e.claims.clear();
        if !e.faults.is_empty() {
            e.warnings.push(format!(
                "calibration: the file's {} fault(s) are left out (the calibration measures the machine's noise, not a fault)",
                e.faults.len()
            ));
            e.faults.clear();
        }
        e.measurement.control = false;
        let Some(base) = self.placements.iter().find(|p| p.name == self.baseline).cloned() else { return e };
        e.placements = vec![base.clone()];
        let mut names = base.devices();
        names.sort();
        names.dedup();
        for i in 1..=twins.max(2) {
            let suffix = format!("-{TWIN_PREFIX}{i}");
            let mut twin = base.clone();
            twin.name = format!("{TWIN_PREFIX}{i}");
            twin.description = format!(
                "calibration: a twin of {}, {}",
                self.baseline,
                if self.emulated {
                    "on identical emulated devices of its own"
                } else {
                    "on the baseline's own devices"
                }
            );
            if self.emulated {
                for name in &names {
                    if let Some(d) = self.devices.iter().find(|d| &d.name == name) {
                        let mut clone = d.clone();
                        clone.name = format!("{name}{suffix}");
                        clone.description = Some(format!("calibration: twin of {name}"));
                        e.devices.push(clone);
                    }
                }
                twin.data = format!("{}{suffix}", base.data);
                twin.wal = format!("{}{suffix}", base.wal);
                for dev in twin.tablespaces.values_mut() {
                    *dev = format!("{dev}{suffix}");
                }
            }
            e.placements.push(twin);
        }
        // Devices no placement uses any more (the other placements', the control's) are dropped.
        let used: Vec<String> = e.placements.iter().flat_map(|p| p.devices().into_iter().map(str::to_string)).collect();
        e.devices.retain(|d| used.contains(&d.name));
        debug_assert!(e.placements.iter().all(|p| p.name != CONTROL_PLACEMENT));
        e
    }
}
