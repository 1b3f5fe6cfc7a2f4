//! The open loop: a [`Sim`] the caller steps. [`run`] is the closed loop over it; a stepped run (the
//! Python API, the real-time emulator) calls [`Sim::next_wakeup`], [`Sim::advance_to`],
//! [`Sim::inject`] and [`Sim::drain_egress`] in any order and ends with [`Sim::finish`], which gives the
//! same [`RunOutput`] as `run` (and, for the same inputs, the same event digest).

use super::build::Built;
use super::world::World;
use crate::app::rtc::{Rtcp, RtcpBody};
use crate::packet::Hdr;
use crate::payload::Payload;
use crate::scenario::{Loc, Scenario};
use crate::stats::{FlowSummary, PacketLog};
use crate::time::SimTime;

/// Called periodically with the simulated time; return `false` to stop the run.
pub type Progress<'a> = &'a mut dyn FnMut(SimTime) -> bool;

/// Why a run did not complete.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum RunError {
    #[error("run interrupted at simulated time {0}")]
    Interrupted(SimTime),
}

/// Everything a finished run produced.
#[derive(Debug)]
pub struct RunOutput {
    pub packets: PacketLog,
    pub flows: Vec<FlowSummary>,
    /// Per-component counters (queues, links), JSON for `summary.json`.
    pub components: serde_json::Value,
    pub events: u64,
    /// A digest of the (time, event) sequence: equal digests mean identical event traces.
    pub event_digest: u64,
    /// The model time the results run to: the scenario's end, or earlier for a run stopped before it.
    pub sim_end: SimTime,
    /// Every RTT sample of every flow.
    pub rtt: crate::stats::RttSeries,
    /// Every video frame decoded or given up.
    pub frames: crate::stats::FrameSeries,
    /// Every PSDU transmission on the Wi-Fi medium (empty without one), and each of its links' ends.
    pub tx: crate::mac::medium::TxLog,
    pub tx_links: Vec<(String, String)>,
}

/// Where an injected packet enters the model: one end of an `external` flow (`reverse`: at its `to`
/// node, travelling back to `from`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Port {
    pub flow: u32,
    pub reverse: bool,
}

/// A packet handed in from outside: its IP size and, if not the flow's, its DSCP.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Injected {
    pub size: u32,
    pub dscp: Option<u8>,
    /// A TCP segment's header fields, read in the clear (the emulator parses real packets): the model
    /// then treats it as TCP (Zhuge holds real ACKs; nothing is rewritten).
    pub tcp: Option<InjectedTcp>,
    /// What a plaintext RTP or RTCP packet carries that the model uses (an `external` flow with `rtp`).
    pub rtp: Option<InjectedRtp>,
}

/// The fields of a real RTP or RTCP packet the model uses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum InjectedRtp {
    /// RTP media with its transport-wide sequence number as on the wire (the model unwraps it per flow).
    Media { transport_seq: u16 },
    /// RTCP, with the bytes of its transport-cc feedback message if it has one (RTPFB, FMT 15; Zhuge
    /// strips it and sends its own).
    Rtcp { twcc: Option<Vec<u8>> },
}

/// The fields of a real TCP segment the model uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InjectedTcp {
    pub seq: u32,
    /// Payload bytes (0: a pure ACK, or SYN/FIN).
    pub len: u32,
    pub ack: u32,
}

/// A packet of an `external` flow that reached the other end of the model.
#[derive(Clone, Debug, PartialEq)]
pub struct Egress {
    pub flow: u32,
    pub reverse: bool,
    /// The id [`Sim::inject`] returned for it (its row in the packet log).
    pub id: u64,
    pub size: u32,
    pub dscp: u8,
    /// When it was injected, and when the model delivered it.
    pub sent: SimTime,
    pub delivered: SimTime,
    /// For RTCP of a flow with `rtp`: the message as the model delivers it. `for_cc` false: a mechanism
    /// took its transport-cc feedback out (Zhuge); a message `Sim::inject` never saw (its id was not
    /// returned by it) is one a mechanism made (Zhuge's own TWCC).
    pub rtcp: Option<crate::app::rtc::Rtcp>,
}

