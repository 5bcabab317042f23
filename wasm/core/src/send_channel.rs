//! Sender half of one channel: queued and unacknowledged messages, indexed by
//! channel sequence number, with per-fragment acknowledgement.

use crate::prelude::*;
use crate::ring::Ring;

use crate::config::ChannelConfig;
use crate::event::MessageId;
use crate::sent::Chunk;
use crate::wire::ChannelKind;

/// Which fragments of a message were acknowledged.
#[derive(Debug)]
struct FragSet {
    small: u64,
    big: Vec<u64>,
}

impl FragSet {
    fn new(count: u32) -> Self {
        let big = if count > 64 {
            vec![0; (count as usize).div_ceil(64)]
        } else {
            Vec::new()
        };
        FragSet { small: 0, big }
    }
    fn contains(&self, i: u32) -> bool {
        let bit = 1u64 << (i % 64);
        if self.big.is_empty() {
            i < 64 && self.small & bit != 0
        } else {
            self.big
                .get((i / 64) as usize)
                .is_some_and(|w| w & bit != 0)
        }
    }
    /// Returns true if newly inserted.
    fn insert(&mut self, i: u32) -> bool {
        if self.contains(i) {
            return false;
        }
        let bit = 1u64 << (i % 64);
        if self.big.is_empty() {
            self.small |= bit;
        } else if let Some(w) = self.big.get_mut((i / 64) as usize) {
            *w |= bit;
        }
        true
    }
}

/// How a new message is cut (`datagram_size::cut_for`): whole up to
/// `whole_max` bytes, else in `frag_size` fragments; `halves` when that is
/// a cut in two for repair rather than for size.
#[derive(Clone, Copy, Debug)]
pub struct Cut {
    pub whole_max: u32,
    pub frag_size: u32,
    pub halves: bool,
}

impl Cut {
    /// The cut for size alone.
    pub fn sizes((whole_max, frag_size): (u32, u32)) -> Cut {
        Cut {
            whole_max,
            frag_size,
            halves: false,
        }
    }
}

#[derive(Debug)]
pub struct OutMessage {
    pub id: MessageId,
    pub data: Vec<u8>,
    /// Payload bytes per fragment; the message is unfragmented when
    /// `frag_count == 1`.
    pub frag_size: u32,
    pub frag_count: u32,
    /// Cut in two halves for repair (`datagram_size::cut_for`), not for size.
    pub halves: bool,
    /// Next fragment to send for the first time.
    pub next_frag: u32,
    acked: FragSet,
    acked_count: u32,
    pub queued_at: u64,
}

impl OutMessage {
    /// Cut again for size alone, from its first fragment: whole up to
    /// `whole_max`, else `frag_size` fragments (nothing of the new cut sent
    /// or acknowledged).
    fn cut_by_size(&mut self, whole_max: u32, frag_size: u32) {
        self.frag_size = frag_size;
        self.frag_count = cut_count(self.data.len(), whole_max, frag_size);
        self.halves = false;
        self.next_frag = 0;
        self.acked = FragSet::new(self.frag_count);
        self.acked_count = 0;
    }

    pub fn fragment(&self, index: u32) -> &[u8] {
        if self.frag_count == 1 {
            return &self.data;
        }
        let start = (index as usize * self.frag_size as usize).min(self.data.len());
        let end = (start + self.frag_size as usize).min(self.data.len());
        &self.data[start..end]
    }
    /// Whether `c` belongs to the message's current cut (whole or in
    /// fragments); a copy from before `recut` does not.
    pub fn is_cut(&self, c: &Chunk) -> bool {
        c.whole == (self.frag_count == 1)
    }
    pub fn is_acked(&self, index: u32) -> bool {
        self.acked.contains(index)
    }
    pub fn fully_sent(&self) -> bool {
        self.next_frag >= self.frag_count
    }
}

#[derive(Debug)]
pub struct SendChannel {
    pub config: ChannelConfig,
    next_seq: u64,
    /// Sequence number of `messages[0]`.
    base_seq: u64,
    /// `None` once acknowledged or dropped.
    messages: Ring<Option<OutMessage>>,
    /// Sequence number of the first message with fragments never sent.
    cursor: u64,
    pub messages_sent: u64,
}

/// A message leaving the channel's books, with the bytes it released.
pub struct Released {
    pub id: MessageId,
    pub bytes: usize,
}

