//! Law's rate and retransmission controller for one receiver: the statistics of Table 2, Len_max
//! (Eq. 1), Thr_p (Eq. 2) and the Stable / Probing / Cleanup machine of §3.4 and Algorithm 1.
//!
//! A pure state machine: the driver ([`super::path`]) tells it what happens (a packet
//! entered the driver, is about to be pushed into hardware, came back from hardware, was lost or
//! delivered) and asks it for a [`TxPlan`] (rate and hardware tries) before every software
//! transmission. Notation maps to the paper as follows: `rate` is *Rate* outside Probing; while probing,
//! the paper sets *Rate* to the probed rate and *Rate_prev* to the old one, here `rate` stays the old
//! rate and the probed one lives in the probe record (the probe's packets use it, every other packet
//! keeps the rate that is known to work). `rate_prev` is the rate Cleanup restores.

use super::LawParams;
use crate::phy::TxVector;
use crate::time::{SimDuration, SimTime};
use serde::Serialize;

/// The states of §3.4.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum State {
    /// The initial state: normal rate adaptation, one software retransmission.
    Stable,
    /// Two packets try the next higher rate.
    Probing,
    /// The driver queue is too long or a packet missed Limit_q: two hardware tries, no software
    /// retransmission, the rate steps by one index on two consecutive drops or Thr_p successes.
    Cleanup,
}

/// Marks a probe packet: which probe (`gen`) and which of its packets (`slot`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProbeTag {
    pub gen: u32,
    pub slot: u8,
}

/// The decision for one software transmission.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TxPlan {
    /// Index into [`LawControl::rates`].
    pub rate: usize,
    pub txv: TxVector,
    /// Hardware transmissions allowed (Limit_h may end them earlier).
    pub hw_tries: u8,
    /// Set on a probe packet's first transmission.
    pub probe: Option<ProbeTag>,
}

/// The outcome of one software transmission: one PSDU the hardware returned.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SwTxReport {
    /// Rate index used.
    pub rate: usize,
    /// Hardware TX time: from reaching the head of the hardware queue to being returned (backoff,
    /// airtime, ACK timeouts, retries).
    pub tx_time: SimDuration,
    /// MPDUs in the PSDU and how many were acknowledged.
    pub mpdus: u32,
    pub acked: u32,
    /// Which software transmission of its packets this was (1 = the first).
    pub sw_tx: u32,
    /// The probe the packet belongs to, if any.
    pub probe: Option<ProbeTag>,
}

/// Why a packet was lost.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Loss {
    /// Its link-layer latency exceeded Limit_q (in the driver or on return from hardware).
    Deadline,
    /// Its last allowed software transmission failed.
    TxFailed,
}

/// An exponentially weighted moving average, empty until its first sample.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct Ewma(Option<f64>);

impl Ewma {
    fn add(&mut self, x: f64, old_weight: f64) {
        self.0 = Some(match self.0 {
            None => x,
            Some(v) => old_weight * v + (1.0 - old_weight) * x,
        });
    }
}

/// T_i and S_i of one rate, plus plain counters.
#[derive(Clone, Copy, Debug, Default)]
struct RateStats {
    /// EWMA of the TX time per MPDU, ns.
    t: Ewma,
    /// EWMA of the software success ratio (acknowledged MPDUs / MPDUs).
    s: Ewma,
    sw_tx: u64,
    mpdus: u64,
    acked: u64,
}

#[derive(Clone, Copy, Debug, Default)]
struct ProbeSlot {
    issued: bool,
    /// TX time over all software transmissions of the probe PSDU's packets.
    tx_time: SimDuration,
    /// MPDUs in its first software transmission.
    mpdus: u32,
    /// Its first software transmission succeeded.
    first_ok: Option<bool>,
    /// Final fate: delivered (`true`) or lost.
    done: Option<bool>,
}

#[derive(Clone, Debug)]
struct Probe {
    gen: u32,
    rate: usize,
    slots: Vec<ProbeSlot>,
}

