//! # lasthop-core
//!
//! A deterministic discrete-event model of the Wi-Fi last hop for real-time traffic.
//!
//! ```text
//!  hosts: UDP CBR/Poisson, ping, saturated, RTC video, TCP video ── host/, app/, rtc/
//!    │  transport: TCP (SACK, RTO, Cubic/BBR/Copa/NewReno/ABC)  ── transport/
//!    ▼
//!  server ──wired link (queue, rate, delay)── AP                                     ── link/, queue/
//!                                              │ mechanisms: Law, Zhuge, FastAck, ABC ── mech/, sim/mech.rs
//!                                              │ qdisc → mac80211 txq (FQ-CoDel, AFS) ── mac/txpath/, queue/
//!                                              │ driver → hardware queue, rate control ── mac/txpath/, ratectl/
//!                                              ▼ EDCA contention, A-MPDU, BlockAck    ── mac/
//!                                            channel (airtime, SNR, errors)           ── phy/, channel/
//!                                              ▼
//!                                            station → sink, metrics                  ── stats/
//! ```
//!
//! The event loop that joins them is [`sim`]; scenarios are [`scenario`].
//!
//! Design rules (see `STYLE.md` in the project root):
//! * time is integer nanoseconds ([`time::SimTime`]); there is no wall clock and no OS entropy;
//! * every component draws from its own RNG derived from `(master seed, stable path)` ([`rng`]);
//! * the event queue is totally ordered by `(time, sequence)` and timers cancel in O(log n) ([`engine`]);
//! * algorithms are state machines that take `now` as an argument and can be tested without the engine.
#![deny(unsafe_code)]
// Functions stay short (clippy.toml: 60 lines), as STYLE.md asks; a longer one fails `make test`.
#![cfg_attr(not(test), warn(clippy::too_many_lines))]

pub mod engine;
pub mod host;
pub mod phy;
pub mod rng;
pub mod time;
pub mod trace;
pub mod units;

pub use time::{SimDuration, SimTime};
pub use units::{BitRate, Bytes};
pub mod app;
pub mod channel;
pub mod mac;
pub mod mech;
pub mod link;
pub mod packet;
pub mod payload;
pub mod params;
pub mod queue;
pub mod ratectl;
pub mod rtc;
pub mod scenario;
pub mod seqmap;
pub mod sim;
pub mod stats;
pub mod transport;
pub mod validate;
