//! The four published mechanisms, each as pure state machines plus the hooks that place them on the
//! shared model (`wifi-model.md` §8). [`hook`] is the install surface: a [`Mechanism`] claims role
//! slots on a [`NodeBuilder`] and adds [`ApHook`]s; [`MechanismConfig`] is the scenario's tagged list of
//! them (`aps[].mechanisms`).
//!
//! * `law` — latency-bounded link layer at the AP (unified driver queue, Limit_q / Limit_h, joint
//!   per-transmission rate and retry control);
//! * `zhuge` — Fortune Teller delay prediction and the Feedback Updater (ACK delaying, TWCC
//!   rewriting) at the AP, with the FastAck and ABC baselines;
//! * `qair` — per-node regulator between driver and hardware queue (AIMD on the per-frame channel
//!   delay), on APs and stations;
//! * `lastpq` — priority flow queues over FQ-CoDel and airtime fairness with a delay controller and a
//!   latency-aware scheduler, as the Linux driver's policy at an AP.

pub mod config;
pub mod hook;
pub mod lastpq;
pub mod law;
pub mod qair;
pub mod zhuge;

pub use config::MechanismConfig;
pub use hook::{ApHook, InstallError, Mechanism, NodeBuilder, Role};
