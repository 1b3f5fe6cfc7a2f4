//! Thompson-sampling rate control after ns-3's `ThompsonSamplingWifiManager`
//! (`src/wifi/model/rate-control/thompson-sampling-wifi-manager.cc`, A. Krotov, IITP RAS 2021).
//! Spec: `baselines.md` §1.2.
//!
//! Per rate i: decayed success and failure counts `s_i`, `f_i`. Before every choice, every rate is
//! decayed to `now` (× e^(−λ·Δt)) and a success probability is drawn from Beta(1 + s_i, 1 + f_i)
//! (X ~ Gamma(α), Y ~ Gamma(β), θ = X/(X + Y)); the next rate is the argmax of θ_i · rate_i (strictly
//! greater, so ties and an all-zero draw keep index 0, the most robust rate). A status adds acknowledged
//! MPDUs to `s` and failed ones to `f` of the rate used, then resamples.
//!
//! Choices where the source is silent or that a multi-rate chain forces:
//! * **Per-attempt resampling as a chain.** ns-3 resamples after every failed attempt, so a retry may use
//!   another rate; our hardware executes a whole chain before reporting. With `max_rates = R > 1`
//!   (default 4) the chain is what ns-3 would do if the previous attempts failed: entry k+1 is drawn after
//!   adding `n` failures to entry k's rate (n = EWMA of reported A-MPDU lengths, 75 % old weight, start
//!   1), each entry gets one try and the last one the remaining `tries − (R − 1)`; equal neighbours merge.
//!   With `max_rates = 1` the chain is `[(next, tries)]` (the baselines' minimum-faithful form).
//! * **Accounting.** Every failed attempt of an A-MPDU adds `ampdu_len` failures (ns-3 reports a missed
//!   BlockAck as 0 successes and n failures); the final attempt adds `acked` successes and
//!   `ampdu_len − acked` failures. For single MPDUs this is ns-3's `ReportDataFailed`/`ReportDataOk`.
//! * **Truncation.** ns-3 passes Beta parameters as `uint64_t`, truncating `1 + s`; `truncate_counts`
//!   (default true) reproduces it.
//! * **Candidate rates.** The link's highest amendment; for each (MCS, width, streams) only the shortest
//!   guard interval (ns-3 uses the short GI whenever both ends support it). Order: MCS index, then width,
//!   then streams (ns-3's mode × width × nss loop), so index 0 is the most robust rate.
//! * **Gamma variates** use Marsaglia–Tsang (as ns-3's `GammaRandomVariable`), drawing from the
//!   controller's [`Rng`]; the streams differ from ns-3's, the distribution does not.

use super::{check, highest_family, rate_name, LinkRates, RateControl, RateControlError, RateControlInfo};
use super::{RateEntry, RateSet, TxReport, MAX_CHAIN};
use crate::phy::{PhyStandard, TxVector};
use crate::rng::Rng;
use crate::time::SimTime;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `rate_control = { type = "thompson", decay_hz = 1.0, truncate_counts = true, max_rates = 4,
/// tries = 7 }`; every field is optional.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct ThompsonParams {
    /// Exponential decay of the counts, 1/s (ns-3 attribute `Decay`, default 1.0; 0 = never forget).
    pub decay_hz: f64,
    /// Truncate `1 + s` and `1 + f` to integers before sampling, as ns-3 does. Default true.
    pub truncate_counts: bool,
    /// Series in the chain (see the module docs). Default 4; 1 gives `[(next, tries)]`.
    pub max_rates: u8,
    /// Attempts per PSDU over the whole chain. Default 7 (ns-3 FrameRetryLimit).
    pub tries: u8,
}

impl Default for ThompsonParams {
    fn default() -> Self {
        ThompsonParams {
            decay_hz: 1.0,
            truncate_counts: true,
            max_rates: 4,
            tries: 7,
        }
    }
}

impl ThompsonParams {
    pub fn validate(&self) -> Result<(), RateControlError> {
        check(
            self.decay_hz.is_finite() && self.decay_hz >= 0.0,
            "decay_hz",
            "must be finite and >= 0",
        )?;
        check(
            (1..=MAX_CHAIN as u8).contains(&self.max_rates),
            "max_rates",
            "must be in 1..=4",
        )?;
        check(self.tries >= 1, "tries", "must be at least 1")
    }
}

