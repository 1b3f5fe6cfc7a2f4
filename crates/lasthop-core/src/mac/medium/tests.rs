//! Timeline tests of the medium, driven event by event without the world.

use super::*;
use crate::engine::EventQueue;
use crate::mac::config::BssParams;
use crate::phy::mcs::{ChannelWidth, GuardInterval};
use crate::scenario::{Scenario, WifiConfig};
use std::path::Path;

struct Q(EventQueue<WifiEvent>);
impl Scheduler for Q {
    fn schedule(&mut self, at: SimTime, ev: WifiEvent) -> TimerId {
        self.0.schedule(at, ev)
    }
    fn cancel(&mut self, id: TimerId) {
        self.0.cancel(id);
    }
}

fn wifi_config(extra: &str) -> WifiConfig {
    let text = format!("duration_s = 1\n[[aps]]\nname = \"ap\"\nlast_hop = {{ type = \"wifi\", {extra} }}\n");
    let sc = Scenario::from_toml_str(&text, Path::new(".")).unwrap();
    match &sc.aps[0].last_hop {
        crate::scenario::LastHop::Wifi(w) => (**w).clone(),
        _ => unreachable!(),
    }
}

fn pkt(id: u64, src: NodeId, dst: NodeId) -> Packet {
    Packet { id, flow: 0, seq: id, size: 1500, src, dst, hop: 0, dscp: 0, sent: SimTime::ZERO, enqueued: SimTime::ZERO, hdr: Default::default() }
}

fn pkt_dscp(id: u64, src: NodeId, dst: NodeId, dscp: u8) -> Packet {
    Packet { dscp, ..pkt(id, src, dst) }
}

/// A medium with an AP (node 0) and one station (node 1) at `snr_db`; downlink at HT MCS `dl`, uplink
/// at MCS `ul`.
fn pair(snr_db: f64, dl: u8, ul: u8) -> Medium {
    let c = wifi_config("ampdu = false");
    let p = BssParams::from_config(&c);
    let tx = |m| TxVector::ht(m, ChannelWidth::Mhz20, GuardInterval::Ns800).unwrap();
    let (mut ap, mut sta) = (p.fifo_path(), p.fifo_path());
    p.add_link(&mut ap, 0, tx(dl), None);
    p.add_link(&mut sta, 1, tx(ul), None);
    let bss = vec![(p, c.collision_ifs)];
    let nodes = vec![NodeSpec { node: 0, bss: 0, is_ap: true, name: "ap".into(), path: ap }, NodeSpec { node: 1, bss: 0, is_ap: false, name: "sta".into(), path: sta }];
    let links = vec![
        LinkSpec { tx: 0, rx: 1, txv: tx(dl), channel: ChannelModel::fixed(snr_db), rx_antennas: 1 },
        LinkSpec { tx: 1, rx: 0, txv: tx(ul), channel: ChannelModel::fixed(snr_db), rx_antennas: 1 },
    ];
    let mut m = Medium::new(bss, nodes, links, 2, 1);
    m.enable_trace();
    m
}

/// Runs until `stop` returns true for a trace entry or the queue empties; returns the whole trace.
fn run_until(m: &mut Medium, q: &mut Q, log: &mut PacketLog, trace: &mut Vec<MediumTrace>, stop: impl Fn(&MediumTrace) -> bool) {
    let (mut delivered, mut dropped) = (Vec::new(), Vec::new());
    while let Some((now, ev)) = q.0.pop() {
        let mut out = Outputs { log, delivered: &mut delivered, dropped: &mut dropped, air: None };
        m.handle(now, ev, q, &mut out);
        let new = m.take_trace();
        let hit = new.iter().any(&stop);
        trace.extend(new);
        if hit {
            return;
        }
    }
}

/// ```text
///  AP   ██████ MCS7 at 8 dB: nothing decoded        ···· ACK timeout 45 µs
///  STA        └ FCS error → EIFS = SIFS 16 + est. ACK 32 + AIFS (16 + 3·9) → first slot at +91 µs
///  STA uplink (MCS0 decodes at 8 dB) starts at end + 91 µs + b·9 µs, never on the NAV grid (+87)
/// ```
#[test]
fn receiver_of_an_errored_frame_waits_eifs() {
    let mut m = pair(8.0, 7, 0);
    let mut q = Q(EventQueue::new());
    let mut log = PacketLog::new(false);
    let (mut delivered, mut dropped) = (Vec::new(), Vec::new());
    let mut out = Outputs { log: &mut log, delivered: &mut delivered, dropped: &mut dropped, air: None };
    m.enqueue(SimTime::ZERO, 0, 1, pkt(0, 0, 1), &mut q, &mut out);
    let mut trace = Vec::new();
    run_until(&mut m, &mut q, &mut log, &mut trace, |e| matches!(e, MediumTrace::PpduStart { node: 0, .. }));
    let now = q.0.now();
    let mut out = Outputs { log: &mut log, delivered: &mut delivered, dropped: &mut dropped, air: None };
    m.enqueue(now, 1, 0, pkt(1, 1, 0), &mut q, &mut out);
    run_until(&mut m, &mut q, &mut log, &mut trace, |e| matches!(e, MediumTrace::PpduStart { node: 1, .. }));
    let ap_end = trace.iter().find_map(|e| match e {
        MediumTrace::PpduEnd { t, node: 0, ok: 0, .. } => Some(*t),
        _ => None,
    });
    let sta_start = trace.iter().find_map(|e| match e {
        MediumTrace::PpduStart { t, node: 1, .. } => Some(*t),
        _ => None,
    });
    let gap = (sta_start.unwrap() - ap_end.unwrap()).as_ns();
    assert!(gap >= 91_000 && (gap - 91_000) % 9_000 == 0, "gap {gap} ns: {trace:?}");
}

