//! XOR parity FEC: 1-D row parity (the 1/8 ratio of Law's experiments) and RFC 8627 (FlexFEC) 2-D
//! row/column parity (baselines.md §5.3).
//!
//! A repair packet is the XOR of the media packets it protects, so it rebuilds one missing packet of
//! its set when all the others arrived. Which packets a repair covers is the *line*:
//!
//! ```text
//! row scheme, L = 8 (ratio 1/8):        2-D scheme, L = 4 columns × D = 3 rows (RFC 8627 §1.1.4):
//!   m0 m1 m2 m3 m4 m5 m6 m7 | R0          m0  m1  m2  m3 | R0
//!   m8 m9 …                 | R1          m4  m5  m6  m7 | R1
//!                                         m8  m9  m10 m11| R2
//!                                         C0  C1  C2  C3
//! ```
//!
//! Rows are L consecutive media packets (RFC 8627 §1.1.2, "1-D non-interleaved"); columns are the packets
//! `i, i+L, …, i+(D−1)L` of an L×D block (§1.1.3); the 2-D scheme sends both (§1.1.4), so a burst of up to
//! L consecutive losses is rebuilt by the columns, and a pattern the rows cannot fix may be fixed after
//! the columns have rebuilt some packets (and vice versa): [`recover`] iterates until nothing changes.
//! Repair packets protect media only; a lost repair packet is never rebuilt.
//!
//! Choices where the sources are silent or that we simplify:
//! * **Per-frame blocks.** Lines never cross a frame boundary: a frame's media packets are split into
//!   rows of L (the last shorter) or blocks of L×D (the last partial, with shorter rows and columns), and
//!   the frame's repair packets are queued right after its media packets. A frame therefore never waits
//!   for the next one to be protected (baselines.md §5.3 MF; libwebrtc's FlexFEC also generates per
//!   frame).
//! * **Sizes.** A repair packet's payload is the FlexFEC header (12 bytes, RFC 8627 §4.2.2.1 flexible
//!   mask with one mask word; the fixed L/D header of §4.2.2.2 is also 12) plus the largest protected
//!   payload; its headers are those of any RTP packet.
//! * **Headers.** The XOR also restores the protected packets' RTP headers; we carry what the receiver
//!   needs to rebuild them ([`FecFrameRef`]) in the repair header instead of computing bits.
//! * No loss-adaptive protection (libwebrtc's FEC tables): the scheme is fixed per flow.

use super::rtp::{MediaHeader, Payload, RtpPacket};
use super::{check, RtcParamError};
use crate::time::SimTime;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// FlexFEC repair header, bytes (RFC 8627 §4.2.2.1, one packet-mask word).
pub const FLEXFEC_HEADER_BYTES: u32 = 12;

/// `fec = { type = "row", l = 8 }`, `fec = { type = "two_d", l = 4, d = 4 }` or `fec = { type = "none" }`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum FecParams {
    /// No FEC.
    None,
    /// One parity per `l` consecutive media packets of a frame. Default `l = 8` (ratio 1/8, Law).
    Row { l: u16 },
    /// RFC 8627 2-D parity over blocks of `l` columns × `d` rows: one parity per row and per column.
    TwoD { l: u16, d: u16 },
}

impl Default for FecParams {
    fn default() -> Self {
        FecParams::Row { l: 8 }
    }
}

impl FecParams {
    pub fn validate(&self) -> Result<(), RtcParamError> {
        match *self {
            FecParams::None => Ok(()),
            FecParams::Row { l } => check(l >= 1, "l", "must be >= 1"),
            FecParams::TwoD { l, d } => {
                check(l >= 1, "l", "must be >= 1")?;
                check(d >= 1, "d", "must be >= 1")
            }
        }
    }

    /// Repair packets per media packet for full rows/blocks: 1/L, or (L + D)/(L·D) for 2-D.
    pub fn overhead(&self) -> f64 {
        match *self {
            FecParams::None => 0.0,
            FecParams::Row { l } => 1.0 / l as f64,
            FecParams::TwoD { l, d } => (l as f64 + d as f64) / (l as f64 * d as f64),
        }
    }

