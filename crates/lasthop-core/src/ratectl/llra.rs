//! LLRA — latency-aware rate adaptation (C.-Y. Li, C. Peng, S. Lu, X. Wang, R. Chandra, "Latency-aware
//! rate adaptation in 802.11n home networks", INFOCOM 2015), **reconstructed**: only the abstract could
//! be read. Spec: `baselines.md` §1.3; Law (seed 000) uses it as a baseline that puts latency into the
//! rate decision while keeping the stock queue structure and control granularity.
//!
//! What is certain (abstract, and Law's description): LLRA targets the tail of per-packet delay, jointly
//! does rate control, frame-aggregation scheduling and software/hardware retry dispatching, on 802.11n.
//! Everything numeric, and the objective itself, is a **GUESS** (all configurable):
//!
//! ```text
//! statistics and probing: Minstrel-HT underneath (its p_i, its throughput ranking, its probes)
//! a_i(n) = t_acc + airtime(i, n MPDUs) + SIFS + ACK/BlockAck        t_acc: EWMA (1/8) of access delays
//! K_q(i) = ⌈ln(1 − q) / ln(1 − p_i)⌉                               tries to succeed with probability q
//! L_q(i) = h + B · a_i(n) / (p_i · n · MPDU) + K_q(i) · a_i(n)      h: head sojourn, B: backlog bytes
//! rate:  Minstrel's max_tp[0] if L_q(max_tp[0]) ≤ D, else argmin_i L_q(i) over p_i ≥ 0.10
//! chain: [(i*, min(K_q(i*), max_retry))] then Minstrel's slower series (if max_rates > 1)
//! A-MPDU: the largest n with K_q(i*) · a_i*(n) ≤ D · aggregation_share
//! software retry of a failed MPDU only while its sojourn + a_i*(1) < D, else drop (`deadline`)
//! ```
//!
//! Further choices: the backlog `B`, head sojourn `h` and access delays come from the driver through
//! [`RateControl::on_queue_state`]; before the first sample `t_acc` is AIFS(BE) + CWmin/2 slots; `p_i`
//! is clamped to 0.999 in K_q (a perfect rate needs one try); the ACK/BlockAck is timed at the 24 Mb/s
//! basic rate; with no rate above 10 % the chain is Minstrel's unchanged (and so is a probe's), with no
//! A-MPDU cap, but the software-retry deadline still applies (with a_i(1) of Minstrel's first rate).

use super::minstrel_ht::{MinstrelHt, MinstrelHtParams};
use super::{check, LinkRates, QueueState, RateControl, RateControlError, RateControlInfo, RateEntry, RateSet, TxLimits, TxReport, MAX_CHAIN};
use crate::phy::airtime::{ack_duration, block_ack_duration, ppdu_duration_with, AirtimeOptions, BlockAckBitmap};
use crate::phy::ampdu_len::ampdu_psdu_len_uniform;
use crate::phy::timing::PhyTimings;
use crate::phy::{Band, TxVector};
use crate::rng::Rng;
use crate::time::{SimDuration, SimTime};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `rate_control = { type = "llra", delay_budget_ms = 20, ... }`; every field is optional and every
/// default is a GUESS (`baselines.md` §1.3).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct LlraParams {
    /// Delay budget D of a packet at the AP, ms. Default 20.
    pub delay_budget_ms: f64,
    /// Tail quantile q the rate choice protects. Default 0.99.
    pub quantile: f64,
    /// Rates below this success probability are not candidates. Default 0.10 (Minstrel's floor).
    pub min_prob: f64,
    /// Weight of a new access-delay sample in t_acc. Default 0.125.
    pub access_weight: f64,
    /// Share of D that the K_q attempts of one A-MPDU may take. Default 0.5.
    pub aggregation_share: f64,
    /// Drop a failed MPDU instead of retrying it in software when the retry cannot finish within D.
    /// Default true.
    pub retry_deadline: bool,
    /// The Minstrel-HT underneath (statistics, probing, `max_rates`, `max_retry`).
    pub minstrel: MinstrelHtParams,
}

impl Default for LlraParams {
    fn default() -> Self {
        LlraParams {
            delay_budget_ms: 20.0,
            quantile: 0.99,
            min_prob: 0.10,
            access_weight: 0.125,
            aggregation_share: 0.5,
            retry_deadline: true,
            minstrel: MinstrelHtParams::default(),
        }
    }
}

