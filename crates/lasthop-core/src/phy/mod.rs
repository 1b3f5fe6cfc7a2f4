//! The 802.11 PHY as pure functions: rates, airtime, inter-frame spaces and the frame error model.
//!
//! Nothing here holds state, schedules events or draws random numbers: the MAC and the channel ask
//! questions ("how long does this PPDU last?", "what is the success probability of this MPDU at this
//! SNR?") and act on the answers. Airtime is integer nanoseconds end to end; only the error model uses
//! `f64`. The normative source is `wifi-model.md` (§1 timing, §2 MCS and airtime, §4 error model, §9
//! defaults); each submodule names the sections it implements and what it approximates.
//!
//! ```text
//!  TxVector ─┬─ mcs::        N_DBPS, N_ES, T_sym, preamble, data rate, validation
//!            ├─ airtime::    ppdu_duration(tx, psdu_len, band, sgi_round4) → SimDuration
//!            │               control_response_vector / ack_duration / block_ack_duration
//!            │               max_ppdu_duration, max_psdu_len, max_mpdus_within
//!            ├─ ampdu_len::  ampdu_psdu_len(&[mpdu_len]) (delimiters + padding)
//!            ├─ timing::     PhyTimings { slot, sifs, … }.difs()/aifs(n)/eifs(…)
//!            └─ error::      mpdu_success_prob(model, snr_db, tx, len) → f64
//! ```
//!
//! Modelled: non-HT OFDM (802.11a/g), HT-mixed, VHT SU, HE SU; 20–160 MHz; 1–8 streams; BCC and LDPC
//! (airtime only); 2.4 GHz signal extension. Not modelled: DSSS/802.11b PPDUs, HT-greenfield, STBC,
//! MU-MIMO/OFDMA, HE ER-SU and packet extension, EHT.

pub mod airtime;
pub mod ampdu_len;
pub mod error;
pub mod mcs;
pub mod timing;

#[cfg(test)]
mod tests;

pub use airtime::{
    ack_duration, block_ack_duration, control_response_vector, max_mpdus_within, max_ppdu_duration,
    max_psdu_len, max_psdu_len_within, ppdu_duration, ppdu_duration_with, AirtimeOptions,
    BlockAckBitmap,
};
pub use ampdu_len::{ampdu_len_with, ampdu_psdu_len, ampdu_subframe_len};
pub use error::{mpdu_success_prob, noise_floor_dbm, preamble_detected, ErrorModel};
pub use mcs::{
    all_valid_txvectors, Band, ChannelWidth, GuardInterval, PhyError, PhyStandard, TxVector,
};
pub use timing::{EifsRule, PhyTimings, SlotTime};
