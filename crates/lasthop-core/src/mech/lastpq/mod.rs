//! LAST-PQ (seed 002; spec `qair-lastpq.md` Part 2): latency-aware two-level priority queueing on
//! top of mac80211's FQ-CoDel and airtime fairness at an AP, for flows with a latency demand (VR).
//!
//! ```text
//!  packet of a prioritized flow ─▶ its own FQ flow in its TXQ (new/old DRR as any flow)
//!  scheduling opportunity of AC a (hardware queue has room):
//!     throttler: urgent(f) = (now − head enqueue of f) + l_hq(a) > l_pq(f)
//!     a TXQ with an urgent flow? ─▶ the one with the greatest airtime deficit, urgent flows first
//!     else                       ─▶ the TXQ scheduler's choice; non-prioritized TXQs' PSDUs capped
//!                                   in airtime while a prioritized flow of a is active
//!  MPDU acknowledged ─▶ per-flow latency (TXQ enqueue → ACK) ─▶ delay controller every W:
//!                       l_pq by MD/MI out of band, gradient MD/AI inside it
//!  HW_DONE ─▶ T_ctt(a) EWMA ─▶ l_hq(a) = T_ctt + Σ queued (T_ctt + T_mac + T_air) + T_guard
//! ```
//!
//! * [`controller::DelayController`] — §13, the user-space controller (pure; test vectors TV6–TV8).
//! * [`drain::DrainEstimator`] — §14.2–14.3, the hardware-queue draining estimate (TV9–TV10).
//! * [`policy::LastPqPolicy`] — §12, §14.1, §15: the driver policy of the Linux path (TV11).
//! * [`mark`] — §16, the `skb->mark` encoding (TV12).
//!
//! Demands change at run time through `commands = [{ target = "aps.<ap>.lastpq", set = { demand_ms
//! = { vr = 15 } } }]` or `Sim.command(...)`, and `set = { add_flows = [{ flow, demand_ms }] }`
//! prioritizes a flow from then on (§16's `add_flow`). Choices beyond the paper ([LH] in the spec) are
//! parameters of [`LastPqParams`], among them the spec's options `count_drops_as_inf` (a drop is an
//! infinite-latency sample) and `lpq_source = "head_packet"` (the throttler reads the l_pq marked on
//! the head packet at its enqueue), both off by default, and `urgent_retries` (on by default: a
//! flow's MPDUs in its TXQ's software retry queue count as its head for the throttler). The
//! ath9k-internal DRR++ TID scheduler the paper describes is the Linux path's `afs_variant =
//! "ath9k-drr++"`, which the experiments run (the spec's default for LAST-PQ scenarios); mac80211's
//! airtime-fairness scheduler works too. The priority path reads whichever scheduler's deficits. With QAir on the
//! node (§17.6), l_hq adds the gate's expected hold, and at QAir's `psdu` release point a PSDU the
//! priority path formed with a prioritized flow's packet leaves the gate first, as a tagged one. Not
//! modelled: the controller's user/kernel feedback delay (zero). What the experiments reproduce and what not (L2 VoIP, L3 FPS, L6, L7, L8's "worse
//! with more clients", L14 on the walk back, L16/LP5, LP3's second half; LP4 for 20 → 15 ms only in
//! some seeds) is in FIDELITY.md's LAST-PQ section, and each `lastpq-*` experiment's `checks`.

pub mod controller;
pub mod drain;
pub mod mark;
mod params;
pub mod policy;

pub use params::{check_demand, FlowDemand, LastPqParams, LpqSource};

#[cfg(test)]
mod tests;