/// Two stations whose backoffs end in the same slot collide; each then waits its ACK timeout, and the
/// AP (a third party) resumes AIFS after the longer PPDU.
#[test]
fn same_slot_backoffs_collide() {
    let c = wifi_config("profile = \"ns3\", ampdu = false");
    let p = BssParams::from_config(&c);
    let tx = TxVector::ht(7, ChannelWidth::Mhz20, GuardInterval::Ns800).unwrap();
    let nodes = || -> Vec<NodeSpec> {
        (0..3u16)
            .map(|i| {
                let mut path = p.fifo_path();
                if i > 0 {
                    p.add_link(&mut path, i as u32 - 1, tx, None);
                }
                NodeSpec { node: i, bss: 0, is_ap: i == 0, name: format!("n{i}"), path }
            })
            .collect()
    };
    let bss = vec![(p.clone(), c.collision_ifs)];
    let links = [LinkSpec { tx: 1, rx: 0, txv: tx, channel: ChannelModel::fixed(40.0), rx_antennas: 1 },
        LinkSpec { tx: 2, rx: 0, txv: tx, channel: ChannelModel::fixed(40.0), rx_antennas: 1 }];
    // Find a seed where the two stations draw the same first backoff.
    for seed in 0..200 {
        let mut m = Medium::new(bss.clone(), nodes(), links.iter().map(|l| LinkSpec { channel: l.channel.clone(), ..*l }).collect(), 3, seed);
        if m.nodes[1].edcaf[2].backoff_slots() != m.nodes[2].edcaf[2].backoff_slots() {
            continue;
        }
        m.enable_trace();
        let mut q = Q(EventQueue::new());
        let mut log = PacketLog::new(false);
        let (mut d, mut x) = (Vec::new(), Vec::new());
        let mut out = Outputs { log: &mut log, delivered: &mut d, dropped: &mut x, air: None };
        m.enqueue(SimTime::ZERO, 1, 0, pkt(0, 1, 0), &mut q, &mut out);
        m.enqueue(SimTime::ZERO, 2, 0, pkt(1, 2, 0), &mut q, &mut out);
        let mut trace = Vec::new();
        run_until(&mut m, &mut q, &mut log, &mut trace, |e| matches!(e, MediumTrace::PpduEnd { collided: true, .. }));
        let starts: Vec<SimTime> = trace.iter().filter_map(|e| if let MediumTrace::PpduStart { t, .. } = e { Some(*t) } else { None }).collect();
        assert_eq!(starts.len(), 2);
        assert_eq!(starts[0], starts[1], "same slot");
        assert_eq!(m.nodes[1].stats.collisions, 1);
        assert_eq!(m.nodes[2].stats.collisions, 1);
        return;
    }
    panic!("no seed with equal first backoffs");
}

/// A Law AP (node 0) and one station (node 1) on a channel of `snr_db`; `extra` configures the BSS.
fn law_pair(extra: &str, law: crate::mech::law::LawParams, snr_db: f64, seed: u64) -> Medium {
    let c = wifi_config(extra);
    let p = BssParams::from_config(&c);
    let tx = |m| TxVector::ht(m, ChannelWidth::Mhz20, GuardInterval::Ns800).unwrap();
    let linux = p.linux_params(&crate::mac::config::default_linux_path()).unwrap();
    let driver = crate::mech::law::driver::LawDriverParams::on(&p, &law);
    let ap = crate::mech::law::driver::law_path(driver, crate::mac::config::link_rates(&c).supported, linux, &mut Rng::derive(1, "fq")).unwrap();
    let mut ap: crate::mac::txpath::TxPath = Box::new(ap);
    p.add_link(&mut ap, 0, tx(7), None);
    let mut sta = p.fifo_path();
    p.add_link(&mut sta, 1, tx(0), None);
    let bss = vec![(p, c.collision_ifs)];
    let nodes = vec![NodeSpec { node: 0, bss: 0, is_ap: true, name: "ap".into(), path: ap }, NodeSpec { node: 1, bss: 0, is_ap: false, name: "sta".into(), path: sta }];
    let links = vec![
        LinkSpec { tx: 0, rx: 1, txv: tx(7), channel: ChannelModel::fixed(snr_db), rx_antennas: 1 },
        LinkSpec { tx: 1, rx: 0, txv: tx(0), channel: ChannelModel::fixed(snr_db), rx_antennas: 1 },
    ];
    let mut m = Medium::new(bss, nodes, links, 2, seed);
    m.enable_trace();
    m
}