/// Counters for results.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct LawStats {
    pub sw_transmissions: u64,
    pub sw_retransmissions: u64,
    /// Software retransmissions granted by the three-consecutive-losses rule.
    pub extra_retransmissions: u64,
    pub probes: u64,
    pub probes_succeeded: u64,
    pub cleanups: u64,
    pub rate_changes: u64,
    pub deadline_drops: u64,
    pub tx_drops: u64,
    /// Time spent in each state, ns (Stable, Probing, Cleanup).
    pub time_in_state_ns: [u64; 3],
}

/// The controller of one receiver.
#[derive(Clone, Debug)]
pub struct LawControl {
    p: LawParams,
    rates: Vec<TxVector>,
    state: State,
    state_since: SimTime,
    rate: usize,
    rate_prev: usize,
    per_rate: Vec<RateStats>,
    t_n: Ewma,
    s_n: Ewma,
    n_suc: u32,
    n_ret: u32,
    n_prob: u32,
    /// Consecutive lost packets (any cause); reset by a delivery.
    loss_run: u32,
    /// Consecutive packets lost to failed transmissions while in Cleanup.
    cleanup_drops: u32,
    probe: Option<Probe>,
    probe_gen: u32,
    stats: LawStats,
}

impl LawControl {
    /// A controller over `rates` (any order; sorted here by data rate, slowest first).
    pub fn new(p: &LawParams, mut rates: Vec<TxVector>) -> Result<LawControl, String> {
        p.validate().map_err(|(f, m)| format!("{f}: {m}"))?;
        if rates.is_empty() {
            return Err("the link supports no rate".into());
        }
        rates.sort_by_key(|t| t.data_rate().bps());
        rates.dedup();
        let start = (p.initial_rate_index as usize).min(rates.len() - 1);
        Ok(LawControl {
            p: p.clone(),
            per_rate: vec![RateStats::default(); rates.len()],
            rates,
            state: State::Stable,
            state_since: SimTime::ZERO,
            rate: start,
            rate_prev: start,
            t_n: Ewma::default(),
            s_n: Ewma::default(),
            n_suc: 0,
            n_ret: 0,
            n_prob: 0,
            loss_run: 0,
            cleanup_drops: 0,
            probe: None,
            probe_gen: 0,
            stats: LawStats::default(),
        })
    }

    pub fn rates(&self) -> &[TxVector] {
        &self.rates
    }
    pub fn state(&self) -> State {
        self.state
    }
    /// *Rate*: the rate index normal packets use.
    pub fn rate(&self) -> usize {
        self.rate
    }
    /// *Rate_prev*: the rate index Cleanup restores on exit.
    pub fn rate_prev(&self) -> usize {
        self.rate_prev
    }
    /// (N_suc, N_ret, N_prob).
    pub fn counters(&self) -> (u32, u32, u32) {
        (self.n_suc, self.n_ret, self.n_prob)
    }
    /// T_n in ns and S_n (`None` before the first report).
    pub fn global(&self) -> (Option<f64>, Option<f64>) {
        (self.t_n.0, self.s_n.0)
    }
    /// T_i in ns and S_i of rate `i`.
    pub fn rate_stats(&self, i: usize) -> (Option<f64>, Option<f64>) {
        (self.per_rate[i].t.0, self.per_rate[i].s.0)
    }
    pub fn stats(&self) -> LawStats {
        self.stats
    }
    pub fn params(&self) -> &LawParams {
        &self.p
    }

    /// Eq. 1: Len_max = Limit_q · S_n / T_n, the packets the link drains within Limit_q at the current
    /// TX time and success ratio (infinite before the first report).
    pub fn len_max(&self) -> f64 {
        match (self.t_n.0, self.s_n.0) {
            (Some(t), Some(s)) if t > 0.0 => self.p.limit_q().as_ns() as f64 * s / t,
            _ => f64::INFINITY,
        }
    }

