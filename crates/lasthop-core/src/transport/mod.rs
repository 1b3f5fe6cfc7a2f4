//! Transports: what the end hosts run on top of the last hop.
//!
//! * [`cc`] — congestion control as pure state machines behind one small trait (Cubic, BBR v1, Copa,
//!   NewReno), with the delivery-rate estimator they share. The TCP and RTP/RTCP endpoints that drive
//!   them live beside it.

pub mod cc;
pub mod tcp;
