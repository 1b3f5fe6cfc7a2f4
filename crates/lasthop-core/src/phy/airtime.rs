//! PPDU airtime (TXTIME), control-response rate and duration, aggregation limits.
//!
//! Source: `wifi-model.md` §2.2 (TXTIME), §1.3 (preambles, signal extension), §1.4 (control frames and
//! the control-response rate), §2.3 (PSDU and PPDU limits), §9 items 1–2 (VHT-SIG-B and short-GI
//! rounding defaults).
//!
//! ```text
//! N_sym  = ⌈(16 + 8·L + 6·N_ES) / N_DBPS⌉          (LDPC: no 6·N_ES tail term; L = 0: no data field)
//! TXTIME = T_preamble+header + N_sym·T_sym + T_signal_ext(2.4 GHz: 6 µs)
//! ```
//! With an HT/VHT short GI the data field is rounded up to a multiple of 4 µs (802.11 HT-MF/VHT TXTIME)
//! unless [`AirtimeOptions::sgi_round4`] is off (ns-3/ath9k behaviour). Everything is integer nanoseconds
//! and allocation-free: [`ppdu_duration`] is on the simulator's hot path.
//!
//! Approximations: LDPC uses the BCC symbol count without the tail (the standard's LDPC shortening/
//! puncturing may add one symbol); STBC, HE packet extension and HE-LTF sizes other than 2x/8 µs are not
//! modelled.

use super::ampdu_len::max_uniform_subframes;
use super::mcs::{Band, PhyStandard, TxVector, OFDM_RATES_MBPS};
use crate::time::SimDuration;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Where the standard and ns-3 disagree on TXTIME (spec §9 items 1 and 2).
/// TOML: `airtime = { sgi_round4 = true, ns3_compat_vht_sigb = false }` (both optional).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct AirtimeOptions {
    /// Round an HT/VHT short-GI data field up to a multiple of 4 µs (standard; default on).
    pub sgi_round4: bool,
    /// Omit VHT-SIG-B from VHT SU preambles, as ns-3 does (default off: standard, 40 µs for 1 SS).
    pub ns3_compat_vht_sigb: bool,
}

impl AirtimeOptions {
    /// The 802.11 TXTIME (the default).
    pub const STANDARD: AirtimeOptions = AirtimeOptions {
        sgi_round4: true,
        ns3_compat_vht_sigb: false,
    };
    /// ns-3's `WifiPhy::CalculateTxDuration`.
    pub const NS3: AirtimeOptions = AirtimeOptions {
        sgi_round4: false,
        ns3_compat_vht_sigb: true,
    };
}

impl Default for AirtimeOptions {
    fn default() -> Self {
        AirtimeOptions::STANDARD
    }
}

/// Signal extension of OFDM-family PPDUs in the band, in ns.
#[inline]
pub const fn signal_extension_ns(band: Band) -> u64 {
    match band {
        Band::Ghz2_4 => 6_000,
        Band::Ghz5 => 0,
    }
}

/// Tail bits: 6 per BCC encoder, none with LDPC.
#[inline]
fn tail_bits(tx: &TxVector) -> u64 {
    if tx.ldpc {
        0
    } else {
        6 * tx.n_es() as u64
    }
}

/// N_sym: OFDM symbols in the data field for a PSDU of `psdu_len` bytes (0 for an empty PSDU).
#[inline]
pub fn data_symbols(tx: &TxVector, psdu_len: u32) -> u64 {
    if psdu_len == 0 {
        return 0;
    }
    let bits = 16 + 8 * psdu_len as u64 + tail_bits(tx);
    bits.div_ceil(tx.n_dbps() as u64)
}

/// TXTIME of a PPDU carrying `psdu_len` bytes, with the standard VHT preamble (VHT-SIG-B included).
/// `sgi_round4` selects the standard short-GI rounding (see [`AirtimeOptions`]).
#[inline]
pub fn ppdu_duration(tx: &TxVector, psdu_len: u32, band: Band, sgi_round4: bool) -> SimDuration {
    ppdu_duration_with(
        tx,
        psdu_len,
        band,
        AirtimeOptions {
            sgi_round4,
            ns3_compat_vht_sigb: false,
        },
    )
}

/// TXTIME of a PPDU carrying `psdu_len` bytes (a single MPDU, or a whole A-MPDU as computed by
/// [`ampdu_psdu_len`](super::ampdu_len::ampdu_psdu_len)).
#[inline]
pub fn ppdu_duration_with(
    tx: &TxVector,
    psdu_len: u32,
    band: Band,
    opts: AirtimeOptions,
) -> SimDuration {
    debug_assert!(tx.validate().is_ok(), "invalid TxVector {tx}");
    let mut data_ns = data_symbols(tx, psdu_len) * tx.symbol_duration_ns();
    if opts.sgi_round4 && tx.is_short_gi() {
        data_ns = data_ns.next_multiple_of(4_000);
    }
    let ns = tx.preamble_header_ns(opts.ns3_compat_vht_sigb) + data_ns + signal_extension_ns(band);
    SimDuration::from_ns(ns)
}

