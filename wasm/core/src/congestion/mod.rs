//! Congestion control behind one trait, so controllers can be swapped.
//! Hooks are named after the events that call them.

mod new_reno;
mod unlimited;

pub use new_reno::NewReno;
pub use unlimited::Unlimited;

use crate::config::CongestionKind;

/// `Send` so a connection (and a server) can move to a worker thread.
pub trait CongestionController: core::fmt::Debug + Send {
    /// An ack-eliciting packet of `bytes` left at `now`.
    fn on_sent(&mut self, now: u64, bytes: u64);
    /// A packet sent at `sent_at` was acknowledged; `rtt_us` is the smoothed RTT.
    fn on_ack(&mut self, now: u64, sent_at: u64, bytes: u64, rtt_us: u64);
    /// Packets were declared lost; `largest_lost_sent_at` is when the newest
    /// of them left (one congestion event per round trip).
    fn on_loss(&mut self, now: u64, largest_lost_sent_at: u64, bytes: u64);
    /// Bytes that may be in flight.
    fn window(&self) -> u64;
    /// Earliest time the next packet may leave (pacing); None = now.
    fn next_send_time(&self, _now: u64) -> Option<u64> {
        None
    }
}

pub fn build(kind: CongestionKind, max_datagram: u64) -> Box<dyn CongestionController> {
    match kind {
        CongestionKind::NewReno => Box::new(NewReno::new(max_datagram)),
        CongestionKind::Unlimited => Box::new(Unlimited),
    }
}
