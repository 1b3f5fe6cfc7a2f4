//! LAST-PQ's latency-aware scheduler (spec §12, §14, §15) as the Linux driver's policy: prioritized
//! flows get flow queues of their own; at each scheduling opportunity of an AC the throttler marks a
//! backlogged prioritized flow urgent when the software queueing it already suffered plus the hardware
//! queueing still to come exceeds its permitted delay l_pq; the TXQ with an urgent flow and the greatest
//! airtime deficit is served ahead of the TXQ scheduler, its urgent flows first (greatest byte deficit
//! first), topped up in FQ order. While a prioritized flow of an AC is active, PSDUs of the other TXQs
//! are capped in airtime.

use super::controller::{ControllerParams, Demand, DelayController};
use super::drain::DrainEstimator;
use super::params::{LastPqParams, LpqSource};
use std::collections::VecDeque;
use crate::mac::txpath::driver::{DriverPolicy, DriverView, HwEnqueue};
use crate::mac::txpath::gate::TxEvent;
use crate::packet::Packet;
use crate::time::{SimDuration, SimTime};
use serde_json::{json, Map, Value};

/// The initial T_ctt of each AC (VO, VI, BE, BK), µs: AIFS + CWmin·slot/2 with the default EDCA
/// parameters and the 9 µs slot and 16 µs SIFS of 5 GHz ([LH]).
pub const T_CTT0_US: [f64; 4] = [34.0 + 3.0 * 4.5, 34.0 + 7.0 * 4.5, 43.0 + 15.0 * 4.5, 79.0 + 15.0 * 4.5];

/// One prioritized flow.
#[derive(Debug)]
struct PrioFlow {
    name: String,
    /// Index in the scenario's flows.
    index: u32,
    ctrl: DelayController,
    /// Its TXQ (station link, AC), once a packet arrived.
    txq: Option<(usize, usize)>,
    last_enqueue: Option<SimTime>,
    urgent: bool,
    priority_dequeues: u64,
    normal_dequeues: u64,
    /// With `lpq_source = "head_packet"`: (enqueue time, l_pq µs marked then) of the packets queued,
    /// oldest first (packets leave the flow queue in order, so the head's is the first not older
    /// than the head's enqueue time).
    marks: VecDeque<(SimTime, u64)>,
    /// Its packets dropped at the AP's MAC (TXQ or driver).
    drops: u64,
}

/// Counters for `summary.json`.
#[derive(Clone, Copy, Debug, Default, serde::Serialize)]
pub struct LastPqStats {
    /// Scheduling opportunities seen, and those taken by the priority path.
    pub opportunities: u64,
    pub priority_opportunities: u64,
}

/// LAST-PQ at one AP.
#[derive(Debug)]
pub struct LastPqPolicy {
    flows: Vec<PrioFlow>,
    /// The flows that may be prioritized at run time (`add_flows`): name and scenario index of each
    /// flow that ends at one of this AP's stations.
    eligible: Vec<(String, u32)>,
    controller: ControllerParams,
    drain: DrainEstimator,
    agg_cap: Option<SimDuration>,
    active: SimDuration,
    count_drops_as_inf: bool,
    lpq_source: LpqSource,
    urgent_retries: bool,
    stats: LastPqStats,
}

impl LastPqPolicy {
    /// The policy for `p`'s flows, `indices[i]` being the scenario index of `p.flows[i]`; `eligible`
    /// lists the flows (name, scenario index) that `add_flows` may prioritize later.
    pub fn new(p: &LastPqParams, indices: &[u32], eligible: Vec<(String, u32)>) -> Self {
        let c = p.controller();
        let flows = p
            .flows
            .iter()
            .zip(indices)
            .map(|(d, &index)| PrioFlow::new(d.flow.clone(), index, DelayController::new(c, Demand { ms: d.demand_ms, percentile: d.percentile }, SimTime::ZERO)))
            .collect();
        let us = |x: f64| SimDuration::from_ns((x * 1e3).round() as u64);
        LastPqPolicy {
            flows,
            eligible,
            controller: c,
            drain: DrainEstimator::new(p.t_ctt_weight, us(p.guard_ms * 1e3), T_CTT0_US),
            agg_cap: (p.agg_cap_nonprio_us > 0.0).then(|| us(p.agg_cap_nonprio_us)),
            active: us(p.active_ms * 1e3),
            count_drops_as_inf: p.count_drops_as_inf,
            lpq_source: p.lpq_source,
            urgent_retries: p.urgent_retries,
            stats: LastPqStats::default(),
        }
    }

    fn flow_mut(&mut self, index: u32) -> Option<&mut PrioFlow> {
        self.flows.iter_mut().find(|f| f.index == index)
    }

