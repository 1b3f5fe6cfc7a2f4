//! Inter-frame spaces, EIFS and the ACK timeout of the OFDM-family PHYs.
//!
//! Source: `wifi-model.md` §1.1 (slot, SIFS, DIFS, PIFS, AIFS, EIFS, signal extension), §1.4 (ACK/BlockAck
//! timeout), §9 item 11 (ACK-timeout default).
//!
//! * 5 GHz: slot 9 µs, SIFS 16 µs, no signal extension, ACK timeout 45 µs (= ns-3's SIFS + slot + 20 µs).
//! * 2.4 GHz (ERP/HT/HE): SIFS 10 µs, 6 µs signal extension, slot 9 µs ("short slot", only ERP stations
//!   in the BSS — the default here, as in any modern BSS) or 20 µs ("long slot", 802.11b present; ns-3's
//!   default for 11g). ACK timeout 64 µs: the ath9k register value the spec adopts as the 2.4 GHz default.
//! * EIFS: [`EifsRule::EstimatedAck`] (default) is ns-3's `GetEstimatedAckTxTime` rule: the ACK time is
//!   estimated from the modulation of the PPDU that was received in error. [`EifsRule::Classic`] is the
//!   802.11 DCF rule with an ACK at the lowest mandatory rate: 6 Mb/s OFDM (44 µs) in 5 GHz, and DSSS
//!   1 Mb/s with long preamble (304 µs) in 2.4 GHz, where DSSS rates are mandatory for ERP stations.
//!
//! `eifs_no_difs` follows ns-3's split: the channel-access code waits `eifs_no_difs` after the erroneous
//! reception ends and then the normal AIFS, so EIFS = `eifs_no_difs` + AIFS\[AC\]
//! (= SIFS + ACKTxTime + DIFS for DCF).

use super::mcs::{Band, Modulation, PhyStandard, TxVector};
use crate::time::SimDuration;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Slot-time option of the 2.4 GHz band. TOML: `slot = "short" | "long"`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SlotTime {
    /// 9 µs: only ERP/HT/HE stations in the BSS.
    #[default]
    Short,
    /// 20 µs: DSSS/802.11b stations present.
    Long,
}

/// How the ACK time inside EIFS is obtained. TOML: `eifs = "estimated_ack" | "classic"`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum EifsRule {
    /// ns-3: ACK time estimated from the modulation of the erroneous PPDU (802.11-2016 Table 10-5).
    #[default]
    EstimatedAck,
    /// 802.11 DCF: ACK at the lowest mandatory PHY rate of the band.
    Classic,
}

/// Timing constants of one band's OFDM-family PHY.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PhyTimings {
    pub band: Band,
    pub slot: SimDuration,
    pub sifs: SimDuration,
    /// Appended to every OFDM-family PPDU in 2.4 GHz (part of its airtime).
    pub signal_extension: SimDuration,
    /// Time after the end of a PPDU at which a missing ACK/BlockAck is declared.
    pub ack_timeout: SimDuration,
}

impl PhyTimings {
    /// 802.11a/n/ac/ax in 5 GHz, 20 MHz channel spacing.
    pub const OFDM_5GHZ: PhyTimings = PhyTimings {
        band: Band::Ghz5,
        slot: SimDuration::from_us(9),
        sifs: SimDuration::from_us(16),
        signal_extension: SimDuration::ZERO,
        ack_timeout: SimDuration::from_us(45),
    };
    /// 802.11g/n/ax in 2.4 GHz with the short (9 µs) slot.
    pub const ERP_2_4GHZ_SHORT_SLOT: PhyTimings = PhyTimings {
        band: Band::Ghz2_4,
        slot: SimDuration::from_us(9),
        sifs: SimDuration::from_us(10),
        signal_extension: SimDuration::from_us(6),
        ack_timeout: SimDuration::from_us(64),
    };
    /// 802.11g/n in 2.4 GHz with the long (20 µs) slot (802.11b stations present).
    pub const ERP_2_4GHZ_LONG_SLOT: PhyTimings = PhyTimings {
        slot: SimDuration::from_us(20),
        ..PhyTimings::ERP_2_4GHZ_SHORT_SLOT
    };

