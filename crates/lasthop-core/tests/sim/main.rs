//! The open loop: a `Sim` stepped by its caller gives the run `sim::run` gives, and packets injected
//! into `external` flows cross the model as the same packets from a built-in source would.

use lasthop_core::scenario::Scenario;
use lasthop_core::sim::{self, Injected, Port, RunOutput, Sim};
use lasthop_core::stats::{Stage, NO_TIME};
use lasthop_core::time::{SimDuration, SimTime};
use std::path::Path;

fn scenario(toml: &str) -> Scenario {
    Scenario::from_toml_str(toml, Path::new(".")).unwrap_or_else(|e| panic!("{e}"))
}

/// An 802.11n BSS with a Linux AP, Zhuge on the AP, a GCC call, a Cubic download and a ping, plus
/// `video` (a flow table given by the caller) to `sta0`.
fn home(video: &str) -> String {
    format!(
        r#"
duration_s = 4
warmup_s = 1
[[servers]]
name = "srv"
[[aps]]
name = "ap"
mechanism = {{ type = "zhuge", flows = ["call"] }}
last_hop = {{ type = "wifi", standard = "ht", profile = "linux", rate_control = {{ type = "minstrel_ht" }} }}
[[stations]]
name = "sta0"
channel = {{ type = "fixed_snr", snr_db = 30 }}
[[stations]]
name = "sta1"
channel = {{ type = "fixed_snr", snr_db = 22 }}
[[links]]
a = "srv"
b = "ap"
rate_mbps = 1000
delay_ms = 10
[[flows]]
name = "call"
type = "rtc"
from = "srv"
to = "sta1"
[[flows]]
name = "download"
type = "tcp"
from = "srv"
to = "sta1"
[[flows]]
name = "ping"
type = "ping"
from = "srv"
to = "sta0"
[[flows]]
name = "video"
from = "srv"
to = "sta0"
{video}
"#
    )
}

// Off the ping's 100-ms grid: an injection at t comes after every event due at t, a built-in source's
// send may come before some of them.
const CBR: &str = "type = \"udp_cbr\"\nrate_mbps = 2\npacket_bytes = 1200\nstart_s = 0.5003";

fn closed(sc: &Scenario) -> RunOutput {
    sim::run(sc, 3, &mut |_| true).unwrap()
}

#[test]
fn stepping_in_any_increments_gives_the_digest_of_run() {
    let sc = scenario(&home(CBR));
    let reference = closed(&sc);
    // By next_wakeup, one event at a time.
    let mut s = Sim::new(&sc, 3);
    while let Some(t) = s.next_wakeup() {
        assert!(t >= s.now());
        s.advance_to(t);
    }
    let a = s.finish();
    // In fixed 1.7 ms strides that fall between events.
    let mut s = Sim::new(&sc, 3);
    let mut t = SimTime::ZERO;
    while t < s.end() {
        t += SimDuration::from_us(1_700);
        s.advance_to(t);
        assert_eq!(s.now(), t.min(s.end()));
    }
    let b = s.finish();
    for out in [&a, &b] {
        assert_eq!(out.event_digest, reference.event_digest);
        assert_eq!(out.events, reference.events);
        assert_eq!(serde_json::to_string(&out.flows).unwrap(), serde_json::to_string(&reference.flows).unwrap());
    }
}

/// A run stopped before its end (a stepped run, an emulation whose command exited) reports its rates over
/// the time it ran, not the scenario's whole length, and says where it stopped.
#[test]
fn a_run_stopped_early_reports_rates_over_the_time_it_ran() {
    let sc = scenario(&home(CBR));
    let whole = closed(&sc);
    let mut s = Sim::new(&sc, 3);
    let half = SimTime::ZERO + SimDuration::from_ns(s.end().as_ns() / 2);
    s.advance_to(half);
    let early = s.finish();
    assert_eq!((early.sim_end, whole.sim_end), (half, sc_end(&sc)));
    // The 2-Mbit/s CBR flow: its rate over 1 s of measurement (1 → 2 s) as over 3 (1 → 4 s).
    let cbr = whole.flows.iter().position(|f| f.kind == "udp_cbr").expect("the CBR flow");
    let (a, b) = (early.flows[cbr].throughput_mbps, whole.flows[cbr].throughput_mbps);
    assert!((b / 2.0 - 1.0).abs() < 0.05 && (a / b - 1.0).abs() < 0.05, "{a} vs {b} Mbit/s");
    assert!(early.flows[cbr].delivered_bytes < whole.flows[cbr].delivered_bytes * 6 / 10);
}

