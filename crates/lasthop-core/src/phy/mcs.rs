//! Modulation and coding: bands, channel widths, guard intervals, PHY standards and the [`TxVector`].
//!
//! Source: `wifi-model.md` §1.3 (symbols, preambles, N_ES), §2.1 (rate formula, MCS table, subcarrier
//! counts, VHT exclusions). Everything here is integer arithmetic on small lookup tables; nothing
//! allocates except [`all_valid_txvectors`].
//!
//! Choices where the spec is silent or where sources differ:
//! * **HE N_DBPS** is `⌊N_CBPS·R⌋` as in the 802.11ax rate tables. For the 980/1960-tone RUs at rate 5/6
//!   (MCS 9 and 11) N_CBPS·R is not an integer; ns-3 keeps the fraction, so the spec's computed table lists
//!   HE80 MCS11 0.8 µs GI as 600.5 Mb/s where the standard (and we) give 600.4 Mb/s. Airtime differs only
//!   when a PSDU ends within 2/3 of a bit per symbol of a symbol boundary.
//! * **Data rates** are `N_DBPS / T_sym` rounded *down* to whole bit/s (HT20 MCS7 short GI =
//!   72 222 222 b/s). Airtime never uses the rate; it uses N_DBPS and T_sym directly.
//! * **VHT validity** follows the standard's exclusions (802.11-2020 Tables 21-30…21-61): MCS 9 at 20 MHz
//!   unless N_SS ∈ {3, 6}; MCS 6 at 80 MHz with N_SS ∈ {3, 7}; MCS 9 at 80 MHz with N_SS = 6; MCS 9 at
//!   160 MHz with N_SS = 3. ns-3 only checks the first two rules.
//! * **VHT N_ES** is the smallest count ≥ ⌈N_DBPS/2160⌉ (ns-3's 540/600 Mb/s-per-encoder rule, which is the
//!   same for both GIs) that divides both N_DBPS and N_CBPS. This reproduces every entry of ns-3's exception
//!   map and also covers 160 MHz N_SS = 8 (MCS 5 → 8, MCS 8 → 12), which ns-3 lacks.
//! * **HE BCC** is only valid for ≤ 20 MHz, N_SS ≤ 4 and MCS ≤ 9 (802.11ax 27.3.12.5.1); otherwise LDPC is
//!   required. HE uses one BCC encoder. [`TxVector::he`] selects LDPC.
//! * Not modelled: DSSS/HR-DSSS (802.11b), HT-greenfield, HT MCS 32–76, STBC, MU PPDUs, HE ER-SU/TB, HE
//!   packet extension, 10/5 MHz OFDM.

use crate::time::SimDuration;
use crate::units::BitRate;
use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::fmt;

/// Errors from building or validating a [`TxVector`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PhyError {
    #[error("{standard} MCS {mcs} is out of range (valid: 0..={max})")]
    McsOutOfRange {
        standard: PhyStandard,
        mcs: u8,
        max: u8,
    },
    #[error("{standard} does not support {nss} spatial streams (valid: 1..={max})")]
    NssOutOfRange {
        standard: PhyStandard,
        nss: u8,
        max: u8,
    },
    #[error("{standard} does not support {width} channels")]
    WidthNotAllowed {
        standard: PhyStandard,
        width: ChannelWidth,
    },
    #[error("{standard} does not support a {gi} guard interval")]
    GiNotAllowed {
        standard: PhyStandard,
        gi: GuardInterval,
    },
    #[error(
        "VHT MCS {mcs} is not valid at {width} with {nss} spatial stream(s) \
         (802.11-2020 Tables 21-30 to 21-61)"
    )]
    VhtCombinationInvalid {
        mcs: u8,
        width: ChannelWidth,
        nss: u8,
    },
    #[error("non-HT OFDM has no LDPC coding")]
    LdpcNotAllowed,
    #[error(
        "HE BCC coding is limited to 20 MHz, at most 4 spatial streams and MCS <= 9 \
         (got {width}, {nss} stream(s), MCS {mcs}); use LDPC"
    )]
    HeBccNotAllowed {
        mcs: u8,
        width: ChannelWidth,
        nss: u8,
    },
    #[error("{0} Mb/s is not an 802.11a/g OFDM rate (6, 9, 12, 18, 24, 36, 48, 54)")]
    UnknownOfdmRate(u32),
    #[error("HT MCS index {0} is not modelled (valid: 0..=31)")]
    HtMcsIndexOutOfRange(u8),
    #[error("{standard} is not used in the {band} band")]
    BandNotAllowed { standard: PhyStandard, band: Band },
    #[error("a {width} channel does not fit in the {band} band")]
    WidthNotInBand { width: ChannelWidth, band: Band },
}

/// Frequency band. TOML: `band = "5ghz"` or `band = "2.4ghz"`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum Band {
    #[serde(rename = "2.4ghz")]
    Ghz2_4,
    #[serde(rename = "5ghz")]
    Ghz5,
}

impl fmt::Display for Band {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Band::Ghz2_4 => "2.4 GHz",
            Band::Ghz5 => "5 GHz",
        })
    }
}

/// PHY amendment of a PPDU (ns-3's modulation class). TOML: `standard = "ofdm" | "ht" | "vht" | "he"`.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum PhyStandard {
    /// Non-HT OFDM: 802.11a, and ERP-OFDM (802.11g) in 2.4 GHz.
    Ofdm,
    /// 802.11n HT-mixed format.
    Ht,
    /// 802.11ac VHT SU.
    Vht,
    /// 802.11ax HE SU.
    He,
}

