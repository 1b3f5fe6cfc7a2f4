//! Delivery-rate estimation, after Linux `net/ipv4/tcp_rate.c` and draft-cheng-iccrg-delivery-rate-
//! estimation-02, in bytes rather than packets.
//!
//! The transport keeps one [`DeliveryRateEstimator`] per connection and one [`PacketDeliveryState`]
//! per packet in flight (returned by [`DeliveryRateEstimator::on_sent`]). When an ACK newly
//! acknowledges packets, [`DeliveryRateEstimator::on_ack`] turns their states into one
//! [`RateSample`]: the bytes delivered between the send of the most recently sent of them and now,
//! over the longer of the send and ACK intervals of that flight (so neither ACK compression nor a
//! sender burst inflates the rate). The sample goes into [`AckEvent::rate`](super::AckEvent).
//!
//! App-limited bubbles (`tcp_rate_check_app_limited`): when the application leaves the window unused,
//! the transport calls [`DeliveryRateEstimator::on_app_limited`]; packets sent until the data in
//! flight at that moment is delivered are marked, and their samples carry `is_app_limited`.
//!
//! Choice where the sources differ: a sample whose interval is shorter than the minimum RTT is invalid
//! (`tcp_rate_gen`), so callers pass their min RTT; `None` skips the check.

use super::rate_bps;
use crate::time::{SimDuration, SimTime};
use crate::units::BitRate;

/// What a packet remembers about the connection when it is sent (Linux `tcp_skb_cb.tx`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PacketDeliveryState {
    /// Bytes delivered on the connection when the packet was sent.
    pub delivered: u64,
    /// When that count was last increased.
    pub delivered_time: SimTime,
    /// Send time of the first packet of the flight this one belongs to.
    pub first_sent_time: SimTime,
    /// Its own send time.
    pub sent_time: SimTime,
    /// Sent inside an app-limited bubble.
    pub is_app_limited: bool,
}

/// One delivery-rate sample (Linux `struct rate_sample`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RateSample {
    /// Bytes delivered on the connection after this ACK (Linux `tp->delivered`).
    pub delivered_total: u64,
    /// `delivered` when the most recently sent packet this ACK acknowledged was sent.
    pub prior_delivered: u64,
    /// Send time of that packet; recovery ends with the first ACK of data sent after it began.
    pub sent_time: SimTime,
    /// Bytes delivered over the interval: `delivered_total − prior_delivered`.
    pub delivered: u64,
    /// The interval; `None` when the sample is not valid (see the module docs).
    pub interval: Option<SimDuration>,
    /// That packet was sent in an app-limited bubble.
    pub is_app_limited: bool,
}

impl RateSample {
    /// `delivered / interval`, if the sample is valid.
    pub fn delivery_rate(&self) -> Option<BitRate> {
        let i = self.interval.filter(|i| !i.is_zero())?;
        Some(BitRate::from_bps(rate_bps(self.delivered, i)))
    }
}

/// Per-connection delivery counters (Linux `tp->delivered`, `delivered_mstamp`, `first_tx_mstamp`,
/// `app_limited`).
#[derive(Clone, Debug)]
pub struct DeliveryRateEstimator {
    delivered: u64,
    delivered_time: SimTime,
    first_sent_time: SimTime,
    /// `delivered` must pass this for the app-limited bubble to end; 0 = not app-limited.
    app_limited_until: u64,
}

impl DeliveryRateEstimator {
    pub fn new(now: SimTime) -> Self {
        DeliveryRateEstimator {
            delivered: 0,
            delivered_time: now,
            first_sent_time: now,
            app_limited_until: 0,
        }
    }

    /// Bytes delivered so far.
    pub fn delivered(&self) -> u64 {
        self.delivered
    }

    /// A packet is sent with `prior_in_flight` bytes already in flight (`tcp_rate_skb_sent`).
    pub fn on_sent(&mut self, now: SimTime, prior_in_flight: u64) -> PacketDeliveryState {
        if prior_in_flight == 0 {
            self.first_sent_time = now;
            self.delivered_time = now;
        }
        PacketDeliveryState {
            delivered: self.delivered,
            delivered_time: self.delivered_time,
            first_sent_time: self.first_sent_time,
            sent_time: now,
            is_app_limited: self.app_limited_until != 0,
        }
    }

    /// The application left the window unused with `bytes_in_flight` in flight
    /// (`tcp_rate_check_app_limited`).
    pub fn on_app_limited(&mut self, bytes_in_flight: u64) {
        self.app_limited_until = (self.delivered + bytes_in_flight).max(1);
    }

    /// Packets `(state, bytes)` newly acknowledged by one ACK at `now`; `None` if the iterator is empty.
    pub fn on_ack(
        &mut self,
        now: SimTime,
        acked: impl IntoIterator<Item = (PacketDeliveryState, u64)>,
        min_rtt: Option<SimDuration>,
    ) -> Option<RateSample> {
        let mut newest: Option<PacketDeliveryState> = None;
        for (p, bytes) in acked {
            self.delivered += bytes;
            self.delivered_time = now;
            // `tcp_rate_skb_delivered`: the most recently sent packet defines the sample (ties: the
            // later one in the ACK, i.e. the higher sequence number).
            if newest.is_none_or(|n| p.sent_time >= n.sent_time) {
                newest = Some(p);
                self.first_sent_time = p.sent_time;
            }
        }
        let p = newest?;
        if self.app_limited_until != 0 && self.delivered > self.app_limited_until {
            self.app_limited_until = 0;
        }
        let send_elapsed = p.sent_time.saturating_since(p.first_sent_time);
        let ack_elapsed = self.delivered_time.saturating_since(p.delivered_time);
        let interval = send_elapsed.max(ack_elapsed);
        let valid = !interval.is_zero() && min_rtt.is_none_or(|m| interval >= m);
        Some(RateSample {
            delivered_total: self.delivered,
            prior_delivered: p.delivered,
            sent_time: p.sent_time,
            delivered: self.delivered - p.delivered,
            interval: valid.then_some(interval),
            is_app_limited: p.is_app_limited,
        })
    }
}