/// aPPDUMaxTime: 5.484 ms for HT-MF, VHT and HE. Non-HT PPDUs have no duration limit of their own
/// (they are bounded by [`max_psdu_len`] = 4095 B instead, which at 6 Mb/s lasts exactly 5.484 ms in
/// 5 GHz): `SimDuration::MAX`.
pub const fn max_ppdu_duration(standard: PhyStandard) -> SimDuration {
    match standard {
        PhyStandard::Ofdm => SimDuration::MAX,
        _ => SimDuration::from_us(5_484),
    }
}

/// Largest PSDU in bytes: 4095 (non-HT, the L-SIG LENGTH field), 65 535 (HT), 4 692 480 (VHT),
/// 6 500 631 (HE). Spec §2.3.
pub const fn max_psdu_len(standard: PhyStandard) -> u32 {
    match standard {
        PhyStandard::Ofdm => 4_095,
        PhyStandard::Ht => 65_535,
        PhyStandard::Vht => 4_692_480,
        PhyStandard::He => 6_500_631,
    }
}

/// Largest PSDU length (bytes) whose PPDU lasts at most `max_duration`; 0 if not even one byte fits.
/// Not capped by [`max_psdu_len`]. With `max_duration` = 4096 µs and HT this is ath9k's
/// `ath_max_framelen` (spec §2.3).
pub fn max_psdu_len_within(
    tx: &TxVector,
    max_duration: SimDuration,
    band: Band,
    opts: AirtimeOptions,
) -> u32 {
    let fixed = tx.preamble_header_ns(opts.ns3_compat_vht_sigb) + signal_extension_ns(band);
    let Some(mut avail) = max_duration.as_ns().checked_sub(fixed) else {
        return 0;
    };
    if opts.sgi_round4 && tx.is_short_gi() {
        avail -= avail % 4_000;
    }
    let n_sym = (avail / tx.symbol_duration_ns()) as u128;
    let bits = n_sym * tx.n_dbps() as u128;
    let overhead = 16 + tail_bits(tx) as u128;
    (bits.saturating_sub(overhead) / 8).min(u32::MAX as u128) as u32
}

/// How many MPDUs of `mpdu_len` bytes fit in one A-MPDU without exceeding `max_bytes` (and
/// [`max_psdu_len`]) or a PPDU duration of `max_duration`. Every subframe is delimited, so `1` means a
/// single-MPDU A-MPDU of `mpdu_len + 4` bytes. Combine with the BlockAck window and any driver cap
/// outside.
pub fn max_mpdus_within(
    tx: &TxVector,
    mpdu_len: u32,
    max_bytes: u32,
    max_duration: SimDuration,
    band: Band,
    opts: AirtimeOptions,
) -> u32 {
    let by_time = max_psdu_len_within(tx, max_duration, band, opts);
    let cap = max_bytes.min(max_psdu_len(tx.standard)).min(by_time);
    max_uniform_subframes(mpdu_len, cap)
}

/// ACK frame length (bytes, incl. FCS).
pub const ACK_LEN: u32 = 14;
/// CTS frame length.
pub const CTS_LEN: u32 = 14;
/// RTS frame length.
pub const RTS_LEN: u32 = 20;
/// Compressed BlockAckReq length.
pub const BLOCK_ACK_REQ_LEN: u32 = 24;

/// BlockAck variant, by bitmap size.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum BlockAckBitmap {
    /// Compressed, 64-bit bitmap (HT/VHT, HE with a window ≤ 64): 32 bytes.
    #[default]
    Compressed64,
    /// Compressed, 256-bit bitmap (HE, window 256): 56 bytes.
    Compressed256,
}

impl BlockAckBitmap {
    /// Frame length in bytes, incl. FCS.
    pub const fn frame_len(self) -> u32 {
        match self {
            BlockAckBitmap::Compressed64 => 32,
            BlockAckBitmap::Compressed256 => 56,
        }
    }
}

/// The mandatory 802.11a/g OFDM rates, used when no basic rate qualifies.
pub const MANDATORY_OFDM_RATES_MBPS: [u32; 3] = [6, 12, 24];

/// TxVector of the control response (ACK, CTS, BlockAck) to a frame sent with `data_tx`: non-HT OFDM at
/// the highest rate of `basic_rates_mbps` that is ≤ the eliciting frame's non-HT reference rate, or if
/// none is, the highest mandatory rate (6/12/24) ≤ it (ns-3 `GetControlAnswerMode`). Entries that are
/// not OFDM rates (e.g. DSSS 1/2/11) are ignored: DSSS responses are not modelled. A non-HT duplicate
/// response on a wider channel lasts as long as the 20 MHz one, so the width is always 20 MHz.
pub fn control_response_vector(data_tx: &TxVector, basic_rates_mbps: &[u32]) -> TxVector {
    let reference = (data_tx.non_ht_reference_rate().bps() / 1_000_000) as u32;
    let highest_le = |rates: &mut dyn Iterator<Item = u32>| {
        rates
            .filter(|r| OFDM_RATES_MBPS.contains(r) && *r <= reference)
            .max()
    };
    let rate = highest_le(&mut basic_rates_mbps.iter().copied())
        .or_else(|| highest_le(&mut MANDATORY_OFDM_RATES_MBPS.iter().copied()))
        .unwrap_or(6);
    TxVector::ofdm_mbps(rate).expect("an 802.11a rate")
}

