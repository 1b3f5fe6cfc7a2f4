//! The spec's hand-computable test vectors (§18, TV6–TV12) and the policy's choices with a view of
//! the driver's queues written by the test.

use super::controller::{DelayController, Demand};
use super::drain::DrainEstimator;
use super::policy::LastPqPolicy;
use super::*;

use crate::mac::txpath::driver::{DriverPolicy, DriverView, FlowHead, HwEnqueue};
use crate::mac::txpath::gate::TxEvent;
use crate::packet::Packet;
use crate::time::{SimDuration, SimTime};
use std::collections::BTreeMap;

fn ctrl(l_pq_us: u64, prev: Option<f64>) -> DelayController {
    DelayController::with_state(LastPqParams::default().controller(), Demand { ms: 20.0, percentile: 95.0 }, l_pq_us, prev)
}

fn step(l_pq_us: u64, prev: Option<f64>, l: f64) -> u64 {
    let mut c = ctrl(l_pq_us, prev);
    c.update(l);
    c.l_pq_us(SimTime::ZERO)
}

#[test]
fn tv6_thresholds_and_out_of_band_steps() {
    let c = ctrl(8000, None);
    assert_eq!((c.th_h_ms(), c.th_l_ms()), (19.0, 10.0));
    assert_eq!(step(8000, None, 21.0), 5600);
    assert_eq!(step(8000, None, 8.0), 10_400);
    // Exactly on a threshold: in band (first window: unchanged).
    assert_eq!(step(8000, None, 10.0), 8000);
    assert_eq!(step(8000, None, 19.0), 8000);
    // The initial value is th_L.
    let mut fresh = DelayController::new(LastPqParams::default().controller(), Demand { ms: 20.0, percentile: 95.0 }, SimTime::ZERO);
    assert_eq!(fresh.l_pq_us(SimTime::ZERO), 10_000);
}

#[test]
fn tv7_in_band_gradient() {
    assert_eq!(step(8000, Some(12.0), 15.0), 6971);
    assert_eq!(step(8000, Some(15.0), 12.0), 11_000);
    assert_eq!(step(8000, Some(25.0), 18.0), 10_333);
    assert_eq!(step(8000, Some(14.0), 14.0), 8000);
    assert_eq!(step(8000, None, 14.0), 8000);
}

#[test]
fn tv8_clamps_and_a_runtime_change() {
    let p = LastPqParams::default().controller();
    let mut c = DelayController::new(p, Demand { ms: 20.0, percentile: 95.0 }, SimTime::ZERO);
    for _ in 0..3 {
        c.update(5.0); // ×1.3 each: 13 000, 16 900, 21 970 → clamped to 20 000
    }
    assert_eq!(c.l_pq_us(SimTime::ZERO), 20_000);
    for _ in 0..20 {
        c.update(30.0);
    }
    assert_eq!(c.l_pq_us(SimTime::ZERO), 1000);
    // Back up to the ceiling, then the demand changes to 15 ms.
    for _ in 0..20 {
        c.update(5.0);
    }
    assert_eq!(c.l_pq_us(SimTime::ZERO), 20_000);
    c.set_demand(SimTime::ZERO, Demand { ms: 15.0, percentile: 95.0 });
    assert_eq!((c.th_h_ms(), c.th_l_ms()), (14.0, 7.5));
    assert_eq!(c.l_pq_us(SimTime::ZERO), 15_000);
    c.update(16.0);
    assert_eq!(c.l_pq_us(SimTime::ZERO), 10_500);
}

#[test]
fn windows_close_at_their_ends_and_empty_ones_change_nothing() {
    let p = LastPqParams::default().controller();
    let mut c = DelayController::new(p, Demand { ms: 20.0, percentile: 95.0 }, SimTime::ZERO);
    let ms = SimTime::from_ms;
    // 20 samples in window 1 ([0, 20) ms): the p95 is the 19th smallest = 19 ms + 2 → above th_H.
    for i in 1..=20u64 {
        c.on_sample(ms(i - 1), (i + 2) * 1_000_000);
    }
    assert_eq!(c.l_pq_us(ms(19)), 10_000, "window still open");
    assert_eq!(c.l_pq_us(ms(20)), 7000, "closed at its end: p95 = 21 ms > 19");
    // Windows 2 and 3 without samples: nothing changes.
    assert_eq!(c.l_pq_us(ms(60)), 7000);
    assert_eq!(c.history.len(), 1);
    assert_eq!(c.history[0].3, 1);
}

