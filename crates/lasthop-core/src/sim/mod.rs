//! The simulation world: builds components from a [`Scenario`], runs the event loop, and collects
//! results. All component state lives in plain vectors owned by [`World`]; events name the component
//! they are for, so there are no shared pointers and no HashMap iteration on the event path.

mod build;
mod mech;
pub mod topology;
mod world;

pub use world::{run, Progress, RunError, RunOutput};