fn sc_end(sc: &lasthop_core::scenario::Scenario) -> SimTime {
    SimTime::ZERO + SimDuration::from_secs_f64(sc.duration_s).unwrap()
}

/// The packets a caller injects at the send times of the CBR flow get exactly the CBR packets'
/// timestamps at every stage, and come out of `drain_egress` when they are delivered.
#[test]
fn injected_packets_cross_the_model_like_a_built_in_source() {
    let cbr = closed(&scenario(&home(CBR)));
    let flow = 3;
    let rows: Vec<usize> = (0..cbr.packets.flow.len()).filter(|&i| cbr.packets.flow[i] == flow).collect();
    let sent = |i: usize| SimTime::from_ns(cbr.packets.stages[Stage::Sent as usize][i]);

    let sc = scenario(&home("type = \"external\""));
    let mut s = Sim::new(&sc, 3);
    let port = s.port("video", false).expect("external flow");
    assert_eq!(port, Port { flow, reverse: false });
    let mut ids = Vec::new();
    let mut egress = Vec::new();
    for &i in &rows {
        s.advance_to(sent(i));
        ids.push(s.inject(port, Injected { size: 1200, dscp: None, tcp: None, rtp: None }).unwrap());
        egress.extend(s.drain_egress());
    }
    s.advance_to(s.end());
    egress.extend(s.drain_egress());
    let ext = s.finish();
    assert!(rows.len() > 700, "{}", rows.len());
    assert!(egress.len() + 5 >= rows.len() && egress.iter().all(|e| e.flow == flow && !e.reverse));
    for (k, &i) in rows.iter().enumerate() {
        let j = ids[k] as usize;
        for st in Stage::ALL {
            assert_eq!(ext.packets.stages[*st as usize][j], cbr.packets.stages[*st as usize][i], "packet {k} at {st:?}");
        }
    }
    for e in &egress {
        assert_eq!(e.delivered.as_ns(), ext.packets.stages[Stage::Delivered as usize][e.id as usize]);
        assert!(e.delivered > e.sent);
    }
    let v = |o: &RunOutput| o.flows.iter().find(|f| f.flow == "video").unwrap().latency_p99_ms;
    assert_eq!(v(&ext), v(&cbr));
}

#[test]
fn reverse_packets_travel_back_and_do_not_count_as_the_flow_s() {
    let sc = scenario(&home("type = \"external\""));
    let mut s = Sim::new(&sc, 3);
    let up = s.port("video", true).unwrap();
    s.advance_to(SimTime::from_ms(1500));
    let id = s.inject(up, Injected { size: 52, dscp: Some(46), tcp: None, rtp: None }).unwrap();
    s.advance_to(SimTime::from_ms(1600));
    let out = s.drain_egress();
    assert_eq!(out.len(), 1);
    assert!(out[0].reverse && out[0].id == id && out[0].dscp == 46);
    // The uplink: over the air from sta0, then 10 ms of wire.
    let delay = out[0].delivered - out[0].sent;
    assert!(delay > SimDuration::from_ms(10) && delay < SimDuration::from_ms(15), "{delay}");
    let r = s.finish();
    assert_ne!(r.packets.stages[Stage::AirStart as usize][id as usize], NO_TIME);
    let video = r.flows.iter().find(|f| f.flow == "video").unwrap();
    assert_eq!((video.sent_packets, video.delivered_packets), (0, 0));
}

