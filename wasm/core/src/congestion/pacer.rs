//! Pacing: a token bucket that fills at the controller's pacing rate and
//! holds a small burst, so datagrams leave spread out at about the rate the
//! bottleneck drains them instead of in window-sized bursts that overflow
//! its queue. A full bucket lets a game tick's few datagrams leave together,
//! and after any idle period the next sends are never delayed.

/// Fewest bytes the bucket holds, in datagrams: a 60 Hz game tick's
/// datagrams leave together even at a low pacing rate.
pub const BURST_MIN_DATAGRAMS: u64 = 10;
/// At high rates the bucket holds this much time's worth of sending, µs
/// (fewer timer wake-ups; still far below a bottleneck queue).
pub const BURST_INTERVAL_US: u64 = 1_000;

const MICROS_PER_SEC: u64 = 1_000_000;

/// Credit is kept in micro-bytes (bytes × 10⁻⁶) so rate × elapsed µs adds
/// exactly, with no rounding drift at any rate.
#[derive(Clone, Debug)]
pub struct Pacer {
    max_datagram: u64,
    /// Available credit, micro-bytes; negative after unpaced sends (repair).
    credit: i128,
    last: u64,
}

impl Pacer {
    pub fn new(max_datagram: u64) -> Self {
        let mut p = Pacer { max_datagram, credit: 0, last: 0 };
        p.credit = p.capacity(0);
        p
    }

    /// Bucket size at `rate` bytes/s, micro-bytes.
    fn capacity(&self, rate: u64) -> i128 {
        let burst = (BURST_MIN_DATAGRAMS * self.max_datagram).max(rate.saturating_mul(BURST_INTERVAL_US) / MICROS_PER_SEC);
        i128::from(burst) * i128::from(MICROS_PER_SEC)
    }

    fn refill(&mut self, now: u64, rate: u64) {
        let elapsed = now.saturating_sub(self.last);
        self.last = self.last.max(now);
        let cap = self.capacity(rate);
        self.credit = (self.credit + i128::from(rate) * i128::from(elapsed)).min(cap);
    }

    /// When a datagram of `bytes` may leave at `rate` bytes/s (None =
    /// unpaced): `now` if the bucket holds enough, else the time it will.
    pub fn release_time(&mut self, now: u64, rate: Option<u64>, bytes: u64) -> u64 {
        let Some(rate) = rate.filter(|&r| r > 0) else { return now };
        self.refill(now, rate);
        let need = i128::from(bytes) * i128::from(MICROS_PER_SEC) - self.credit;
        if need <= 0 {
            return now;
        }
        let wait = (need + i128::from(rate) - 1) / i128::from(rate);
        now.saturating_add(u64::try_from(wait).unwrap_or(u64::MAX))
    }

    /// A datagram of `bytes` left (paced or not: repair spends credit too).
    pub fn on_sent(&mut self, now: u64, rate: Option<u64>, bytes: u64) {
        let Some(rate) = rate.filter(|&r| r > 0) else { return };
        self.refill(now, rate);
        // Debt is bounded so one unpaced burst cannot stall sending for long.
        self.credit = (self.credit - i128::from(bytes) * i128::from(MICROS_PER_SEC)).max(-self.capacity(rate));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_bucket_sends_the_burst_then_spaces_at_the_rate() {
        let mut p = Pacer::new(1000);
        let rate = Some(1_000_000); // 1 byte per µs
        for _ in 0..BURST_MIN_DATAGRAMS {
            assert_eq!(p.release_time(0, rate, 1000), 0);
            p.on_sent(0, rate, 1000);
        }
        assert_eq!(p.release_time(0, rate, 1000), 1000);
        p.on_sent(1000, rate, 1000);
        assert_eq!(p.release_time(1000, rate, 1000), 2000);
        // Idle for long: the bucket refills, no more than its capacity.
        let t = 1_000_000;
        for _ in 0..BURST_MIN_DATAGRAMS {
            assert_eq!(p.release_time(t, rate, 1000), t);
            p.on_sent(t, rate, 1000);
        }
        assert!(p.release_time(t, rate, 1000) > t);
    }

    #[test]
    fn unpaced_controllers_are_never_delayed() {
        let mut p = Pacer::new(1000);
        for _ in 0..100 {
            assert_eq!(p.release_time(5, None, 1000), 5);
            p.on_sent(5, None, 1000);
        }
    }
}