impl fmt::Display for PhyStandard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            PhyStandard::Ofdm => "non-HT OFDM",
            PhyStandard::Ht => "HT",
            PhyStandard::Vht => "VHT",
            PhyStandard::He => "HE",
        })
    }
}

/// Channel width. TOML: `width_mhz = 20 | 40 | 80 | 160`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "u16", into = "u16")]
pub enum ChannelWidth {
    Mhz20,
    Mhz40,
    Mhz80,
    Mhz160,
}

impl ChannelWidth {
    pub const ALL: [ChannelWidth; 4] = [
        ChannelWidth::Mhz20,
        ChannelWidth::Mhz40,
        ChannelWidth::Mhz80,
        ChannelWidth::Mhz160,
    ];

    pub const fn mhz(self) -> u16 {
        match self {
            ChannelWidth::Mhz20 => 20,
            ChannelWidth::Mhz40 => 40,
            ChannelWidth::Mhz80 => 80,
            ChannelWidth::Mhz160 => 160,
        }
    }
}

impl TryFrom<u16> for ChannelWidth {
    type Error = String;
    fn try_from(mhz: u16) -> Result<Self, String> {
        match mhz {
            20 => Ok(ChannelWidth::Mhz20),
            40 => Ok(ChannelWidth::Mhz40),
            80 => Ok(ChannelWidth::Mhz80),
            160 => Ok(ChannelWidth::Mhz160),
            _ => Err(format!(
                "channel width must be 20, 40, 80 or 160 MHz, got {mhz}"
            )),
        }
    }
}

impl From<ChannelWidth> for u16 {
    fn from(w: ChannelWidth) -> u16 {
        w.mhz()
    }
}

impl fmt::Display for ChannelWidth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} MHz", self.mhz())
    }
}

impl JsonSchema for ChannelWidth {
    fn schema_name() -> Cow<'static, str> {
        "ChannelWidth".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "Channel width in MHz.",
            "type": "integer",
            "enum": [20, 40, 80, 160]
        })
    }
}

/// OFDM guard interval. 800/400 ns for non-HT/HT/VHT (400 = "short GI"); 800/1600/3200 ns for HE.
/// TOML: `gi_ns = 800`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "u16", into = "u16")]
pub enum GuardInterval {
    Ns400,
    Ns800,
    Ns1600,
    Ns3200,
}

impl GuardInterval {
    pub const fn ns(self) -> u16 {
        match self {
            GuardInterval::Ns400 => 400,
            GuardInterval::Ns800 => 800,
            GuardInterval::Ns1600 => 1600,
            GuardInterval::Ns3200 => 3200,
        }
    }

    /// The guard intervals a standard allows, shortest first.
    pub const fn allowed(standard: PhyStandard) -> &'static [GuardInterval] {
        match standard {
            PhyStandard::Ofdm => &[GuardInterval::Ns800],
            PhyStandard::Ht | PhyStandard::Vht => &[GuardInterval::Ns400, GuardInterval::Ns800],
            PhyStandard::He => &[
                GuardInterval::Ns800,
                GuardInterval::Ns1600,
                GuardInterval::Ns3200,
            ],
        }
    }
}

impl TryFrom<u16> for GuardInterval {
    type Error = String;
    fn try_from(ns: u16) -> Result<Self, String> {
        match ns {
            400 => Ok(GuardInterval::Ns400),
            800 => Ok(GuardInterval::Ns800),
            1600 => Ok(GuardInterval::Ns1600),
            3200 => Ok(GuardInterval::Ns3200),
            _ => Err(format!(
                "guard interval must be 400, 800, 1600 or 3200 ns, got {ns}"
            )),
        }
    }
}

impl From<GuardInterval> for u16 {
    fn from(gi: GuardInterval) -> u16 {
        gi.ns()
    }
}

impl fmt::Display for GuardInterval {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ns", self.ns())
    }
}

impl JsonSchema for GuardInterval {
    fn schema_name() -> Cow<'static, str> {
        "GuardInterval".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "OFDM guard interval in ns: 800 or 400 (short GI) for OFDM/HT/VHT; \
                            800, 1600 or 3200 for HE.",
            "type": "integer",
            "enum": [400, 800, 1600, 3200]
        })
    }
}

/// Subcarrier modulation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Modulation {
    Bpsk,
    Qpsk,
    Qam16,
    Qam64,
    Qam256,
    Qam1024,
}

impl Modulation {
    /// N_BPSCS: coded bits per subcarrier per stream.
    pub const fn bits_per_subcarrier(self) -> u32 {
        match self {
            Modulation::Bpsk => 1,
            Modulation::Qpsk => 2,
            Modulation::Qam16 => 4,
            Modulation::Qam64 => 6,
            Modulation::Qam256 => 8,
            Modulation::Qam1024 => 10,
        }
    }
    /// Constellation size M (2 for BPSK, 4 for QPSK, …).
    pub const fn constellation_size(self) -> u32 {
        1 << self.bits_per_subcarrier()
    }
}

/// Convolutional/LDPC code rate R.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum CodeRate {
    R1_2,
    R2_3,
    R3_4,
    R5_6,
}

impl CodeRate {
    /// `(numerator, denominator)`.
    pub const fn ratio(self) -> (u32, u32) {
        match self {
            CodeRate::R1_2 => (1, 2),
            CodeRate::R2_3 => (2, 3),
            CodeRate::R3_4 => (3, 4),
            CodeRate::R5_6 => (5, 6),
        }
    }
}

