//! Script tests: an open-loop sender, a scripted bottleneck and TWCC feedback every 100 ms, with GCC
//! reading the feedback exactly as it would from the wire.

use super::*;
use crate::rtc::twcc::build_feedback;

const ONE_WAY: SimDuration = SimDuration::from_ms(20);
const FEEDBACK: SimDuration = SimDuration::from_ms(100);

/// A sender at a fixed packet gap through a FIFO bottleneck whose capacity the script changes.
struct Script {
    gcc: Gcc,
    /// (transport seq, arrival at the receiver) of every packet sent; `None` = lost.
    arrivals: Vec<Option<SimTime>>,
    capacity: BitRate,
    link_free: SimTime,
    next_send: SimTime,
    next_feedback: SimTime,
    reported: u64,
    fb_count: u8,
    gap: SimDuration,
    size: u64,
}

impl Script {
    fn new(start_kbps: u64, gap_ms: u64) -> Self {
        Script {
            gcc: Gcc::new(GccParams { start_kbps, probing: false, ..Default::default() }),
            arrivals: vec![],
            capacity: BitRate::from_mbps(100),
            link_free: SimTime::ZERO,
            next_send: SimTime::ZERO,
            next_feedback: SimTime::ZERO + FEEDBACK,
            reported: 0,
            fb_count: 0,
            gap: SimDuration::from_ms(gap_ms),
            size: 1_200,
        }
    }

    fn send(&mut self, lose: &dyn Fn(u64) -> bool) {
        let (t, seq) = (self.next_send, self.arrivals.len() as u64);
        self.gcc.on_packet_sent(SentPacket { transport_seq: seq, send_time: t, size_bytes: self.size, probe_cluster: None });
        let start = t.max(self.link_free);
        self.link_free = start + self.capacity.tx_time(self.size);
        self.arrivals.push((!lose(seq)).then_some(self.link_free + ONE_WAY));
        self.next_send += self.gap;
    }

    /// Feedback built by the receiver `ONE_WAY` before `now`, processed by the sender at `now`.
    fn feedback(&mut self) {
        let now = self.next_feedback;
        let cutoff = now - ONE_WAY;
        let received: Vec<(u64, SimTime)> = (self.reported..self.arrivals.len() as u64)
            .filter_map(|s| self.arrivals[s as usize].filter(|&a| a <= cutoff).map(|a| (s, a)))
            .collect();
        for msg in build_feedback(&received, Some(self.reported), &mut self.fb_count) {
            self.reported = msg.base_seq + msg.status_count() as u64;
            self.gcc.on_feedback(now, &msg);
        }
        self.next_feedback += FEEDBACK;
    }

    /// Runs until `until`, calling `each` after every feedback.
    fn run(&mut self, until: SimTime, lose: &dyn Fn(u64) -> bool, each: &mut dyn FnMut(SimTime, &Gcc)) {
        while self.next_send.min(self.next_feedback) < until {
            if self.next_send < self.next_feedback {
                self.send(lose);
            } else {
                let now = self.next_feedback;
                self.feedback();
                each(now, &self.gcc);
            }
        }
    }
}

fn ms(x: u64) -> SimTime {
    SimTime::from_ms(x)
}

fn never(_: u64) -> bool {
    false
}

#[test]
fn flat_delays_increase_the_rate_by_eight_percent_per_second() {
    let mut s = Script::new(1_000, 4);
    let mut last = 0;
    s.run(ms(3_000), &never, &mut |_, g| {
        assert_eq!(g.detector_state(), BandwidthUsage::Normal);
        assert!(g.target_rate().bps() >= last, "never decreases");
        last = g.target_rate().bps();
    });
    // First increase at the first feedback (0.1 s), then 1.08^Δt per update: ≈ 1.08^2.8 at 2.9 s.
    let r = s.gcc.target_rate().bps() as f64;
    let expected = 1e6 * 1.08f64.powf(2.8);
    assert!((r / expected - 1.0).abs() < 0.01, "{r} vs {expected}");
    assert_eq!(s.gcc.rate_control_state(), RateControlState::Increase);
    // The feedback RTT: the oldest packet of a report was sent ≈ 100 ms + 20 ms one way + 20 ms back
    // before it is processed.
    let rtt = s.gcc.rtt().unwrap().as_ms_f64();
    assert!((130.0..=145.0).contains(&rtt), "{rtt}");
}

