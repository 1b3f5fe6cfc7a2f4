//! A map keyed by sequence numbers that arrive mostly in increasing order and leave mostly from the
//! oldest end: send histories (GCC's transport-wide history, the RTX history, a call's send times),
//! frames in flight, TWCC's arrivals (the call's own pacer numbers them). It behaves as a
//! `BTreeMap<u64, V>` (key order for `first` and `iter`) but is a ring of slots from the oldest key
//! kept, so the common operations are O(1) instead of a tree walk (profiled: the histories' tree
//! operations were a few per cent of a busy run's engine time).
//!
//! The keys held at one time must lie within [`SeqMap::MAX_SPAN`] of each other (a model's own
//! counters over a time window); a wider span is a model bug and panics.

use std::collections::VecDeque;

#[derive(Clone, Debug)]
pub struct SeqMap<V> {
    /// The key of `slots[0]`.
    base: u64,
    /// One slot per key from `base`; the first and the last are occupied whenever any is.
    slots: VecDeque<Option<V>>,
    len: usize,
}

impl<V> Default for SeqMap<V> {
    fn default() -> Self {
        Self::new()
    }
}

impl<V> SeqMap<V> {
    /// The widest range of keys held at once.
    pub const MAX_SPAN: u64 = 1 << 24;

    pub fn new() -> Self {
        SeqMap { base: 0, slots: VecDeque::new(), len: 0 }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Inserts `v` at `k`; returns the value it replaces.
    pub fn insert(&mut self, k: u64, v: V) -> Option<V> {
        if self.slots.is_empty() {
            self.base = k;
            self.slots.push_back(Some(v));
            self.len = 1;
            return None;
        }
        if k < self.base {
            let gap = self.base - k;
            self.check_span(gap.checked_add(self.slots.len() as u64));
            for _ in 1..gap {
                self.slots.push_front(None);
            }
            self.slots.push_front(Some(v));
            self.base = k;
            self.len += 1;
            return None;
        }
        let i = k - self.base;
        if i >= self.slots.len() as u64 {
            self.check_span(i.checked_add(1));
            self.slots.resize_with(i as usize, || None);
            self.slots.push_back(Some(v));
            self.len += 1;
            return None;
        }
        let old = self.slots[i as usize].replace(v);
        if old.is_none() {
            self.len += 1;
        }
        old
    }

    fn check_span(&self, span: Option<u64>) {
        assert!(span.is_some_and(|s| s <= Self::MAX_SPAN), "sequence numbers {span:?} apart held at once (at most {})", Self::MAX_SPAN);
    }

    fn index(&self, k: u64) -> Option<usize> {
        let i = k.checked_sub(self.base)?;
        (i < self.slots.len() as u64).then_some(i as usize)
    }

    pub fn get(&self, k: u64) -> Option<&V> {
        self.slots[self.index(k)?].as_ref()
    }

    pub fn get_mut(&mut self, k: u64) -> Option<&mut V> {
        let i = self.index(k)?;
        self.slots[i].as_mut()
    }

    pub fn contains_key(&self, k: u64) -> bool {
        self.get(k).is_some()
    }

    /// Removes `k`'s value.
    pub fn remove(&mut self, k: u64) -> Option<V> {
        let i = self.index(k)?;
        let v = self.slots[i].take()?;
        self.len -= 1;
        self.trim();
        Some(v)
    }

    /// The smallest key and its value.
    pub fn first(&self) -> Option<(u64, &V)> {
        self.slots.front().map(|s| (self.base, s.as_ref().expect("the first slot is occupied")))
    }

    /// Removes the smallest key.
    pub fn pop_first(&mut self) -> Option<(u64, V)> {
        let v = self.slots.pop_front()?.expect("the first slot is occupied");
        let k = self.base;
        self.base += 1;
        self.len -= 1;
        self.trim();
        Some((k, v))
    }

    /// The largest key.
    pub fn last_key(&self) -> Option<u64> {
        (!self.slots.is_empty()).then(|| self.base + self.slots.len() as u64 - 1)
    }

    /// Entries in key order.
    pub fn iter(&self) -> impl Iterator<Item = (u64, &V)> {
        let base = self.base;
        self.slots.iter().enumerate().filter_map(move |(i, s)| s.as_ref().map(|v| (base + i as u64, v)))
    }

    /// Entries from key `start` on, in key order.
    pub fn range_from(&self, start: u64) -> impl Iterator<Item = (u64, &V)> {
        let base = self.base;
        let lo = start.saturating_sub(base).min(self.slots.len() as u64) as usize;
        self.slots.range(lo..).enumerate().filter_map(move |(i, s)| s.as_ref().map(|v| (base + (lo + i) as u64, v)))
    }

    /// Keeps the entries for which `f` is true.
    pub fn retain(&mut self, mut f: impl FnMut(u64, &V) -> bool) {
        let base = self.base;
        for (i, s) in self.slots.iter_mut().enumerate() {
            if s.as_ref().is_some_and(|v| !f(base + i as u64, v)) {
                *s = None;
                self.len -= 1;
            }
        }
        self.trim();
    }

    /// Keeps the first and last slots occupied.
    fn trim(&mut self) {
        while matches!(self.slots.front(), Some(None)) {
            self.slots.pop_front();
            self.base += 1;
        }
        while matches!(self.slots.back(), Some(None)) {
            self.slots.pop_back();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    #[derive(Clone, Debug)]
    enum Op {
        Insert(u64),
        Remove(u64),
        PopFirst,
        Get(u64),
        /// Keep the values at or above this.
        Retain(usize),
        RangeFrom(u64),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            4 => (0u64..300).prop_map(Op::Insert),
            2 => (0u64..300).prop_map(Op::Remove),
            1 => Just(Op::PopFirst),
            2 => (0u64..300).prop_map(Op::Get),
            1 => (0usize..400).prop_map(Op::Retain),
            1 => (0u64..320).prop_map(Op::RangeFrom),
        ]
    }

    proptest! {
        /// Any mix of operations gives what a BTreeMap gives, and iterates in the same order.
        #[test]
        fn behaves_as_a_btreemap(ops in proptest::collection::vec(op(), 1..400)) {
            let mut m = SeqMap::new();
            let mut b = BTreeMap::new();
            for (n, o) in ops.into_iter().enumerate() {
                match o {
                    Op::Insert(k) => prop_assert_eq!(m.insert(k, n), b.insert(k, n)),
                    Op::Remove(k) => prop_assert_eq!(m.remove(k), b.remove(&k)),
                    Op::PopFirst => prop_assert_eq!(m.pop_first(), b.pop_first()),
                    Op::Retain(min) => {
                        m.retain(|_, &v| v >= min);
                        b.retain(|_, v| *v >= min);
                    }
                    Op::RangeFrom(k) => prop_assert!(m.range_from(k).eq(b.range(k..).map(|(k, v)| (*k, v)))),
                    Op::Get(k) => {
                        prop_assert_eq!(m.get(k), b.get(&k));
                        if let Some(v) = m.get_mut(k) {
                            *v += 1;
                            *b.get_mut(&k).unwrap() += 1;
                        }
                    }
                }
                prop_assert_eq!(m.len(), b.len());
                prop_assert_eq!(m.first(), b.first_key_value().map(|(k, v)| (*k, v)));
                prop_assert_eq!(m.last_key(), b.last_key_value().map(|(k, _)| *k));
            }
            prop_assert!(m.iter().eq(b.iter().map(|(k, v)| (*k, v))));
        }
    }

    #[test]
    #[should_panic(expected = "apart held at once")]
    fn a_span_beyond_the_limit_is_a_model_bug() {
        let mut m = SeqMap::new();
        m.insert(0, ());
        m.insert(SeqMap::<()>::MAX_SPAN, ());
    }
}
