//! FastAck (zhuge.md §5.2): which ACK the AP emits for which segment, and that no ACK reaches the
//! sender twice.

use super::fastack::*;
use super::testkit::*;
use crate::time::SimTime;

const L: u32 = 1000;

/// What reached the sender, in order: `(ack, from the AP?)`.
#[derive(Default)]
struct Sender {
    got: Vec<(u64, bool)>,
}

impl Sender {
    fn drain(&mut self, fa: &mut FastAck, upto: SimTime) {
        while let Some(t) = fa.next_wakeup().filter(|&t| t <= upto) {
            for a in fa.poll(t) {
                self.got.push((a.ack, true));
            }
        }
    }

    fn client(&mut self, fa: &mut FastAck, t: SimTime, ack: u64) -> AckVerdict {
        self.drain(fa, t);
        let v = fa.on_receiver_ack(t, ack);
        if v == AckVerdict::Forward {
            self.got.push((ack, false));
        }
        v
    }

    fn acks(&self) -> Vec<u64> {
        self.got.iter().map(|g| g.0).collect()
    }
}

fn seq(i: u64) -> u64 {
    i * L as u64
}

#[test]
fn one_fake_ack_per_delivered_segment_and_the_clients_are_swallowed() {
    let mut fa = FastAck::new(FastAckParams::default());
    let mut s = Sender::default();
    for i in 0..10 {
        fa.on_downlink_data(us(i * 100), seq(i), L, us(i * 100 - i * 10));
    }
    for i in 0..10 {
        fa.on_delivered(us(1_000 + i * 1_000 + 50), seq(i));
        // The client acknowledges every second segment (delayed ACKs), 5 ms after delivery.
        if i % 2 == 1 {
            assert_eq!(s.client(&mut fa, us(6_000 + i * 1_000), seq(i + 1)), AckVerdict::Suppress);
        }
    }
    s.drain(&mut fa, ms(100));
    assert_eq!(s.acks(), (1..=10).map(seq).collect::<Vec<_>>());
    assert!(s.got.iter().all(|g| g.1), "every ACK the sender saw came from the AP");
    let st = fa.stats();
    assert_eq!((st.fake_acks, st.forwarded, st.suppressed, st.delivered), (10, 0, 5, 10));
}

#[test]
fn collection_on_the_200_us_grid_and_the_p2p_delay() {
    let mut fa = FastAck::new(FastAckParams { fake_ack_delay_us: 16_000, ..Default::default() });
    fa.on_downlink_data(us(0), 0, L, us(0));
    fa.on_delivered(us(1_050), 0);
    assert_eq!(fa.next_wakeup(), Some(us(1_200)));
    assert!(fa.poll(us(1_200)).is_empty());
    assert_eq!(fa.next_wakeup(), Some(us(17_200)));
    assert_eq!(fa.poll(us(17_200)), vec![FakeAck { ack: 1000, ts_echo: us(0) }]);
    // A delivery exactly on the grid is collected at once.
    let mut fa = FastAck::new(FastAckParams::default());
    fa.on_downlink_data(us(0), 0, L, us(0));
    fa.on_delivered(us(1_400), 0);
    assert_eq!(fa.poll(us(1_400)).len(), 1);
}

#[test]
fn out_of_order_delivery_is_acknowledged_in_order() {
    let mut fa = FastAck::new(FastAckParams { collect_interval_us: 0, ..Default::default() });
    for i in 0..3 {
        fa.on_downlink_data(us(i), seq(i), L, us(0));
    }
    fa.on_delivered(us(100), seq(0));
    fa.on_delivered(us(200), seq(2));
    let mut s = Sender::default();
    s.drain(&mut fa, us(250));
    assert_eq!(s.acks(), vec![seq(1)], "segment 2 waits for segment 1");
    fa.on_delivered(us(300), seq(1));
    s.drain(&mut fa, us(300));
    assert_eq!(s.acks(), vec![seq(1), seq(2), seq(3)]);
}

