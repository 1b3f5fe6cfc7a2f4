//! The real-time loop: one thread owns the model and every packet of the real nodes.

use crate::netns::{Netns, Tun};
use crate::pcap::Capture;
use crate::EmuError;
use lasthop_core::scenario::{Flow, Scenario};
use lasthop_core::app::rtc::{Rtcp, RtcpBody};
use lasthop_core::sim::{InjectError, Injected, InjectedRtp, InjectedTcp, Port, RunOutput, Sim};
use crate::rtp::RtpFlow;
use lasthop_core::{SimDuration, SimTime};
use nix::sys::epoll::{Epoll, EpollCreateFlags, EpollEvent, EpollFlags};
use nix::sys::signal::{killpg, Signal};
use nix::sys::time::TimeSpec;
use nix::sys::timerfd::{ClockId, Expiration, TimerFd, TimerFlags, TimerSetTimeFlags};
use nix::unistd::Pid;
use std::collections::HashMap;
use std::net::Ipv4Addr;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, Command};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// How to run an emulation.
#[derive(Clone, Debug)]
pub struct EmuConfig {
    /// Stop after this much model (= wall) time; at most the scenario's `duration_s`.
    pub duration: Option<SimDuration>,
    /// The run is invalid when the p99.9 of the packets' lag exceeds this.
    pub lag_budget: SimDuration,
    /// Spin (poll without sleeping) for this long before each model wakeup, for precision.
    pub spin: SimDuration,
    /// A command to run in a real node's namespace; the emulation ends when it exits (or at the end).
    pub command: Vec<String>,
    /// The real node whose namespace runs the command (default: the `to` end of the first external flow).
    pub command_node: Option<String>,
    /// The command's standard output goes to this process's standard error (keeping stdout for a
    /// machine-readable result).
    pub command_stdout_to_stderr: bool,
    /// Relay real packets straight to their destination without the model (the emulator's own cost,
    /// for benchmarks): the lag is then the time from reading a packet to writing it.
    pub bypass: bool,
    /// Write `<node>.pcap` here for each real node: every packet it sent into the model and every one
    /// the model delivered to it, as raw IPv4, time-stamped when it crossed the device.
    pub pcap_dir: Option<std::path::PathBuf>,
    /// Listen on this Unix socket for run-time commands ([`crate::control`]).
    pub control: Option<std::path::PathBuf>,
}

impl Default for EmuConfig {
    fn default() -> Self {
        EmuConfig { duration: None, lag_budget: SimDuration::from_us(500), spin: SimDuration::from_us(100), command: Vec::new(), command_node: None, command_stdout_to_stderr: false, bypass: false, pcap_dir: None, control: None }
    }
}

/// A real node: its scenario name, namespace and address.
#[derive(Clone, Debug)]
pub struct RealNode {
    pub name: String,
    pub netns: String,
    pub addr: Ipv4Addr,
}

/// A real packet handed to the model: when (model time), where, and what the model saw of it. Feeding
/// the same inputs to the same scenario and seed reproduces the run exactly (`lasthop replay`).
#[derive(Clone, Debug, PartialEq)]
pub struct Input {
    pub at: SimTime,
    pub port: Port,
    pub size: u32,
    pub dscp: u8,
    pub tcp: Option<InjectedTcp>,
    /// What the model was told of it as RTP or RTCP (a flow with `rtp`).
    pub rtp: Option<InjectedRtp>,
}

/// The header fields the model uses of a TCP segment (sequence, payload length, acknowledgement), read
/// in the clear; `None` for anything else (or a truncated header).
fn tcp_fields(bytes: &[u8], ip: &etherparse::Ipv4HeaderSlice<'_>) -> Option<InjectedTcp> {
    if ip.protocol() != etherparse::IpNumber::TCP || ip.is_fragmenting_payload() {
        return None;
    }
    let ihl = ip.slice().len();
    let end = (ip.total_len() as usize).min(bytes.len());
    let t = etherparse::TcpHeaderSlice::from_slice(bytes.get(ihl..end)?).ok()?;
    let len = (end - ihl).checked_sub(t.slice().len())? as u32;
    Some(InjectedTcp { seq: t.sequence_number(), len, ack: t.acknowledgment_number() })
}