    /// Share of the sent bitrate left for media: 1 / (1 + overhead) (8/9 for rows of 8). The encoder
    /// target is the congestion-control target times this (baselines.md §4.1 "target − FEC overhead").
    pub fn media_share(&self) -> f64 {
        1.0 / (1.0 + self.overhead())
    }
}

/// Which line of its block a repair packet protects.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub enum FecLine {
    Row(u16),
    Column(u16),
}

/// The frame a repair packet belongs to: enough to rebuild the media headers of what it recovers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct FecFrameRef {
    pub frame_id: u64,
    /// Media sequence number of the frame's first packet (packet `i` has `first_seq + i`).
    pub first_seq: u64,
    /// Media packets in the frame.
    pub count: u16,
    pub keyframe: bool,
    pub capture_time: SimTime,
}

/// The header of a repair packet: its frame and the media packets it protects,
/// `first_seq, first_seq + stride, …` (`protected` of them).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct RepairHeader {
    pub frame: FecFrameRef,
    /// Block number within the frame (for the row scheme every row is its own block, with line `Row(0)`).
    pub block: u16,
    pub line: FecLine,
    pub first_seq: u64,
    pub stride: u16,
    pub protected: u16,
}

impl RepairHeader {
    /// Media sequence numbers of the protected packets.
    pub fn protected_seqs(&self) -> impl Iterator<Item = u64> + '_ {
        (0..self.protected as u64).map(move |i| self.first_seq + i * self.stride as u64)
    }

    /// The rebuilt media header of protected packet `seq`.
    pub fn media_header(&self, seq: u64) -> MediaHeader {
        let index = (seq - self.frame.first_seq) as u16;
        MediaHeader {
            frame_id: self.frame.frame_id,
            index,
            count: self.frame.count,
            marker: index + 1 == self.frame.count,
            keyframe: self.frame.keyframe,
        }
    }
}

/// One line of a layout, in packet indices within the frame: `first, first + stride, …` (`count`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LineLayout {
    pub block: u16,
    pub line: FecLine,
    pub first: u16,
    pub stride: u16,
    pub count: u16,
}

/// The lines protecting a frame of `n` media packets under `params` (rows before columns per block).
pub fn layout(params: &FecParams, n: u16) -> Vec<LineLayout> {
    let (l, d) = match *params {
        FecParams::None => return vec![],
        FecParams::Row { l } => (l, 1),
        FecParams::TwoD { l, d } => (l, d),
    };
    let block_size = l as u32 * d as u32;
    let mut lines = vec![];
    let mut start = 0u32;
    let mut block = 0u16;
    while start < n as u32 {
        let m = (n as u32 - start).min(block_size);
        let rows = m.div_ceil(l as u32);
        for r in 0..rows {
            let first = start + r * l as u32;
            let count = (m - r * l as u32).min(l as u32);
            let line = FecLine::Row(r as u16);
            lines.push(LineLayout { block, line, first: first as u16, stride: 1, count: count as u16 });
        }
        if matches!(params, FecParams::TwoD { .. }) {
            for c in 0..(l as u32).min(m) {
                let count = (m - c).div_ceil(l as u32);
                let line = FecLine::Column(c as u16);
                lines.push(LineLayout { block, line, first: (start + c) as u16, stride: l, count: count as u16 });
            }
        }
        start += m;
        block += 1;
    }
    lines
}

/// Counters of a FEC encoder.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct FecEncoderStats {
    pub repair_packets: u64,
    pub repair_bytes: u64,
}

/// Builds the repair packets of each frame.
#[derive(Clone, Debug)]
pub struct FecEncoder {
    params: FecParams,
    next_seq: u64,
    stats: FecEncoderStats,
}

impl FecEncoder {
    pub fn new(params: FecParams) -> Self {
        debug_assert!(params.validate().is_ok());
        FecEncoder { params, next_seq: 0, stats: FecEncoderStats::default() }
    }

