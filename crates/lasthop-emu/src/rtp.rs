//! Plaintext RTP and RTCP of an `external` flow with `rtp` (scenario key), read and rewritten in the
//! clear so that Zhuge's TWCC rewriting acts on a real call:
//!
//! * forward (the media sender, `from`, to the receiver, `to`): an RTP packet's transport-wide sequence
//!   number, from its one- or two-byte header extension (RFC 8285) with the flow's ID, is handed to the
//!   model ([`InjectedRtp::Media`]);
//! * RTCP (RFC 3550 compound packets, told from RTP by their packet type as RFC 5761 does): the
//!   transport-cc feedback message in it (RTPFB, FMT 15), if any, goes to the model with it;
//! * when the model delivers RTCP whose transport-cc feedback a mechanism took out (Zhuge), that message
//!   is removed from the real packet ([`strip_transport_cc`]); the rest of the compound (receiver
//!   reports, NACKs, PLIs) goes on untouched, and a packet with nothing left is not written;
//! * feedback a mechanism made (Zhuge's own TWCC, from the AP) becomes a real packet
//!   ([`RtpFlow::feedback_packet`]) with the addresses and ports of the receiver's own RTCP and its
//!   SSRCs, learned from what the receiver sent.

use lasthop_core::rtc::twcc::{TwccFeedback, FMT_TRANSPORT_CC, RTPFB};
use lasthop_core::sim::InjectedRtp;

/// RTCP packet types (RFC 5761 §4: 192–223 cannot be RTP payload types in a muxed session).
fn is_rtcp_type(pt: u8) -> bool {
    (192..=223).contains(&pt)
}

/// Whether a UDP payload is RTCP (version 2 and an RTCP packet type).
pub fn is_rtcp(p: &[u8]) -> bool {
    p.len() >= 8 && p[0] >> 6 == 2 && is_rtcp_type(p[1])
}

/// The transport-wide sequence number in an RTP packet's header extension `ext_id`, if it has one.
pub fn transport_seq(p: &[u8], ext_id: u8) -> Option<u16> {
    if p.len() < 12 || p[0] >> 6 != 2 || p[0] & 0x10 == 0 || is_rtcp_type(p[1]) {
        return None;
    }
    let at = 12 + 4 * (p[0] & 0x0F) as usize;
    let profile = u16::from_be_bytes([*p.get(at)?, *p.get(at + 1)?]);
    let words = u16::from_be_bytes([*p.get(at + 2)?, *p.get(at + 3)?]) as usize;
    let ext = p.get(at + 4..at + 4 + 4 * words)?;
    let two_byte = profile & 0xFFF0 == 0x1000;
    if profile != 0xBEDE && !two_byte {
        return None;
    }
    let mut i = 0;
    while i < ext.len() {
        let (id, len, head) = if two_byte {
            if ext[i] == 0 {
                i += 1;
                continue;
            }
            (ext[i], *ext.get(i + 1)? as usize, 2)
        } else {
            let (id, len) = (ext[i] >> 4, (ext[i] & 0x0F) as usize + 1);
            if id == 0 {
                i += 1;
                continue;
            }
            if id == 15 {
                return None;
            }
            (id, len, 1)
        };
        let data = ext.get(i + head..i + head + len)?;
        if id == ext_id && len == 2 {
            return Some(u16::from_be_bytes([data[0], data[1]]));
        }
        i += head + len;
    }
    None
}

/// The messages of an RTCP compound packet, each with its header (`None` if a length runs past the end).
fn rtcp_parts(p: &[u8]) -> Option<Vec<&[u8]>> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < p.len() {
        let head = p.get(i..i + 4)?;
        if head[0] >> 6 != 2 {
            return None;
        }
        let len = (u16::from_be_bytes([head[2], head[3]]) as usize + 1) * 4;
        out.push(p.get(i..i + len)?);
        i += len;
    }
    Some(out)
}

fn is_transport_cc(part: &[u8]) -> bool {
    part[1] == RTPFB && part[0] & 0x1F == FMT_TRANSPORT_CC
}

/// The transport-cc feedback message of an RTCP compound packet, if it has one.
pub fn transport_cc(p: &[u8]) -> Option<&[u8]> {
    rtcp_parts(p)?.into_iter().find(|m| is_transport_cc(m))
}

/// The compound packet without its transport-cc feedback messages (empty when nothing else was in it).
pub fn strip_transport_cc(p: &[u8]) -> Vec<u8> {
    match rtcp_parts(p) {
        Some(parts) => parts.into_iter().filter(|m| !is_transport_cc(m)).flatten().copied().collect(),
        None => p.to_vec(),
    }
}

/// Source and destination address and port of a UDP packet, and its DSCP.
#[derive(Clone, Copy, Debug)]
struct UdpEnds {
    src: [u8; 4],
    dst: [u8; 4],
    sport: u16,
    dport: u16,
    dscp: u8,
}