#[test]
fn a_hole_upstream_of_the_ap_reaches_the_sender_as_duplicate_acks() {
    let mut fa = FastAck::new(FastAckParams { collect_interval_us: 0, ..Default::default() });
    let mut s = Sender::default();
    // Segment 2 is lost before the AP; 0, 1, 3, 4 arrive and are delivered.
    for i in [0, 1, 3, 4] {
        fa.on_downlink_data(us(i * 10), seq(i), L, us(0));
        fa.on_delivered(us(100 + i * 10), seq(i));
    }
    s.drain(&mut fa, us(200));
    assert_eq!(s.acks(), vec![seq(1), seq(2)], "nothing above the hole is claimed");
    // The client ACKs 2000 for segment 1 (already sent by the AP) and then twice more for 3 and 4.
    assert_eq!(s.client(&mut fa, us(5_000), seq(2)), AckVerdict::Suppress);
    assert_eq!(s.client(&mut fa, us(5_010), seq(2)), AckVerdict::Forward);
    assert_eq!(s.client(&mut fa, us(5_020), seq(2)), AckVerdict::Forward);
    // The sender retransmits segment 2; once delivered the AP acknowledges 2, 3 and 4 in turn.
    fa.on_downlink_data(us(60_000), seq(2), L, us(55_000));
    fa.on_delivered(us(60_100), seq(2));
    s.drain(&mut fa, us(60_100));
    assert_eq!(s.acks(), vec![seq(1), seq(2), seq(2), seq(2), seq(3), seq(4), seq(5)]);
    // The ACK for 2000 the sender saw three times: once from the AP, twice as genuine duplicates.
    assert_eq!(s.got.iter().filter(|g| g.0 == seq(2) && g.1).count(), 1);
    // The client's catch-up ACK covers data the AP already acknowledged.
    assert_eq!(s.client(&mut fa, us(65_000), seq(5)), AckVerdict::Suppress);
    assert_eq!(fa.stats().forwarded_dupacks, 2);
}

#[test]
fn a_last_hop_loss_is_repaired_locally() {
    let mut fa = FastAck::new(FastAckParams { collect_interval_us: 0, ..Default::default() });
    let mut s = Sender::default();
    for i in 0..6 {
        fa.on_downlink_data(us(i * 10), seq(i), L, us(i));
        fa.on_delivered(us(100 + i * 10), seq(i));
    }
    s.drain(&mut fa, us(200));
    // Segment 2 was "delivered" but the client never got it: ACK 2000, then three duplicates.
    let v: Vec<AckVerdict> = (0..4).map(|k| s.client(&mut fa, us(1_000 + k), seq(2))).collect();
    assert_eq!(
        v,
        vec![AckVerdict::Suppress, AckVerdict::Suppress, AckVerdict::Suppress, AckVerdict::Retransmit { seq: seq(2), len: L }]
    );
    assert_eq!(s.client(&mut fa, us(1_010), seq(2)), AckVerdict::Suppress, "one retransmission per episode");
    assert_eq!(s.acks(), (1..=6).map(seq).collect::<Vec<_>>());
    // The repaired client ACKs everything: covered, suppressed; the cache is purged.
    assert_eq!(s.client(&mut fa, us(2_000), seq(6)), AckVerdict::Suppress);
    assert_eq!(s.client(&mut fa, us(2_001), seq(2)), AckVerdict::Suppress, "older than the client's last");
    assert_eq!(fa.stats().local_retransmissions, 1);
}

