//! TXOPs: a further PSDU SIFS after a response while the TXOP limit allows it, and the end of a TXOP.

use super::*;

impl Medium {
    /// Within a TXOP limit, sends the next PSDU SIFS after the response without contending.
    pub(super) fn try_continue_txop<S: Scheduler>(&mut self, now: SimTime, ni: u32, eidx: usize, sched: &mut S, out: &mut Outputs<'_>) -> bool {
        let n = &self.nodes[ni as usize];
        let limit = n.edcaf[eidx].params.txop_limit;
        if limit.is_zero() {
            return false;
        }
        let ac = if n.qos { eidx } else { 0 };
        let start = now + self.sifs;
        let budget = (n.txop_start + limit).saturating_since(start);
        if !self.load_hw(now, ni, eidx, Some(budget), out) {
            return false;
        }
        // A PSDU already in hardware (a retry) must fit as well.
        let n = &self.nodes[ni as usize];
        let hw = n.hw[ac].as_ref().expect("loaded");
        let b = &self.bss[n.bss];
        let Some((txv, _)) = hw.psdu.chain.get(hw.series) else { return false };
        let d = ppdu_duration_with(&txv, hw.psdu.psdu_len, b.timings.band, b.airtime);
        let resp = self.response_to(n, &hw.psdu, &txv);
        if hw.psdu.bar || d + self.sifs + resp > budget {
            return false;
        }
        self.nodes[ni as usize].continue_eidx = Some(eidx);
        sched.schedule(start, WifiEvent::TxopContinue { node: ni });
        true
    }

    #[inline]
    pub(super) fn end_txop(&mut self, now: SimTime, ni: u32, eidx: usize, success: bool) {
        let n = &mut self.nodes[ni as usize];
        n.edcaf[eidx].end_txop(now, success, &mut n.rng);
        let ac = if n.qos { eidx } else { 0 };
        if n.hw[ac].is_some() || n.path.pending(ac) {
            n.edcaf[eidx].request(now, false, None, self.slot, &mut n.rng);
        }
    }

    /// Node `ni`'s TXOP ends before the PSDU it was to continue with (that PSDU went back at its
    /// hardware deadline), as after a last successful exchange.
    pub(super) fn txop_abandoned<S: Scheduler>(&mut self, now: SimTime, ni: u32, eidx: usize, sched: &mut S) {
        self.on_air = false;
        self.end_activity(ni);
        self.end_txop(now, ni, eidx, true);
        self.rearm_access(now, sched);
    }
}