/// One candidate rate (ns-3 `RateStats`).
#[derive(Clone, Debug)]
struct Arm {
    txv: TxVector,
    rate_bps: f64,
    success: f64,
    fails: f64,
    last_decay: SimTime,
    /// Undecayed totals, for stats.
    attempts_total: u64,
    success_total: u64,
    chosen: u64,
}

/// The Thompson-sampling controller of one station.
#[derive(Clone, Debug)]
pub struct Thompson {
    p: ThompsonParams,
    arms: Vec<Arm>,
    next: usize,
    /// EWMA of reported A-MPDU lengths (for the failure assumption of chain entries ≥ 1).
    avg_ampdu_len: f64,
    rng: Rng,
}

impl Thompson {
    /// Builds the candidate list and draws the first choice at `now` (ns-3 `InitializeStation`).
    pub fn new(
        p: &ThompsonParams,
        link: &LinkRates,
        rng: Rng,
        now: SimTime,
    ) -> Result<Thompson, RateControlError> {
        p.validate()?;
        let arms = candidates(&link.supported, now);
        if arms.is_empty() {
            return Err(RateControlError::NoRates);
        }
        let mut t = Thompson {
            p: p.clone(),
            arms,
            next: 0,
            avg_ampdu_len: 1.0,
            rng,
        };
        t.next = t.draw_best(now, &[]);
        Ok(t)
    }

    /// ns-3 `Decay`.
    fn decay(&mut self, i: usize, now: SimTime) {
        let arm = &mut self.arms[i];
        if now > arm.last_decay {
            let k = (-self.p.decay_hz * (now - arm.last_decay).as_secs_f64()).exp();
            arm.success *= k;
            arm.fails *= k;
            arm.last_decay = now;
        }
    }

    fn beta_params(&self, s: f64, f: f64) -> (f64, f64) {
        if self.p.truncate_counts {
            ((1.0 + s).trunc(), (1.0 + f).trunc())
        } else {
            (1.0 + s, 1.0 + f)
        }
    }

    /// ns-3 `UpdateNextMode`: decays every arm and returns the argmax of θ·rate. `assumed` adds
    /// hypothetical failures `(arm, n)` (chain construction) without storing them.
    fn draw_best(&mut self, now: SimTime, assumed: &[(usize, f64)]) -> usize {
        let mut best = 0;
        let mut max_tp = 0.0;
        for i in 0..self.arms.len() {
            self.decay(i, now);
            let extra: f64 = assumed
                .iter()
                .filter(|(j, _)| *j == i)
                .map(|(_, n)| n)
                .sum();
            let (a, b) = self.beta_params(self.arms[i].success, self.arms[i].fails + extra);
            let theta = sample_beta(&mut self.rng, a, b);
            let tp = theta * self.arms[i].rate_bps;
            if tp > max_tp {
                max_tp = tp;
                best = i;
            }
        }
        best
    }

    fn arm_of(&self, txv: &TxVector) -> Option<usize> {
        self.arms.iter().position(|a| a.txv == *txv)
    }

    /// The chain of the module docs.
    fn chain(&mut self, now: SimTime) -> Vec<(usize, u8)> {
        let r = self.p.max_rates.min(self.p.tries) as usize;
        let mut entries: Vec<(usize, u8)> = vec![(self.next, 1)];
        let mut assumed: Vec<(usize, f64)> = Vec::new();
        for k in 1..r {
            let (last, _) = *entries.last().expect("non-empty");
            assumed.push((last, self.avg_ampdu_len));
            let pick = self.draw_best(now, &assumed);
            let tries = if k + 1 == r {
                self.p.tries - (r as u8 - 1)
            } else {
                1
            };
            match entries.last_mut() {
                Some(e) if e.0 == pick => e.1 += tries,
                _ => entries.push((pick, tries)),
            }
        }
        if r == 1 {
            entries[0].1 = self.p.tries;
        }
        entries
    }
}

impl RateControl for Thompson {
    fn rate_set(&mut self, now: SimTime, _mpdu_len: u32) -> RateSet {
        self.arms[self.next].chosen += 1;
        let mut set = RateSet {
            entries: [None; MAX_CHAIN],
            probe: false,
        };
        for (slot, (arm, tries)) in self.chain(now).into_iter().enumerate() {
            set.entries[slot] = Some(RateEntry {
                txv: self.arms[arm].txv,
                tries,
                rts: false,
            });
        }
        set
    }

