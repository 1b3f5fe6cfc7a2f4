//! Frame error model: packet error rate as a function of SNR, MCS and length.
//!
//! Source: `wifi-model.md` §4.1 (ns-3 table-based reference thresholds, NIST formulas, noise floor,
//! multi-stream and diversity rules), §4.2 (closed-form logistic fit), §4.3 (preamble detection,
//! per-chunk success), §9 item 15.
//!
//! **[`ErrorModel::Logistic`] (default)** is spec §4.2's closed form, fitted to ns-3's
//! `TableBasedErrorRateModel` at 1500 B (within 0.35 dB between PER 90 % and 1 %):
//! ```text
//! PER_1458(γ) = 1 / (1 + exp(k_m·(γ − s50_m)))        PER(L) = 1 − (1 − PER_1458)^(L/1458)
//! ```
//! Choices where the spec is silent (all in [`logistic_curve`] and [`chunk_success_prob`]):
//! * **Curve per TxVector.** HT/VHT/HE MCS m use curve m (HT per-stream MCS = index mod 8). Non-HT rates
//!   map 6→0, 12→1, 18→2, 24→3, 36→4, 48→5, 54→6. 9 Mb/s (BPSK 3/4) has its own curve with
//!   k = 3.45 (between MCS0's 3.5 and MCS1's 3.4) and s50 = 2.35 dB, which puts PER 10 % for 1500 B at
//!   the spec's 3.0 dB. HE MCS 10/11 (no table in ns-3's BCC set, YANS fallback) use k = 2.5 (MCS9's
//!   slope) and s50 = 31.5/33.4 dB, which put PER 10 % for 1500 B at the spec's YANS values 32.4/34.3 dB
//!   (s50 = PER10 − ln(9.273)/k, where 9.273 is the odds of PER_1458 at PER_1500 = 10 %).
//! * **Coding.** The fit is to the BCC tables; LDPC uses the same curves (its 1–2 dB coding gain is not
//!   modelled, which is conservative).
//! * **Multiple streams.** The bit count is divided by N_SS (each stream sees the SISO curve).
//! * **Short frames (< 400 B).** ns-3 switches to a separate 32-byte table below 400 B; we only have the
//!   1458-B fit, and pure length scaling makes tiny frames (ACKs) fail far too rarely because the
//!   logistic tail is shallow. Instead, below 400 B the 400-B curve is used, shifted toward lower SNR by
//!   0.25 dB per halving of the length: PER(γ, L) = PER(γ + 0.25·log2(400/L), 400). This reproduces the
//!   spec's "200 B → −0.6…−0.9 dB, 64 B → −1.0…−1.5 dB" at PER 10 %, is continuous at 400 B, and keeps
//!   PER monotone in length. Lengths below 1 B are treated as 1 B for the shift.
//!
//! **[`ErrorModel::Nist`]** is ns-3's `NistErrorRateModel` (uncoded BER, then a union bound on the
//! convolutional code's first-event error, chunk success = (1 − P_e)^bits), ~3–4 dB more pessimistic.
//!
//! The SNR argument is the SINR over the whole channel width in dB, including any implementation loss or
//! diversity gain the caller applies ([`diversity_gain_db`]). Everything is pure and deterministic; the
//! caller draws the outcome.

use super::mcs::{ChannelWidth, CodeRate, Modulation, PhyStandard, TxVector};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Which PER curves to use. TOML: `error_model = "logistic" | "nist"`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ErrorModel {
    /// Spec §4.2 closed form fitted to ns-3's table-based model (default).
    #[default]
    Logistic,
    /// ns-3 `NistErrorRateModel`.
    Nist,
}

/// Reference length of the logistic fit, bytes.
pub const PER_REFERENCE_LEN: u32 = 1458;
/// Below this length the short-frame SNR shift applies (ns-3 `SizeThreshold`).
pub const SHORT_FRAME_THRESHOLD: u32 = 400;
/// SNR credit per halving of the length below [`SHORT_FRAME_THRESHOLD`], dB.
pub const SHORT_FRAME_SHIFT_DB_PER_HALVING: f64 = 0.25;
/// ns-3 `ThresholdPreambleDetectionModel` defaults.
pub const PREAMBLE_DETECTION_MIN_SNR_DB: f64 = 4.0;
pub const PREAMBLE_DETECTION_MIN_RSSI_DBM: f64 = -82.0;
/// ns-3 `WifiPhy::RxNoiseFigure` default, dB.
pub const DEFAULT_NOISE_FIGURE_DB: f64 = 7.0;

/// Logistic PER curve at [`PER_REFERENCE_LEN`]: PER = 1 / (1 + exp(k·(γ − s50))).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LogisticCurve {
    /// SNR at which PER_1458 = 50 %, dB.
    pub s50_db: f64,
    /// Steepness, 1/dB.
    pub k_per_db: f64,
}

