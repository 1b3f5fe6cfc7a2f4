//! An indexed binary min-heap keyed by `(SimTime, seq)`, with the earliest event kept beside it when it
//! was scheduled ahead of every other: most events of a packet's path (its arrival over a wire, the next
//! step of an exchange) are due before anything pending, and then neither climb the heap nor sift it
//! when they fire.

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
    /// An entry before every entry of `heap` (its slot's position is [`FRONT`]); it fires first.
    front: Option<Entry>,
    next_seq: u64,
    now: SimTime,
    popped: u64,
}

const FREE: u32 = u32::MAX;
/// The position of the slot whose entry is [`EventQueue::front`].
const FRONT: u32 = u32::MAX - 1;
/// The sequence-number range of [`EventQueue::schedule_after_instant`].
const LATE: u64 = 1 << 63;

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E> EventQueue<E> {
    pub fn new() -> Self {
        EventQueue { slots: Vec::new(), free: Vec::new(), heap: Vec::new(), front: None, next_seq: 0, now: SimTime::ZERO, popped: 0 }
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
        self.heap.len() + self.front.is_some() as usize
    }

    pub fn is_empty(&self) -> bool {
        self.front.is_none() && self.heap.is_empty()
    }

    /// Schedules `event` at `time`. Scheduling in the past is a model bug.
    pub fn schedule(&mut self, time: SimTime, event: E) -> TimerId {
        self.schedule_keyed(time, event, 0)
    }

    /// Schedules `event` at `time` with `late` ([`LATE`] or 0) in its key.
    fn schedule_keyed(&mut self, time: SimTime, event: E, late: u64) -> TimerId {
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
        let mut e = Entry::new(time, seq, slot);
        e.key |= late;
        self.insert(e);
        TimerId { slot, gen: self.slots[slot as usize].gen }
    }

    /// Puts `e` in front when it comes before every pending entry (the one in front, if any, then goes
    /// into the heap), else into the heap.
    fn insert(&mut self, e: Entry) {
        let first = match &self.front {
            Some(f) => e.before(f),
            None => self.heap.first().is_none_or(|h| e.before(h)),
        };
        if first {
            if let Some(f) = self.front.replace(e) {
                self.push_heap(f);
            }
            self.slots[e.slot() as usize].pos = FRONT;
        } else {
            self.push_heap(e);
        }
    }

    fn push_heap(&mut self, e: Entry) {
        self.heap.push(e);
        self.sift_up(self.heap.len() - 1);
    }

    /// Schedules `event` at `time` after every other event of that instant, whenever scheduled (its
    /// sequence number is in a range above all of theirs); such events keep their order among
    /// themselves. For a run-time command, which must act once the instant's events have run, as a
    /// command given to a stepped run does.
    pub fn schedule_after_instant(&mut self, time: SimTime, event: E) -> TimerId {
        self.schedule_keyed(time, event, LATE)
    }

    /// Whether `id` is still pending.
    pub fn is_pending(&self, id: TimerId) -> bool {
        self.slots.get(id.slot as usize).is_some_and(|s| s.gen == id.gen && s.pos != FREE)
    }

    /// The time `id` will fire, if still pending.
    pub fn deadline(&self, id: TimerId) -> Option<SimTime> {
        self.is_pending(id).then(|| self.entry(self.slots[id.slot as usize].pos).time)
    }

    fn entry(&self, pos: u32) -> Entry {
        if pos == FRONT {
            self.front.expect("an entry in front")
        } else {
            self.heap[pos as usize]
        }
    }

    /// Cancels a pending event and returns it; `None` if it already fired or was cancelled.
    pub fn cancel(&mut self, id: TimerId) -> Option<E> {
        if !self.is_pending(id) {
            return None;
        }
        match self.slots[id.slot as usize].pos {
            FRONT => self.front = None,
            pos => self.remove_at(pos as usize),
        }
        Some(self.release(id.slot))
    }

    /// Time of the earliest pending event.
    #[inline]
    pub fn peek_time(&self) -> Option<SimTime> {
        self.front.as_ref().or(self.heap.first()).map(|e| e.time)
    }

    /// Moves the clock forward to `t` without an event (an open loop's caller advancing to a time when
    /// nothing is due). Moving it past a pending event, or backwards, is a caller bug.
    pub fn advance_clock(&mut self, t: SimTime) {
        assert!(self.peek_time().is_none_or(|e| e >= t), "the clock would pass a pending event");
        self.now = self.now.max(t);
    }

    /// Removes the earliest event and advances the clock to its time.
    pub fn pop(&mut self) -> Option<(SimTime, E)> {
        let top = match self.front.take() {
            Some(f) => f,
            None => {
                let top = *self.heap.first()?;
                let last = self.heap.pop().expect("not empty");
                if !self.heap.is_empty() {
                    self.sift_down(0, last);
                }
                top
            }
        };
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

        /// Schedules (some after their instant), cancels and pops interleaved, with events due now,
        /// soon and later (so that the entry kept in front changes hands every way): the queue agrees
        /// with a sorted list at every step, in order, length, next time and deadlines.
        #[test]
        fn interleaved_operations_match_a_sorted_list(ops in proptest::collection::vec((0u8..4, 0u64..6, any::<usize>()), 1..400)) {
            let mut q = EventQueue::new();
            // (time, late, seq, id) of each pending event.
            let mut model: Vec<(u64, bool, u64, TimerId)> = Vec::new();
            for (seq, (op, dt, pick)) in ops.into_iter().enumerate() {
                let t = q.now().as_ns() + dt;
                match op {
                    0 | 1 => {
                        let late = op == 1;
                        let id = if late { q.schedule_after_instant(SimTime::from_ns(t), seq as u64) } else { q.schedule(SimTime::from_ns(t), seq as u64) };
                        model.push((t, late, seq as u64, id));
                    }
                    2 if !model.is_empty() => {
                        let (_, _, s, id) = model.remove(pick % model.len());
                        prop_assert_eq!(q.cancel(id), Some(s));
                        prop_assert_eq!(q.cancel(id), None);
                    }
                    _ => {
                        model.sort_by_key(|m| (m.0, m.1, m.2));
                        let want = (!model.is_empty()).then(|| model.remove(0));
                        prop_assert_eq!(q.pop(), want.map(|(t, _, s, _)| (SimTime::from_ns(t), s)));
                    }
                }
                model.sort_by_key(|m| (m.0, m.1, m.2));
                prop_assert_eq!(q.len(), model.len());
                prop_assert_eq!(q.peek_time(), model.first().map(|m| SimTime::from_ns(m.0)));
                for &(t, _, _, id) in &model {
                    prop_assert_eq!(q.deadline(id), Some(SimTime::from_ns(t)));
                }
            }
        }
    }
}
