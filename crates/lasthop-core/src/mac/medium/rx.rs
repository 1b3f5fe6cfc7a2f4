//! The receiver side of a link: in-order release through the reorder buffer (BlockAck).

use super::*;

impl Medium {
    /// Receiver side: in-order release through the reorder buffer.
    pub(super) fn receive(link: &mut Link, ac: usize, seq: u64, pkt: Packet, out: &mut Outputs<'_>) {
        if seq < link.rx_next[ac] {
            return; // duplicate
        }
        if seq == link.rx_next[ac] {
            out.delivered.push((link.rx_node, pkt));
            link.rx_next[ac] += 1;
            while let Some(p) = link.held[ac].remove(&link.rx_next[ac]) {
                out.delivered.push((link.rx_node, p));
                link.rx_next[ac] += 1;
            }
        } else {
            link.held[ac].insert(seq, pkt);
        }
    }

    /// The originator gave up on everything below `upto`: the receiver releases what it held
    /// (as a BlockAckReq moving the window would).
    pub(super) fn release_held(link: &mut Link, ac: usize, upto: u64, out: &mut Outputs<'_>) {
        if link.rx_next[ac] >= upto {
            return;
        }
        link.rx_next[ac] = upto;
        let below: Vec<u64> = link.held[ac].range(..upto).map(|(s, _)| *s).collect();
        for s in below {
            let p = link.held[ac].remove(&s).expect("held");
            out.delivered.push((link.rx_node, p));
        }
        while let Some(p) = link.held[ac].remove(&link.rx_next[ac]) {
            out.delivered.push((link.rx_node, p));
            link.rx_next[ac] += 1;
        }
    }
}