impl LogisticCurve {
    /// Success probability of a 1458-byte frame.
    #[inline]
    pub fn success_ref(&self, snr_db: f64) -> f64 {
        1.0 / (1.0 + (-self.k_per_db * (snr_db - self.s50_db)).exp())
    }
}

const fn curve(s50_db: f64, k_per_db: f64) -> LogisticCurve {
    LogisticCurve { s50_db, k_per_db }
}

/// MCS 0..=11 (spec §4.2 for 0..=9; 10/11 derived from the YANS thresholds, see module doc).
const MCS_CURVES: [LogisticCurve; 12] = [
    curve(0.3, 3.5),
    curve(3.3, 3.4),
    curve(5.8, 3.4),
    curve(8.9, 2.8),
    curve(12.0, 2.8),
    curve(16.2, 2.7),
    curve(17.5, 2.6),
    curve(18.8, 2.6),
    curve(22.8, 2.3),
    curve(24.3, 2.5),
    curve(31.5, 2.5),
    curve(33.4, 2.5),
];

/// Non-HT 9 Mb/s (BPSK 3/4).
const OFDM_9_CURVE: LogisticCurve = curve(2.35, 3.45);

/// Non-HT rate index (6, 9, 12, 18, 24, 36, 48, 54 Mb/s) → MCS curve; `None` = 9 Mb/s.
const OFDM_CURVE_INDEX: [Option<usize>; 8] = [
    Some(0),
    None,
    Some(1),
    Some(2),
    Some(3),
    Some(4),
    Some(5),
    Some(6),
];

/// The logistic curve used for `tx` (see module doc for the mapping).
pub fn logistic_curve(tx: &TxVector) -> LogisticCurve {
    match tx.standard {
        PhyStandard::Ofdm => match OFDM_CURVE_INDEX[tx.mcs as usize] {
            Some(m) => MCS_CURVES[m],
            None => OFDM_9_CURVE,
        },
        _ => MCS_CURVES[tx.mcs as usize],
    }
}

/// Success probability of a chunk of `bits` data bits (all streams together) received at `snr_db`.
/// For an A-MPDU under time-varying interference, multiply the chunks of each MPDU (spec §4.3).
pub fn chunk_success_prob(model: ErrorModel, snr_db: f64, tx: &TxVector, bits: f64) -> f64 {
    if snr_db.is_nan() {
        return 0.0;
    }
    if bits <= 0.0 {
        return 1.0;
    }
    let bits_per_stream = bits / tx.nss.max(1) as f64;
    let p = match model {
        ErrorModel::Logistic => logistic_success(logistic_curve(tx), snr_db, bits_per_stream / 8.0),
        ErrorModel::Nist => nist_success(tx.modulation(), tx.code_rate(), snr_db, bits_per_stream),
    };
    p.clamp(0.0, 1.0)
}

/// Success probability of one MPDU (or any PSDU) of `len_bytes` at `snr_db`.
pub fn mpdu_success_prob(model: ErrorModel, snr_db: f64, tx: &TxVector, len_bytes: u32) -> f64 {
    chunk_success_prob(model, snr_db, tx, 8.0 * len_bytes as f64)
}

/// Packet error rate, `1 − mpdu_success_prob`.
pub fn mpdu_error_prob(model: ErrorModel, snr_db: f64, tx: &TxVector, len_bytes: u32) -> f64 {
    1.0 - mpdu_success_prob(model, snr_db, tx, len_bytes)
}

fn logistic_success(curve: LogisticCurve, snr_db: f64, bytes: f64) -> f64 {
    let threshold = SHORT_FRAME_THRESHOLD as f64;
    let (snr_db, bytes) = if bytes < threshold {
        let shift = SHORT_FRAME_SHIFT_DB_PER_HALVING * (threshold / bytes.max(1.0)).log2();
        (snr_db + shift, threshold)
    } else {
        (snr_db, bytes)
    };
    curve
        .success_ref(snr_db)
        .powf(bytes / PER_REFERENCE_LEN as f64)
}

/// Success probability of the PHY header (spec §4.3 step 1) on the BPSK 1/2 curve: L-SIG (24 bits),
/// plus HT-SIG / VHT-SIG-A (48 bits) or RL-SIG + HE-SIG-A (24 + 52 bits), as one chunk.
pub fn phy_header_success_prob(model: ErrorModel, snr_db: f64, tx: &TxVector) -> f64 {
    let bits = match tx.standard {
        PhyStandard::Ofdm => 24.0,
        PhyStandard::Ht | PhyStandard::Vht => 72.0,
        PhyStandard::He => 100.0,
    };
    let header = TxVector::ofdm_mbps(6).expect("6 Mb/s");
    chunk_success_prob(model, snr_db, &header, bits)
}