#[test]
fn tv9_hwq_draining_estimate() {
    let mut d = DrainEstimator::new(0.125, SimDuration::from_ms(1), [150.0; 4]);
    assert!((d.l_hq_us(2) - 1150.0).abs() < 1e-9);
    d.on_enqueue(SimTime::ZERO, 2, SimDuration::from_ns(2_439_802), SimDuration::from_us(88));
    assert!((d.l_hq_us(2) - 3827.8).abs() < 0.01, "{}", d.l_hq_us(2));
    // Urgency of a head VR packet that waited 2.0 ms: l_e = 5.83 ms.
    let l_e = 2000.0 + d.l_hq_us(2);
    assert!(l_e > 5000.0 && l_e < 6000.0);
}

#[test]
fn tv10_t_ctt_ewma() {
    let mut d = DrainEstimator::new(0.125, SimDuration::from_ms(1), [150.0; 4]);
    let us = |x: f64| SimTime::from_ns((x * 1e3).round() as u64);
    d.on_enqueue(us(100_000.0), 2, SimDuration::from_ns(2_439_800), SimDuration::from_us(88));
    d.on_enqueue(us(100_500.0), 2, SimDuration::from_us(1200), SimDuration::from_us(88));
    d.on_done(us(102_900.0), 2, true);
    assert!((d.t_ctt_us(2) - 177.775).abs() < 1e-6, "{}", d.t_ctt_us(2));
    d.on_done(us(105_600.0), 2, true);
    assert!((d.t_ctt_us(2) - 332.053).abs() < 1e-3, "{}", d.t_ctt_us(2));
    // (c) a negative sample counts as 0.
    d.on_enqueue(us(105_700.0), 2, SimDuration::from_us(5000), SimDuration::from_us(88));
    d.on_done(us(105_800.0), 2, true);
    assert!((d.t_ctt_us(2) - 332.053 * 0.875).abs() < 1e-3);
    // A failed PSDU leaves the queue without a sample.
    d.on_enqueue(us(106_000.0), 2, SimDuration::from_us(100), SimDuration::from_us(88));
    let before = d.t_ctt_us(2);
    d.on_done(us(109_000.0), 2, false);
    assert_eq!(d.t_ctt_us(2), before);
}

#[test]
fn tv12_mark_and_percentile() {
    assert_eq!(mark::encode(6971), 0xB45F_1B3B);
    assert_eq!(mark::encode(6971), 3_026_131_771);
    assert_eq!(mark::decode(0xB45F_1B3B), Some(6971));
    assert_eq!(mark::decode(0xB45E_1B3B), None);
    assert_eq!(mark::encode(100_000) & 0xffff, 0xffff);
    let s20: Vec<u64> = (1..=20).collect();
    assert_eq!(crate::stats::percentile(&s20, 95.0), Some(19));
    let s75: Vec<u64> = (1..=75).collect();
    assert_eq!(crate::stats::percentile(&s75, 95.0), Some(72));
}

/// A driver view written by the test: (flow, txq, ac) → (packets, head enqueue, byte deficit); TXQ
/// airtime deficits; (flow, txq, ac) → the oldest enqueue among its MPDUs in the software retry queue.
#[derive(Default)]
struct FakeView {
    flows: BTreeMap<(u32, usize, usize), FlowHead>,
    deficits: BTreeMap<usize, i64>,
    retries: BTreeMap<(u32, usize, usize), SimTime>,
}