    /// Eq. 2: Thr_p = (N_prob + 1) · 5 · IndexOfCurrentDataRate, with the index counted from 1 (so the
    /// slowest rate needs 5 successes, not 0). In Cleanup N_prob is ignored (fixed to 5 · index).
    pub fn thr_p(&self) -> u32 {
        let idx = self.rate as u32 + 1;
        let k = if self.state == State::Cleanup { 1 } else { self.n_prob + 1 };
        k * self.p.probe_factor * idx
    }

    /// *Rate_min*: among rates `0..=upto` with samples, the one with the smallest T_i (ties: faster).
    pub fn rate_min(&self, upto: usize) -> Option<usize> {
        let mut best: Option<(usize, f64)> = None;
        for (i, r) in self.per_rate.iter().enumerate().take(upto + 1) {
            if let Some(t) = r.t.0 {
                if best.is_none_or(|(_, b)| t <= b) {
                    best = Some((i, t));
                }
            }
        }
        best.map(|(i, _)| i)
    }

    fn set_state(&mut self, now: SimTime, s: State) {
        let i = self.state as usize;
        self.stats.time_in_state_ns[i] += now.saturating_since(self.state_since).as_ns();
        self.state_since = now;
        self.state = s;
    }

    /// "Whenever we successfully decide on a new rate, we reset N_suc, N_ret and N_prob to 0."
    fn decide(&mut self, rate: usize) {
        if rate != self.rate {
            self.stats.rate_changes += 1;
        }
        self.rate = rate;
        self.n_suc = 0;
        self.n_ret = 0;
        self.n_prob = 0;
    }

    /// Algorithm 1, lines 6–7 and 14–15: Rate_prev = Rate; State = Cleanup. An unfinished probe is
    /// abandoned (its rate was never adopted).
    fn enter_cleanup(&mut self, now: SimTime) {
        self.probe = None;
        if self.state != State::Cleanup {
            self.stats.cleanups += 1;
            self.cleanup_drops = 0;
            self.set_state(now, State::Cleanup);
        }
        self.rate_prev = self.rate;
    }

    /// Algorithm 1, lines 8–11: in Cleanup with fewer than Len_max packets in the driver, Rate =
    /// Rate_prev and State = Stable.
    fn check_exit(&mut self, now: SimTime, in_driver: usize) {
        if self.state == State::Cleanup && (in_driver as f64) < self.len_max() {
            self.decide(self.rate_prev);
            self.set_state(now, State::Stable);
        }
    }

    /// Algorithm 1, else-branch: a packet entered the driver, which now holds `in_driver` packets of
    /// this receiver.
    pub fn on_enqueue(&mut self, now: SimTime, in_driver: usize) {
        if in_driver as f64 > self.len_max() {
            self.enter_cleanup(now);
        }
    }

    /// Algorithm 1, lines 4–7: a packet about to be pushed into hardware or just returned from it had a
    /// latency above Limit_q and was dropped.
    pub fn on_deadline_drop(&mut self, now: SimTime, probe: Option<ProbeTag>) {
        self.stats.deadline_drops += 1;
        self.enter_cleanup(now);
        self.lost(now, Loss::Deadline, probe);
    }

    /// Algorithm 1, lines 8–11, for a packet that will be pushed into hardware (within Limit_q).
    pub fn on_push(&mut self, now: SimTime, in_driver: usize) {
        self.check_exit(now, in_driver);
    }

    /// The plan for a packet's first software transmission.
    pub fn plan_first(&mut self) -> TxPlan {
        let hw_tries = self.hw_tries();
        if let Some(pr) = &mut self.probe {
            if let Some(slot) = pr.slots.iter().position(|s| !s.issued) {
                pr.slots[slot].issued = true;
                let rate = pr.rate;
                return TxPlan { rate, txv: self.rates[rate], hw_tries, probe: Some(ProbeTag { gen: pr.gen, slot: slot as u8 }) };
            }
        }
        TxPlan { rate: self.rate, txv: self.rates[self.rate], hw_tries, probe: None }
    }

