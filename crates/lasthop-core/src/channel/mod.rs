//! Radio channel models: the SNR of a link over time.
//!
//! A model is asked for the SNR at the start of each PPDU (`snr_db(now)`); block-fading and trace models
//! are piecewise constant, so one value per PPDU is what the error model (`phy::error`) needs.

use crate::scenario::ChannelConfig;
use crate::time::SimTime;

/// Any channel model.
#[derive(Clone, Debug)]
pub enum ChannelModel {
    /// A constant SNR.
    Fixed { snr_db: f64 },
}

impl ChannelModel {
    pub fn from_config(c: &ChannelConfig) -> Self {
        match c {
            ChannelConfig::FixedSnr { snr_db } => ChannelModel::Fixed { snr_db: *snr_db },
        }
    }

    /// SNR in dB at `now`.
    #[inline]
    pub fn snr_db(&mut self, _now: SimTime) -> f64 {
        match self {
            ChannelModel::Fixed { snr_db } => *snr_db,
        }
    }
}