    pub fn params(&self) -> &FecParams {
        &self.params
    }

    /// The repair packets for one frame's media packets (in order, as from the packetizer), to be queued
    /// after them. Repair packets take FEC sequence numbers and the media packets' header overhead.
    pub fn protect(&mut self, media: &[RtpPacket]) -> Vec<RtpPacket> {
        let Some(h0) = media.first().and_then(|p| p.media().copied()) else {
            return vec![];
        };
        let frame = FecFrameRef {
            frame_id: h0.frame_id,
            first_seq: media[0].seq - h0.index as u64,
            count: h0.count,
            keyframe: h0.keyframe,
            capture_time: media[0].capture_time,
        };
        debug_assert_eq!(media.len(), h0.count as usize, "protect() takes a whole frame");
        let mut out = vec![];
        for lay in layout(&self.params, media.len() as u16) {
            let idx = (0..lay.count).map(|i| (lay.first + i * lay.stride) as usize);
            let largest = idx.map(|i| media[i].payload_bytes).max().unwrap_or(0);
            let header = RepairHeader {
                frame,
                block: lay.block,
                line: lay.line,
                first_seq: frame.first_seq + lay.first as u64,
                stride: lay.stride,
                protected: lay.count,
            };
            out.push(RtpPacket {
                seq: self.next_seq,
                transport_seq: None,
                payload_bytes: FLEXFEC_HEADER_BYTES + largest,
                overhead_bytes: media[0].overhead_bytes,
                capture_time: frame.capture_time,
                retransmission: false,
                probe_cluster: None,
                payload: Payload::Repair(header),
            });
            self.next_seq += 1;
            self.stats.repair_packets += 1;
            self.stats.repair_bytes += out.last().map_or(0, |p| p.wire_bytes());
        }
        out
    }

    pub fn stats(&self) -> FecEncoderStats {
        self.stats
    }
}

/// Iterative XOR decoding: every line whose repair packet arrived and that misses exactly one protected
/// packet rebuilds it; rebuilt packets count as present for the other lines, until nothing changes.
/// `lines` are the protected sets of the repair packets that arrived; `present` (updated in place) the
/// media packets that arrived. Returns the rebuilt packets in the order they were rebuilt.
pub fn recover(lines: &[Vec<u64>], present: &mut BTreeSet<u64>) -> Vec<u64> {
    let mut rebuilt = vec![];
    loop {
        let mut progress = false;
        for line in lines {
            let mut missing = line.iter().filter(|s| !present.contains(s));
            if let (Some(&seq), None) = (missing.next(), missing.next()) {
                present.insert(seq);
                rebuilt.push(seq);
                progress = true;
            }
        }
        if !progress {
            return rebuilt;
        }
    }
}

/// A media packet rebuilt by FEC.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Recovered {
    pub seq: u64,
    pub header: MediaHeader,
    pub capture_time: SimTime,
}

/// Counters of a FEC decoder.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct FecDecoderStats {
    pub repair_received: u64,
    pub recovered: u64,
}

/// Receiver-side FEC state: the media packets and repair headers seen, per frame.
#[derive(Clone, Debug, Default)]
pub struct FecDecoder {
    present: BTreeSet<u64>,
    /// Repair headers received, by frame id.
    repairs: BTreeMap<u64, Vec<RepairHeader>>,
    stats: FecDecoderStats,
}

impl FecDecoder {
    pub fn new() -> Self {
        Self::default()
    }

    /// A media packet arrived (original or retransmission): returns what it lets FEC rebuild.
    pub fn on_media(&mut self, seq: u64, header: &MediaHeader) -> Vec<Recovered> {
        if !self.present.insert(seq) {
            return vec![];
        }
        self.try_frame(header.frame_id)
    }

