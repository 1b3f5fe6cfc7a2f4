//! # lasthop-emu
//!
//! Real-time emulation: real applications and the kernel's TCP in network namespaces, their packets
//! carried through the modelled last hop of a scenario in real time.
//!
//! ```text
//!  ns lh-<pid>-server          this process: one model thread                 ns lh-<pid>-laptop
//!  app ── tun ──▶ read ─▶ Sim::inject(port) ─▶ model ─▶ drain_egress ─▶ write ──▶ tun ── app
//!                 ◀───────────────────── the same for the way back ◀──────────────
//! ```
//!
//! * Every endpoint of a scenario's `external` flows is a *real node*: a namespace with a TUN device
//!   ([`netns`]) and an address `10.77.0.k/24`. A packet from real node A to real node B enters the
//!   model at the flow between them (its forward or reverse port) and leaves it at the other end.
//! * One thread owns the model and every packet, both directions ([`realtime`]): model time is
//!   `CLOCK_MONOTONIC − t0` in integer ns; the loop advances the model to now, writes every delivered
//!   packet, reads every arrived one, arms an absolute `timerfd` at the model's next wakeup (minus a
//!   short spin window, spun through for precision) and waits in `epoll`.
//! * Every written packet's lag (write time − the model's release time) is kept: a run whose p99.9
//!   lag exceeds its budget is reported invalid.
//! * The namespaces are torn down on every exit path of this process that runs destructors (return,
//!   error, panic, Ctrl-C through the cancel flag); those of a killed process are removed by the next
//!   emulation ([`netns::remove_stale`]).
//! * [`rtp`]: plaintext RTP/RTCP of flows with `rtp`, read and rewritten for Zhuge's TWCC.
//! * [`pcap`]: captures of what crossed each real node's device, and of a simulated run's end hosts.
//! * [`control`]: a Unix socket taking run-time commands (JSON lines) while the emulation runs.

pub mod control;
pub mod netns;
pub mod pcap;
pub mod realtime;
pub mod rtp;

pub use realtime::{emulate, EmuConfig, EmuOutput, Input};

/// Why an emulation could not run.
#[derive(Debug, thiserror::Error)]
pub enum EmuError {
    /// The scenario has nothing real to carry, or names what does not exist.
    #[error("{0}")]
    Scenario(String),
    /// Namespaces, devices or the command could not be set up (privileges, iproute2, /dev/net/tun).
    #[error("{0}")]
    Setup(String),
    /// An I/O error of the loop.
    #[error("emulation I/O: {0}")]
    Io(String),
}
