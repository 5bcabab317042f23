//! How far packet numbers may run ahead. The receiver refuses an authentic
//! DATA packet numbered too far above the largest it has received; the
//! sender never numbers a packet that far past what it knows arrived (its
//! largest acknowledged), however long its path is dead and however much
//! its congestion controller would allow. Without the sender's half, a
//! sender whose uplink died (an `Unlimited` controller, a large window) ran
//! tens of thousands of numbers ahead and every packet after the outage was
//! refused: the session was wedged.
//!
//! Relations: `MAX_SEND_AHEAD` < `MAX_PROBE_AHEAD` < `MAX_PACKET_NUMBER_JUMP`
//! < 2^15. The peer's largest received is at least our largest acknowledged,
//! so whatever we send lands within its jump limit; and every number either
//! side handles lies within 2^15 of its reference, so the 16-bit wire number
//! (and the 16-bit largest of an ACK) always expands to the right one.

use crate::connection::Connection;
use crate::error::DropReason;
use crate::timer::Timer;
use crate::wire::{self, expand_u16};

/// An authentic DATA packet numbered more than this above the largest
/// received is dropped (`DropReason::TooFarAhead`): the sender obeys
/// `MAX_PROBE_AHEAD`, and a peer that jumps anyway would make our ACKs and
/// duplicate suppression misread it.
pub const MAX_PACKET_NUMBER_JUMP: u64 = 16_384;

/// A sender numbers no packet more than this past its largest acknowledged
/// packet (from 0 before any ACK); beyond it, it waits as if
/// congestion-limited. Half the receiver's limit: room for probes above it.
pub const MAX_SEND_AHEAD: u64 = 8_192;

/// Probe packets (probe timeout, path change) and CLOSE may go up to this
/// far past the largest acknowledged, so a sender stopped at
/// `MAX_SEND_AHEAD` can still reach its peer once the path heals; still a
/// quarter of the receiver's limit short of it. Probes back off
/// exponentially, so these 4096 numbers last hours of a dead path. That
/// holds because, while stopped here, hearing from the peer does not end
/// the backoff (it does otherwise, see `handle_data`): a peer heard all
/// through a dead uplink would keep restarting it, and probes at the base
/// interval would spend the reserve in seconds. An ACK or a path change
/// still ends it.
pub const MAX_PROBE_AHEAD: u64 = 12_288;

/// An ack-eliciting packet goes at least once per this many packet numbers
/// (a PING is added if needed): the peer acknowledges only those, and a
/// side that sends nothing but ACKs would otherwise never learn that its
/// numbers arrived and stop at `MAX_SEND_AHEAD`.
const ELICIT_EVERY: u64 = MAX_SEND_AHEAD / 4;

const _: () = assert!(
    ELICIT_EVERY < MAX_SEND_AHEAD
        && MAX_SEND_AHEAD < MAX_PROBE_AHEAD
        && MAX_PROBE_AHEAD < MAX_PACKET_NUMBER_JUMP
        && MAX_PACKET_NUMBER_JUMP < 1 << 15
);

/// What the next packet number may be used for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PnRoom {
    /// Anything.
    Open,
    /// Probes and CLOSE only.
    Probes,
    /// Nothing: even a probe would be refused.
    None,
}

/// The sender's packet numbers: the next one to use and the largest the
/// peer acknowledged. Only this file changes them.
#[derive(Debug, Default)]
pub(crate) struct PacketNumbers {
    next: u64,
    largest_acked: Option<u64>,
}

impl PacketNumbers {
    /// The number the next DATA packet gets.
    pub fn next(&self) -> u64 {
        self.next
    }

    /// The number `next` went on a packet: move past it.
    pub fn advance(&mut self) {
        self.next += 1;
    }

    /// The newest number used, None before any.
    pub fn last_sent(&self) -> Option<u64> {
        self.next.checked_sub(1)
    }

    pub fn largest_acked(&self) -> Option<u64> {
        self.largest_acked
    }

    /// An ACK's largest (expanded): true if no ACK had acknowledged it yet.
    pub fn on_ack(&mut self, largest: u64) -> bool {
        let newly = self.largest_acked.is_none_or(|l| largest > l);
        if newly {
            self.largest_acked = Some(largest);
        }
        newly
    }

    /// Where the next packet number stands against the sender's bounds.
    pub fn room(&self) -> PnRoom {
        let ahead = self.next - self.largest_acked.map_or(0, |l| l + 1);
        if ahead < MAX_SEND_AHEAD {
            PnRoom::Open
        } else if ahead < MAX_PROBE_AHEAD {
            PnRoom::Probes
        } else {
            PnRoom::None
        }
    }
}

impl Connection {
    /// Where the next packet number stands against the sender's bounds.
    pub(crate) fn pn_room(&self) -> PnRoom {
        self.packet_numbers.room()
    }

    /// Add a PING to the next packet if no ack-eliciting packet went in the
    /// last `ELICIT_EVERY` numbers (see there). Any eliciting packet newer
    /// than the largest acknowledged is then in flight, so a sender stopped
    /// at the bound always has its probe timer running.
    pub(crate) fn elicit_if_due(&mut self) {
        // One past the newest ack-eliciting packet ever sent (0 before any).
        let newest = self.recovery.sent().tracked().end;
        if self.packet_numbers.next() >= newest + ELICIT_EVERY {
            self.owed.ping();
        }
    }

    /// Part of `refresh_timers`: a deadline for an ACK or keepalive that
    /// cannot leave (see `pn_room`) would fire again at once, spinning the
    /// host; and with no room even for probes, the probe timer would too.
    /// They return when an ACK opens room.
    pub(crate) fn hold_timers_at_bound(&mut self) {
        let room = self.pn_room();
        if room != PnRoom::Open {
            self.timers.stop(Timer::Ack);
            self.timers.stop(Timer::Keepalive);
        }
        if room == PnRoom::None {
            self.timers.stop(Timer::Probe);
        }
    }

    /// The full packet number of an authentic DATA packet. Checks the tag
    /// first (it covers the full number, so the expansion is part of it),
    /// then refuses numbers too far ahead. Changes nothing.
    pub(crate) fn authenticate(&self, datagram: &[u8]) -> Result<u64, DropReason> {
        if datagram.len() < wire::DATA_HEADER_LEN {
            return Err(DropReason::Malformed);
        }
        let largest = self.received.largest();
        let pn = expand_u16(
            u16::from_le_bytes([datagram[5], datagram[6]]),
            largest.map_or(0, |l| l + 1),
        );
        if !self.keys.rx.verify(datagram, pn) {
            return Err(DropReason::Unauthenticated);
        }
        if pn > largest.unwrap_or(0) + MAX_PACKET_NUMBER_JUMP {
            return Err(DropReason::TooFarAhead);
        }
        Ok(pn)
    }

    /// True if the connection may number a packet for this purpose now.
    pub(crate) fn may_send(&self, probe: bool) -> bool {
        match self.pn_room() {
            PnRoom::Open => true,
            PnRoom::Probes => probe,
            PnRoom::None => false,
        }
    }
}
