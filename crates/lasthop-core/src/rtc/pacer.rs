//! The sender's pacer (libwebrtc `PacingController`, baselines.md §5.2).
//!
//! Packets wait in two FIFO queues, retransmissions before media and FEC (libwebrtc's priority order
//! without audio and padding), and leave at the pacing rate, `pacing_factor` × the congestion
//! controller's target (2.5, libwebrtc `kDefaultPaceMultiplier`). The rate is enforced as libwebrtc's
//! "media debt": sending a packet of `s` bytes adds `s` to the debt, which drains at the pacing rate, and
//! the next packet may leave when the debt is zero. After an idle period the first packet leaves at once,
//! so a frame's first packet is never delayed by the pacer. Packet sizes are wire sizes (payload +
//! headers).
//!
//! Large queues are drained faster, as libwebrtc's `drain_large_queues`: when the queue holds more than
//! it can send in the time left to `max_queue_time_ms` (2 s, `kMaxExpectedQueueLength`) after the average
//! queued packet's wait, the rate rises to `queued bytes / time left` (time left at least 1 ms).
//!
//! The pacer assigns the transport-wide sequence number when a packet leaves ([`Pacer::pop`]), as
//! libwebrtc's egress does, so the TWCC sequence follows send order.
//!
//! Catch-up interface: [`Pacer::next_release`] is the earliest time the head packet may leave (`None`
//! when empty); [`Pacer::pop`] returns it if that time has come. Call `pop` until `None` after every
//! wake-up.
//!
//! Bandwidth probes (libwebrtc `BitrateProber`): [`Pacer::create_probe_cluster`] queues a
//! [`ProbeCluster`] requested by GCC's probe controller. An active cluster sends packets at its own rate,
//! `start + bytes_sent / rate`, ignoring the pacing rate: queued packets first, padding
//! ([`Payload::Padding`], `min_bytes / min_packets` payload, at most 1200 bytes) when the queue is empty;
//! every packet carries the cluster id. The cluster ends once it has sent both `min_bytes` and
//! `min_packets`. Probe packets are not charged to the media debt (libwebrtc charges them and caps the
//! debt at 500 ms; not charging keeps a large probe from stalling media behind it).
//!
//! Not modelled: padding when the encoder undershoots, libwebrtc's 500 ms cap on the debt, audio
//! priority, and the pacer's process-thread granularity (we release at the exact nanosecond).

use super::rtp::{Payload, RtpPacket, DEFAULT_MAX_PAYLOAD_BYTES, DEFAULT_OVERHEAD_BYTES};
use super::{check, RtcParamError};
use crate::time::{SimDuration, SimTime};
use crate::units::BitRate;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// `pacer = { pacing_factor = 2.5, max_queue_time_ms = 2000 }`; every field is optional.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct PacerParams {
    /// Pacing rate as a multiple of the target bitrate. Default 2.5 (libwebrtc `kDefaultPaceMultiplier`).
    pub pacing_factor: f64,
    /// Target upper bound on queueing, ms: above it the pacer speeds up to drain in time. Default 2000
    /// (libwebrtc `kMaxExpectedQueueLength`); 0 disables the speed-up.
    pub max_queue_time_ms: u32,
}

impl Default for PacerParams {
    fn default() -> Self {
        PacerParams { pacing_factor: 2.5, max_queue_time_ms: 2_000 }
    }
}

impl PacerParams {
    pub fn validate(&self) -> Result<(), RtcParamError> {
        check(
            self.pacing_factor.is_finite() && self.pacing_factor > 0.0,
            "pacing_factor",
            "must be finite and > 0",
        )
    }
}

/// Counters of a pacer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct PacerStats {
    pub packets_sent: u64,
    pub bytes_sent: u64,
    pub retransmissions_sent: u64,
    /// Packets that left faster than the pacing rate because the queue was too long.
    pub drained_fast: u64,
    /// Packets sent in probe clusters (media and padding).
    pub probe_packets: u64,
    pub padding_packets: u64,
    pub padding_bytes: u64,
}

/// A bandwidth probe: send at `rate` until at least `min_bytes` and `min_packets` have left.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProbeCluster {
    pub id: u32,
    pub rate: BitRate,
    pub min_bytes: u64,
    pub min_packets: u32,
}

#[derive(Clone, Copy, Debug)]
struct ActiveProbe {
    cluster: ProbeCluster,
    start: SimTime,
    bytes: u64,
    packets: u32,
}

#[derive(Clone, Copy, Debug)]
struct Queued {
    packet: RtpPacket,
    enqueued: SimTime,
}