#[test]
fn injections_that_cannot_be_taken_are_refused() {
    let sc = scenario(&home("type = \"external\""));
    let mut s = Sim::new(&sc, 3);
    assert_eq!(s.port("call", false), None, "only external flows have ports");
    let bad = |s: &mut Sim, p: Port, size: u32, dscp: Option<u8>| s.inject(p, Injected { size, dscp, tcp: None, rtp: None }).unwrap_err().to_string();
    let call = Port { flow: 0, reverse: false };
    assert!(bad(&mut s, call, 1200, None).contains("not an `external` flow"));
    assert!(bad(&mut s, Port { flow: 9, reverse: false }, 1200, None).contains("does not exist"));
    let video = s.port("video", false).unwrap();
    assert!(bad(&mut s, video, 20, None).contains("outside 28..=65535"));
    assert!(bad(&mut s, video, 1200, Some(64)).contains("DSCP 64"));
    s.advance_to(SimTime::from_secs(100));
    assert_eq!(s.now(), s.end());
    assert!(bad(&mut s, video, 1200, None).contains("the run ended"));
}

/// Gaps between consecutive sends of flow `flow`, with the time of the later send.
fn send_gaps(out: &RunOutput, flow: u32) -> Vec<(u64, u64)> {
    let sent: Vec<u64> = (0..out.packets.flow.len()).filter(|&i| out.packets.flow[i] == flow && out.packets.reverse[i] == 0).map(|i| out.packets.stages[Stage::Sent as usize][i]).collect();
    sent.windows(2).map(|w| (w[1], w[1] - w[0])).collect()
}

/// `commands` in the scenario: the CBR flow's rate drops from 2 to 0.5 Mbit/s at 2 s (its gap grows
/// from 4.8 to 19.2 ms from the packet after that instant), and the same change made by a caller
/// through `Sim::command` at 2 s gives the same packets.
#[test]
fn a_command_changes_a_rate_from_that_instant_on() {
    let cmd = "[[commands]]\nat_s = 2\ntarget = \"flows.video\"\nset = { rate_mbps = 0.5 }\n";
    let toml = home(CBR) + cmd;
    let out = closed(&scenario(&toml));
    let at = 2_000_000_000;
    let gaps = send_gaps(&out, 3);
    assert!(gaps.iter().filter(|g| g.0 <= at).all(|g| g.1 == 4_800_000), "before: 4.8 ms");
    // The packet already scheduled when the command runs keeps its time; every gap after it is 19.2 ms.
    let after: Vec<u64> = gaps.iter().filter(|g| g.0 > at).map(|g| g.1).collect();
    assert!(after.len() > 100 && after[1..].iter().all(|&g| g == 19_200_000), "{:?}", &after[..3]);
    assert!(after[0] <= 19_200_000);

    let mut s = Sim::new(&scenario(&home(CBR)), 3);
    s.advance_to(SimTime::from_secs(2));
    let set = serde_json::json!({ "rate_mbps": 0.5 });
    s.command("flows.video", set.as_object().unwrap()).unwrap();
    s.advance_to(s.end());
    let api = s.finish();
    assert_eq!(send_gaps(&api, 3), gaps);
    assert_eq!(api.packets.stages, out.packets.stages);
}

/// A station's SNR falls to 2 dB at 2 s: at the AP's fixed MCS nothing reaches it after that, while
/// everything sent before does.
#[test]
fn a_command_changes_a_station_s_channel() {
    let toml = home(CBR)
        .replace("rate_control = { type = \"minstrel_ht\" }", "rate_control = { type = \"fixed\", mcs = 5 }")
        + "[[commands]]\nat_s = 2\ntarget = \"stations.sta0\"\nset = { snr_db = 2 }\n";
    let out = closed(&scenario(&toml));
    let p = &out.packets;
    let video: Vec<usize> = (0..p.flow.len()).filter(|&i| p.flow[i] == 3).collect();
    let sent = |i: usize| p.stages[Stage::Sent as usize][i];
    let delivered = |i: usize| p.stages[Stage::Delivered as usize][i] != NO_TIME;
    let early: Vec<usize> = video.iter().copied().filter(|&i| sent(i) < 1_900_000_000).collect();
    let late: Vec<usize> = video.iter().copied().filter(|&i| sent(i) > 2_100_000_000).collect();
    assert!(early.iter().all(|&i| delivered(i)), "before the fade every packet arrives");
    assert!(late.len() > 300 && late.iter().all(|&i| !delivered(i)), "after it none does");
}