impl DriverView for FakeView {
    fn flow_head(&self, flow: u32, txq: usize, ac: usize) -> Option<FlowHead> {
        self.flows.get(&(flow, txq, ac)).copied()
    }
    fn txq_deficit(&self, txq: usize, _ac: usize) -> i64 {
        self.deficits.get(&txq).copied().unwrap_or(0)
    }
    fn flow_retry_head(&self, flow: u32, txq: usize, ac: usize) -> Option<SimTime> {
        self.retries.get(&(flow, txq, ac)).copied()
    }
}

fn pkt(flow: u32) -> Packet {
    Packet { id: 0, flow, seq: 0, size: 1500, src: 0, dst: 1, hop: 0, dscp: 0, sent: SimTime::ZERO, enqueued: SimTime::ZERO, hdr: Default::default() }
}

fn policy(flows: &[(&str, f64)]) -> LastPqPolicy {
    let p = LastPqParams { flows: flows.iter().map(|&(f, ms)| FlowDemand { flow: f.into(), demand_ms: ms, percentile: 95.0 }).collect(), ..Default::default() };
    p.validate().unwrap();
    LastPqPolicy::new(&p, &(0..flows.len() as u32).collect::<Vec<_>>(), Vec::new())
}

#[test]
fn tv11_urgent_selection() {
    const BE: usize = 2;
    // f1 (flow 0) and f2 (flow 1) in TXQ A (0); f3 (flow 2) in TXQ B (1). Demands of 2 ms: l_pq = 1000 µs.
    let mut pol = policy(&[("f1", 2.5), ("f2", 2.5), ("f3", 2.5)]);
    let now = SimTime::from_ms(10);
    for (flow, txq) in [(0, 0), (1, 0), (2, 1)] {
        pol.on_enqueue(SimTime::ZERO, &pkt(flow), txq, BE);
    }
    let mut v = FakeView::default();
    v.flows.insert((0, 0, BE), (3, Some(SimTime::ZERO), 300));
    v.flows.insert((1, 0, BE), (3, Some(SimTime::ZERO), -1200));
    v.flows.insert((2, 1, BE), (3, Some(SimTime::ZERO), 0));
    v.deficits.insert(0, 120);
    v.deficits.insert(1, -40);
    assert_eq!(pol.priority_txq(now, BE, &v), Some(0), "A has the greater airtime deficit");
    assert_eq!(pol.priority_flow(now, 0, BE, &v), Some(0), "f1 has the greater byte deficit");
    v.deficits.insert(1, 500);
    assert_eq!(pol.priority_txq(now, BE, &v), Some(1));
    // No urgent flow (heads just arrived): the scheduler's order, with the cap for other TXQs.
    for f in v.flows.values_mut() {
        f.1 = Some(now);
    }
    assert_eq!(pol.priority_txq(now, BE, &v), None);
    assert_eq!(pol.aggregation_cap(now, 5, BE), Some(SimDuration::from_us(1000)), "a non-prioritized TXQ is capped");
    assert_eq!(pol.aggregation_cap(now, 0, BE), None, "a TXQ with a prioritized flow is not");
    assert_eq!(pol.aggregation_cap(now, 5, 1), None, "no prioritized flow in VI");
    assert_eq!(pol.aggregation_cap(now + SimDuration::from_ms(101), 5, BE), None, "inactive after 100 ms");
    // Empty flows are never urgent.
    for f in v.flows.values_mut() {
        *f = (0, None, 0);
    }
    assert_eq!(pol.priority_txq(now + SimDuration::from_secs(1), BE, &v), None);
}

