//! QAir (seed 001, Pei et al., IWQoS'17; spec `qair-lastpq.md` Part 1): every node throttles how fast
//! it hands frames to its hardware queue, with the per-frame channel delay as the congestion signal, so
//! that dense co-channel Wi-Fi keeps a short "queue in the air".
//!
//! Three pure state machines, driven by the node's transmit events and wired together by the
//! release gate ([`gate::QairGate`]) that sits between the node's driver and its hardware queue:
//!
//! ```text
//! driver ──PSDU──▶ [QairGate: TokenBucket at R] ──▶ hardware queue (per AC) ──▶ EDCA ──▶ done (t_e)
//!                          ▲                                                           │
//!                          └────── Control (Algorithm 1) ◀── DelayMonitor (Eq. 6) ◀────┘
//! ```
//!
//! * [`monitor::DelayMonitor`] — the per-frame delay t_k = t_e − t_h of every successful PSDU, with the
//!   head-of-queue time inferred as in Eq. 6: t_h = max(t_e of the predecessor in that AC's hardware
//!   queue, t_w of the frame) (§3.1–3.2).
//! * [`control::Control`] — Algorithm 1 (§4): the mean of t_k over a check interval (Eq. 4), EWMA
//!   across intervals (Eq. 5), additive increase of the rate R below T_target, proportional decrease
//!   above, bounded by R_min and R_max (the dead corner, §4.2).
//! * [`regulator::TokenBucket`] — the rate regulator (§5): tokens in PSDUs at R, depth 2; the gate
//!   refuses the driver until a token is due, at an instant rounded up to the µs.
//!
//! The gate regulates at PSDU formation (spec §2 `release_point = "formation"`): a refused driver forms
//! nothing, so the next aggregate is built from the backlog at release time, in the driver's AC order.
//! Reconstructions and choices of the spec (register §0.2, [LH] tags) are parameters of
//! [`QairParams`] with the spec's defaults.

pub mod control;
pub mod gate;
pub mod monitor;
mod params;
pub mod regulator;

pub use params::QairParams;

#[cfg(test)]
mod tests;
