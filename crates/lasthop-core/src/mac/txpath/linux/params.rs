//! The Linux path's settings: what the scenario configures (`ap_path`/`sta_path = { type = "linux" }`),
//! the hardware queues a mechanism sets (Law's), and AQL's limits.

use crate::phy::airtime::AirtimeOptions;
use crate::phy::mcs::Band;
use crate::queue::codel::CodelParams;
use crate::queue::fq::FqParams;
use crate::time::SimDuration;

/// Settings of the Linux path.
#[derive(Clone, Debug)]
pub struct LinuxParams {
    pub qos: bool,
    pub ampdu: bool,
    pub band: Band,
    pub airtime: AirtimeOptions,
    pub fq: FqParams,
    pub codel: CodelParams,
    pub airtime_fairness: bool,
    /// Which airtime-fairness scheduler (mac80211's, or ath9k's DRR++ of ≈ 4.11–4.x).
    pub afs_variant: crate::mac::wifi_config::AfsVariant,
    /// Hardware queue depth for A-MPDUs (ATH_AGGR_MIN_QDEPTH = 2) and for single frames (8).
    pub hw_depth_aggr: usize,
    pub hw_depth_single: usize,
    /// Hardware attempts after which a subframe is dropped (ATH_MAX_SW_RETRIES = 30).
    pub sw_retry_limit: u32,
    /// Subframes per A-MPDU (half the 64 BlockAck window).
    pub max_subframes: u32,
    pub max_ampdu_bytes: u32,
    /// Cap on an A-MPDU's airtime at the slowest chain rate (ath9k: min(TXOP, 4 ms)).
    pub max_aggr_duration: SimDuration,
    pub baw: u64,
    /// Tries of the fixed rate in hardware (ath9k max_rate_tries 10).
    pub fixed_tries: u8,
    /// Airtime Queue Limits, if the driver enables them (ath9k does not).
    pub aql: Option<AqlParams>,
    /// Driver/IRQ latency t_irq between the hardware's completion of a PSDU and the driver's handling of
    /// it (TX status, freeing its hardware-queue slot, the next scheduling round; `wifi-model.md` §5.6).
    pub t_irq: SimDuration,
    /// The hardware's time limit per PSDU (Law's Limit_h, generic; ath9k has none): from the moment a
    /// PSDU reaches the head of its AC's hardware queue, the medium starts no attempt after this long
    /// and hands the PSDU back ([`super::Psdu::hw_deadline`]). `None`: no limit.
    pub hw_time_limit: Option<SimDuration>,
    /// One budget of PSDUs in hardware over all ACs (Law's two; counting every PSDU, waiting or on the
    /// air) in place of ath9k's per-AC depths. `None`: ath9k's.
    pub hw_shared: Option<usize>,
    /// A token bucket shaper (Linux `tbf`) as the root qdisc of the wireless interface: the node's
    /// offered-load cap. `None`: no cap.
    pub tbf: Option<crate::queue::tbf::TbfParams>,
}

impl LinuxParams {
    /// ath9k over mac80211 as the Linux profile configures it (`wifi-model.md` §5.1), on a PHY.
    pub fn ath9k(qos: bool, ampdu: bool, band: Band, airtime: AirtimeOptions) -> Self {
        LinuxParams {
            qos,
            ampdu,
            band,
            airtime,
            fq: FqParams::mac80211(),
            codel: CodelParams::mac80211(),
            airtime_fairness: true,
            afs_variant: crate::mac::wifi_config::AfsVariant::Mac80211,
            hw_depth_aggr: 2,
            hw_depth_single: 8,
            sw_retry_limit: 30,
            max_subframes: 32,
            max_ampdu_bytes: 65_535,
            max_aggr_duration: SimDuration::from_ms(4),
            baw: 64,
            fixed_tries: 10,
            aql: None,
            t_irq: SimDuration::ZERO,
            hw_time_limit: None,
            hw_shared: None,
            tbf: None,
        }
    }
}

/// The hardware queues a mechanism gives a node's Linux path (Law's: two PSDUs over all ACs, Limit_h).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HwQueueSetup {
    /// One budget of PSDUs over all ACs ([`LinuxParams::hw_shared`]); `None`: ath9k's per-AC depths.
    pub shared_psdus: Option<usize>,
    /// The per-PSDU hardware time limit ([`LinuxParams::hw_time_limit`]); `None`: as configured.
    pub time_limit: Option<SimDuration>,
}

impl HwQueueSetup {
    pub fn apply(&self, p: &mut LinuxParams) {
        p.hw_shared = self.shared_psdus.or(p.hw_shared);
        p.hw_time_limit = self.time_limit.or(p.hw_time_limit);
    }
}

/// AQL limits (`wifi-model.md` §5.5; Linux defaults since 5.9).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AqlParams {
    /// Per-station low limit, µs (5000).
    pub low_us: u64,
    /// Per-station high limit, µs (12000).
    pub high_us: u64,
    /// Interface threshold, µs (24000).
    pub threshold_us: u64,
}

impl Default for AqlParams {
    fn default() -> Self {
        AqlParams { low_us: 5_000, high_us: 12_000, threshold_us: 24_000 }
    }
}
