//! The scenario's description of a station's radio channel (`channel = { type = ... }`);
//! [`super::ChannelModel::from_config`] builds it.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The radio channel between a station and its AP (both directions).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum ChannelConfig {
    /// A constant SNR, optionally with block fading.
    FixedSnr {
        snr_db: f64,
        #[serde(default)]
        fading: Option<FadingConfig>,
    },
    /// An SNR time series from a file of `time_s snr_db` lines, step-hold (or linear with
    /// `interpolate = true`); the last value holds after the end.
    SnrTrace {
        file: String,
        #[serde(default)]
        interpolate: bool,
        #[serde(default)]
        fading: Option<FadingConfig>,
    },
    /// Log-distance path loss: SNR = tx_power − (PL(d0) + 10·n·log10(d/d0)) − noise floor.
    LogDistance {
        distance_m: f64,
        /// Path-loss exponent n; default 3 (ns-3 `LogDistancePropagationLossModel`).
        #[serde(default = "default_exponent")]
        exponent: f64,
        /// Loss at the 1-m reference distance; default 46.6777 dB (ns-3's 5 GHz value).
        #[serde(default = "default_ref_loss")]
        reference_loss_db: f64,
        /// Default 16.0206 dBm (ns-3).
        #[serde(default = "default_tx_power")]
        tx_power_dbm: f64,
        /// Receiver noise figure; default 7 dB (noise floor −94 dBm at 20 MHz).
        #[serde(default = "default_nf")]
        noise_figure_db: f64,
        #[serde(default)]
        fading: Option<FadingConfig>,
    },
    /// A scripted SNR ramp for mobility: linear between `(time_s, snr_db)` points, holding outside.
    Ramp {
        points: Vec<(f64, f64)>,
        #[serde(default)]
        fading: Option<FadingConfig>,
    },
    /// An office in working hours (Law's testbed): slow drift, Rician fast fading, people crossing the
    /// line of sight (deep fades) and co-channel interference bursts (SINR drops); every knob optional.
    Office(crate::channel::OfficeParams),
}

fn default_exponent() -> f64 {
    3.0
}

fn default_ref_loss() -> f64 {
    46.6777
}

fn default_tx_power() -> f64 {
    16.0206
}

fn default_nf() -> f64 {
    7.0
}

fn default_coherence_ms() -> f64 {
    20.0
}

/// Block fading on top of a channel's mean SNR: the power gain is redrawn every coherence time.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum FadingConfig {
    /// |h|² ~ Exp(1).
    Rayleigh {
        /// Coherence time, at least 0.1 ms; default 20 ms (indoor walking, `wifi-model.md` §4.3).
        #[serde(default = "default_coherence_ms")]
        coherence_ms: f64,
    },
    /// Line of sight with Rician factor K (dB).
    Rician {
        k_db: f64,
        /// Coherence time, at least 0.1 ms; default 20 ms.
        #[serde(default = "default_coherence_ms")]
        coherence_ms: f64,
    },
}

impl Default for ChannelConfig {
    fn default() -> Self {
        ChannelConfig::FixedSnr { snr_db: 40.0, fading: None }
    }
}
