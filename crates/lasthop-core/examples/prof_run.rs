fn main() {
    let a: Vec<String> = std::env::args().collect();
    let sc = lasthop_core::scenario::Scenario::load(std::path::Path::new(&a[1])).expect("scenario");
    let t = std::time::Instant::now();
    let out = lasthop_core::sim::run(&sc, 1, &mut |_| true).expect("runs");
    println!("events {} wall {:.3}", out.events, t.elapsed().as_secs_f64());
}