/// Parameters of threshold preamble detection (ns-3 `ThresholdPreambleDetectionModel`).
/// TOML: `preamble_detection = { min_snr_db = 4.0, min_rssi_dbm = -82.0 }`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct PreambleDetection {
    pub min_snr_db: f64,
    pub min_rssi_dbm: f64,
}

impl Default for PreambleDetection {
    fn default() -> Self {
        PreambleDetection {
            min_snr_db: PREAMBLE_DETECTION_MIN_SNR_DB,
            min_rssi_dbm: PREAMBLE_DETECTION_MIN_RSSI_DBM,
        }
    }
}

impl PreambleDetection {
    /// True if a PPDU arriving with this SNR and RSSI is detected (the receiver synchronises to it).
    pub fn detects(&self, snr_db: f64, rssi_dbm: f64) -> bool {
        snr_db >= self.min_snr_db && rssi_dbm >= self.min_rssi_dbm
    }
}

/// True if the preamble is detected at `snr_db`, with the default 4 dB threshold (RSSI not checked).
pub fn preamble_detected(snr_db: f64) -> bool {
    snr_db >= PREAMBLE_DETECTION_MIN_SNR_DB
}

/// Boltzmann constant as used by ns-3 (`interference-helper.cc`), J/K.
const BOLTZMANN: f64 = 1.3803e-23;

/// Thermal noise plus receiver noise figure over the channel width: 10·log10(k·290 K·B) + NF, in dBm.
/// −94 dBm at 20 MHz with NF 7 dB; −91 at 40 MHz; −88 at 80 MHz.
pub fn noise_floor_dbm(width: ChannelWidth, noise_figure_db: f64) -> f64 {
    let watts = BOLTZMANN * 290.0 * width.mhz() as f64 * 1e6;
    10.0 * watts.log10() + 30.0 + noise_figure_db
}

/// Receive-diversity gain for AWGN models: 10·log10(N_rx / N_SS) when N_rx > N_SS, else 0 dB.
pub fn diversity_gain_db(n_rx: u8, nss: u8) -> f64 {
    if n_rx > nss && nss > 0 {
        10.0 * (n_rx as f64 / nss as f64).log10()
    } else {
        0.0
    }
}

// ---------------------------------------------------------------------------------------------------
// NIST model (ns-3 nist-error-rate-model.cc)

fn nist_success(modulation: Modulation, rate: CodeRate, snr_db: f64, bits: f64) -> f64 {
    let snr = 10f64.powf(snr_db / 10.0);
    let ber = match modulation {
        Modulation::Bpsk => 0.5 * erfc(snr.sqrt()),
        Modulation::Qpsk => 0.5 * erfc((snr / 2.0).sqrt()),
        m => {
            let size = m.constellation_size();
            let z = (snr / ((2 * (size - 1)) / 3) as f64).sqrt();
            let sqrt_m = (size as f64).sqrt();
            (sqrt_m - 1.0) / (sqrt_m * sqrt_m.log2()) * erfc(z)
        }
    };
    if ber == 0.0 {
        return 1.0;
    }
    let pe = nist_first_event_error(ber, rate).min(1.0);
    (1.0 - pe).powf(bits)
}

#[rustfmt::skip]
/// Union bound on the first-event error probability of the punctured K=7 code, with D = √(4p(1−p)).
fn nist_first_event_error(p: f64, rate: CodeRate) -> f64 {
    let d = (4.0 * p * (1.0 - p)).sqrt();
    let (scale, spectrum): (f64, &[(f64, i32)]) = match rate {
        CodeRate::R1_2 => (0.5, &[
            (36.0, 10), (211.0, 12), (1404.0, 14), (11633.0, 16), (77433.0, 18),
            (502690.0, 20), (3322763.0, 22), (21292910.0, 24), (134365911.0, 26),
        ]),
        CodeRate::R2_3 => (1.0 / 4.0, &[
            (3.0, 6), (70.0, 7), (285.0, 8), (1276.0, 9), (6160.0, 10),
            (27128.0, 11), (117019.0, 12), (498860.0, 13), (2103891.0, 14), (8784123.0, 15),
        ]),
        CodeRate::R3_4 => (1.0 / 6.0, &[
            (42.0, 5), (201.0, 6), (1492.0, 7), (10469.0, 8), (62935.0, 9),
            (379644.0, 10), (2253373.0, 11), (13073811.0, 12), (75152755.0, 13), (428005675.0, 14),
        ]),
        CodeRate::R5_6 => (1.0 / 10.0, &[
            (92.0, 4), (528.0, 5), (8694.0, 6), (79453.0, 7), (792114.0, 8),
            (7375573.0, 9), (67884974.0, 10), (610875423.0, 11), (5427275376.0, 12), (47664215639.0, 13),
        ]),
    };
    scale * spectrum.iter().map(|&(a, e)| a * d.powi(e)).sum::<f64>()
}

