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
//! only its second half resent so: a lost first half shows in the ACK of the
//! second or of the repair, where loss detection finds it. With its repair
//! sent at once (a latency target), the second half goes again only once
//! the first is acknowledged: silence after all three packets is mostly a
//! lost ACK, while a lost second half and repair leave the ACK of the first
//! to come alone (the peer holds it for the rest of the message), often
//! after this timer: the second half then goes when it comes
//! (`resend_given_up`).
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
            // A second half whose first is unacknowledged too: most likely
            // the message's ACK was lost. Should the peer acknowledge the
            // first alone, `resend_given_up` sends it then.
            if p.first_half
                .is_some_and(|h| self.recovery.sent().get(h).is_some())
            {
                self.recovery.forgo_early_resend(pn);
                continue;
            }
            self.resend_early(pn);
        }
    }

    /// Queue packet `pn`'s data again, once, and count it if any was.
    fn resend_early(&mut self, pn: u64) {
        if self.recovery.resend_early(pn, self.outbox.channels()) {
            self.stats.early_resends += 1;
        }
    }

    /// An ACK newly acknowledged packets up to `largest`: second halves
    /// given up on at their early resend because their first half was
    /// unacknowledged too (`on_early_resend_timeout`) go now if it is
    /// acknowledged and they are not. The peer holds the ACK of a first half
    /// for the rest of its message, so when the rest is lost that ACK comes
    /// alone, often after the second half's own ACK was due.
    pub(crate) fn resend_given_up(&mut self, largest: u64) {
        if !self.thin() {
            return;
        }
        let sent = self.recovery.sent();
        let tracked = sent.tracked();
        // A second half leaves right behind its first (an ACK-only packet
        // may come between): the first packet still unacknowledged after
        // `largest`, looked for among the next few.
        let Some(p) = ((largest + 1).max(tracked.start)..tracked.end)
            .take(4)
            .find_map(|pn| sent.get(pn))
        else {
            return;
        };
        if p.skip_early_resend && p.first_half.is_some_and(|h| sent.get(h).is_none()) {
            let pn = p.pn;
            self.resend_early(pn);
        }
    }
}
