//! Devices and filesystems: what a storage tier is, how to provision it (for real or emulated),
//! and the safety rails around destructive steps. Knows nothing about PostgreSQL.
//!
//! The flow is data first: [`build::build_plan`] turns [`spec::DeviceSpec`]s into a
//! [`plan::Plan`] (printed by `--dry-run`), and [`provision::execute`] carries it out through a
//! [`system::System`], recording every undo in the run's [`journal::Journal`].
//!
//! Real devices: every safety check of every device ([`safety`]) comes before the first step
//! that writes to a device ([`plan::Plan::first_destructive_step`]); the only change before it
//! is `nvme connect`, which attaches a remote subsystem so that its namespace can be checked.
//! Teardown unmounts, disconnects and removes what the run made; it never formats or writes to
//! a device, and disconnects an NVMe/TCP controller only once the filesystems on it are
//! unmounted. Secrets (the DH-HMAC-CHAP key) are read when the command runs and reach nvme-cli
//! only through a configuration file readable by root alone that exists while `nvme connect`
//! runs ([`system::System::write_private`]); never a command line, the plan or a record.

pub mod build;
pub mod facts;
pub mod inspect;
pub mod plan;
pub mod probe;
pub mod provision;
pub mod safety;
pub mod spec;
pub mod system;
pub mod users;

pub use build::{PlanContext, build_plan};
pub use plan::Plan;
pub use provision::{Event, ProvisionError, Provisioned, ProvisionedDevice, execute};
pub use spec::{Backing, DaxPolicy, DeviceClass, DeviceSpec};