#[test]
fn urgency_uses_the_hardware_queue_ahead() {
    const BE: usize = 2;
    let mut pol = policy(&[("vr", 20.0)]); // l_pq(0) = th_L = 10 000 µs
    pol.on_enqueue(SimTime::ZERO, &pkt(0), 0, BE);
    let mut v = FakeView::default();
    let now = SimTime::from_ms(8);
    v.flows.insert((0, 0, BE), (5, Some(SimTime::ZERO), 0));
    // l_sq = 8 ms, l_hq (empty) = T_ctt0(BE) + 1 ms = 1.11 ms: 9.11 < 10 → not urgent.
    assert_eq!(pol.priority_txq(now, BE, &v), None);
    // One 2 ms PSDU in the hardware queue: l_hq ≈ 3.3 ms → urgent.
    pol.on_hw_enqueue(now, &HwEnqueue { txq: 1, ac: BE, bytes: 40_000, air: SimDuration::from_ms(2), mac: SimDuration::from_us(88) });
    assert_eq!(pol.priority_txq(now, BE, &v), Some(0));
    pol.on_tx_event(now, &TxEvent::Complete { link: 1, ac: BE, bytes: 40_000, success: true, attempts: 1, head_to_done: SimDuration::from_ms(2), irq_delay: SimDuration::ZERO });
    assert_eq!(pol.priority_txq(now, BE, &v), None);
}

#[test]
fn subframes_awaiting_retry_keep_a_flow_urgent() {
    const BE: usize = 2;
    let now = SimTime::from_ms(12);
    let mut v = FakeView::default();
    // The flow's queue in FQ is empty; two of its subframes, enqueued at 0, wait for a retry.
    v.flows.insert((0, 0, BE), (0, None, 0));
    v.retries.insert((0, 0, BE), SimTime::ZERO);
    let mut pol = policy(&[("vr", 20.0)]); // l_pq(0) = 10 000 µs < l_sq = 12 ms
    pol.on_enqueue(SimTime::ZERO, &pkt(0), 0, BE);
    assert_eq!(pol.priority_txq(now, BE, &v), Some(0), "the TXQ goes first: its retries are the flow's head");
    assert_eq!(pol.priority_flow(now, 0, BE, &v), None, "nothing to dequeue from FQ: retries first, then FQ order");
    // A newer packet in FQ does not hide the older retry.
    v.flows.insert((0, 0, BE), (1, Some(SimTime::from_ms(11)), 0));
    assert_eq!(pol.priority_txq(now, BE, &v), Some(0));
    v.retries.clear();
    assert_eq!(pol.priority_txq(now, BE, &v), None, "the packet in FQ alone waited 1 ms");
    // With `urgent_retries = false` only the FQ queue counts.
    let p = LastPqParams { flows: vec![FlowDemand { flow: "vr".into(), demand_ms: 20.0, percentile: 95.0 }], urgent_retries: false, ..Default::default() };
    let mut off = LastPqPolicy::new(&p, &[0], Vec::new());
    off.on_enqueue(SimTime::ZERO, &pkt(0), 0, BE);
    v.flows.insert((0, 0, BE), (0, None, 0));
    v.retries.insert((0, 0, BE), SimTime::ZERO);
    assert_eq!(off.priority_txq(now, BE, &v), None);
}

#[test]
fn commands_change_a_demand_and_refuse_unknown_flows() {
    let mut pol = policy(&[("vr", 20.0)]);
    let set = |j: serde_json::Value| j.as_object().unwrap().clone();
    pol.on_command(SimTime::ZERO, &set(serde_json::json!({ "demand_ms": { "vr": 15 } }))).unwrap();
    assert_eq!(pol.stats()["flows"][0]["demand_ms"], 15.0);
    let e = pol.on_command(SimTime::ZERO, &set(serde_json::json!({ "demand_ms": { "voip": 15 } }))).unwrap_err();
    assert_eq!(e.0, "demand_ms.voip");
}

