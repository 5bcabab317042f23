//! Congestion control behind one trait, so controllers can be swapped.
//! Hooks are named after the events that call them.
//!
//! * [`Bbr`] — rate- and delay-based (BBR v1 model): paces at the measured
//!   bottleneck bandwidth and keeps about two bandwidth-delay products in
//!   flight; random loss does not cut its rate (the pacing rate makes up
//!   for what it takes, so the bottleneck stays busy). The default.
//! * [`NewReno`] — loss-based window (RFC 9002), unpaced; halves per loss event.
//! * [`Unlimited`] — no limit, for tests and closed networks.
//!
//! The connection owns what every controller needs: the delivery-rate
//! estimator ([`delivery`]) that stamps each packet and turns acks into rate
//! samples, and the [`pacer`] that spaces datagrams at the controller's
//! pacing rate.

mod bbr;
pub mod delivery;
mod max_filter;
mod new_reno;
pub mod pacer;
mod unlimited;

pub use bbr::Bbr;
pub use delivery::{DeliveryRate, DeliveryStamp, RateSample};
pub use new_reno::NewReno;
pub use pacer::Pacer;
pub use unlimited::Unlimited;

use crate::config::CongestionKind;
use crate::prelude::*;
use crate::rtt::RttEstimator;

/// One ACK frame's effect, after every newly acknowledged packet was removed.
#[derive(Clone, Copy, Debug)]
pub struct AckEvent<'a> {
    /// Bytes of the packets this ACK newly acknowledged.
    pub acked_bytes: u64,
    /// When the newest of them was sent.
    pub newest_acked_sent_at: u64,
    /// Bytes still in flight after removing them.
    pub bytes_in_flight: u64,
    /// True if this ACK gave the RTT estimator a fresh sample (`rtt.latest()`).
    pub rtt_sampled: bool,
    pub rtt: &'a RttEstimator,
    /// Delivery-rate sample; None when the ACK gave no usable one.
    pub sample: Option<RateSample>,
    /// Total bytes acknowledged on this connection so far.
    pub delivered: u64,
}

/// Packets declared lost together.
#[derive(Clone, Copy, Debug)]
pub struct LossEvent {
    pub lost_bytes: u64,
    /// When the newest of them was sent (one congestion event per round trip).
    pub newest_lost_sent_at: u64,
    /// Bytes still in flight after removing them. No controller reads it
    /// yet; it is part of what a controller is told (as in `AckEvent`).
    #[allow(dead_code)]
    pub bytes_in_flight: u64,
}

/// `Send` so a connection (and a server) can move to a worker thread.
/// No `Debug` supertrait: its vtable entry would keep each controller's
/// Debug code (and fmt) in the wasm.
pub trait CongestionController: Send {
    /// An ack-eliciting packet of `bytes` left at `now`; `bytes_in_flight`
    /// includes it.
    fn on_sent(&mut self, now: u64, bytes: u64, bytes_in_flight: u64);
    /// An ACK frame newly acknowledged packets.
    fn on_ack(&mut self, now: u64, ack: &AckEvent);
    /// Packets were declared lost.
    fn on_loss(&mut self, now: u64, loss: &LossEvent);
    /// Bytes that may be in flight.
    fn window(&self) -> u64;
    /// Rate to pace datagrams at, bytes per second; None = unpaced. `rtt` is
    /// the connection's estimate (for a rate before any delivery sample).
    fn pacing_rate(&self, _rtt: &RttEstimator) -> Option<u64> {
        None
    }
    /// The datagram size changed (windows are counted in datagrams of it).
    fn set_max_datagram(&mut self, _bytes: u64) {}
}

pub fn build(kind: CongestionKind, max_datagram: u64) -> Box<dyn CongestionController> {
    match kind {
        CongestionKind::Bbr => Box::new(Bbr::new(max_datagram)),
        CongestionKind::NewReno => Box::new(NewReno::new(max_datagram)),
        CongestionKind::Unlimited => Box::new(Unlimited),
    }
}
