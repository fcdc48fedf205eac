//! A result set's summary: every cell, the warnings, how the changes were judged, the negative
//! control and the study's own contrast.

use results::record::CellKey;
use serde::Serialize;

use crate::cell::CellSummary;
use crate::contest::Analysis;
use crate::warnings::SummaryWarning;

/// Every cell, in a stable order, and what a reader must be warned about.
#[derive(Clone, Debug, Serialize)]
pub struct Summary {
    pub cells: Vec<CellSummary>,
    /// Planned cells without a successful run (an interrupted or failing matrix).
    pub missing: Vec<CellKey>,
    pub warnings: Vec<SummaryWarning>,
    /// How the deltas were computed (design, method, margin, the families Holm corrected).
    pub analysis: Analysis,
    /// The negative control's check per contest (empty without `[measurement] control`).
    pub controls: Vec<crate::control::ControlCheck>,
    /// The error model checked on the controls across contests, per figure family (empty
    /// without a control in two contests or more).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub model_checks: Vec<crate::control::ModelCheck>,
    /// The study's own contrast when it measures one placement and varies a build, a profile, a
    /// memory limit or the client count (None when it compares placements).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub contrast: Option<crate::contrast::Contrast>,
    /// Where the contests' priors came from: this host's calibration or the fallback of an
    /// uncalibrated host (None: a result set from before calibration, on the committed priors).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub calibration: Option<results::manifest::CalibrationRecord>,
}

impl Summary {
    /// One line on the calibration behind the intervals, when the result set records one.
    pub fn calibration_line(&self) -> Option<String> {
        let c = self.calibration.as_ref()?;
        Some(if c.host_calibrated {
            format!(
                "Calibrated host: the intervals assume this host's own calibration (measured {}, {}).",
                c.measured_at.as_deref().unwrap_or("at an unknown time"),
                c.file.as_deref().unwrap_or("file not recorded")
            )
        } else {
            format!("**Uncalibrated host**: the intervals assume priors measured on another machine ({}).", c.source)
        })
    }
}

impl Summary {
    /// What the negative control showed in the contest of `key`, if the study has one.
    pub fn control_of(&self, key: &CellKey) -> Option<&crate::control::ControlCheck> {
        crate::control::of(&self.controls, key)
    }
}