/// Runs events until the AP has returned `n` PSDUs at their hardware deadline; returns the time of
/// the event that returned the n-th.
fn until_time_limit_returns(m: &mut Medium, q: &mut Q, log: &mut PacketLog, trace: &mut Vec<MediumTrace>, n: u64) -> SimTime {
    let (mut delivered, mut dropped) = (Vec::new(), Vec::new());
    while let Some((now, ev)) = q.0.pop() {
        let mut out = Outputs { log, delivered: &mut delivered, dropped: &mut dropped, air: None };
        m.handle(now, ev, q, &mut out);
        trace.extend(m.take_trace());
        if m.nodes[0].stats.hw_time_limit_returns >= n {
            return now;
        }
    }
    panic!("the hardware never returned a PSDU at its deadline: {trace:?}");
}

/// Law's Limit_h while the PSDU backs off:
/// ```text
///  t = 0      packet 0 → head of the BE hardware queue, deadline 3 ms; backoff of > 340 slots (CW 1023)
///  t = 3 ms   deadline: the hardware returns it at exactly 3 ms (no attempt made); the driver pushes
///             the retransmission straight back, head again with deadline 6 ms; the backoff goes on
///  t > 3 ms   the backoff ends: the retransmission goes out (MCS6) and is acknowledged
/// ```
#[test]
fn law_limit_h_returns_a_backing_off_psdu_at_the_exact_deadline() {
    let extra = "ampdu = false, edca_ap = { be = { cw_min = 1023, cw_max = 1023 } }";
    let law = crate::mech::law::LawParams { initial_rate_index: 7, ..Default::default() };
    for seed in 0..100 {
        let mut m = law_pair(extra, law.clone(), 40.0, seed);
        if m.nodes[0].edcaf[2].backoff_slots() <= 340 {
            continue;
        }
        let mut q = Q(EventQueue::new());
        let mut log = PacketLog::new(true);
        let (mut delivered, mut dropped) = (Vec::new(), Vec::new());
        log.open(&pkt(0, 0, 1));
        let mut out = Outputs { log: &mut log, delivered: &mut delivered, dropped: &mut dropped, air: None };
        m.enqueue(SimTime::ZERO, 0, 1, pkt(0, 0, 1), &mut q, &mut out);
        let mut trace = Vec::new();
        let at = until_time_limit_returns(&mut m, &mut q, &mut log, &mut trace, 1);
        assert_eq!(at, SimTime::from_ms(3), "returned at exactly Limit_h");
        assert!(trace.is_empty(), "no attempt before the deadline: {trace:?}");
        assert_eq!(m.nodes[0].path.hw_deadline(2), Some(SimTime::from_ms(6)), "the retransmission's own Limit_h");
        assert_eq!(m.nodes[0].stats.xretries, 0);
        assert_eq!(log.stages[Stage::HwHead as usize][0], 0);
        run_until(&mut m, &mut q, &mut log, &mut trace, |e| matches!(e, MediumTrace::PpduEnd { node: 0, .. }));
        match trace[..] {
            [MediumTrace::PpduStart { t, mpdus: 1, .. }, MediumTrace::PpduEnd { ok: 1, .. }] => assert!(t > SimTime::from_ms(3) && t < SimTime::from_ms(6)),
            _ => panic!("{trace:?}"),
        }
        return;
    }
    panic!("no seed with a first backoff over 340 slots");
}

/// Law's Limit_h while the PSDU is on the air: the PPDU is never cut; the hardware returns the PSDU when
/// the failed exchange ends (PPDU end + ACK timeout), after one attempt, and makes no further one.
#[test]
fn law_limit_h_waits_for_the_exchange_on_the_air() {
    let extra = "ampdu = false, edca_ap = { be = { cw_min = 0, cw_max = 0 } }";
    let law = crate::mech::law::LawParams { initial_rate_index: 7, limit_h_ms: 0.2, ..Default::default() };
    let mut m = law_pair(extra, law, 3.0, 1);
    let mut q = Q(EventQueue::new());
    let mut log = PacketLog::new(false);
    let (mut delivered, mut dropped) = (Vec::new(), Vec::new());
    let mut out = Outputs { log: &mut log, delivered: &mut delivered, dropped: &mut dropped, air: None };
    m.enqueue(SimTime::ZERO, 0, 1, pkt(0, 0, 1), &mut q, &mut out);
    let mut trace = Vec::new();
    let at = until_time_limit_returns(&mut m, &mut q, &mut log, &mut trace, 1);
    let (start, end) = match trace[..] {
        [MediumTrace::PpduStart { t: s, node: 0, .. }, MediumTrace::PpduEnd { t: e, node: 0, ok: 0, .. }] => (s, e),
        _ => panic!("one failed attempt expected: {trace:?}"),
    };
    assert!(start < SimTime::from_us(200) && end > SimTime::from_us(200), "the deadline falls inside the PPDU");
    assert_eq!(at, end + m.ack_timeout, "returned when the exchange ended");
    assert_eq!((m.nodes[0].stats.xretries, m.nodes[0].stats.ack_timeouts), (0, 1));
}

