//! Receiver half of one channel: duplicate suppression, ordering, staleness
//! and fragment reassembly, per the channel's kind.

use crate::prelude::*;
use crate::ring::Ring;

use crate::event::Event;
use crate::seq_slots::SeqSlots;
use crate::wire::{expand_u16, ChannelKind};

/// Partial unreliable messages kept per channel: a table of at most this many
/// slots, where a new message evicts the older one sharing its slot.
const MAX_UNRELIABLE_REASSEMBLIES: u64 = 32;
/// Bookkeeping cost charged per fragment slot against the receive budget
/// (the slot and the fragment's buffer header). With fragments of at least
/// `MIN_FRAGMENT_BYTES`, a reassembly costs at most 1.25 × its message size.
pub(crate) const FRAGMENT_OVERHEAD: usize = 16;
/// Most one slot of the reassembly table takes (the head-of-line message's
/// entry, when that table was empty, is part of `head_reserve`).
pub(crate) const TABLE_SLOT_MAX: usize = 64;
const _: () = assert!(SeqSlots::<Reassembly>::SLOT_BYTES <= TABLE_SLOT_MAX);

#[derive(Default)]
struct Reassembly {
    count: u32,
    have: u32,
    bytes: usize,
    /// Fragment `i` at index `i`, grown to the highest index seen (each slot
    /// charged, so a far index costs its sender budget, not us memory).
    frags: Vec<Option<Vec<u8>>>,
}

impl Reassembly {
    fn cost(&self) -> usize {
        self.bytes + self.frags.len() * FRAGMENT_OVERHEAD
    }
}

/// Outcome of offering a message or fragment to the channel.
#[derive(Debug, PartialEq, Eq)]
pub enum Accept {
    /// Taken (delivered, buffered, or recognised as a duplicate).
    Ok,
    /// Reliable data that does not fit the window or buffer: the packet must
    /// stay unacknowledged so the sender retransmits it later.
    NoRoom,
}

/// Limits the connection passes down with each frame.
#[derive(Clone, Copy)]
pub struct Limits {
    pub window: u64,
    pub max_message: usize,
    /// Bytes of receive buffer still free across the connection for
    /// anything but this channel's head-of-line reassembly.
    pub budget: usize,
    /// Free for this channel's head-of-line reassembly (see `recv_budget`).
    pub head_budget: usize,
}

pub struct RecvChannel {
    kind: ChannelKind,
    index: u8,
    /// Ordered: next sequence to deliver. Unordered: all below are delivered.
    next: u64,
    /// Unordered: delivered sequences above `next`.
    delivered_above: SeqSlots<()>,
    /// Ordered: complete messages waiting for a gap to fill.
    pending: SeqSlots<Vec<u8>>,
    /// Unreliable kinds: highest sequence seen (expansion reference).
    highest: Option<u64>,
    /// Sequenced: highest sequence delivered.
    latest_delivered: Option<u64>,
    reassembly: SeqSlots<Reassembly>,
    /// Bytes of held messages and fragment slots (the tables come on top).
    buffered: usize,
    pub delivered: u64,
}

impl RecvChannel {
    pub fn new(index: u8, kind: ChannelKind) -> Self {
        RecvChannel {
            kind,
            index,
            next: 0,
            delivered_above: SeqSlots::default(),
            pending: SeqSlots::default(),
            highest: None,
            latest_delivered: None,
            reassembly: SeqSlots::default(),
            buffered: 0,
            delivered: 0,
        }
    }

    /// Bytes held out of order or in reassembly, with the tables that hold
    /// them (counted against the budget).
    pub fn buffered(&self) -> usize {
        self.buffered
            + self.pending.bytes()
            + self.delivered_above.bytes()
            + self.reassembly.bytes()
    }

    /// A reliable channel has part of the message it waits for next.
    pub fn head_partial(&self) -> bool {
        self.kind.is_reliable() && self.reassembly.contains(self.next)
    }