    /// A repair packet arrived: returns what it (with earlier arrivals) lets FEC rebuild.
    pub fn on_repair(&mut self, header: &RepairHeader) -> Vec<Recovered> {
        self.stats.repair_received += 1;
        let list = self.repairs.entry(header.frame.frame_id).or_default();
        if list.contains(header) {
            return vec![];
        }
        list.push(*header);
        self.try_frame(header.frame.frame_id)
    }

    fn try_frame(&mut self, frame_id: u64) -> Vec<Recovered> {
        let Some(repairs) = self.repairs.get(&frame_id) else {
            return vec![];
        };
        let lines: Vec<Vec<u64>> = repairs.iter().map(|r| r.protected_seqs().collect()).collect();
        let rebuilt = recover(&lines, &mut self.present);
        self.stats.recovered += rebuilt.len() as u64;
        let any = repairs[0];
        rebuilt
            .into_iter()
            .map(|seq| Recovered { seq, header: any.media_header(seq), capture_time: any.frame.capture_time })
            .collect()
    }

    /// Forgets frames before `frame_id` and media packets before `seq` (the receiver has moved past
    /// them).
    pub fn forget_before(&mut self, frame_id: u64, seq: u64) {
        self.repairs = self.repairs.split_off(&frame_id);
        self.present = self.present.split_off(&seq);
    }