#[test]
fn a_client_ack_ahead_of_the_ap_is_forwarded_and_supersedes_pending_fake_acks() {
    let mut fa = FastAck::new(FastAckParams { fake_ack_delay_us: 16_000, collect_interval_us: 0, ..Default::default() });
    let mut s = Sender::default();
    for i in 0..3 {
        fa.on_downlink_data(us(i), seq(i), L, us(0));
    }
    fa.on_delivered(us(100), seq(0));
    s.drain(&mut fa, us(100));
    // The delivery reports of 1 and 2 are missed; the client's ACK of 3000 arrives first.
    assert_eq!(s.client(&mut fa, ms(10), seq(3)), AckVerdict::Forward);
    s.drain(&mut fa, ms(50));
    assert_eq!(s.acks(), vec![seq(3)]);
    assert_eq!(fa.stats().fake_acks_superseded, 1);
    // A late delivery report of 1 now emits nothing: the sender has it.
    fa.on_delivered(ms(20), seq(1));
    s.drain(&mut fa, ms(60));
    assert_eq!(s.acks(), vec![seq(3)]);
    // Reordered older client ACKs are swallowed.
    assert_eq!(s.client(&mut fa, ms(61), seq(2)), AckVerdict::Suppress);
}

/// Whatever the delivery order, the AP's own ACKs only grow, and the only repeated value the sender
/// sees is a genuine duplicate ACK of the client (data delivered above a hole), forwarded once.
#[test]
fn no_duplicated_acks_under_random_delivery() {
    use crate::rng::Rng;
    use std::collections::BTreeSet;
    for seed in 0..30 {
        let mut rng = Rng::derive(seed, "test/fastack");
        let mut fa = FastAck::new(FastAckParams { collect_interval_us: 200, ..Default::default() });
        let mut s = Sender::default();
        // (ack, the client had sent this cumulative ACK before) for every forwarded client ACK.
        let mut client_dups: Vec<(u64, bool)> = vec![];
        let (n, mut t) = (200u64, 0u64);
        let (mut undelivered, mut at_client) = (vec![], BTreeSet::new());
        let mut client_last: Option<u64> = None;
        let mut deliver = |fa: &mut FastAck, s: &mut Sender, t: u64, j: u64, at_client: &mut BTreeSet<u64>| {
            fa.on_delivered(us(t), seq(j));
            at_client.insert(j);
            let cum = seq((0..).find(|k| !at_client.contains(k)).expect("finite"));
            let dup = client_last == Some(cum);
            client_last = Some(cum);
            // The client ACKs in-order data every second segment, anything out of order at once.
            let acks_now = dup || j % 2 == 1 || rng_flip(t);
            if acks_now && s.client(fa, us(t + 5_000), cum) == AckVerdict::Forward {
                client_dups.push((cum, dup));
            }
        };
        for i in 0..n {
            t += rng.uniform_inclusive(300) as u64;
            fa.on_downlink_data(us(t), seq(i), L, us(t));
            undelivered.push(i);
            if rng.bernoulli(0.7) {
                let k = if rng.bernoulli(0.8) { 0 } else { rng.uniform_inclusive(undelivered.len() as u32 - 1) as usize };
                let j = undelivered.remove(k);
                deliver(&mut fa, &mut s, t, j, &mut at_client);
            }
        }
        for j in std::mem::take(&mut undelivered) {
            t += 50;
            deliver(&mut fa, &mut s, t, j, &mut at_client);
        }
        s.drain(&mut fa, SimTime::from_secs(10));
        let fake: Vec<u64> = s.got.iter().filter(|g| g.1).map(|g| g.0).collect();
        assert!(fake.windows(2).all(|w| w[0] < w[1]), "seed {seed}: fake ACKs not increasing");
        let all = s.acks();
        assert!(all.windows(2).all(|w| w[0] <= w[1]), "seed {seed}: ACKs went backwards: {all:?}");
        let mut forwarded = client_dups.iter();
        for (k, g) in s.got.iter().enumerate() {
            let from_client = !g.1;
            let dup_of_client = from_client && forwarded.next().expect("recorded").1;
            if k > 0 && s.got[k - 1].0 == g.0 {
                assert!(dup_of_client, "seed {seed}: ACK {} repeated at {k} without a client duplicate", g.0);
            }
        }
        assert_eq!(all.last(), Some(&seq(n)), "seed {seed}: everything acknowledged");
    }
}

/// A deterministic coin for the client's delayed ACKs.
fn rng_flip(t: u64) -> bool {
    t % 3 == 0
}
