//! pcap captures (raw IPv4, nanosecond stamps), readable by Wireshark and tcpdump: per real node in an
//! emulation, what crossed its device ([`Capture`]); per end host in a simulated run, what its flows'
//! hosts sent and received ([`HostCaptures`], `lasthop run --pcap`).
//!
//! A simulated packet has no bytes, only header fields; its capture record is the IPv4 header and the
//! transport header built from them (TCP sequence, acknowledgement and ECN as the model carries them;
//! ping as ICMP echo; everything else as UDP), cut at the headers like `tcpdump -s`, with the packet's
//! full size as its original length. Node k of the scenario (servers, APs, stations in order, from 0)
//! has the address 10.78.0.0 + k + 1 (10.78.0.1, 10.78.0.2, …); flow f's `from` end uses port 10000 + f, its `to` end
//! 20000 + f (f < 10000); a ping's ICMP identifier is its flow index. Time zero of the model is the
//! Unix epoch. Files are named as the emulator names them: `<node>.pcap`, the name in lowercase with
//! `-` for other characters.

use crate::EmuError;
use lasthop_core::packet::{Ecn, Hdr, NodeId, Packet};
use lasthop_core::scenario::{Flow, Scenario};
use lasthop_core::sim::PacketTap;
use lasthop_core::SimTime;
use std::path::{Path, PathBuf};

/// One capture file.
pub struct Capture {
    w: Option<pcap_file::pcap::PcapWriter<std::io::BufWriter<std::fs::File>>>,
    pub path: PathBuf,
    error: Option<String>,
}

impl std::fmt::Debug for Capture {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Capture").field("path", &self.path).finish()
    }
}

impl Capture {
    /// A new file at `path` (raw IPv4 records, ns stamps, at most `snaplen` bytes kept per record).
    pub fn create(path: PathBuf, snaplen: u32) -> Result<Capture, EmuError> {
        let f = std::fs::File::create(&path).map_err(|e| EmuError::Setup(format!("{}: {e}", path.display())))?;
        let header = pcap_file::pcap::PcapHeader { datalink: pcap_file::DataLink::RAW, ts_resolution: pcap_file::TsResolution::NanoSecond, snaplen, ..Default::default() };
        let w = pcap_file::pcap::PcapWriter::with_header(std::io::BufWriter::new(f), header).map_err(|e| EmuError::Setup(format!("{}: {e}", path.display())))?;
        Ok(Capture { w: Some(w), path, error: None })
    }

    /// Appends a record of `data` (the first bytes of a packet of `orig_len` bytes) at `ts` since the
    /// epoch. A write error is kept for [`Capture::finish`] and ends the capture.
    pub fn write(&mut self, ts: std::time::Duration, data: &[u8], orig_len: u32) {
        if let Some(w) = &mut self.w {
            if let Err(e) = w.write_packet(&pcap_file::pcap::PcapPacket::new(ts, orig_len, data)) {
                self.error = Some(e.to_string());
                self.w = None;
            }
        }
    }

    /// Flushes the file; the first error of its writes or of the flush, naming the file.
    pub fn finish(&mut self) -> Result<(), EmuError> {
        if let Some(w) = self.w.take() {
            use std::io::Write;
            w.into_writer().flush().map_err(|e| EmuError::Io(format!("{}: {e}", self.path.display())))?;
        }
        match self.error.take() {
            Some(e) => Err(EmuError::Io(format!("{}: {e}", self.path.display()))),
            None => Ok(()),
        }
    }
}

/// Records are cut after this many bytes (every header this module builds fits).
const SNAPLEN: u32 = 128;

/// How flow f's packets look on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Wire {
    Udp,
    Tcp,
    Icmp,
}

/// A capture per end host of a simulated run: every packet a flow's host sent (at its send time) and
/// every packet delivered to one (at its delivery time), as pcap files `<dir>/<node>.pcap`.
#[derive(Debug)]
pub struct HostCaptures {
    /// Per node id: its capture, if it is an end of a flow.
    files: Vec<Option<Capture>>,
    /// Per flow: how its packets look, and the node id of its `from` end.
    wire: Vec<(Wire, NodeId)>,
    buf: Vec<u8>,
    zeros: Vec<u8>,
}

impl HostCaptures {
    /// Creates `<dir>/<node>.pcap` for every node that is an end of one of `sc`'s flows.
    pub fn create(sc: &Scenario, dir: &Path) -> Result<HostCaptures, EmuError> {
        if sc.flows.len() > 10_000 {
            return Err(EmuError::Scenario(format!("pcap: {} flows; captures number ports 10000 + flow and take at most 10000 flows", sc.flows.len())));
        }
        let names: Vec<&str> = sc.servers.iter().map(|s| s.name.as_str()).chain(sc.aps.iter().map(|a| a.name.as_str())).chain(sc.stations.iter().map(|s| s.name.as_str())).collect();
        let mut files: Vec<Option<Capture>> = names.iter().map(|_| None).collect();
        for f in &sc.flows {
            let c = f.common();
            for end in [c.from, c.to] {
                let Some(k) = names.iter().position(|n| *n == end) else { continue };
                if files[k].is_none() {
                    files[k] = Some(Capture::create(dir.join(format!("{}.pcap", crate::realtime::slug(end))), SNAPLEN)?);
                }
            }
        }
        let wire = sc.flows.iter().map(|f| {
            let from = names.iter().position(|n| *n == f.common().from).unwrap_or(usize::MAX) as NodeId;
            let w = match f {
                Flow::Tcp(_) | Flow::TcpVideo(_) => Wire::Tcp,
                Flow::Ping(_) => Wire::Icmp,
                _ => Wire::Udp,
            };
            (w, from)
        });
        Ok(HostCaptures { files, wire: wire.collect(), buf: Vec::with_capacity(256), zeros: vec![0; 65536] })
    }

