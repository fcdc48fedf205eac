//! Devices and filesystems: what a storage tier is, how to provision it (for real or emulated),
//! and the safety rails around destructive steps. Knows nothing about PostgreSQL.
//!
//! The flow is data first: [`build::build_plan`] turns [`spec::DeviceSpec`]s into a
//! [`plan::Plan`] (printed by `--dry-run`), and [`provision::execute`] carries it out through a
//! [`system::System`], recording every undo in the run's [`journal::Journal`].

pub mod build;
pub mod facts;
pub mod inspect;
pub mod plan;
pub mod provision;
pub mod safety;
pub mod spec;
pub mod system;

pub use build::{PlanContext, build_plan};
pub use plan::Plan;
pub use provision::{Event, ProvisionError, Provisioned, ProvisionedDevice, execute};
pub use spec::{Backing, DaxPolicy, DeviceClass, DeviceSpec};
