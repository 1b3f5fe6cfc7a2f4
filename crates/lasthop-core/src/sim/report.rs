//! What a finished run reports: flow metrics, RTT and frame series, component counters.

use super::endpoints::SourceKind;
use super::open::RunOutput;
use super::world::World;
use crate::time::SimTime;

impl World {
    pub(super) fn finish(mut self) -> RunOutput {
        self.video_reports();
        let (rtt, frames) = self.series();
        let flows = self.trackers.iter_mut().map(|t| t.summarize()).collect();
        RunOutput {
            flows,
            components: self.components(),
            events: self.q.events_processed(),
            event_digest: self.digest,
            sim_end: self.end,
            packets: self.log,
            rtt,
            frames,
        }
    }

    /// Hands each video flow's RTT samples and quality report to its tracker.
    fn video_reports(&mut self) {
        for (s, tr) in self.sources.iter().zip(self.trackers.iter_mut()) {
            if let SourceKind::Rtc(r) = &s.kind {
                let rtt: Vec<(SimTime, crate::time::SimDuration)> = r.session.samples.rtt.clone();
                for (at, v) in rtt {
                    tr.on_rtt(at, v);
                }
                let frame_bytes = r.session.samples.frames.iter().filter(|(t, _)| *t >= tr.measure_from && *t < tr.measure_to).map(|f| f.1).sum();
                tr.video = Some((r.session.report(r.deadline), frame_bytes));
            }
            if let SourceKind::Tcp(t) = &s.kind {
                if let Some(v) = &t.video {
                    let frame_bytes = v.sender.frames.iter().filter(|(c, _)| *c >= tr.measure_from && *c < tr.measure_to).map(|f| f.1).sum();
                    tr.video = Some((v.receiver.quality.report(v.deadline), frame_bytes));
                }
            }
        }
    }

    /// Every RTT sample and every video frame of every flow.
    fn series(&self) -> (crate::stats::RttSeries, crate::stats::FrameSeries) {
        let mut rtt = crate::stats::RttSeries::default();
        let mut frames = crate::stats::FrameSeries::default();
        for (i, (s, tr)) in self.sources.iter().zip(&self.trackers).enumerate() {
            let i = i as u32;
            for &(t, v) in &tr.rtt_series {
                rtt.push(i, t, v);
            }
            let mut log: Vec<(u64, SimTime, SimTime, bool)> = Vec::new();
            match &s.kind {
                SourceKind::Rtc(r) => {
                    let smp = &r.session.samples;
                    log.extend(r.session.quality.decoded_log.iter().map(|&(id, c, d)| (id, c, d, false)));
                    log.extend(smp.dropped.iter().filter_map(|&(id, at)| smp.frames.get(id as usize).map(|f| (id, f.0, at, true))));
                }
                SourceKind::Tcp(t) => {
                    if let Some(v) = &t.video {
                        log.extend(v.receiver.quality.decoded_log.iter().map(|&(id, c, d)| (id, c, d, false)));
                    }
                }
                _ => {}
            }
            log.sort_by_key(|x| x.0);
            for (id, c, d, dropped) in log {
                frames.push(i, id, c, d, dropped);
            }
        }
        (rtt, frames)
    }

    /// Per-component counters for `summary.json`.
    fn components(&self) -> serde_json::Value {
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
            .filter_map(|(s, tr)| match &s.kind {
                SourceKind::Tcp(t) => Some(serde_json::json!({
                    "flow": tr.name,
                    "sender": t.sender.stats(),
                    "goodput_bytes": t.receiver.delivered_bytes,
                })),
                SourceKind::Rtc(r) => Some(serde_json::json!({ "flow": tr.name, "rtc": r.session.stats() })),
                _ => None,
            })
            .collect();
        serde_json::json!({
            "links": links,
            "wifi": wifi,
            "transports": transports,
            "mechanisms": self.mechs.list.iter().map(|m| m.stats()).collect::<Vec<_>>(),
        })
    }
}