#[test]
fn commands_are_checked_against_the_scenario() {
    let err = |cmd: &str| {
        let e = Scenario::from_toml_str(&(home(CBR) + "[[commands]]\n" + cmd), Path::new(".")).unwrap_err();
        (e.issues[0].loc.to_string(), e.issues[0].msg.clone())
    };
    let (loc, msg) = err("at_s = 1\ntarget = \"flows.nope\"\nset = { rate_mbps = 1 }");
    assert_eq!((loc.as_str(), msg.as_str()), ("commands[0].target", "no flow named 'nope'"));
    let (loc, msg) = err("at_s = 1\ntarget = \"flows.call\"\nset = { rate_mbps = 1 }");
    assert_eq!(loc, "commands[0].target");
    assert!(msg.contains("is `rtc`"), "{msg}");
    let (loc, _) = err("at_s = 1\ntarget = \"flows.video\"\nset = { rate = 1 }");
    assert_eq!(loc, "commands[0].set.rate");
    let (loc, msg) = err("at_s = 1\ntarget = \"flows.video\"\nset = { rate_mbps = -1 }");
    assert_eq!((loc.as_str(), msg.as_str()), ("commands[0].set.rate_mbps", "must be a positive number, got -1"));
    let (loc, _) = err("at_s = 9\ntarget = \"flows.video\"\nset = { rate_mbps = 1 }");
    assert_eq!(loc, "commands[0].at_s");
    let (loc, msg) = err("at_s = 1\ntarget = \"aps.ap.zhuge\"\nset = { window = 1 }");
    assert_eq!((loc.as_str(), msg.as_str()), ("commands[0].set.window", "mechanism `zhuge` takes no run-time commands"));
    let (loc, msg) = err("at_s = 1\ntarget = \"aps.ap.law\"\nset = { limit_q_ms = 5 }");
    assert_eq!((loc.as_str(), msg.as_str()), ("commands[0].target", "access point 'ap' runs no mechanism `law`"));
    let (loc, msg) = err("at_s = 1\ntarget = \"video\"\nset = {}");
    assert_eq!(loc, "commands[0].target");
    assert!(msg.ends_with("use flows.<name>, stations.<name>, aps.<name>.<mechanism> or aps.<name>.hw"), "{msg}");
    // A path one step too deep names the target it meant.
    let (_, msg) = err("at_s = 1\ntarget = \"aps.ap.law.video\"\nset = { limit_q_ms = 5 }");
    assert!(msg.starts_with("a target ends at the mechanism, aps.ap.law;"), "{msg}");
    let (_, msg) = err("at_s = 1\ntarget = \"stations.sta0.qair\"\nset = { snr_db = 5 }");
    assert!(msg.starts_with("a station's target is stations.sta0 (its snr_db)"), "{msg}");
    let mut s = Sim::new(&scenario(&home(CBR)), 3);
    let e = s.command("stations.sta0", serde_json::json!({ "snr_db": "high" }).as_object().unwrap()).unwrap_err();
    assert_eq!(e.to_string(), "set.snr_db: must be a number of dB in -30..=100, got \"high\"");
}

/// A saturated flow whose backlog exceeds its first queue: the refused packets are not replaced at
/// once (that looped forever and overflowed the stack, found by the fuzz target); the flow is served
/// at the bottleneck's rate.
#[test]
fn saturated_backlog_larger_than_the_queue_settles_at_the_queue() {
    let sc = scenario(
        r#"
duration_s = 2
[[servers]]
name = "srv"
[[aps]]
name = "ap"
last_hop = { type = "wired", rate_mbps = 20, delay_ms = 1, queue = { type = "fifo", packets = 50 } }
[[stations]]
name = "sta"
[[links]]
a = "srv"
b = "ap"
rate_mbps = 100
delay_ms = 1
queue = { type = "fifo", packets = 100 }
[[flows]]
name = "bulk"
type = "saturated"
from = "srv"
to = "sta"
backlog = 5000
"#,
    );
    let out = sim::run(&sc, 1, &mut |_| true).expect("runs");
    let f = &out.flows[0];
    assert!((f.throughput_mbps - 20.0).abs() < 1.0, "{f:?}");
    // At most the initial backlog plus one replacement per packet the 100 Mbit/s link carried.
    let carried = (100e6 * 2.0 / (1500.0 * 8.0)) as u64;
    assert!(f.sent_packets <= 5000 + carried, "the refused backlog is not resent in a loop: {f:?}");
}

