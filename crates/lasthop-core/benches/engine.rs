//! Raw engine throughput: a schedule / pop / cancel mix like the MAC's (every popped event schedules a
//! follow-up; one in four also re-arms a timeout by cancel + schedule).

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use lasthop_core::engine::EventQueue;
use lasthop_core::rng::Rng;
use lasthop_core::SimDuration;

fn schedule_pop_cancel(c: &mut Criterion) {
    const EVENTS: u64 = 1_000_000;
    let mut g = c.benchmark_group("engine");
    g.throughput(Throughput::Elements(EVENTS));
    for pending in [16usize, 1024] {
        g.bench_function(format!("mix_pending_{pending}"), |b| {
            b.iter(|| {
                let mut q = EventQueue::new();
                let mut rng = Rng::derive(1, "bench");
                let mut timeouts = Vec::with_capacity(pending);
                for i in 0..pending {
                    q.schedule(q.now() + SimDuration::from_ns(rng.uniform_inclusive(10_000) as u64), i);
                    timeouts.push(q.schedule(q.now() + SimDuration::from_us(50), i));
                }
                let mut n = 0u64;
                while let Some((now, i)) = q.pop() {
                    n += 1;
                    if n >= EVENTS {
                        break;
                    }
                    let d = SimDuration::from_ns(1 + rng.uniform_inclusive(20_000) as u64);
                    q.schedule(now + d, i);
                    if n % 4 == 0 {
                        let k = i % pending;
                        q.cancel(timeouts[k]);
                        timeouts[k] = q.schedule(now + SimDuration::from_us(50), k);
                    }
                }
                n
            })
        });
    }
    g.finish();
}

criterion_group!(benches, schedule_pop_cancel);
criterion_main!(benches);
