//! The layer above mac80211 on the Linux path: the wireless interface's qdiscs — a token bucket shaper
//! (Linux `tbf`, the node's offered-load cap) as the root, an AQM qdisc under it — and the hand-off of
//! each packet into its station's TXQ (FQ-CoDel tin, or a driver policy's dedicated flow), which starts
//! the driver's scheduling round for its AC. mac80211 never stops the interface's queue, so a qdisc
//! without a shaper passes each packet straight on (its AQM still sees it).

use super::LinuxPath;
use crate::mac::txpath::PathOut;
use crate::packet::Packet;
use crate::stats::Stage;
use crate::time::SimTime;

impl LinuxPath {
    pub fn enqueue(&mut self, now: SimTime, link: usize, ac: usize, pkt: Packet, out: &mut PathOut<'_>) {
        self.last_now = now;
        let Some(tbf) = self.tbf.as_mut() else { return self.enqueue_qdisc(now, link, ac, pkt, out) };
        out.log.stamp(pkt.id, Stage::QdiscEnq, now);
        match tbf.enqueue(now, pkt) {
            Ok(()) => {
                self.tbf_of.insert(pkt.id, (link, ac));
            }
            Err(d) => self.drops.push(d),
        }
        self.flush_drops(now, out);
        let others = self.release_tbf(now, out) & !(1 << ac);
        if others != 0 && !self.waking {
            // The medium attends to `ac` only after an arrival: a packet of another AC that left the
            // shaper now needs the node's wakeup, which requests access for every AC (as the gate's
            // held PSDUs do).
            self.tbf_wakeup = Some(now);
        }
    }

    /// What the shaper lets through now goes on to the qdisc under it or the TXQs; then when its next
    /// packet can leave. Returns the ACs of the packets released, as a bit set.
    pub(super) fn release_tbf(&mut self, now: SimTime, out: &mut PathOut<'_>) -> u8 {
        let mut acs = 0;
        while let Some(pkt) = self.tbf.as_mut().and_then(|t| t.dequeue(now)) {
            let (link, ac) = self.tbf_of.remove(&pkt.id).expect("queued with its link");
            acs |= 1 << ac;
            if self.qdisc.is_none() {
                out.log.stamp(pkt.id, Stage::QdiscDeq, now);
            }
            self.enqueue_qdisc(now, link, ac, pkt, out);
        }
        self.tbf_wakeup = self.tbf.as_ref().and_then(|t| t.next_release(now));
        acs
    }

    /// A packet past the shaper (if any): through the qdisc (if any) into its TXQ.
    fn enqueue_qdisc(&mut self, now: SimTime, link: usize, ac: usize, pkt: Packet, out: &mut PathOut<'_>) {
        let pkt = match self.qdisc.as_mut() {
            None => pkt,
            Some(q) => {
                if self.tbf.is_none() {
                    out.log.stamp(pkt.id, Stage::QdiscEnq, now);
                }
                let r = q.enqueue(now, pkt);
                q.drain_drops(&mut self.drops);
                if let Err(d) = r {
                    self.drops.push(d);
                }
                let p = q.dequeue(now, &mut self.drops);
                self.flush_drops(now, out);
                match p {
                    Some(p) => {
                        out.log.stamp(p.id, Stage::QdiscDeq, now);
                        p
                    }
                    None => return,
                }
            }
        };
        let tin = self.links[link].txqs[ac].tin;
        out.log.stamp(pkt.id, Stage::TxqEnq, now);
        match self.policy.as_mut().filter(|p| p.dedicated(pkt.flow)) {
            Some(policy) => {
                let own = match self.dedicated.entry((pkt.flow, link, ac)) {
                    std::collections::btree_map::Entry::Occupied(e) => Some(*e.get()),
                    // A flow prioritized at run time keeps to its hashed FQ queue while that still holds
                    // its packets, so that they stay in order (as in the kernel, where the hash picks the
                    // queue); then it takes a queue of its own.
                    std::collections::btree_map::Entry::Vacant(e) => {
                        let hashed = self.fq.flow_for(tin, self.fq.flow_index(&pkt));
                        (!self.fq.flow_holds(hashed, pkt.flow)).then(|| *e.insert(self.fq.add_dedicated_flow()))
                    }
                };
                match own {
                    Some(f) => {
                        policy.on_enqueue(now, &pkt, link, ac);
                        self.fq.enqueue_dedicated(now, tin, f, pkt, &mut self.drops);
                    }
                    None => self.fq.enqueue(now, tin, pkt, &mut self.drops),
                }
            }
            None => self.fq.enqueue(now, tin, pkt, &mut self.drops),
        }
        self.flush_drops(now, out);
        if let Some(mut d) = self.driver.take() {
            d.on_txq_enqueue(now, self, link, ac, out);
            self.driver = Some(d);
            return;
        }
        if self.txq_has_frames(link, ac) {
            self.afs[ac].activate(now, link);
        }
        self.schedule(now, ac, out);
    }
}
