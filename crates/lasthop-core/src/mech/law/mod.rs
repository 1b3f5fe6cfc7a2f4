//! Law — a latency-bounded Wi-Fi link layer.
//!
//! Y. Shen and Z. Meng, "Law: Towards Consistent Low Latency in 802.11 Home Networks", NSDI 2026
//! (seed 000). Implemented: §3.3 (queueing structure reshaping: one driver queue, at most two PSDUs in
//! hardware across the four ACs, Limit_q in the driver, Limit_h per PSDU in hardware, one software
//! retransmission pushed straight back to hardware) in [`driver`], installed as stages of the Linux path, and §3.4 (rate
//! and retransmission control: Table 2, Eq. 1, Eq. 2, the Stable / Probing / Cleanup states,
//! Algorithm 1, two-packet probing, the three-consecutive-losses rule) here, in [`LawControl`].
//! Spec: `wifi-model.md` §8.1.
//!
//! ```text
//!             enqueue: N_driver > Len_max ─────────────────────────────┐
//!  ┌────────┐ N_suc ≥ Thr_p = (N_prob+1)·5·idx ┌─────────┐             ▼
//!  │ Stable │─────────────────────────────────▶│ Probing │ ─ latency > Limit_q, or ──▶ ┌─────────┐
//!  │        │◀──── 2 probes settled ───────────│ 2 pkts  │   N_driver > Len_max        │ Cleanup │
//!  └────────┘  ok: Rate = probed; else N_prob++└─────────┘                             │ 2 HW tx │
//!      ▲                                                                               │ 0 SW rtx│
//!      └──────────── push / return from HW with N_driver < Len_max: Rate = Rate_prev ──└─────────┘
//!  Len_max = Limit_q · S_n / T_n                           Cleanup: 2 drops → Rate−1; N_suc = 5·idx → Rate+1
//! ```
//!
//! Where the paper is silent, and what we chose:
//! * **Per receiver.** Table 2 calls its statistics global; the testbed has one client. We keep one
//!   controller per receiver (rates are per receiver) and count "packets in driver" per receiver.
//! * **A "packet" of §3.4 is what the hardware returns: a PSDU** (Algorithm 1: "packet comes from
//!   hardware"), an A-MPDU under load. T and S are EWMAs, one sample per software transmission, of the
//!   PSDU's TX time divided by its MPDUs and of the acknowledged fraction, so Len_max counts packets
//!   (MPDUs) and per-MPDU TX times compare across aggregation levels. EWMA weight 0.75 on the old
//!   value (Minstrel's level; the paper gives none). A failed software transmission contributes its
//!   whole TX time (up to Limit_h), so T_i prices unreliability. N_suc counts software transmissions
//!   whose MPDUs were all acknowledged; one with a missing MPDU resets it.
//! * **Stable-state adaptation.** The paper says Stable "executes normal data rate adaptation", that the
//!   RAA "re-selects the rate for each software retransmission", and lists *Rate_min* (the rate with
//!   the minimum average TX time) and N_ret in Table 2 without saying what they drive. We use them so:
//!   a software retransmission goes out at *Rate_min* among the rates below the one that failed (one
//!   index down if none has been measured); `stable_down_retx` = 2 consecutive software
//!   retransmissions (N_ret, reset by a first-time success) move *Rate* itself down to *Rate_min* below
//!   it. An isolated failure thus costs one retransmission but no rate; upward moves come only from
//!   probing. (Following *Rate_min* after every report instead made one 3-ms failure, a large T_i
//!   sample, drop the rate at once: the rate then oscillated and TCP lost a quarter of its throughput.)
//! * **Index in Eq. 2** counts from 1 (MCS0 → 1), so Thr_p is never 0 and the slowest rate still
//!   needs 5 successes before a probe.
//! * **Probing.** The two probe packets are the next two first-time transmissions; every other packet
//!   keeps the current rate (the paper sets *Rate* to the probed rate and keeps the old one in
//!   *Rate_prev*; we keep the probed one aside). A failed probe packet is retransmitted like any
//!   packet (at *Rate_min* below the probed rate). A probe is settled when both packets are delivered or
//!   lost; "average TX time" is over each packet's software transmissions; with no T_i for the current
//!   rate condition 2 holds. A failed probe leaves N_suc as it is (so the doubled Thr_p needs only the
//!   difference); a failure of the current rate while probing abandons the probe uncounted. Probe
//!   PSDUs are formed like any other (A-MPDUs when packets are queued), so their per-MPDU TX time is
//!   comparable with T_i of the current rate.
//! * **Algorithm 1** is followed literally: *Rate_prev* = *Rate* on every trigger, also while already in
//!   Cleanup, so rate steps made inside Cleanup survive a later trigger; entering Cleanup abandons a probe.
//! * **"Two consecutive packets dropped"** (Cleanup) counts packets lost to failed transmissions only;
//!   Limit_q drops of stale packets say nothing about the rate. The three-losses rule counts every loss
//!   of the receiver (that is what the application sees), and grants the extra retransmission to a
//!   packet whose software transmission fails while the run is ≥ 3.
//! * **"N_suc equals Thr_p"** is tested as ≥ (an A-MPDU adds several successes at once). Any rate change
//!   (probe success, Cleanup step, Cleanup exit, *Rate_min* move) resets N_suc, N_ret and N_prob;
//!   entering Cleanup does not, so a link that was doing well steps its rate up early in Cleanup
//!   ("the rate can even be adjusted upwards to further clear the waiting packets", §4.3).
//! * **Hardware tries outside Cleanup**: 16 (OpenWiFi's limit), so Limit_h is the real bound.
//! * **Rates**: the link's single-stream rates ordered by data rate (OpenWiFi is SISO); the first is
//!   the slowest unless `initial_rate_index` says otherwise.

mod control;
mod params;
pub mod driver;

/// Installs Law on an AP as stages of its Linux path ([`driver`]): the driver, the TXQ scheduler
/// (stations round robin), the hardware queues (`hw_psdus` over all ACs, Limit_h) and TXQs without
/// CoDel. Law claims the downlink rate control apart.
pub fn install(p: &LawParams, node: &mut crate::mech::NodeBuilder) -> Result<(), crate::mech::InstallError> {
    let by = "law";
    let params = p.clone();
    node.set_driver(
        by,
        Box::new(move |setup: &crate::mac::txpath::driver::DriverSetup<'_>| {
            let d = driver::LawDriver::new(driver::LawDriverParams::on(setup.bss, &params), setup.rates.clone())?;
            Ok(Box::new(d) as Box<dyn crate::mac::txpath::driver::Driver>)
        }),
    )?;
    node.set_txq_scheduler(by, Box::new(|_| Box::new(crate::mac::txpath::airtime::AirtimeScheduler::new(0, false))))?;
    node.set_hw_queue(by, crate::mac::txpath::linux::HwQueueSetup { shared_psdus: Some(p.hw_psdus as usize), time_limit: Some(p.limit_h()) })?;
    node.set_txq_aqm(by, driver::CODEL_OFF)
}


#[cfg(test)]
mod tests;

pub use control::{LawControl, LawStats, Loss, ProbeTag, State, SwTxReport, TxPlan};
pub use params::{LawParams, LIMIT_MS};