    pub fn stats(&self) -> FecDecoderStats {
        self.stats
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rtc::frames::packetize;

    fn set(xs: impl IntoIterator<Item = u64>) -> BTreeSet<u64> {
        xs.into_iter().collect()
    }

    /// Lines of `params` over media seqs 0..n, and the media present when `lost` are lost.
    fn scenario(params: FecParams, n: u16, lost: &[u64]) -> (Vec<Vec<u64>>, BTreeSet<u64>) {
        let lines = layout(&params, n)
            .iter()
            .map(|l| (0..l.count).map(|i| (l.first + i * l.stride) as u64).collect())
            .collect();
        (lines, set((0..n as u64).filter(|s| !lost.contains(s))))
    }

    #[test]
    fn row_layout_is_one_parity_per_eight_with_a_short_last_row() {
        let rows: Vec<(u16, u16)> = layout(&FecParams::default(), 20).iter().map(|l| (l.first, l.count)).collect();
        assert_eq!(rows, vec![(0, 8), (8, 8), (16, 4)]);
        assert!(layout(&FecParams::None, 20).is_empty());
        assert!((FecParams::default().media_share() - 8.0 / 9.0).abs() < 1e-12);
    }

    #[test]
    fn one_loss_per_row_is_recovered() {
        let (lines, mut present) = scenario(FecParams::default(), 16, &[3, 12]);
        assert_eq!(recover(&lines, &mut present), vec![3, 12]);
        assert_eq!(present, set(0..16));
    }

    #[test]
    fn two_losses_in_a_row_are_not() {
        let (lines, mut present) = scenario(FecParams::default(), 16, &[3, 5, 12]);
        assert_eq!(recover(&lines, &mut present), vec![12]);
        assert!(!present.contains(&3) && !present.contains(&5));
    }

    #[test]
    fn a_lost_repair_packet_protects_nothing() {
        let (mut lines, mut present) = scenario(FecParams::default(), 16, &[3]);
        lines.remove(0);
        assert!(recover(&lines, &mut present).is_empty());
    }

    #[test]
    fn two_d_layout_is_rows_then_columns_per_block() {
        let lay = layout(&FecParams::TwoD { l: 4, d: 3 }, 14);
        let lines: Vec<(u16, FecLine, u16, u16, u16)> =
            lay.iter().map(|l| (l.block, l.line, l.first, l.stride, l.count)).collect();
        use FecLine::*;
        assert_eq!(
            lines,
            vec![
                (0, Row(0), 0, 1, 4),
                (0, Row(1), 4, 1, 4),
                (0, Row(2), 8, 1, 4),
                (0, Column(0), 0, 4, 3),
                (0, Column(1), 1, 4, 3),
                (0, Column(2), 2, 4, 3),
                (0, Column(3), 3, 4, 3),
                (1, Row(0), 12, 1, 2),
                (1, Column(0), 12, 4, 1),
                (1, Column(1), 13, 4, 1),
            ]
        );
    }

    #[test]
    fn two_d_columns_rebuild_a_burst_the_rows_cannot() {
        // 4×4 block: the whole second row (4 consecutive packets) is lost; each column misses one.
        let params = FecParams::TwoD { l: 4, d: 4 };
        let (lines, mut present) = scenario(params, 16, &[4, 5, 6, 7]);
        let mut got = recover(&lines, &mut present);
        got.sort();
        assert_eq!(got, vec![4, 5, 6, 7]);
    }

    #[test]
    fn two_d_iterates_between_rows_and_columns() {
        // Losses 0, 1, 5 in a 4×4 block (rows of 4):
        //   X X . .      row 0 misses 2, column 0 misses 1 → rebuild 0, then row 0 misses 1 → rebuild 1;
        //   . X . .      column 1 then misses only 5 → rebuild 5.
        let params = FecParams::TwoD { l: 4, d: 4 };
        let (lines, mut present) = scenario(params, 16, &[0, 1, 5]);
        let got = recover(&lines, &mut present);
        assert_eq!(set(got), set([0, 1, 5]));
    }

    #[test]
    fn two_d_square_of_four_losses_is_unrecoverable() {
        let params = FecParams::TwoD { l: 4, d: 4 };
        let (lines, mut present) = scenario(params, 16, &[0, 1, 4, 5]);
        assert!(recover(&lines, &mut present).is_empty());
    }

    #[test]
    fn encoder_sizes_sequences_and_decoder_rebuilds_headers() {
        let mut seq = 50;
        let media = packetize(9, 20 * 1_000 + 5, true, SimTime::from_ms(7), 1_200, 48, &mut seq);
        assert_eq!(media.len(), 17);
        let mut enc = FecEncoder::new(FecParams::default());
        let repairs = enc.protect(&media);
        assert_eq!(repairs.len(), 3);
        assert_eq!(repairs.iter().map(|r| r.seq).collect::<Vec<_>>(), vec![0, 1, 2]);
        // Payloads of 1177 or 1176 B: repair = 12 + largest protected.
        assert_eq!(repairs[0].payload_bytes, 12 + 1_177);
        let r0 = *repairs[0].repair().unwrap();
        assert_eq!(r0.protected_seqs().collect::<Vec<_>>(), (50..58).collect::<Vec<_>>());
        assert_eq!((r0.frame.first_seq, r0.frame.count, r0.frame.frame_id), (50, 17, 9));

        // Lose media seq 52; everything else of row 0 and its repair arrive.
        let mut dec = FecDecoder::new();
        for p in media.iter().filter(|p| p.seq != 52 && p.seq < 58) {
            assert!(dec.on_media(p.seq, p.media().unwrap()).is_empty());
        }
        let got = dec.on_repair(&r0);
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].seq, 52);
        assert_eq!(got[0].header, *media[2].media().unwrap());
        assert_eq!(got[0].capture_time, SimTime::from_ms(7));
        // The original showing up late changes nothing.
        assert!(dec.on_media(52, media[2].media().unwrap()).is_empty());
        assert_eq!(dec.stats().recovered, 1);
    }

    #[test]
    fn params_parse_with_type_tags() {
        #[derive(Deserialize)]
        struct W {
            fec: FecParams,
        }
        let p = |s: &str| toml::from_str::<W>(s).map(|w| w.fec);
        assert_eq!(p("fec = { type = \"row\", l = 8 }").unwrap(), FecParams::Row { l: 8 });
        assert_eq!(p("fec = { type = \"two_d\", l = 4, d = 2 }").unwrap(), FecParams::TwoD { l: 4, d: 2 });
        assert_eq!(p("fec = { type = \"none\" }").unwrap(), FecParams::None);
        assert!(p("fec = { type = \"row\", l = 8, d = 2 }").is_err());
        assert_eq!(FecParams::Row { l: 0 }.validate().unwrap_err().field, "l");
    }
}