use CodeRate::*;
use Modulation::*;

/// HT/VHT/HE MCS 0..=11 (per spatial stream) → (modulation, code rate). Spec §2.1.
const MCS_TABLE: [(Modulation, CodeRate); 12] = [
    (Bpsk, R1_2),
    (Qpsk, R1_2),
    (Qpsk, R3_4),
    (Qam16, R1_2),
    (Qam16, R3_4),
    (Qam64, R2_3),
    (Qam64, R3_4),
    (Qam64, R5_6),
    (Qam256, R3_4),
    (Qam256, R5_6),
    (Qam1024, R3_4),
    (Qam1024, R5_6),
];

/// The eight non-HT OFDM rates (Mb/s), indexed by `TxVector::mcs` for [`PhyStandard::Ofdm`].
pub const OFDM_RATES_MBPS: [u32; 8] = [6, 9, 12, 18, 24, 36, 48, 54];

/// Non-HT OFDM rate index 0..=7 → (modulation, code rate).
const OFDM_TABLE: [(Modulation, CodeRate); 8] = [
    (Bpsk, R1_2),
    (Bpsk, R3_4),
    (Qpsk, R1_2),
    (Qpsk, R3_4),
    (Qam16, R1_2),
    (Qam16, R3_4),
    (Qam64, R2_3),
    (Qam64, R3_4),
];

/// N_LTF for N_SS = 1..=8 (HT/VHT/HE).
const N_LTF: [u32; 8] = [1, 2, 4, 4, 6, 6, 8, 8];

/// Per-standard limits: highest MCS, highest N_SS.
const fn limits(standard: PhyStandard) -> (u8, u8) {
    match standard {
        PhyStandard::Ofdm => (7, 1),
        PhyStandard::Ht => (7, 4),
        PhyStandard::Vht => (9, 8),
        PhyStandard::He => (11, 8),
    }
}

/// Channel widths a standard allows.
pub const fn allowed_widths(standard: PhyStandard) -> &'static [ChannelWidth] {
    match standard {
        PhyStandard::Ofdm => &[ChannelWidth::Mhz20],
        PhyStandard::Ht => &[ChannelWidth::Mhz20, ChannelWidth::Mhz40],
        PhyStandard::Vht | PhyStandard::He => &ChannelWidth::ALL,
    }
}

/// The parameters of one PPDU transmission that determine its airtime and error rate.
///
/// `mcs` is the per-stream MCS (HT 0..=7, VHT 0..=9, HE 0..=11) and `nss` the number of spatial streams;
/// an HT MCS *index* ≥ 8 is split by [`TxVector::ht`]. For [`PhyStandard::Ofdm`], `mcs` indexes
/// [`OFDM_RATES_MBPS`] (0 = 6 Mb/s … 7 = 54 Mb/s).
///
/// TOML: `{ standard = "ht", mcs = 7, width_mhz = 20, gi_ns = 800, nss = 1, ldpc = false }`
/// (`nss` defaults to 1 and `ldpc` to false).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TxVector {
    pub standard: PhyStandard,
    pub mcs: u8,
    #[serde(rename = "width_mhz")]
    pub width: ChannelWidth,
    #[serde(rename = "gi_ns")]
    pub gi: GuardInterval,
    #[serde(default = "one")]
    pub nss: u8,
    #[serde(default)]
    pub ldpc: bool,
}

fn one() -> u8 {
    1
}

impl TxVector {
    /// Non-HT OFDM (802.11a/g) at `mbps` ∈ {6, 9, 12, 18, 24, 36, 48, 54}.
    pub fn ofdm_mbps(mbps: u32) -> Result<TxVector, PhyError> {
        let idx = OFDM_RATES_MBPS
            .iter()
            .position(|&r| r == mbps)
            .ok_or(PhyError::UnknownOfdmRate(mbps))?;
        Ok(TxVector {
            standard: PhyStandard::Ofdm,
            mcs: idx as u8,
            width: ChannelWidth::Mhz20,
            gi: GuardInterval::Ns800,
            nss: 1,
            ldpc: false,
        })
    }

    /// HT from an 802.11n MCS index 0..=31: N_SS = ⌊index/8⌋ + 1, per-stream MCS = index mod 8. BCC.
    pub fn ht(mcs_index: u8, width: ChannelWidth, gi: GuardInterval) -> Result<TxVector, PhyError> {
        if mcs_index > 31 {
            return Err(PhyError::HtMcsIndexOutOfRange(mcs_index));
        }
        let tx = TxVector {
            standard: PhyStandard::Ht,
            mcs: mcs_index % 8,
            width,
            gi,
            nss: mcs_index / 8 + 1,
            ldpc: false,
        };
        tx.validate().map(|()| tx)
    }

    /// VHT SU with BCC coding.
    pub fn vht(
        mcs: u8,
        nss: u8,
        width: ChannelWidth,
        gi: GuardInterval,
    ) -> Result<TxVector, PhyError> {
        let tx = TxVector {
            standard: PhyStandard::Vht,
            mcs,
            width,
            gi,
            nss,
            ldpc: false,
        };
        tx.validate().map(|()| tx)
    }

