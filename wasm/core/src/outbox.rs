//! The messages this side sends: its channels in priority order and the
//! bytes they hold against `send_buffer_bytes`. Changed only here: `send`
//! queues, the packetizer takes, ACKs and losses settle; each settled
//! message's `MessageId` goes back to the caller for its event.

use crate::ring::Ring;

use crate::config::ChannelConfig;
use crate::event::{Event, MessageId};
use crate::prelude::*;
use crate::send_channel::{Cut, Released, SendChannel};
use crate::sent::Chunk;

pub(crate) struct Outbox {
    channels: Vec<SendChannel>,
    /// Order in which channels get room in a datagram (priority, then index).
    order: Vec<u8>,
    /// Bytes of messages queued or unacknowledged, all channels.
    buffered: usize,
    next_id: MessageId,
    released_scratch: Vec<Released>,
}

impl Outbox {
    pub fn new(channels: &[ChannelConfig]) -> Outbox {
        // Highest priority first, ties in index order. An insertion sort: a
        // few channels, once per connection, and the library sort is ~7 KB of wasm.
        let mut order: Vec<u8> = Vec::with_capacity(channels.len());
        for (i, ch) in channels.iter().enumerate() {
            let at = order
                .iter()
                .position(|&j| channels[j as usize].priority < ch.priority);
            order.insert(at.unwrap_or(order.len()), i as u8);
        }
        Outbox {
            channels: channels.iter().map(|&c| SendChannel::new(c)).collect(),
            order,
            buffered: 0,
            next_id: 1,
            released_scratch: Vec::new(),
        }
    }

    pub fn channels(&self) -> &[SendChannel] {
        &self.channels
    }

    pub fn channel(&self, ch: u8) -> &SendChannel {
        &self.channels[ch as usize]
    }

    /// Bytes queued or unacknowledged, all channels.
    pub fn buffered(&self) -> usize {
        self.buffered
    }

    /// First transmissions are waiting.
    pub fn has_queued(&self) -> bool {
        self.channels.iter().any(|s| s.queued_messages() > 0)
    }

    /// Messages wait on a channel `on` picks (by index).
    pub fn has_queued_on(&self, on: impl Fn(usize) -> bool) -> bool {
        self.channels
            .iter()
            .enumerate()
            .any(|(i, s)| on(i) && s.queued_messages() > 0)
    }

    /// Queue a message on channel `ch` (checked by the caller); messages it
    /// makes stale are reported `Lost` in `events`.
    pub fn push(
        &mut self,
        now: u64,
        ch: u8,
        data: Vec<u8>,
        cut: Cut,
        events: &mut Ring<Event>,
    ) -> MessageId {
        let id = self.next_id;
        self.next_id += 1;
        self.buffered += data.len();
        let mut stale = core::mem::take(&mut self.released_scratch);
        self.channels[ch as usize].push(now, id, data, cut, &mut stale);
        self.release_lost(&mut stale, events);
        self.released_scratch = stale;
        id
    }

    /// See `SendChannel::unsent_before_push`.
    pub fn unsent_before_push(&mut self, ch: u8, sizes: (u32, u32)) -> bool {
        self.channels[ch as usize].unsent_before_push(sizes)
    }

    /// First transmissions, highest-priority channel first: `write` gets
    /// each chunk, its bytes and its message's fragment count, and returns
    /// false when the packet is full. Unreliable messages past their age
    /// are dropped on the way and reported `Lost` in `events`.
    pub fn fill(
        &mut self,
        now: u64,
        window: u64,
        events: &mut Ring<Event>,
        mut write: impl FnMut(Chunk, &[u8], u32, bool) -> bool,
    ) {
        let mut expired = core::mem::take(&mut self.released_scratch);
        for &ch in &self.order {
            let send = &mut self.channels[ch as usize];
            while let Some(seq) = send.next_unsent(now, window, &mut expired) {
                let Some(m) = send.get(seq) else { break };
                let frag = m.next_frag;
                let c = Chunk {
                    channel: ch,
                    whole: m.frag_count == 1,
                    seq,
                    frag,
                };
                if !write(c, m.fragment(frag), m.frag_count, m.halves) {
                    break;
                }
                if let Some(m) = send.get_mut(seq) {
                    m.next_frag += 1;
                }
            }
        }
        self.release_lost(&mut expired, events);
        self.released_scratch = expired;
    }

    /// Chunk `c` was acknowledged: the message it completes, if any.
    // Once per acknowledged chunk: inlined into the ACK loop, as the
    // channel's own call was before this moved here (~0.6% of S3's cost).
    #[inline(always)]
    pub fn on_acked(&mut self, c: &Chunk) -> Option<MessageId> {
        let r = self.channels[c.channel as usize].on_fragment_acked(c)?;
        self.buffered -= r.bytes;
        Some(r.id)
    }

    /// Chunk `c`'s packet was lost: its message if unreliable (dropped now).
    pub fn on_lost_unreliable(&mut self, c: &Chunk) -> Option<MessageId> {
        let ch = &mut self.channels[c.channel as usize];
        if ch.kind().is_reliable() {
            return None;
        }
        let r = ch.drop_message(c.seq)?;
        self.buffered -= r.bytes;
        Some(r.id)
    }

    /// Cut channel `ch`'s queued messages again (`datagram_size`); the
    /// sequence numbers of those whose cut changed go in `recut`.
    pub fn recut(&mut self, ch: usize, (whole_max, frag_size): (u32, u32), recut: &mut Vec<u64>) {
        self.channels[ch].recut(whole_max, frag_size, recut);
    }

    /// The connection ended: every outstanding message is `Lost`.
    pub fn close(&mut self, events: &mut Ring<Event>) {
        for ch in &mut self.channels {
            for id in ch.drain_all() {
                events.push_back(Event::Lost(id));
            }
        }
        self.buffered = 0;
    }

    fn release_lost(&mut self, released: &mut Vec<Released>, events: &mut Ring<Event>) {
        for r in released.drain(..) {
            self.buffered -= r.bytes;
            events.push_back(Event::Lost(r.id));
        }
    }
}
