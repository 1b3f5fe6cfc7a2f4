//! Hidden terminals (`wifi-model.md` §3.3): pairs of nodes that cannot sense each other's PPDUs count
//! their backoffs down independently, so one may start while the other is on the air, and a receiver
//! that hears both loses the PPDUs that overlap.
//!
//! Without hidden pairs (the default) the medium is one collision domain and none of this runs: a busy
//! period is global (`Medium::on_air`), and the PPDUs started at one access end together
//! ([`WifiEvent::PpduEnd`]). With them, each node senses the *activities* of the nodes it hears, and
//! each PPDU ends on its own ([`WifiEvent::AirEnd`]):
//! ```text
//! PPDU start of T ── every node that hears T senses T's activity (freezes when it was idle); T's PPDU
//!   │               is corrupted if its receiver hears (or is) the sender of a PPDU on the air, and it
//!   │               corrupts each PPDU on the air whose receiver hears (or is) T
//!   ▼
//! AirEnd(T) ├─ corrupted → a collision for T (ACK timeout); T's audience resumes after it (AIFS, or
//!           │    EIFS with `collision_ifs = "eifs"`)
//!           ├─ received → whoever hears the receiver also senses the response; ExchangeEnd ends the
//!           │    activity (unless the TXOP continues)
//!           └─ not received → as in one collision domain (NAV, EIFS at the receiver), for T's audience
//! ```
//! A node resumes its countdown when it senses no activity; its IFS counts from the latest end it must
//! respect (the activities it sensed, with their NAV or EIFS, and its own ACK timeout). Interference
//! is all or nothing, as a collision is in one domain (`capture = off`, equal powers): no SINR is
//! summed. Control responses are error-free here as everywhere in the medium, so a
//! hidden node that starts during an ACK does not destroy it (the ACK's audience defers from the end of
//! the PPDU it answers, so this needs a start inside that PPDU's end instant).

use super::*;

/// The hidden-terminal state of a medium.
pub(super) struct Hidden {
    /// `hears[l][t]`: node `l` senses node `t`'s PPDUs (medium indices; symmetric).
    hears: Vec<Vec<bool>>,
    /// Per node: the nodes its current activity is counted on (its audience).
    audience: Vec<Vec<u32>>,
    /// The PPDUs on the air.
    air: Vec<OnAir>,
}

/// A PPDU on the air.
struct OnAir {
    tx: u32,
    rx: u32,
    end: SimTime,
    /// Another PPDU overlapped it at its receiver.
    corrupted: bool,
}

/// Whether node `listener` senses node `talker` (always without hidden terminals).
#[inline]
pub(super) fn hears(h: &Option<Box<Hidden>>, listener: usize, talker: usize) -> bool {
    h.as_ref().is_none_or(|h| h.hears[listener][talker])
}

/// A node's IFS reference after an activity it sensed ends at `at`: the later of the two with hidden
/// terminals, where activities overlap and a node may still await its own ACK timeout or EIFS;
/// `at` itself in one collision domain (as the medium always did).
#[inline]
pub(super) fn later_ref(h: &Option<Box<Hidden>>, old: SimTime, at: SimTime) -> SimTime {
    if h.is_some() {
        old.max(at)
    } else {
        at
    }
}

/// Whether node `i` is in node `ni`'s audience (every node is, without hidden terminals).
#[inline]
pub(super) fn in_audience(h: &Option<Box<Hidden>>, ni: u32, i: usize) -> bool {
    h.as_ref().is_none_or(|h| h.audience[ni as usize].contains(&(i as u32)))
}

impl Medium {
    /// Makes each pair of world nodes unable to sense each other (hidden terminals). The nodes must be
    /// Wi-Fi nodes of this medium without a link between them (the scenario checks both).
    pub fn set_hidden(&mut self, pairs: &[(NodeId, NodeId)]) {
        if pairs.is_empty() {
            return;
        }
        let n = self.nodes.len();
        let mut hears = vec![vec![true; n]; n];
        for &(a, b) in pairs {
            let (a, b) = (self.node_of[a as usize].expect("a Wi-Fi node") as usize, self.node_of[b as usize].expect("a Wi-Fi node") as usize);
            debug_assert!(!self.links.iter().any(|l| (l.tx as usize, l.rx as usize) == (a, b) || (l.tx as usize, l.rx as usize) == (b, a)));
            hears[a][b] = false;
            hears[b][a] = false;
        }
        self.hidden = Some(Box::new(Hidden { hears, audience: vec![Vec::new(); n], air: Vec::new() }));
    }