/// Complementary error function (Numerical Recipes `erfcc`, fractional error < 1.2e-7 everywhere).
pub fn erfc(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let poly = -z * z - 1.265_512_23
        + t * (1.000_023_68
            + t * (0.374_091_96
                + t * (0.096_784_18
                    + t * (-0.186_288_06
                        + t * (0.278_868_07
                            + t * (-1.135_203_98
                                + t * (1.488_515_87 + t * (-0.822_152_23 + t * 0.170_872_77))))))));
    let r = t * poly.exp();
    if x >= 0.0 {
        r
    } else {
        2.0 - r
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::phy::mcs::GuardInterval::*;
    use ChannelWidth::*;

    #[test]
    fn erfc_accuracy() {
        let known = [
            (0.0, 1.0),
            (0.5, 0.479_500_122_186_953_5),
            (1.0, 0.157_299_207_050_285_1),
            (2.0, 0.004_677_734_981_047_266),
            (3.0, 2.209_049_699_858_544e-5),
            (4.0, 1.541_725_790_028_002e-8),
            (-1.0, 1.842_700_792_949_715),
        ];
        for (x, want) in known {
            let got = erfc(x);
            assert!(
                ((got - want) / want).abs() < 2e-7,
                "erfc({x}) = {got}, want {want}"
            );
        }
    }

    #[test]
    fn noise_floor() {
        // Spec §4.1 rounds to whole dB: −93.99, −90.98, −87.95 dBm.
        assert!((noise_floor_dbm(Mhz20, DEFAULT_NOISE_FIGURE_DB) + 94.0).abs() < 0.06);
        assert!((noise_floor_dbm(Mhz40, 7.0) + 91.0).abs() < 0.06);
        assert!((noise_floor_dbm(Mhz80, 7.0) + 88.0).abs() < 0.06);
        assert!((noise_floor_dbm(Mhz40, 7.0) - noise_floor_dbm(Mhz20, 7.0) - 3.0103).abs() < 1e-3);
    }

    #[test]
    fn diversity() {
        assert!((diversity_gain_db(2, 1) - 3.0103).abs() < 1e-3);
        assert_eq!(diversity_gain_db(1, 1), 0.0);
        assert_eq!(diversity_gain_db(1, 2), 0.0);
    }

    #[test]
    fn preamble_detection() {
        assert!(preamble_detected(4.0) && !preamble_detected(3.99));
        let d = PreambleDetection::default();
        assert!(d.detects(10.0, -80.0) && !d.detects(10.0, -83.0) && !d.detects(3.0, -50.0));
    }

    #[test]
    fn degenerate_inputs() {
        let tx = TxVector::ht(7, Mhz20, Ns800).unwrap();
        for model in [ErrorModel::Logistic, ErrorModel::Nist] {
            assert_eq!(mpdu_success_prob(model, f64::NAN, &tx, 1500), 0.0);
            assert_eq!(mpdu_success_prob(model, 10.0, &tx, 0), 1.0);
            assert!(mpdu_success_prob(model, 200.0, &tx, 1500) > 0.999_999);
            assert!(mpdu_success_prob(model, -50.0, &tx, 1500) < 1e-9);
            assert_eq!(mpdu_success_prob(model, f64::INFINITY, &tx, 1500), 1.0);
            assert_eq!(mpdu_success_prob(model, f64::NEG_INFINITY, &tx, 1500), 0.0);
        }
    }

    #[test]
    fn header_is_robust_above_detection_threshold() {
        for standard_tx in [
            TxVector::ofdm_mbps(54).unwrap(),
            TxVector::ht(7, Mhz20, Ns800).unwrap(),
            TxVector::he(11, 1, Mhz80, Ns800).unwrap(),
        ] {
            let p = phy_header_success_prob(
                ErrorModel::Logistic,
                PREAMBLE_DETECTION_MIN_SNR_DB,
                &standard_tx,
            );
            assert!(p > 0.999, "{standard_tx}: {p}");
            assert!(phy_header_success_prob(ErrorModel::Logistic, -5.0, &standard_tx) < 0.5);
        }
    }

    #[test]
    fn model_serde() {
        #[derive(Deserialize)]
        struct C {
            error_model: ErrorModel,
        }
        assert_eq!(
            toml::from_str::<C>("error_model = \"nist\"")
                .unwrap()
                .error_model,
            ErrorModel::Nist
        );
        assert_eq!(ErrorModel::default(), ErrorModel::Logistic);
    }
}