impl SendChannel {
    pub fn new(config: ChannelConfig) -> Self {
        SendChannel {
            config,
            next_seq: 0,
            base_seq: 0,
            messages: Ring::new(),
            cursor: 0,
            messages_sent: 0,
        }
    }

    pub fn kind(&self) -> ChannelKind {
        self.config.kind
    }

    /// Before another message joins the queue: whether the last one queued
    /// waits with nothing of it sent. If so, and it was cut in halves
    /// (`datagram_size::cut_for`), it is cut again by size, whole when it
    /// fits `whole_max`. On an unreliable-sequenced channel the newcomer
    /// replaces it instead (`push`): false.
    pub fn unsent_before_push(&mut self, (whole_max, frag_size): (u32, u32)) -> bool {
        if self.config.kind == ChannelKind::UnreliableSequenced {
            return false;
        }
        let Some(Some(m)) = self.messages.back_mut() else {
            return false;
        };
        if m.next_frag != 0 {
            return false;
        }
        if m.halves {
            m.cut_by_size(whole_max, frag_size);
        }
        true
    }

    /// Queue a message, cut as `cut` says; returns its sequence number. On an
    /// unreliable-sequenced channel, queued messages never sent are now stale
    /// and are returned in `stale` to be reported lost.
    pub fn push(
        &mut self,
        now: u64,
        id: MessageId,
        data: Vec<u8>,
        cut: Cut,
        stale: &mut Vec<Released>,
    ) -> u64 {
        if self.config.kind == ChannelKind::UnreliableSequenced {
            while let Some(m) = self.slot_mut(self.cursor).and_then(|s| s.as_ref()) {
                if m.next_frag != 0 {
                    break;
                }
                let seq = self.cursor;
                if let Some(r) = self.remove(seq) {
                    stale.push(r);
                }
                self.cursor += 1;
            }
        }
        let frag_count = cut_count(data.len(), cut.whole_max, cut.frag_size);
        let seq = self.next_seq;
        self.next_seq += 1;
        self.messages.push_back(Some(OutMessage {
            id,
            data,
            frag_size: cut.frag_size,
            frag_count,
            halves: cut.halves && frag_count == 2,
            next_frag: 0,
            acked: FragSet::new(frag_count),
            acked_count: 0,
            queued_at: now,
        }));
        self.messages_sent += 1;
        self.trim();
        seq
    }

    fn slot_mut(&mut self, seq: u64) -> Option<&mut Option<OutMessage>> {
        let idx = seq.checked_sub(self.base_seq)?;
        self.messages.get_mut(usize::try_from(idx).ok()?)
    }

    pub fn get(&self, seq: u64) -> Option<&OutMessage> {
        let idx = seq.checked_sub(self.base_seq)?;
        self.messages.get(usize::try_from(idx).ok()?)?.as_ref()
    }

    pub fn get_mut(&mut self, seq: u64) -> Option<&mut OutMessage> {
        self.slot_mut(seq)?.as_mut()
    }

    fn remove(&mut self, seq: u64) -> Option<Released> {
        let m = self.slot_mut(seq)?.take()?;
        Some(Released {
            id: m.id,
            bytes: m.data.len(),
        })
    }

    /// Drop acknowledged slots from the front.
    fn trim(&mut self) {
        while let Some(None) = self.messages.front() {
            self.messages.pop_front();
            self.base_seq += 1;
        }
        self.cursor = self.cursor.max(self.base_seq);
    }

    /// The next message with unsent fragments, if the reliable window allows.
    /// Skips (and reports in `expired`) unreliable messages past their age.
    pub fn next_unsent(
        &mut self,
        now: u64,
        window: u64,
        expired: &mut Vec<Released>,
    ) -> Option<u64> {
        loop {
            if self.cursor >= self.next_seq {
                return None;
            }
            if self.config.kind.is_reliable() && self.cursor >= self.base_seq + window {
                return None;
            }
            let seq = self.cursor;
            let max_age = self.config.max_age_us;
            match self.get(seq) {
                None => self.cursor += 1,
                Some(m) if m.fully_sent() => self.cursor += 1,
                Some(m)
                    if !self.config.kind.is_reliable()
                        && max_age > 0
                        && m.next_frag == 0
                        && now.saturating_sub(m.queued_at) > max_age =>
                {
                    if let Some(r) = self.remove(seq) {
                        expired.push(r);
                    }
                    self.cursor += 1;
                }
                Some(_) => return Some(seq),
            }
            self.trim();
        }
    }