/// A leaky-bucket pacer with a retransmission priority queue.
#[derive(Clone, Debug)]
pub struct Pacer {
    params: PacerParams,
    rate: BitRate,
    rtx: VecDeque<Queued>,
    media: VecDeque<Queued>,
    /// When the media debt reaches zero.
    debt_free_at: SimTime,
    queued_bytes: u64,
    /// Sum of the enqueue times of queued packets, ns (for the average wait).
    enqueue_sum_ns: u128,
    next_transport_seq: u64,
    /// Requested clusters with their creation time, and the one being sent.
    probes: VecDeque<(ProbeCluster, SimTime)>,
    active_probe: Option<ActiveProbe>,
    next_padding_seq: u64,
    stats: PacerStats,
}

impl Pacer {
    /// A pacer for a flow whose congestion-control target is `target`.
    pub fn new(params: PacerParams, target: BitRate) -> Self {
        debug_assert!(params.validate().is_ok());
        let rate = pacing_rate(&params, target);
        Pacer {
            params,
            rate,
            rtx: VecDeque::new(),
            media: VecDeque::new(),
            debt_free_at: SimTime::ZERO,
            queued_bytes: 0,
            enqueue_sum_ns: 0,
            next_transport_seq: 0,
            probes: VecDeque::new(),
            active_probe: None,
            next_padding_seq: 0,
            stats: PacerStats::default(),
        }
    }

    /// The pacing rate now (before any large-queue speed-up).
    pub fn rate(&self) -> BitRate {
        self.rate
    }

    /// A new congestion-control target; the remaining debt is rescaled to the new rate.
    pub fn set_target(&mut self, now: SimTime, target: BitRate) {
        let new = pacing_rate(&self.params, target);
        if self.debt_free_at > now && new != self.rate {
            let left = (self.debt_free_at - now).as_ns() as u128;
            let scaled = left * self.rate.bps() as u128 / new.bps() as u128;
            self.debt_free_at = now + SimDuration::from_ns(scaled as u64);
        }
        self.rate = new;
    }

    /// Queues a packet (a retransmission goes to the priority queue).
    pub fn push(&mut self, now: SimTime, packet: RtpPacket) {
        self.queued_bytes += packet.wire_bytes();
        self.enqueue_sum_ns += now.as_ns() as u128;
        let q = Queued { packet, enqueued: now };
        if packet.retransmission {
            self.rtx.push_back(q);
        } else {
            self.media.push_back(q);
        }
    }

    fn head(&self) -> Option<&Queued> {
        self.rtx.front().or(self.media.front())
    }

    /// Queues a bandwidth probe requested at `now`; clusters are sent one after the other.
    pub fn create_probe_cluster(&mut self, now: SimTime, cluster: ProbeCluster) {
        self.probes.push_back((cluster, now));
    }

    /// When the next probe packet is due, if a probe is active or queued.
    fn next_probe(&self) -> Option<SimTime> {
        match (&self.active_probe, self.probes.front()) {
            (Some(a), _) => Some(a.start + a.cluster.rate.tx_time(a.bytes)),
            (None, Some((_, created))) => Some(*created),
            (None, None) => None,
        }
    }