    /// The throttler (§14.1): recomputes the urgent flag of every prioritized flow of AC `ac`. With a
    /// release gate (QAir) on the node, l_hq adds the gate's expected hold of a new PSDU (§17.6).
    fn refresh(&mut self, now: SimTime, ac: usize, view: &dyn DriverView) {
        let l_hq_ns = (self.drain.l_hq_us(ac) * 1e3) as u64 + view.gate_hold().as_ns();
        for f in self.flows.iter_mut().filter(|f| f.txq.is_some_and(|(_, a)| a == ac)) {
            let (txq, _) = f.txq.expect("filtered");
            let queued = view.flow_head(f.index, txq, ac).and_then(|(n, head, _)| head.filter(|_| n > 0));
            let retry = if self.urgent_retries { view.flow_retry_head(f.index, txq, ac) } else { None };
            let head = queued.into_iter().chain(retry).min();
            let l_pq_us = match self.lpq_source {
                LpqSource::Flow => f.ctrl.l_pq_us(now),
                // Marks are of the packets in FQ: the FQ head's (a retry's was read when it was the head).
                LpqSource::HeadPacket => f.head_mark(queued).unwrap_or_else(|| f.ctrl.l_pq_us(now)),
            };
            f.urgent = head.is_some_and(|h| now.saturating_since(h).as_ns() + l_hq_ns > l_pq_us * 1000);
        }
    }
}

impl PrioFlow {
    fn new(name: String, index: u32, ctrl: DelayController) -> Self {
        PrioFlow { name, index, ctrl, txq: None, last_enqueue: None, urgent: false, priority_dequeues: 0, normal_dequeues: 0, marks: VecDeque::new(), drops: 0 }
    }

    /// The l_pq marked on the head packet (enqueued at `head`): marks of packets that left are
    /// forgotten; none left when the queue is empty.
    fn head_mark(&mut self, head: Option<SimTime>) -> Option<u64> {
        let Some(h) = head else {
            self.marks.clear();
            return None;
        };
        while self.marks.front().is_some_and(|&(t, _)| t < h) {
            self.marks.pop_front();
        }
        self.marks.front().map(|&(_, l_pq)| l_pq)
    }
}

impl DriverPolicy for LastPqPolicy {
    fn dedicated(&self, flow: u32) -> bool {
        self.flows.iter().any(|f| f.index == flow)
    }

    fn on_enqueue(&mut self, now: SimTime, pkt: &Packet, txq: usize, ac: usize) {
        let marks = self.lpq_source == LpqSource::HeadPacket;
        if let Some(f) = self.flow_mut(pkt.flow) {
            f.txq = Some((txq, ac));
            f.last_enqueue = Some(now);
            if marks {
                let l_pq = f.ctrl.l_pq_us(now);
                f.marks.push_back((now, l_pq));
            }
        }
    }

    fn priority_txq(&mut self, now: SimTime, ac: usize, view: &dyn DriverView) -> Option<usize> {
        self.stats.opportunities += 1;
        self.refresh(now, ac, view);
        // The TXQ with an urgent flow and the greatest airtime deficit; ties: the first listed.
        let mut best: Option<(usize, i64)> = None;
        for f in self.flows.iter().filter(|f| f.urgent) {
            let (txq, _) = f.txq.expect("urgent flows have a TXQ");
            let d = view.txq_deficit(txq, ac);
            if best.is_none_or(|(_, bd)| d > bd) {
                best = Some((txq, d));
            }
        }
        self.stats.priority_opportunities += best.is_some() as u64;
        best.map(|(t, _)| t)
    }

    fn priority_flow(&mut self, _now: SimTime, txq: usize, ac: usize, view: &dyn DriverView) -> Option<u32> {
        let mut best: Option<(u32, i64)> = None;
        for f in self.flows.iter().filter(|f| f.urgent && f.txq == Some((txq, ac))) {
            let Some((n, _, deficit)) = view.flow_head(f.index, txq, ac) else { continue };
            if n > 0 && best.is_none_or(|(_, bd)| deficit > bd) {
                best = Some((f.index, deficit));
            }
        }
        best.map(|(i, _)| i)
    }

    fn on_dequeue(&mut self, _now: SimTime, pkt: &Packet, priority: bool) {
        if let Some(f) = self.flow_mut(pkt.flow) {
            if priority { f.priority_dequeues += 1 } else { f.normal_dequeues += 1 }
        }
    }

    fn aggregation_cap(&self, now: SimTime, txq: usize, ac: usize) -> Option<SimDuration> {
        let cap = self.agg_cap?;
        let mine = |f: &&PrioFlow| f.txq.is_some_and(|(_, a)| a == ac);
        let active = self.flows.iter().filter(mine).any(|f| f.last_enqueue.is_some_and(|t| now.saturating_since(t) <= self.active));
        // TXQs in the prioritized TID list (with a prioritized flow) are not capped.
        let prioritized = self.flows.iter().filter(mine).any(|f| f.txq == Some((txq, ac)));
        (active && !prioritized).then_some(cap)
    }

