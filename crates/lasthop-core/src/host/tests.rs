//! Hosts driven by a socket of the test's own: no world, no medium.

use super::*;
use crate::engine::EventQueue;
use crate::host::{external::ExternalHost, saturated::SaturatedHost, udp::UdpHost};
use crate::sim::Egress;
use crate::time::SimDuration;

/// A socket that records what the host sends and keeps its timers in a queue the test pops.
struct TestSocket {
    q: EventQueue<Wake>,
    tracker: FlowTracker,
    next_id: u64,
    /// (from, to) of the flow.
    ends: (crate::packet::NodeId, crate::packet::NodeId),
    sent: Vec<(Packet, Option<Payload>)>,
    egress: Vec<Egress>,
}

impl TestSocket {
    fn new() -> Self {
        let tracker = FlowTracker::new("f".into(), "test", "a".into(), "b".into(), SimTime::ZERO, SimTime::from_secs(100));
        TestSocket { q: EventQueue::new(), tracker, next_id: 0, ends: (1, 2), sent: Vec::new(), egress: Vec::new() }
    }
    /// Moves the clock to `t` (no timer may be due before it).
    fn at(&mut self, t: SimTime) {
        assert!(self.q.peek_time().is_none_or(|p| p >= t), "a timer was due before {t}");
        self.q.advance_clock(t);
    }
    /// Fires the next timer into `h`; its time.
    fn fire(&mut self, h: &mut dyn Host) -> Option<SimTime> {
        let (t, w) = self.q.pop()?;
        h.on_wake(w, self);
        Some(t)
    }
}

impl Socket for TestSocket {
    fn now(&self) -> SimTime {
        self.q.now()
    }
    fn end(&self) -> SimTime {
        SimTime::from_secs(100)
    }
    fn open(&mut self, seq: u64, size: u32, reverse: bool, hdr: Hdr) -> Packet {
        let (src, dst) = if reverse { (self.ends.1, self.ends.0) } else { self.ends };
        let now = self.q.now();
        self.next_id += 1;
        Packet { id: self.next_id - 1, flow: 0, seq, size, src, dst, hop: 0, dscp: 0, sent: now, enqueued: now, hdr }
    }
    fn send(&mut self, pkt: Packet, payload: Option<Payload>) {
        self.sent.push((pkt, payload));
    }
    fn tracker(&mut self) -> &mut FlowTracker {
        &mut self.tracker
    }
    fn schedule(&mut self, at: SimTime, wake: Wake) -> TimerId {
        self.q.schedule(at, wake)
    }
    fn cancel(&mut self, id: TimerId) {
        self.q.cancel(id);
    }
    fn egress(&mut self, e: Egress) {
        self.egress.push(e);
    }
}

fn ms(v: u64) -> SimDuration {
    SimDuration::from_ms(v)
}

#[test]
fn ping_answers_a_request_and_times_the_round_trip_from_the_request() {
    let src = crate::app::UdpSource::new(crate::units::BitRate::from_mbps_f64(0.08).unwrap(), 100, false, SimTime::ZERO + ms(10), SimTime::ZERO + ms(1000));
    let mut h = UdpHost::new(src, crate::rng::Rng::derive(1, "t"), true);
    let mut s = TestSocket::new();
    h.start(&mut s);
    assert_eq!(s.fire(&mut h), Some(SimTime::ZERO + ms(10)), "the first request goes at start");
    assert_eq!(s.q.peek_time(), Some(SimTime::ZERO + ms(20)), "one request per 10 ms (100 B at 80 kbit/s)");
    let (req, _) = s.sent.pop().unwrap();
    assert_eq!((req.src, req.dst, req.size), (1, 2, 100));
    // The request arrives 3 ms later; the reply goes back carrying the request's send time.
    s.at(SimTime::ZERO + ms(13));
    h.on_packet(req, None, &mut s);
    let (reply, payload) = s.sent.pop().unwrap();
    assert_eq!((reply.src, reply.dst, reply.seq), (2, 1, req.seq));
    assert!(matches!(payload, Some(Payload::EchoOrigin(t)) if t == req.sent));
    assert_eq!(s.tracker.delivered_packets, 0, "a request is not the end of a round trip");
    s.at(SimTime::ZERO + ms(17));
    h.on_packet(reply, payload, &mut s);
    assert_eq!(s.tracker.delivered_packets, 1);
    assert_eq!(s.tracker.latencies.values(), Some(&[ms(7).as_ns()][..]), "latency = reply arrival - request send");
}

#[test]
fn saturated_source_replaces_what_leaves_except_a_refusal_at_the_send_instant() {
    let mut h = SaturatedHost::new(SimTime::ZERO + ms(1), SimTime::ZERO + ms(50), 3, 1500);
    let mut s = TestSocket::new();
    h.start(&mut s);
    for _ in 0..3 {
        assert_eq!(s.fire(&mut h), Some(SimTime::ZERO + ms(1)));
    }
    assert_eq!(s.sent.len(), 3, "the backlog goes out at start");
    let (first, _) = s.sent[0];
    // Refused by a full queue the instant it was sent: the application would block, no replacement.
    h.on_dropped(&first, DropReason::QueueFull, &mut s);
    assert_eq!(s.sent.len(), 3);
    // Dropped later (or delivered): replaced at once.
    s.at(SimTime::ZERO + ms(5));
    h.on_dropped(&first, DropReason::QueueFull, &mut s);
    h.on_packet(s.sent[1].0, None, &mut s);
    assert_eq!(s.sent.len(), 5);
    assert_eq!(s.sent[4].0.seq, 4, "one sequence space over the flow");
    // After stop nothing is replaced.
    s.at(SimTime::ZERO + ms(50));
    h.on_packet(s.sent[2].0, None, &mut s);
    assert_eq!(s.sent.len(), 5);
}

#[test]
fn external_host_numbers_injected_packets_and_hands_delivered_ones_out_by_direction() {
    let mut h = ExternalHost::new(2);
    let mut s = TestSocket::new();
    let fwd = h.inject(200, None, Hdr::None, None, false, &mut s).unwrap();
    let back = h.inject(60, Some(46), Hdr::None, None, true, &mut s).unwrap();
    assert_ne!(fwd, back);
    let (p_fwd, p_back) = (s.sent[0].0, s.sent[1].0);
    assert_eq!((p_fwd.src, p_fwd.dst, p_back.src, p_back.dst, p_back.dscp), (1, 2, 2, 1, 46));
    assert_eq!(s.tracker.sent_packets, 1, "only the forward direction is the flow's traffic");
    s.at(SimTime::ZERO + ms(4));
    h.on_packet(p_back, None, &mut s);
    h.on_packet(p_fwd, None, &mut s);
    assert_eq!(s.egress.iter().map(|e| (e.id, e.reverse)).collect::<Vec<_>>(), vec![(back, true), (fwd, false)]);
    assert_eq!(s.tracker.delivered_packets, 1);
    // A packet made on the way (Zhuge's feedback, from the AP) to the `from` end goes back too, with its
    // RTCP message.
    let made = Packet { id: 99, src: 7, dst: 1, hdr: Hdr::Rtcp { report: 0 }, ..p_back };
    let pli = crate::app::rtc::Rtcp { body: crate::app::rtc::RtcpBody::Pli, created: SimTime::ZERO, for_cc: true, for_rtt: false };
    h.on_packet(made, Some(Payload::Rtcp(pli.clone())), &mut s);
    let e = s.egress.last().expect("handed out");
    assert_eq!((e.id, e.reverse, e.rtcp.as_ref()), (99, true, Some(&pli)));
    assert_eq!(s.tracker.delivered_packets, 1);
}