#[test]
fn a_growing_delay_trend_is_overuse_and_the_rate_drops_to_085_times_acked() {
    // 1200 B every 8 ms (1.2 Mbit/s), start 1.5 Mbit/s; at 2 s the bottleneck drops to 1 Mbit/s, so each
    // packet waits 1.6 ms longer than the previous one.
    let mut s = Script::new(1_500, 8);
    s.run(ms(2_000), &never, &mut |_, _| {});
    assert_eq!(s.gcc.stats().delay_decreases, 0);
    let before = s.gcc.delay_based_rate();
    s.capacity = BitRate::from_mbps(1);
    let mut seen = None;
    s.run(ms(4_000), &never, &mut |now, g| {
        if seen.is_none() && g.stats().delay_decreases > 0 {
            seen = Some((now, g.detector_state(), g.delay_based_rate(), g.target_rate(), g.acked_rate()));
        }
    });
    let (at, state, delay, target, acked) = seen.expect("over-use detected");
    assert_eq!(state, BandwidthUsage::Overusing);
    let acked = acked.unwrap().bps() as f64;
    assert!((1.0e6..1.25e6).contains(&acked), "acked {acked}");
    assert!((delay.bps() as f64 - 0.85 * acked).abs() <= 1.0, "{delay} vs 0.85 × {acked}");
    assert_eq!(target, delay, "the loss controller follows the delay-based cut");
    assert!(delay < before);
    assert!(at <= ms(2_600), "detected at {at:?}");
    assert_eq!(s.gcc.stats().overuse_events, 1);
}

#[test]
fn a_draining_queue_is_underuse_and_holds_the_rate() {
    let mut s = Script::new(1_500, 8);
    s.run(ms(2_000), &never, &mut |_, _| {});
    s.capacity = BitRate::from_mbps(1);
    s.run(ms(3_000), &never, &mut |_, _| {});
    assert!(s.gcc.stats().delay_decreases > 0);
    // Capacity 1.5 Mbit/s: the queue drains, packets arrive 6.4 ms apart for 8 ms of sending.
    s.capacity = BitRate::from_kbps(1_500);
    let mut held = vec![];
    s.run(ms(4_000), &never, &mut |_, g| {
        if g.detector_state() == BandwidthUsage::Underusing {
            assert_eq!(g.rate_control_state(), RateControlState::Hold);
            held.push(g.delay_based_rate());
        }
    });
    assert!(held.len() >= 2, "under-use seen in {} reports", held.len());
    assert!(held.windows(2).all(|w| w[0] == w[1]), "{held:?}");
}

#[test]
fn overuse_before_any_acked_bitrate_halves_the_estimate() {
    let mut s = Script::new(3_000, 8);
    s.capacity = BitRate::from_mbps(1);
    let mut prev = s.gcc.delay_based_rate();
    let mut first = None;
    s.run(ms(1_000), &never, &mut |_, g| {
        if first.is_none() && g.stats().delay_decreases > 0 {
            first = Some((prev, g.delay_based_rate(), g.acked_rate()));
        }
        prev = g.delay_based_rate();
    });
    let (before, after, acked) = first.expect("a decrease");
    assert_eq!(acked, None, "over-use within the first 500 ms of arrivals");
    assert!((after.bps() as f64 - before.bps() as f64 / 2.0).abs() <= 1.0, "{before} → {after}");
}