/// What an emulation produced.
#[derive(Debug)]
pub struct EmuOutput {
    /// The model's results, as a simulated run gives them.
    pub run: RunOutput,
    /// Per packet written to a real node: (packet id, write time − the model's release time in ns).
    pub lag_ns: Vec<(u64, u64)>,
    pub nodes: Vec<RealNode>,
    /// Every real packet handed to the model, in order.
    pub inputs: Vec<Input>,
    /// Real packets handed to the model, written out of it, read but not carried (no flow between
    /// their addresses, not IPv4), and delivered by the model but not writable (the device was full).
    pub injected: u64,
    pub written: u64,
    pub unmapped: u64,
    pub write_failures: u64,
    /// Model time when the loop ended.
    pub ended_at: SimTime,
    /// The command's exit code (`None`: none was given, or it was killed at the end).
    pub command_status: Option<i32>,
    pub command_killed: bool,
    /// The model thread ran at real-time priority (SCHED_FIFO); false where that was refused.
    pub realtime: bool,
    /// Per flow with `rtp`: what was read and rewritten of its RTP and RTCP.
    pub rtp: serde_json::Value,
    /// The CPUs were kept out of idle states slower to leave than 0 µs (a PM QoS request on
    /// `/dev/cpu_dma_latency`, as `cyclictest` makes); false where that was refused.
    pub cpu_latency_held: bool,
    /// The commands applied from the control socket, as `commands` entries at their model times: with
    /// the inputs, what a replay needs.
    pub commands: Vec<lasthop_core::sim::CommandConfig>,
}

/// Asks the kernel's PM QoS for a CPU wake-up latency of 0 µs while the returned file stays open: idle
/// CPUs then poll instead of halting, and a packet's arrival wakes the model thread in microseconds
/// rather than tens of them (half of a ping's overhead through the emulator on a virtual machine).
/// `None` where the device is missing or refused.
fn hold_cpu_latency() -> Option<std::fs::File> {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new().write(true).open("/dev/cpu_dma_latency").ok()?;
    f.write_all(&0i32.to_ne_bytes()).ok()?;
    Some(f)
}

/// Puts the calling thread on SCHED_FIFO at a middle priority; false if refused (no CAP_SYS_NICE).
fn realtime_priority() -> bool {
    use thread_priority::{RealtimeThreadSchedulePolicy, ThreadPriority, ThreadSchedulePolicy};
    let prio = ThreadPriority::Crossplatform(50u8.try_into().expect("0..=99"));
    thread_priority::set_thread_priority_and_policy(thread_priority::thread_native_id(), prio, ThreadSchedulePolicy::Realtime(RealtimeThreadSchedulePolicy::Fifo)).is_ok()
}

/// Back to the normal policy (the thread goes on serving Python).
fn normal_priority() {
    use thread_priority::{NormalThreadSchedulePolicy, ThreadPriority, ThreadSchedulePolicy};
    let _ = thread_priority::set_thread_priority_and_policy(thread_priority::thread_native_id(), ThreadPriority::Crossplatform(0u8.try_into().expect("0")), ThreadSchedulePolicy::Normal(NormalThreadSchedulePolicy::Other));
}

impl EmuOutput {
    /// The `q` percentile (0..=100, nearest rank) of the lag, ns.
    pub fn lag_percentile_ns(&self, q: f64) -> u64 {
        let mut v: Vec<u64> = self.lag_ns.iter().map(|x| x.1).collect();
        v.sort_unstable();
        lasthop_core::stats::percentile(&v, q).unwrap_or(0)
    }
}

/// `CLOCK_MONOTONIC` relative to the start of the emulation.
struct Clock {
    t0: TimeSpec,
}