    /// HE SU with LDPC coding (what HE devices use; BCC is optional and restricted in 802.11ax).
    pub fn he(
        mcs: u8,
        nss: u8,
        width: ChannelWidth,
        gi: GuardInterval,
    ) -> Result<TxVector, PhyError> {
        let tx = TxVector {
            standard: PhyStandard::He,
            mcs,
            width,
            gi,
            nss,
            ldpc: true,
        };
        tx.validate().map(|()| tx)
    }

    /// The 802.11n MCS index (per-stream MCS + 8·(N_SS−1)); `None` unless HT.
    pub fn ht_mcs_index(&self) -> Option<u8> {
        (self.standard == PhyStandard::Ht).then(|| self.mcs + 8 * (self.nss - 1))
    }

    /// Checks that this combination exists in its standard (band-independent).
    pub fn validate(&self) -> Result<(), PhyError> {
        let standard = self.standard;
        let (max_mcs, max_nss) = limits(standard);
        if self.mcs > max_mcs {
            return Err(PhyError::McsOutOfRange {
                standard,
                mcs: self.mcs,
                max: max_mcs,
            });
        }
        if self.nss == 0 || self.nss > max_nss {
            return Err(PhyError::NssOutOfRange {
                standard,
                nss: self.nss,
                max: max_nss,
            });
        }
        if !allowed_widths(standard).contains(&self.width) {
            return Err(PhyError::WidthNotAllowed {
                standard,
                width: self.width,
            });
        }
        if !GuardInterval::allowed(standard).contains(&self.gi) {
            return Err(PhyError::GiNotAllowed {
                standard,
                gi: self.gi,
            });
        }
        self.validate_coding()
    }

    fn validate_coding(&self) -> Result<(), PhyError> {
        let (mcs, width, nss) = (self.mcs, self.width, self.nss);
        match self.standard {
            PhyStandard::Ofdm if self.ldpc => Err(PhyError::LdpcNotAllowed),
            PhyStandard::Vht if !vht_combination_allowed(mcs, width, nss) => {
                Err(PhyError::VhtCombinationInvalid { mcs, width, nss })
            }
            PhyStandard::He
                if !self.ldpc && (width != ChannelWidth::Mhz20 || nss > 4 || mcs > 9) =>
            {
                Err(PhyError::HeBccNotAllowed { mcs, width, nss })
            }
            _ => Ok(()),
        }
    }

    /// [`validate`](Self::validate) plus band rules: VHT is 5 GHz only; 2.4 GHz channels are ≤ 40 MHz.
    pub fn validate_in_band(&self, band: Band) -> Result<(), PhyError> {
        self.validate()?;
        if band == Band::Ghz2_4 {
            if self.standard == PhyStandard::Vht {
                return Err(PhyError::BandNotAllowed {
                    standard: self.standard,
                    band,
                });
            }
            if self.width > ChannelWidth::Mhz40 {
                return Err(PhyError::WidthNotInBand {
                    width: self.width,
                    band,
                });
            }
        }
        Ok(())
    }

    #[inline]
    fn mcs_entry(&self) -> (Modulation, CodeRate) {
        match self.standard {
            PhyStandard::Ofdm => OFDM_TABLE[self.mcs as usize],
            _ => MCS_TABLE[self.mcs as usize],
        }
    }

    /// Subcarrier modulation (the "constellation" used by EIFS estimation and the error models).
    #[inline]
    pub fn modulation(&self) -> Modulation {
        self.mcs_entry().0
    }

    #[inline]
    pub fn code_rate(&self) -> CodeRate {
        self.mcs_entry().1
    }

    /// N_SD: data subcarriers per OFDM symbol. Spec §2.1.
    #[inline]
    pub fn n_sd(&self) -> u32 {
        use ChannelWidth::*;
        match (self.standard, self.width) {
            (PhyStandard::Ofdm, _) => 48,
            (PhyStandard::Ht | PhyStandard::Vht, Mhz20) => 52,
            (PhyStandard::Ht | PhyStandard::Vht, Mhz40) => 108,
            (PhyStandard::Ht | PhyStandard::Vht, Mhz80) => 234,
            (PhyStandard::Ht | PhyStandard::Vht, Mhz160) => 468,
            (PhyStandard::He, Mhz20) => 234,
            (PhyStandard::He, Mhz40) => 468,
            (PhyStandard::He, Mhz80) => 980,
            (PhyStandard::He, Mhz160) => 1960,
        }
    }

    /// N_CBPS: coded bits per OFDM symbol over all streams.
    #[inline]
    pub fn n_cbps(&self) -> u32 {
        self.nss as u32 * self.n_sd() * self.modulation().bits_per_subcarrier()
    }

    /// N_DBPS: data bits per OFDM symbol over all streams, `⌊N_CBPS·R⌋` (exact except HE, see module doc).
    #[inline]
    pub fn n_dbps(&self) -> u32 {
        let (num, den) = self.code_rate().ratio();
        self.n_cbps() * num / den
    }

    /// N_ES: number of BCC encoders (spec §1.3). Meaningless (but still defined) with LDPC.
    #[inline]
    pub fn n_es(&self) -> u32 {
        match self.standard {
            PhyStandard::Ofdm | PhyStandard::He => 1,
            // ns-3: ⌈rate / 320 Mb/s⌉ (long GI), ⌈rate / 350 Mb/s⌉ (short GI).
            PhyStandard::Ht => match self.gi {
                GuardInterval::Ns400 => self.n_dbps().div_ceil(1260),
                _ => self.n_dbps().div_ceil(1280),
            },
            PhyStandard::Vht => vht_n_es(self.n_dbps(), self.n_cbps()),
        }
    }

