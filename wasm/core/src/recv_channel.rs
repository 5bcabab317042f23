//! Receiver half of one channel: duplicate suppression, ordering, staleness
//! and fragment reassembly, per the channel's kind.

use crate::prelude::*;
use crate::ring::Ring;

use crate::event::Event;
use crate::slab_map::SlabMap;
use crate::wire::{expand_u16, ChannelKind};

/// Partial unreliable messages kept per channel; the oldest is evicted.
const MAX_UNRELIABLE_REASSEMBLIES: usize = 32;
/// Bookkeeping cost charged per stored fragment against the receive budget
/// (map entry and buffer header). With fragments of at least
/// `MIN_FRAGMENT_BYTES`, a reassembly costs at most 1.25 × its message size.
pub(crate) const FRAGMENT_OVERHEAD: usize = 16;

#[derive(Default)]
struct Reassembly {
    count: u32,
    bytes: usize,
    frags: SlabMap<u32, Vec<u8>>,
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
    /// Unordered: delivered sequences at or above `next`.
    delivered_above: SlabMap<u64, ()>,
    /// Ordered: complete messages waiting for a gap to fill.
    pending: SlabMap<u64, Vec<u8>>,
    /// Unreliable kinds: highest sequence seen (expansion reference).
    highest: Option<u64>,
    /// Sequenced: highest sequence delivered.
    latest_delivered: Option<u64>,
    reassembly: SlabMap<u64, Reassembly>,
    buffered: usize,
    pub delivered: u64,
}

impl RecvChannel {
    pub fn new(index: u8, kind: ChannelKind) -> Self {
        RecvChannel {
            kind,
            index,
            next: 0,
            delivered_above: SlabMap::new(),
            pending: SlabMap::new(),
            highest: None,
            latest_delivered: None,
            reassembly: SlabMap::new(),
            buffered: 0,
            delivered: 0,
        }
    }

    /// Bytes held out of order or in reassembly (counted against the budget).
    pub fn buffered(&self) -> usize {
        self.buffered
    }

    /// A reliable channel has part of the message it waits for next.
    pub fn head_partial(&self) -> bool {
        self.kind.is_reliable() && self.reassembly.contains_key(self.next)
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
            ChannelKind::ReliableOrdered => seq < self.next || self.pending.contains_key(seq),
            ChannelKind::ReliableUnordered => {
                seq < self.next || self.delivered_above.contains_key(seq)
            }
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
            if self.kind == ChannelKind::ReliableOrdered
                && seq != self.next
                && data.len() > limits.budget
            {
                return Accept::NoRoom;
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
        let cost = data.len() + FRAGMENT_OVERHEAD;
        let entry_exists = self.reassembly.contains_key(seq);
        if let Some(r) = self.reassembly.get(seq) {
            if r.count != count || r.frags.contains_key(index) {
                // Duplicate, or a count that contradicts earlier fragments.
                return Accept::Ok;
            }
        }
        let bytes_so_far = self.reassembly.get(seq).map_or(0, |r| r.bytes);
        if bytes_so_far + data.len() > limits.max_message {
            // Oversized message: drop what we have of it; it can never complete.
            if let Some(r) = self.reassembly.remove(seq) {
                self.buffered -= r.cost();
            }
            return Accept::Ok;
        }
        // The head-of-line message has a budget of its own (the connection's
        // reserve), so a buffer full of later messages cannot deadlock it.
        let head = reliable && seq == self.next;
        if cost
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
            let mut freed = 0;
            while cost > limits.budget + freed {
                let Some(old) = self.reassembly.first_key() else {
                    break;
                };
                if old == seq {
                    break;
                }
                if let Some((_, r)) = self.reassembly.pop_first() {
                    freed += r.cost();
                    self.buffered -= r.cost();
                }
            }
            if cost > limits.budget + freed {
                return Accept::Ok;
            }
        }
        if !reliable && !entry_exists && self.reassembly.len() >= MAX_UNRELIABLE_REASSEMBLIES {
            if let Some((_, old)) = self.reassembly.pop_first() {
                self.buffered -= old.cost();
            }
        }
        let r = self.reassembly.get_or_insert_with(seq, || Reassembly {
            count,
            ..Default::default()
        });
        r.frags.insert(index, data.to_vec());
        r.bytes += data.len();
        self.buffered += cost;
        if r.frags.len() as u32 == r.count {
            if let Some(r) = self.reassembly.remove(seq) {
                self.buffered -= r.cost();
                let mut whole = Vec::with_capacity(r.bytes);
                for (_, f) in r.frags.iter() {
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
                    self.pending.insert(seq, data);
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
                self.delivered_above.insert(seq, ());
                while self.delivered_above.remove(self.next).is_some() {
                    self.next += 1;
                }
                self.deliver(data, out);
            }
            ChannelKind::UnreliableSequenced => {
                self.latest_delivered = Some(seq);
                // Partial messages older than this one can never be delivered.
                while let Some(s) = self.reassembly.first_key() {
                    if s > seq {
                        break;
                    }
                    if let Some((_, r)) = self.reassembly.pop_first() {
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
        let roomy = Limits { budget: 200, ..L };
        ch.on_fragment(0, 0, 2, &[1; 100], roomy, &mut out); // never completes
        let tight = Limits {
            budget: 200 - ch.buffered(),
            ..L
        };
        ch.on_fragment(1, 0, 2, &[2; 100], tight, &mut out);
        assert_eq!(
            ch.buffered(),
            100 + FRAGMENT_OVERHEAD,
            "the older partial was evicted"
        );
        let left = Limits {
            budget: 200 - ch.buffered(),
            ..L
        };
        ch.on_fragment(1, 1, 2, &[3; 10], left, &mut out);
        assert_eq!(out.len(), 1);
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
