//! The node-side timers of the medium: per-PSDU hardware deadlines (paths that set them,
//! [`TxPath::shares_hardware`]: Law's Limit_h, the Linux path's `hw_time_limit`) and the generic
//! per-node wakeup a path asks for ([`TxPath::next_wakeup`]: a release gate opening again, a completion
//! the driver handles t_irq later).

use super::*;

impl Medium {
    /// The hardware deadline of the PSDU at the head of AC `ac` of `n`: in the medium's hardware slot,
    /// or still in the path's hardware queue.
    fn head_deadline(n: &Node, ac: usize) -> Option<SimTime> {
        match &n.hw[ac] {
            Some(hw) => hw.psdu.hw_deadline,
            None => n.path.hw_deadline(ac),
        }
    }

    /// Returns to the path every head PSDU of node `ni` whose deadline has passed and whose exchange is
    /// not on the air. Returns whether any was returned.
    pub(super) fn expire_due(&mut self, now: SimTime, ni: u32, out: &mut Outputs<'_>) -> bool {
        let mut any = false;
        let nq = if self.nodes[ni as usize].qos { 4 } else { 1 };
        for ac in 0..nq {
            loop {
                let n = &self.nodes[ni as usize];
                let on_air = n.exchange.as_ref().is_some_and(|e| e.ac == ac);
                match Self::head_deadline(n, ac) {
                    Some(d) if d <= now && !on_air => {
                        self.return_at_deadline(now, ni, ac, out);
                        any = true;
                    }
                    _ => break,
                }
            }
        }
        any
    }

    /// The hardware stops working on AC `ac`'s head PSDU and hands it back, unacknowledged.
    fn return_at_deadline(&mut self, now: SimTime, ni: u32, ac: usize, out: &mut Outputs<'_>) {
        let n = &mut self.nodes[ni as usize];
        let mut po = PathOut { log: out.log, dropped: out.dropped, releases: &mut self.releases };
        let (psdu, attempts) = match n.hw[ac].take() {
            Some(hw) => (hw.psdu, hw.attempts),
            None => (n.path.expire_head(now, ac, &mut po).expect("a head PSDU has the deadline"), 0),
        };
        n.stats.hw_time_limit_returns += 1;
        n.hw_vacated[ac] = now;
        let mut received = std::mem::take(&mut n.spare);
        received.clear();
        received.resize(psdu.mpdus.len(), false);
        let st = TxStatus { success: false, received: &received, attempts };
        super::air_report::report_air_complete(&mut out.air, n.node, ac, &psdu, st, 0);
        n.path.complete(now, psdu, st, &mut po);
        n.spare = received;
        self.apply_releases(out);
    }

    /// For nodes whose hardware budget spans the ACs or that set deadlines: returns PSDUs past their
    /// deadline, requests access for every AC with a PSDU (and releases the others), and re-arms the
    /// deadline timers; then points the wakeup timers of timed paths at what they ask for now (after the
    /// returns, which may queue a completion for the driver or open a release gate).
    #[inline]
    pub(super) fn service_shared_hw<S: Scheduler>(&mut self, now: SimTime, sched: &mut S, out: &mut Outputs<'_>) {
        if self.any_shared_hw || self.any_timed_path {
            self.service_timed_nodes(now, sched, out);
        }
    }

    fn service_timed_nodes<S: Scheduler>(&mut self, now: SimTime, sched: &mut S, out: &mut Outputs<'_>) {
        if self.any_shared_hw {
            self.service_deadlines(now, sched, out);
        }
        if self.any_timed_path {
            self.rearm_node_wakeups(sched);
        }
        if self.any_shared_hw {
            self.rearm_access(now, sched);
        }
    }

    fn service_deadlines<S: Scheduler>(&mut self, now: SimTime, sched: &mut S, out: &mut Outputs<'_>) {
        for ni in 0..self.nodes.len() as u32 {
            if !self.nodes[ni as usize].shares_hw {
                continue;
            }
            self.expire_due(now, ni, out);
            self.wake(now, ni);
            let n = &mut self.nodes[ni as usize];
            for ac in 0..if n.qos { 4 } else { 1 } {
                let want = Self::head_deadline(n, ac).filter(|&d| d > now);
                if n.deadline_timers[ac].map(|x| x.1) != want {
                    if let Some((id, _)) = n.deadline_timers[ac].take() {
                        sched.cancel(id);
                    }
                    n.deadline_timers[ac] = want.map(|d| (sched.schedule(d, WifiEvent::HwDeadline { node: ni, ac: ac as u8 }), d));
                }
            }
        }
    }

    /// Points each timed node's wakeup timer at the time its path asks for.
    fn rearm_node_wakeups<S: Scheduler>(&mut self, sched: &mut S) {
        for ni in 0..self.nodes.len() as u32 {
            let n = &mut self.nodes[ni as usize];
            if !n.timed_path {
                continue;
            }
            let want = n.path.next_wakeup();
            if n.wakeup_timer.map(|x| x.1) != want {
                if let Some((id, _)) = n.wakeup_timer.take() {
                    sched.cancel(id);
                }
                n.wakeup_timer = want.map(|t| (sched.schedule(t, WifiEvent::NodeWakeup { node: ni }), t));
            }
        }
    }

    /// Node `ni`'s path runs at the time it asked for; then every AC that got a PSDU requests access.
    pub(super) fn on_node_wakeup<S: Scheduler>(&mut self, now: SimTime, ni: u32, sched: &mut S, out: &mut Outputs<'_>) {
        let n = &mut self.nodes[ni as usize];
        n.wakeup_timer = None;
        let mut po = PathOut { log: out.log, dropped: out.dropped, releases: &mut self.releases };
        n.path.on_wakeup(now, &mut po);
        self.apply_releases(out);
        for ac in 0..if self.nodes[ni as usize].qos { 4 } else { 1 } {
            self.request_if_pending(now, ni, ac, true);
        }
        self.rearm_access(now, sched);
    }
}
