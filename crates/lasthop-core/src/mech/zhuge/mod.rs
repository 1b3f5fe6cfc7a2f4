//! Zhuge at the AP, and the baselines it was compared with, as pure state machines.
//!
//! Z. Meng, Y. Guo, C. Sun, B. Wang, J. Sherry, H. H. Liu, M. Xu, "Achieving Consistent Low Latency
//! for Wireless Real-Time Communications with the Shortest Control Loop", ACM SIGCOMM 2022, pp.
//! 193–206, doi:10.1145/3544216.3544225. Spec: `shared/specs/zhuge.md` (written from the slides, seed
//! 003, and the public ns-3 code `transys-project/zhuge` @1a73f1c, which is AGPL: nothing here is
//! derived from its source text), and `baselines.md` §2 (queues) and §4 (congestion control).
//!
//! Zhuge shortens the control loop of a real-time flow whose bottleneck is the wireless last hop: the
//! AP forecasts, when a downlink packet arrives, the delay it will see (the **Fortune Teller**), and
//! passes that forecast to the sender at once through the flow's own feedback (the **Feedback
//! Updater**) instead of letting the sender learn it one queue later.
//!
//! ```text
//!  sender ──data──▶ AP egress:  Q_d (qdisc) ─▶ Q_v (driver) ─▶ last hop ──▶ client
//!    ▲                  │  every egress event ─▶ FortuneTeller (per flow) ─▶ Prediction
//!    │                  ▼                                             │
//!    │   TCP: AckDelayer holds each uplink ACK by the change of the   │  predict() at arrival
//!    │        prediction (order kept, ≤ 10 ms)  ◀─────────────────────┤
//!    │   RTP: TwccRewriter sends TWCC built from the predictions and  │
//!    └────── drops the client's own TWCC for the flow ◀───────────────┘
//! ```
//!
//! # Files
//!
//! | file | concept | spec |
//! |---|---|---|
//! | [`dequeue_window`] | 1-ms slots: dequeue rate, dequeue interval, whole-window rate | zhuge.md §2.3; §5.3 (ABC's window) |
//! | [`egress`] | the mirror of `Q_d`/`Q_v` the estimators keep; [`EgressObserver`] | §1, §2.2 |
//! | [`fortune_teller`] | per-packet forecast `qLong + qShort + tx`, 802.11 A-MPDU allowance, head timer | §2.1–2.7, TV1–TV7 |
//! | [`ack_delayer`] | delta store with delay tokens, recording rule, warm-up, ACK release scheduler | §3.1–3.5, §3.7, TV8–TV9 |
//! | [`hold`] | FIFO of items held until their release times (ACKs, fake ACKs) | §3.4 (order), §5.2 (delay) |
//! | [`twcc_rewriter`] | TWCC from the forecasts, emit policies, client-TWCC filter | §4.1–4.2 |
//! | [`fastack`] | AP-generated TCP ACKs, local retransmission, no duplicated ACKs | §5.2; baselines.md §4.5 |
//! | [`abc`] | ABC router marking (accelerate/brake) | §5.3, TV10; baselines.md §4.5 |
//! | `transport::cc::abc` | ABC sender (`cc = { type = "abc" }`) | §5.3 |
//!
//! Copa (§5.4) is [`crate::transport::cc::copa`] (`queue_delay = "latest"`, `delta = 0.02` for the
//! FastAck runs). The queue configurations of §5.1 (FIFO 250 p, FQ-CoDel, driver queue 100 p or 1 p)
//! are the scenario's qdisc and driver queue, not part of this module.
//!
//! # Wiring at an AP
//!
//! [`hooks`] wires them in as [`crate::mech::ApHook`]s. Every component takes `now` and returns actions; the
//! time-driven ones expose `next_wakeup()` and a `poll`. One set of components serves one managed flow;
//! every flow's Fortune Teller (and the ABC marker) observes the whole egress the flow's packets cross.
//!
//! **Downlink**, for each packet arriving at the AP egress toward the client, in this order:
//! 1. the flow's hook, *before* the packet is queued (so that the forecast sees the bytes ahead of it):
//!    * TCP data segment of a Zhuge flow: `ack_delayer.on_downlink_data(now, &mut ft)`;
//!    * RTP packet of a Zhuge flow: `twcc_rewriter.on_downlink_rtp(now, RtpArrival { seq, bytes, repair }, &mut ft)`;
//!    * TCP segment of an ABC flow: `hdr.ecn = abc_marker.mark(now)`;
//!    * TCP data segment of a FastAck flow: `fastack.on_downlink_data(now, seq, len, pkt.sent)`;
//! 2. if the qdisc admits it, `on_enqueue(now, EgressPacket { id, bytes, monitored }, Stage::Qdisc)` on
//!    every observer (`monitored` = it belongs to that Fortune Teller's flow); if it is refused,
//!    `twcc_rewriter.on_ap_drop(now, seq)` for a Zhuge RTP packet;
//! 3. `on_to_driver(now, id)` when it moves to the driver queue, `on_dequeue(now, id)` when it leaves
//!    for the link (point-to-point: transmission starts; 802.11: the MPDU is acknowledged or given up),
//!    `on_drop(now, id)` if dropped on the way (plus `on_ap_drop` for a Zhuge RTP packet);
//! 4. FastAck: `fastack.on_delivered(now, seq)` when the last hop delivered the segment.
//!
//! **Uplink**, for each packet of a managed flow toward the sender:
//! * TCP segment of a Zhuge flow: consume it, `let at = ack_delayer.on_uplink_ack(now)`, and forward it
//!   at `at` (a [`Hold`] keeps the order; `at == now` means at once);
//! * pure ACK of a FastAck flow: `fastack.on_receiver_ack(now, ack)` → forward, discard, or discard and
//!   re-send the cached segment to the client;
//! * RTCP of a Zhuge RTP flow: `twcc_rewriter.filter_uplink_rtcp(is_transport_cc)` → forward or drop.
//!
//! **Timers**: wake at the earliest of `twcc_rewriter.next_wakeup()` (then send
//! `poll_feedback(now, &mut ft)` to the sender), `fastack.next_wakeup()` (then send `poll(now)`'s fake
//! ACKs), and each [`Hold::next_wakeup`]. The Fortune Teller and the ABC marker need no timer: their
//! 1-ms ticks are replayed exactly by each call (`next_wakeup()` is always `None`).
//!
//! **ABC** also needs the client to echo each data segment's `Hdr::Tcp::ecn` in its ACK, and the
//! sender's transport to call `TcpSender::on_ecn_echo(now, ecn)` after `on_ack` for every ACK.
//!
//! # Profiles
//!
//! Where the slides and the released code disagree, [`Profile::Design`] (the default) follows the
//! slides and the spec's \[LH\] decisions, and [`Profile::Parity`] the code. The presets are
//! `FortuneTellerParams::preset`, `AckDelayerParams::preset` and `TwccRewriterParams::preset`:
//!
//! | | design | parity |
//! |---|---|---|
//! | rate divisor (§2.3) | non-idle ticks in the window | `window_slots − idle` (underestimates while filling, TV3) |
//! | granularity | ns | each term truncated to whole ms; shrunk samples to whole ms |
//! | qShort on 802.11 | exact residence of the head | 1-ms head timer with the arrival-overwrite quirk |
//! | 802.11 "queue not draining" test | against the previous forecast's queue | TCP path only; the RTP path compares with 0 |
//! | in-band forecasts | every RTP packet at arrival, reported per burst | one sample per ms, evaluated 1 ms later with the bytes behind it |
//!
//! Both profiles: qShort = 0 and no allowance on point-to-point links; a 5-ms A-MPDU allowance on
//! 802.11; the 200-tick window; the 512-kbit/s floor; the 40/80/10/10 ms store and caps; the 3-s warm-up.
//!
//! # Choices where the spec or the code is ambiguous
//!
//! 0. **Real flows** (`external`, the emulator): Zhuge manages them as TCP. Their segments' sequence,
//!    length and acknowledgement are read in the clear, so real ACKs are held like modelled ones (never
//!    rewritten); packets that are not TCP pass untouched. FastAck and ABC do not serve external flows
//!    (FastAck would have to forge real ACKs, ABC to rewrite ECN bits).
//! 1. **ACKs are never duplicated** (§3.7, §5.2, §10.6). The ns-3 hooks are promiscuous and the original
//!    ACK also reaches the sender; here the AP consumes it and forwards exactly one copy (Zhuge) or
//!    decides per ACK (FastAck). The `duplicate_original_ack` parity switch is not provided.
//! 2. **Tokens come only from decreases of the prediction** (§3.6, §10.8). The slide's example (a token
//!    created by the ordering constraint) is internally inconsistent; the code's rule keeps order
//!    through the minimum offered to the sampler, and gives 5, 8, 12 ms for the slide's inputs (TV9a).
//! 3. **The client's TWCC for a managed flow is always dropped** (§4.1, §10.7: the code's flag is
//!    uninitialised; the slides say drop).
//! 4. **qShort and maxBurstSize** (§2.6, §10.8). The slides' `max(queued − maxBurstSize, 0)` is realised
//!    only as the code's 802.11 allowance; on point-to-point links neither profile has an allowance or
//!    a head term, as in the code (the spec's \[LH\] changes only how the head wait is measured).
//! 5. **Ticks are event-driven**: a tick at `T` sees every call before `T` and none at `T`; an input
//!    exactly on a tick counts in the next one. ns-3 orders such ties by scheduling order, which the
//!    spec does not fix.
//! 6. **Uninitialised members get 0** (§10.13): the previous queue and total of the TCP path, the head
//!    timer. ABC's `mu`/`cr` start at the 512-kbit/s floor rather than the code's 62.5 (which reads as
//!    bytes/ms stored in a bit/s variable and would brake everything in the first millisecond).
//! 7. **Sizes are wire sizes everywhere** (§2.7): the in-band `extra` counts the bytes admitted to the
//!    egress after the sample (any flow), so packets refused at admission are not "behind" it.
//! 8. **What leaves `Q_v`** is the integrator's departure event; drops from `Q_v` count as departures
//!    (the ns-3 queue counters do), drops from the qdisc do not (`egress` docs).
//! 9. **The delta store's previous window** holds entries aged 40–80 ms counted from when they were
//!    added (so it compares "the last 40 ms" with "the 40 ms before", §3.5); a spent token keeps the
//!    time it was added.
//! 10. **Warm-up** ends `warmup_ms` after the AP's start, strictly (`t > 3 s`); until then ACKs pass
//!     with no extra delay because the store is empty (§2.7).
//! 11. **TWCC** (§4.2): forecasts are not forced to be monotone (GCC sorts by arrival and drops
//!     negative inter-group deltas itself); a record-everything message reports the AP's drops and
//!     upstream gaps as not received; the parity message holds the sample alone, so unsampled packets
//!     are never reported lost; arrival times are quantised by [`crate::rtc::twcc::build_feedback`]
//!     (within 125 µs, non-accumulating).
//! 12. **FastAck acknowledges the in-order delivered frontier**, one ACK per segment it passes; the
//!     code acknowledges any recorded segment, which would hide a loss upstream of the AP from the
//!     sender. Duplicate client ACKs for such a hole are forwarded so the sender's recovery works; those
//!     for a last-hop loss trigger the local retransmission and are swallowed. The advertised window
//!     is not modelled.
//! 13. **ABC** marks at enqueue with an independent draw per packet (the code), CE counts as a brake,
//!     a timeout resets the window to one MSS (ns-3's socket), and the mark travels in the new
//!     `Hdr::Tcp::ecn` field (ECT(1) accelerate, ECT(0) brake).
//! 14. **Randomness**: the delta sampler and the ABC marker draw from their own streams, derived from
//!     `ap/<flow>/zhuge/delta_sampler` and `ap/<flow>/abc/mark` (STYLE rule 6).
//!
//! Not modelled: the 802.11 management-frame skip of the head timer (no management frames reach the
//! egress); FastAck's receive window; ABC's dual (Cubic) window for non-ABC bottlenecks; NADA (§6.7).