impl Clock {
    fn start() -> Result<Clock, EmuError> {
        Ok(Clock { t0: nix::time::clock_gettime(nix::time::ClockId::CLOCK_MONOTONIC).map_err(io)? })
    }
    fn now(&self) -> SimTime {
        let t = nix::time::clock_gettime(nix::time::ClockId::CLOCK_MONOTONIC).expect("CLOCK_MONOTONIC");
        let d = t - self.t0;
        SimTime::ZERO + SimDuration::from_ns((d.tv_sec() as u64) * 1_000_000_000 + d.tv_nsec() as u64)
    }
    /// The absolute `CLOCK_MONOTONIC` instant of model time `t`.
    fn at(&self, t: SimTime) -> TimeSpec {
        self.t0 + TimeSpec::from_duration(std::time::Duration::from_nanos(t.as_ns()))
    }
}

fn io(e: impl std::fmt::Display) -> EmuError {
    EmuError::Io(e.to_string())
}

/// (from node, to node) → (external flow name, reverse): the port a packet between two real nodes takes.
type FlowPorts = HashMap<(usize, usize), (String, bool)>;

/// The real nodes of `sc` (every endpoint of an `external` flow, in flow order) and the port of each
/// (from, to) pair of them.
fn real_nodes(sc: &Scenario) -> Result<(Vec<String>, FlowPorts), EmuError> {
    let mut names: Vec<String> = Vec::new();
    let mut ports = HashMap::new();
    for (i, f) in sc.flows.iter().enumerate() {
        if !matches!(f, Flow::External(_)) {
            continue;
        }
        let c = f.common();
        let flow = c.name.map(str::to_string).unwrap_or_else(|| format!("flow{i}"));
        let mut idx = |n: &str| names.iter().position(|x| x == n).unwrap_or_else(|| {
            names.push(n.to_string());
            names.len() - 1
        });
        let (a, b) = (idx(c.from), idx(c.to));
        ports.entry((a, b)).or_insert((flow.clone(), false));
        ports.entry((b, a)).or_insert((flow, true));
    }
    if names.is_empty() {
        return Err(EmuError::Scenario("the scenario has no `external` flow: real traffic enters the model only through one (flows = [{ type = \"external\", from = ..., to = ... }])".into()));
    }
    Ok((names, ports))
}

/// The RTP state of every `external` flow with `rtp`, by flow index.
fn rtp_flows(sc: &Scenario) -> HashMap<u32, RtpFlow> {
    sc.flows
        .iter()
        .enumerate()
        .filter_map(|(i, f)| match f {
            Flow::External(lasthop_core::scenario::External { rtp: Some(r), .. }) => Some((i as u32, RtpFlow::new(r.twcc_extension_id))),
            _ => None,
        })
        .collect()
}

/// A node's name as it appears in namespace and file names: lowercase letters and digits, `-` for the rest, at most 20.
pub(crate) fn slug(s: &str) -> String {
    s.chars().map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_lowercase() } else { '-' }).take(20).collect()
}

/// The namespaces and devices of the real nodes; dropped in reverse order (devices, then namespaces).
struct Nodes {
    tuns: Vec<Tun>,
    info: Vec<RealNode>,
    _ns: Vec<Netns>,
}

fn set_up(names: &[String]) -> Result<Nodes, EmuError> {
    crate::netns::remove_stale();
    let pid = std::process::id();
    let (mut ns, mut tuns, mut info) = (Vec::new(), Vec::new(), Vec::new());
    for (k, name) in names.iter().enumerate() {
        let n = Netns::create(&format!("lh-{pid}-{}", slug(name)))?;
        let addr = Ipv4Addr::new(10, 77, 0, k as u8 + 1);
        let tun = Tun::create_in(&n, &format!("lh{}n{k}", pid % 1_000_000), addr, 24)?;
        info.push(RealNode { name: name.clone(), netns: n.name.clone(), addr });
        tuns.push(tun);
        ns.push(n);
    }
    Ok(Nodes { tuns, info, _ns: ns })
}

