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
/// Refill is computed over at most this long, µs (the bucket is full by then
/// at any rate), and rates are capped so credit arithmetic fits an i64.
const MAX_REFILL_US: u64 = 10_000_000;
const MAX_RATE: u64 = 100_000_000_000;
/// A host that wakes after the pacing deadline (coarse timers: JS timers
/// wait ≥ 1 ms, browsers clamp nested ones to 4 ms) may still send what it
/// would have sent since the deadline, up to this much lateness, µs.
/// Otherwise the timer's granularity, not the path, would cap the rate.
pub const MAX_CATCH_UP_US: u64 = 4_000;

/// Credit is kept in micro-bytes (bytes × 10⁻⁶) so rate × elapsed µs adds
/// exactly, with no rounding drift at any rate.
#[derive(Clone, Debug)]
pub struct Pacer {
    max_datagram: u64,
    /// Available credit, micro-bytes; negative after unpaced sends (repair).
    credit: i64,
    last: u64,
    /// Data is waiting for credit until then.
    waiting_until: Option<u64>,
}

impl Pacer {
    pub fn new(max_datagram: u64) -> Self {
        let mut p = Pacer {
            max_datagram,
            credit: 0,
            last: 0,
            waiting_until: None,
        };
        p.credit = p.capacity(0);
        p
    }

    /// The datagram size changed: the minimum burst follows it.
    pub fn set_max_datagram(&mut self, bytes: u64) {
        self.max_datagram = bytes;
    }

    /// Bucket size at `rate` bytes/s, micro-bytes.
    fn capacity(&self, rate: u64) -> i64 {
        let burst = (BURST_MIN_DATAGRAMS * self.max_datagram)
            .max(rate * BURST_INTERVAL_US / MICROS_PER_SEC);
        micro_bytes(burst)
    }

    fn refill(&mut self, now: u64, rate: u64) {
        let elapsed = now.saturating_sub(self.last).min(MAX_REFILL_US);
        self.last = self.last.max(now);
        if elapsed == 0 {
            return; // keeps any catch-up credit granted at this instant
        }
        let mut cap = self.capacity(rate);
        if let Some(due) = self.waiting_until.take() {
            cap += (rate * now.saturating_sub(due).min(MAX_CATCH_UP_US)) as i64;
        }
        // rate ≤ 10¹¹ and elapsed ≤ 10⁷: the product fits.
        self.credit = self.credit.saturating_add((rate * elapsed) as i64).min(cap);
    }

    /// When a datagram of `bytes` may leave at `rate` bytes/s (None =
    /// unpaced): `now` if the bucket holds enough, else the time it will.
    pub fn release_time(&mut self, now: u64, rate: Option<u64>, bytes: u64) -> u64 {
        let Some(rate) = rate.filter(|&r| r > 0).map(|r| r.min(MAX_RATE)) else {
            return now;
        };
        self.refill(now, rate);
        let need = micro_bytes(bytes).saturating_sub(self.credit);
        if need <= 0 {
            return now;
        }
        let due = now.saturating_add((need as u64).div_ceil(rate));
        self.waiting_until = Some(due);
        due
    }

    /// Nothing is waiting after all (the queue emptied): a late wake-up is
    /// owed no catch-up.
    pub fn on_queue_empty(&mut self) {
        self.waiting_until = None;
    }

    /// A paced datagram of `bytes` left.
    pub fn on_sent(&mut self, now: u64, rate: Option<u64>, bytes: u64) {
        let Some(rate) = rate.filter(|&r| r > 0).map(|r| r.min(MAX_RATE)) else {
            return;
        };
        self.refill(now, rate);
        // Debt is bounded so one unpaced burst cannot stall sending for long.
        self.credit = self
            .credit
            .saturating_sub(micro_bytes(bytes))
            .max(-self.capacity(rate));
    }
}

fn micro_bytes(bytes: u64) -> i64 {
    i64::try_from(bytes.saturating_mul(MICROS_PER_SEC)).unwrap_or(i64::MAX)
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
        p.on_queue_empty();
        // Idle for long: the bucket refills, no more than its capacity.
        let t = 1_000_000;
        for _ in 0..BURST_MIN_DATAGRAMS {
            assert_eq!(p.release_time(t, rate, 1000), t);
            p.on_sent(t, rate, 1000);
        }
        assert!(p.release_time(t, rate, 1000) > t);
    }

    #[test]
    fn a_host_waking_late_sends_what_it_missed_up_to_the_catch_up_bound() {
        let mut p = Pacer::new(1000);
        let rate = Some(1_000_000); // one 1000-byte datagram per ms
        let mut t = 0;
        while p.release_time(t, rate, 1000) == t {
            p.on_sent(t, rate, 1000);
        }
        let due = p.release_time(t, rate, 1000);
        // The host's timer fires 3 ms late: 4 datagrams' worth, not 1.
        t = due + 3_000;
        let mut sent = 0;
        while p.release_time(t, rate, 1000) == t {
            p.on_sent(t, rate, 1000);
            sent += 1;
        }
        assert_eq!(sent, 4);
        // Far too late: bounded by the catch-up allowance plus the bucket.
        let due = p.release_time(t, rate, 1000);
        t = due + 1_000_000;
        sent = 0;
        while p.release_time(t, rate, 1000) == t {
            p.on_sent(t, rate, 1000);
            sent += 1;
        }
        assert_eq!(sent, BURST_MIN_DATAGRAMS + MAX_CATCH_UP_US / 1000);
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