    fn on_hw_enqueue(&mut self, now: SimTime, psdu: &HwEnqueue) {
        self.drain.on_enqueue(now, psdu.ac, psdu.air, psdu.mac);
    }

    fn on_tx_event(&mut self, now: SimTime, ev: &TxEvent) {
        if let TxEvent::Complete { ac, success, .. } = *ev {
            self.drain.on_done(now, ac, success);
        }
    }

    fn on_acked(&mut self, now: SimTime, pkt: &Packet) {
        if let Some(f) = self.flow_mut(pkt.flow) {
            f.ctrl.on_sample(now, now.saturating_since(pkt.enqueued).as_ns());
        }
    }

    fn on_dropped(&mut self, now: SimTime, pkt: &Packet) {
        let as_inf = self.count_drops_as_inf;
        if let Some(f) = self.flow_mut(pkt.flow) {
            f.drops += 1;
            if as_inf {
                f.ctrl.on_drop(now);
            }
        }
    }

    /// `add_flows = [{ flow, demand_ms, percentile }]`, `demand_ms = { <flow> = ms }`, `percentile = {
    /// <flow> = β }` (resolved against the scenario and the commands before).
    fn on_command(&mut self, now: SimTime, set: &Map<String, Value>) -> Result<(), (String, String)> {
        // Flows added first, so that the same command may set their demands too.
        if let Some(list) = set.get("add_flows") {
            let list = list.as_array().ok_or_else(|| ("add_flows".to_string(), "must be a list of { flow, demand_ms, percentile }".to_string()))?;
            for (i, v) in list.iter().enumerate() {
                let at = |k: &str| format!("add_flows.{i}.{k}");
                let d: super::params::FlowDemand = serde_json::from_value(v.clone()).map_err(|e| (format!("add_flows.{i}"), e.to_string()))?;
                super::params::check_demand(&self.controller, d.demand_ms, d.percentile).map_err(|(k, r)| (at(k), r))?;
                if self.flows.iter().any(|f| f.name == d.flow) {
                    return Err((at("flow"), format!("'{}' is prioritized already", d.flow)));
                }
                let &(_, index) = self.eligible.iter().find(|(n, _)| *n == d.flow).ok_or_else(|| (at("flow"), format!("'{}' does not end at a station of this AP", d.flow)))?;
                // Its controller starts its windows now; its packets take a flow queue of their own once
                // its hashed one holds none of them (the Linux path keeps them in order).
                self.flows.push(PrioFlow::new(d.flow, index, DelayController::new(self.controller, Demand { ms: d.demand_ms, percentile: d.percentile }, now)));
            }
        }
        for (key, table) in set.iter().filter(|(k, _)| *k != "add_flows") {
            let Some(table) = table.as_object() else { return Err((key.clone(), "must be a table of flow name = value".into())) };
            for (name, v) in table {
                let at = format!("{key}.{name}");
                let f = self.flows.iter_mut().find(|f| f.name == *name).ok_or_else(|| (at.clone(), format!("'{name}' is not a prioritized flow")))?;
                let x = v.as_f64().ok_or_else(|| (at.clone(), format!("must be a number, got {v}")))?;
                let mut d = f.ctrl.demand();
                match key.as_str() {
                    "demand_ms" => d.ms = x,
                    "percentile" => d.percentile = x,
                    _ => return Err((key.clone(), "unknown key; LAST-PQ takes add_flows, demand_ms, percentile".into())),
                }
                f.ctrl.set_demand(now, d);
            }
        }
        Ok(())
    }

    fn stats(&self) -> Value {
        let flows: Vec<Value> = self
            .flows
            .iter()
            .map(|f| {
                let h = &f.ctrl.history;
                let d = f.ctrl.demand();
                json!({
                    "flow": f.name, "demand_ms": d.ms, "percentile": d.percentile,
                    "l_pq_us": h.last().map(|x| x.2), "windows": h.len(),
                    "windows_above": h.iter().filter(|x| x.3 > 0).count(),
                    "windows_below": h.iter().filter(|x| x.3 < 0).count(),
                    "priority_dequeues": f.priority_dequeues, "normal_dequeues": f.normal_dequeues,
                    "drops": f.drops,
                })
            })
            .collect();
        json!({ "type": "lastpq", "counters": self.stats, "t_ctt_us": (0..4).map(|ac| self.drain.t_ctt_us(ac)).collect::<Vec<_>>(), "flows": flows })
    }
}