#[test]
fn loss_above_ten_percent_decreases_by_half_the_loss() {
    // Every 5th packet lost (20 %). The first feedback covers seqs 0..=13 (a message ends at the last
    // packet received by then): 14 packets, fewer than 20, so no loss report yet, and the start phase
    // follows the delay-based estimate. The second covers 14..=38 and makes the first report, 7 lost of
    // 39: q = 45, target × (512 − 45)/512. Later reports are 5 of 25: q = 51.
    let mut s = Script::new(1_000, 4);
    let lose = |seq: u64| seq % 5 == 4;
    let mut reports = vec![];
    s.run(ms(3_000), &lose, &mut |_, g| reports.push((g.target_rate().bps(), g.loss_fraction())));
    assert_eq!(reports[0], (1_001_000, 0.0));
    assert_eq!(reports[1].1 * 256.0, 45.0);
    assert!((reports[1].0 as f64 - 1_001_000.0 * 467.0 / 512.0).abs() <= 1.0, "{reports:?}");
    assert_eq!(s.gcc.loss_fraction() * 256.0, 51.0);
    let targets: Vec<u64> = reports[1..].iter().map(|r| r.0).collect();
    assert!(targets.windows(2).all(|w| w[1] <= w[0]), "{targets:?}");
    // A cut at most once per 300 ms + RTT (≈ 120–140 ms): at 0.2, 0.7, 1.2, 1.7, 2.2 and 2.7 s.
    let cuts = reports.windows(2).filter(|w| w[1].0 < w[0].0).count();
    assert_eq!(cuts, 6, "{reports:?}");
    assert!(s.gcc.delay_based_rate().bps() > 1_000_000, "the delay-based estimate keeps rising");
    let lost = s.arrivals.iter().take(s.reported as usize).filter(|a| a.is_none()).count() as u64;
    assert_eq!(s.gcc.stats().packets_lost, lost);
}

#[test]
fn loss_between_two_and_ten_percent_holds() {
    // 5 % loss: after the first feedback (start phase: the delay-based 1.001 Mbit/s) the loss
    // controller holds while the delay-based estimate keeps rising.
    let mut s = Script::new(1_000, 4);
    let lose = |seq: u64| seq % 20 == 19;
    let mut targets = vec![];
    s.run(ms(3_000), &lose, &mut |_, g| targets.push(g.target_rate()));
    assert!(targets.iter().all(|&t| t == BitRate::from_kbps(1_001)), "{targets:?}");
    assert!(s.gcc.delay_based_rate() > BitRate::from_kbps(1_150));
}

#[test]
fn a_packet_reported_lost_then_received_is_taken_back() {
    let mut g = Gcc::new(GccParams::default());
    for seq in 0..3 {
        g.on_packet_sent(SentPacket { transport_seq: seq, send_time: ms(seq), size_bytes: 1_000, probe_cluster: None });
    }
    let mut count = 0;
    let first = build_feedback(&[(0, ms(20)), (2, ms(22))], None, &mut count);
    g.on_feedback(ms(100), &first[0]);
    assert_eq!((g.stats().packets_acked, g.stats().packets_lost), (2, 1));
    // The receiver re-reports from 1 after it finally arrived; 2 is a duplicate and ignored.
    let again = build_feedback(&[(1, ms(90)), (2, ms(22))], Some(1), &mut count);
    g.on_feedback(ms(200), &again[0]);
    assert_eq!((g.stats().packets_acked, g.stats().packets_lost, g.stats().statuses_ignored), (3, 0, 1));
    // Unknown sequence numbers are ignored.
    let stray = build_feedback(&[(50, ms(300))], None, &mut count);
    g.on_feedback(ms(400), &stray[0]);
    assert_eq!(g.stats().statuses_ignored, 2);
}

#[test]
fn params_parse_and_validate() {
    let p: GccParams = toml::from_str("start_kbps = 1000\ngroup_length_ms = 10\nloss_based = false").unwrap();
    assert_eq!((p.start_kbps, p.group_length_ms, p.loss_based, p.backoff), (1_000, 10, false, 0.85));
    assert!(toml::from_str::<GccParams>("start = 1").is_err());
    let bad = GccParams { max_kbps: 1, min_kbps: 5, ..Default::default() };
    assert_eq!(bad.validate().unwrap_err().field, "max_kbps");
    let schema = serde_json::to_string(&schemars::schema_for!(GccParams)).unwrap();
    assert!(schema.contains("trendline_window"));
}