    /// The PPDUs just started at one access (`in_flight`) go on the air, each to end on its own; the
    /// nodes that sensed none of them keep counting down.
    pub(super) fn air_start_group<S: Scheduler>(&mut self, now: SimTime, sched: &mut S) {
        let group = std::mem::take(&mut self.in_flight);
        for &ni in &group {
            self.air_start(now, ni, false);
            let end = self.nodes[ni as usize].exchange.as_ref().expect("transmitting").end;
            sched.schedule(end, WifiEvent::AirEnd { node: ni });
        }
        self.in_flight = group;
        self.in_flight.clear();
        self.rearm_access(now, sched);
    }

    /// Node `ni`'s PPDU starts: it corrupts and is corrupted by the overlapping PPDUs, and (unless it
    /// continues a TXOP, whose activity is already counted) the nodes that hear `ni` sense it.
    pub(super) fn air_start(&mut self, now: SimTime, ni: u32, continuing: bool) {
        let n = &self.nodes[ni as usize];
        let ex = n.exchange.as_ref().expect("transmitting");
        let rx = self.links[n.hw[ex.ac].as_ref().expect("exchange PSDU").psdu.link as usize].rx;
        let h = self.hidden.as_mut().expect("hidden terminals");
        let mut corrupted = false;
        for y in h.air.iter_mut().filter(|y| y.end > now) {
            y.corrupted |= y.rx == ni || h.hears[y.rx as usize][ni as usize];
            corrupted |= rx == y.tx || h.hears[rx as usize][y.tx as usize];
        }
        h.air.push(OnAir { tx: ni, rx, end: ex.end, corrupted });
        if !continuing {
            self.listen(now, ni, ni);
        }
    }

    /// The nodes that hear `talker` join node `ni`'s audience: they sense its activity until it ends;
    /// one that was idle freezes its countdowns now.
    pub(super) fn listen(&mut self, now: SimTime, ni: u32, talker: u32) {
        let (sifs, slot) = (self.sifs, self.slot);
        let h = self.hidden.as_mut().expect("hidden terminals");
        for (l, n) in self.nodes.iter_mut().enumerate() {
            if l == ni as usize || !h.hears[l][talker as usize] || h.audience[ni as usize].contains(&(l as u32)) {
                continue;
            }
            h.audience[ni as usize].push(l as u32);
            n.sensed += 1;
            if n.sensed == 1 && n.exchange.is_none() {
                let g = n.ref_time + sifs;
                for e in n.edcaf.iter_mut() {
                    e.freeze(now, g, slot);
                }
            }
        }
    }

    /// Node `ni`'s audience counts its IFS from `at` at the earliest (unless it already must wait longer).
    pub(super) fn audience_waits_until(&mut self, ni: u32, at: SimTime) {
        let h = self.hidden.as_ref().expect("hidden terminals");
        for &i in &h.audience[ni as usize] {
            let r = &mut self.nodes[i as usize].ref_time;
            *r = (*r).max(at);
        }
    }

    /// Node `ni`'s activity ends: its audience no longer senses it.
    #[inline]
    pub(super) fn end_activity(&mut self, ni: u32) {
        if let Some(h) = self.hidden.as_mut() {
            for &l in &h.audience[ni as usize] {
                self.nodes[l as usize].sensed -= 1;
            }
            h.audience[ni as usize].clear();
        }
    }

    /// Node `ni`'s PPDU ended (hidden terminals): a collision if another PPDU overlapped it at its
    /// receiver, else received or not as in one collision domain.
    pub(super) fn on_air_end<S: Scheduler>(&mut self, now: SimTime, ni: u32, sched: &mut S, out: &mut Outputs<'_>) {
        let h = self.hidden.as_mut().expect("hidden terminals");
        let pos = h.air.iter().position(|y| y.tx == ni).expect("the PPDU is on the air");
        let corrupted = h.air.swap_remove(pos).corrupted;
        if !corrupted {
            self.finish_single(now, ni, sched, out);
            return;
        }
        let extra = self.collision_ifs_extra(ni);
        self.audience_waits_until(ni, now + extra);
        self.fail_collided(now, ni, sched);
        self.end_activity(ni);
        self.rearm_access(now, sched);
    }
}