impl LlraParams {
    pub fn validate(&self) -> Result<(), RateControlError> {
        check(self.delay_budget_ms.is_finite() && self.delay_budget_ms > 0.0 && self.delay_budget_ms <= 10_000.0, "delay_budget_ms", "must be in (0, 10000]")?;
        check(self.quantile.is_finite() && self.quantile > 0.0 && self.quantile < 1.0, "quantile", "must be in (0, 1)")?;
        check(self.min_prob.is_finite() && self.min_prob > 0.0 && self.min_prob < 1.0, "min_prob", "must be in (0, 1)")?;
        check(self.access_weight.is_finite() && self.access_weight > 0.0 && self.access_weight <= 1.0, "access_weight", "must be in (0, 1]")?;
        check(self.aggregation_share.is_finite() && self.aggregation_share > 0.0 && self.aggregation_share <= 1.0, "aggregation_share", "must be in (0, 1]")?;
        self.minstrel.validate()
    }
}

/// The decision of the last `rate_set` (for a probe, or with no candidate, Minstrel's first rate and
/// no A-MPDU cap).
#[derive(Clone, Copy, Debug, PartialEq)]
struct Choice {
    txv: TxVector,
    /// a_i*(1), ns.
    a1: f64,
    max_mpdus: Option<u32>,
}

/// K_q(p) = ⌈ln(1 − q) / ln(1 − p)⌉ (p clamped to 0.999): attempts after which a rate of success
/// probability `p` has delivered with probability `q`.
pub fn tries_for_quantile(p: f64, q: f64) -> u32 {
    let p = p.min(0.999);
    ((1.0 - q).ln() / (1.0 - p).ln()).ceil().max(1.0) as u32
}

/// The LLRA controller of one station.
#[derive(Clone, Debug)]
pub struct Llra {
    p: LlraParams,
    mi: MinstrelHt,
    band: Band,
    sifs: SimDuration,
    /// EWMA of the channel-access delay, ns.
    t_acc: f64,
    backlog_bytes: u64,
    head_sojourn: SimDuration,
    mpdu_len: u32,
    choice: Option<Choice>,
    /// Decisions that overrode Minstrel's first rate.
    overrides: u64,
    decisions: u64,
}

impl Llra {
    pub fn new(p: &LlraParams, link: &LinkRates, rng: Rng, now: SimTime) -> Result<Llra, RateControlError> {
        p.validate()?;
        let mi = MinstrelHt::new(&p.minstrel, link, rng, now)?;
        let t = PhyTimings::for_band(link.band);
        // AIFS of BE (3 slots after SIFS) plus half of CWmin = 15.
        let t_acc = (t.sifs + t.slot * 3).as_ns() as f64 + 7.5 * t.slot.as_ns() as f64;
        Ok(Llra { p: p.clone(), mi, band: link.band, sifs: t.sifs, t_acc, backlog_bytes: 0, head_sojourn: SimDuration::ZERO, mpdu_len: 1538, choice: None, overrides: 0, decisions: 0 })
    }

    /// a_i(n): one attempt of an A-MPDU of `n` MPDUs of `len` bytes at `txv`, with access and response, ns.
    pub fn attempt_ns(&self, txv: &TxVector, n: u32, len: u32) -> f64 {
        let n = n.max(1);
        let psdu = if n == 1 { len } else { ampdu_psdu_len_uniform(n, len) };
        let resp = if n == 1 { ack_duration(txv, &[6, 12, 24], self.band) } else { block_ack_duration(txv, &[6, 12, 24], self.band, BlockAckBitmap::Compressed64) };
        self.t_acc + (ppdu_duration_with(txv, psdu, self.band, AirtimeOptions::STANDARD) + self.sifs + resp).as_ns() as f64
    }

    /// L_q(i) of a rate with success probability `p`, for A-MPDUs of `n`, ns.
    fn latency_ns(&self, txv: &TxVector, p: f64, n: u32) -> f64 {
        let a = self.attempt_ns(txv, n, self.mpdu_len);
        let drain = self.backlog_bytes as f64 * a / (p.min(0.999) * n as f64 * self.mpdu_len as f64);
        self.head_sojourn.as_ns() as f64 + drain + tries_for_quantile(p, self.p.quantile) as f64 * a
    }

    fn budget_ns(&self) -> f64 {
        self.p.delay_budget_ms * 1e6
    }

    /// The largest n ≥ 1 with k · a(n) ≤ D · share.
    fn max_mpdus(&self, txv: &TxVector, k: u32) -> u32 {
        let cap = self.budget_ns() * self.p.aggregation_share;
        let mut n = 1;
        while n < 256 && k as f64 * self.attempt_ns(txv, n + 1, self.mpdu_len) <= cap {
            n += 1;
        }
        n
    }

    /// LLRA's rate among Minstrel's statistics; `None` when no rate reaches `min_prob`.
    fn choose(&self, minstrel_first: &TxVector) -> Option<(TxVector, f64)> {
        let n = self.mi.avg_ampdu_len().max(1);
        let views = self.mi.rate_views();
        let cand = |v: &&super::RateView| v.prob >= self.p.min_prob;
        if let Some(v) = views.iter().filter(cand).find(|v| v.txv == *minstrel_first) {
            if self.latency_ns(&v.txv, v.prob, n) <= self.budget_ns() {
                return Some((v.txv, v.prob));
            }
        }
        views.iter().filter(cand).map(|v| (v, self.latency_ns(&v.txv, v.prob, n))).min_by(|a, b| a.1.total_cmp(&b.1)).map(|(v, _)| (v.txv, v.prob))
    }
}

