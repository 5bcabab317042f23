//! How fast this side may send: the congestion controller (window, pacing
//! rate), the delivery-rate estimator that feeds it samples, and the pacer
//! that spaces data out. The algorithms are in `congestion/`; this is the
//! connection's state for them, changed only here, through the hooks the
//! packetizer (sent) and loss recovery (acked, lost) call.

use crate::config::Config;
use crate::congestion::{
    self, AckEvent, CongestionController, DeliveryRate, DeliveryStamp, LossEvent, Pacer,
};
use crate::prelude::*;
use crate::rtt::RttEstimator;

pub(crate) struct SendRate {
    cc: Box<dyn CongestionController>,
    delivery: DeliveryRate,
    pacer: Pacer,
    /// `cc.window()`, read again after every hook that may change it: the
    /// packetizer and the timers ask for it several times per datagram, and
    /// through the trait object each ask is an indirect call.
    window: u64,
    /// Data waits for the pacer until then (sets `Timer::Pacing`).
    paced_until: Option<u64>,
}

impl SendRate {
    pub fn new(config: &Config) -> Self {
        let cc = congestion::build(config.congestion, config.max_datagram_size as u64);
        SendRate {
            window: cc.window(),
            cc,
            delivery: DeliveryRate::default(),
            pacer: Pacer::new(config.max_datagram_size as u64),
            paced_until: None,
        }
    }

    /// The congestion window, bytes.
    pub fn window(&self) -> u64 {
        debug_assert_eq!(self.window, self.cc.window());
        self.window
    }

    pub fn paced_until(&self) -> Option<u64> {
        self.paced_until
    }

    /// A poll found nothing to send: nothing waits for the pacer. Returns
    /// true if something did (`Timer::Pacing` then changes).
    pub fn on_idle(&mut self) -> bool {
        self.pacer.on_queue_empty();
        self.paced_until.take().is_some()
    }

    /// `Timer::Pacing` fired: the data it held may go.
    pub fn on_pacing_timeout(&mut self) {
        self.paced_until = None;
    }

    pub fn set_max_datagram(&mut self, bytes: u64) {
        self.cc.set_max_datagram(bytes);
        self.window = self.cc.window();
        self.pacer.set_max_datagram(bytes);
    }

    /// Before a DATA packet of up to `capacity` bytes: true if the pacer
    /// holds data back now. `room`: the window has room for the packet;
    /// `has_unsent`: data is waiting (asked only when paced).
    pub fn pace(
        &mut self,
        now: u64,
        rtt: &RttEstimator,
        room: bool,
        capacity: u64,
        has_unsent: impl FnOnce() -> bool,
    ) -> bool {
        // With window room, data still waits until the pacer allows it.
        let release = if room {
            self.pacer
                .release_time(now, self.cc.pacing_rate(rtt), capacity)
        } else {
            now
        };
        let paced = release > now;
        let waiting = paced && has_unsent();
        if paced && !waiting {
            self.pacer.on_queue_empty();
        }
        self.paced_until = waiting.then_some(release);
        paced
    }

    /// Neither window nor pacer held data back: the sender is app-limited
    /// and its rate says nothing about the path.
    pub fn on_app_limited(&mut self, in_flight: u64) {
        self.delivery.on_app_limited(in_flight);
    }

    /// An ack-eliciting packet of `bytes` leaves, `in_flight` bytes already
    /// in flight. Returns its delivery stamp (kept with the packet).
    pub fn on_sent(
        &mut self,
        now: u64,
        rtt: &RttEstimator,
        bytes: u64,
        in_flight: u64,
    ) -> DeliveryStamp {
        // Only paced data spends pacing credit: the bandwidth estimate
        // counts delivered data alone, so charging repair and pure ACKs
        // too would pace data below what the path delivers.
        let rate = self.cc.pacing_rate(rtt);
        self.pacer.on_sent(now, rate, bytes);
        let stamp = self.delivery.on_sent(now, in_flight);
        self.cc.on_sent(now, bytes, in_flight + bytes);
        self.window = self.cc.window();
        stamp
    }

    /// One packet newly acknowledged (before `on_ack` for its ACK).
    pub fn on_packet_acked(&mut self, now: u64, stamp: &DeliveryStamp, sent_at: u64, bytes: u64) {
        self.delivery.on_acked(now, stamp, sent_at, bytes);
    }

    /// An ACK newly acknowledged `acked_bytes`, the newest sent at
    /// `newest_acked_sent_at`; `in_flight` after removing them.
    pub fn on_ack(
        &mut self,
        now: u64,
        acked_bytes: u64,
        newest_acked_sent_at: u64,
        in_flight: u64,
        rtt_sampled: bool,
        rtt: &RttEstimator,
    ) {
        let ack = AckEvent {
            acked_bytes,
            newest_acked_sent_at,
            bytes_in_flight: in_flight,
            rtt_sampled,
            rtt,
            sample: self.delivery.take_sample(rtt.min()),
            delivered: self.delivery.delivered(),
        };
        self.cc.on_ack(now, &ack);
        self.window = self.cc.window();
    }

    pub fn on_loss(&mut self, now: u64, loss: &LossEvent) {
        self.cc.on_loss(now, loss);
        self.window = self.cc.window();
    }
}