    fn expand(&self, seq16: u16) -> u64 {
        let reference = if self.kind.is_reliable() {
            self.next
        } else {
            self.highest.map_or(0, |h| h + 1)
        };
        expand_u16(seq16, reference)
    }

    /// True if this reliable sequence was already delivered (or is pending).
    fn already_have(&self, seq: u64) -> bool {
        match self.kind {
            ChannelKind::ReliableOrdered => seq < self.next || self.pending.contains(seq),
            ChannelKind::ReliableUnordered => seq < self.next || self.delivered_above.contains(seq),
            _ => false,
        }
    }

    /// A whole (unfragmented) message.
    pub fn on_message(
        &mut self,
        seq16: u16,
        data: &[u8],
        limits: Limits,
        out: &mut Ring<Event>,
    ) -> Accept {
        let seq = self.expand(seq16);
        if self.kind.is_reliable() {
            if self.already_have(seq) {
                return Accept::Ok;
            }
            if seq >= self.next + limits.window {
                return Accept::NoRoom;
            }
            // Out of order, it is held: ordered, the message in `pending`;
            // unordered, its number in `delivered_above`.
            if seq != self.next {
                let span = seq - self.next + 1;
                let held = match self.kind {
                    ChannelKind::ReliableOrdered => data.len() + self.pending.growth(span),
                    _ => self.delivered_above.growth(span),
                };
                if held > limits.budget {
                    return Accept::NoRoom;
                }
            }
            // Sent whole before a move to smaller datagrams, then again as
            // fragments: this copy won, so their partial reassembly goes.
            if !self.reassembly.is_empty() {
                if let Some(r) = self.reassembly.remove(seq) {
                    self.buffered -= r.cost();
                }
            }
        } else if self.is_stale_unreliable(seq) {
            return Accept::Ok;
        }
        self.complete(seq, data.to_vec(), out);
        Accept::Ok
    }

    /// One fragment of a larger message.
    pub fn on_fragment(
        &mut self,
        seq16: u16,
        index: u32,
        count: u32,
        data: &[u8],
        limits: Limits,
        out: &mut Ring<Event>,
    ) -> Accept {
        let seq = self.expand(seq16);
        let reliable = self.kind.is_reliable();
        if reliable {
            if self.already_have(seq) {
                return Accept::Ok;
            }
            if seq >= self.next + limits.window {
                return Accept::NoRoom;
            }
        } else if self.is_stale_unreliable(seq) {
            return Accept::Ok;
        }
        let r = self.reassembly.get(seq);
        if let Some(r) = r {
            if r.count != count || r.frags.get(index as usize).is_some_and(Option::is_some) {
                // Duplicate, or a count that contradicts earlier fragments.
                return Accept::Ok;
            }
        }
        if r.map_or(0, |r| r.bytes) + data.len() > limits.max_message {
            // Oversized message: drop what we have of it; it can never complete.
            if let Some(r) = self.reassembly.remove(seq) {
                self.buffered -= r.cost();
            }
            return Accept::Ok;
        }
        // What this fragment adds: its bytes, the slots up to its index and,
        // for a new message, the table's growth.
        let slots = (index as usize + 1).saturating_sub(r.map_or(0, |r| r.frags.len()));
        let added = data.len() + slots * FRAGMENT_OVERHEAD;
        let fresh = r.is_none();
        let span = if reliable {
            seq - self.next + 1
        } else {
            let span = self.reassembly.span_for(seq, MAX_UNRELIABLE_REASSEMBLIES);
            if fresh && self.reassembly.rival(seq, span).is_some_and(|o| o > seq) {
                // A newer partial message holds the slot: this one is stale.
                return Accept::Ok;
            }
            span
        };
        let cost = |me: &Self| added + if fresh { me.reassembly.growth(span) } else { 0 };
        // The head-of-line message has a budget of its own (the connection's
        // reserve), so a buffer full of later messages cannot deadlock it.
        let head = reliable && seq == self.next;
        if cost(self)
            > if head {
                limits.head_budget
            } else {
                limits.budget
            }
        {
            if reliable {
                return Accept::NoRoom;
            }
            // Unreliable: older partial messages of this channel give way,
            // so an abandoned reassembly cannot hold the budget forever.
            let before = self.buffered();
            while cost(self) > limits.budget + (before - self.buffered()) {
                let Some(old) = self.reassembly.min_key().filter(|&k| k != seq) else {
                    break;
                };
                if let Some(r) = self.reassembly.remove(old) {
                    self.buffered -= r.cost();
                }
            }
            if cost(self) > limits.budget + (before - self.buffered()) {
                return Accept::Ok;
            }
        }
        if fresh {
            let entry = Reassembly {
                count,
                ..Default::default()
            };
            // Unreliable: the older partial message in this slot gives way.
            if let Some((_, old)) = self.reassembly.insert(span, seq, entry) {
                self.buffered -= old.cost();
            }
        }
        let Some(r) = self.reassembly.get_mut(seq) else {
            return Accept::Ok;
        };
        let i = index as usize;
        if r.frags.len() <= i {
            r.frags.resize_with(i + 1, || None);
        }
        r.frags[i] = Some(data.to_vec());
        r.have += 1;
        r.bytes += data.len();
        self.buffered += added;
        if r.have == r.count {
            if let Some(r) = self.reassembly.remove(seq) {
                self.buffered -= r.cost();
                let mut whole = Vec::with_capacity(r.bytes);
                for f in r.frags.iter().flatten() {
                    whole.extend_from_slice(f);
                }
                self.complete(seq, whole, out);
            }
        }
        Accept::Ok
    }

