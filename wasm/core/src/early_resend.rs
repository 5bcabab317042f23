//! Early resend for thin streams. A game's reliable messages often leave one
//! packet per tick: too few for a later packet's ACK to reveal a loss soon
//! (RFC 9002's packet and time thresholds both need one), so a lost message
//! waits a tick for the gap to show, plus a round trip. While the connection
//! is app-limited (in flight at most half the window, no bulk transfer
//! queued), a packet with reliable data (a first transmission) whose ACK is
//! overdue — sent longer ago than the smoothed RTT, four deviations and the
//! peer's usual ACK delay — has that data sent again, once. The packet is
//! not declared lost: loss counters and congestion control see only real
//! losses, and a late ACK turns the resend into a harmless duplicate (the
//! cost: one message per lost ACK). Linux TCP's thin-stream mode and KCP's
//! per-segment timeout make the same trade. A message sent in halves has
//! only its second half resent so: silence after it is mostly a lost ACK
//! (the peer had all three packets), and a lost first half shows in the ACK
//! of the second or of the repair, where loss detection finds it.
//!
//! Packets are scanned in send order from a cursor, so each is looked at
//! about once however often the timer is refreshed.

use crate::connection::Connection;

impl Connection {
    /// True while the sender is thin: little in flight compared with what
    /// the controller allows, so a resend cannot crowd anything out.
    fn thin(&self) -> bool {
        if !self.config.early_resend || self.recovery.pto_count() != 0 || !self.rtt.has_sample() {
            return false;
        }
        let window = self.rate.window();
        self.recovery.bytes_in_flight() * 2 <= window && !self.bulk_under(window)
    }

    /// How soon after sending a packet its reliable data would be resent
    /// early, while the stream is thin (FEC's repair is worth sending only
    /// before that).
    pub(crate) fn early_resend_after(&self) -> Option<u64> {
        self.thin().then(|| self.rtt.ack_overdue_after())
    }

    /// The first packet at or after the cursor that may still need an early
    /// resend; moves the cursor past the ones that cannot.
    fn early_candidate(&mut self) -> Option<u64> {
        let sent = self.recovery.sent();
        let tracked = sent.tracked();
        let mut pn = self.early_cursor.max(tracked.start);
        while pn < tracked.end {
            let resendable = sent.get(pn).is_some_and(|p| {
                !p.skip_early_resend
                    && p.chunks
                        .iter()
                        .any(|c| self.outbox.channel(c.channel).kind().is_reliable())
            });
            if resendable {
                break;
            }
            pn += 1;
        }
        self.early_cursor = pn;
        (pn < tracked.end).then_some(pn)
    }

    /// `Timer::EarlyResend`'s deadline, if any (part of `refresh_timers`).
    #[inline(always)]
    pub(crate) fn early_resend_deadline(&mut self) -> Option<u64> {
        if !self.thin() {
            return None;
        }
        self.early_candidate()
            .and_then(|pn| self.recovery.sent().get(pn))
            .map(|p| p.time_sent + self.rtt.ack_overdue_after())
    }

    /// `Timer::EarlyResend` fired: queue the unacknowledged reliable data of
    /// every overdue packet (oldest first, after earlier retransmissions).
    pub(crate) fn on_early_resend_timeout(&mut self, now: u64) {
        if !self.thin() {
            return;
        }
        let overdue = self.rtt.ack_overdue_after();
        while let Some(pn) = self.early_candidate() {
            let Some(p) = self.recovery.sent().get(pn) else {
                break;
            };
            if p.time_sent + overdue > now {
                break;
            }
            if self.recovery.resend_early(pn, self.outbox.channels()) {
                self.stats.early_resends += 1;
            }
        }
    }
}