/// Duration of a control response of `frame_len` bytes to a frame sent with `data_tx`.
pub fn response_duration(
    data_tx: &TxVector,
    basic_rates_mbps: &[u32],
    band: Band,
    frame_len: u32,
) -> SimDuration {
    ppdu_duration(
        &control_response_vector(data_tx, basic_rates_mbps),
        frame_len,
        band,
        true,
    )
}

/// Duration of the ACK to a frame sent with `data_tx`.
pub fn ack_duration(data_tx: &TxVector, basic_rates_mbps: &[u32], band: Band) -> SimDuration {
    response_duration(data_tx, basic_rates_mbps, band, ACK_LEN)
}

/// Duration of the BlockAck to an A-MPDU sent with `data_tx`.
pub fn block_ack_duration(
    data_tx: &TxVector,
    basic_rates_mbps: &[u32],
    band: Band,
    bitmap: BlockAckBitmap,
) -> SimDuration {
    response_duration(data_tx, basic_rates_mbps, band, bitmap.frame_len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::phy::mcs::{ChannelWidth::*, GuardInterval::*};

    #[test]
    fn empty_psdu_is_preamble_only() {
        let tx = TxVector::ht(7, Mhz20, Ns800).unwrap();
        assert_eq!(
            ppdu_duration(&tx, 0, Band::Ghz5, true),
            SimDuration::from_us(36)
        );
        assert_eq!(
            ppdu_duration(&tx, 0, Band::Ghz2_4, true),
            SimDuration::from_us(42)
        );
    }

    #[test]
    fn ldpc_drops_the_tail() {
        // HT20 MCS0 (N_DBPS 26), 11 bytes: 16 + 88 = 104 bits → 4 symbols with LDPC, 110 → 5 with BCC.
        let bcc = TxVector::ht(0, Mhz20, Ns800).unwrap();
        let ldpc = TxVector { ldpc: true, ..bcc };
        assert_eq!(data_symbols(&bcc, 11), 5);
        assert_eq!(data_symbols(&ldpc, 11), 4);
    }

    #[test]
    fn max_ppdu_and_psdu() {
        assert_eq!(
            max_ppdu_duration(PhyStandard::Ht),
            SimDuration::from_us(5_484)
        );
        assert_eq!(
            max_ppdu_duration(PhyStandard::He),
            SimDuration::from_us(5_484)
        );
        assert_eq!(max_ppdu_duration(PhyStandard::Ofdm), SimDuration::MAX);
        // The L-SIG bound: 4095 B at 6 Mb/s lasts exactly aPPDUMaxTime in 5 GHz.
        let six = TxVector::ofdm_mbps(6).unwrap();
        assert_eq!(
            ppdu_duration(&six, max_psdu_len(PhyStandard::Ofdm), Band::Ghz5, true),
            SimDuration::from_us(5_484)
        );
        assert_eq!(max_psdu_len(PhyStandard::Vht), 4_692_480);
    }

    #[test]
    fn options_serde() {
        let o: AirtimeOptions = toml::from_str("sgi_round4 = false").unwrap();
        assert_eq!(
            o,
            AirtimeOptions {
                sgi_round4: false,
                ns3_compat_vht_sigb: false
            }
        );
        assert_eq!(AirtimeOptions::default(), AirtimeOptions::STANDARD);
        assert!(toml::from_str::<AirtimeOptions>("sgi_round = false").is_err());
    }

    #[test]
    fn max_psdu_len_within_is_tight() {
        let opts = [AirtimeOptions::STANDARD, AirtimeOptions::NS3];
        for standard in [
            PhyStandard::Ofdm,
            PhyStandard::Ht,
            PhyStandard::Vht,
            PhyStandard::He,
        ] {
            for (i, tx) in crate::phy::mcs::all_valid_txvectors(standard)
                .iter()
                .enumerate()
                .step_by(7)
            {
                let o = opts[i % 2];
                let band = if i % 3 == 0 { Band::Ghz2_4 } else { Band::Ghz5 };
                for max_us in [30u64, 100, 1_000, 4_096, 5_484] {
                    let max = SimDuration::from_us(max_us);
                    let l = max_psdu_len_within(tx, max, band, o);
                    if l > 0 {
                        assert!(ppdu_duration_with(tx, l, band, o) <= max, "{tx} {l}");
                    }
                    assert!(ppdu_duration_with(tx, l + 1, band, o) > max, "{tx} {l}");
                }
            }
        }
    }
}