    /// Whether a packet whose `sw_tx`-th software transmission just failed may be sent again: one
    /// software retransmission outside Cleanup, none in it, plus one while the last
    /// `loss_run_extra_retry` packets were all lost (§3.3, §3.4).
    pub fn may_retransmit(&mut self, sw_tx: u32) -> bool {
        let base = if self.state == State::Cleanup { 0 } else { self.p.sw_retries };
        let extra = (self.loss_run >= self.p.loss_run_extra_retry) as u32;
        let done = sw_tx.saturating_sub(1);
        if done < base {
            return true;
        }
        if done < base + extra {
            self.stats.extra_retransmissions += 1;
            return true;
        }
        false
    }

    /// The plan for a software retransmission after a failure at `failed_rate`: the fine-grained
    /// re-selection of §3.4, *Rate_min* among the slower rates (one index down if none was measured).
    ///
    /// Outside Cleanup, `stable_down_retx` consecutive software retransmissions (N_ret) move *Rate* itself
    /// down to *Rate_min* below it.
    pub fn plan_retransmission(&mut self, failed_rate: usize) -> TxPlan {
        self.n_ret += 1;
        self.stats.sw_retransmissions += 1;
        let rate = self.reselect(failed_rate);
        if self.state != State::Cleanup && self.n_ret >= self.p.stable_down_retx {
            let down = self.reselect(self.rate);
            self.decide(down);
        }
        TxPlan { rate, txv: self.rates[rate], hw_tries: self.hw_tries(), probe: None }
    }

    fn reselect(&self, failed: usize) -> usize {
        match failed.checked_sub(1) {
            None => 0,
            Some(below) => self.rate_min(below).unwrap_or(below),
        }
    }

    fn hw_tries(&self) -> u8 {
        if self.state == State::Cleanup {
            self.p.cleanup_hw_tries
        } else {
            self.p.hw_tries
        }
    }

    /// A PSDU came back from hardware: updates T_n, S_n, T_i, S_i and the counters, then applies the
    /// rate rules of the current state. Call [`LawControl::on_hw_return`] after the packets' fates.
    pub fn on_report(&mut self, now: SimTime, r: &SwTxReport) {
        let n = r.mpdus.max(1);
        let acked = r.acked.min(n);
        let t = r.tx_time.as_ns() as f64 / n as f64;
        let s = acked as f64 / n as f64;
        let w = self.p.ewma_old_weight;
        let st = &mut self.per_rate[r.rate];
        st.t.add(t, w);
        st.s.add(s, w);
        st.sw_tx += 1;
        st.mpdus += n as u64;
        st.acked += acked as u64;
        self.t_n.add(t, w);
        self.s_n.add(s, w);
        self.stats.sw_transmissions += 1;
        let ok = acked == n;
        if ok {
            self.n_suc += 1;
            if r.sw_tx == 1 {
                self.n_ret = 0;
            }
        } else {
            self.n_suc = 0;
        }
        let is_probe = self.probe_slot_update(r, ok);
        match self.state {
            State::Cleanup => {
                if self.n_suc >= self.thr_p() && self.rate + 1 < self.rates.len() {
                    self.decide(self.rate + 1);
                }
            }
            State::Probing if !is_probe && !ok && r.rate == self.rate => {
                // The known rate failed while probing above it: the probe is moot.
                self.probe = None;
                self.set_state(now, State::Stable);
                self.stable_rules(now);
            }
            State::Probing => self.evaluate_probe(now),
            State::Stable => self.stable_rules(now),
        }
    }

    /// Algorithm 1, lines 8–11, after a packet came back from hardware.
    pub fn on_hw_return(&mut self, now: SimTime, in_driver: usize) {
        self.check_exit(now, in_driver);
    }

    /// Stable: start a probe once N_suc reaches Thr_p.
    fn stable_rules(&mut self, now: SimTime) {
        if self.n_suc >= self.thr_p() && self.rate + 1 < self.rates.len() {
            self.probe_gen += 1;
            self.stats.probes += 1;
            let slots = vec![ProbeSlot::default(); self.p.probe_packets as usize];
            self.probe = Some(Probe { gen: self.probe_gen, rate: self.rate + 1, slots });
            self.set_state(now, State::Probing);
        }
    }

