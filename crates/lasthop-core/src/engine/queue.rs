//! An indexed binary min-heap keyed by `(SimTime, seq)`.

use crate::time::SimTime;

/// Handle of a scheduled event. Stale handles (fired or cancelled) are detected by generation.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct TimerId {
    slot: u32,
    gen: u32,
}

#[derive(Debug)]
struct Slot<E> {
    gen: u32,
    /// Index into `heap` while scheduled; `u32::MAX` when free.
    pos: u32,
    event: Option<E>,
}

/// A heap entry: the key is kept in the heap itself, so sifting compares without leaving it. 16 bytes:
/// the sequence number and the slot share one word (`seq << SLOT_BITS | slot`), so an entry moves as
/// one vector register (24-byte entries: the ns-3 anchor's engine time × 1.05).
#[derive(Clone, Copy, Debug)]
struct Entry {
    time: SimTime,
    /// `seq << SLOT_BITS | slot`, with [`LATE`] set for [`EventQueue::schedule_after_instant`]. Sequence
    /// numbers are unique, so ordering by `(time, key)` is ordering by `(time, seq)`.
    key: u64,
}

/// Bits of [`Entry::key`] that hold the slot: at most 2^24 (16.7 M) events pending at once.
const SLOT_BITS: u32 = 24;
/// Sequence numbers below this fit the key under [`LATE`]: 5.5 · 10^11 events per run.
const SEQ_LIMIT: u64 = 1 << (63 - SLOT_BITS);

impl Entry {
    #[inline]
    fn new(time: SimTime, seq: u64, slot: u32) -> Entry {
        Entry { time, key: seq << SLOT_BITS | slot as u64 }
    }
    #[inline]
    fn slot(&self) -> u32 {
        (self.key & ((1 << SLOT_BITS) - 1)) as u32
    }
    #[inline]
    fn before(&self, other: &Entry) -> bool {
        (self.time, self.key) < (other.time, other.key)
    }
}

/// Event queue with O(log n) schedule, pop and cancel.
#[derive(Debug)]
pub struct EventQueue<E> {
    slots: Vec<Slot<E>>,
    free: Vec<u32>,
    /// Binary min-heap on (time, seq).
    heap: Vec<Entry>,
    next_seq: u64,
    now: SimTime,
    popped: u64,
}