    fn on_tx_status(&mut self, now: SimTime, report: &TxReport) {
        let (len, ack) = report.lens();
        self.avg_ampdu_len = 0.75 * self.avg_ampdu_len + 0.25 * len as f64;
        let used: Vec<(TxVector, u8)> = report.used().collect();
        for (k, (txv, tries)) in used.iter().enumerate() {
            let Some(i) = self.arm_of(txv) else { continue };
            self.decay(i, now);
            let last = k + 1 == used.len();
            let failed_attempts = if last {
                *tries as u32 - 1
            } else {
                *tries as u32
            };
            let (s, f) = if last { (ack, len - ack) } else { (0, 0) };
            let arm = &mut self.arms[i];
            arm.fails += (failed_attempts * len + f) as f64;
            arm.success += s as f64;
            arm.attempts_total += *tries as u64 * len as u64;
            arm.success_total += s as u64;
        }
        self.next = self.draw_best(now, &[]);
    }

    fn current_rate(&self) -> TxVector {
        self.arms[self.next].txv
    }

    fn stats(&self) -> serde_json::Value {
        let rates: Vec<_> = self
            .arms
            .iter()
            .map(|a| {
                serde_json::json!({
                    "rate": rate_name(&a.txv),
                    "rate_mbps": a.rate_bps / 1e6,
                    "success": a.success,
                    "fails": a.fails,
                    "mean_prob": (1.0 + a.success) / (2.0 + a.success + a.fails),
                    "chosen": a.chosen,
                    "attempts": a.attempts_total,
                    "acked": a.success_total,
                })
            })
            .collect();
        serde_json::json!({
            "type": "thompson",
            "next": rate_name(&self.arms[self.next].txv),
            "avg_ampdu_len": self.avg_ampdu_len,
            "rates": rates,
        })
    }

    fn info(&self) -> RateControlInfo {
        let detail = format!("decay {} Hz, {}-rate chain ×{}", self.p.decay_hz, self.p.max_rates, self.p.tries);
        RateControlInfo::new("thompson", detail, self.arms.iter().map(|a| a.txv))
    }
}

/// Candidate arms in ns-3 order (module docs).
fn candidates(supported: &[TxVector], now: SimTime) -> Vec<Arm> {
    let family = highest_family(supported);
    let mut picked: Vec<TxVector> = Vec::new();
    for t in &family {
        let same = |u: &TxVector| u.mcs == t.mcs && u.width == t.width && u.nss == t.nss;
        match picked.iter_mut().find(|u| same(u)) {
            Some(u) if t.gi < u.gi => *u = *t,
            Some(_) => {}
            None => picked.push(*t),
        }
    }
    let order = |t: &TxVector| {
        let m = if t.standard == PhyStandard::Ht {
            t.mcs + 8 * (t.nss - 1)
        } else {
            t.mcs
        };
        (m, t.width, t.nss)
    };
    picked.sort_by_key(order);
    picked
        .into_iter()
        .map(|txv| Arm {
            txv,
            rate_bps: txv.data_rate().bps() as f64,
            success: 0.0,
            fails: 0.0,
            last_decay: now,
            attempts_total: 0,
            success_total: 0,
            chosen: 0,
        })
        .collect()
}

/// Gamma(shape, 1) by Marsaglia–Tsang (2000); shape < 1 via the boost Gamma(a + 1)·U^(1/a).
pub(crate) fn sample_gamma(rng: &mut Rng, shape: f64) -> f64 {
    if shape < 1.0 {
        let u = 1.0 - rng.unit();
        return sample_gamma(rng, shape + 1.0) * u.powf(1.0 / shape);
    }
    let d = shape - 1.0 / 3.0;
    let c = 1.0 / (9.0 * d).sqrt();
    loop {
        let x = rng.normal();
        let v = 1.0 + c * x;
        if v <= 0.0 {
            continue;
        }
        let v = v * v * v;
        let u = rng.unit();
        if u < 1.0 - 0.0331 * x.powi(4) || u.ln() < 0.5 * x * x + d * (1.0 - v + v.ln()) {
            return d * v;
        }
    }
}

/// Beta(a, b) = X/(X + Y) with X ~ Gamma(a), Y ~ Gamma(b) (ns-3 `SampleBetaVariable`).
pub(crate) fn sample_beta(rng: &mut Rng, a: f64, b: f64) -> f64 {
    let x = sample_gamma(rng, a);
    let y = sample_gamma(rng, b);
    if x + y > 0.0 {
        x / (x + y)
    } else {
        0.0
    }
}
