//! The simulation world: builds components from a [`Scenario`](crate::scenario::Scenario), steps the
//! event loop ([`Sim`], or [`run`] to the end), and collects results. All component state lives in plain
//! vectors owned by the world; events name the component they are for, so there are no shared pointers
//! and no HashMap iteration on the event path.
//!
//! * `open` — [`Sim`]: `next_wakeup` / `advance_to` / `inject` / `drain_egress` / `finish`; `run`;
//! * `world` — the world's state, events and packet forwarding between nodes;
//! * `hosts` — each flow's socket onto the network and the calls into its host ([`crate::host`]);
//! * `mech` — the AP mechanisms' hooks in the forwarding path; [`command`] — run-time commands;
//! * `build` — the world from a scenario; `report` — the run's output; [`topology`] — routing;
//! * [`tap`] — what the end hosts send and receive, for captures.

mod build;
pub mod command;
mod build_flows;
mod hosts;
mod mech;
mod open;
mod report;
pub mod tap;
pub mod topology;
mod world;

pub use build::ExtraMechanism;
pub use command::CommandConfig;
pub use tap::PacketTap;
pub use open::{run, CommandError, Egress, InjectError, Injected, InjectedRtp, InjectedTcp, Port, Progress, RunError, RunOutput, Sim};
