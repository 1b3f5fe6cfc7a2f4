//! The WebRTC-style video pipeline as pure state machines (baselines.md §4.1 and §5; zhuge.md §4, §6).
//!
//! No engine, no clock: every component takes `now` and returns what it produced.
//!
//! (The full pipeline documentation is at the end of this series of commits.)

pub mod fec;
pub mod frames;
pub mod gcc;
pub mod pacer;
pub mod quality;
pub mod receiver;
pub mod rtp;
pub mod rtx;
pub mod twcc;

/// An RTC parameter out of its valid range; `field` is spelled as in the params struct.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {reason}")]
pub struct RtcParamError {
    pub field: &'static str,
    pub reason: &'static str,
}

/// `Err` naming `field` unless `ok`.
pub(crate) fn check(ok: bool, field: &'static str, reason: &'static str) -> Result<(), RtcParamError> {
    if ok {
        Ok(())
    } else {
        Err(RtcParamError { field, reason })
    }
}