pub mod abc;
pub mod ack_delayer;
pub mod dequeue_window;
pub mod egress;
pub mod fastack;
pub mod fortune_teller;
pub mod hold;
pub(crate) mod hooks;
pub mod twcc_rewriter;

#[cfg(test)]
mod abc_tests;
#[cfg(test)]
mod ack_delayer_tests;
#[cfg(test)]
mod fastack_tests;
#[cfg(test)]
mod fortune_teller_tests;
#[cfg(test)]
mod testkit;
#[cfg(test)]
mod twcc_rewriter_tests;

pub use abc::{AbcMarker, AbcMarkerStats, AbcRouterParams};
pub use ack_delayer::{AckDelayer, AckDelayerParams, AckDelayerStats, DeltaStore, ReleaseScheduler};
pub use dequeue_window::{DequeueWindow, RateDivisor, TICK};
pub use egress::{EgressObserver, EgressPacket, Stage};
pub use fastack::{AckVerdict, FakeAck, FastAck, FastAckParams, FastAckStats};
pub use fortune_teller::{
    Estimate, FortuneTeller, FortuneTellerOverrides, FortuneTellerParams, FortuneTellerStats, HeadWait, Prediction,
    Resolution,
};
pub use hold::Hold;
pub use twcc_rewriter::{RtpArrival, TwccEmit, TwccRewriter, TwccRewriterParams, TwccRewriterStats};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Which behaviour a component follows where the slides and the released code disagree.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Profile {
    /// The intended algorithm: the slides and the spec's lasthop decisions.
    #[default]
    Design,
    /// The released ns-3 code, minus its bugs (ACKs are never duplicated).
    Parity,
}

/// The last hop behind the AP egress.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum LinkKind {
    /// A trace-driven point-to-point link (the code's `p2p` mode).
    #[default]
    P2p,
    /// 802.11, where frames leave in A-MPDUs after channel access.
    Wifi,
}

/// How the flow's congestion feedback travels, and so which Feedback Updater serves it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FeedbackPath {
    /// Out-of-band: TCP-like ACKs, delayed by [`AckDelayer`].
    #[default]
    Tcp,
    /// In-band: RTP with transport-wide feedback, rewritten by [`TwccRewriter`].
    Rtp,
}

/// What the AP does with an uplink feedback packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UplinkVerdict {
    Forward,
    Drop,
}

pub use crate::params::ParamError;
pub(crate) use crate::params::check;