    /// Flushes every file; the first error, naming its file.
    pub fn finish(&mut self) -> Result<(), EmuError> {
        let mut first = Ok(());
        for c in self.files.iter_mut().flatten() {
            let r = c.finish();
            if first.is_ok() {
                first = r;
            }
        }
        first
    }

    fn record(&mut self, node: NodeId, now: SimTime, p: &Packet) {
        if !matches!(self.files.get(node as usize), Some(Some(_))) {
            return;
        }
        let (wire, from) = self.wire[p.flow as usize];
        let hdr_len = build(&mut self.buf, wire, p.src != from, p, &self.zeros);
        let ts = std::time::Duration::from_nanos(now.as_ns());
        let data = &self.buf[..hdr_len.min(self.buf.len())];
        if let Some(Some(c)) = self.files.get_mut(node as usize) {
            c.write(ts, data, p.size.max(data.len() as u32));
        }
    }
}

impl PacketTap for HostCaptures {
    fn sent(&mut self, now: SimTime, pkt: &Packet) {
        self.record(pkt.src, now, pkt);
    }
    fn delivered(&mut self, now: SimTime, pkt: &Packet) {
        self.record(pkt.dst, now, pkt);
    }
    fn close(&mut self) -> Result<(), String> {
        self.finish().map_err(|e| e.to_string())
    }
}

/// Node k's address, 10.78.(k + 1) as two bytes (k = 0 is 10.78.0.1).
pub fn host_addr(k: NodeId) -> [u8; 4] {
    let n = k as u32 + 1;
    [10, 78, (n >> 8) as u8, (n & 0xff) as u8]
}

/// A model time on a millisecond clock, as TCP timestamps count.
fn ms(t: SimTime) -> u32 {
    (t.as_ns() / 1_000_000) as u32
}

/// Writes `p` as `wire` into `buf` (headers, then zeros up to its size); returns the headers' length.
/// `reverse`: it travels from the flow's `to` end back to its `from` end.
fn build(buf: &mut Vec<u8>, wire: Wire, reverse: bool, p: &Packet, zeros: &[u8]) -> usize {
    use etherparse::{IpDscp, IpEcn, IpHeaders, Ipv4Header, PacketBuilder, TcpOptionElement};
    let (from_port, to_port) = (10_000 + p.flow as u16, 20_000 + p.flow as u16);
    let (sport, dport) = if reverse { (to_port, from_port) } else { (from_port, to_port) };
    let ecn = match p.hdr {
        Hdr::Tcp { ecn, .. } => ecn,
        _ => Ecn::NotEct,
    };
    let mut ip = Ipv4Header { source: host_addr(p.src), destination: host_addr(p.dst), time_to_live: 64, identification: p.seq as u16, ..Default::default() };
    ip.dscp = IpDscp::try_new(p.dscp & 0x3f).unwrap_or(IpDscp::ZERO);
    ip.ecn = IpEcn::try_new(ecn.bits()).unwrap_or(IpEcn::ZERO);
    let base = PacketBuilder::ip(IpHeaders::Ipv4(ip, Default::default()));
    let size = p.size as usize;
    let pad = |hl: usize| &zeros[..size.saturating_sub(hl).min(zeros.len())];
    buf.clear();
    match (wire, p.hdr) {
        (Wire::Tcp, Hdr::Tcp { seq, len, ack, ts_echo, .. }) => {
            let b = base.tcp(sport, dport, seq as u32, 65535).ack(ack as u32);
            // The model's TCP header is what the size leaves beside the payload: 12 bytes of options
            // are the timestamps (RFC 7323; ms clock), other multiples of 4 are padding.
            let opts = size.saturating_sub(b.size(0) + len as usize);
            let b = match opts {
                12 => b.options(&[TcpOptionElement::Noop, TcpOptionElement::Noop, TcpOptionElement::Timestamp(ms(p.sent), ms(ts_echo))]),
                4 | 8 | 16..=40 if opts % 4 == 0 => b.options_raw(&[1u8; 40][..opts]),
                _ => Ok(b),
            };
            let Ok(b) = b else { return 0 }; // (never: at most 40 bytes of options, a multiple of 4)
            let hl = b.size(0);
            let _ = b.write(buf, pad(hl));
            hl
        }
        (Wire::Icmp, _) => {
            let b = if reverse { base.icmpv4_echo_reply(p.flow as u16, p.seq as u16) } else { base.icmpv4_echo_request(p.flow as u16, p.seq as u16) };
            let hl = b.size(0);
            let _ = b.write(buf, pad(hl));
            hl
        }
        _ => {
            let b = base.udp(sport, dport);
            let hl = b.size(0);
            let _ = b.write(buf, pad(hl));
            hl
        }
    }
}
