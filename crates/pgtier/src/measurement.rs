//! The command line's overrides of the experiment's `[measurement]`, and the run order's seed:
//! given to `compare` on this machine and, as arguments, to every host of a fleet.

/// Command-line overrides of the experiment's `[measurement]`, and the run order's seed.
#[derive(Clone, Debug, Default)]
pub struct MeasurementArgs {
    pub seed: Option<u64>,
    pub design: Option<String>,
    pub budget: Option<String>,
    pub target_halfwidth: Option<String>,
}

impl MeasurementArgs {
    /// The overrides as the command-line arguments that give them to a host's pgtier.
    pub fn to_args(&self) -> Vec<String> {
        let mut v = Vec::new();
        for (flag, value) in
            [("--design", &self.design), ("--budget", &self.budget), ("--target-halfwidth", &self.target_halfwidth)]
        {
            if let Some(x) = value {
                v.extend([flag.to_string(), x.clone()]);
            }
        }
        v
    }
}
