//! Tail-drop FIFO bounded in packets and/or bytes (Linux `pfifo`/`bfifo`).

use super::{Dropped, QueueStats};
use crate::packet::Packet;
use crate::stats::DropReason;
use crate::time::SimTime;
use std::collections::VecDeque;

#[derive(Debug)]
pub struct Fifo {
    limit_packets: Option<u32>,
    limit_bytes: Option<u64>,
    q: VecDeque<Packet>,
    bytes: u64,
    pub stats: QueueStats,
}

impl Fifo {
    pub fn new(limit_packets: Option<u32>, limit_bytes: Option<u64>) -> Self {
        Fifo { limit_packets, limit_bytes, q: VecDeque::new(), bytes: 0, stats: QueueStats::default() }
    }

    pub fn enqueue(&mut self, now: SimTime, p: Packet) -> Result<(), Dropped> {
        let full_pk = self.limit_packets.is_some_and(|l| self.q.len() >= l as usize);
        let full_b = self.limit_bytes.is_some_and(|l| self.bytes + p.size as u64 > l);
        if full_pk || full_b {
            self.stats.dropped += 1;
            return Err((p, DropReason::QueueFull));
        }
        super::admit(&mut self.q, &mut self.bytes, &mut self.stats, now, p);
        Ok(())
    }

    pub fn dequeue(&mut self, _now: SimTime) -> Option<Packet> {
        let p = self.q.pop_front()?;
        self.bytes -= p.size as u64;
        self.stats.dequeued += 1;
        Some(p)
    }

    /// The head packet.
    pub fn peek(&self) -> Option<&Packet> {
        self.q.front()
    }

    pub fn len_packets(&self) -> usize {
        self.q.len()
    }
    pub fn len_bytes(&self) -> u64 {
        self.bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn pkt(id: u64, size: u32) -> Packet {
        Packet { id, flow: 0, seq: id, size, src: 0, dst: 1, hop: 0, dscp: 0, sent: SimTime::ZERO, enqueued: SimTime::ZERO, hdr: Default::default() }
    }

    #[test]
    fn tail_drop_by_packets_and_bytes() {
        let mut q = Fifo::new(Some(2), None);
        assert!(q.enqueue(SimTime::ZERO, pkt(0, 100)).is_ok());
        assert!(q.enqueue(SimTime::ZERO, pkt(1, 100)).is_ok());
        assert_eq!(q.enqueue(SimTime::ZERO, pkt(2, 100)).unwrap_err().1, DropReason::QueueFull);
        let mut q = Fifo::new(None, Some(250));
        assert!(q.enqueue(SimTime::ZERO, pkt(0, 100)).is_ok());
        assert!(q.enqueue(SimTime::ZERO, pkt(1, 100)).is_ok());
        assert!(q.enqueue(SimTime::ZERO, pkt(2, 100)).is_err());
        assert!(q.enqueue(SimTime::ZERO, pkt(3, 50)).is_ok());
        assert_eq!(q.dequeue(SimTime::ZERO).unwrap().id, 0);
    }

    proptest! {
        /// Byte and packet counters always match the contents, and order is preserved.
        #[test]
        fn counters_match_contents(ops in proptest::collection::vec((any::<bool>(), 40u32..1500), 1..400)) {
            let mut q = Fifo::new(Some(50), Some(30_000));
            let mut model = std::collections::VecDeque::new();
            for (i, (enq, size)) in ops.into_iter().enumerate() {
                if enq {
                    if q.enqueue(SimTime::ZERO, pkt(i as u64, size)).is_ok() { model.push_back(i as u64); }
                } else {
                    prop_assert_eq!(q.dequeue(SimTime::ZERO).map(|p| p.id), model.pop_front());
                }
                prop_assert_eq!(q.len_packets(), model.len());
                prop_assert!(q.len_packets() <= 50 && q.len_bytes() <= 30_000);
                prop_assert_eq!(q.len_bytes(), q.q.iter().map(|p| p.size as u64).sum::<u64>());
            }
        }
    }
}