    /// The default timings of a band (short slot in 2.4 GHz).
    pub const fn for_band(band: Band) -> PhyTimings {
        PhyTimings::for_band_slot(band, SlotTime::Short)
    }

    /// Timings of a band with an explicit slot option; `slot` is ignored in 5 GHz (always 9 µs).
    pub const fn for_band_slot(band: Band, slot: SlotTime) -> PhyTimings {
        match (band, slot) {
            (Band::Ghz5, _) => PhyTimings::OFDM_5GHZ,
            (Band::Ghz2_4, SlotTime::Short) => PhyTimings::ERP_2_4GHZ_SHORT_SLOT,
            (Band::Ghz2_4, SlotTime::Long) => PhyTimings::ERP_2_4GHZ_LONG_SLOT,
        }
    }

    /// DIFS = SIFS + 2·slot.
    pub fn difs(&self) -> SimDuration {
        self.aifs(2)
    }

    /// PIFS = SIFS + slot.
    pub fn pifs(&self) -> SimDuration {
        self.aifs(1)
    }

    /// AIFS[AC] = SIFS + AIFSN·slot.
    pub fn aifs(&self, aifsn: u8) -> SimDuration {
        self.sifs + self.slot * aifsn as u64
    }

    /// ns-3's ACK timeout: SIFS + slot + 20 µs (preamble + header of a non-HT response); 45 µs in 5 GHz.
    pub fn ns3_ack_timeout(&self) -> SimDuration {
        self.sifs + self.slot + SimDuration::from_us(20)
    }

    /// The part of EIFS that precedes the normal AIFS: SIFS + ACKTxTime (see module doc).
    /// `erroneous` is the TxVector of the PPDU that was received in error.
    pub fn eifs_no_difs(&self, rule: EifsRule, erroneous: &TxVector) -> SimDuration {
        let ack = match rule {
            EifsRule::EstimatedAck => estimated_ack_tx_time(erroneous),
            EifsRule::Classic => classic_ack_tx_time(self.band),
        };
        self.sifs + ack
    }

    /// Full EIFS for an EDCAF with `aifsn` (2 = DCF): `eifs_no_difs` + AIFS.
    pub fn eifs(&self, rule: EifsRule, erroneous: &TxVector, aifsn: u8) -> SimDuration {
        self.eifs_no_difs(rule, erroneous) + self.aifs(aifsn)
    }
}

/// ns-3 `GetEstimatedAckTxTime`: non-HT OFDM BPSK 44, QPSK 32, else 28 µs; HT/VHT/HE BPSK 68, QPSK 44,
/// else 32 µs. (The values do not include the 2.4 GHz signal extension, as in ns-3.)
pub fn estimated_ack_tx_time(erroneous: &TxVector) -> SimDuration {
    let non_ht = erroneous.standard == PhyStandard::Ofdm;
    let us = match (erroneous.modulation(), non_ht) {
        (Modulation::Bpsk, true) => 44,
        (Modulation::Qpsk, true) => 32,
        (_, true) => 28,
        (Modulation::Bpsk, false) => 68,
        (Modulation::Qpsk, false) => 44,
        (_, false) => 32,
    };
    SimDuration::from_us(us)
}

