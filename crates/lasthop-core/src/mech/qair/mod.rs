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
//! Where the gate holds the driver back is `release_point` (spec §2, [R2]). By default, `formation`:
//! a refused driver forms nothing, so the next aggregate is built from the backlog at release time, in
//! the driver's AC order. With `psdu` (the spec's default; ours stays `formation`, with which every
//! published number was measured) the driver forms PSDUs as ath9k would; they wait in the gate,
//! counting toward the hardware-queue depth, and leave explicitly tagged ones first (a packet marked
//! DSCP CS5 or above, `explicit_tags`; or a packet of a flow named in `tagged_flows`, the spec's
//! flow-table flag), then highest AC first. With the Linux path's driver latency `t_irq_us` the
//! monitor sees each completion t_irq late, as the real driver does (Eq. 6 is then off by ≤ t_irq).
//! `enabled = false` keeps the monitor and controller running but never holds (a legacy node).
//!
//! On the `fifo` (ns-3) path the gate sits at channel access, where its PSDUs form: an AC contends only
//! while the gate has released its next PSDU, and the release lasts until an exchange under it
//! succeeds or its MPDUs are dropped ([`crate::mac::txpath::fifo`]); there only `release_point = "formation"` and
//! PSDU tokens apply (a scenario error names the field otherwise).
//!
//! Reconstructions and choices of the spec (register §0.2, [LH] tags) are parameters of
//! [`QairParams`]; their defaults are the spec's except `release_point`. T_target is 12 ms by default
//! (the spec's derivation for its testbed PHY), or N* · T_cycle of the node's own PHY with `n_star`
//! (§4.3; T_cycle from [`crate::mac::config::BssParams::exchange_cycle`] at the node's fastest rate,
//! our reading for adaptive rate control, where the spec is silent). The gate also counts the time its
//! node had a PSDU in hardware (`hw_busy_ms`, for QP3's equilibrium level).
//!
//! Algorithm 1 as printed does not converge in our model: the saturated nodes split the channel
//! unfairly (QP1/QP2). Departures, each a parameter off (or at the spec's value) by default, make the
//! nodes converge to one fair R_tc (QP1's convergence and QP2; not QP1's T̂ band). The *stable set*:
//! `t_k_from = "hw_enqueue"`, `increase = "per_interval"`, `delta = 0.03`, `alpha = 0.5`,
//! `decrease_hold = 5`, `decrease_floor = 0.8`, `first_descent = "from_delivered"`; why each is needed
//! is in FIDELITY.md's QAir section, with which of the spec's §10 properties hold with and without them.
//!
//! The Delay Monitor samples only delivered PSDUs (spec §3.1), so losses reach the controller only as
//! longer t_k: with hidden terminals (`hidden_nodes`, `mac/medium/hidden.rs`) a node whose frames
//! mostly collide is regulated below its share (QP10, the paper's "false trigger"), and one whose
//! frames all collide is not seen at all. RTS/CTS (`rts_threshold_bytes`) is the remedy the paper
//! names; here it is a fixed threshold, not switched on by the loss rate as the paper suggests.

pub mod control;
pub mod gate;
pub mod monitor;
mod params;
pub mod regulator;

pub use params::{FirstDescent, Increase, QairParams, TkFrom, TokenUnit};

#[cfg(test)]
mod tests;