    /// OFDM symbol duration of the data field in ns: 4000 for non-HT, 3200 + GI (HT/VHT), 12800 + GI (HE).
    #[inline]
    pub fn symbol_duration_ns(&self) -> u64 {
        let gi = self.gi.ns() as u64;
        match self.standard {
            PhyStandard::Ofdm => 4_000,
            PhyStandard::Ht | PhyStandard::Vht => 3_200 + gi,
            PhyStandard::He => 12_800 + gi,
        }
    }

    #[inline]
    pub fn symbol_duration(&self) -> SimDuration {
        SimDuration::from_ns(self.symbol_duration_ns())
    }

    /// PHY data rate `N_DBPS / T_sym`, rounded down to whole bit/s.
    pub fn data_rate(&self) -> BitRate {
        BitRate::from_bps(self.n_dbps() as u64 * 1_000_000_000 / self.symbol_duration_ns())
    }

    /// Number of long training fields for this N_SS (1, 2, 4, 4, 6, 6, 8, 8); 0 for non-HT.
    #[inline]
    pub fn n_ltf(&self) -> u32 {
        match self.standard {
            PhyStandard::Ofdm => 0,
            _ => N_LTF[(self.nss as usize).clamp(1, 8) - 1],
        }
    }

    /// Preamble + PHY header in ns (spec §1.3). `ns3_compat_vht_sigb` drops VHT-SIG-B from VHT SU PPDUs.
    #[inline]
    pub fn preamble_header_ns(&self, ns3_compat_vht_sigb: bool) -> u64 {
        const LEGACY: u64 = 20_000; // L-STF 8 + L-LTF 8 + L-SIG 4
        let n_ltf = self.n_ltf() as u64;
        match self.standard {
            PhyStandard::Ofdm => LEGACY,
            // + HT-SIG 8 + HT-STF 4 + 4·N_LTF
            PhyStandard::Ht => LEGACY + 12_000 + 4_000 * n_ltf,
            // + VHT-SIG-A 8 + VHT-STF 4 + 4·N_LTF (+ VHT-SIG-B 4)
            PhyStandard::Vht => {
                LEGACY + 12_000 + 4_000 * n_ltf + if ns3_compat_vht_sigb { 0 } else { 4_000 }
            }
            // + RL-SIG 4 + HE-SIG-A 8 + HE-STF 4 + 8·N_LTF (2x HE-LTF with 1.6 µs GI, as ns-3)
            PhyStandard::He => LEGACY + 16_000 + 8_000 * n_ltf,
        }
    }

    /// Preamble + PHY header as a duration (see [`preamble_header_ns`](Self::preamble_header_ns)).
    pub fn preamble_header_duration(&self, ns3_compat_vht_sigb: bool) -> SimDuration {
        SimDuration::from_ns(self.preamble_header_ns(ns3_compat_vht_sigb))
    }

    /// The non-HT reference rate (802.11-2020 §10.6.6.5.2; ns-3 `CalculateNonHtReferenceRate`): the
    /// 802.11a rate with the same modulation and code rate; 64-QAM 5/6 and denser map to 54 Mb/s.
    /// Used to pick the control-response rate.
    pub fn non_ht_reference_rate(&self) -> BitRate {
        let mbps = match self.mcs_entry() {
            (Bpsk, R3_4) => 9,
            (Bpsk, _) => 6,
            (Qpsk, R1_2) => 12,
            (Qpsk, _) => 18,
            (Qam16, R1_2) => 24,
            (Qam16, _) => 36,
            (Qam64, R2_3) => 48,
            _ => 54,
        };
        BitRate::from_mbps(mbps)
    }

    /// True for an HT/VHT short guard interval (the only case where `sgi_round4` applies).
    #[inline]
    pub fn is_short_gi(&self) -> bool {
        self.gi == GuardInterval::Ns400
            && matches!(self.standard, PhyStandard::Ht | PhyStandard::Vht)
    }
}

impl fmt::Display for TxVector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let coding = if self.ldpc { "LDPC" } else { "BCC" };
        match self.standard {
            PhyStandard::Ofdm => match OFDM_RATES_MBPS.get(self.mcs as usize) {
                Some(r) => write!(f, "OFDM {r} Mb/s"),
                None => write!(f, "OFDM rate index {}", self.mcs),
            },
            s => write!(
                f,
                "{s}{} MCS{} {}SS GI {} ns {coding}",
                self.width.mhz(),
                self.mcs,
                self.nss,
                self.gi.ns()
            ),
        }
    }
}

/// VHT MCS/width/N_SS exclusions of the standard (see module doc).
pub fn vht_combination_allowed(mcs: u8, width: ChannelWidth, nss: u8) -> bool {
    !matches!(
        (mcs, width, nss),
        (9, ChannelWidth::Mhz20, 1 | 2 | 4 | 5 | 7 | 8)
            | (6, ChannelWidth::Mhz80, 3 | 7)
            | (9, ChannelWidth::Mhz80, 6)
            | (9, ChannelWidth::Mhz160, 3)
    )
}

/// VHT N_ES: smallest count ≥ ⌈N_DBPS/2160⌉ dividing both N_DBPS and N_CBPS (module doc).
fn vht_n_es(n_dbps: u32, n_cbps: u32) -> u32 {
    let mut n_es = n_dbps.div_ceil(2160).max(1);
    while n_es < 16 && (n_dbps % n_es != 0 || n_cbps % n_es != 0) {
        n_es += 1;
    }
    n_es
}

