//! HyStart++ (RFC 9406): leave slow start when the per-round minimum RTT rises, through a period of
//! Conservative Slow Start (CSS) that returns to slow start if the rise was spurious.
//!
//! Constants from RFC 9406 §4.3: MIN_RTT_THRESH 4 ms, MAX_RTT_THRESH 16 ms, MIN_RTT_DIVISOR 8,
//! N_RTT_SAMPLE 8, CSS_GROWTH_DIVISOR 4, CSS_ROUNDS 5. The per-ACK growth cap L (8 segments unless the
//! sender paces) is applied by the caller.
//!
//! Choices: HyStart++ runs only in the initial slow start (RFC 9406 §4.2 SHOULD); a loss or a timeout
//! ends it for the connection. CSS rounds are counted at round boundaries after entering CSS, so the
//! partial round in which CSS began does not count.

use crate::time::SimDuration;

const MIN_RTT_THRESH: SimDuration = SimDuration::from_ms(4);
const MAX_RTT_THRESH: SimDuration = SimDuration::from_ms(16);
const MIN_RTT_DIVISOR: u64 = 8;
const N_RTT_SAMPLE: u32 = 8;
pub(crate) const CSS_GROWTH_DIVISOR: u64 = 4;
const CSS_ROUNDS: u32 = 5;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    SlowStart,
    Css { baseline: SimDuration, rounds: u32 },
    Done,
}

/// What slow start should do with this ACK.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SlowStartStep {
    /// Grow by the acknowledged bytes divided by this.
    Grow { divisor: u64 },
    /// CSS is over: set ssthresh to cwnd and continue in congestion avoidance.
    EnterCongestionAvoidance,
}

#[derive(Clone, Debug)]
pub(crate) struct HyStart {
    phase: Phase,
    last_round_min: Option<SimDuration>,
    cur_round_min: Option<SimDuration>,
    samples: u32,
    /// Times CSS was entered (for stats).
    pub css_entries: u64,
}

impl HyStart {
    pub fn new(enabled: bool) -> Self {
        HyStart {
            phase: if enabled {
                Phase::SlowStart
            } else {
                Phase::Done
            },
            last_round_min: None,
            cur_round_min: None,
            samples: 0,
            css_entries: 0,
        }
    }

    /// Still shaping the initial slow start.
    pub fn active(&self) -> bool {
        self.phase != Phase::Done
    }

    pub fn in_css(&self) -> bool {
        matches!(self.phase, Phase::Css { .. })
    }

    /// A congestion event or timeout: standard slow start from now on.
    pub fn disable(&mut self) {
        self.phase = Phase::Done;
    }

    /// One ACK during slow start; `round_start` from the caller's round counter.
    pub fn on_ack(&mut self, round_start: bool, rtt: Option<SimDuration>) -> SlowStartStep {
        if self.phase == Phase::Done {
            return SlowStartStep::Grow { divisor: 1 };
        }
        if round_start {
            self.last_round_min = self.cur_round_min.take();
            self.samples = 0;
            if let Phase::Css { baseline, rounds } = self.phase {
                if rounds + 1 >= CSS_ROUNDS {
                    self.phase = Phase::Done;
                    return SlowStartStep::EnterCongestionAvoidance;
                }
                self.phase = Phase::Css {
                    baseline,
                    rounds: rounds + 1,
                };
            }
        }
        if let Some(r) = rtt {
            self.cur_round_min = Some(self.cur_round_min.map_or(r, |m| m.min(r)));
            self.samples += 1;
        }
        self.check_phase();
        let divisor = if self.in_css() { CSS_GROWTH_DIVISOR } else { 1 };
        SlowStartStep::Grow { divisor }
    }

    fn check_phase(&mut self) {
        if self.samples < N_RTT_SAMPLE {
            return;
        }
        let Some(cur) = self.cur_round_min else {
            return;
        };
        match self.phase {
            Phase::SlowStart => {
                let Some(last) = self.last_round_min else {
                    return;
                };
                let thresh = (last / MIN_RTT_DIVISOR).clamp(MIN_RTT_THRESH, MAX_RTT_THRESH);
                if cur >= last + thresh {
                    self.phase = Phase::Css {
                        baseline: cur,
                        rounds: 0,
                    };
                    self.css_entries += 1;
                }
            }
            Phase::Css { baseline, .. } if cur < baseline => self.phase = Phase::SlowStart,
            _ => {}
        }
    }
}
