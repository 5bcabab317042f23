//! Delivery-rate estimation (draft-cheng-iccrg-delivery-rate-estimation):
//! every ack-eliciting packet is stamped at send with how much had been
//! delivered and when; acknowledging it later gives the delivery rate over
//! that packet's flight. Samples taken while the sender had nothing to send
//! are flagged app-limited, so a game's low rate is never mistaken for the
//! link's capacity.

const MICROS_PER_SEC: u64 = 1_000_000;

/// Connection state recorded in a packet when it is sent.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DeliveryStamp {
    /// Bytes delivered (acknowledged) when the packet left.
    pub delivered: u64,
    /// When `delivered` last grew, as of the packet's sending.
    pub delivered_time: u64,
    /// Send time of the packet whose ack started the current flight.
    pub first_sent_time: u64,
    /// The sender was application-limited when the packet left.
    pub app_limited: bool,
}

/// One delivery-rate measurement, from the newest packet an ACK covered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RateSample {
    /// Bytes delivered over `interval_us`.
    pub delivered: u64,
    pub interval_us: u64,
    /// `delivered` per second; None when the interval was shorter than the
    /// minimum RTT (ACK compression would overstate it).
    pub rate: Option<u64>,
    /// Measured while the sender was app-limited (a lower bound only).
    pub app_limited: bool,
    /// `delivered` as stamped in that packet (round-trip counting).
    pub prior_delivered: u64,
}

#[derive(Clone, Debug, Default)]
pub struct DeliveryRate {
    delivered: u64,
    delivered_time: u64,
    first_sent_time: u64,
    /// Nonzero while app-limited: the `delivered` count at which that ends.
    app_limited_until: u64,
    // The sample under construction for the current ACK frame.
    has_sample: bool,
    prior_delivered: u64,
    prior_time: u64,
    send_elapsed: u64,
    ack_elapsed: u64,
    sample_app_limited: bool,
}

impl DeliveryRate {
    /// Total bytes acknowledged so far.
    pub fn delivered(&self) -> u64 {
        self.delivered
    }

    /// Stamp a packet leaving at `now`; `in_flight_before` excludes it.
    pub fn on_sent(&mut self, now: u64, in_flight_before: u64) -> DeliveryStamp {
        if in_flight_before == 0 {
            // Restarting from idle: the flight begins now, not at the last ack.
            self.first_sent_time = now;
            self.delivered_time = now;
        }
        DeliveryStamp {
            delivered: self.delivered,
            delivered_time: self.delivered_time,
            first_sent_time: self.first_sent_time,
            app_limited: self.app_limited_until != 0,
        }
    }

    /// The sender has nothing more to send while the window and pacing
    /// would allow it: samples until what is in flight is delivered are
    /// app-limited.
    pub fn on_app_limited(&mut self, in_flight: u64) {
        self.app_limited_until = (self.delivered + in_flight).max(1);
    }

    /// A packet stamped `stamp`, sent at `sent_at`, of `bytes`, was acknowledged.
    pub fn on_acked(&mut self, now: u64, stamp: &DeliveryStamp, sent_at: u64, bytes: u64) {
        self.delivered += bytes;
        self.delivered_time = now;
        if self.app_limited_until != 0 && self.delivered > self.app_limited_until {
            self.app_limited_until = 0;
        }
        // The sample follows the packet sent most recently (largest delivered).
        if !self.has_sample || stamp.delivered >= self.prior_delivered {
            self.has_sample = true;
            self.prior_delivered = stamp.delivered;
            self.prior_time = stamp.delivered_time;
            self.sample_app_limited = stamp.app_limited;
            self.send_elapsed = sent_at.saturating_sub(stamp.first_sent_time);
            self.ack_elapsed = now.saturating_sub(stamp.delivered_time);
            self.first_sent_time = sent_at;
        }
    }

