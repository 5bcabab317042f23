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

/// Stands for "not set" in `TimerTable::deadlines` (`armed` says which are
/// set, so a deadline of `u64::MAX` still counts).
const UNSET: u64 = u64::MAX;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TimerTable {
    /// Each timer's deadline, `UNSET` unless its bit is in `armed`.
    deadlines: [u64; COUNT],
    armed: u16,
    /// The earliest deadline, kept current on every change: hosts ask for
    /// it after every input, far more often than timers change.
    earliest: Option<u64>,
    /// `refresh_timers` has run since the connection became connected.
    connected: bool,
}

impl Default for TimerTable {
    fn default() -> Self {
        TimerTable {
            deadlines: [UNSET; COUNT],
            armed: 0,
            earliest: None,
            connected: false,
        }
    }
}

impl TimerTable {
    pub fn set(&mut self, t: Timer, at: u64) {
        let old = self.get(t);
        self.put(t, Some(at));
        match self.earliest {
            // Sooner than the earliest: it is the new earliest.
            Some(e) if at < e => self.earliest = Some(at),
            None => self.earliest = Some(at),
            // The earliest moved later: another may now be first.
            Some(e) if old == Some(e) && at > e => self.recompute(),
            _ => {}
        }
    }
    pub fn stop(&mut self, t: Timer) {
        let old = self.get(t);
        self.put(t, None);
        if old.is_some() && old == self.earliest {
            self.recompute();
        }
    }
    /// Set or stop `t` without updating the earliest: for a batch of
    /// changes that ends with `settle` (see `refresh_timers`).
    fn put(&mut self, t: Timer, at: Option<u64>) {
        let bit = 1 << t as u16;
        self.deadlines[t as usize] = at.unwrap_or(UNSET);
        self.armed = if at.is_some() {
            self.armed | bit
        } else {
            self.armed & !bit
        };
    }
    pub fn get(&self, t: Timer) -> Option<u64> {
        (self.armed & 1 << t as u16 != 0).then(|| self.deadlines[t as usize])
    }
    pub fn stop_all(&mut self) {
        *self = TimerTable::default();
    }
    /// True (and the timer is stopped) if it was set and is due at `now`.
    pub fn expire(&mut self, t: Timer, now: u64) -> bool {
        match self.get(t) {
            Some(at) if at <= now => {
                self.stop(t);
                true
            }
            _ => false,
        }
    }
    /// After `set`, `stop` or `expire` (out of line: they are inlined in
    /// many places, and rarely need it).
    #[inline(never)]
    fn recompute(&mut self) {
        self.settle();
    }
    /// Find the earliest deadline (once per `refresh_timers`).
    #[inline(always)]
    fn settle(&mut self) {
        // Unset entries are `UNSET`, never below a set one.
        let min = self.deadlines.iter().fold(UNSET, |m, &d| m.min(d));
        self.earliest = (self.armed != 0).then_some(min);
    }
    /// The earliest deadline and which timer it is (on a tie, the first in
    /// `ALL`).
    pub fn next(&self) -> Option<(Timer, u64)> {
        let at = self.earliest?;
        ALL.iter()
            .find(|&&t| self.get(t) == Some(at))
            .map(|&t| (t, at))
    }
    /// The earliest deadline.
    pub fn earliest(&self) -> Option<u64> {
        self.earliest
    }
}

impl Connection {
    /// `refresh_timers` after `send` queued a message. Every call that
    /// changes what the deadlines depend on refreshes them all, and a
    /// message in the queue changes only what `bulk()` sees: of the
    /// deadlines, only the early resend's.
    pub(crate) fn refresh_after_send(&mut self) {
        // (A server's connection is accepted connected, unrefreshed.)
        if !self.timers.connected {
            self.refresh_timers();
            return;
        }
        let early = self.early_resend_deadline();
        self.timers.put(Timer::EarlyResend, early);
        self.timers.settle();
        self.debug_assert_timers_current("a deadline depends on the queue");
    }

    /// Debug builds: the table is what a full refresh gives, after a
    /// shortcut that refreshed part of it or none (`why` names the broken
    /// assumption).
    #[cfg_attr(not(debug_assertions), allow(unused_variables))]
    pub(crate) fn debug_assert_timers_current(&mut self, why: &str) {
        #[cfg(debug_assertions)]
        {
            let before = self.timers.clone();
            self.refresh_timers();
            debug_assert_eq!(before, self.timers, "{}", why);
        }
    }

    /// Recompute every deadline in the timer table from current state.
    /// (`set`, `stop` and `put` calls in here are all settled by the
    /// `settle` at the end.)
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
        // Every deadline below is written as is and the earliest found once
        // at the end: most of them move on every call.
        let t = &mut self.timers;
        t.put(
            Timer::Idle,
            Some(self.last_received + self.config.idle_timeout_us),
        );
        t.put(
            Timer::Keepalive,
            Some(self.last_eliciting_sent + self.config.keepalive_interval_us),
        );
        t.put(Timer::Repair, self.fec.tx.timer());
        t.put(Timer::Pacing, self.rate.paced_until());
        t.put(
            Timer::Ack,
            self.received.ack_deadline(self.config.max_ack_delay_us),
        );
        let early = self.early_resend_deadline();
        self.timers.put(Timer::EarlyResend, early);
        // A probe also settles lost packets still awaiting a rebuild verdict
        // (see rebuild_wait): with nothing else to send, its ACK decides them.
        let probe = if (self.recovery.sent().is_empty() && self.fec.awaiting.is_empty())
            || self.timers.get(Timer::LossDetection).is_some()
        {
            None
        } else {
            let pto = self.rtt.pto_base(self.config.max_ack_delay_us)
                << self.recovery.pto_count().min(10);
            Some(self.last_eliciting_sent + pto)
        };
        self.timers.put(Timer::Probe, probe);
        self.hold_timers_at_bound();
        self.hold_timers_unvalidated();
        self.timers.settle();
        self.timers.connected = true;
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
        t.set(Timer::Ack, u64::MAX);
        assert_eq!(t.next(), Some((Timer::Ack, u64::MAX)));
        t.set(Timer::Probe, 7);
        t.stop(Timer::Probe);
        assert_eq!(t.next(), Some((Timer::Ack, u64::MAX)));
        assert!(t.expire(Timer::Ack, u64::MAX));
        assert_eq!(t.next(), None);
    }
}
