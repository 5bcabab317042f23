//! Round-trip time estimation (RFC 9002 §5): smoothed RTT, variance, minimum.

#[derive(Clone, Debug)]
pub struct RttEstimator {
    smoothed: u64,
    var: u64,
    min: u64,
    latest: u64,
    has_sample: bool,
    /// Smoothed ACK delay the peer reports (capped at our own maximum).
    ack_delay: u64,
    /// The longest ACK delay the peer reported lately, as reported (each
    /// report below it takes 1/64 off: it halves in ~44 reports). A
    /// receiver holds the ACK of a packet that follows another closely for
    /// its own `max_ack_delay`, which need not be ours (a `low_latency`
    /// client's 1 ms beside a default server's 5 ms): those ACKs report it,
    /// the rest report about 0, and the mean comes before the held ones.
    held_delay: u64,
}

/// The most of a reported ACK delay `held_delay` believes, µs (QUIC's
/// default `max_ack_delay`): one late report (a receiver stalled a moment)
/// must not skew the sender's model of the peer for long.
pub const HELD_DELAY_CAP: u64 = 25_000;

impl RttEstimator {
    pub fn new(initial_rtt_us: u64) -> Self {
        RttEstimator {
            smoothed: initial_rtt_us,
            var: initial_rtt_us / 2,
            min: u64::MAX,
            latest: initial_rtt_us,
            has_sample: false,
            ack_delay: 0,
            held_delay: 0,
        }
    }

    /// One sample: `rtt` measured from send to ack, `ack_delay` as reported
    /// by the peer capped at our own max ack delay (RTT samples subtract
    /// it); `reported` the delay as the peer reported it.
    pub fn update(&mut self, rtt: u64, ack_delay: u64, reported: u64) {
        let reported = reported.min(HELD_DELAY_CAP);
        self.held_delay = reported.max(self.held_delay - self.held_delay / 64);
        self.latest = rtt;
        self.min = self.min.min(rtt);
        // Subtract the peer's delay only when that cannot go below min RTT.
        let adjusted = if rtt >= self.min.saturating_add(ack_delay) {
            rtt - ack_delay
        } else {
            rtt
        };
        if !self.has_sample {
            self.has_sample = true;
            self.smoothed = adjusted;
            self.var = adjusted / 2;
            self.ack_delay = ack_delay;
        } else {
            self.ack_delay = (7 * self.ack_delay + ack_delay) / 8;
            let diff = self.smoothed.abs_diff(adjusted);
            self.var = (3 * self.var + diff) / 4;
            self.smoothed = (7 * self.smoothed + adjusted) / 8;
        }
    }

    pub fn smoothed(&self) -> u64 {
        self.smoothed
    }
    pub fn var(&self) -> u64 {
        self.var
    }
    pub fn latest(&self) -> u64 {
        self.latest
    }
    /// Smallest sample seen, or 0 before any sample.
    pub fn min(&self) -> u64 {
        if self.has_sample {
            self.min
        } else {
            0
        }
    }
    pub fn has_sample(&self) -> bool {
        self.has_sample
    }

    /// Probe timeout before backoff: srtt + max(4·rttvar, 1 ms) + peer ack delay.
    pub fn pto_base(&self, max_ack_delay: u64) -> u64 {
        self.smoothed + (4 * self.var).max(1_000) + max_ack_delay
    }

    /// How long after sending an ACK is overdue (early resend on thin
    /// streams): srtt + max(4·rttvar, 1 ms) + the peer's usual ACK delay,
    /// or for a packet whose ACK the peer holds (`held`) the longest delay
    /// it reported lately.
    pub fn ack_overdue_after(&self, held: bool) -> u64 {
        self.pto_base(if held {
            self.ack_delay.max(self.held_delay)
        } else {
            self.ack_delay
        })
    }

    /// The longest ACK delay the peer reported lately (see `held_delay`).
    pub fn held_delay(&self) -> u64 {
        self.held_delay
    }

    /// Time after which an unacknowledged packet older than a newer acked
    /// one is declared lost: 9/8 · max(srtt, latest), at least 1 ms.
    pub fn loss_delay(&self) -> u64 {
        (self.smoothed.max(self.latest) * 9 / 8).max(1_000)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_sample_sets_estimate() {
        let mut r = RttEstimator::new(100_000);
        r.update(20_000, 0, 0);
        assert_eq!(r.smoothed(), 20_000);
        assert_eq!(r.var(), 10_000);
        assert_eq!(r.min(), 20_000);
    }

    #[test]
    fn ack_delay_is_subtracted_only_above_min() {
        let mut r = RttEstimator::new(100_000);
        r.update(20_000, 0, 0);
        r.update(25_000, 5_000, 5_000);
        assert_eq!(r.smoothed(), 20_000);
        r.update(21_000, 5_000, 5_000); // would drop below min: kept as is
        assert_eq!(r.smoothed(), (7 * 20_000 + 21_000) / 8);
    }
}
