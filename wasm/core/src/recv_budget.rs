//! One connection's receive memory budget across all its channels (issue 12,
//! "Budgets before trust"). Every byte held out of order or in reassembly
//! counts, head-of-line reassemblies included, so a peer cannot raise a
//! connection's memory by declaring more channels.
//!
//! A reliable channel must always be able to complete the message it waits
//! for next, or it deadlocks. So `head_reserve` bytes of the budget are kept
//! back from everything else and granted to one channel at a time (the
//! holder) for its head-of-line reassembly. Everything but the holder's head
//! stays within `cap − head_reserve`, so the holder's head (at most
//! `head_reserve`) always fits; once it completes, the grant passes on.
//! Data that does not fit is refused and its packet left unacknowledged: the
//! sender retransmits it once there is room (WIRE.md, receiver obligations 3).

use crate::connection::Connection;
use crate::recv_channel::{Accept, Limits, RecvChannel, FRAGMENT_OVERHEAD, TABLE_SLOT_MAX};
use crate::wire::MIN_FRAGMENT_BYTES;

/// Most a reassembly of one `max_message`-byte message can be charged:
/// its bytes, bookkeeping for the most fragments such a message may have,
/// and its slot in the channel's reassembly table.
pub fn head_reserve(max_message: usize) -> usize {
    max_message
        + FRAGMENT_OVERHEAD * (max_message.div_ceil(MIN_FRAGMENT_BYTES) + 1)
        + TABLE_SLOT_MAX
}

/// Changed only here: by `take_data`, and by a server through `set_ceilings`.
#[derive(Debug)]
pub(crate) struct RecvBudget {
    /// Bytes held now, all channels (kept by delta: O(1) per frame).
    buffered: usize,
    /// `Config::recv_buffer_bytes`.
    cap: usize,
    reserve: usize,
    /// The channel whose head-of-line reassembly may use the reserve.
    holder: Option<u8>,
    /// Channels with part of their head-of-line message held.
    heads: usize,
    /// Most this connection may hold during the current datagram, set by a
    /// server from its server-wide budget (`usize::MAX`: no such limit);
    /// `head_ceiling` for a head-of-line reassembly (the server's reserve,
    /// granted like this one, to one connection at a time).
    ceiling: usize,
    head_ceiling: usize,
}

impl RecvBudget {
    pub fn new(cap: usize, max_message: usize) -> Self {
        RecvBudget {
            buffered: 0,
            cap,
            reserve: head_reserve(max_message).min(cap),
            holder: None,
            heads: 0,
            ceiling: usize::MAX,
            head_ceiling: usize::MAX,
        }
    }

    /// Bytes held now, all channels.
    pub fn buffered(&self) -> usize {
        self.buffered
    }

    /// A server's limits for the current datagram (see `ceiling`).
    pub fn set_ceilings(&mut self, ceiling: usize, head_ceiling: usize) {
        self.ceiling = ceiling;
        self.head_ceiling = head_ceiling;
    }

    /// Limits for channel `ch`'s next message or fragment.
    pub fn limits(&self, ch: u8, window: u64, max_message: usize) -> Limits {
        let general = (self.cap - self.reserve)
            .min(self.ceiling)
            .saturating_sub(self.buffered);
        let head = if self.holder.is_none_or(|h| h == ch) {
            self.cap
                .min(self.head_ceiling)
                .saturating_sub(self.buffered)
        } else {
            general
        };
        Limits {
            window,
            max_message,
            budget: general,
            head_budget: head,
        }
    }

    /// Some channel has part of its head-of-line message.
    pub fn head_in_progress(&self) -> bool {
        self.heads > 0
    }

    /// After channel `ch` took a frame: account for its change (`before`:
    /// its buffered bytes and `head_partial` before) and pass the reserve on
    /// if its head is done.
    pub fn settle(&mut self, ch: u8, before: (usize, bool), chan: &RecvChannel) {
        self.buffered = self.buffered + chan.buffered() - before.0;
        let partial = chan.head_partial();
        self.heads = self.heads + partial as usize - before.1 as usize;
        if self.holder == Some(ch) && !partial {
            self.holder = None;
        }
        // Only a head grant can take the total into the reserve.
        if self.holder.is_none() && partial && self.buffered > self.cap - self.reserve {
            self.holder = Some(ch);
        }
    }
}

impl Connection {
    /// One message (`frag`: None) or fragment (index, count) of a DATA
    /// packet for channel `ch`, within the budget. False: no room, the packet
    /// must stay unacknowledged.
    pub(crate) fn take_data(
        &mut self,
        ch: u8,
        seq: u16,
        frag: Option<(u32, u32)>,
        data: &[u8],
    ) -> bool {
        let l = self.recv_budget.limits(
            ch,
            self.config.reliable_window as u64,
            self.config.max_message_size,
        );
        let rc = &mut self.recv[ch as usize];
        let before = (rc.buffered(), rc.head_partial());
        let a = match frag {
            None => rc.on_message(seq, data, l, &mut self.events),
            Some((index, count)) => rc.on_fragment(seq, index, count, data, l, &mut self.events),
        };
        self.recv_budget.settle(ch, before, rc);
        a == Accept::Ok
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reserve_covers_the_smallest_fragments() {
        // 1 MiB in 64-byte fragments: 16,384 of them (+1 for rounding).
        assert_eq!(head_reserve(1 << 20), (1 << 20) + 16 * 16_385 + 64);
    }
}