/// ACK time at the lowest mandatory rate of the band: 6 Mb/s OFDM in 5 GHz (44 µs); DSSS 1 Mb/s with
/// long preamble in 2.4 GHz (192 + 112 = 304 µs).
pub const fn classic_ack_tx_time(band: Band) -> SimDuration {
    match band {
        Band::Ghz5 => SimDuration::from_us(44),
        Band::Ghz2_4 => SimDuration::from_us(304),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::phy::mcs::{ChannelWidth::*, GuardInterval::*};

    fn us(d: SimDuration) -> u64 {
        assert_eq!(d.as_ns() % 1000, 0);
        d.as_ns() / 1000
    }

    #[test]
    fn spec_table_1_1() {
        let t5 = PhyTimings::for_band(Band::Ghz5);
        assert_eq!(
            [us(t5.slot), us(t5.sifs), us(t5.difs()), us(t5.pifs())],
            [9, 16, 34, 25]
        );
        let short = PhyTimings::for_band(Band::Ghz2_4);
        assert_eq!(
            [
                us(short.slot),
                us(short.sifs),
                us(short.difs()),
                us(short.pifs())
            ],
            [9, 10, 28, 19]
        );
        let long = PhyTimings::for_band_slot(Band::Ghz2_4, SlotTime::Long);
        assert_eq!(
            [
                us(long.slot),
                us(long.sifs),
                us(long.difs()),
                us(long.pifs())
            ],
            [20, 10, 50, 30]
        );
        assert_eq!(PhyTimings::for_band_slot(Band::Ghz5, SlotTime::Long), t5);
        assert_eq!(
            [us(t5.signal_extension), us(short.signal_extension)],
            [0, 6]
        );
    }

    #[test]
    fn aifs_per_access_category() {
        let t = PhyTimings::OFDM_5GHZ;
        // VO/VI AIFSN 2, BE 3, BK 7 (802.11 default EDCA table); hostapd AP VO/VI AIFSN 1.
        assert_eq!(
            [us(t.aifs(2)), us(t.aifs(3)), us(t.aifs(7)), us(t.aifs(1))],
            [34, 43, 79, 25]
        );
    }

    #[test]
    fn ack_timeouts() {
        assert_eq!(us(PhyTimings::OFDM_5GHZ.ack_timeout), 45);
        assert_eq!(us(PhyTimings::OFDM_5GHZ.ns3_ack_timeout()), 45);
        assert_eq!(us(PhyTimings::ERP_2_4GHZ_SHORT_SLOT.ack_timeout), 64);
        assert_eq!(us(PhyTimings::ERP_2_4GHZ_LONG_SLOT.ack_timeout), 64);
    }

    #[test]
    fn estimated_ack_times() {
        let est = |tx: TxVector| us(estimated_ack_tx_time(&tx));
        let ofdm: Vec<u64> = [6, 9, 12, 18, 24, 54]
            .iter()
            .map(|&r| est(TxVector::ofdm_mbps(r).unwrap()))
            .collect();
        assert_eq!(ofdm, [44, 44, 32, 32, 28, 28]);
        let ht: Vec<u64> = (0..8)
            .map(|m| est(TxVector::ht(m, Mhz20, Ns800).unwrap()))
            .collect();
        assert_eq!(ht, [68, 44, 44, 32, 32, 32, 32, 32]);
        assert_eq!(est(TxVector::vht(0, 2, Mhz80, Ns400).unwrap()), 68);
        assert_eq!(est(TxVector::he(11, 1, Mhz20, Ns800).unwrap()), 32);
    }

    #[test]
    fn eifs_values() {
        let t = PhyTimings::OFDM_5GHZ;
        let ht0 = TxVector::ht(0, Mhz20, Ns800).unwrap();
        let a54 = TxVector::ofdm_mbps(54).unwrap();
        // Classic 5 GHz DCF: 16 + 44 + 34 = 94 µs.
        assert_eq!(us(t.eifs(EifsRule::Classic, &a54, 2)), 94);
        // ns-3 rule after a 54 Mb/s error: eifsNoDifs = 16 + 28.
        assert_eq!(us(t.eifs_no_difs(EifsRule::EstimatedAck, &a54)), 44);
        assert_eq!(us(t.eifs(EifsRule::EstimatedAck, &ht0, 3)), 16 + 68 + 43);
        // 2.4 GHz with 802.11b present: 10 + 304 + 50 = 364 µs.
        let long = PhyTimings::ERP_2_4GHZ_LONG_SLOT;
        assert_eq!(us(long.eifs(EifsRule::Classic, &a54, 2)), 364);
        assert_eq!(EifsRule::default(), EifsRule::EstimatedAck);
    }
}