impl RateControl for Llra {
    fn rate_set(&mut self, now: SimTime, mpdu_len: u32) -> RateSet {
        self.mpdu_len = mpdu_len.max(1);
        let base = self.mi.rate_set(now, mpdu_len);
        let minstrel = |c: &Self| Some(Choice { txv: base.first().txv, a1: c.attempt_ns(&base.first().txv, 1, c.mpdu_len), max_mpdus: None });
        if base.probe {
            // Probing identical to Minstrel-HT.
            self.choice = minstrel(self);
            return base;
        }
        let Some((txv, p)) = self.choose(&base.first().txv) else {
            self.choice = minstrel(self);
            return base;
        };
        self.decisions += 1;
        if txv != base.first().txv {
            self.overrides += 1;
        }
        let (max_rates, max_retry) = self.mi.chain_limits();
        let k = tries_for_quantile(p, self.p.quantile);
        let mut set = RateSet { entries: [None; MAX_CHAIN], probe: false };
        set.entries[0] = Some(RateEntry { txv, tries: k.min(max_retry as u32).max(1) as u8, rts: false });
        let slower = base.iter().filter(|e| e.txv.data_rate().bps() < txv.data_rate().bps()).copied();
        for (i, e) in slower.take(max_rates as usize - 1).enumerate() {
            set.entries[i + 1] = Some(e);
        }
        let a1 = self.attempt_ns(&txv, 1, self.mpdu_len);
        self.choice = Some(Choice { txv, a1, max_mpdus: Some(self.max_mpdus(&txv, k)) });
        set
    }

    fn on_tx_status(&mut self, now: SimTime, report: &TxReport) {
        self.mi.on_tx_status(now, report);
    }

    fn current_rate(&self) -> TxVector {
        self.choice.map_or_else(|| self.mi.current_rate(), |c| c.txv)
    }

    fn stats(&self) -> serde_json::Value {
        serde_json::json!({
            "type": "llra",
            "t_acc_us": self.t_acc / 1e3,
            "decisions": self.decisions,
            "overrides": self.overrides,
            "minstrel": self.mi.stats(),
        })
    }

    fn info(&self) -> RateControlInfo {
        let mi = self.mi.info();
        let detail = format!("delay budget {} ms at p{}, over minstrel_ht {}", self.p.delay_budget_ms, self.p.quantile * 100.0, mi.detail);
        RateControlInfo { name: "llra".into(), detail, max_nss: mi.max_nss }
    }

    fn on_queue_state(&mut self, _now: SimTime, q: &QueueState) {
        self.backlog_bytes = q.backlog_bytes;
        self.head_sojourn = q.head_sojourn;
        if let Some(d) = q.access_delay {
            let w = self.p.access_weight;
            self.t_acc = (1.0 - w) * self.t_acc + w * d.as_ns() as f64;
        }
    }