    /// A chunk was acknowledged. Returns the message if it is now complete:
    /// every fragment of its cut acknowledged, or a whole copy sent before it
    /// was cut into fragments (the peer has it whole; its fragments are
    /// duplicates now). A fragment of another cut completes nothing.
    pub fn on_fragment_acked(&mut self, c: &Chunk) -> Option<Released> {
        let m = self.get_mut(c.seq)?;
        if m.is_cut(c) {
            if !m.acked.insert(c.frag) {
                return None;
            }
            m.acked_count += 1;
            if m.acked_count < m.frag_count {
                return None;
            }
        } else if !c.whole {
            return None;
        }
        let r = self.remove(c.seq);
        self.trim();
        r
    }

    /// Unreliable: a fragment was lost, so the whole message is.
    pub fn drop_message(&mut self, seq: u64) -> Option<Released> {
        let r = self.remove(seq);
        self.trim();
        r
    }

    /// Every message still held (for `Lost` receipts at close).
    pub fn drain_all(&mut self) -> impl Iterator<Item = MessageId> + '_ {
        self.base_seq += self.messages.len() as u64;
        self.cursor = self.base_seq;
        self.messages.drain().flatten().map(|m| m.id)
    }

    /// The datagram size changed: cut again, for `whole_max`/`frag_size`,
    /// every message the peer cannot hold part of yet (nothing of its current
    /// cut sent), and every reliable whole message now too large to go again
    /// whole, which starts over as fragments (the peer tells copies apart by
    /// sequence number, whole or fragmented, so it still delivers it once).
    /// A message already sent in fragments keeps them: the wire fixes a
    /// message's fragment count, and `min_datagram_size` keeps them small
    /// enough. Copies of an earlier cut still in flight are stale (`is_cut`):
    /// never sent again, so `next_frag == 0` means no fragment of the current
    /// cut ever left, and a whole copy's ACK completes the message. Returns
    /// the sequence numbers of sent messages cut again.
    pub fn recut(&mut self, whole_max: u32, frag_size: u32, recut_sent: &mut Vec<u64>) {
        let reliable = self.config.kind.is_reliable();
        let mut rewind = None;
        for (i, m) in self.messages.iter_mut().enumerate() {
            let Some(m) = m else { continue };
            let sent = m.next_frag > 0;
            if sent && !(reliable && m.frag_count == 1 && m.data.len() > whole_max as usize) {
                continue;
            }
            let seq = self.base_seq + i as u64;
            m.cut_by_size(whole_max, frag_size);
            if sent {
                recut_sent.push(seq);
                rewind.get_or_insert(seq);
            }
        }
        if let Some(seq) = rewind {
            self.cursor = self.cursor.min(seq);
        }
    }

    pub fn queued_messages(&self) -> u64 {
        self.next_seq - self.cursor
    }
    pub fn unacked_messages(&self) -> u64 {
        self.messages
            .iter()
            .flatten()
            .filter(|m| m.next_frag > 0)
            .count() as u64
    }
}

