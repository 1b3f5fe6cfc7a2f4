//! Quick look at a saturated scenario: `cargo run --release --example sat -- sat_11a_54_noagg 10 10`.
use lasthop_core::validate::{bianchi, saturation};
fn main() {
    let a: Vec<String> = std::env::args().collect();
    let name = a.get(1).map(String::as_str).unwrap_or("sat_11a_54_noagg");
    let n: u32 = a.get(2).and_then(|s| s.parse().ok()).unwrap_or(10);
    let secs: f64 = a.get(3).and_then(|s| s.parse().ok()).unwrap_or(10.0);
    let t = std::time::Instant::now();
    let seed: u64 = a.get(4).and_then(|s| s.parse().ok()).unwrap_or(1);
    let (r, _) = saturation::run(name, n, seed, if name.ends_with("_agg") { 3.0 } else { 1.0 }, secs).expect("known scenario");
    let wall = t.elapsed().as_secs_f64();
    let model = bianchi::solve(&bianchi::BianchiParams::ofdm_54(), n);
    println!("{} n={} thr={:.3} jain={:.4} p_fail={:.3} (bianchi S={:.3} p={:.3}) events={} wall={:.3}s sim/wall={:.1} ev/s={:.2e}",
        name, n, r.throughput_mbps, r.jain, r.p_fail, model.throughput_mbps, model.p, r.events, wall, r.sim_seconds / wall, r.events as f64 / wall);
}