/// Why an injection was refused.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum InjectError {
    #[error("flow {0} does not exist")]
    NoSuchFlow(u32),
    #[error("flow {0} is not an `external` flow; only external flows take injected packets")]
    NotExternal(u32),
    #[error("packet size {0} is outside 28..=65535 bytes")]
    BadSize(u32),
    #[error("DSCP {0} is outside 0..=63")]
    BadDscp(u8),
    #[error("the run ended at {0}")]
    Ended(SimTime),
    #[error("not a transport-cc feedback message: {0}")]
    BadTwcc(crate::rtc::twcc::TwccError),
}

/// Why a run-time command was refused: the key of `set` at fault (`None`: the target; nested keys
/// dotted, `add_flows.0.flow`) and why. Shown as the scenario's checks show a path: `set.add_flows[0].flow`.
#[derive(Debug, thiserror::Error, PartialEq)]
#[error("{}{msg}", .key.as_ref().map(|k| format!("{}: ", Loc::root().key("set").dotted(k))).unwrap_or_default())]
pub struct CommandError {
    pub key: Option<String>,
    pub msg: String,
}

/// A model the caller steps.
pub struct Sim {
    w: Box<World>,
    scenario: Scenario,
    /// Per `external` flow with RTP: the unwrapper of its media's transport-wide sequence numbers.
    twcc_seqs: std::collections::BTreeMap<u32, crate::rtc::twcc::SeqUnwrapper>,
    /// And of the base sequence numbers of the feedback about it.
    twcc_feedback_seqs: std::collections::BTreeMap<u32, crate::rtc::twcc::SeqUnwrapper>,
    /// The commands [`Sim::command`] applied, as `commands` entries at their times, and which of them
    /// add to what later commands may name (LAST-PQ's `add_flows`): all that resolving a later one
    /// reads, so a long control session stays cheap per command.
    stepped: Vec<super::command::CommandConfig>,
    stepped_adds: Vec<usize>,
}

/// The event digest after the event tagged `tag` at `now`.
fn fold_digest(digest: u64, now: SimTime, tag: u64) -> u64 {
    (digest ^ now.as_ns().wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ tag).wrapping_mul(0x0000_0100_0000_01b3)
}

impl Sim {
    /// Builds the model of `scenario` (already validated) with `seed`, at time zero.
    pub fn new(scenario: &Scenario, seed: u64) -> Sim {
        Sim::with_mechanisms(scenario, seed, &[]).expect("a validated scenario installs")
    }