/// Every valid TxVector of `standard`: all MCS × allowed widths × allowed GIs × N_SS 1..=4 (non-HT: the 8
/// rates). Coding is BCC for non-HT/HT/VHT and LDPC for HE (as the convenience constructors choose).
/// Ordered by width, GI, N_SS, MCS.
pub fn all_valid_txvectors(standard: PhyStandard) -> Vec<TxVector> {
    let (max_mcs, max_nss) = limits(standard);
    let mut out = Vec::new();
    for &width in allowed_widths(standard) {
        for &gi in GuardInterval::allowed(standard) {
            for nss in 1..=max_nss.min(4) {
                for mcs in 0..=max_mcs {
                    let ldpc = standard == PhyStandard::He;
                    let tx = TxVector {
                        standard,
                        mcs,
                        width,
                        gi,
                        nss,
                        ldpc,
                    };
                    if tx.validate().is_ok() {
                        out.push(tx);
                    }
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use ChannelWidth::*;
    use GuardInterval::*;

    #[test]
    fn ht_index_maps_to_streams() {
        let tx = TxVector::ht(15, Mhz40, Ns800).unwrap();
        assert_eq!((tx.mcs, tx.nss), (7, 2));
        assert_eq!(tx.ht_mcs_index(), Some(15));
        assert_eq!(tx.data_rate(), BitRate::from_mbps(270));
        let tx = TxVector::ht(23, Mhz40, Ns400).unwrap();
        assert_eq!(tx.data_rate(), BitRate::from_mbps(450));
        assert_eq!(
            TxVector::ht(12, Mhz40, Ns800).unwrap().data_rate(),
            BitRate::from_mbps(162)
        );
        assert_eq!(
            TxVector::ht(23, Mhz40, Ns800).unwrap().data_rate(),
            BitRate::from_mbps(405)
        );
        assert_eq!(
            TxVector::ht(32, Mhz20, Ns800),
            Err(PhyError::HtMcsIndexOutOfRange(32))
        );
    }

    #[test]
    fn exact_rates() {
        assert_eq!(
            TxVector::ht(7, Mhz20, Ns800).unwrap().data_rate().bps(),
            65_000_000
        );
        assert_eq!(
            TxVector::ht(7, Mhz20, Ns400).unwrap().data_rate().bps(),
            72_222_222
        );
        assert_eq!(
            TxVector::ofdm_mbps(54).unwrap().data_rate().bps(),
            54_000_000
        );
        assert_eq!(TxVector::ofdm_mbps(54).unwrap().n_dbps(), 216);
        assert_eq!(TxVector::ofdm_mbps(9).unwrap().n_dbps(), 36);
        assert_eq!(TxVector::ofdm_mbps(5), Err(PhyError::UnknownOfdmRate(5)));
    }

    #[test]
    fn legacy_ndbps_table() {
        let n: Vec<u32> = OFDM_RATES_MBPS
            .iter()
            .map(|&r| TxVector::ofdm_mbps(r).unwrap().n_dbps())
            .collect();
        assert_eq!(n, [24, 36, 48, 72, 96, 144, 192, 216]);
    }

    #[test]
    fn validation_messages() {
        let e = TxVector::vht(9, 1, Mhz20, Ns800).unwrap_err();
        assert_eq!(
            e,
            PhyError::VhtCombinationInvalid {
                mcs: 9,
                width: Mhz20,
                nss: 1
            }
        );
        assert!(e
            .to_string()
            .contains("VHT MCS 9 is not valid at 20 MHz with 1 spatial stream"));
        assert!(TxVector::vht(9, 3, Mhz20, Ns800).is_ok());
        assert!(TxVector::vht(9, 6, Mhz20, Ns800).is_ok());
        assert!(TxVector::vht(6, 3, Mhz80, Ns800).is_err());
        assert!(TxVector::vht(9, 6, Mhz80, Ns800).is_err());
        assert!(TxVector::vht(9, 3, Mhz160, Ns800).is_err());
        let bad_ht = TxVector {
            standard: PhyStandard::Ht,
            mcs: 8,
            width: Mhz20,
            gi: Ns800,
            nss: 1,
            ldpc: false,
        };
        assert!(bad_ht
            .validate()
            .unwrap_err()
            .to_string()
            .contains("HT MCS 8 is out of range"));
        let bad_nss = TxVector {
            nss: 5,
            mcs: 0,
            ..bad_ht
        };
        assert!(matches!(
            bad_nss.validate(),
            Err(PhyError::NssOutOfRange { max: 4, .. })
        ));
        assert!(matches!(
            TxVector::ht(0, Mhz80, Ns800),
            Err(PhyError::WidthNotAllowed { .. })
        ));
        assert!(matches!(
            TxVector::he(0, 1, Mhz20, Ns400),
            Err(PhyError::GiNotAllowed { .. })
        ));
        assert!(matches!(
            TxVector::vht(0, 1, Mhz20, Ns1600),
            Err(PhyError::GiNotAllowed { .. })
        ));
        assert!(matches!(
            TxVector::he(12, 1, Mhz20, Ns800),
            Err(PhyError::McsOutOfRange { max: 11, .. })
        ));
        let ofdm_ldpc = TxVector {
            ldpc: true,
            ..TxVector::ofdm_mbps(6).unwrap()
        };
        assert_eq!(ofdm_ldpc.validate(), Err(PhyError::LdpcNotAllowed));
        let he_bcc = TxVector {
            ldpc: false,
            ..TxVector::he(11, 1, Mhz80, Ns800).unwrap()
        };
        assert!(matches!(
            he_bcc.validate(),
            Err(PhyError::HeBccNotAllowed { .. })
        ));
        let he_bcc20 = TxVector {
            ldpc: false,
            ..TxVector::he(9, 1, Mhz20, Ns800).unwrap()
        };
        assert!(he_bcc20.validate().is_ok());
    }

    #[test]
    fn band_rules() {
        let vht = TxVector::vht(0, 1, Mhz20, Ns800).unwrap();
        assert!(vht.validate_in_band(Band::Ghz5).is_ok());
        assert!(matches!(
            vht.validate_in_band(Band::Ghz2_4),
            Err(PhyError::BandNotAllowed { .. })
        ));
        let he80 = TxVector::he(0, 1, Mhz80, Ns800).unwrap();
        assert!(matches!(
            he80.validate_in_band(Band::Ghz2_4),
            Err(PhyError::WidthNotInBand { .. })
        ));
        assert!(TxVector::ht(7, Mhz40, Ns400)
            .unwrap()
            .validate_in_band(Band::Ghz2_4)
            .is_ok());
    }

    #[test]
    fn number_of_bcc_encoders() {
        // N_ES = 1 for every single-stream 20/40 MHz HT/VHT rate (spec §1.3).
        for tx in all_valid_txvectors(PhyStandard::Ht)
            .into_iter()
            .chain(all_valid_txvectors(PhyStandard::Vht))
        {
            if tx.nss == 1 && tx.width <= Mhz40 {
                assert_eq!(tx.n_es(), 1, "{tx}");
            }
        }
        // HT: a second encoder above 300 Mb/s.
        assert_eq!(TxVector::ht(23, Mhz40, Ns400).unwrap().n_es(), 2);
        assert_eq!(TxVector::ht(21, Mhz40, Ns800).unwrap().n_es(), 2);
        assert_eq!(TxVector::ht(20, Mhz40, Ns400).unwrap().n_es(), 1);
        assert_eq!(TxVector::ht(31, Mhz40, Ns800).unwrap().n_es(), 2);
    }

    #[test]
    fn vht_n_es_reproduces_ns3_exception_map() {
        // ns-3 VhtPhy::m_exceptionsMap: {BW, Nss, MCS} -> Nes.
        let exceptions = [
            (Mhz80, 7, 2, 3),
            (Mhz80, 7, 7, 6),
            (Mhz80, 7, 8, 6),
            (Mhz80, 8, 7, 6),
            (Mhz160, 4, 7, 6),
            (Mhz160, 5, 8, 8),
            (Mhz160, 6, 7, 8),
            (Mhz160, 7, 3, 4),
            (Mhz160, 7, 4, 6),
            (Mhz160, 7, 5, 7),
            (Mhz160, 7, 7, 9),
            (Mhz160, 7, 8, 12),
            (Mhz160, 7, 9, 12),
        ];
        for (width, nss, mcs, n_es) in exceptions {
            for gi in [Ns800, Ns400] {
                assert_eq!(
                    TxVector::vht(mcs, nss, width, gi).unwrap().n_es(),
                    n_es,
                    "{width} {nss} {mcs}"
                );
            }
        }
        // Elsewhere the plain rule ⌈rate/540 Mb/s⌉ (long GI) holds; N_ES always divides N_DBPS and N_CBPS.
        for width in ChannelWidth::ALL {
            for nss in 1..=8 {
                for mcs in 0..=9 {
                    let Ok(tx) = TxVector::vht(mcs, nss, width, Ns800) else {
                        continue;
                    };
                    let rule = (tx.data_rate().bps()).div_ceil(540_000_000) as u32;
                    let listed = exceptions
                        .iter()
                        .any(|e| (e.0, e.1, e.2) == (width, nss, mcs));
                    if !listed && !(width == Mhz160 && nss == 8 && (mcs == 5 || mcs == 8)) {
                        assert_eq!(tx.n_es(), rule, "{tx}");
                    }
                    assert_eq!(tx.n_dbps() % tx.n_es(), 0, "{tx}");
                    assert_eq!(tx.n_cbps() % tx.n_es(), 0, "{tx}");
                }
            }
        }
    }

    #[test]
    fn vht_exclusions_are_exactly_the_non_integral_combinations() {
        // With the N_ES rule, a combination is excluded iff N_CBPS·R or the per-encoder split is not integral
        // — except where the standard preferred a larger N_ES (the ns-3 exception map).
        for width in ChannelWidth::ALL {
            for nss in 1..=8u8 {
                for mcs in 0..=9u8 {
                    let tx = TxVector {
                        standard: PhyStandard::Vht,
                        mcs,
                        width,
                        gi: Ns800,
                        nss,
                        ldpc: false,
                    };
                    let (num, den) = tx.code_rate().ratio();
                    let integral = (tx.n_cbps() * num) % den == 0;
                    let plain_n_es = tx.n_dbps().div_ceil(2160);
                    let splits = tx.n_dbps() % plain_n_es == 0 && tx.n_cbps() % plain_n_es == 0;
                    if !integral {
                        assert!(tx.validate().is_err(), "{tx}");
                    }
                    if tx.validate().is_err() {
                        assert!(!integral || !splits, "{tx}");
                    }
                }
            }
        }
    }

    #[test]
    fn preambles() {
        let p = |tx: TxVector, compat| tx.preamble_header_duration(compat).as_ns() / 1000;
        assert_eq!(p(TxVector::ofdm_mbps(6).unwrap(), false), 20);
        let ht: Vec<u64> = [0, 8, 16, 24]
            .iter()
            .map(|&i| p(TxVector::ht(i, Mhz20, Ns800).unwrap(), false))
            .collect();
        assert_eq!(ht, [36, 40, 48, 48]);
        let vht = |nss, c| p(TxVector::vht(0, nss, Mhz20, Ns800).unwrap(), c);
        assert_eq!(
            [vht(1, false), vht(2, false), vht(3, false), vht(4, false)],
            [40, 44, 52, 52]
        );
        assert_eq!([vht(1, true), vht(2, true), vht(3, true)], [36, 40, 48]);
        let he = |nss| p(TxVector::he(0, nss, Mhz20, Ns800).unwrap(), false);
        assert_eq!([he(1), he(2), he(3), he(4)], [44, 52, 68, 68]);
    }

    #[test]
    fn symbols() {
        assert_eq!(
            TxVector::ht(0, Mhz20, Ns400).unwrap().symbol_duration_ns(),
            3_600
        );
        assert_eq!(
            TxVector::vht(0, 1, Mhz80, Ns800)
                .unwrap()
                .symbol_duration_ns(),
            4_000
        );
        let he = |gi| TxVector::he(0, 1, Mhz20, gi).unwrap().symbol_duration_ns();
        assert_eq!(
            [he(Ns800), he(Ns1600), he(Ns3200)],
            [13_600, 14_400, 16_000]
        );
    }

    #[test]
    fn non_ht_reference_rates() {
        let r = |tx: TxVector| tx.non_ht_reference_rate().bps() / 1_000_000;
        let ht: Vec<u64> = (0..8)
            .map(|m| r(TxVector::ht(m, Mhz20, Ns800).unwrap()))
            .collect();
        assert_eq!(ht, [6, 12, 18, 24, 36, 48, 54, 54]);
        assert_eq!(r(TxVector::vht(9, 1, Mhz40, Ns800).unwrap()), 54);
        assert_eq!(r(TxVector::he(11, 1, Mhz20, Ns800).unwrap()), 54);
        for rate in OFDM_RATES_MBPS {
            assert_eq!(r(TxVector::ofdm_mbps(rate).unwrap()), rate as u64);
        }
    }

    #[test]
    fn enumeration_counts() {
        assert_eq!(all_valid_txvectors(PhyStandard::Ofdm).len(), 8);
        assert_eq!(all_valid_txvectors(PhyStandard::Ht).len(), 8 * 4 * 2 * 2);
        // VHT: 10 MCS × 4 N_SS × 4 widths, minus MCS9@20 (N_SS 1, 2, 4), MCS6@80 N_SS 3 and MCS9@160
        // N_SS 3; times 2 GIs.
        assert_eq!(all_valid_txvectors(PhyStandard::Vht).len(), (160 - 5) * 2);
        assert_eq!(all_valid_txvectors(PhyStandard::He).len(), 12 * 4 * 4 * 3);
        for s in [
            PhyStandard::Ofdm,
            PhyStandard::Ht,
            PhyStandard::Vht,
            PhyStandard::He,
        ] {
            for tx in all_valid_txvectors(s) {
                assert!(tx.validate().is_ok());
                assert!(tx.n_dbps() > 0 && tx.data_rate().bps() > 0);
            }
        }
    }

    #[test]
    fn serde_round_trip_toml() {
        let tx: TxVector =
            toml::from_str("standard = \"ht\"\nmcs = 7\nwidth_mhz = 20\ngi_ns = 800\n").unwrap();
        assert_eq!(tx, TxVector::ht(7, Mhz20, Ns800).unwrap());
        let s = toml::to_string(&TxVector::he(11, 2, Mhz80, Ns3200).unwrap()).unwrap();
        assert!(
            s.contains("width_mhz = 80")
                && s.contains("gi_ns = 3200")
                && s.contains("standard = \"he\"")
        );
        let back: TxVector = toml::from_str(&s).unwrap();
        assert_eq!(back, TxVector::he(11, 2, Mhz80, Ns3200).unwrap());
        assert!(toml::from_str::<TxVector>(
            "standard = \"ht\"\nmcs = 7\nwidth_mhz = 30\ngi_ns = 800\n"
        )
        .is_err());
        assert!(toml::from_str::<TxVector>(
            "standard = \"ht\"\nmcs = 7\nwidth_mhz = 20\ngi_ns = 800\nx = 1\n"
        )
        .is_err());
        #[derive(Deserialize)]
        struct B {
            band: Band,
        }
        assert_eq!(
            toml::from_str::<B>("band = \"2.4ghz\"").unwrap().band,
            Band::Ghz2_4
        );
        assert_eq!(
            toml::from_str::<B>("band = \"5ghz\"").unwrap().band,
            Band::Ghz5
        );
    }

    #[test]
    fn json_schema_uses_toml_names() {
        let schema = serde_json::to_string(&schemars::schema_for!(TxVector)).unwrap();
        for needle in ["width_mhz", "gi_ns", "\"ht\"", "\"ofdm\"", "160", "3200"] {
            assert!(schema.contains(needle), "{needle} missing from {schema}");
        }
        let band = serde_json::to_string(&schemars::schema_for!(Band)).unwrap();
        assert!(band.contains("2.4ghz") && band.contains("5ghz"));
    }
}