/// What the emulator knows of one `external` flow with `rtp`.
#[derive(Debug, Default)]
pub struct RtpFlow {
    pub ext_id: u8,
    /// The receiver's RTCP as last seen.
    back: Option<UdpEnds>,
    /// The receiver's SSRC as sender of its feedback, and the media SSRC (from its feedback, or the
    /// media's own RTP packets until then).
    sender_ssrc: Option<u32>,
    media_ssrc: Option<u32>,
    pub media: u64,
    pub rtcp: u64,
    pub stripped: u64,
    pub generated: u64,
    /// Feedback the model made before the receiver had sent any RTCP (no ports to send it to).
    pub unaddressed: u64,
}

impl RtpFlow {
    pub fn new(ext_id: u8) -> Self {
        RtpFlow { ext_id, ..Default::default() }
    }

    /// What the model is told of an IPv4 packet of the flow (`reverse`: from the receiver), and what the
    /// flow learns from it.
    pub fn read(&mut self, ip: &[u8], reverse: bool) -> Option<InjectedRtp> {
        let s = etherparse::SlicedPacket::from_ip(ip).ok()?;
        let (Some(etherparse::NetSlice::Ipv4(v4)), Some(etherparse::TransportSlice::Udp(udp))) = (&s.net, &s.transport) else {
            return None;
        };
        let p = udp.payload();
        if is_rtcp(p) {
            self.rtcp += 1;
            let twcc = transport_cc(p);
            if reverse {
                let h = v4.header();
                self.back = Some(UdpEnds { src: h.source(), dst: h.destination(), sport: udp.source_port(), dport: udp.destination_port(), dscp: h.dcp().value() });
                if let Some(m) = twcc.filter(|m| m.len() >= 12) {
                    self.sender_ssrc = Some(u32::from_be_bytes([m[4], m[5], m[6], m[7]]));
                    self.media_ssrc = Some(u32::from_be_bytes([m[8], m[9], m[10], m[11]]));
                }
            }
            return Some(InjectedRtp::Rtcp { twcc: twcc.map(<[u8]>::to_vec) });
        }
        let seq = transport_seq(p, self.ext_id).filter(|_| !reverse)?;
        self.media += 1;
        if self.media_ssrc.is_none() {
            self.media_ssrc = Some(u32::from_be_bytes([p[8], p[9], p[10], p[11]]));
        }
        Some(InjectedRtp::Media { transport_seq: seq })
    }

    /// The real packet `ip` with its transport-cc feedback taken out (IP and UDP lengths and
    /// checksums recomputed); `None` when nothing is left to send.
    pub fn strip(&mut self, ip: &[u8]) -> Option<Vec<u8>> {
        let s = etherparse::SlicedPacket::from_ip(ip).ok()?;
        let (Some(etherparse::NetSlice::Ipv4(v4)), Some(etherparse::TransportSlice::Udp(udp))) = (&s.net, &s.transport) else {
            return Some(ip.to_vec());
        };
        let rest = strip_transport_cc(udp.payload());
        self.stripped += 1;
        if rest.is_empty() {
            return None;
        }
        let h = v4.header().to_header();
        Some(udp_packet(h.source, h.destination, udp.source_port(), udp.destination_port(), h.dscp.value(), &rest))
    }

    /// A real packet of the feedback `fb` a mechanism made, from the receiver to the sender as the
    /// receiver's own RTCP goes, with its SSRCs; `None` before the receiver sent any RTCP.
    pub fn feedback_packet(&mut self, fb: &TwccFeedback) -> Option<Vec<u8>> {
        let Some(UdpEnds { src, dst, sport, dport, dscp }) = self.back else {
            self.unaddressed += 1;
            return None;
        };
        let mut fb = fb.clone();
        fb.sender_ssrc = self.sender_ssrc.unwrap_or(fb.sender_ssrc);
        fb.media_ssrc = self.media_ssrc.unwrap_or(fb.media_ssrc);
        self.generated += 1;
        Some(udp_packet(src, dst, sport, dport, dscp, &fb.encode()))
    }

    /// The flow's counters, for `summary.json`.
    pub fn stats(&self) -> serde_json::Value {
        serde_json::json!({ "twcc_extension_id": self.ext_id, "media_packets": self.media, "rtcp_packets": self.rtcp,
            "rtcp_stripped": self.stripped, "feedback_generated": self.generated, "feedback_unaddressed": self.unaddressed })
    }
}