/// An AP (node 0, `profile`) with one station, A-MPDU off; packets `be` (DSCP 0) and `vi` (DSCP 40)
/// at t = 0 (VI ones may also come later through `enqueue`).
fn ap_with_two_acs(profile: &str) -> Medium {
    let c = wifi_config(&format!("profile = \"{profile}\", ampdu = false"));
    let p = BssParams::from_config(&c);
    let tx = TxVector::ht(7, ChannelWidth::Mhz20, GuardInterval::Ns800).unwrap();
    let (mut ap, mut sta) = (p.fifo_path(), p.fifo_path());
    p.add_link(&mut ap, 0, tx, None);
    p.add_link(&mut sta, 1, tx, None);
    let nodes = vec![NodeSpec { node: 0, bss: 0, is_ap: true, name: "ap".into(), path: ap }, NodeSpec { node: 1, bss: 0, is_ap: false, name: "sta".into(), path: sta }];
    let links = vec![LinkSpec { tx: 0, rx: 1, txv: tx, channel: ChannelModel::fixed(40.0), rx_antennas: 1 }, LinkSpec { tx: 1, rx: 0, txv: tx, channel: ChannelModel::fixed(40.0), rx_antennas: 1 }];
    let mut m = Medium::new(vec![(p, c.collision_ifs)], nodes, links, 2, 1);
    m.enable_trace();
    m
}

/// ```text
///  AP BE  ██ ack ██ ack ██ ack ...   20 best-effort frames queued at 0
///  AP VI     ↑ a video frame arrives during the first BE exchange
///            → VI requests access at once (backoff drawn: the node's own exchange is a busy medium)
///              and, with AIFSN 2 / CW 7 against BE's 3 / 15, goes out within the next few accesses
/// ```
/// Before: an AC whose frame arrived while another AC of the same node was in an exchange never
/// requested access, and the video waited until the BE queue ran dry.
#[test]
fn a_frame_arriving_during_another_ac_s_exchange_requests_access() {
    for profile in ["ns3", "linux"] {
        let mut m = ap_with_two_acs(profile);
        let mut q = Q(EventQueue::new());
        let mut log = PacketLog::new(false);
        let (mut delivered, mut dropped) = (Vec::new(), Vec::new());
        for i in 0..20 {
            let mut out = Outputs { log: &mut log, delivered: &mut delivered, dropped: &mut dropped, air: None };
            m.enqueue(SimTime::ZERO, 0, 1, pkt(i, 0, 1), &mut q, &mut out);
        }
        let mut trace = Vec::new();
        run_until(&mut m, &mut q, &mut log, &mut trace, |e| matches!(e, MediumTrace::PpduStart { node: 0, .. }));
        let now = q.0.now();
        let video = Packet { dscp: 40, ..pkt(100, 0, 1) };
        let mut out = Outputs { log: &mut log, delivered: &mut delivered, dropped: &mut dropped, air: None };
        m.enqueue(now, 0, 1, video, &mut q, &mut out);
        while let Some((t, ev)) = q.0.pop() {
            let mut out = Outputs { log: &mut log, delivered: &mut delivered, dropped: &mut dropped, air: None };
            m.handle(t, ev, &mut q, &mut out);
        }
        let order: Vec<u64> = delivered.iter().map(|(_, p)| p.id).collect();
        let at = order.iter().position(|&id| id == 100).expect("the video frame is delivered");
        assert!((1..=4).contains(&at), "{profile}: the video frame went out as frame {at} of {order:?}");
    }
}

/// ```text
///  AP BE  [AIFS 3][b slots ........]      AP VI  [AIFS 2][b' slots ...]
///  the first of the two to reach 0 transmits; the other freezes the slots it counted, as every other
///  station's EDCAFs do (its own node's transmission is a busy medium for it)
/// ```
#[test]
fn the_winning_node_s_other_acs_freeze_their_countdown() {
    let mut m = ap_with_two_acs("ns3");
    let before: Vec<u32> = m.nodes[0].edcaf.iter().map(|e| e.backoff_slots()).collect();
    let mut q = Q(EventQueue::new());
    let mut log = PacketLog::new(false);
    let (mut delivered, mut dropped) = (Vec::new(), Vec::new());
    let mut out = Outputs { log: &mut log, delivered: &mut delivered, dropped: &mut dropped, air: None };
    m.enqueue(SimTime::ZERO, 0, 1, pkt(0, 0, 1), &mut q, &mut out);
    m.enqueue(SimTime::ZERO, 0, 1, Packet { dscp: 40, ..pkt(1, 0, 1) }, &mut q, &mut out);
    let mut trace = Vec::new();
    run_until(&mut m, &mut q, &mut log, &mut trace, |e| matches!(e, MediumTrace::PpduStart { node: 0, .. }));
    let now = q.0.now().as_ns();
    let winner = m.nodes[0].exchange.as_ref().unwrap().eidx;
    let (be, vi) = (AccessCategory::Be as usize, AccessCategory::Vi as usize);
    let loser = if winner == be { vi } else { be };
    // The loser counted from AIFS end (grant 16 µs + AIFSN slots), one slot per 9 µs, plus the slot
    // boundary at which the medium turned busy (ns-3 EDCA).
    let aifs_end = 16_000 + 9_000 * m.nodes[0].edcaf[loser].params.aifsn as u64;
    let counted = if now >= aifs_end { (now - aifs_end) / 9_000 + 1 } else { 0 };
    let expected = before[loser] - (counted as u32).min(before[loser]);
    assert!(expected < before[loser], "the test needs a loser that counted some slots: {before:?}, winner {winner}");
    assert_eq!(m.nodes[0].edcaf[loser].backoff_slots(), expected);
}