/// Fragments for a message of `len` bytes: 1 (whole) up to `whole_max`.
fn cut_count(len: usize, whole_max: u32, frag_size: u32) -> u32 {
    if len <= whole_max as usize {
        1
    } else {
        len.div_ceil(frag_size as usize) as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(seq: u64, frag: u32, whole: bool) -> Chunk {
        Chunk {
            channel: 0,
            whole,
            seq,
            frag,
        }
    }

    #[test]
    fn sequenced_channel_drops_unsent_stale_messages() {
        let mut ch = SendChannel::new(ChannelConfig::unreliable_sequenced());
        let mut stale = Vec::new();
        ch.push(0, 1, vec![1], Cut::sizes((100, 100)), &mut stale);
        ch.push(0, 2, vec![2], Cut::sizes((100, 100)), &mut stale);
        assert_eq!(stale.iter().map(|r| r.id).collect::<Vec<_>>(), vec![1]);
        let mut expired = Vec::new();
        assert_eq!(ch.next_unsent(0, 10, &mut expired), Some(1));
    }

    #[test]
    fn message_completes_when_every_fragment_acked() {
        let mut ch = SendChannel::new(ChannelConfig::reliable_ordered());
        ch.push(0, 7, vec![0; 250], Cut::sizes((100, 100)), &mut Vec::new());
        assert_eq!(ch.get(0).unwrap().frag_count, 3);
        assert!(ch.on_fragment_acked(&chunk(0, 0, false)).is_none());
        assert!(ch.on_fragment_acked(&chunk(0, 0, false)).is_none());
        assert!(ch.on_fragment_acked(&chunk(0, 2, false)).is_none());
        assert_eq!(
            ch.on_fragment_acked(&chunk(0, 1, false)).map(|r| r.id),
            Some(7)
        );
        assert!(ch.get(0).is_none());
    }

    #[test]
    fn reliable_window_limits_first_transmissions() {
        let mut ch = SendChannel::new(ChannelConfig::reliable_ordered());
        for i in 0..5 {
            ch.push(0, i, vec![0; 10], Cut::sizes((100, 100)), &mut Vec::new());
        }
        let mut e = Vec::new();
        for seq in 0..2 {
            assert_eq!(ch.next_unsent(0, 2, &mut e), Some(seq));
            ch.get_mut(seq).unwrap().next_frag = 1;
        }
        assert_eq!(ch.next_unsent(0, 2, &mut e), None);
        ch.on_fragment_acked(&chunk(0, 0, true));
        assert_eq!(ch.next_unsent(0, 2, &mut e), Some(2));
    }

    #[test]
    fn a_message_waiting_in_halves_goes_whole_once_another_joins_it() {
        let halves = Cut {
            whole_max: 200,
            frag_size: 200,
            halves: true,
        };
        let mut ch = SendChannel::new(ChannelConfig::reliable_ordered());
        assert!(!ch.unsent_before_push((1000, 1000)), "nothing queued");
        ch.push(0, 1, vec![0; 400], halves, &mut Vec::new());
        assert!(ch.get(0).unwrap().halves);
        assert!(ch.unsent_before_push((1000, 1000)), "one waits unsent");
        let m = ch.get(0).unwrap();
        assert!(!m.halves && m.frag_count == 1 && m.fragment(0).len() == 400);
        // Once anything of it is sent, it keeps its cut.
        ch.push(0, 2, vec![0; 400], halves, &mut Vec::new());
        ch.get_mut(1).unwrap().next_frag = 1;
        assert!(!ch.unsent_before_push((1000, 1000)));
        assert!(ch.get(1).unwrap().halves);
        // Unreliable-sequenced: the newcomer replaces what waits.
        let mut seq = SendChannel::new(ChannelConfig::unreliable_sequenced());
        seq.push(0, 1, vec![0; 400], halves, &mut Vec::new());
        assert!(!seq.unsent_before_push((1000, 1000)));
        assert!(seq.get(0).unwrap().halves);
    }

    /// A reliable whole message sent, then cut into fragments (`recut`).
    fn sent_whole_then_cut() -> SendChannel {
        let mut ch = SendChannel::new(ChannelConfig::reliable_ordered());
        ch.push(0, 7, vec![0; 150], Cut::sizes((200, 100)), &mut Vec::new());
        assert_eq!(ch.next_unsent(0, 10, &mut Vec::new()), Some(0));
        ch.get_mut(0).unwrap().next_frag = 1;
        let mut recut = Vec::new();
        ch.recut(120, 100, &mut recut);
        assert_eq!((recut, ch.get(0).unwrap().frag_count), (vec![0], 2));
        ch
    }

    #[test]
    fn ack_of_the_whole_copy_completes_a_message_cut_again_into_fragments() {
        let mut ch = sent_whole_then_cut();
        assert_eq!(
            ch.on_fragment_acked(&chunk(0, 0, true)).map(|r| r.id),
            Some(7)
        );
    }

    #[test]
    fn the_whole_copy_is_not_fragment_0_of_the_new_cut() {
        let mut ch = sent_whole_then_cut();
        let m = ch.get(0).unwrap();
        assert!(!m.is_cut(&chunk(0, 0, true)) && m.is_cut(&chunk(0, 0, false)));
        // Grown back before any fragment went: whole again, and the first
        // fragment's ACK (were one in flight) could not complete it.
        ch.recut(200, 100, &mut Vec::new());
        assert_eq!(ch.get(0).unwrap().frag_count, 1);
        assert!(ch.on_fragment_acked(&chunk(0, 0, false)).is_none());
    }
}
