//! The discrete-event engine: a totally ordered event queue with cancellable timers.
//!
//! Events are ordered by `(time, sequence)`: two events scheduled for the same nanosecond run in the
//! order they were scheduled, so runs are reproducible bit for bit. A scheduled event is identified by a
//! [`TimerId`] (slot + generation); cancelling removes it from the heap in O(log n), so the frequent
//! cancel/reschedule of backoff and ACK-timeout timers never leaves ghost entries behind.
//!
//! The engine is generic over the event payload; the simulation world (`crate::sim`) owns all component
//! state and dispatches on its own event enum. Nothing here reads a clock.

mod queue;

pub use queue::{EventQueue, TimerId};