/// Nodes 0..n on one BSS (ns-3 profile, no aggregation, HT MCS 7), sending on `links` (tx, rx) at 40 dB,
/// with `hidden` pairs; returns the medium with its trace on.
fn hidden_bss(n: u16, links: &[(u16, u16)], hidden: &[(NodeId, NodeId)], seed: u64) -> Medium {
    let links: Vec<(u16, u16, f64)> = links.iter().map(|&(a, b)| (a, b, 40.0)).collect();
    fifo_bss("", &[0], n, &links, hidden, seed)
}

/// Nodes 0..n (`aps` among them) on one BSS (ns-3 profile, no aggregation, `extra` config), sending at
/// HT MCS 7 on `links` (tx, rx, SNR dB), with `hidden` pairs; returns the medium with its trace on.
fn fifo_bss(extra: &str, aps: &[u16], n: u16, links: &[(u16, u16, f64)], hidden: &[(NodeId, NodeId)], seed: u64) -> Medium {
    let c = wifi_config(&format!("profile = \"ns3\", ampdu = false{extra}"));
    let p = BssParams::from_config(&c);
    let tx = TxVector::ht(7, ChannelWidth::Mhz20, GuardInterval::Ns800).unwrap();
    let mut paths: Vec<TxPath> = (0..n).map(|_| p.fifo_path()).collect();
    for (li, &(a, _, _)) in links.iter().enumerate() {
        p.add_link(&mut paths[a as usize], li as u32, tx, None);
    }
    let nodes = paths.into_iter().enumerate().map(|(i, path)| NodeSpec { node: i as u16, bss: 0, is_ap: aps.contains(&(i as u16)), name: format!("n{i}"), path }).collect();
    let links = links.iter().map(|&(a, b, snr)| LinkSpec { tx: a, rx: b, txv: tx, channel: ChannelModel::fixed(snr), rx_antennas: 1 }).collect();
    let mut m = Medium::new(vec![(p, c.collision_ifs)], nodes, links, n as usize, seed);
    m.set_hidden(hidden);
    m.enable_trace();
    m
}

/// Runs `m` with one frame queued at each of `senders` (to `to[i]`) at time 0 until the queue empties;
/// returns the trace.
fn run_frames(m: &mut Medium, frames: &[(NodeId, NodeId)]) -> Vec<MediumTrace> {
    let mut q = Q(EventQueue::new());
    let mut log = PacketLog::new(false);
    let (mut d, mut x) = (Vec::new(), Vec::new());
    let mut out = Outputs { log: &mut log, delivered: &mut d, dropped: &mut x, air: None };
    for (i, &(a, b)) in frames.iter().enumerate() {
        m.enqueue(SimTime::ZERO, a, b, pkt(i as u64, a, b), &mut q, &mut out);
    }
    let mut trace = Vec::new();
    run_until(m, &mut q, &mut log, &mut trace, |_| false);
    trace
}

fn first_start(trace: &[MediumTrace], n: NodeId) -> (SimTime, SimDuration) {
    trace.iter().find_map(|e| if let MediumTrace::PpduStart { t, node, duration, .. } = e { (*node == n).then_some((*t, *duration)) } else { None }).unwrap()
}

/// ```text
///  sta1 ██████████ (to the AP)                 hidden from sta2: neither defers to the other
///  sta2     ██████████ (to the AP)             the AP hears both: both PPDUs are lost
/// ```
/// Without the hidden pair the same frames never overlap: the later backoff freezes and resumes after
/// the first exchange.
#[test]
fn hidden_senders_overlap_at_their_common_receiver_and_both_fail() {
    let links = [(1, 0), (2, 0)];
    for seed in 1..20 {
        let mut m = hidden_bss(3, &links, &[(1, 2)], seed);
        if m.nodes[1].edcaf[2].backoff_slots() == m.nodes[2].edcaf[2].backoff_slots() {
            continue; // a same-slot start collides either way
        }
        let trace = run_frames(&mut m, &[(1, 0), (2, 0)]);
        let ((s1, d1), (s2, d2)) = (first_start(&trace, 1), first_start(&trace, 2));
        assert!(s1 < s2 + d2 && s2 < s1 + d1, "first PPDUs overlap: {trace:?}");
        let collided: Vec<_> = trace.iter().filter(|e| matches!(e, MediumTrace::PpduEnd { collided: true, .. })).collect();
        assert!(collided.len() >= 2, "{trace:?}");
        assert!(m.nodes[1].stats.collisions >= 1 && m.nodes[2].stats.collisions >= 1);

        let mut all_hear = hidden_bss(3, &links, &[], seed);
        let trace = run_frames(&mut all_hear, &[(1, 0), (2, 0)]);
        let ((s1, d1), (s2, d2)) = (first_start(&trace, 1), first_start(&trace, 2));
        assert!(s1 >= s2 + d2 || s2 >= s1 + d1, "one collision domain: no overlap: {trace:?}");
        assert_eq!(all_hear.nodes[1].stats.collisions + all_hear.nodes[2].stats.collisions, 0);
        return;
    }
    panic!("no seed with different first backoffs");
}