/// Issue 17: a run that takes its finished packet-log rows out as it goes (in chunks of at least
/// `rows`) ends with the same log, column by column and with the same packet ids, as a run that keeps
/// them all, for the full log and for a sampled one (and the same transmission, RTT and video-frame
/// logs, taken out too);
/// and the log held at any time stays far below the whole (its rows from the oldest packet in flight on).
#[test]
fn taking_finished_rows_out_keeps_the_log_and_bounds_what_is_held() {
    for output in ["", "output = { packets = \"sampled\", sample_every = 3 }\n"] {
        let sc = scenario(&format!("{output}{}", home(CBR)));
        let whole = closed(&sc).packets;
        let mut s = Sim::new(&sc, 3);
        let mut chunks = Vec::new();
        let mut held_max = 0;
        let (mut tx, mut rtt, mut frames) = (Vec::new(), Vec::new(), Vec::new());
        let frame_rows = |f: &lasthop_core::stats::FrameSeries| (0..f.len()).map(|i| (f.flow[i], f.frame[i], f.capture[i], f.done[i], f.dropped[i])).collect::<Vec<_>>();
        while s.run_until_rows(500, &mut |_| true).unwrap() {
            let (c, t, r) = (s.take_packet_rows(500), s.take_tx_rows(500), s.take_rtt_rows(500));
            assert!(c.is_some() || t.is_some() || r.is_some());
            frames.extend(s.take_frame_rows(20).map(|f| frame_rows(&f)));
            if let Some(c) = c {
                // Every other chunk is handed back once copied, as the table writer does: the next
                // chunks are written into its buffers and must come out the same.
                chunks.push(c.clone());
                if chunks.len() % 2 == 0 {
                    s.recycle_packet_rows(c);
                }
            }
            tx.extend(t.map(|t| t.0.t_ns));
            rtt.extend(r.map(|r| r.flow.iter().zip(&r.t).zip(&r.rtt).map(|((&f, &t), &v)| (f, t, v)).collect::<Vec<_>>()));
            held_max = held_max.max(s.packet_rows_held());
        }
        let rest = s.finish();
        let reference = closed(&sc);
        assert_eq!(rest.event_digest, reference.event_digest, "{output}");
        tx.push(rest.tx.t_ns);
        assert_eq!(tx.concat(), reference.tx.t_ns, "{output}: the transmission log");
        let whole_rtt = |r: &lasthop_core::stats::RttSeries| r.flow.iter().zip(&r.t).zip(&r.rtt).map(|((&f, &t), &v)| (f, t, v)).collect::<Vec<_>>();
        rtt.push(whole_rtt(&rest.rtt));
        assert!(rtt.len() > 3, "{output}: RTT samples taken out {} times", rtt.len() - 1);
        assert_eq!(rtt.concat(), whole_rtt(&reference.rtt), "{output}: the RTT samples");
        assert!(reference.rtt.t.windows(2).all(|w| w[0] <= w[1]), "in time order");
        frames.push(frame_rows(&rest.frames));
        assert!(frames.len() > 3, "{output}: frames taken out {} times", frames.len() - 1);
        assert_eq!(frames.concat(), frame_rows(&reference.frames), "{output}: the video frames");
        assert!(reference.frames.done.windows(2).all(|w| w[0] <= w[1]), "in the order they ended");
        assert!(reference.frames.len() > 50, "the call's frames: {}", reference.frames.len());
        chunks.push(rest.packets);
        assert!(chunks.len() > 10, "{output}: {} chunks", chunks.len());
        let cat = |f: &dyn Fn(&lasthop_core::stats::PacketLog) -> Vec<u64>| chunks.iter().flat_map(f).collect::<Vec<u64>>();
        assert_eq!(cat(&|c| c.ids()), whole.ids(), "{output}");
        assert_eq!(cat(&|c| c.flow.iter().map(|&x| x as u64).collect()), whole.flow.iter().map(|&x| x as u64).collect::<Vec<_>>());
        assert_eq!(cat(&|c| c.seq.clone()), whole.seq);
        assert_eq!(cat(&|c| c.drop_reason.iter().map(|&x| x as u64).collect()), whole.drop_reason.iter().map(|&x| x as u64).collect::<Vec<_>>());
        assert_eq!(cat(&|c| c.reverse.iter().map(|&x| x as u64).collect()), whole.reverse.iter().map(|&x| x as u64).collect::<Vec<_>>());
        for st in Stage::ALL {
            assert_eq!(cat(&|c| c.stages[*st as usize].clone()), whole.stages[*st as usize], "{output}: {st:?}");
        }
        assert!(held_max * 10 < whole.len(), "{output}: held {held_max} of {}", whole.len());
    }
}