const FREE: u32 = u32::MAX;
/// The sequence-number range of [`EventQueue::schedule_after_instant`].
const LATE: u64 = 1 << 63;

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E> EventQueue<E> {
    pub fn new() -> Self {
        EventQueue { slots: Vec::new(), free: Vec::new(), heap: Vec::new(), next_seq: 0, now: SimTime::ZERO, popped: 0 }
    }

    /// The time of the last popped event (the simulation clock).
    #[inline]
    pub fn now(&self) -> SimTime {
        self.now
    }

    /// Number of events popped so far.
    pub fn events_processed(&self) -> u64 {
        self.popped
    }

    /// Counts an event handled without passing through the queue (a run-time command applied while
    /// the run is stepped, which a scripted one would have been).
    pub fn count_unqueued_event(&mut self) {
        self.popped += 1;
    }

    /// Number of pending events.
    pub fn len(&self) -> usize {
        self.heap.len()
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    /// Schedules `event` at `time`. Scheduling in the past is a model bug.
    pub fn schedule(&mut self, time: SimTime, event: E) -> TimerId {
        assert!(time >= self.now, "event scheduled in the past: {time} < {}", self.now);
        let seq = self.next_seq;
        assert!(seq < SEQ_LIMIT, "more than {SEQ_LIMIT} events in one run");
        self.next_seq += 1;
        let slot = match self.free.pop() {
            Some(s) => {
                self.slots[s as usize].event = Some(event);
                s
            }
            None => {
                let s = u32::try_from(self.slots.len()).ok().filter(|&s| s < 1 << SLOT_BITS).expect("more than 2^24 events pending at once");
                self.slots.push(Slot { gen: 0, pos: FREE, event: Some(event) });
                s
            }
        };
        self.heap.push(Entry::new(time, seq, slot));
        self.sift_up(self.heap.len() - 1);
        TimerId { slot, gen: self.slots[slot as usize].gen }
    }

    /// Schedules `event` at `time` after every other event of that instant, whenever scheduled (its
    /// sequence number is in a range above all of theirs); such events keep their order among
    /// themselves. For a run-time command, which must act once the instant's events have run, as a
    /// command given to a stepped run does.
    pub fn schedule_after_instant(&mut self, time: SimTime, event: E) -> TimerId {
        let id = self.schedule(time, event);
        let pos = self.slots[id.slot as usize].pos as usize;
        self.heap[pos].key |= LATE;
        self.sift_down(pos, self.heap[pos]);
        id
    }

    /// Whether `id` is still pending.
    pub fn is_pending(&self, id: TimerId) -> bool {
        self.slots.get(id.slot as usize).is_some_and(|s| s.gen == id.gen && s.pos != FREE)
    }

    /// The time `id` will fire, if still pending.
    pub fn deadline(&self, id: TimerId) -> Option<SimTime> {
        self.is_pending(id).then(|| self.heap[self.slots[id.slot as usize].pos as usize].time)
    }

    /// Cancels a pending event and returns it; `None` if it already fired or was cancelled.
    pub fn cancel(&mut self, id: TimerId) -> Option<E> {
        if !self.is_pending(id) {
            return None;
        }
        let pos = self.slots[id.slot as usize].pos as usize;
        self.remove_at(pos);
        Some(self.release(id.slot))
    }

    /// Time of the earliest pending event.
    #[inline]
    pub fn peek_time(&self) -> Option<SimTime> {
        self.heap.first().map(|e| e.time)
    }

    /// Moves the clock forward to `t` without an event (an open loop's caller advancing to a time when
    /// nothing is due). Moving it past a pending event, or backwards, is a caller bug.
    pub fn advance_clock(&mut self, t: SimTime) {
        assert!(self.peek_time().is_none_or(|e| e >= t), "the clock would pass a pending event");
        self.now = self.now.max(t);
    }

    /// Removes the earliest event and advances the clock to its time.
    pub fn pop(&mut self) -> Option<(SimTime, E)> {
        let top = *self.heap.first()?;
        let last = self.heap.pop().expect("not empty");
        if !self.heap.is_empty() {
            self.sift_down(0, last);
        }
        self.now = top.time;
        self.popped += 1;
        Some((top.time, self.release(top.slot())))
    }

    fn release(&mut self, slot: u32) -> E {
        let s = &mut self.slots[slot as usize];
        s.pos = FREE;
        s.gen = s.gen.wrapping_add(1);
        self.free.push(slot);
        s.event.take().expect("scheduled slot holds an event")
    }

    /// Removes the entry at `pos`: the last entry fills the hole, then moves down or up to its place.
    fn remove_at(&mut self, pos: usize) {
        let last = self.heap.pop().expect("not empty");
        if pos < self.heap.len() {
            self.sift_down(pos, last);
            self.sift_up(self.slots[last.slot() as usize].pos as usize);
        }
    }

    /// Moves the entry at `i` up to its place (the hole travels; each moved entry's slot learns its
    /// position once).
    fn sift_up(&mut self, mut i: usize) {
        let e = self.heap[i];
        while i > 0 {
            let parent = (i - 1) / 2;
            if !e.before(&self.heap[parent]) {
                break;
            }
            self.place(i, self.heap[parent]);
            i = parent;
        }
        self.place(i, e);
    }

    /// Puts `e` into the hole at `i` and moves it down to its place.
    fn sift_down(&mut self, mut i: usize, e: Entry) {
        let n = self.heap.len();
        loop {
            let l = 2 * i + 1;
            if l >= n {
                break;
            }
            let r = l + 1;
            let c = if r < n && self.heap[r].before(&self.heap[l]) { r } else { l };
            if !self.heap[c].before(&e) {
                break;
            }
            self.place(i, self.heap[c]);
            i = c;
        }
        self.place(i, e);
    }

    #[inline]
    fn place(&mut self, i: usize, e: Entry) {
        self.heap[i] = e;
        self.slots[e.slot() as usize].pos = i as u32;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn same_time_events_are_fifo() {
        let mut q = EventQueue::new();
        for i in 0..100 {
            q.schedule(SimTime::from_us(5), i);
        }
        q.schedule(SimTime::from_us(1), -1);
        assert_eq!(q.pop(), Some((SimTime::from_us(1), -1)));
        for i in 0..100 {
            assert_eq!(q.pop(), Some((SimTime::from_us(5), i)));
        }
        assert!(q.pop().is_none());
    }

    #[test]
    fn cancel_removes_without_ghosts() {
        let mut q = EventQueue::new();
        let a = q.schedule(SimTime::from_us(10), 'a');
        let b = q.schedule(SimTime::from_us(20), 'b');
        assert_eq!(q.cancel(a), Some('a'));
        assert_eq!(q.cancel(a), None, "double cancel is a no-op");
        assert_eq!(q.len(), 1);
        assert_eq!(q.pop(), Some((SimTime::from_us(20), 'b')));
        assert_eq!(q.cancel(b), None, "fired timers cannot be cancelled");
        // A reused slot does not make an old handle valid again.
        let c = q.schedule(SimTime::from_us(30), 'c');
        assert!(!q.is_pending(a));
        assert!(q.is_pending(c));
    }

    #[test]
    fn heap_does_not_grow_under_reschedule_churn() {
        let mut q = EventQueue::new();
        let mut id = q.schedule(SimTime::from_us(1), 0u64);
        for i in 0..100_000u64 {
            q.cancel(id);
            id = q.schedule(SimTime::from_us(2 + i), i);
        }
        assert_eq!(q.len(), 1);
        assert!(q.slots.len() <= 2);
    }

    #[test]
    #[should_panic(expected = "in the past")]
    fn scheduling_in_the_past_panics() {
        let mut q = EventQueue::new();
        q.schedule(SimTime::from_us(10), ());
        q.pop();
        q.schedule(SimTime::from_us(5), ());
    }

    proptest! {
        /// Whatever the mix of schedules and cancels, pops come out in (time, seq) order and exactly the
        /// uncancelled events come out.
        #[test]
        fn pops_in_total_order(ops in proptest::collection::vec((0u64..50, any::<bool>()), 1..300)) {
            let mut q = EventQueue::new();
            let mut ids = Vec::new();
            let mut expected = Vec::new();
            for (seq, (t, cancel_prev)) in ops.iter().enumerate() {
                let id = q.schedule(SimTime::from_ns(*t), seq);
                ids.push(id);
                expected.push((*t, seq));
                if *cancel_prev && seq > 0 {
                    let victim = seq / 2;
                    if q.cancel(ids[victim]).is_some() {
                        expected.retain(|&(_, s)| s != victim);
                    }
                }
            }
            expected.sort();
            let mut got = Vec::new();
            while let Some((t, s)) = q.pop() {
                got.push((t.as_ns(), s));
            }
            prop_assert_eq!(got, expected);
        }
    }
}
