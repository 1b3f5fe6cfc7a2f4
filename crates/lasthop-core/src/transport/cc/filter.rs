//! Windowed running minimum or maximum (BBR's bandwidth filter, Copa's RTT filters).
//!
//! Exact, with a monotone deque: a sample is dropped as soon as a newer one is at least as good, so
//! the front is always the best sample still in the window. Linux approximates the same filter with
//! three samples (`lib/win_minmax.c`); the exact one costs a little memory (one entry per sample that
//! could still become the best) and removes the approximation from the model.
//!
//! Keys are whatever the window is measured in (nanoseconds, or round-trip counts). As in
//! `win_minmax.c`, samples expire only when a new one arrives: a sample with key `k` is kept while
//! `now_key − k ≤ window`.

use std::collections::VecDeque;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Min,
    Max,
}

#[derive(Clone, Debug)]
pub(crate) struct WindowedFilter {
    kind: Kind,
    samples: VecDeque<(u64, u64)>,
}

impl WindowedFilter {
    pub fn max() -> Self {
        WindowedFilter {
            kind: Kind::Max,
            samples: VecDeque::new(),
        }
    }

    pub fn min() -> Self {
        WindowedFilter {
            kind: Kind::Min,
            samples: VecDeque::new(),
        }
    }

    /// Adds `value` observed at `key` and forgets samples older than `window`.
    pub fn update(&mut self, key: u64, value: u64, window: u64) {
        while let Some(&(_, v)) = self.samples.back() {
            let dominated = match self.kind {
                Kind::Max => v <= value,
                Kind::Min => v >= value,
            };
            if !dominated {
                break;
            }
            self.samples.pop_back();
        }
        self.samples.push_back((key, value));
        while let Some(&(k, _)) = self.samples.front() {
            if key.saturating_sub(k) <= window {
                break;
            }
            self.samples.pop_front();
        }
    }

    /// The best sample in the window, if any.
    pub fn get(&self) -> Option<u64> {
        self.samples.front().map(|&(_, v)| v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn max_filter_expires_old_samples_only_when_new_ones_arrive() {
        let mut f = WindowedFilter::max();
        f.update(0, 10, 10);
        f.update(1, 5, 10);
        f.update(2, 7, 10);
        assert_eq!(f.get(), Some(10));
        f.update(10, 1, 10);
        assert_eq!(
            f.get(),
            Some(10),
            "round 0 is still within 10 rounds of round 10"
        );
        f.update(11, 1, 10);
        assert_eq!(
            f.get(),
            Some(7),
            "round 0 expired; 7 (round 2) beats 5 (round 1)"
        );
        f.update(12, 2, 10);
        assert_eq!(f.get(), Some(7), "round 2 is 10 rounds old: still in");
        f.update(13, 1, 10);
        assert_eq!(
            f.get(),
            Some(2),
            "round 2 expired; 2 (round 12) beats 1 (round 13)"
        );
    }

    #[test]
    fn min_filter_keeps_the_newest_of_equal_samples() {
        let mut f = WindowedFilter::min();
        f.update(0, 40, 100);
        f.update(50, 40, 100);
        f.update(120, 60, 100);
        assert_eq!(f.get(), Some(40), "the 40 of key 50 is still in the window");
        f.update(151, 70, 100);
        assert_eq!(f.get(), Some(60));
    }
}