/// The command in `node`'s namespace, in its own process group, told every real node's namespace and
/// address (`LASTHOP_IP_<NODE>`, `LASTHOP_NS_<NODE>`; NODE upper-cased, other characters `_`) and the
/// control socket's path if there is one (`LASTHOP_CONTROL`).
fn spawn(cmd: &[String], node: &RealNode, all: &[RealNode], stdout_to_stderr: bool, control: Option<&std::path::Path>) -> Result<Child, EmuError> {
    let mut c = Command::new("ip");
    c.args(["netns", "exec", &node.netns]).args(cmd).process_group(0);
    if stdout_to_stderr {
        c.stdout(std::io::stderr());
    }
    for n in all {
        let key: String = n.name.chars().map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_uppercase() } else { '_' }).collect();
        c.env(format!("LASTHOP_IP_{key}"), n.addr.to_string()).env(format!("LASTHOP_NS_{key}"), &n.netns);
    }
    if let Some(p) = control {
        c.env("LASTHOP_CONTROL", p);
    }
    c.spawn().map_err(|e| EmuError::Setup(format!("cannot start `{}`: {e}", cmd.join(" "))))
}

/// Ends the command's process group: SIGTERM, then SIGKILL after half a second.
fn stop(child: &mut Child) -> (Option<i32>, bool) {
    if let Ok(Some(st)) = child.try_wait() {
        return (st.code().or(st.signal().map(|s| 128 + s)), false);
    }
    let pg = Pid::from_raw(child.id() as i32);
    let _ = killpg(pg, Signal::SIGTERM);
    for _ in 0..50 {
        if let Ok(Some(_)) = child.try_wait() {
            let _ = killpg(pg, Signal::SIGKILL);
            return (None, true);
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let _ = killpg(pg, Signal::SIGKILL);
    let _ = child.wait();
    (None, true)
}

/// Runs `sc` with `seed` in real time, carrying the real nodes' packets through its external flows.
/// `cancel` stops it (Ctrl-C); `progress` receives the model time. The namespaces are gone when this
/// returns, whatever it returns.
pub fn emulate(sc: &Scenario, seed: u64, cfg: &EmuConfig, cancel: &AtomicBool, progress: &AtomicU64) -> Result<EmuOutput, EmuError> {
    let (names, pairs) = real_nodes(sc)?;
    let mut sim = Sim::new(sc, seed);
    // Growing vectors copy themselves when they double: millisecond stalls once they hold ~10^5
    // packets. Reserve (virtual memory, touched as used) for a few million.
    sim.reserve_packets(RESERVE);
    let mut ports: HashMap<(usize, usize), Port> = HashMap::new();
    for (k, (flow, reverse)) in pairs {
        ports.insert(k, sim.port(&flow, reverse).expect("an external flow has ports"));
    }
    let cmd_node = match &cfg.command_node {
        None => 1.min(names.len() - 1),
        Some(n) => names.iter().position(|x| x == n).ok_or_else(|| {
            EmuError::Scenario(format!("--in {n}: not a real node (the endpoints of external flows: {})", names.join(", ")))
        })?,
    };
    // The control socket first: a bad path costs no namespace set-up.
    let control = cfg.control.as_deref().map(crate::control::Control::bind).transpose()?;
    let nodes = set_up(&names)?;
    let end = cfg.duration.map(|d| SimTime::ZERO + d).unwrap_or(sim.end()).min(sim.end());
    let pcaps = captures(cfg.pcap_dir.as_deref(), &nodes.info)?;
    let mut lp = Loop::new(&nodes, ports, cfg.spin, pcaps)?;
    if let Some(c) = &control {
        lp.epoll.add(c.listener(), EpollEvent::new(EpollFlags::EPOLLIN, CONTROL)).map_err(io)?;
    }
    lp.control = control;
    lp.rtp = rtp_flows(sc);
    lp.bypass = cfg.bypass.then(Clock::start).transpose()?;
    // Timer expirations on time, not up to 50 µs late (the default slack of a normal thread), and the
    // model thread ahead of the applications for the CPU (SCHED_FIFO; it sleeps in epoll between
    // wakeups, so it takes the CPU only while it has work).
    let _ = nix::sys::prctl::set_timerslack(1);
    let realtime = realtime_priority();
    let cpu_latency = hold_cpu_latency();
    let clock = Clock::start()?;
    let mut child = if cfg.command.is_empty() { None } else { Some(spawn(&cfg.command, &nodes.info[cmd_node], &nodes.info, cfg.command_stdout_to_stderr, cfg.control.as_deref())?) };
    let result = lp.run(&mut sim, &clock, end, &mut child, cancel, progress);
    if realtime {
        normal_priority();
    }
    let cpu_latency_held = cpu_latency.is_some();
    drop(cpu_latency);
    let (command_status, command_killed) = child.as_mut().map(stop).unwrap_or((None, false));
    let ended_at = result?;
    for c in &mut lp.pcaps {
        c.finish()?;
    }
    let out = EmuOutput {
        lag_ns: std::mem::take(&mut lp.lag_ns),
        inputs: std::mem::take(&mut lp.inputs),
        nodes: nodes.info.clone(),
        injected: lp.injected,
        written: lp.written,
        unmapped: lp.unmapped,
        write_failures: lp.write_failures,
        ended_at,
        command_status,
        command_killed,
        realtime,
        cpu_latency_held,
        commands: sim.stepped_commands().to_vec(),
        rtp: serde_json::Value::Object(lp.rtp.iter().map(|(f, r)| (sc.flows[*f as usize].common().name.unwrap_or("").to_string(), r.stats())).collect()),
        run: sim.finish(),
    };
    drop(lp);
    drop(nodes);
    Ok(out)
}

/// The loop's state: devices, ports, packets in the model, counters.
struct Loop<'a> {
    tuns: &'a [Tun],
    addrs: Vec<Ipv4Addr>,
    ports: HashMap<(usize, usize), Port>,
    /// Packets inside the model: id → (bytes, destination node, injection time).
    inside: HashMap<u64, (Vec<u8>, usize, SimTime)>,
    epoll: Epoll,
    timer: TimerFd,
    spin: SimDuration,
    buf: Vec<u8>,
    /// Relay mode (`EmuConfig::bypass`), with its clock, and when the packet being relayed was read.
    bypass: Option<Clock>,
    read_at: SimTime,
    /// Per real node, its capture (`EmuConfig::pcap_dir`), and the epoch time of model time zero.
    pcaps: Vec<Capture>,
    epoch0: std::time::Duration,
    pub lag_ns: Vec<(u64, u64)>,
    pub inputs: Vec<Input>,
    /// Per flow with `rtp` (by index): its RTP state.
    rtp: HashMap<u32, RtpFlow>,
    /// The control socket, and whether epoll saw it (or one of its connections) readable.
    control: Option<crate::control::Control>,
    control_ready: bool,
    pub injected: u64,
    pub written: u64,
    pub unmapped: u64,
    pub write_failures: u64,
}

const TIMER: u64 = u64::MAX;
/// The epoll key of the control socket and its connections.
pub(crate) const CONTROL: u64 = u64::MAX - 1;
/// Packets the logs are reserved for up front.
const RESERVE: usize = 1 << 22;
/// A packet the model has held this long was dropped in it (its bytes are forgotten).
const FORGET_AFTER: SimDuration = SimDuration::from_secs(60);

impl<'a> Loop<'a> {
    fn new(nodes: &'a Nodes, ports: HashMap<(usize, usize), Port>, spin: SimDuration, pcaps: Vec<Capture>) -> Result<Self, EmuError> {
        let epoll = Epoll::new(EpollCreateFlags::EPOLL_CLOEXEC).map_err(io)?;
        let timer = TimerFd::new(ClockId::CLOCK_MONOTONIC, TimerFlags::TFD_NONBLOCK | TimerFlags::TFD_CLOEXEC).map_err(io)?;
        for (k, t) in nodes.tuns.iter().enumerate() {
            epoll.add(&t.dev, EpollEvent::new(EpollFlags::EPOLLIN, k as u64)).map_err(io)?;
        }
        epoll.add(&timer, EpollEvent::new(EpollFlags::EPOLLIN, TIMER)).map_err(io)?;
        Ok(Loop {
            tuns: &nodes.tuns,
            addrs: nodes.info.iter().map(|n| n.addr).collect(),
            ports,
            inside: HashMap::new(),
            epoll,
            timer,
            spin,
            buf: vec![0; 65536],
            bypass: None,
            read_at: SimTime::ZERO,
            pcaps,
            epoch0: std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default(),
            lag_ns: Vec::with_capacity(RESERVE),
            inputs: Vec::with_capacity(RESERVE),
            rtp: HashMap::new(),
            control: None,
            control_ready: false,
            injected: 0,
            written: 0,
            unmapped: 0,
            write_failures: 0,
        })
    }
}

impl Loop<'_> {
    /// Runs until `end`, the command's exit, or `cancel`; returns the model time it stopped at.
    fn run(&mut self, sim: &mut Sim, clock: &Clock, end: SimTime, child: &mut Option<Child>, cancel: &AtomicBool, progress: &AtomicU64) -> Result<SimTime, EmuError> {
        let mut next_check = SimTime::ZERO;
        loop {
            let now = clock.now();
            if now >= end || cancel.load(Ordering::Relaxed) {
                sim.advance_to(now.min(end));
                self.write_egress(sim, clock);
                return Ok(now.min(end));
            }
            if now >= next_check {
                next_check = now + SimDuration::from_ms(10);
                // Served at least this often, even while packets keep the loop from epoll.
                self.control_ready |= self.control.is_some();
                progress.store(now.as_ns(), Ordering::Relaxed);
                if let Some(c) = child {
                    if c.try_wait().map_err(io)?.is_some() {
                        sim.advance_to(now);
                        self.write_egress(sim, clock);
                        return Ok(now);
                    }
                }
                self.forget(now);
            }
            sim.advance_to(now);
            self.write_egress(sim, clock);
            if self.read_all(sim)? > 0 {
                continue; // what was injected may be due at once
            }
            let next = sim.next_wakeup().unwrap_or(end).min(end).min(next_check);
            let now = clock.now();
            if next <= now {
                continue;
            }
            if next - now <= self.spin {
                // Only look for input here: a packet read now must enter the model at the time it was read,
                // which the loop's top brings the model to first.
                while clock.now() < next && !self.readable()? {
                    std::hint::spin_loop();
                }
                continue;
            }
            self.wait(clock, next - self.spin)?;
        }
    }

    /// Sleeps in epoll until a device is readable or `until` (absolute `timerfd`).
    fn wait(&mut self, clock: &Clock, until: SimTime) -> Result<(), EmuError> {
        let ts = clock.at(until);
        self.timer.set(Expiration::OneShot(ts), TimerSetTimeFlags::TFD_TIMER_ABSTIME).map_err(io)?;
        let mut events = [EpollEvent::empty(); 16];
        match self.epoll.wait(&mut events, 1000u16) {
            Ok(n) => self.control_ready |= events[..n].iter().any(|e| e.data() == CONTROL),
            Err(nix::errno::Errno::EINTR) => {}
            Err(e) => return Err(io(e)),
        }
        let _ = self.timer.unset();
        Ok(())
    }

    /// Whether a device (or the control socket) has something to read (without waiting).
    fn readable(&mut self) -> Result<bool, EmuError> {
        let mut events = [EpollEvent::empty(); 16];
        match self.epoll.wait(&mut events, 0u16) {
            Ok(n) => {
                self.control_ready |= events[..n].iter().any(|e| e.data() == CONTROL);
                Ok(events[..n].iter().any(|e| e.data() != TIMER))
            }
            Err(nix::errno::Errno::EINTR) => Ok(false),
            Err(e) => Err(io(e)),
        }
    }

    /// Serves the control socket if it has something (first: a command acts before the packets read
    /// at the same model time, as a replay's scheduled command does), then reads every packet waiting
    /// on every device and hands each to the model; returns how many.
    fn read_all(&mut self, sim: &mut Sim) -> Result<usize, EmuError> {
        if std::mem::take(&mut self.control_ready) {
            if let Some(c) = self.control.as_mut() {
                c.serve(sim, &self.epoll)?;
            }
        }
        let mut n = 0;
        for k in 0..self.tuns.len() {
            loop {
                let len = match self.tuns[k].dev.recv(&mut self.buf) {
                    Ok(len) => len,
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(e) => return Err(io(format!("reading {}: {e}", self.tuns[k].name))),
                };
                n += 1;
                if let Some(clock) = &self.bypass {
                    self.read_at = clock.now();
                }
                if let Some(c) = self.pcaps.get_mut(k) {
                    c.write(self.epoch0 + std::time::Duration::from_nanos(sim.now().as_ns()), &self.buf[..len], len as u32);
                }
                self.inject(sim, k, len);
            }
        }
        Ok(n)
    }

    /// Hands the IPv4 packet in `buf[..len]`, read from node `from`, to the model at the port of the
    /// flow between `from` and its destination.
    fn inject(&mut self, sim: &mut Sim, from: usize, len: usize) {
        let bytes = &self.buf[..len];
        let Ok(h) = etherparse::Ipv4HeaderSlice::from_slice(bytes) else {
            self.unmapped += 1;
            return;
        };
        let Some(to) = self.addrs.iter().position(|&a| a == h.destination_addr()) else {
            self.unmapped += 1;
            return;
        };
        let Some(&port) = self.ports.get(&(from, to)) else {
            self.unmapped += 1;
            return;
        };
        if let Some(clock) = &self.bypass {
            // The time this process held the packet: from parsing it to writing it (the kernel's own
            // processing of the write is not the emulator's).
            let held = clock.now().saturating_since(self.read_at).as_ns();
            if self.tuns[to].dev.send(bytes).is_ok() {
                self.written += 1;
                self.lag_ns.push((u64::MAX, held));
            } else {
                self.write_failures += 1;
            }
            return;
        }
        let dscp = h.dcp().value();
        let tcp = tcp_fields(bytes, &h);
        let mut rtp = self.rtp.get_mut(&port.flow).and_then(|f| f.read(bytes, port.reverse));
        let mut result = sim.inject(port, Injected { size: len as u32, dscp: Some(dscp), tcp, rtp: rtp.clone() });
        if let Err(InjectError::BadTwcc(_)) = result {
            // Malformed feedback goes on as plain RTCP (the sender sees what the receiver sent).
            rtp = Some(InjectedRtp::Rtcp { twcc: None });
            result = sim.inject(port, Injected { size: len as u32, dscp: Some(dscp), tcp, rtp: rtp.clone() });
        }
        match result {
            Ok(id) => {
                self.inputs.push(Input { at: sim.now(), port, size: len as u32, dscp, tcp, rtp });
                self.inside.insert(id, (bytes.to_vec(), to, sim.now()));
                self.injected += 1;
            }
            Err(_) => self.unmapped += 1,
        }
    }

    /// Writes every packet the model delivered to its destination's device, noting its lag.
    fn write_egress(&mut self, sim: &mut Sim, clock: &Clock) {
        for e in sim.drain_egress() {
            let rtp = self.rtp.get_mut(&e.flow);
            let (bytes, to) = match (self.inside.remove(&e.id), rtp, &e.rtcp) {
                // A mechanism took the transport-cc feedback out of the receiver's RTCP.
                (Some((bytes, to, _)), Some(f), Some(Rtcp { for_cc: false, .. })) => match f.strip(&bytes) {
                    Some(b) => (b, to),
                    None => continue,
                },
                (Some((bytes, to, _)), _, _) => (bytes, to),
                // Feedback a mechanism made, to the sender.
                (None, Some(f), Some(Rtcp { body: RtcpBody::Twcc(fb), .. })) => {
                    let Some(b) = f.feedback_packet(fb) else { continue };
                    let Some(to) = self.addrs.iter().position(|a| a.octets() == b[16..20]) else { continue };
                    (b, to)
                }
                (None, _, _) => continue,
            };
            let now = clock.now();
            let lag = now.saturating_since(e.delivered).as_ns();
            match self.tuns[to].dev.send(&bytes) {
                Ok(_) => {
                    self.written += 1;
                    self.lag_ns.push((e.id, lag));
                    if let Some(c) = self.pcaps.get_mut(to) {
                        c.write(self.epoch0 + std::time::Duration::from_nanos(now.as_ns()), &bytes, bytes.len() as u32);
                    }
                }
                Err(_) => self.write_failures += 1,
            }
        }
    }

    /// Forgets the bytes of packets the model has held for longer than any queue would: it dropped them.
    fn forget(&mut self, now: SimTime) {
        if self.inside.len() > 1024 {
            self.inside.retain(|_, (_, _, t)| now.saturating_since(*t) < FORGET_AFTER);
        }
    }
}