/// An IPv4/UDP packet (TTL 64, checksums computed).
fn udp_packet(src: [u8; 4], dst: [u8; 4], sport: u16, dport: u16, dscp: u8, payload: &[u8]) -> Vec<u8> {
    let mut ip = etherparse::Ipv4Header { source: src, destination: dst, time_to_live: 64, ..Default::default() };
    ip.dscp = etherparse::IpDscp::try_new(dscp & 0x3F).unwrap_or(etherparse::IpDscp::ZERO);
    let b = etherparse::PacketBuilder::ip(etherparse::IpHeaders::Ipv4(ip, Default::default())).udp(sport, dport);
    let mut out = Vec::with_capacity(b.size(payload.len()));
    let _ = b.write(&mut out, payload);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use lasthop_core::rtc::twcc::{build_feedback, SeqUnwrapper};
    use lasthop_core::SimTime;

    /// An RTP packet (PT 96, SSRC 0x1111) with a one-byte header extension: ID 3 (2 bytes, a
    /// stand-in), then `ext_id` with the transport seq, then padding.
    fn rtp(ext_id: u8, seq: u16) -> Vec<u8> {
        let mut p = vec![0x90, 96, 0, 1, 0, 0, 0, 0, 0, 0, 0x11, 0x11, 0xBE, 0xDE, 0, 2];
        p.extend_from_slice(&[0x31, 0xAA, 0xBB, (ext_id << 4) | 1]);
        p.extend_from_slice(&seq.to_be_bytes());
        p.extend_from_slice(&[0, 0]);
        p.extend_from_slice(&[7; 20]);
        p
    }

    fn receiver_report() -> Vec<u8> {
        vec![0x80, 201, 0, 1, 0, 0, 0x22, 0x22]
    }

    fn twcc() -> Vec<u8> {
        let t = |ms: u64| SimTime::from_ns(ms * 1_000_000);
        let mut count = 0;
        let mut fb = build_feedback(&[(10, t(100)), (11, t(101)), (13, t(103))], None, &mut count).remove(0);
        fb.sender_ssrc = 0x2222;
        fb.media_ssrc = 0x1111;
        fb.encode()
    }

    #[test]
    fn the_transport_seq_is_read_from_one_and_two_byte_extensions() {
        assert_eq!(transport_seq(&rtp(5, 4242), 5), Some(4242));
        assert_eq!(transport_seq(&rtp(5, 4242), 3), Some(0xAABB), "the ID asked for, past the others");
        assert_eq!(transport_seq(&rtp(5, 4242), 4), None);
        let mut two = vec![0x90, 96, 0, 1, 0, 0, 0, 0, 0, 0, 0x11, 0x11, 0x10, 0x00, 0, 1, 5, 2];
        two.extend_from_slice(&7u16.to_be_bytes());
        assert_eq!(transport_seq(&two, 5), Some(7));
        let mut cut = rtp(5, 1);
        cut.truncate(17);
        assert_eq!(transport_seq(&cut, 5), None, "an extension past the end is not read");
        assert!(!is_rtcp(&rtp(5, 1)) && is_rtcp(&receiver_report()));
    }

    #[test]
    fn transport_cc_is_found_in_a_compound_and_stripped_from_it() {
        let compound = [receiver_report(), twcc()].concat();
        assert_eq!(transport_cc(&compound), Some(&twcc()[..]));
        assert_eq!(strip_transport_cc(&compound), receiver_report());
        assert!(strip_transport_cc(&twcc()).is_empty());
        assert_eq!(transport_cc(&receiver_report()), None);
        let fb = TwccFeedback::parse(transport_cc(&compound).expect("found"), &mut SeqUnwrapper::new()).expect("valid");
        assert_eq!((fb.base_seq, fb.status_count(), fb.received_count()), (10, 4, 3));
    }

    #[test]
    fn feedback_is_addressed_as_the_receivers_own_rtcp_with_its_ssrcs() {
        let mut f = RtpFlow::new(5);
        let fwd = udp_packet([10, 77, 0, 1], [10, 77, 0, 2], 5004, 5006, 46, &rtp(5, 9));
        assert_eq!(f.read(&fwd, false), Some(InjectedRtp::Media { transport_seq: 9 }));
        let mut count = 0;
        let made = build_feedback(&[(9, SimTime::from_ns(5_000_000))], None, &mut count).remove(0);
        assert_eq!(f.feedback_packet(&made), None, "no RTCP seen yet: nowhere to send it");
        let back = udp_packet([10, 77, 0, 2], [10, 77, 0, 1], 5006, 5004, 0, &[receiver_report(), twcc()].concat());
        assert_eq!(f.read(&back, true), Some(InjectedRtp::Rtcp { twcc: Some(twcc()) }));
        let out = f.feedback_packet(&made).expect("addressed");
        let s = etherparse::SlicedPacket::from_ip(&out).expect("IPv4");
        let Some(etherparse::TransportSlice::Udp(udp)) = s.transport else { panic!("UDP") };
        assert_eq!((udp.source_port(), udp.destination_port()), (5006, 5004));
        let fb = TwccFeedback::parse(udp.payload(), &mut SeqUnwrapper::new()).expect("valid");
        assert_eq!((fb.sender_ssrc, fb.media_ssrc, fb.base_seq), (0x2222, 0x1111, 9));
        let stripped = f.strip(&back).expect("the report is left");
        let s = etherparse::SlicedPacket::from_ip(&stripped).expect("IPv4");
        let Some(etherparse::TransportSlice::Udp(udp)) = s.transport else { panic!("UDP") };
        assert_eq!(udp.payload(), &receiver_report()[..]);
        assert_eq!(f.strip(&udp_packet([10, 77, 0, 2], [10, 77, 0, 1], 5006, 5004, 0, &twcc())), None);
    }
}