/// Spec §16's `add_flow` as a command: the flow is dedicated from then on (its next packets take a flow
/// queue of their own), its controller starts its windows at the command, and the same command may set
/// its demand; a flow prioritized already, one that does not end at this AP, or a demand without a
/// band is refused with its path.
#[test]
fn add_flows_prioritizes_a_flow_from_the_command_on() {
    let p = LastPqParams { flows: vec![FlowDemand { flow: "vr".into(), demand_ms: 20.0, percentile: 95.0 }], ..Default::default() };
    let mut pol = LastPqPolicy::new(&p, &[0], vec![("vr".into(), 0), ("t1".into(), 3)]);
    let set = |j: serde_json::Value| j.as_object().unwrap().clone();
    assert!(!pol.dedicated(3));
    // Off the 20-ms grid of time zero, so that a controller windowed from zero would tell.
    let at = SimTime::from_us(5_005_000);
    pol.on_command(at, &set(serde_json::json!({ "add_flows": [{ "flow": "t1", "demand_ms": 30 }], "percentile": { "t1": 90 } }))).unwrap();
    assert!(pol.dedicated(3) && pol.dedicated(0));
    let t1 = &pol.stats()["flows"][1];
    assert_eq!((t1["flow"].as_str(), t1["demand_ms"].as_f64(), t1["percentile"].as_f64()), (Some("t1"), Some(30.0), Some(90.0)));
    // Its first window is [5.005, 5.025) s: samples at 5.010 and 5.024 s close none (from zero, the one
    // at 5.024 s would close [5.000, 5.020)); one at 5.026 s closes it.
    pol.on_enqueue(at, &pkt(3), 1, 2);
    let ack = |pol: &mut LastPqPolicy, ms: u64| pol.on_acked(SimTime::from_ms(5_000 + ms), &Packet { enqueued: at, ..pkt(3) });
    ack(&mut pol, 10);
    ack(&mut pol, 24);
    assert_eq!(pol.stats()["flows"][1]["windows"], 0);
    ack(&mut pol, 26);
    assert_eq!(pol.stats()["flows"][1]["windows"], 1);
    let refused = |j: serde_json::Value| pol_err(&p, j);
    assert_eq!(refused(serde_json::json!({ "add_flows": [{ "flow": "vr", "demand_ms": 30 }] })), "add_flows.0.flow");
    assert_eq!(refused(serde_json::json!({ "add_flows": [{ "flow": "b1", "demand_ms": 30 }] })), "add_flows.0.flow");
    assert_eq!(refused(serde_json::json!({ "add_flows": [{ "flow": "t1", "demand_ms": 1.5 }] })), "add_flows.0.demand_ms");
    assert_eq!(refused(serde_json::json!({ "add_flows": [{ "flow": "t1" }] })), "add_flows.0");
}

fn pol_err(p: &LastPqParams, set: serde_json::Value) -> String {
    let mut pol = LastPqPolicy::new(p, &[0], vec![("vr".into(), 0), ("t1".into(), 3)]);
    pol.on_command(SimTime::ZERO, set.as_object().unwrap()).unwrap_err().0
}

#[test]
fn params_are_checked_with_their_paths() {
    let bad = |p: LastPqParams| p.validate().unwrap_err().0;
    let d = |ms: f64| FlowDemand { flow: "vr".into(), demand_ms: ms, percentile: 95.0 };
    assert!(LastPqParams::default().validate().is_ok(), "no flows yet: they may come with add_flows");
    assert_eq!(bad(LastPqParams { flows: vec![d(-1.0)], ..Default::default() }), "flows.0.demand_ms");
    assert_eq!(bad(LastPqParams { flows: vec![d(1.5)], ..Default::default() }), "flows.0.demand_ms", "α_L·ld = 0.75 ≤ l_GI: no band");
    assert_eq!(bad(LastPqParams { flows: vec![d(20.0), d(30.0)], ..Default::default() }), "flows.1.flow");
    assert_eq!(bad(LastPqParams { flows: vec![FlowDemand { percentile: 0.0, ..d(20.0) }], ..Default::default() }), "flows.0.percentile");
    assert_eq!(bad(LastPqParams { flows: vec![d(20.0)], md: 1.0, ..Default::default() }), "md");
}

fn policy_with(flows: &[(&str, f64)], f: impl FnOnce(&mut LastPqParams)) -> LastPqPolicy {
    let mut p = LastPqParams { flows: flows.iter().map(|&(f, ms)| FlowDemand { flow: f.into(), demand_ms: ms, percentile: 95.0 }).collect(), ..Default::default() };
    f(&mut p);
    p.validate().unwrap();
    LastPqPolicy::new(&p, &(0..flows.len() as u32).collect::<Vec<_>>(), Vec::new())
}

