//! QAir's parameters: `mechanisms = [{ type = "qair", t_target_ms = 12, ... }]`. Defaults and their
//! provenance are spec §6.

use crate::mac::txpath::gate::ReleasePoint;
use crate::scenario::shown;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// QAir on one node (spec `qair-lastpq.md` §6). Every field is optional.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct QairParams {
    /// T_target: the per-frame delay the network should settle at, ms. Default 12 = 3 · T_cycle of the
    /// spec's testbed PHY (HT20, 2 SS, MCS 13, 32-subframe aggregates; §4.3, [D]).
    pub t_target_ms: f64,
    /// N*: when given, T_target = N* · T_cycle of this node's own PHY instead of `t_target_ms` (spec §4.3,
    /// `derived`): T_cycle is the channel time of one successful exchange of the node's largest PSDU
    /// (1500-byte packets up to the path's aggregation caps) in AC_BE at the node's fastest rate (its
    /// fixed rate, or the highest its rate control may pick), AIFS + CWmin/2 slots + PPDU + SIFS +
    /// BlockAck. The spec's testbed PHY gives 4.0025 ms, so N* = 3 → 12.0075 ms. With `n_star`, leave
    /// `t_target_ms` out (a value other than its default is an error). Default none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub n_star: Option<f64>,
    /// α_Q, the weight of the old value in the EWMA across intervals (Eq. 5). Default 0.9 (§4.1, [P]).
    pub alpha: f64,
    /// checkInterval: the mean of t_k is taken over at least this long (Eq. 4), ms. Default 2.5 (§3.4).
    pub check_interval_ms: f64,
    /// δ, the additive increase per update, PSDUs/s (MPDUs/s with `token_unit = "mpdu"`, as are R_min and
    /// R_max; none of the three is rescaled for it). Default 2 ([LH]).
    pub delta: f64,
    /// R_min, PSDUs/s or MPDUs/s (> 0: the dead corner, §4.2). Default 5 ([LH]).
    pub r_min: f64,
    /// R_max, PSDUs/s or MPDUs/s: "the maximum theoretical throughput" in 1500-byte frames. Default 8667
    /// (104 Mbit/s / (8 · 1500 B), §4.2 [D]); also the starting rate R_0 unless `r_0` says otherwise.
    pub r_max: f64,
    /// Token-bucket depth, tokens (PSDUs, or MPDUs). Default 2 ([LH]: ath9k's two queued aggregates).
    pub depth: f64,
    /// `false`: QAir off on this node (a legacy node, spec §9): the regulator never holds a PSDU, while
    /// the Delay Monitor and the controller still run and report (`t_hat_ms`, `rate_psdus_per_s`), so a
    /// baseline can be observed as QAir would see it. Default true.
    pub enabled: bool,
    /// Where the regulator holds the driver back (spec §2, [R2]): `"psdu"` (the spec's default: formed
    /// PSDUs wait in the regulator, counting toward the hardware-queue depth, and the highest AC's
    /// oldest goes first) or `"formation"` (the driver forms no PSDU while no token is there, so the next
    /// aggregate is built from the backlog at release time). Default `"formation"`.
    pub release_point: ReleasePoint,
    /// Explicit-tag priority release (spec §5): at the `psdu` release point a held PSDU carrying a
    /// packet marked DSCP CS5 or above (40: CS5, 46: EF, 48: CS6, 56: CS7) leaves before every other,
    /// then the highest AC. Default true; QAir "does not require but can work with" such tags.
    #[serde(skip_serializing_if = "is_true")]
    pub explicit_tags: bool,
    /// The spec's other explicit tag, a flow-table flag (§5): the named flows' packets, in both
    /// directions (a ping's replies, a TCP flow's ACKs at the node that sends them), are tagged
    /// delay-sensitive whatever their DSCP, and released first as DSCP-tagged ones are; this needs
    /// `release_point = "psdu"` (where PSDUs wait in the gate). Independent of `explicit_tags`.
    /// Default none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tagged_flows: Vec<String>,
    /// Where a frame's delay sample t_k starts: `"head"` (Eq. 6: when it reached the head of its
    /// hardware queue, inferred as max(its predecessor's completion, its own enqueue)) or
    /// `"hw_enqueue"` (when it entered the hardware queue, t_w: a backlogged node's own queue counts).
    /// Default `"head"`. See FIDELITY.md (QP1/QP2) for what each does to convergence.
    #[serde(skip_serializing_if = "is_default")]
    pub t_k_from: TkFrom,
    /// How the additive increase accrues: `"per_update"` (Algorithm 1 as printed: δ at every update,
    /// and updates come only with completions, so a node's growth scales with its own rate) or
    /// `"per_interval"` (δ per checkInterval of time since the last update: every node below target
    /// grows at δ / checkInterval whatever its rate; as the check is strict, an update comes more than
    /// one interval after the last, so this always adds more than δ; after an idle spell the first
    /// update adds the whole spell's growth, up to R_max). Default `"per_update"`.
    #[serde(skip_serializing_if = "is_default")]
    pub increase: Increase,
    /// Updates above target after a decrease before the next decrease may run (while T̂, an average
    /// that lags its samples, still shows the overload the decrease answered); an update below target
    /// ends the hold. Default 0 (Algorithm 1: every update above target decreases).
    #[serde(skip_serializing_if = "is_default")]
    pub decrease_hold: u32,
    /// The smallest factor one decrease multiplies R by, in [0, 1): one outlying T̂ cannot cut R below
    /// this share. Default 0 (Algorithm 1: R · T_target / T̂, unbounded).
    #[serde(skip_serializing_if = "is_default")]
    pub decrease_floor: f64,
    /// What one token pays for ([R2]): `"psdu"` (one PSDU, an A-MPDU being one frame, [R4]) or `"mpdu"`
    /// (each MPDU of the PSDU: R, δ, R_min and R_max are then in MPDUs/s, and the bucket may go into
    /// debt for an aggregate larger than its depth, the next release waiting until the balance is back
    /// at one token). Default `"psdu"`.
    #[serde(skip_serializing_if = "is_default")]
    pub token_unit: TokenUnit,
    /// R_0, the rate a node starts at, within [R_min, R_max]. Default R_max ([LH]: a node starts
    /// transparent, as DCF; a lower R_0 shortens the descent of many nodes started together, but a node
    /// alone then climbs from it at the additive increase).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub r_0: Option<f64>,
    /// How a node comes down from R_0 the first time (spec §4.1 leaves it to Algorithm 1):
    /// `"as_later"` (every decrease is alike) or `"from_delivered"` (until T̂ is first below target after
    /// a cut, each decrease starts from the lower of R and the node's delivered rate, in tokens per second
    /// since its first update (a cut at the first update starts from R), and is not held, so nodes started together at R_max come down at once
    /// and from their shares, not from R_max; ten updates below target before any cut end it too, and
    /// every later decrease is as with `"as_later"`). Default `"as_later"`.
    #[serde(skip_serializing_if = "is_default")]
    pub first_descent: FirstDescent,
}