/// ```text
///  ap1 ██████████ → sta1        ap1 and ap2 cannot sense each other, nor each other's station:
///  ap2   ██████████ → sta2      two BSSs side by side, both deliver at once (spatial reuse)
///  n5  (hears all) defers for both, and starts only after the later exchange ends
/// ```
#[test]
fn hidden_pairs_with_separate_receivers_transmit_at_once_and_a_common_neighbour_defers_to_both() {
    // 0 = ap1, 1 = sta1, 2 = ap2, 3 = sta2, 4 = a node that hears everyone (sends to ap1).
    let links = [(0, 1), (2, 3), (4, 0)];
    let hidden = [(0, 2), (0, 3), (1, 2), (1, 3)];
    let (mut overlapped, mut runs) = (0, 0);
    for seed in 1..40 {
        let mut m = hidden_bss(5, &links, &hidden, seed);
        let b = |i: usize| m.nodes[i].edcaf[2].backoff_slots();
        if b(4) == b(0) || b(4) == b(2) {
            continue; // the common neighbour and an AP in one slot: a collision in any topology
        }
        let trace = run_frames(&mut m, &[(0, 1), (2, 3), (4, 0)]);
        let ok = trace.iter().filter(|e| matches!(e, MediumTrace::PpduEnd { ok: 1, collided: false, .. })).count();
        assert_eq!(ok, 3, "every frame delivered at the first attempt: {trace:?}");
        assert_eq!((0..5).map(|i| m.nodes[i].stats.collisions).sum::<u64>(), 0);
        let ((a, da), (b, db), (c, dc)) = (first_start(&trace, 0), first_start(&trace, 2), first_start(&trace, 4));
        let overlap = |s1: SimTime, d1: SimDuration, s2: SimTime, d2: SimDuration| s1 < s2 + d2 && s2 < s1 + d1;
        assert!(!overlap(a, da, c, dc) && !overlap(b, db, c, dc), "the common neighbour never overlaps: {trace:?}");
        if overlap(a, da, b, db) {
            overlapped += 1;
            // It also waits out both responses (SIFS + an ACK of at least its 20-µs preamble), then
            // SIFS + AIFS (3 slots of 9 µs) of its own.
            let later = (a + da).max(b + db);
            if c > a.min(b) {
                assert!(c >= later + SimDuration::from_us(16 + 20 + 16 + 27), "neighbour at {c:?}, later PPDU end {later:?}: {trace:?}");
            }
        }
        runs += 1;
    }
    assert!(runs >= 20 && overlapped * 2 >= runs, "the two APs overlapped in {overlapped} of {runs} seeds");
}

/// A node that hears only the receiver of a TXOP (it sensed the first exchange's response) resumes
/// when the TXOP's next PPDU fails, no earlier: SIFS + AIFS after that PPDU ends at the soonest.
/// ```text
///  T ─▶ R (VO TXOP): ██ ok  ▮ACK  ██ lost to channel errors
///  L hears R, not T:        ▮▮▮▮▮▮▮▮▮▮▮▮▮▮▮▮▮▮▮▮▮▮▮▮▮▮ (sensing) │ SIFS + AIFS + backoff ─▶ its PPDU
/// ```
#[test]
fn hidden_listener_of_the_receiver_resumes_after_a_failed_ppdu_of_the_txop() {
    let mut found = 0;
    for snr10 in (180..320).step_by(5) {
        for seed in 1..30 {
            let mut m = fifo_bss("", &[1], 3, &[(0, 1, snr10 as f64 / 10.0), (2, 1, 40.0)], &[(0, 2)], seed);
            let mut q = Q(EventQueue::new());
            let mut log = PacketLog::new(false);
            let (mut d, mut x) = (Vec::new(), Vec::new());
            let mut out = Outputs { log: &mut log, delivered: &mut d, dropped: &mut x, air: None };
            for i in 0..3 {
                m.enqueue(SimTime::ZERO, 0, 1, pkt_dscp(i, 0, 1, 46), &mut q, &mut out);
            }
            // Run until T's second PPDU starts, its first having succeeded.
            let (mut trace, mut starts, mut ok_first) = (Vec::new(), 0, false);
            while let Some((now, ev)) = q.0.pop() {
                let mut out = Outputs { log: &mut log, delivered: &mut d, dropped: &mut x, air: None };
                m.handle(now, ev, &mut q, &mut out);
                let new = m.take_trace();
                for e in &new {
                    match e {
                        MediumTrace::PpduStart { node: 0, .. } => starts += 1,
                        MediumTrace::PpduEnd { node: 0, ok: 1, .. } if starts == 1 => ok_first = true,
                        _ => {}
                    }
                }
                trace.extend(new);
                if starts >= 2 {
                    break;
                }
            }
            if !(starts == 2 && ok_first) {
                continue;
            }
            let now = q.0.now();
            let mut out = Outputs { log: &mut log, delivered: &mut d, dropped: &mut x, air: None };
            m.enqueue(now, 2, 1, pkt_dscp(10, 2, 1, 0), &mut q, &mut out);
            run_until(&mut m, &mut q, &mut log, &mut trace, |e| matches!(e, MediumTrace::PpduStart { node: 2, .. }));
            let ends: Vec<_> = trace.iter().filter_map(|e| if let MediumTrace::PpduEnd { t, node: 0, ok, collided } = e { Some((*t, *ok, *collided)) } else { None }).collect();
            if ends.len() < 2 || ends[1].1 != 0 || ends[1].2 {
                continue;
            }
            found += 1;
            let (l_start, _) = first_start(&trace, 2);
            assert!(l_start >= ends[1].0 + SimDuration::from_us(16 + 3 * 9), "snr {snr10}, seed {seed}: L at {l_start:?}, T's failed PPDU ended {:?}", ends[1].0);
        }
    }
    assert!(found > 0, "no case with a successful first and a failed second PPDU");
}

