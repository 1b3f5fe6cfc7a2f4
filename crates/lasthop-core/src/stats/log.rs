//! The per-packet log: one row per packet, one timestamp column per layer crossed.
//!
//! Columns are fixed and named after the layers of the Linux AP transmit path, so a latency breakdown
//! (wired queue, qdisc, mac80211 txq, driver, hardware queue, air) falls out of every run. A layer a
//! packet did not cross stays empty ([`NO_TIME`], written as null).

use crate::packet::Packet;
use crate::time::SimTime;

/// Marker for "this packet did not reach this stage".
pub const NO_TIME: u64 = u64::MAX;

macro_rules! stages {
    ($($(#[$m:meta])* $v:ident = $col:literal),* $(,)?) => {
        /// A point in a packet's life where it is timestamped.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
        #[repr(u8)]
        pub enum Stage { $($(#[$m])* $v),* }
        impl Stage {
            pub const ALL: &'static [Stage] = &[$(Stage::$v),*];
            /// The column name in `packets.parquet` (nanoseconds).
            pub fn column(self) -> &'static str {
                match self { $(Stage::$v => $col),* }
            }
        }
    };
}

stages! {
    /// The application handed the packet to the network.
    Sent = "t_sent_ns",
    /// Entered the queue of a wired link.
    WiredEnq = "t_wired_enq_ns",
    /// Started serialization on the wired link.
    WiredTx = "t_wired_tx_ns",
    /// Entered the AP's (or station's) network-layer queue (qdisc, or the stand-in last hop's queue).
    QdiscEnq = "t_qdisc_enq_ns",
    /// Left that queue.
    QdiscDeq = "t_qdisc_deq_ns",
    /// Entered a mac80211 txq.
    TxqEnq = "t_txq_enq_ns",
    /// Left the txq towards the driver.
    TxqDeq = "t_txq_deq_ns",
    /// Handed to the hardware queue.
    HwEnq = "t_hw_enq_ns",
    /// Reached the head of the hardware queue (start of contention).
    HwHead = "t_hw_head_ns",
    /// First transmission attempt began on the air (or on the stand-in last hop).
    AirStart = "t_air_start_ns",
    /// The attempt that delivered it ended.
    AirEnd = "t_air_end_ns",
    /// Delivered to the destination application.
    Delivered = "t_delivered_ns",
}

/// Why a packet was dropped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum DropReason {
    None = 0,
    /// Tail drop: the queue was full.
    QueueFull = 1,
    /// An AQM (CoDel, PIE) dropped it.
    Aqm = 2,
    /// The MAC gave up after its retry limit.
    RetryLimit = 3,
    /// Exceeded a latency or lifetime limit.
    Deadline = 4,
    /// Taken out at the AP by a mechanism that answers in its place (the client's TWCC under Zhuge,
    /// ACKs FastAck already sent).
    Consumed = 5,
}

impl DropReason {
    /// The reason with code `code` (its `repr(u8)`, the packet log's `drop_reason`); 0 and unknown
    /// codes are `None`.
    pub fn from_code(code: u8) -> DropReason {
        match code {
            1 => DropReason::QueueFull,
            2 => DropReason::Aqm,
            3 => DropReason::RetryLimit,
            4 => DropReason::Deadline,
            5 => DropReason::Consumed,
            _ => DropReason::None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            DropReason::None => "",
            DropReason::QueueFull => "queue_full",
            DropReason::Consumed => "consumed",
            DropReason::Aqm => "aqm",
            DropReason::RetryLimit => "retry_limit",
            DropReason::Deadline => "deadline",
        }
    }
}

const N: usize = 12;

/// Which packets get a row, when not all do: per flow index whether it is logged, and one packet in
/// `every` of each logged flow (its first, then every `every`-th).
#[derive(Debug, Default, Clone)]
pub struct LogSelect {
    pub flows: Option<Vec<bool>>,
    pub every: u64,
    counts: Vec<u64>,
}

impl LogSelect {
    pub fn new(flows: Option<Vec<bool>>, every: u64) -> Self {
        LogSelect { flows, every: every.max(1), counts: Vec::new() }
    }
    fn keep(&mut self, flow: u32) -> bool {
        let f = flow as usize;
        if self.flows.as_ref().is_some_and(|k| !k.get(f).copied().unwrap_or(false)) {
            return false;
        }
        if self.counts.len() <= f {
            self.counts.resize(f + 1, 0);
        }
        let n = self.counts[f];
        self.counts[f] += 1;
        n % self.every == 0
    }
}

/// Columnar packet log (struct of arrays) so export to Arrow is a copy of plain vectors.
///
/// A long run takes its finished rows out as it goes ([`PacketLog::take_finished`], in packet-id
/// order): the log then holds the rows from the oldest packet still in flight on, and memory stays
/// flat however long the run.
#[derive(Debug, Default, Clone)]
pub struct PacketLog {
    enabled: bool,
    /// When only some packets get a row: the selection, and each packet id's row (`NO_ROW`: none),
    /// for ids from `base_id` on; rows are numbered from the log's start (`base_row` taken out).
    select: Option<LogSelect>,
    rows: Vec<u32>,
    /// Packet ids below this and rows below this have been taken out.
    base_id: u64,
    base_row: u64,
    /// Per held row: its packet was delivered or dropped (no layer stamps it again).
    finished: Vec<bool>,
    /// Held rows known finished from the first one on (a cursor, so each row is checked once).
    finished_prefix: usize,
    /// With a selection: the packet id of each row (without one, row = id).
    pub id: Vec<u64>,
    pub flow: Vec<u32>,
    pub seq: Vec<u64>,
    pub size: Vec<u32>,
    pub stages: [Vec<u64>; N],
    pub drop_reason: Vec<u8>,
    /// 1 for packets travelling against the flow's direction (TCP ACKs, echo replies, feedback).
    pub reverse: Vec<u8>,
    /// A chunk taken out and handed back, whose buffers the next [`PacketLog::take_finished`] reuses.
    spare: Option<Box<PacketLog>>,
}

const NO_ROW: u32 = u32::MAX;

/// The first `k` values of `v`, taken out: the chunk keeps `v`'s buffer and `v` gets another one of the
/// same capacity holding only the rest (the packets still in flight, a few per cent of a chunk), so a
/// chunk's rows are not copied (`drain(..k).collect()` copied them and shifted the rest). The other
/// buffer is `spare`, a chunk handed back ([`PacketLog::recycle`]), when there is one: a fresh buffer's
/// pages are faulted in and zeroed by the kernel as rows are written, which cost a streamed run 10 % of
/// its engine time.
fn take_front<T: Copy>(v: &mut Vec<T>, k: usize, spare: Option<&mut Vec<T>>) -> Vec<T> {
    let mut rest = spare.map(std::mem::take).unwrap_or_default();
    rest.clear();
    rest.reserve(v.capacity());
    rest.extend_from_slice(&v[k..]);
    let mut head = std::mem::replace(v, rest);
    head.truncate(k);
    head
}

impl PacketLog {
    pub fn new(enabled: bool) -> Self {
        assert_eq!(Stage::ALL.len(), N);
        PacketLog { enabled, ..Default::default() }
    }
    /// A log of the packets `select` picks.
    pub fn selecting(select: LogSelect) -> Self {
        PacketLog { select: Some(select), ..PacketLog::new(true) }
    }
    pub fn enabled(&self) -> bool {
        self.enabled
    }
    /// Whether only some packets have rows (then [`PacketLog::id`] names them).
    pub fn is_selective(&self) -> bool {
        self.select.is_some()
    }
    pub fn len(&self) -> usize {
        self.flow.len()
    }
    pub fn is_empty(&self) -> bool {
        self.flow.is_empty()
    }

    /// Packet `id`'s row among the held ones, if it has one (none once taken out).
    #[inline]
    fn row(&self, id: u64) -> Option<usize> {
        if !self.enabled {
            return None;
        }
        let i = id.checked_sub(self.base_id)? as usize;
        if self.select.is_none() {
            return (i < self.flow.len()).then_some(i);
        }
        match self.rows.get(i) {
            Some(&r) if r != NO_ROW => Some((r as u64 - self.base_row) as usize),
            _ => None,
        }
    }

    /// The packet id of each held row.
    pub fn ids(&self) -> Vec<u64> {
        match self.select {
            Some(_) => self.id.clone(),
            None => (self.base_id..self.base_id + self.flow.len() as u64).collect(),
        }
    }

    /// Whether rows were taken out, so row numbers are not packet ids.
    pub fn is_offset(&self) -> bool {
        self.base_id > 0
    }

    /// Held rows, from the first, whose packets are finished (delivered or dropped).
    pub fn finished_rows(&mut self) -> usize {
        while self.finished.get(self.finished_prefix).copied().unwrap_or(false) {
            self.finished_prefix += 1;
        }
        self.finished_prefix
    }

    /// Takes out the finished rows from the first held one up to the first packet still in flight, as a
    /// log of their own ([`PacketLog::ids`] names their packets), if there are at least `min_rows`.
    pub fn take_finished(&mut self, min_rows: usize) -> Option<PacketLog> {
        let k = self.finished_rows();
        if k == 0 || k < min_rows {
            return None;
        }
        let mut out = PacketLog::new(true);
        out.base_id = self.base_id;
        if self.select.is_some() {
            // Rows named by their ids (the chunk opens no packets: the selection itself is not needed).
            out.select = Some(LogSelect::default());
            out.id = self.id[..k].to_vec();
            out.base_id = out.id[0];
        }
        let first_unfinished_id = match self.select {
            Some(_) => self.id.get(k).copied().unwrap_or(self.base_id + self.rows.len() as u64),
            None => self.base_id + k as u64,
        };
        let mut spare = self.spare.take();
        let mut sp = spare.as_deref_mut();
        out.flow = take_front(&mut self.flow, k, sp.as_mut().map(|s| &mut s.flow));
        out.seq = take_front(&mut self.seq, k, sp.as_mut().map(|s| &mut s.seq));
        out.size = take_front(&mut self.size, k, sp.as_mut().map(|s| &mut s.size));
        for (i, (o, c)) in out.stages.iter_mut().zip(self.stages.iter_mut()).enumerate() {
            *o = take_front(c, k, sp.as_mut().map(|s| &mut s.stages[i]));
        }
        out.drop_reason = take_front(&mut self.drop_reason, k, sp.as_mut().map(|s| &mut s.drop_reason));
        out.reverse = take_front(&mut self.reverse, k, sp.as_mut().map(|s| &mut s.reverse));
        self.finished.drain(..k);
        self.finished_prefix = 0;
        if self.select.is_some() {
            self.id.drain(..k);
            self.rows.drain(..(first_unfinished_id - self.base_id) as usize);
        }
        self.base_id = first_unfinished_id;
        self.base_row += k as u64;
        Some(out)
    }

    /// Hands back a chunk [`PacketLog::take_finished`] gave once its rows have been read (copied out),
    /// so the next chunk reuses its buffers rather than fresh memory. Rows are never read from it again.
    pub fn recycle(&mut self, chunk: PacketLog) {
        if self.enabled {
            self.spare = Some(Box::new(chunk));
        }
    }

    /// Reserves room for `n` more rows, so that growing the log never copies it while a real-time run
    /// goes (pages are only touched as rows are written).
    pub fn reserve(&mut self, n: usize) {
        if !self.enabled {
            return;
        }
        self.flow.reserve(n);
        self.seq.reserve(n);
        self.size.reserve(n);
        for c in self.stages.iter_mut() {
            c.reserve(n);
        }
        self.drop_reason.reserve(n);
        self.reverse.reserve(n);
        self.finished.reserve(n);
        if self.select.is_some() {
            self.rows.reserve(n);
            self.id.reserve(n);
        }
    }

    /// Adds a row for a new packet (ids come in order, from 0), if it is logged.
    pub fn open(&mut self, p: &Packet) {
        if !self.enabled {
            return;
        }
        if let Some(sel) = &mut self.select {
            debug_assert_eq!(p.id, self.base_id + self.rows.len() as u64);
            if !sel.keep(p.flow) {
                self.rows.push(NO_ROW);
                return;
            }
            self.rows.push((self.base_row + self.flow.len() as u64) as u32);
            self.id.push(p.id);
        } else {
            debug_assert_eq!(p.id, self.base_id + self.flow.len() as u64);
        }
        let row = self.flow.len();
        self.flow.push(p.flow);
        self.seq.push(p.seq);
        self.size.push(p.size);
        for col in self.stages.iter_mut() {
            col.push(NO_TIME);
        }
        self.stages[Stage::Sent as usize][row] = p.sent.as_ns();
        self.drop_reason.push(0);
        self.reverse.push(0);
        self.finished.push(false);
    }

    /// Marks a packet as travelling against its flow's direction.
    pub fn mark_reverse(&mut self, id: u64) {
        if let Some(r) = self.row(id) {
            self.reverse[r] = 1;
        }
    }

    #[inline]
    pub fn stamp(&mut self, id: u64, stage: Stage, t: SimTime) {
        if let Some(r) = self.row(id) {
            self.stages[stage as usize][r] = t.as_ns();
            if stage == Stage::Delivered {
                self.finished[r] = true;
            }
        }
    }

    /// Stamps only if the stage is still empty (e.g. the first air attempt).
    #[inline]
    pub fn stamp_first(&mut self, id: u64, stage: Stage, t: SimTime) {
        if let Some(r) = self.row(id) {
            let c = &mut self.stages[stage as usize][r];
            if *c == NO_TIME {
                *c = t.as_ns();
            }
        }
    }

    pub fn drop(&mut self, id: u64, reason: DropReason) {
        if let Some(r) = self.row(id) {
            self.drop_reason[r] = reason as u8;
            self.finished[r] = true;
        }
    }
}