    fn tx_limits(&self) -> TxLimits {
        let Some(c) = self.choice else { return TxLimits::default() };
        let retry = self.p.retry_deadline.then(|| SimDuration::from_ns((self.budget_ns() - c.a1).max(0.0) as u64));
        TxLimits { max_mpdus: c.max_mpdus, retry_sojourn_limit: retry }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::phy::{ChannelWidth, GuardInterval, PhyStandard};

    fn ht(m: u8) -> TxVector {
        TxVector::ht(m, ChannelWidth::Mhz20, GuardInterval::Ns800).unwrap()
    }

    fn llra(p: LlraParams) -> Llra {
        let link = LinkRates::new(PhyStandard::Ht, ChannelWidth::Mhz20, &[GuardInterval::Ns800], 1, Band::Ghz5);
        Llra::new(&p, &link, Rng::derive(1, "llra"), SimTime::ZERO).unwrap()
    }

    /// Minstrel's statistics after one 50-ms interval: MCS7 88 % (its best throughput), MCS6 100 %.
    fn trained(p: LlraParams) -> Llra {
        let mut c = llra(p);
        let t = SimTime::from_ms(1);
        for i in 0..100 {
            let ok = i < 88;
            c.on_tx_status(t, &RateSet::single(ht(7), 1).report(1, 1, ok as u16));
            c.on_tx_status(t, &RateSet::single(ht(6), 1).report(1, 1, 1));
        }
        c.on_tx_status(SimTime::from_ms(60), &RateSet::single(ht(6), 1).report(1, 1, 1));
        c
    }

    /// The first non-probe chain at `now` (Minstrel's probes pass through untouched).
    fn chain(c: &mut Llra, now: SimTime) -> RateSet {
        for k in 0..100 {
            let s = c.rate_set(now + SimDuration::from_us(k), 1538);
            if !s.probe {
                return s;
            }
        }
        panic!("only probes");
    }

    #[test]
    fn tries_for_the_quantile_by_hand() {
        // ln(0.01)/ln(0.1) = 2; ln(0.01)/ln(0.5) = 6.64 → 7; ln(0.01)/ln(0.12) = 2.17 → 3.
        assert_eq!(tries_for_quantile(0.9, 0.99), 2);
        assert_eq!(tries_for_quantile(0.5, 0.99), 7);
        assert_eq!(tries_for_quantile(0.88, 0.99), 3);
        assert_eq!(tries_for_quantile(1.0, 0.99), 1);
    }

    /// An empty queue: L_q(MCS7) = 3 attempts ≈ 1.2 ms ≤ D, so LLRA keeps Minstrel's best-throughput
    /// rate with K_q = 3 tries. A backlog of 100 MPDUs: draining at MCS7 (88 %) takes longer than at
    /// MCS6 (100 %), every L_q exceeds D = 20 ms, and LLRA takes the argmin, MCS6, with one try.
    #[test]
    fn backlog_moves_the_choice_to_the_smallest_tail_latency() {
        let mut c = trained(LlraParams::default());
        assert_eq!(c.mi.current_rate(), ht(7), "Minstrel's max_tp[0]");
        let s = chain(&mut c, SimTime::from_ms(61));
        assert_eq!((s.first().txv, s.first().tries), (ht(7), 3));
        let q = QueueState { backlog_packets: 100, backlog_bytes: 100 * 1538, head_sojourn: SimDuration::ZERO, access_delay: None };
        c.on_queue_state(SimTime::from_ms(62), &q);
        let s = chain(&mut c, SimTime::from_ms(62));
        assert_eq!((s.first().txv, s.first().tries), (ht(6), 1));
        let (l6, l7) = (c.latency_ns(&ht(6), 1.0, 1), c.latency_ns(&ht(7), 0.88, 1));
        assert!(l6 < l7 && l7 > 20e6, "{l6} {l7}");
        assert_eq!(c.current_rate(), ht(6));
    }

    /// The A-MPDU cap is the largest n with K_q · a(n) ≤ D/2; the software-retry deadline is D − a(1);
    /// access-delay samples move t_acc by 1/8.
    #[test]
    fn limits_follow_the_budget_and_access_delay_is_averaged() {
        let mut c = trained(LlraParams::default());
        chain(&mut c, SimTime::from_ms(61));
        let lim = c.tx_limits();
        let n = lim.max_mpdus.unwrap();
        assert!(3.0 * c.attempt_ns(&ht(7), n, 1538) <= 10e6 && 3.0 * c.attempt_ns(&ht(7), n + 1, 1538) > 10e6, "{n}");
        assert!(n > 4, "{n}");
        let d = lim.retry_sojourn_limit.unwrap().as_ns() as f64;
        assert!((d - (20e6 - c.attempt_ns(&ht(7), 1, 1538))).abs() < 1.0);
        let before = c.t_acc;
        let q = QueueState { access_delay: Some(SimDuration::from_us(1000)), ..QueueState::default() };
        c.on_queue_state(SimTime::from_ms(62), &q);
        assert!((c.t_acc - (0.875 * before + 0.125 * 1e6)).abs() < 1e-6);
        let off = trained(LlraParams { retry_deadline: false, ..LlraParams::default() });
        assert_eq!(off.tx_limits(), TxLimits::default(), "no decision yet");
        let mut off = off;
        chain(&mut off, SimTime::from_ms(61));
        assert_eq!(off.tx_limits().retry_sojourn_limit, None);
        assert!(LlraParams { quantile: 1.0, ..LlraParams::default() }.validate().is_err());
    }

    /// With `max_rates = 4` the chain continues with Minstrel's slower series; with OpenWiFi's
    /// `max_rates = 1` it is the one series.
    #[test]
    fn chain_length_follows_the_hardware() {
        let mut c = trained(LlraParams::default());
        let s = chain(&mut c, SimTime::from_ms(61));
        assert!(s.iter().count() > 1 && s.iter().skip(1).all(|e| e.txv.data_rate().bps() < ht(7).data_rate().bps()), "{s:?}");
        let mut c = trained(LlraParams { minstrel: MinstrelHtParams { max_rates: 1, max_retry: 7, ..MinstrelHtParams::default() }, ..LlraParams::default() });
        let s = chain(&mut c, SimTime::from_ms(61));
        assert_eq!(s.iter().count(), 1);
    }
}