    /// Records a probe packet's transmission; returns whether `r` belonged to the running probe.
    fn probe_slot_update(&mut self, r: &SwTxReport, ok: bool) -> bool {
        let (Some(tag), Some(pr)) = (r.probe, self.probe.as_mut()) else { return false };
        if tag.gen != pr.gen {
            return false;
        }
        let slot = &mut pr.slots[tag.slot as usize];
        slot.tx_time += r.tx_time;
        if r.sw_tx == 1 {
            slot.first_ok = Some(ok);
            slot.mpdus = r.mpdus.max(1);
        }
        if ok {
            slot.done = Some(true);
        }
        true
    }

    /// Both probe packets are settled: success needs (1) none lost and at least one through on its
    /// first software transmission, and (2) their average TX time (per MPDU, as T_i) below T_i of the
    /// current rate.
    fn evaluate_probe(&mut self, now: SimTime) {
        let Some(pr) = &self.probe else { return };
        if pr.slots.iter().any(|s| s.done.is_none()) {
            return;
        }
        let none_lost = pr.slots.iter().all(|s| s.done == Some(true));
        let one_first = pr.slots.iter().any(|s| s.first_ok == Some(true));
        let avg = pr.slots.iter().map(|s| s.tx_time.as_ns() as f64 / s.mpdus.max(1) as f64).sum::<f64>() / pr.slots.len() as f64;
        let faster = self.per_rate[self.rate].t.0.is_none_or(|t| avg < t);
        let rate = pr.rate;
        self.probe = None;
        self.set_state(now, State::Stable);
        if none_lost && one_first && faster {
            self.stats.probes_succeeded += 1;
            self.decide(rate);
        } else {
            self.n_prob += 1;
        }
    }

    /// A packet of this receiver was delivered (acknowledged).
    pub fn on_delivered(&mut self) {
        self.loss_run = 0;
        self.cleanup_drops = 0;
    }

    /// A packet of this receiver was lost. In Cleanup, `cleanup_drops_down` consecutive transmission
    /// losses turn the rate down one index.
    pub fn lost(&mut self, now: SimTime, why: Loss, probe: Option<ProbeTag>) {
        self.loss_run += 1;
        if why == Loss::TxFailed {
            self.stats.tx_drops += 1;
            if self.state == State::Cleanup {
                self.cleanup_drops += 1;
                if self.cleanup_drops >= self.p.cleanup_drops_down {
                    self.cleanup_drops = 0;
                    let down = self.rate.saturating_sub(1);
                    self.decide(down);
                }
            }
        }
        if let (Some(tag), Some(pr)) = (probe, self.probe.as_mut()) {
            if tag.gen == pr.gen {
                pr.slots[tag.slot as usize].done = Some(false);
                self.evaluate_probe(now);
            }
        }
    }

    /// Counters and the per-rate table for results (closes the current state's time at `now`).
    pub fn stats_json(&self, now: SimTime) -> serde_json::Value {
        let mut s = self.stats;
        s.time_in_state_ns[self.state as usize] += now.saturating_since(self.state_since).as_ns();
        let rows: Vec<serde_json::Value> = self
            .rates
            .iter()
            .zip(&self.per_rate)
            .map(|(txv, r)| {
                serde_json::json!({
                    "rate": crate::ratectl::rate_name(txv),
                    "t_us": r.t.0.map(|t| t / 1e3),
                    "s": r.s.0,
                    "sw_transmissions": r.sw_tx,
                    "mpdus": r.mpdus,
                    "acked": r.acked,
                })
            })
            .collect();
        serde_json::json!({
            "type": "law",
            "state": self.state,
            "rate": crate::ratectl::rate_name(&self.rates[self.rate]),
            "len_max": if self.len_max().is_finite() { Some(self.len_max()) } else { None },
            "t_n_us": self.t_n.0.map(|t| t / 1e3),
            "s_n": self.s_n.0,
            "counters": s,
            "rates": rows,
        })
    }
}
