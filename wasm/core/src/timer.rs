//! Every deadline a connection has, in one table. `poll_timeout` is its
//! minimum; `next_timer` says which fires next (for debugging).
//! `Connection::refresh_timers` (below) recomputes the table from the
//! connection's state after every input, command or poll.

use crate::connection::{Connection, Side, State};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Timer {
    /// Client: retransmit HELLO (doubling), until `Handshake` expires.
    HelloResend = 0,
    /// Client: give up connecting.
    Handshake = 1,
    /// Time-threshold loss detection: an unacked packet becomes lost.
    LossDetection = 2,
    /// Probe timeout: nothing acked for too long, send a probe (tail loss).
    Probe = 3,
    /// Send a delayed acknowledgement.
    Ack = 4,
    /// Nothing ack-eliciting sent for a while: send a PING.
    Keepalive = 5,
    /// Nothing received for too long: close.
    Idle = 6,
    /// After close: stop answering and release the connection.
    Drain = 7,
    /// FEC: a channel's latency target wants the open group's repair sent.
    Repair = 8,
    /// Pacing: the next queued datagram may leave.
    Pacing = 9,
    /// Thin stream: a packet's ACK is overdue, send its reliable data again.
    EarlyResend = 10,
    /// Server: challenge a candidate address again, or give it up.
    PathChallenge = 11,
}

const COUNT: usize = 12;
const ALL: [Timer; COUNT] = [
    Timer::HelloResend,
    Timer::Handshake,
    Timer::LossDetection,
    Timer::Probe,
    Timer::Ack,
    Timer::Keepalive,
    Timer::Idle,
    Timer::Drain,
    Timer::Repair,
    Timer::Pacing,
    Timer::EarlyResend,
    Timer::PathChallenge,
];

#[derive(Clone, Debug, Default)]
pub struct TimerTable {
    deadlines: [Option<u64>; COUNT],
    /// The earliest entry, kept current on every change: hosts ask for it
    /// after every input, far more often than timers change.
    earliest: Option<(Timer, u64)>,
}

impl TimerTable {
    pub fn set(&mut self, t: Timer, at: u64) {
        self.deadlines[t as usize] = Some(at);
        match self.earliest {
            // Sooner than the earliest: it is the new earliest.
            None => self.earliest = Some((t, at)),
            Some((_, e)) if at < e => self.earliest = Some((t, at)),
            // The earliest moved later: another may now be first.
            Some((et, _)) if et == t => self.recompute(),
            _ => {}
        }
    }
    pub fn stop(&mut self, t: Timer) {
        if self.deadlines[t as usize].take().is_some()
            && self.earliest.is_some_and(|(et, _)| et == t)
        {
            self.recompute();
        }
    }
    pub fn get(&self, t: Timer) -> Option<u64> {
        self.deadlines[t as usize]
    }
    pub fn stop_all(&mut self) {
        self.deadlines = [None; COUNT];
        self.earliest = None;
    }
    /// True (and the timer is stopped) if it was set and is due at `now`.
    pub fn expire(&mut self, t: Timer, now: u64) -> bool {
        match self.deadlines[t as usize] {
            Some(at) if at <= now => {
                self.stop(t);
                true
            }
            _ => false,
        }
    }
    fn recompute(&mut self) {
        let mut best: Option<(Timer, u64)> = None;
        for (i, d) in self.deadlines.iter().enumerate() {
            if let Some(at) = *d {
                if best.is_none_or(|(_, b)| at < b) {
                    best = Some((ALL[i], at));
                }
            }
        }
        self.earliest = best;
    }
    /// The earliest deadline and which timer it is.
    pub fn next(&self) -> Option<(Timer, u64)> {
        self.earliest
    }
}

impl Connection {
    /// Recompute every deadline in the timer table from current state.
    pub(crate) fn refresh_timers(&mut self) {
        match self.state {
            State::Drained => {
                self.timers.stop_all();
                return;
            }
            State::Closing => return,
            State::Connecting => {
                if self.side == Side::Client
                    && self.timers.get(Timer::HelloResend).is_none()
                    && !self.owed.hello_due()
                {
                    let backoff = self.config.handshake_resend_us
                        << self.owed.hello_sends().saturating_sub(1).min(5);
                    self.timers
                        .set(Timer::HelloResend, self.last_eliciting_sent + backoff);
                }
                return;
            }
            State::Connected => {}
        }
        self.timers.set(
            Timer::Idle,
            self.last_received + self.config.idle_timeout_us,
        );
        self.timers.set(
            Timer::Keepalive,
            self.last_eliciting_sent + self.config.keepalive_interval_us,
        );
        match self.fec.tx.timer() {
            Some(t) => self.timers.set(Timer::Repair, t),
            None => self.timers.stop(Timer::Repair),
        }
        match self.rate.paced_until() {
            Some(t) => self.timers.set(Timer::Pacing, t),
            None => self.timers.stop(Timer::Pacing),
        }
        match self.received.ack_deadline(self.config.max_ack_delay_us) {
            Some(t) => self.timers.set(Timer::Ack, t),
            None => self.timers.stop(Timer::Ack),
        }
        self.refresh_early_resend();
        // A probe also settles lost packets still awaiting a rebuild verdict
        // (see rebuild_wait): with nothing else to send, its ACK decides them.
        if (self.recovery.sent().is_empty() && self.fec.awaiting.is_empty())
            || self.timers.get(Timer::LossDetection).is_some()
        {
            self.timers.stop(Timer::Probe);
        } else {
            let pto = self.rtt.pto_base(self.config.max_ack_delay_us)
                << self.recovery.pto_count().min(10);
            self.timers
                .set(Timer::Probe, self.last_eliciting_sent + pto);
        }
        self.hold_timers_at_bound();
        self.hold_timers_unvalidated();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn next_tracks_the_earliest_through_changes() {
        let mut t = TimerTable::default();
        t.set(Timer::Idle, 500);
        t.set(Timer::Ack, 100);
        assert_eq!(t.next(), Some((Timer::Ack, 100)));
        assert!(t.expire(Timer::Ack, 100));
        assert_eq!(t.next(), Some((Timer::Idle, 500)));
        t.set(Timer::Idle, 50);
        assert_eq!(t.next(), Some((Timer::Idle, 50)));
        t.set(Timer::Idle, 900); // the only timer moves later
        assert_eq!(t.next(), Some((Timer::Idle, 900)));
        t.set(Timer::Probe, 300);
        t.set(Timer::Drain, 600);
        t.stop(Timer::Probe);
        assert_eq!(t.next(), Some((Timer::Drain, 600)));
        t.set(Timer::Drain, 1000);
        assert_eq!(t.next(), Some((Timer::Idle, 900)));
        t.stop_all();
        assert_eq!(t.next(), None);
    }
}
