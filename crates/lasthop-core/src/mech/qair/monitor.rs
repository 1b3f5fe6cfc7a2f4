//! The Delay Monitor (spec §3.1–3.2): per-frame delays t_k = t_e − t_h of successful PSDUs, with the
//! head-of-queue time inferred from the driver's view alone (Eq. 6): a hardware queue is FIFO, so a
//! frame starts contending when it is enqueued (t_w) or when its predecessor leaves (t_e), whichever is
//! later. Kept per hardware queue (AC); a failed frame leaves the queue too, but gives no sample.

use crate::time::{SimDuration, SimTime};
use std::collections::VecDeque;

/// The monitor of one node's hardware queues.
#[derive(Clone, Debug, Default)]
pub struct DelayMonitor {
    /// Per AC: the enqueue times t_w of the PSDUs in the hardware queue, oldest first.
    t_w: [VecDeque<SimTime>; 4],
    /// Per AC: when the last PSDU left the hardware queue.
    last_done: [Option<SimTime>; 4],
}

impl DelayMonitor {
    /// A PSDU entered AC `ac`'s hardware queue (HWQ_ENQ).
    pub fn on_enqueue(&mut self, now: SimTime, ac: usize) {
        self.t_w[ac].push_back(now);
    }

    /// The oldest PSDU of AC `ac` left the hardware queue at `now` (HW_DONE); returns its t_k if it
    /// was delivered (from its inferred head time t_h, or from its enqueue t_w with `from_enqueue`),
    /// and t_h.
    pub fn on_done(&mut self, now: SimTime, ac: usize, success: bool, from_enqueue: bool) -> (Option<SimDuration>, SimTime) {
        let t_w = self.t_w[ac].pop_front().unwrap_or(now);
        let t_h = self.last_done[ac].map_or(t_w, |e| e.max(t_w));
        self.last_done[ac] = Some(now);
        let start = if from_enqueue { t_w } else { t_h };
        (success.then(|| now.saturating_since(start)), t_h)
    }
}
