//! A FIFO of items held at the AP until their release times: the ACKs the out-of-band Feedback Updater
//! delays (zhuge.md §3.4) and FastAck's delayed fake ACKs (§5.2). Release times never decrease, so the
//! items leave in the order they came, and items due at the same instant leave in FIFO order.

use crate::time::SimTime;
use std::collections::VecDeque;

/// Items waiting for their release times.
#[derive(Clone, Debug)]
pub struct Hold<T> {
    q: VecDeque<(SimTime, T)>,
}

impl<T> Default for Hold<T> {
    fn default() -> Self {
        Hold { q: VecDeque::new() }
    }
}

impl<T> Hold<T> {
    pub fn new() -> Self {
        Self::default()
    }

    /// Holds `item` until `release_at`. A release time before the last one held would reorder the
    /// items; it is a caller bug (the schedulers never produce one) and is raised to that time.
    pub fn push(&mut self, release_at: SimTime, item: T) {
        let last = self.q.back().map_or(release_at, |(t, _)| *t);
        debug_assert!(release_at >= last, "release times must not decrease");
        self.q.push_back((release_at.max(last), item));
    }

    /// The release time of the oldest item.
    pub fn next_wakeup(&self) -> Option<SimTime> {
        self.q.front().map(|(t, _)| *t)
    }

    /// The oldest item if it is due at `now`; call until `None`.
    pub fn poll(&mut self, now: SimTime) -> Option<T> {
        match self.q.front() {
            Some((t, _)) if *t <= now => self.q.pop_front().map(|(_, item)| item),
            _ => None,
        }
    }

    pub fn len(&self) -> usize {
        self.q.len()
    }

    pub fn is_empty(&self) -> bool {
        self.q.is_empty()
    }
}
