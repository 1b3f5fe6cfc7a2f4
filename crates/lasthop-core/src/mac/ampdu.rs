//! A-MPDU formation limits: how many of the queued MPDUs one PSDU carries.
//!
//! Source: `wifi-model.md` §2.2–2.3. Limits: the receiver's maximum A-MPDU length (bytes), the MPDU count
//! (BlockAck window: 64 HT/VHT, 256 HE, or a driver cap), the PPDU duration (aPPDUMaxTime 5.484 ms) and
//! the TXOP limit (when > 0 the PSDU plus SIFS and its BlockAck must fit). A single MPDU is always
//! allowed, as a TXOP of limit 0 always carries one PSDU.

use crate::phy::airtime::{ppdu_duration_with, AirtimeOptions};
use crate::phy::ampdu_len::ampdu_len_with;
use crate::phy::mcs::{Band, TxVector};
use crate::time::SimDuration;

/// Caps on one A-MPDU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AmpduLimits {
    pub max_bytes: u32,
    pub max_mpdus: u32,
    pub max_duration: SimDuration,
}

/// The plan for one PSDU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PsduPlan {
    pub mpdus: u32,
    pub psdu_len: u32,
    pub duration: SimDuration,
}

/// Takes MPDUs (lengths in queue order) while every limit holds. `aggregate = false` plans one MPDU.
pub fn plan(lens: impl Iterator<Item = u32>, tx: &TxVector, band: Band, opts: AirtimeOptions, limits: &AmpduLimits, aggregate: bool) -> PsduPlan {
    let mut plan = PsduPlan { mpdus: 0, psdu_len: 0, duration: SimDuration::ZERO };
    for len in lens {
        if plan.mpdus == 0 {
            let psdu = if aggregate { ampdu_len_with(0, len) } else { len };
            plan = PsduPlan { mpdus: 1, psdu_len: psdu, duration: ppdu_duration_with(tx, psdu, band, opts) };
            if !aggregate {
                break;
            }
            continue;
        }
        if plan.mpdus >= limits.max_mpdus {
            break;
        }
        let psdu = ampdu_len_with(plan.psdu_len, len);
        if psdu > limits.max_bytes {
            break;
        }
        let d = ppdu_duration_with(tx, psdu, band, opts);
        if d > limits.max_duration {
            break;
        }
        plan = PsduPlan { mpdus: plan.mpdus + 1, psdu_len: psdu, duration: d };
    }
    plan
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::phy::mcs::{ChannelWidth, GuardInterval};

    fn limits(bytes: u32, n: u32, ms: f64) -> AmpduLimits {
        AmpduLimits { max_bytes: bytes, max_mpdus: n, max_duration: SimDuration::from_secs_f64(ms * 1e-3).unwrap() }
    }

    /// ns-3 (5.484 ms, 65 535 B) fits 2/5/8/11/17/22/25/28 MPDUs of 1538 B at HT20 LGI MCS0..7.
    #[test]
    fn ns3_ampdu_sizes_per_mcs() {
        let expect = [2, 5, 8, 11, 17, 22, 25, 28];
        for (mcs, n) in expect.iter().enumerate() {
            let tx = TxVector::ht(mcs as u8, ChannelWidth::Mhz20, GuardInterval::Ns800).unwrap();
            let p = plan(std::iter::repeat_n(1538, 100), &tx, Band::Ghz5, AirtimeOptions::NS3, &limits(65_535, 64, 5.484), true);
            assert_eq!(p.mpdus, *n, "MCS{mcs}");
        }
    }

    #[test]
    fn count_and_txop_limits_and_single_mpdu() {
        let tx = TxVector::ht(7, ChannelWidth::Mhz20, GuardInterval::Ns800).unwrap();
        let p = plan(std::iter::repeat_n(1538, 100), &tx, Band::Ghz5, AirtimeOptions::STANDARD, &limits(65_535, 16, 5.484), true);
        assert_eq!(p.mpdus, 16);
        assert_eq!(p.duration, SimDuration::from_us(3080), "spec §2.2: 16 × 1538 B at MCS7");
        let p = plan(std::iter::repeat_n(1538, 100), &tx, Band::Ghz5, AirtimeOptions::STANDARD, &limits(65_535, 64, 1.0), true);
        assert_eq!(p.mpdus, 5, "5 × 1544 − 2 B = 238 symbols: 988 µs ≤ 1 ms; 6 would take 1184 µs");
        let p = plan(std::iter::repeat_n(1538, 3), &tx, Band::Ghz5, AirtimeOptions::STANDARD, &limits(65_535, 64, 5.484), false);
        assert_eq!((p.mpdus, p.duration), (1, SimDuration::from_us(228)));
        // The first MPDU is always taken even if it alone exceeds the duration cap.
        let p = plan(std::iter::once(1538), &tx, Band::Ghz5, AirtimeOptions::STANDARD, &limits(65_535, 64, 0.1), true);
        assert_eq!(p.mpdus, 1);
    }
}