    /// Earliest time the next packet may leave (a probe packet, or the head packet at the pacing
    /// rate); `None` when nothing is queued and no probe is pending.
    pub fn next_release(&self) -> Option<SimTime> {
        let paced = self.head().map(|q| q.enqueued.max(self.debt_free_at));
        match (paced, self.next_probe()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Sends the next packet if its time has come: assigns its transport-wide sequence number and
    /// charges its size to the debt (probe packets are not charged).
    pub fn pop(&mut self, now: SimTime) -> Option<RtpPacket> {
        if self.next_probe().is_some_and(|t| t <= now) {
            return Some(self.pop_probe(now));
        }
        if self.head()?.enqueued.max(self.debt_free_at) > now {
            return None;
        }
        let rate = self.effective_rate(now);
        let packet = self.dequeue()?;
        self.debt_free_at = self.debt_free_at.max(now) + rate.tx_time(packet.wire_bytes());
        self.stats.drained_fast += (rate > self.rate) as u64;
        Some(self.stamp(packet))
    }

    fn dequeue(&mut self) -> Option<RtpPacket> {
        let q = self.rtx.pop_front().or_else(|| self.media.pop_front())?;
        self.queued_bytes -= q.packet.wire_bytes();
        self.enqueue_sum_ns -= q.enqueued.as_ns() as u128;
        Some(q.packet)
    }

    /// Assigns the transport sequence number and counts the packet.
    fn stamp(&mut self, mut packet: RtpPacket) -> RtpPacket {
        packet.transport_seq = Some(self.next_transport_seq);
        self.next_transport_seq += 1;
        self.stats.packets_sent += 1;
        self.stats.bytes_sent += packet.wire_bytes();
        self.stats.retransmissions_sent += packet.retransmission as u64;
        packet
    }

    /// One packet of the active (or next) probe cluster: queued media first, else padding.
    fn pop_probe(&mut self, now: SimTime) -> RtpPacket {
        let mut probe = match self.active_probe.take() {
            Some(a) => a,
            None => {
                let (cluster, _) = self.probes.pop_front().expect("a probe is due");
                ActiveProbe { cluster, start: now, bytes: 0, packets: 0 }
            }
        };
        let mut packet = self.dequeue().unwrap_or_else(|| self.padding(&probe.cluster, now));
        packet.probe_cluster = Some(probe.cluster.id);
        probe.bytes += packet.wire_bytes();
        probe.packets += 1;
        if probe.bytes < probe.cluster.min_bytes || probe.packets < probe.cluster.min_packets {
            self.active_probe = Some(probe);
        }
        self.stats.probe_packets += 1;
        self.stamp(packet)
    }

    fn padding(&mut self, cluster: &ProbeCluster, now: SimTime) -> RtpPacket {
        let size = (cluster.min_bytes / cluster.min_packets.max(1) as u64).clamp(1, DEFAULT_MAX_PAYLOAD_BYTES as u64);
        let seq = self.next_padding_seq;
        self.next_padding_seq += 1;
        self.stats.padding_packets += 1;
        self.stats.padding_bytes += size + DEFAULT_OVERHEAD_BYTES as u64;
        RtpPacket {
            seq,
            transport_seq: None,
            payload_bytes: size as u32,
            overhead_bytes: DEFAULT_OVERHEAD_BYTES,
            capture_time: now,
            retransmission: false,
            probe_cluster: None,
            payload: Payload::Padding,
        }
    }

    /// The pacing rate, raised when the queue cannot drain within `max_queue_time_ms`.
    fn effective_rate(&self, now: SimTime) -> BitRate {
        let limit = SimDuration::from_ms(self.params.max_queue_time_ms as u64);
        if limit.is_zero() || self.queued_packets() == 0 {
            return self.rate;
        }
        let left = limit.saturating_sub(self.average_wait(now)).max(SimDuration::from_ms(1));
        let needed = self.queued_bytes as u128 * 8 * 1_000_000_000 / left.as_ns() as u128;
        self.rate.max(BitRate::from_bps(needed as u64))
    }

    fn average_wait(&self, now: SimTime) -> SimDuration {
        let n = self.queued_packets() as u128;
        let mean_enqueue = (self.enqueue_sum_ns / n) as u64;
        now.saturating_since(SimTime::from_ns(mean_enqueue))
    }

    /// Time to send everything queued at the pacing rate (libwebrtc `ExpectedQueueTime`).
    pub fn expected_queue_time(&self) -> SimDuration {
        self.rate.tx_time(self.queued_bytes)
    }

    pub fn queued_packets(&self) -> usize {
        self.rtx.len() + self.media.len()
    }

    pub fn queued_bytes(&self) -> u64 {
        self.queued_bytes
    }

    pub fn stats(&self) -> PacerStats {
        self.stats
    }
}

fn pacing_rate(params: &PacerParams, target: BitRate) -> BitRate {
    BitRate::from_bps(((target.bps() as f64 * params.pacing_factor).round() as u64).max(1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rtc::frames::packetize;

    fn frame(first_seq: u64, size: u64) -> Vec<RtpPacket> {
        let mut seq = first_seq;
        packetize(0, size, false, SimTime::ZERO, 1_200, 48, &mut seq)
    }

    fn drain(p: &mut Pacer) -> Vec<(u64, u64)> {
        let mut out = vec![];
        while let Some(t) = p.next_release() {
            let pkt = p.pop(t).unwrap();
            out.push((t.as_ns() / 1_000, pkt.seq));
        }
        out
    }

    #[test]
    fn releases_at_two_and_a_half_times_the_target() {
        // Target 3.2 Mbit/s → pace 8 Mbit/s; 1248-B packets take 1248 µs each.
        let mut p = Pacer::new(PacerParams::default(), BitRate::from_kbps(3_200));
        for pkt in frame(0, 3_600) {
            p.push(SimTime::from_ms(10), pkt);
        }
        assert_eq!(p.expected_queue_time(), SimDuration::from_us(3 * 1_248));
        assert_eq!(drain(&mut p), vec![(10_000, 0), (11_248, 1), (12_496, 2)]);
        // The debt is paid by 13.744 ms; a packet queued after that leaves at once.
        p.push(SimTime::from_ms(20), frame(3, 100)[0]);
        assert_eq!(p.next_release(), Some(SimTime::from_ms(20)));
        assert!(p.pop(SimTime::from_us(19_999)).is_none());
        assert_eq!(p.pop(SimTime::from_ms(20)).unwrap().transport_seq, Some(3));
    }

    #[test]
    fn retransmissions_jump_the_queue_and_transport_seq_follows_send_order() {
        let mut p = Pacer::new(PacerParams::default(), BitRate::from_kbps(3_200));
        for pkt in frame(10, 3_600) {
            p.push(SimTime::ZERO, pkt);
        }
        let first = p.pop(SimTime::ZERO).unwrap();
        let mut rtx = frame(4, 1_000)[0];
        rtx.retransmission = true;
        p.push(SimTime::from_us(100), rtx);
        let order: Vec<(u64, Option<u64>, bool)> = std::iter::from_fn(|| {
            let t = p.next_release()?;
            p.pop(t).map(|q| (q.seq, q.transport_seq, q.retransmission))
        })
        .collect();
        assert_eq!(first.transport_seq, Some(0));
        assert_eq!(order, vec![(4, Some(1), true), (11, Some(2), false), (12, Some(3), false)]);
        assert_eq!(p.stats().retransmissions_sent, 1);
    }

    #[test]
    fn rate_change_rescales_the_remaining_debt() {
        let mut p = Pacer::new(PacerParams::default(), BitRate::from_kbps(3_200));
        for pkt in frame(0, 2_400) {
            p.push(SimTime::ZERO, pkt);
        }
        p.pop(SimTime::ZERO).unwrap();
        // 1248 µs of debt at 8 Mbit/s; halfway through, the target doubles: 624 µs left become 312.
        p.set_target(SimTime::from_us(624), BitRate::from_kbps(6_400));
        assert_eq!(p.next_release(), Some(SimTime::from_us(936)));
    }

    #[test]
    fn probe_clusters_send_media_then_padding_at_the_probe_rate() {
        // Pace 800 kbit/s; a 9.6 Mbit/s probe of at least 6000 B and 5 packets, with two packets queued.
        let mut p = Pacer::new(PacerParams::default(), BitRate::from_kbps(320));
        for pkt in frame(0, 2_400) {
            p.push(SimTime::ZERO, pkt);
        }
        let cluster = ProbeCluster { id: 7, rate: BitRate::from_kbps(9_600), min_bytes: 6_000, min_packets: 5 };
        p.create_probe_cluster(SimTime::from_ms(1), cluster);
        assert_eq!(p.next_release(), Some(SimTime::ZERO));
        let first = p.pop(SimTime::ZERO).unwrap();
        assert_eq!(first.probe_cluster, None);
        // At 1 ms the probe starts with the one queued packet (1248 B take 1.04 ms at 9.6 Mbit/s), then
        // padding of 6000 / 5 = 1200 B payload (1248 B on the wire): 1248 · 5 = 6240 ≥ 6000 after 5.
        let mut sent = vec![];
        while let Some(t) = p.next_release() {
            let pkt = p.pop(t).unwrap();
            sent.push((t.as_ns() / 1_000, pkt.probe_cluster, matches!(pkt.payload, Payload::Padding), pkt.wire_bytes()));
        }
        assert_eq!(
            sent,
            vec![
                (1_000, Some(7), false, 1_248),
                (2_040, Some(7), true, 1_248),
                (3_080, Some(7), true, 1_248),
                (4_120, Some(7), true, 1_248),
                (5_160, Some(7), true, 1_248),
            ]
        );
        assert_eq!((p.stats().probe_packets, p.stats().padding_packets), (5, 4));
        assert_eq!(sent.len() + 1, p.stats().packets_sent as usize);
    }

    #[test]
    fn a_queue_longer_than_two_seconds_drains_faster() {
        // Pace 100 kbit/s; 40 packets of 1248 B need 4 s at that rate.
        let mut p = Pacer::new(PacerParams::default(), BitRate::from_kbps(40));
        for pkt in frame(0, 48_000) {
            p.push(SimTime::ZERO, pkt);
        }
        assert_eq!(p.expected_queue_time(), SimDuration::from_us(3_993_600));
        let times = drain(&mut p);
        let last = times.last().unwrap().0;
        assert!(last <= 2_000_000, "last packet left at {last} µs");
        assert!(p.stats().drained_fast > 0);
        let mut slow = Pacer::new(PacerParams { max_queue_time_ms: 0, ..Default::default() }, BitRate::from_kbps(40));
        for pkt in frame(0, 48_000) {
            slow.push(SimTime::ZERO, pkt);
        }
        assert_eq!(drain(&mut slow).last().unwrap().0, 39 * 99_840);
    }
}
