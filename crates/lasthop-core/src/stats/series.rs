//! Per-sample time series of a run, for plots and for metrics defined over time windows (Zhuge's
//! degradation durations): every RTT sample and every video frame's fate.

use crate::time::SimTime;

/// RTT samples, columnar: `(flow, sample time, rtt)` in ns.
#[derive(Debug, Default, Clone)]
pub struct RttSeries {
    pub flow: Vec<u32>,
    pub t: Vec<u64>,
    pub rtt: Vec<u64>,
}

impl RttSeries {
    pub fn push(&mut self, flow: u32, t: SimTime, rtt_ns: u64) {
        self.flow.push(flow);
        self.t.push(t.as_ns());
        self.rtt.push(rtt_ns);
    }
}

/// Video frames, columnar: one row per frame that was decoded or given up, in the order they ended.
#[derive(Debug, Default, Clone)]
pub struct FrameSeries {
    pub flow: Vec<u32>,
    pub frame: Vec<u64>,
    /// Capture time at the sender, ns.
    pub capture: Vec<u64>,
    /// Decode (or discard) time at the receiver, ns.
    pub done: Vec<u64>,
    /// 1 when the frame was discarded instead of decoded.
    pub dropped: Vec<u8>,
}

impl FrameSeries {
    pub fn push(&mut self, flow: u32, frame: u64, capture: SimTime, done: SimTime, dropped: bool) {
        self.flow.push(flow);
        self.frame.push(frame);
        self.capture.push(capture.as_ns());
        self.done.push(done.as_ns());
        self.dropped.push(dropped as u8);
    }

    pub fn len(&self) -> usize {
        self.flow.len()
    }

    pub fn is_empty(&self) -> bool {
        self.flow.is_empty()
    }

    /// Appends `other`'s rows after these.
    pub fn append(&mut self, mut other: FrameSeries) {
        self.flow.append(&mut other.flow);
        self.frame.append(&mut other.frame);
        self.capture.append(&mut other.capture);
        self.done.append(&mut other.done);
        self.dropped.append(&mut other.dropped);
    }
}