/// Two stations that hear each other collide in one slot while a hidden pair sits elsewhere: each
/// keeps its own ACK timeout as its IFS reference, whichever PPDU end the medium handles first, as in
/// one collision domain.
#[test]
fn same_slot_colliders_keep_their_ack_timeouts_with_hidden_pairs_elsewhere() {
    let links = [(1, 0), (2, 0)];
    let mut checked = 0;
    for seed in 1..400 {
        for hidden in [vec![], vec![(3u16, 4u16)]] {
            let mut m = hidden_bss(5, &links, &hidden, seed);
            if m.nodes[1].edcaf[2].backoff_slots() != m.nodes[2].edcaf[2].backoff_slots() {
                break;
            }
            let mut q = Q(EventQueue::new());
            let mut log = PacketLog::new(false);
            let (mut d, mut x) = (Vec::new(), Vec::new());
            let mut out = Outputs { log: &mut log, delivered: &mut d, dropped: &mut x, air: None };
            m.enqueue(SimTime::ZERO, 1, 0, pkt(0, 1, 0), &mut q, &mut out);
            m.enqueue(SimTime::ZERO, 2, 0, pkt(1, 2, 0), &mut q, &mut out);
            let mut trace = Vec::new();
            let collided = std::cell::Cell::new(0);
            run_until(&mut m, &mut q, &mut log, &mut trace, |e| {
                collided.set(collided.get() + matches!(e, MediumTrace::PpduEnd { collided: true, .. }) as u32);
                collided.get() >= 2
            });
            let end = trace.iter().find_map(|e| if let MediumTrace::PpduEnd { t, .. } = e { Some(*t) } else { None }).unwrap();
            let want = end + m.ack_timeout;
            assert_eq!((m.nodes[1].ref_time, m.nodes[2].ref_time), (want, want), "hidden {hidden:?}");
            checked += 1;
        }
        if checked >= 2 {
            return;
        }
    }
    panic!("no seed with equal first backoffs");
}

/// RTS/CTS ahead of a PSDU longer than the threshold, in one collision domain (ns-3 profile, HT MCS 7,
/// control frames at 24 Mb/s: RTS and CTS 28 µs each):
/// ```text
///  STA  RTS ▮ ─ SIFS ─ (CTS from the AP) ─ SIFS ─ ██████ data ─ SIFS ─ ACK
///       t0   t0 + 28   t0 + 44             t0 + 72  t0 + 88
/// ```
/// Below the threshold no RTS is sent.
#[test]
fn rts_cts_precedes_a_psdu_over_the_threshold() {
    for (threshold, rts) in [("rts_threshold_bytes = 1000", true), ("rts_threshold_bytes = 2000", false), ("", false)] {
        let extra = if threshold.is_empty() { String::new() } else { format!(", {threshold}") };
        let mut m = fifo_bss(&extra, &[0], 2, &[(1, 0, 40.0)], &[], 1);
        let trace = run_frames(&mut m, &[(1, 0)]);
        match (rts, &trace[..]) {
            (true, [MediumTrace::Rts { t: t0, duration, .. }, MediumTrace::PpduStart { t, .. }, MediumTrace::PpduEnd { ok: 1, .. }]) => {
                assert_eq!(*duration, SimDuration::from_us(28));
                assert_eq!(*t, *t0 + SimDuration::from_us(28 + 16 + 28 + 16), "{trace:?}");
                assert_eq!(m.nodes[1].stats.rts_sent, 1);
            }
            (false, [MediumTrace::PpduStart { .. }, MediumTrace::PpduEnd { ok: 1, .. }]) => assert_eq!(m.nodes[1].stats.rts_sent, 0),
            _ => panic!("{threshold}: {trace:?}"),
        }
    }
}

/// Two hidden stations saturating their AP (40 frames each): without RTS/CTS their PPDUs overlap at the
/// AP (13–24 of ~100 data PPDUs, seeds 1–3); with it only RTSs collide (each node's data follows the
/// CTS, which the other hears), so no data PPDU is lost. With these short PPDUs (228 µs) the RTS/CTS
/// overhead (88 µs a frame) costs about what the losses did; it pays with long aggregates.
#[test]
fn rts_cts_protects_data_from_hidden_terminals() {
    let run = |rts: bool, seed: u64| {
        let mut m = fifo_bss(if rts { ", rts_threshold_bytes = 0" } else { "" }, &[0], 3, &[(1, 0, 40.0), (2, 0, 40.0)], &[(1, 2)], seed);
        let frames: Vec<(NodeId, NodeId)> = (0..40).flat_map(|_| [(1, 0), (2, 0)]).collect();
        let trace = run_frames(&mut m, &frames);
        // Per node, whether its last start was an RTS: a collided end is then the RTS's.
        let mut last_rts = [false; 3];
        let (mut data_lost, mut rts_lost, mut delivered) = (0, 0, 0);
        for e in &trace {
            match *e {
                MediumTrace::Rts { node, .. } => last_rts[node as usize] = true,
                MediumTrace::PpduStart { node, .. } => last_rts[node as usize] = false,
                MediumTrace::PpduEnd { node, ok, collided, .. } => match (collided, last_rts[node as usize]) {
                    (true, true) => rts_lost += 1,
                    (true, false) => data_lost += 1,
                    _ => delivered += ok,
                },
            }
        }
        (data_lost, rts_lost, delivered)
    };
    for seed in 1..4 {
        let (lost, _, _) = run(false, seed);
        assert!(lost > 10, "seed {seed}: without RTS, {lost} data PPDUs lost");
        let (lost, rts_lost, delivered) = run(true, seed);
        assert_eq!((lost, delivered), (0, 80), "seed {seed}: with RTS/CTS no data PPDU is lost ({rts_lost} RTSs were)");
        assert!(rts_lost > 0, "seed {seed}: the RTSs of hidden nodes still collide");
    }
}

