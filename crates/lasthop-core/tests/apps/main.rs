//! End-to-end applications: RTC video calls carried by the engine over wired and 802.11 last hops, with
//! their feedback on the reverse path.

use lasthop_core::scenario::Scenario;
use lasthop_core::sim::{self, RunOutput};
use lasthop_core::stats::{FlowSummary, Stage, NO_TIME};
use std::path::Path;

fn run(toml: &str, seed: u64) -> RunOutput {
    let sc = Scenario::from_toml_str(toml, Path::new(".")).unwrap_or_else(|e| panic!("{e}"));
    sim::run(&sc, seed, &mut |_| true).unwrap()
}

/// server ─(1 Gbit/s, 19 ms)─ ap ─(last hop)─ sta, one RTC flow with `rtc` settings.
fn call(last_hop: &str, rtc: &str, duration_s: f64) -> String {
    format!(
        "duration_s = {duration_s}\nwarmup_s = 2\n[[servers]]\nname = \"srv\"\n[[aps]]\nname = \"ap\"\nlast_hop = {last_hop}\n\
         [[stations]]\nname = \"sta\"\n[[links]]\na = \"srv\"\nb = \"ap\"\nrate_mbps = 1000\ndelay_ms = 19\n\
         [[flows]]\nname = \"video\"\ntype = \"rtc\"\nfrom = \"srv\"\nto = \"sta\"\nrtc = {{ {rtc} }}\n"
    )
}

fn video(out: &RunOutput) -> &FlowSummary {
    out.flows.iter().find(|f| f.flow == "video").expect("video flow")
}

/// A fixed 4.5 Mbit/s call (4 Mbit/s of media plus 1/8 FEC) on an idle 20 Mbit/s path: every frame
/// decodes, none misses 100 ms, the encoder produces the media share of the target, and each frame
/// arrives after the 20 ms path plus its own serialization and pacing.
#[test]
fn fixed_rate_call_on_an_idle_path() {
    let out = run(&call("{ type = \"wired\", rate_mbps = 20, delay_ms = 1 }", "rate_control = { type = \"fixed\", rate_mbps = 4.5 }", 12.0), 1);
    let v = video(&out);
    assert_eq!(v.kind, "rtc");
    assert_eq!(v.dropped_packets, 0);
    assert_eq!(v.frames_dropped, Some(0));
    // 10 s of 30 fps after warm-up.
    let decoded = v.frames_decoded.unwrap();
    assert!((298..=301).contains(&decoded), "{decoded}");
    let bitrate = v.bitrate_mbps.unwrap();
    assert!((bitrate - 4.0).abs() < 0.2, "media bitrate {bitrate}");
    // IP throughput adds FEC and 48 B headers per ≤1200 B payload: ≈ 4.5 × (1 + 48/1200).
    assert!((v.throughput_mbps - 4.5 * 1.04).abs() < 0.25, "{}", v.throughput_mbps);
    assert_eq!(v.frame_deadline_miss_rate, Some(0.0));
    let p50 = v.frame_latency_p50_ms.unwrap();
    assert!(p50 > 20.0 && p50 < 40.0, "frame p50 {p50}");
    assert_eq!(v.freezes, Some(0));
    assert_eq!(v.fps_under_10_ratio, Some(0.0));
    // RTT from TWCC: 40 ms of propagation, a little serialization, no queue.
    let rtt = v.rtt_p50_ms.unwrap();
    assert!(rtt > 40.0 && rtt < 42.0, "rtt {rtt}");
    assert_eq!(v.loss_runs5_per_s, Some(0.0));
}

/// GCC on a 20 Mbit/s bottleneck with a 1-BDP buffer ramps up and uses most of it without a
/// standing queue of more than one base RTT.
#[test]
fn gcc_call_uses_a_wired_bottleneck() {
    let out = run(&call("{ type = \"wired\", rate_mbps = 20, delay_ms = 1, queue = { type = \"fifo\", packets = 67 } }", "", 30.0), 1);
    let v = video(&out);
    assert!(v.throughput_mbps > 10.0 && v.throughput_mbps < 20.0, "{}", v.throughput_mbps);
    assert!(v.rtt_p50_ms.unwrap() < 80.0, "{:?}", v.rtt_p50_ms);
    assert!(v.frames_decoded.unwrap() > 800);
}