/// A capture per real node in `dir` (none without one): whole packets.
fn captures(dir: Option<&std::path::Path>, nodes: &[RealNode]) -> Result<Vec<Capture>, EmuError> {
    let Some(dir) = dir else { return Ok(Vec::new()) };
    nodes.iter().map(|n| Capture::create(dir.join(format!("{}.pcap", slug(&n.name))), 65535)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scenario(flows: &str) -> Scenario {
        let json = format!(
            r#"{{"duration_s": 5, "servers": [{{"name": "srv"}}],
                "aps": [{{"name": "ap", "last_hop": {{"type": "wired", "rate_mbps": 10, "delay_ms": 1}}}}],
                "stations": [{{"name": "a"}}, {{"name": "b"}}],
                "links": [{{"a": "srv", "b": "ap", "rate_mbps": 100, "delay_ms": 1}}],
                "flows": [{flows}]}}"#
        );
        Scenario::from_json_str(&json, std::path::Path::new(".")).expect("valid")
    }

    #[test]
    fn real_nodes_are_the_external_flows_ends_and_each_pair_has_one_port() {
        let sc = scenario(
            r#"{"type": "udp_cbr", "from": "srv", "to": "a", "rate_mbps": 1},
               {"name": "x", "type": "external", "from": "srv", "to": "b"},
               {"type": "external", "from": "a", "to": "srv"}"#,
        );
        let (names, ports) = real_nodes(&sc).unwrap();
        assert_eq!(names, ["srv", "b", "a"], "in flow order; modelled flows' ends are not real");
        assert_eq!(ports[&(0, 1)], ("x".to_string(), false));
        assert_eq!(ports[&(1, 0)], ("x".to_string(), true));
        assert_eq!(ports[&(2, 0)], ("flow2".to_string(), false));
        assert_eq!(ports[&(0, 2)], ("flow2".to_string(), true));
        assert!(!ports.contains_key(&(1, 2)), "no flow between b and a: their packets are not carried");
    }

    #[test]
    fn a_scenario_without_external_flows_says_how_to_add_one() {
        let sc = scenario(r#"{"type": "udp_cbr", "from": "srv", "to": "a", "rate_mbps": 1}"#);
        let e = real_nodes(&sc).unwrap_err().to_string();
        assert!(e.contains("no `external` flow") && e.contains("type = \"external\""), "{e}");
    }

    #[test]
    fn namespace_names_are_safe() {
        assert_eq!(slug("Living Room/TV"), "living-room-tv");
        assert!(slug(&"x".repeat(50)).len() <= 20);
    }
}
