use super::{AckEvent, CongestionController, LossEvent};

/// RFC 9002 NewReno: slow start, then additive increase; one halving per
/// round trip of losses. The window never drops below `MIN_WINDOW_PACKETS`
/// datagrams so game traffic keeps flowing under random loss. Unpaced.
/// Random loss keeps it near the floor (see tests/congestion.rs); `Bbr` is
/// the default.
#[derive(Debug)]
pub struct NewReno {
    max_datagram: u64,
    window: u64,
    ssthresh: u64,
    recovery_start: Option<u64>,
    acked_in_ca: u64,
}

const INITIAL_WINDOW_PACKETS: u64 = 32;
const MIN_WINDOW_PACKETS: u64 = 16;

impl NewReno {
    pub fn new(max_datagram: u64) -> Self {
        NewReno {
            max_datagram,
            window: INITIAL_WINDOW_PACKETS * max_datagram,
            ssthresh: u64::MAX,
            recovery_start: None,
            acked_in_ca: 0,
        }
    }
}

impl CongestionController for NewReno {
    fn on_sent(&mut self, _now: u64, _bytes: u64, _in_flight: u64) {}

    fn on_ack(&mut self, _now: u64, ack: &AckEvent) {
        // Packets sent before recovery began do not grow the window.
        if self
            .recovery_start
            .is_some_and(|r| ack.newest_acked_sent_at <= r)
        {
            return;
        }
        let bytes = ack.acked_bytes;
        if self.window < self.ssthresh {
            self.window += bytes;
        } else {
            self.acked_in_ca += bytes;
            if self.acked_in_ca >= self.window {
                self.acked_in_ca -= self.window;
                self.window += self.max_datagram;
            }
        }
    }

    fn on_loss(&mut self, now: u64, loss: &LossEvent) {
        if self
            .recovery_start
            .is_some_and(|r| loss.newest_lost_sent_at <= r)
        {
            return;
        }
        self.recovery_start = Some(now);
        self.window = (self.window / 2).max(MIN_WINDOW_PACKETS * self.max_datagram);
        self.ssthresh = self.window;
        self.acked_in_ca = 0;
    }

    fn set_max_datagram(&mut self, bytes: u64) {
        self.max_datagram = bytes;
    }

    fn window(&self) -> u64 {
        self.window
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn loss(sent_at: u64) -> LossEvent {
        LossEvent {
            lost_bytes: 1000,
            newest_lost_sent_at: sent_at,
            bytes_in_flight: 0,
        }
    }

    #[test]
    fn one_halving_per_round_trip_with_floor() {
        let mut cc = NewReno::new(1000);
        let w0 = cc.window();
        cc.on_loss(100, &loss(50));
        assert_eq!(cc.window(), (w0 / 2).max(16_000));
        cc.on_loss(110, &loss(60)); // sent before recovery began: same event
        assert_eq!(cc.window(), (w0 / 2).max(16_000));
        for t in 0..10 {
            cc.on_loss(200 + t * 100, &loss(150 + t * 100));
        }
        assert_eq!(cc.window(), 16_000);
    }
}