/// How a QAir node first comes down from R_0 ([`QairParams::first_descent`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FirstDescent {
    /// Like every later decrease (Algorithm 1).
    #[default]
    AsLater,
    /// From the lower of R and the delivered rate, not held, until T̂ is first below target after a cut
    /// (or ten updates below target before any cut).
    FromDelivered,
}

/// What one QAir token pays for ([`QairParams::token_unit`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TokenUnit {
    /// One PSDU.
    #[default]
    Psdu,
    /// One MPDU.
    Mpdu,
}

/// Where QAir's per-frame delay sample starts ([`QairParams::t_k_from`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TkFrom {
    /// The head of the hardware queue, inferred by Eq. 6.
    #[default]
    Head,
    /// The frame's entry into the hardware queue (t_w).
    HwEnqueue,
}

/// How QAir's additive increase accrues ([`QairParams::increase`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Increase {
    /// δ per update (Algorithm 1).
    #[default]
    PerUpdate,
    /// δ per checkInterval elapsed since the last update.
    PerInterval,
}

/// Whether a field holds its type's default, which is also the parameter's (left out of the resolved
/// scenario, so scenarios written before the field existed resolve as they did).
fn is_default<T: Default + PartialEq>(v: &T) -> bool {
    *v == T::default()
}

fn is_true(b: &bool) -> bool {
    *b
}