    fn is_stale_unreliable(&mut self, seq: u64) -> bool {
        self.highest = Some(self.highest.map_or(seq, |h| h.max(seq)));
        self.kind == ChannelKind::UnreliableSequenced
            && self.latest_delivered.is_some_and(|l| seq <= l)
    }

    /// A message is whole: deliver it now or hold it for order.
    fn complete(&mut self, seq: u64, data: Vec<u8>, out: &mut Ring<Event>) {
        match self.kind {
            ChannelKind::ReliableOrdered => {
                if seq != self.next {
                    self.buffered += data.len();
                    self.pending.insert(seq - self.next + 1, seq, data);
                    return;
                }
                self.deliver(data, out);
                self.next += 1;
                while let Some(d) = self.pending.remove(self.next) {
                    self.buffered -= d.len();
                    self.deliver(d, out);
                    self.next += 1;
                }
            }
            ChannelKind::ReliableUnordered => {
                if seq != self.next {
                    self.delivered_above.insert(seq - self.next + 1, seq, ());
                } else {
                    self.next += 1;
                    while self.delivered_above.remove(self.next).is_some() {
                        self.next += 1;
                    }
                }
                self.deliver(data, out);
            }
            ChannelKind::UnreliableSequenced => {
                self.latest_delivered = Some(seq);
                // Partial messages older than this one can never be delivered.
                while let Some(s) = self.reassembly.min_key().filter(|&s| s <= seq) {
                    if let Some(r) = self.reassembly.remove(s) {
                        self.buffered -= r.cost();
                    }
                }
                self.deliver(data, out);
            }
            ChannelKind::Unreliable => self.deliver(data, out),
        }
    }