/// A wired pipe sends a packet that starts serializing on an idle pipe at once (it propagates from the
/// end of its serialization) and is woken at that end only when a packet waits: one event of three per
/// packet spared. Packets timed to arrive exactly when the serializer frees and a second flow that
/// makes them queue keep the pipe's timeline: each packet starts when it arrives or when the one before
/// it ends, whichever is later, is on the air for its size at the rate, and arrives the delay later.
#[test]
fn a_wired_pipe_keeps_its_timeline_with_one_event_per_packet_spared() {
    let sc = scenario(
        r#"
duration_s = 3
[[servers]]
name = "srv"
[[aps]]
name = "ap"
last_hop = { type = "wired", rate_mbps = 12, delay_ms = 2, queue = { type = "fifo", packets = 1000 } }
[[stations]]
name = "sta"
[[links]]
a = "srv"
b = "ap"
rate_mbps = 120
delay_ms = 1
[[flows]]
name = "paced"
type = "udp_cbr"
rate_mbps = 12
packet_bytes = 1500
from = "srv"
to = "sta"
[[flows]]
name = "extra"
type = "udp_cbr"
rate_mbps = 1
packet_bytes = 500
start_s = 0.2005
from = "srv"
to = "sta"
"#,
    );
    let out = sim::run(&sc, 1, &mut |_| true).expect("runs");
    let log = &out.packets;
    let col = |s: Stage| &log.stages[s as usize];
    let (enq, start, end, done) = (col(Stage::QdiscEnq), col(Stage::AirStart), col(Stage::AirEnd), col(Stage::Delivered));
    let mut rows: Vec<usize> = (0..log.flow.len()).filter(|&r| start[r] != NO_TIME).collect();
    rows.sort_by_key(|&r| start[r]);
    let mut free = 0;
    let mut waited = 0;
    for &r in &rows {
        let ser = (log.size[r] as u64 * 8 * 1000).div_ceil(12); // ns at 12 Mbit/s, rounded up
        assert_eq!(start[r], enq[r].max(free), "row {r} starts when it arrives or the pipe frees");
        waited += (start[r] > enq[r]) as usize;
        if end[r] != NO_TIME {
            assert_eq!(end[r], start[r] + ser, "row {r} is on the air for its size");
        }
        if done[r] != NO_TIME {
            assert_eq!(done[r], start[r] + ser + 2_000_000, "row {r} arrives the delay after its end");
        }
        free = start[r] + ser;
    }
    assert!(waited > 100, "the second flow makes packets queue ({waited})");
    assert!(rows.len() > 3000, "{} packets crossed", rows.len());
    // Three events per packet on each wired hop (the source, the end of serialization, the arrival)
    // were two, but for the ends that start a waiting packet.
    assert!(out.events < 5 * rows.len() as u64, "{} events for {} packets over two pipes", out.events, rows.len());
}