/// The lowest DSCP an explicit tag carries (CS5).
pub const TAG_DSCP_MIN: u8 = 40;

impl Default for QairParams {
    fn default() -> Self {
        QairParams { t_target_ms: 12.0, n_star: None, alpha: 0.9, check_interval_ms: 2.5, delta: 2.0, r_min: 5.0, r_max: 8667.0, depth: 2.0, enabled: true, release_point: ReleasePoint::Formation, explicit_tags: true, tagged_flows: Vec::new(), t_k_from: TkFrom::Head, increase: Increase::PerUpdate, decrease_hold: 0, decrease_floor: 0.0, token_unit: TokenUnit::Psdu, r_0: None, first_descent: FirstDescent::AsLater }
    }
}

impl QairParams {
    /// The first invalid field as (name, reason).
    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        let positive = |v: f64| v.is_finite() && v > 0.0;
        for (f, v, max) in [("t_target_ms", self.t_target_ms, 1e4), ("check_interval_ms", self.check_interval_ms, 1e4), ("r_min", self.r_min, 1e7), ("r_max", self.r_max, 1e7), ("depth", self.depth, 1e6)] {
            if !positive(v) || v > max {
                return Err((f, format!("must be a positive number up to {max}, got {}", shown(v))));
            }
        }
        if let Some(n) = self.n_star {
            if !(n.is_finite() && n > 0.0 && n <= 100.0) {
                return Err(("n_star", format!("must be a positive number up to 100, got {}", shown(n))));
            }
            if self.t_target_ms != QairParams::default().t_target_ms {
                return Err(("n_star", format!("T_target is either given (t_target_ms = {}) or derived (n_star = {}), not both", shown(self.t_target_ms), shown(n))));
            }
        }
        if !(self.alpha.is_finite() && (0.0..1.0).contains(&self.alpha)) {
            return Err(("alpha", format!("must be in [0, 1), got {}", shown(self.alpha))));
        }
        if !(self.delta.is_finite() && self.delta >= 0.0) {
            return Err(("delta", format!("must be zero or positive, got {}", shown(self.delta))));
        }
        if !(self.decrease_floor.is_finite() && (0.0..1.0).contains(&self.decrease_floor)) {
            return Err(("decrease_floor", format!("must be in [0, 1), got {}", shown(self.decrease_floor))));
        }
        if self.r_min > self.r_max {
            return Err(("r_min", format!("must not exceed r_max ({}), got {}", shown(self.r_max), shown(self.r_min))));
        }
        if let Some(r0) = self.r_0 {
            if !(r0.is_finite() && (self.r_min..=self.r_max).contains(&r0)) {
                return Err(("r_0", format!("must be within [r_min, r_max] = [{}, {}], got {}", shown(self.r_min), shown(self.r_max), shown(r0))));
            }
        }
        if !self.tagged_flows.is_empty() && self.release_point != ReleasePoint::Psdu {
            return Err(("tagged_flows", "tags order the PSDUs held in the gate: set release_point = \"psdu\"".into()));
        }
        if self.depth < 1.0 {
            return Err(("depth", format!("must be at least 1 token, got {}", shown(self.depth))));
        }
        Ok(())
    }
}