    /// Like [`Sim::new`], with mechanisms the caller installs after the scenario's own on the named
    /// nodes (experiments with a mechanism that has no scenario key): APs, or stations for transmit-path
    /// stages. A conflict with an installed mechanism's role is refused, as is a part the node cannot
    /// take.
    pub fn with_mechanisms(scenario: &Scenario, seed: u64, extra: &[super::build::ExtraMechanism<'_>]) -> Result<Sim, crate::mech::InstallError> {
        Sim::build(scenario, seed, extra, None)
    }

    /// Like [`Sim::new`], with `tap` seeing every packet the end hosts send and receive from time
    /// zero on; [`Sim::finish_with_tap`] hands it back.
    pub fn with_tap(scenario: &Scenario, seed: u64, tap: Box<dyn super::PacketTap>) -> Sim {
        Sim::build(scenario, seed, &[], Some(tap)).expect("a validated scenario installs")
    }

    fn build(scenario: &Scenario, seed: u64, extra: &[super::build::ExtraMechanism<'_>], tap: Option<Box<dyn super::PacketTap>>) -> Result<Sim, crate::mech::InstallError> {
        let mut w = Box::new(Built::world(scenario, seed, extra)?);
        w.tap = tap;
        w.start();
        for (i, c) in scenario.commands.iter().enumerate() {
            w.q.schedule_after_instant(super::build::secs(c.at_s), super::world::Event::Command { idx: i as u32 });
        }
        Ok(Sim { w, scenario: scenario.clone(), twcc_seqs: Default::default(), twcc_feedback_seqs: Default::default(), stepped: Vec::new(), stepped_adds: Vec::new() })
    }

    /// Reserves the packet log for `packets` more packets (a real-time run cannot afford the copy when a
    /// growing log doubles).
    pub fn reserve_packets(&mut self, packets: usize) {
        self.w.log.reserve(packets);
    }

    /// The model's clock: the last event processed, or the time last advanced to.
    pub fn now(&self) -> SimTime {
        self.w.q.now()
    }

    /// The end of the run (`duration_s`).
    pub fn end(&self) -> SimTime {
        self.w.end
    }

    /// Events processed so far.
    pub fn events(&self) -> u64 {
        self.w.q.events_processed()
    }

    /// When the model next has something to do, if before the end of the run.
    pub fn next_wakeup(&self) -> Option<SimTime> {
        self.w.q.peek_time().filter(|&t| t <= self.w.end)
    }

    /// Processes the next event; returns its time, or `None` when nothing is due before the end.
    pub fn step(&mut self) -> Option<SimTime> {
        self.next_wakeup()?;
        let w = &mut *self.w;
        let (now, ev) = w.q.pop().expect("peeked");
        w.digest = fold_digest(w.digest, now, ev.tag(&w.pipes));
        w.handle(now, ev);
        Some(now)
    }

    /// Processes every event due at or before `t` (at most the end of the run) and moves the clock to
    /// `t`; returns the number of events processed.
    pub fn advance_to(&mut self, t: SimTime) -> u64 {
        let t = t.min(self.w.end);
        let before = self.events();
        while self.next_wakeup().is_some_and(|e| e <= t) {
            self.step();
        }
        self.w.q.advance_clock(t);
        self.events() - before
    }

    /// The port of `external` flow `name` (`reverse`: its `to` end).
    pub fn port(&self, name: &str, reverse: bool) -> Option<Port> {
        let flow = self.w.trackers.iter().position(|t| t.name == name)? as u32;
        self.w.sources[flow as usize].external.then_some(Port { flow, reverse })
    }

    /// Hands a packet to the model now (after every event due now), at `port`; returns its id. It comes out of
    /// [`Sim::drain_egress`] when the model delivers it (or shows as dropped in the packet log).
    pub fn inject(&mut self, port: Port, pkt: Injected) -> Result<u64, InjectError> {
        let f = port.flow;
        let src = self.w.sources.get(f as usize).ok_or(InjectError::NoSuchFlow(f))?;
        if !src.external {
            return Err(InjectError::NotExternal(f));
        }
        if !(28..=65535).contains(&pkt.size) {
            return Err(InjectError::BadSize(pkt.size));
        }
        if let Some(d) = pkt.dscp.filter(|&d| d > 63) {
            return Err(InjectError::BadDscp(d));
        }
        let now = self.now();
        if self.next_wakeup().is_none() && now >= self.w.end {
            return Err(InjectError::Ended(self.w.end));
        }
        let mut hdr = pkt.tcp.map_or(Hdr::None, |t| Hdr::Tcp { seq: t.seq as u64, len: t.len, ack: t.ack as u64, ts_echo: SimTime::ZERO, ecn: Default::default() });
        let mut payload = None;
        match pkt.rtp {
            Some(InjectedRtp::Media { transport_seq }) => {
                let seq = self.twcc_seqs.entry(f).or_default().unwrap(transport_seq);
                hdr = Hdr::Rtp { twcc: seq as u32, frame: 0, index: 0, count: 1, fec: false, rtx: false };
            }
            Some(InjectedRtp::Rtcp { twcc }) => {
                hdr = Hdr::Rtcp { report: 0 };
                if let Some(bytes) = twcc {
                    let fb = crate::rtc::twcc::TwccFeedback::parse(&bytes, self.twcc_feedback_seqs.entry(f).or_default()).map_err(InjectError::BadTwcc)?;
                    payload = Some(Payload::Rtcp(Rtcp { body: RtcpBody::Twcc(fb), created: now, for_cc: true, for_rtt: false }));
                }
            }
            None => {}
        }
        Ok(self.w.inject(f, pkt.size, pkt.dscp, hdr, payload, port.reverse).expect("an external flow's host takes injected packets"))
    }

    /// Applies a run-time command now, after every event due now (those are run first): `target` and
    /// `set` as in the scenario's `commands` (see [`super::command`]), which run after every other
    /// event of their instant too. It counts as the event a `commands` entry appended after the
    /// scenario's own (and the commands stepped before it) would be, at this time: the scenario with
    /// those entries gives the same run and event digest.
    pub fn command(&mut self, target: &str, set: &serde_json::Map<String, serde_json::Value>) -> Result<(), CommandError> {
        let err = |(key, msg)| CommandError { key, msg };
        let now = self.now();
        self.advance_to(now);
        // The scenario's commands due by now have run (those of this instant too: they come first).
        let due = |c: &&super::command::CommandConfig| super::build::secs(c.at_s) <= now;
        let stepped_adds = || self.stepped_adds.iter().map(|&i| &self.stepped[i]);
        let earlier: Vec<&super::command::CommandConfig> = self.scenario.commands.iter().filter(due).chain(stepped_adds()).collect();
        let t = super::command::resolve(&self.scenario, target, set, &earlier).map_err(err)?;
        // Nor may an add make a scripted command still to come unusable (LAST-PQ's `add_flows` of a
        // flow a later command adds): those were resolved without it.
        let adds = set.contains_key("add_flows");
        let new = super::command::CommandConfig { at_s: now.as_secs_f64(), target: target.to_string(), set: set.clone() };
        let pending: Vec<usize> = if adds { (0..self.scenario.commands.len()).filter(|&i| !due(&&self.scenario.commands[i])).collect() } else { Vec::new() };
        for (&i, mut before) in pending.iter().zip(super::command::adds_before(&self.scenario, pending.iter().copied())) {
            let c = &self.scenario.commands[i];
            before.extend(stepped_adds().chain(std::iter::once(&new)));
            if let Err((key, msg)) = super::command::resolve(&self.scenario, &c.target, &c.set, &before) {
                let cmd = Loc::root().key("commands").index(i);
                let at = key.map_or_else(|| cmd.key("target"), |k| cmd.key("set").dotted(&k));
                return Err(CommandError { key: None, msg: format!("it would leave the scenario's commands[{i}] (at {} s) unusable: {at}: {msg}", c.at_s) });
            }
        }
        self.w.apply_command(now, &t, set).map_err(err)?;
        let ev = super::world::Event::Command { idx: (self.scenario.commands.len() + self.stepped.len()) as u32 };
        self.w.digest = fold_digest(self.w.digest, now, ev.tag(&self.w.pipes));
        self.w.q.count_unqueued_event();
        if adds {
            self.stepped_adds.push(self.stepped.len());
        }
        self.stepped.push(new);
        Ok(())
    }

    /// The commands [`Sim::command`] applied so far, as `commands` entries at their times: appended to
    /// the scenario's, they make a scenario that runs as this stepped run did.
    pub fn stepped_commands(&self) -> &[super::command::CommandConfig] {
        &self.stepped
    }

    /// Every component's counters and state so far, as `summary.json`'s `components` will hold them at
    /// the end (a mechanism's current rate, its controller's estimate, queue counters); for reading
    /// the model while it is stepped. Link utilizations are over the whole run's length.
    pub fn components(&self) -> serde_json::Value {
        self.w.components()
    }

    /// The packets of `external` flows delivered since the last call, in delivery order.
    pub fn drain_egress(&mut self) -> Vec<Egress> {
        std::mem::take(&mut self.w.egress)
    }

    /// Ends the run: metrics and counters of everything up to now.
    pub fn finish(self) -> RunOutput {
        self.finish_with_tap().0
    }

    /// Like [`Sim::finish`], handing back the tap of [`Sim::with_tap`] (to close its files).
    pub fn finish_with_tap(mut self) -> (RunOutput, Option<Box<dyn super::PacketTap>>) {
        let tap = self.w.tap.take();
        // Stopped early (a stepped run, an emulation whose command exited), the results are up to now;
        // with nothing left to happen before the end, the run is whole.
        let stop = if self.next_wakeup().is_some() { self.now() } else { self.end() };
        (self.w.finish(stop), tap)
    }

    /// Steps until at least `rows` packet-log rows are finished, or `rows` transmissions or RTT samples
    /// logged, so that [`Sim::take_packet_rows`], [`Sim::take_tx_rows`] or [`Sim::take_rtt_rows`] can
    /// take them, or for [`FRAME_TAKE_EVENTS`] events, so that [`Sim::take_frame_rows`] gathers the frames
    /// (`Ok(true)`); or to the end (`Ok(false)`); `progress` as in [`Sim::run_to_end`].
    pub fn run_until_rows(&mut self, rows: usize, progress: Progress<'_>) -> Result<bool, RunError> {
        while let Some(now) = self.step() {
            if self.events() & 0xfff == 0 {
                if self.events() & 0xffff == 0 && !progress(now) {
                    return Err(RunError::Interrupted(now));
                }
                if self.events() % FRAME_TAKE_EVENTS == 0 {
                    return Ok(true);
                }
                let rtt = || self.w.trackers.iter().map(|t| t.rtt_series.len()).sum::<usize>();
                if self.w.log.finished_rows() >= rows || self.w.medium.as_ref().is_some_and(|m| m.tx_log.len() >= rows) || rtt() >= rows {
                    return Ok(true);
                }
            }
        }
        progress(self.end());
        Ok(false)
    }

    /// Takes the packet log's finished rows out, in packet-id order up to the first packet still in
    /// flight, if there are at least `min_rows` (the rows left go to [`RunOutput::packets`]).
    pub fn take_packet_rows(&mut self, min_rows: usize) -> Option<crate::stats::PacketLog> {
        self.w.log.take_finished(min_rows)
    }

    /// Hands back a chunk of [`Sim::take_packet_rows`] once it has been copied out, so the log reuses its
    /// memory ([`crate::stats::PacketLog::recycle`]).
    pub fn recycle_packet_rows(&mut self, chunk: crate::stats::PacketLog) {
        self.w.log.recycle(chunk);
    }

    /// Takes out the per-PSDU transmission rows logged so far (final when logged), with the names of
    /// the links they index, if there are at least `min_rows` (the rows left go to [`RunOutput::tx`]).
    pub fn take_tx_rows(&mut self, min_rows: usize) -> Option<(crate::mac::medium::TxLog, Vec<(String, String)>)> {
        let m = self.w.medium.as_mut()?;
        (m.tx_log.len() >= min_rows.max(1)).then(|| (std::mem::take(&mut m.tx_log), m.link_names()))
    }

    /// Takes out the RTT samples taken before now (in time order), if there are at least `min_rows`
    /// (the rest go to [`RunOutput::rtt`]).
    pub fn take_rtt_rows(&mut self, min_rows: usize) -> Option<crate::stats::RttSeries> {
        let now = self.now();
        (self.w.trackers.iter().map(|t| t.rtt_series.len()).sum::<usize>() >= min_rows.max(1)).then(|| self.w.take_rtt(now))
    }

    /// Gathers the video frames that ended before now from the hosts, and takes out all gathered so far
    /// (in the order they ended) if there are at least `min_rows` (the rest go to [`RunOutput::frames`]).
    pub fn take_frame_rows(&mut self, min_rows: usize) -> Option<crate::stats::FrameSeries> {
        let now = self.now();
        let more = self.w.take_frames(now);
        self.w.frame_rows.append(more);
        (self.w.frame_rows.len() >= min_rows.max(1)).then(|| std::mem::take(&mut self.w.frame_rows))
    }

    /// The flows' names, in flow order (the `flow` index of the logs).
    pub fn flow_names(&self) -> Vec<String> {
        self.w.trackers.iter().map(|t| t.name.clone()).collect()
    }

    /// Rows the packet log holds now (those not taken out).
    pub fn packet_rows_held(&self) -> usize {
        self.w.log.len()
    }

    /// Steps to the end; `progress` sees the model time now and then and stops the run by returning false.
    pub fn run_to_end(&mut self, progress: Progress<'_>) -> Result<(), RunError> {
        while let Some(now) = self.step() {
            if self.events() & 0xffff == 0 && !progress(now) {
                return Err(RunError::Interrupted(now));
            }
        }
        progress(self.end());
        Ok(())
    }
}

/// How often (in events) [`Sim::run_until_rows`] comes back so that frames move out of the hosts
/// (about 1 s of model time for a busy BSS).
pub const FRAME_TAKE_EVENTS: u64 = 1 << 20;

/// Runs `scenario` (already validated) with `seed` to its end.
pub fn run(scenario: &Scenario, seed: u64, progress: Progress<'_>) -> Result<RunOutput, RunError> {
    let mut sim = Sim::new(scenario, seed);
    sim.run_to_end(progress)?;
    Ok(sim.finish())
}