    fn deliver(&mut self, data: Vec<u8>, out: &mut Ring<Event>) {
        self.delivered += 1;
        out.push_back(Event::Message {
            channel: self.index,
            data,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const L: Limits = Limits {
        window: 1000,
        max_message: 1 << 20,
        budget: 1 << 20,
        head_budget: 1 << 20,
    };

    fn payloads(out: &Ring<Event>) -> Vec<u8> {
        out.iter()
            .map(|e| match e {
                Event::Message { data, .. } => data[0],
                _ => 255,
            })
            .collect()
    }

    #[test]
    fn ordered_channel_holds_until_gap_fills() {
        let mut ch = RecvChannel::new(0, ChannelKind::ReliableOrdered);
        let mut out = Ring::new();
        ch.on_message(1, &[1], L, &mut out);
        ch.on_message(2, &[2], L, &mut out);
        assert!(out.is_empty());
        ch.on_message(0, &[0], L, &mut out);
        ch.on_message(1, &[1], L, &mut out);
        assert_eq!(payloads(&out), vec![0, 1, 2]);
        assert_eq!(ch.buffered(), 0);
    }

    #[test]
    fn unordered_channel_delivers_each_once() {
        let mut ch = RecvChannel::new(0, ChannelKind::ReliableUnordered);
        let mut out = Ring::new();
        for s in [2u16, 0, 2, 1, 0] {
            ch.on_message(s, &[s as u8], L, &mut out);
        }
        assert_eq!(payloads(&out), vec![2, 0, 1]);
    }

    #[test]
    fn sequenced_channel_drops_older_messages() {
        let mut ch = RecvChannel::new(0, ChannelKind::UnreliableSequenced);
        let mut out = Ring::new();
        for s in [0u16, 3, 2, 4] {
            ch.on_message(s, &[s as u8], L, &mut out);
        }
        assert_eq!(payloads(&out), vec![0, 3, 4]);
    }

    #[test]
    fn fragments_reassemble_in_any_order() {
        let mut ch = RecvChannel::new(0, ChannelKind::ReliableOrdered);
        let mut out = Ring::new();
        ch.on_fragment(0, 2, 3, &[5], L, &mut out);
        ch.on_fragment(0, 0, 3, &[1, 2], L, &mut out);
        ch.on_fragment(0, 0, 3, &[1, 2], L, &mut out);
        assert!(out.is_empty());
        ch.on_fragment(0, 1, 3, &[3, 4], L, &mut out);
        assert_eq!(
            out.pop_front(),
            Some(Event::Message {
                channel: 0,
                data: vec![1, 2, 3, 4, 5]
            })
        );
        assert_eq!(ch.buffered(), 0);
    }

    #[test]
    fn whole_copy_of_a_partly_reassembled_message_delivers_once_and_frees_it() {
        let mut ch = RecvChannel::new(0, ChannelKind::ReliableOrdered);
        let mut out = Ring::new();
        ch.on_fragment(0, 0, 2, &[1; 64], L, &mut out);
        ch.on_message(0, &[7; 100], L, &mut out);
        ch.on_fragment(0, 1, 2, &[1; 36], L, &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(ch.buffered(), 0);
    }

    #[test]
    fn reliable_data_beyond_window_is_refused() {
        let mut ch = RecvChannel::new(0, ChannelKind::ReliableOrdered);
        let mut out = Ring::new();
        let small = Limits { window: 4, ..L };
        assert_eq!(ch.on_message(4, &[4], small, &mut out), Accept::NoRoom);
        assert_eq!(ch.on_message(3, &[3], small, &mut out), Accept::Ok);
    }

    #[test]
    fn stale_unreliable_partials_give_way_to_new_ones() {
        let mut ch = RecvChannel::new(0, ChannelKind::Unreliable);
        let mut out = Ring::new();
        let slot = SeqSlots::<Reassembly>::SLOT_BYTES;
        let total = 200 + 2 * slot;
        let left = |ch: &RecvChannel| Limits {
            budget: total - ch.buffered(),
            ..L
        };
        ch.on_fragment(0, 0, 2, &[1; 100], left(&ch), &mut out); // never completes
        assert_eq!(ch.buffered(), 100 + FRAGMENT_OVERHEAD + slot);
        ch.on_fragment(1, 0, 2, &[2; 100], left(&ch), &mut out);
        assert_eq!(
            ch.buffered(),
            100 + FRAGMENT_OVERHEAD + 2 * slot,
            "the older partial was evicted"
        );
        ch.on_fragment(1, 1, 2, &[3; 10], left(&ch), &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(ch.buffered(), 0);
    }

    #[test]
    fn a_new_unreliable_partial_displaces_the_one_sharing_its_slot() {
        let mut ch = RecvChannel::new(0, ChannelKind::Unreliable);
        let mut out = Ring::new();
        for s in 0..32u16 {
            ch.on_fragment(s, 0, 2, &[0; 64], L, &mut out);
        }
        assert_eq!(ch.reassembly.len(), 32);
        ch.on_fragment(32, 0, 2, &[0; 64], L, &mut out);
        assert_eq!(ch.reassembly.len(), 32, "at most 32 partial messages");
        assert!(!ch.reassembly.contains(0) && ch.reassembly.contains(32));
        ch.on_fragment(0, 1, 2, &[0; 8], L, &mut out);
        assert!(out.is_empty(), "the evicted message cannot complete");
        assert!(ch.reassembly.contains(32), "nor evict the newer one");
        ch.on_fragment(32, 1, 2, &[0; 8], L, &mut out);
        assert_eq!(out.len(), 1);
    }

    #[test]
    fn a_far_sequence_number_is_charged_its_table_and_refused_without_room() {
        let mut ch = RecvChannel::new(0, ChannelKind::ReliableOrdered);
        let mut out = Ring::new();
        let table = SeqSlots::<Vec<u8>>::SLOT_BYTES * 1024;
        let tight = Limits { budget: table, ..L };
        assert_eq!(ch.on_message(900, &[1], tight, &mut out), Accept::NoRoom);
        assert_eq!(ch.buffered(), 0);
        let roomy = Limits {
            budget: table + 1,
            ..L
        };
        assert_eq!(ch.on_message(900, &[1], roomy, &mut out), Accept::Ok);
        assert_eq!(ch.buffered(), table + 1);
        for s in 0..900u16 {
            ch.on_message(s, &[0], L, &mut out);
        }
        assert_eq!(out.len(), 901);
        assert_eq!(ch.buffered(), 0, "the emptied table is freed");
    }

    #[test]
    fn an_unordered_channel_charges_the_numbers_it_holds_above_next() {
        let mut ch = RecvChannel::new(0, ChannelKind::ReliableUnordered);
        let mut out = Ring::new();
        let tight = Limits { budget: 0, ..L };
        assert_eq!(ch.on_message(500, &[1], tight, &mut out), Accept::NoRoom);
        assert_eq!(ch.on_message(0, &[0], tight, &mut out), Accept::Ok);
        assert_eq!(ch.on_message(500, &[1], L, &mut out), Accept::Ok);
        assert_eq!(ch.buffered(), SeqSlots::<()>::SLOT_BYTES * 512);
        assert_eq!(ch.on_message(500, &[1], L, &mut out), Accept::Ok);
        assert_eq!(out.len(), 2, "delivered once");
    }

    #[test]
    fn sequenced_delivery_drops_older_partials() {
        let mut ch = RecvChannel::new(0, ChannelKind::UnreliableSequenced);
        let mut out = Ring::new();
        ch.on_fragment(3, 0, 2, &[0; 64], L, &mut out);
        ch.on_fragment(7, 0, 2, &[0; 64], L, &mut out);
        ch.on_message(5, &[5], L, &mut out);
        assert!(!ch.reassembly.contains(3) && ch.reassembly.contains(7));
        ch.on_fragment(7, 1, 2, &[0; 8], L, &mut out);
        assert_eq!(out.len(), 2);
        assert_eq!(ch.buffered(), 0);
    }

    #[test]
    fn oversized_reassembly_is_abandoned() {
        let mut ch = RecvChannel::new(0, ChannelKind::ReliableOrdered);
        let mut out = Ring::new();
        let tiny = Limits {
            max_message: 3,
            ..L
        };
        ch.on_fragment(0, 0, 2, &[1, 2], tiny, &mut out);
        ch.on_fragment(0, 1, 2, &[3, 4], tiny, &mut out);
        assert!(out.is_empty());
        assert_eq!(ch.buffered(), 0);
    }
}
