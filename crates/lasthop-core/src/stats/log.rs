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

/// Columnar packet log (struct of arrays) so export to Arrow is a copy of plain vectors.
#[derive(Debug, Default)]
pub struct PacketLog {
    enabled: bool,
    pub flow: Vec<u32>,
    pub seq: Vec<u64>,
    pub size: Vec<u32>,
    pub stages: [Vec<u64>; N],
    pub drop_reason: Vec<u8>,
    /// 1 for packets travelling against the flow's direction (TCP ACKs, echo replies, feedback).
    pub reverse: Vec<u8>,
}

impl PacketLog {
    pub fn new(enabled: bool) -> Self {
        assert_eq!(Stage::ALL.len(), N);
        PacketLog { enabled, ..Default::default() }
    }
    pub fn enabled(&self) -> bool {
        self.enabled
    }
    pub fn len(&self) -> usize {
        self.flow.len()
    }
    pub fn is_empty(&self) -> bool {
        self.flow.is_empty()
    }

    /// Adds a row for a new packet; its `id` must equal the number of rows so far.
    pub fn open(&mut self, p: &Packet) {
        if !self.enabled {
            return;
        }
        debug_assert_eq!(p.id as usize, self.flow.len());
        self.flow.push(p.flow);
        self.seq.push(p.seq);
        self.size.push(p.size);
        for col in self.stages.iter_mut() {
            col.push(NO_TIME);
        }
        self.stages[Stage::Sent as usize][p.id as usize] = p.sent.as_ns();
        self.drop_reason.push(0);
        self.reverse.push(0);
    }

    /// Marks a packet as travelling against its flow's direction.
    pub fn mark_reverse(&mut self, id: u64) {
        if self.enabled {
            self.reverse[id as usize] = 1;
        }
    }

    #[inline]
    pub fn stamp(&mut self, id: u64, stage: Stage, t: SimTime) {
        if self.enabled {
            self.stages[stage as usize][id as usize] = t.as_ns();
        }
    }

    /// Stamps only if the stage is still empty (e.g. the first air attempt).
    #[inline]
    pub fn stamp_first(&mut self, id: u64, stage: Stage, t: SimTime) {
        if self.enabled {
            let c = &mut self.stages[stage as usize][id as usize];
            if *c == NO_TIME {
                *c = t.as_ns();
            }
        }
    }

    pub fn drop(&mut self, id: u64, reason: DropReason) {
        if self.enabled {
            self.drop_reason[id as usize] = reason as u8;
        }
    }
}
