//! Sender half of one channel: queued and unacknowledged messages, indexed by
//! channel sequence number, with per-fragment acknowledgement.

use std::collections::VecDeque;

use crate::config::ChannelConfig;
use crate::event::MessageId;
use crate::wire::ChannelKind;

/// Which fragments of a message were acknowledged.
#[derive(Debug)]
struct FragSet {
    small: u64,
    big: Vec<u64>,
}

impl FragSet {
    fn new(count: u32) -> Self {
        let big = if count > 64 { vec![0; (count as usize).div_ceil(64)] } else { Vec::new() };
        FragSet { small: 0, big }
    }
    fn contains(&self, i: u32) -> bool {
        let bit = 1u64 << (i % 64);
        if self.big.is_empty() {
            i < 64 && self.small & bit != 0
        } else {
            self.big.get((i / 64) as usize).is_some_and(|w| w & bit != 0)
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

#[derive(Debug)]
pub struct OutMessage {
    pub id: MessageId,
    pub data: Vec<u8>,
    /// Payload bytes per fragment; the message is unfragmented when
    /// `frag_count == 1`.
    pub frag_size: u32,
    pub frag_count: u32,
    /// Next fragment to send for the first time.
    pub next_frag: u32,
    acked: FragSet,
    acked_count: u32,
    pub queued_at: u64,
}

impl OutMessage {
    pub fn fragment(&self, index: u32) -> &[u8] {
        if self.frag_count == 1 {
            return &self.data;
        }
        let start = (index as usize * self.frag_size as usize).min(self.data.len());
        let end = (start + self.frag_size as usize).min(self.data.len());
        &self.data[start..end]
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
    messages: VecDeque<Option<OutMessage>>,
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
        SendChannel { config, next_seq: 0, base_seq: 0, messages: VecDeque::new(), cursor: 0, messages_sent: 0 }
    }

    pub fn kind(&self) -> ChannelKind {
        self.config.kind
    }

    /// Queue a message; returns its sequence number. On an
    /// unreliable-sequenced channel, queued messages never sent are now stale
    /// and are returned in `stale` to be reported lost.
    pub fn push(&mut self, now: u64, id: MessageId, data: Vec<u8>, frag_size: u32, stale: &mut Vec<Released>) -> u64 {
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
        let frag_count = if data.len() <= frag_size as usize { 1 } else { data.len().div_ceil(frag_size as usize) as u32 };
        let seq = self.next_seq;
        self.next_seq += 1;
        self.messages.push_back(Some(OutMessage {
            id,
            data,
            frag_size,
            frag_count,
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
        Some(Released { id: m.id, bytes: m.data.len() })
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
    pub fn next_unsent(&mut self, now: u64, window: u64, expired: &mut Vec<Released>) -> Option<u64> {
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
                Some(m) if !self.config.kind.is_reliable() && max_age > 0 && m.next_frag == 0 && now.saturating_sub(m.queued_at) > max_age => {
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

    /// A fragment was acknowledged. Returns the message if it is now complete.
    pub fn on_fragment_acked(&mut self, seq: u64, index: u32) -> Option<Released> {
        let m = self.get_mut(seq)?;
        if !m.acked.insert(index) {
            return None;
        }
        m.acked_count += 1;
        if m.acked_count < m.frag_count {
            return None;
        }
        let r = self.remove(seq);
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
        self.messages.drain(..).flatten().map(|m| m.id)
    }

    pub fn queued_messages(&self) -> u64 {
        self.next_seq - self.cursor
    }
    pub fn unacked_messages(&self) -> u64 {
        self.messages.iter().flatten().filter(|m| m.next_frag > 0).count() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequenced_channel_drops_unsent_stale_messages() {
        let mut ch = SendChannel::new(ChannelConfig::unreliable_sequenced());
        let mut stale = Vec::new();
        ch.push(0, 1, vec![1], 100, &mut stale);
        ch.push(0, 2, vec![2], 100, &mut stale);
        assert_eq!(stale.iter().map(|r| r.id).collect::<Vec<_>>(), vec![1]);
        let mut expired = Vec::new();
        assert_eq!(ch.next_unsent(0, 10, &mut expired), Some(1));
    }

    #[test]
    fn message_completes_when_every_fragment_acked() {
        let mut ch = SendChannel::new(ChannelConfig::reliable_ordered());
        ch.push(0, 7, vec![0; 250], 100, &mut Vec::new());
        assert_eq!(ch.get(0).unwrap().frag_count, 3);
        assert!(ch.on_fragment_acked(0, 0).is_none());
        assert!(ch.on_fragment_acked(0, 0).is_none());
        assert!(ch.on_fragment_acked(0, 2).is_none());
        assert_eq!(ch.on_fragment_acked(0, 1).map(|r| r.id), Some(7));
        assert!(ch.get(0).is_none());
    }

    #[test]
    fn reliable_window_limits_first_transmissions() {
        let mut ch = SendChannel::new(ChannelConfig::reliable_ordered());
        for i in 0..5 {
            ch.push(0, i, vec![0; 10], 100, &mut Vec::new());
        }
        let mut e = Vec::new();
        for seq in 0..2 {
            assert_eq!(ch.next_unsent(0, 2, &mut e), Some(seq));
            ch.get_mut(seq).unwrap().next_frag = 1;
        }
        assert_eq!(ch.next_unsent(0, 2, &mut e), None);
        ch.on_fragment_acked(0, 0);
        assert_eq!(ch.next_unsent(0, 2, &mut e), Some(2));
    }
}