/// `count_drops_as_inf` (spec §13.1): a window of 20 packets acknowledged after 5 ms and one dropped
/// has its p95 (nearest rank 20 of 21) at 5 ms, below the band [10, 19] ms, so l_pq grows by MI; with
/// two dropped the rank-20 sample is a drop, l(t) = ∞ is above the band and l_pq falls by MD. Without
/// the option drops give no sample, and the same window is below the band. After an infinite l(t−1), a
/// window falling inside the band steps by the full AI.
#[test]
fn drops_count_as_infinite_latency_when_asked() {
    let l_pq_after = |drops: usize, count: bool| {
        let mut pol = policy_with(&[("vr", 20.0)], |p| p.count_drops_as_inf = count);
        let (enq, done) = (SimTime::from_ms(1), SimTime::from_ms(6));
        let mut acked = pkt(0);
        acked.enqueued = enq;
        for _ in 0..(21 - drops) {
            pol.on_acked(done, &acked);
        }
        for _ in 0..drops {
            pol.on_dropped(done, &pkt(0));
        }
        pol.on_acked(SimTime::from_ms(20), &pkt(0)); // closes the window (0, 20 ms]
        pol.stats()["flows"][0]["l_pq_us"].as_u64().unwrap()
    };
    // l_pq(0) = th_L = 10 000 µs.
    assert_eq!(l_pq_after(1, true), 13_000, "p95 on a 5-ms sample: below the band, ×(1 + MI)");
    assert_eq!(l_pq_after(2, true), 7_000, "p95 on a drop: above the band, ×(1 − MD)");
    assert_eq!(l_pq_after(2, false), 13_000, "drops give no sample by default");
    let mut c = ctrl(7_000, Some(f64::INFINITY));
    c.update(15.0);
    assert_eq!(c.l_pq_us(SimTime::ZERO), 12_000, "after an infinite l(t−1), a falling in-band window adds AI");
}

/// `lpq_source = "head_packet"` (spec §13.4): the throttler compares the head packet's sojourn with the
/// l_pq marked on it at enqueue, not the flow's latest value; once that packet has left, the next
/// packet's mark counts.
#[test]
fn the_head_packet_carries_the_l_pq_it_was_enqueued_with() {
    const BE: usize = 2;
    let ms = SimTime::from_ms;
    for source in [LpqSource::Flow, LpqSource::HeadPacket] {
        let mut pol = policy_with(&[("vr", 20.0)], |p| p.lpq_source = source);
        // Window (0, 20 ms]: one packet acknowledged after 4 ms, below the band: l_pq 10 → 13 ms at 20 ms.
        let mut acked = pkt(0);
        acked.enqueued = ms(1);
        pol.on_acked(ms(5), &acked);
        pol.on_enqueue(ms(15), &pkt(0), 0, BE); // A, marked 10 ms
        let mut v = FakeView::default();
        v.flows.insert((0, 0, BE), (1, Some(ms(15)), 0));
        // At 26 ms A has waited 11 ms, plus l_hq of an empty hardware queue (T_ctt0 + 1 ms = 1.11 ms):
        // 12.11 ms, above its mark (10) but below the flow's l_pq (13).
        let urgent = pol.priority_txq(ms(26), BE, &v).is_some();
        assert_eq!(urgent, source == LpqSource::HeadPacket, "{source:?}");
        // B arrives (marked 13 ms) and A leaves: B's sojourn of 11 ms is judged against 13 ms either way.
        pol.on_enqueue(ms(27), &pkt(0), 0, BE);
        v.flows.insert((0, 0, BE), (1, Some(ms(27)), 0));
        assert_eq!(pol.priority_txq(ms(38), BE, &v), None, "{source:?}");
        assert_eq!(pol.priority_txq(ms(39), BE, &v), Some(0), "{source:?}");
    }
}