/// A receiver whose NAV is set sends no CTS (hidden terminals): S → R, while X → Y runs where R hears it
/// but S does not (S is hidden from X and Y). An RTS from S that ends while R senses X's exchange goes
/// unanswered, so S's data never meets X's frames at R: no data PPDU of S is lost, though some RTSs
/// are (unanswered, or overlapping X's).
#[test]
fn rts_to_a_receiver_that_senses_another_exchange_goes_unanswered() {
    // 0 = R, 1 = S, 2 = X, 3 = Y.
    let (mut unanswered, mut exercised) = (0, 0);
    for seed in 1..20 {
        let mut m = fifo_bss(", rts_threshold_bytes = 0", &[0, 2], 4, &[(1, 0, 40.0), (2, 3, 40.0)], &[(1, 2), (1, 3)], seed);
        let frames: Vec<(NodeId, NodeId)> = (0..30).flat_map(|_| [(1, 0), (2, 3)]).collect();
        let trace = run_frames(&mut m, &frames);
        let mut last_rts = false;
        for e in &trace {
            match *e {
                MediumTrace::Rts { node: 1, .. } => last_rts = true,
                MediumTrace::PpduStart { node: 1, .. } => last_rts = false,
                MediumTrace::PpduEnd { node: 1, ok: 0, collided, .. } => {
                    assert!(last_rts, "seed {seed}: a data PPDU of S was lost (collided {collided}): {trace:?}");
                    unanswered += u32::from(!collided);
                }
                _ => {}
            }
        }
        exercised += 1;
    }
    assert!(exercised > 0 && unanswered > 0, "no RTS went unanswered in any seed");
}

/// A PSDU loaded to continue a TXOP whose hardware deadline falls in the SIFS gap before it would go
/// out is handed back at its deadline (no attempt starts at or after it), and the TXOP ends there
/// (it panicked before). (No configuration sets so short a deadline today, as the time limit counts from
/// the PSDU's arrival at the head, SIFS before at the earliest; the deadline is set by hand.)
#[test]
fn a_txop_continuation_whose_psdu_expires_in_the_sifs_gap_ends_the_txop() {
    // A Linux-path AP with a (long) hardware time limit, so the medium keeps deadline timers.
    let c = wifi_config("profile = \"linux\", ampdu = false, ap_path = { type = \"linux\", hw_time_limit_us = 100000 }");
    let p = BssParams::from_config(&c);
    let tx = TxVector::ht(7, ChannelWidth::Mhz20, GuardInterval::Ns800).unwrap();
    let mut ap = p.ap_path(&c, &mut Rng::derive(1, "fq"));
    p.add_link(&mut ap, 0, tx, None);
    let sta = p.fifo_path();
    let nodes = vec![NodeSpec { node: 0, bss: 0, is_ap: true, name: "ap".into(), path: ap }, NodeSpec { node: 1, bss: 0, is_ap: false, name: "sta".into(), path: sta }];
    let links = vec![LinkSpec { tx: 0, rx: 1, txv: tx, channel: ChannelModel::fixed(40.0), rx_antennas: 1 }];
    let mut m = Medium::new(vec![(p, c.collision_ifs)], nodes, links, 2, 1);
    let mut q = Q(EventQueue::new());
    let mut log = PacketLog::new(false);
    let (mut d, mut x) = (Vec::new(), Vec::new());
    let mut out = Outputs { log: &mut log, delivered: &mut d, dropped: &mut x, air: None };
    for i in 0..3 {
        m.enqueue(SimTime::ZERO, 0, 1, pkt_dscp(i, 0, 1, 40), &mut q, &mut out);
    }
    // Until the AP has loaded the PSDU that continues its VI TXOP.
    let mut expired = false;
    while let Some((now, ev)) = q.0.pop() {
        let mut out = Outputs { log: &mut log, delivered: &mut d, dropped: &mut x, air: None };
        m.handle(now, ev, &mut q, &mut out);
        if !expired && m.nodes[0].continue_eidx.is_some() {
            let hw = m.nodes[0].hw[1].as_mut().expect("the continuation's PSDU in hardware");
            hw.psdu.hw_deadline = Some(now + SimDuration::from_us(8));
            m.service_shared_hw(now, &mut q, &mut out);
            expired = true;
        }
    }
    assert!(expired, "no TXOP continuation");
    assert_eq!(m.nodes[0].stats.hw_time_limit_returns, 1);
    // Without a BlockAck session ath9k drops a frame its time limit returned; the others go through.
    assert_eq!(x.iter().map(|p| (p.0.id, p.1)).collect::<Vec<_>>(), vec![(1, crate::stats::DropReason::Deadline)]);
    assert_eq!(d.len(), 2);
}
