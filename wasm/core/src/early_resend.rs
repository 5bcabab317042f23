//! Early resend for thin streams. A game's reliable messages often leave one
//! packet per tick: too few for a later packet's ACK to reveal a loss soon (RFC
//! 9002's packet and time thresholds both need one), so a lost message waits a
//! tick for the gap to show, plus a round trip. While the connection is
//! app-limited (in flight at most half the window, no bulk transfer queued), a
//! packet with reliable data (a first transmission) whose ACK is overdue — sent
//! longer ago than the smoothed RTT, four deviations and the peer's usual ACK
//! delay (the longest it reported lately, for a packet whose ACK it holds:
//! `peer_holds_ack`) — has that data sent again, once. The packet is not
//! declared lost: loss counters and congestion control see only real losses,
//! and a late ACK turns the resend into a harmless duplicate (the cost: one
//! message per lost ACK). Linux TCP's thin-stream mode and KCP's per-segment
//! timeout make the same trade. A message sent in halves has only its second
//! half resent so: a lost first half shows in the ACK of the second or of the
//! repair, where loss detection finds it. With its repair sent at once (a
//! latency target), the second half goes again only once the first is
//! acknowledged: silence after all three packets is mostly a lost ACK, while a
//! lost second half and repair leave the ACK of the first to come alone (the
//! peer holds it for the rest of the message), often after this timer: the
//! second half then goes when it comes (`resend_given_up`).
//!
//! Packets are scanned in send order from a cursor, so each is looked at
//! about once however often the timer is refreshed.

use crate::connection::Connection;
use crate::sent::{Chunk, SentPacket};

/// Packets looked at for the candidate behind a held one.
const NEXT_LOOK: u64 = 8;

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
        self.thin().then(|| self.rtt.ack_overdue_after(false))
    }

    /// The first packet at or after the cursor that may still need an early
    /// resend; moves the cursor past the ones that cannot.
    fn early_candidate(&mut self) -> Option<u64> {
        let pn = self.resendable_from(self.early_cursor, u64::MAX);
        self.early_cursor = pn.unwrap_or(self.recovery.sent().tracked().end);
        pn
    }

    /// The first packet from `pn` that may still need an early resend,
    /// looking at `most` packets at most.
    fn resendable_from(&self, pn: u64, most: u64) -> Option<u64> {
        let sent = self.recovery.sent();
        let tracked = sent.tracked();
        let start = pn.max(tracked.start);
        (start..tracked.end.min(start.saturating_add(most))).find(|&pn| {
            sent.get(pn).is_some_and(|p| {
                !p.skip_early_resend
                    && p.chunks
                        .iter()
                        .any(|c| self.outbox.channel(c.channel).kind().is_reliable())
            })
        })
    }

    /// When packet `p` (in flight) is overdue.
    fn overdue_at(&self, p: &SentPacket) -> u64 {
        p.time_sent + self.rtt.ack_overdue_after(p.ack_held)
    }

    /// The candidate and when it is overdue, and while its ACK is one the
    /// peer holds (a later deadline) the next one too: that one need not
    /// wait for it. The model never holds two in a row (the second
    /// completes a pair).
    #[inline(always)]
    fn early_candidates(&mut self) -> [Option<(u64, u64)>; 2] {
        let Some(pn) = self.early_candidate() else {
            return [None, None];
        };
        let Some(p) = self.recovery.sent().get(pn) else {
            return [None, None];
        };
        let first = (pn, self.overdue_at(p));
        let next = if p.ack_held {
            self.resendable_from(pn + 1, NEXT_LOOK)
                .and_then(|q| Some((q, self.overdue_at(self.recovery.sent().get(q)?))))
        } else {
            None
        };
        [Some(first), next]
    }

    /// `Timer::EarlyResend`'s deadline, if any (part of `refresh_timers`).
    #[inline(always)]
    pub(crate) fn early_resend_deadline(&mut self) -> Option<u64> {
        if !self.thin() {
            return None;
        }
        let [first, next] = self.early_candidates();
        let first = first?.1;
        Some(next.map_or(first, |(_, at)| first.min(at)))
    }

    /// `Timer::EarlyResend` fired: queue the unacknowledged reliable data of
    /// every overdue packet (oldest first, after earlier retransmissions).
    pub(crate) fn on_early_resend_timeout(&mut self, now: u64) {
        if !self.thin() {
            return;
        }
        loop {
            let [first, next] = self.early_candidates();
            let Some((pn, at)) = first else { break };
            if at > now {
                // A held ACK's packet not yet due: the one behind it may be.
                if let Some((q, _)) = next.filter(|&(_, at)| at <= now) {
                    self.early_resend_one(q);
                    continue;
                }
                break;
            }
            self.early_resend_one(pn);
        }
    }

    /// Packet `pn`'s ACK is overdue: resend its data, unless it carries a
    /// second half whose first is unacknowledged too (most likely the
    /// message's ACK was lost; should the peer acknowledge the first alone,
    /// `resend_given_up` sends it then).
    fn early_resend_one(&mut self, pn: u64) {
        let sent = self.recovery.sent();
        if sent
            .get(pn)
            .and_then(|p| p.first_half)
            .is_some_and(|h| sent.get(h).is_some())
        {
            self.recovery.forgo_early_resend(pn);
        } else {
            self.resend_early(pn);
        }
    }

    /// Whether the peer will hold the ACK of the ack-eliciting packet about
    /// to leave now with `chunks` for its `max_ack_delay` (WIRE.md, receiver
    /// rule 7, as `ack::ReceivedPackets::on_packet` applies it: at once on
    /// the second unacknowledged packet, or on one that arrives alone and
    /// leads no fragments; otherwise within the delay). Tells a tick's
    /// second packet, which follows one acknowledged at once, from the
    /// second half of a message, which completes a pair. The peer's delay is
    /// taken as the longest it reported lately, and its threshold as the
    /// default 2. Not modelled: a receiver that sends data of its own (not
    /// quiet) holds a packet that arrives alone too, and an ACK that rides on
    /// its data; either way a held packet is at worst resent later.
    /// Counts the packet into the model (call once per packet sent).
    pub(crate) fn peer_holds_ack(&mut self, now: u64, chunks: &[Chunk]) -> bool {
        // Alone: after a pause, in which the peer's timer sent what it held.
        let alone = now.saturating_sub(self.last_eliciting_sent) > self.rtt.held_delay();
        if alone {
            self.peer_unacked = 0;
        }
        // A fragment may lead more of its message (taken so even when it is
        // the last, which then only pairs as a lead would).
        let leads = chunks.iter().any(|c| !c.whole);
        self.peer_unacked += 1;
        if self.peer_unacked >= 2 || (alone && !leads) {
            self.peer_unacked = 0;
            return false;
        }
        true
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