/// A buffer too small for a keyframe's burst loses packets; FEC and NACK retransmissions repair them,
/// and the components report it.
#[test]
fn losses_are_repaired_by_fec_and_nack() {
    let out = run(&call("{ type = \"wired\", rate_mbps = 10, delay_ms = 1, queue = { type = \"fifo\", packets = 6 } }", "rate_control = { type = \"fixed\", rate_mbps = 6 }", 10.0), 1);
    let v = video(&out);
    assert!(v.dropped_packets > 0, "the 6-packet buffer must overflow");
    let t = &out.components["transports"][0]["rtc"];
    let fec_recovered = t["receiver"]["fec_recovered"].as_u64().unwrap();
    let retransmissions = t["receiver"]["retransmissions"].as_u64().unwrap();
    assert!(fec_recovered + retransmissions > 0, "{t}");
    assert!(v.frames_decoded.unwrap() > 200);
}

/// Over 802.11 the RTCP feedback crosses the air on the uplink and contends like any frame: the
/// reverse packets get air timestamps.
#[test]
fn rtcp_crosses_the_wifi_uplink() {
    let hop = "{ type = \"wifi\", standard = \"ht\", band = \"5ghz\", rate_control = { type = \"fixed\", mcs = 7 } }";
    let out = run(&call(hop, "", 8.0), 1);
    let v = video(&out);
    assert!(v.frames_decoded.unwrap() > 150, "{v:?}");
    let log = &out.packets;
    let air = &log.stages[Stage::AirEnd as usize];
    let crossed = (0..log.len()).filter(|&i| log.reverse[i] == 1 && air[i] != NO_TIME).count();
    assert!(crossed > 40, "RTCP packets over the air: {crossed}");
}

/// Bad RTC settings are scenario errors naming the field.
#[test]
fn bad_rtc_settings_name_the_field() {
    let s = call("{ type = \"wired\", rate_mbps = 20, delay_ms = 1 }", "fec = { type = \"row\", l = 0 }", 5.0);
    let e = Scenario::from_toml_str(&s, Path::new(".")).unwrap_err().to_string();
    assert!(e.contains("flows[0].rtc.fec.l"), "{e}");
    let s = call("{ type = \"wired\", rate_mbps = 20, delay_ms = 1 }", "rate_control = { type = \"fixed\", rate_mbps = -1 }", 5.0);
    let e = Scenario::from_toml_str(&s, Path::new(".")).unwrap_err().to_string();
    assert!(e.contains("flows[0].rtc.rate_control.rate_mbps"), "{e}");
}

/// Video over TCP (Copa) on a 20 Mbit/s path: the backlog-driven rate adaptation climbs well above
/// its 100 kbit/s start, every frame of the window decodes in order, and frames arrive within a few
/// RTTs.
#[test]
fn tcp_video_adapts_to_the_path() {
    let s = "duration_s = 20\nwarmup_s = 5\n[[servers]]\nname = \"srv\"\n[[aps]]\nname = \"ap\"\n\
             last_hop = { type = \"wired\", rate_mbps = 20, delay_ms = 1, queue = { type = \"fifo\", packets = 250 } }\n\
             [[stations]]\nname = \"sta\"\n[[links]]\na = \"srv\"\nb = \"ap\"\nrate_mbps = 1000\ndelay_ms = 19\n\
             [[flows]]\nname = \"video\"\ntype = \"tcp_video\"\nfrom = \"srv\"\nto = \"sta\"\ntcp = { cc = { type = \"copa\" } }\n";
    let out = run(s, 1);
    let v = video(&out);
    assert_eq!(v.kind, "tcp_video");
    let bitrate = v.bitrate_mbps.unwrap();
    assert!(bitrate > 8.0 && bitrate < 20.0, "bitrate {bitrate}");
    // 15 s at 25 fps; the last frames may still be in flight.
    let decoded = v.frames_decoded.unwrap();
    assert!((370..=376).contains(&decoded), "{decoded}");
    let p50 = v.frame_latency_p50_ms.unwrap();
    assert!(p50 > 20.0 && p50 < 150.0, "frame p50 {p50}");
    assert!(v.goodput_mbps.unwrap() > 0.9 * bitrate, "{:?} vs {bitrate}", v.goodput_mbps);
    assert!(v.rtt_p50_ms.unwrap() >= 40.0);
}