    /// The sample of the ACK frame just processed (None if it acknowledged
    /// nothing new). An interval shorter than `min_rtt_us` gives no rate.
    pub fn take_sample(&mut self, min_rtt_us: u64) -> Option<RateSample> {
        if !core::mem::take(&mut self.has_sample) {
            return None;
        }
        let delivered = self.delivered - self.prior_delivered;
        // The slower of the send and ack rates: neither side's bunching inflates it.
        let interval_us = self.send_elapsed.max(self.ack_elapsed);
        let rate = (interval_us > 0 && interval_us >= min_rtt_us)
            .then(|| per_second(delivered, interval_us));
        Some(RateSample {
            delivered,
            interval_us,
            rate,
            app_limited: self.sample_app_limited,
            prior_delivered: self.prior_delivered,
        })
    }
}

/// `bytes × 10⁶ / us`, saturating, exact, in u64 only: u128 division would
/// pull ~1 KB of compiler-builtins into the wasm. Past a u64 product,
/// bytes = q·us + r gives q·10⁶ + r·10⁶/us, the last by long division.
fn per_second(bytes: u64, us: u64) -> u64 {
    if let Some(p) = bytes.checked_mul(MICROS_PER_SEC) {
        return p / us;
    }
    let (q, r) = (bytes / us, bytes % us);
    // r × (the bits of 10⁶ so far) = frac × us + rem, with rem < us.
    let (mut frac, mut rem) = (0u64, 0u64);
    for bit in (0..20).rev() {
        frac *= 2;
        if rem >= us - rem {
            rem -= us - rem;
            frac += 1
        } else {
            rem *= 2
        }
        if MICROS_PER_SEC >> bit & 1 == 1 {
            if rem >= us - r {
                rem -= us - r;
                frac += 1
            } else {
                rem += r
            }
        }
    }
    q.checked_mul(MICROS_PER_SEC)
        .and_then(|x| x.checked_add(frac))
        .unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_second_matches_u128() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x >> (x % 64)
        };
        let edge = [
            1,
            2,
            999_999,
            1_000_000,
            u64::MAX / 1_000_000,
            u64::MAX / 1_000_000 + 1,
            u64::MAX - 1,
            u64::MAX,
        ];
        let pairs = edge.iter().flat_map(|&a| edge.iter().map(move |&b| (a, b)));
        for (a, b) in pairs.chain((0..100_000).map(|_| (next(), next().max(1)))) {
            let want = u64::try_from(u128::from(a) * 1_000_000 / u128::from(b)).unwrap_or(u64::MAX);
            assert_eq!(per_second(a, b), want, "{a} {b}");
        }
    }

    #[test]
    fn steady_flight_measures_the_ack_rate() {
        // 1000-byte packets every 1 ms, each acked 10 ms later: 1 MB/s.
        let mut d = DeliveryRate::default();
        let mut flight = alloc::collections::VecDeque::new();
        let mut last = None;
        for i in 0..100u64 {
            let now = i * 1_000;
            while flight.front().is_some_and(|&(t, _)| t + 10_000 <= now) {
                let (t, s) = flight.pop_front().unwrap();
                d.on_acked(now, &s, t, 1000);
                last = d.take_sample(10_000).or(last);
            }
            flight.push_back((now, d.on_sent(now, flight.len() as u64 * 1000)));
        }
        let s = last.unwrap();
        assert!((990_000..=1_010_000).contains(&s.rate.unwrap()), "{s:?}");
        assert!(!s.app_limited);
    }

    #[test]
    fn samples_after_the_queue_ran_dry_are_app_limited_until_delivered() {
        let mut d = DeliveryRate::default();
        let a = d.on_sent(0, 0);
        d.on_app_limited(1000);
        let b = d.on_sent(1_000, 1000);
        d.on_acked(20_000, &a, 0, 1000);
        assert!(!d.take_sample(10_000).unwrap().app_limited);
        d.on_acked(21_000, &b, 1_000, 1000);
        assert!(d.take_sample(10_000).unwrap().app_limited);
        let c = d.on_sent(21_000, 0);
        assert!(
            !c.app_limited,
            "everything in flight at marking was delivered"
        );
    }
}
