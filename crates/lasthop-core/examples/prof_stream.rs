//! Engine-only timing of a streamed run (the packet, PSDU, RTT and frame rows taken out in chunks
//! and discarded, as `lasthop run --out` takes them): `cargo run --release --example prof_stream -- FILE`.
fn main() {
    let a: Vec<String> = std::env::args().collect();
    let sc = lasthop_core::scenario::Scenario::load(std::path::Path::new(&a[1])).expect("scenario");
    let t = std::time::Instant::now();
    let mut sim = lasthop_core::sim::Sim::new(&sc, 1);
    let rows = 65_536;
    let mut taken = 0usize;
    while sim.run_until_rows(rows, &mut |_| true).expect("runs") {
        if let Some(c) = sim.take_packet_rows(rows) {
            taken += c.flow.len();
            sim.recycle_packet_rows(c);
        }
        let _ = sim.take_tx_rows(rows);
        let _ = sim.take_rtt_rows(rows);
        let _ = sim.take_frame_rows(rows);
    }
    let out = sim.finish();
    println!("events {} packet rows {} wall {:.3}", out.events, taken + out.packets.flow.len(), t.elapsed().as_secs_f64());
}
