//! What a finished run reports: flow metrics, RTT and frame series, component counters.

use super::open::RunOutput;
use super::world::World;
use crate::time::SimTime;

impl World {
    /// The run's results up to `stop` (the model's time: the end of the run, or earlier for a stepped
    /// run or an emulation that stopped before it): rates are over the measured time up to `stop`.
    pub(super) fn finish(mut self, stop: SimTime) -> RunOutput {
        let stop = stop.min(self.end);
        for t in &mut self.trackers {
            t.measure_to = t.measure_to.min(stop);
        }
        self.video_reports();
        let (rtt, frames) = self.series();
        let flows = self.trackers.iter_mut().map(|t| t.summarize()).collect();
        let (tx, tx_links) = match self.medium.as_mut() {
            Some(m) => (std::mem::take(&mut m.tx_log), m.link_names()),
            None => Default::default(),
        };
        RunOutput {
            tx,
            tx_links,
            flows,
            components: self.components(),
            events: self.q.events_processed(),
            event_digest: self.digest,
            sim_end: stop,
            packets: self.log,
            rtt,
            frames,
        }
    }

    /// Hands each flow's end-of-run measurements (a call's RTT samples, video quality) to its tracker.
    fn video_reports(&mut self) {
        for (s, tr) in self.sources.iter_mut().zip(self.trackers.iter_mut()) {
            s.host.as_mut().expect("no host runs after the run").finish(tr);
        }
    }

    /// The RTT samples of every flow taken before `before` and not taken out yet, in time order (flow
    /// order among samples of one instant). Samples are taken at their own time, so the samples left
    /// all come later: chunks taken as a run goes concatenate to the order of a run that kept them.
    pub(super) fn take_rtt(&mut self, before: SimTime) -> crate::stats::RttSeries {
        let mut rows: Vec<(SimTime, u32, u64)> = Vec::new();
        for (i, tr) in self.trackers.iter_mut().enumerate() {
            let n = tr.rtt_series.partition_point(|&(t, _)| t < before);
            rows.extend(tr.rtt_series.drain(..n).map(|(t, v)| (t, i as u32, v)));
        }
        rows.sort_by_key(|&(t, flow, _)| (t, flow));
        let mut rtt = crate::stats::RttSeries::default();
        for (t, flow, v) in rows {
            rtt.push(flow, t, v);
        }
        rtt
    }

    /// Every RTT sample and every video frame of every flow not taken out yet.
    fn series(&mut self) -> (crate::stats::RttSeries, crate::stats::FrameSeries) {
        let rtt = self.take_rtt(SimTime::MAX);
        let mut frames = std::mem::take(&mut self.frame_rows);
        frames.append(self.take_frames(SimTime::MAX));
        (rtt, frames)
    }

    /// The video frames of every flow that ended before `before` and were not taken out yet, in the
    /// order they ended (flow order among frames of one instant). Frames end at their own time, so
    /// chunks taken as a run goes concatenate to the order of a run that kept them.
    pub(super) fn take_frames(&mut self, before: SimTime) -> crate::stats::FrameSeries {
        let mut rows: Vec<(u32, crate::host::FrameRecord)> = Vec::new();
        for (i, s) in self.sources.iter_mut().enumerate() {
            if let Some(h) = s.host.as_mut() {
                rows.extend(h.take_frames(before).into_iter().map(|f| (i as u32, f)));
            }
        }
        rows.sort_by_key(|&(flow, f)| (f.2, flow));
        let mut frames = crate::stats::FrameSeries::default();
        for (flow, (id, c, d, dropped)) in rows {
            frames.push(flow, id, c, d, dropped);
        }
        frames
    }

    /// What actually ran, per node: each Wi-Fi node's transmit path, queues and per-link rate control
    /// (as built, whatever the scenario said), and the mechanisms installed on it; APs without Wi-Fi
    /// that run mechanisms too.
    fn setup(&self) -> Vec<serde_json::Value> {
        let mechanisms = |node: &str| self.installed.iter().find(|(n, _)| n == node).map_or(serde_json::json!([]), |(_, m)| serde_json::json!(m));
        let mut nodes = self.medium.as_ref().map(|m| m.setup()).unwrap_or_default();
        for n in &mut nodes {
            n["mechanisms"] = mechanisms(n["node"].as_str().unwrap_or_default());
        }
        for (name, m) in &self.installed {
            if !nodes.iter().any(|n| n["node"] == name.as_str()) {
                nodes.push(serde_json::json!({"node": name, "is_ap": true, "path": "wired", "queues": "", "links": [], "mechanisms": m}));
            }
        }
        nodes
    }

    /// Per-component counters for `summary.json`.
    pub(super) fn components(&self) -> serde_json::Value {
        let links: Vec<serde_json::Value> = self
            .pipes
            .iter()
            .map(|p| {
                serde_json::json!({
                    "link": p.name,
                    "queue": p.queue.stats(),
                    "utilization": p.busy_ns as f64 / self.end.as_ns().max(1) as f64,
                })
            })
            .collect();
        let wifi = self.medium.as_ref().map(|m| m.stats());
        let transports: Vec<serde_json::Value> = self
            .sources
            .iter()
            .zip(&self.trackers)
            .filter_map(|(s, tr)| {
                let stats = s.host.as_ref()?.stats()?;
                let mut m = serde_json::Map::new();
                m.insert("flow".into(), tr.name.clone().into());
                m.extend(stats.as_object().cloned().unwrap_or_default());
                Some(serde_json::Value::Object(m))
            })
            .collect();
        serde_json::json!({
            "setup": self.setup(),
            "links": links,
            "wifi": wifi,
            "transports": transports,
            "mechanisms": self.mechs.list.iter().map(|m| m.stats()).collect::<Vec<_>>(),
        })
    }
}
