//! Acknowledgements and loss recovery on the sender: ACK frames retire sent
//! packets (RTT sample, congestion controller, `Acked` events), packets
//! declared lost (RFC 9002 time and packet thresholds, see `sent.rs`) and
//! probe timeouts for tail loss. Early
//! resend on thin streams is in `early_resend.rs`; FEC's hold on the verdict
//! of lost unreliable messages in `fec/rebuild_wait.rs`.

use crate::congestion::LossEvent;
use crate::connection::Connection;
use crate::event::Event;
use crate::prelude::*;
use crate::ring::Ring;
use crate::send_channel::SendChannel;
use crate::sent::{Chunk, SentPacket, SentPackets};
use crate::timer::Timer;
use crate::wire::{expand_u16, AckRanges};

/// True if chunk `c` is reliable data its peer has not acknowledged yet, so
/// a lost, probed or overdue packet's copy of it must go again. Not if the
/// message was cut again since (`datagram_size`): the new cut is sent from
/// its first fragment, and the stale copy is no part of it.
pub(crate) fn unacked_reliable(send: &[SendChannel], c: &Chunk) -> bool {
    let ch = &send[c.channel as usize];
    ch.kind().is_reliable()
        && ch
            .get(c.seq)
            .is_some_and(|m| m.is_cut(c) && !m.is_acked(c.frag))
}

/// The sender's loss recovery: packets in flight, data queued to go again,
/// the probe timeout's backoff. Only this file changes it; other files read
/// `sent()` and call the methods below (early resend: `resend_early`).
#[derive(Debug, Default)]
pub(crate) struct Recovery {
    sent: SentPackets,
    /// Reliable data to send again, oldest first.
    retransmit: Ring<Chunk>,
    /// Probe timeouts since the last ACK (the backoff's exponent, ≤ 16).
    pto_count: u32,
    lost_scratch: Vec<SentPacket>,
}

impl Recovery {
    /// Ack-eliciting packets in flight.
    pub fn sent(&self) -> &SentPackets {
        &self.sent
    }

    pub fn bytes_in_flight(&self) -> u64 {
        self.sent.bytes_in_flight()
    }

    pub fn pto_count(&self) -> u32 {
        self.pto_count
    }

    /// Probe at the base interval again (the peer is back, or the path
    /// changed).
    pub fn reset_backoff(&mut self) {
        self.pto_count = 0;
    }

    /// An ack-eliciting packet left: track it.
    pub fn on_sent(&mut self, p: SentPacket) {
        self.sent.insert(p);
    }

    /// A chunk list for the next packet, from the pool.
    pub fn take_chunk_vec(&mut self) -> Vec<Chunk> {
        self.sent.take_chunk_vec()
    }

    pub fn recycle(&mut self, chunks: Vec<Chunk>) {
        self.sent.recycle(chunks);
    }

    /// The oldest chunk queued to go again (still queued).
    pub fn next_retransmit(&self) -> Option<Chunk> {
        self.retransmit.front().copied()
    }

    /// `next_retransmit` was sent, or needs sending no more.
    pub fn pop_retransmit(&mut self) {
        self.retransmit.pop_front();
    }

    pub fn has_retransmits(&self) -> bool {
        !self.retransmit.is_empty()
    }

    /// Keep only the queued retransmissions `keep` accepts.
    pub fn retain_retransmits(&mut self, keep: impl FnMut(&Chunk) -> bool) {
        self.retransmit.retain(keep);
    }

    /// The connection ended: forget every packet and retransmission.
    pub fn clear(&mut self) {
        self.retransmit.clear();
        for p in self.sent.drain() {
            drop(p);
        }
    }

    /// Packet `pn` will not be resent early (see `early_resend`).
    pub fn forgo_early_resend(&mut self, pn: u64) {
        if let Some(p) = self.sent.get_mut(pn) {
            p.skip_early_resend = true;
        }
    }

    /// Early resend (see `early_resend`): queue packet `pn`'s unacknowledged
    /// reliable data not queued already, once per packet. True if any was.
    pub fn resend_early(&mut self, pn: u64, send: &[SendChannel]) -> bool {
        let Some(p) = self.sent.get_mut(pn) else {
            return false;
        };
        p.skip_early_resend = true; // resent now: once is enough
        p.first_half = None;
        let mut queued = false;
        for &c in &p.chunks {
            if unacked_reliable(send, &c) && !self.retransmit.contains(&c) {
                self.retransmit.push_back(c);
                queued = true;
            }
        }
        queued
    }
}

impl Connection {
    pub(crate) fn on_ack(
        &mut self,
        now: u64,
        largest16: u16,
        delay_us: u64,
        first_range: u64,
        ranges: &[u8],
    ) {
        let Some(last_sent) = self.packet_numbers.last_sent() else {
            return;
        };
        let largest = expand_u16(largest16, last_sent);
        if largest > last_sent {
            return; // acknowledges a packet never sent: ignore
        }
        let largest_newly_acked = self.recovery.sent.get(largest).map(|p| p.time_sent);
        let mut acked_any = false;
        let (mut acked_bytes, mut newest_acked_sent_at) = (0, 0);
        let mut hi = largest;
        let mut lo = largest.saturating_sub(first_range);
        let mut iter = AckRanges::new(ranges);
        loop {
            let tracked = self.recovery.sent.tracked();
            for pn in lo.max(tracked.start)..=hi.min(tracked.end.saturating_sub(1)) {
                if let Some(p) = self.recovery.sent.take(pn) {
                    acked_any = true;
                    acked_bytes += p.size;
                    newest_acked_sent_at = newest_acked_sent_at.max(p.time_sent);
                    self.on_packet_acked(now, p);
                }
            }
            let Some((gap, len)) = iter.next() else { break };
            let Some(next_hi) = lo.checked_sub(gap + 2) else {
                break;
            };
            hi = next_hi;
            lo = hi.saturating_sub(len);
        }
        let mut rtt_sampled = false;
        if self.packet_numbers.on_ack(largest) {
            if let Some(sent_at) = largest_newly_acked {
                let delay = delay_us.min(self.config.max_ack_delay_us);
                self.rtt
                    .update(now.saturating_sub(sent_at), delay, delay_us);
                rtt_sampled = true;
            }
        }
        if acked_any {
            self.recovery.pto_count = 0;
            self.rate.on_ack(
                now,
                acked_bytes,
                newest_acked_sent_at,
                self.recovery.sent.bytes_in_flight(),
                rtt_sampled,
                &self.rtt,
            );
        }
        self.ack_awaited(largest, first_range, ranges);
        self.detect_lost(now);
        if acked_any {
            self.resend_given_up(largest);
        }
    }

    fn on_packet_acked(&mut self, now: u64, p: SentPacket) {
        self.rate
            .on_packet_acked(now, &p.delivery, p.time_sent, p.size);
        for c in &p.chunks {
            if let Some(id) = self.outbox.on_acked(c) {
                self.events.push_back(Event::Acked(id));
            }
        }
        self.recovery.sent.recycle(p.chunks);
    }

    pub(crate) fn detect_lost(&mut self, now: u64) {
        let Some(largest) = self.packet_numbers.largest_acked() else {
            return;
        };
        let mut lost = core::mem::take(&mut self.recovery.lost_scratch);
        let next = self.recovery.sent.detect_lost(
            now,
            largest,
            self.rtt.loss_delay(),
            self.config.packet_threshold,
            &mut lost,
        );
        match next {
            Some(t) => self.timers.set(Timer::LossDetection, t),
            None => self.timers.stop(Timer::LossDetection),
        }
        if let Some(newest) = lost.iter().map(|p| p.time_sent).max() {
            let lost_bytes = lost.iter().map(|p| p.size).sum();
            self.rate.on_loss(
                now,
                &LossEvent {
                    lost_bytes,
                    newest_lost_sent_at: newest,
                    bytes_in_flight: self.recovery.sent.bytes_in_flight(),
                },
            );
        }
        for p in lost.drain(..) {
            self.stats.packets_lost += 1;
            self.on_packet_lost(p);
        }
        self.recovery.lost_scratch = lost;
    }

    pub(crate) fn on_packet_lost(&mut self, mut p: SentPacket) {
        for c in &p.chunks {
            if unacked_reliable(self.outbox.channels(), c) {
                self.recovery.retransmit.push_back(*c);
            }
        }
        if self.await_rebuild(&mut p) {
            return;
        }
        for c in &p.chunks {
            if let Some(id) = self.outbox.on_lost_unreliable(c) {
                self.events.push_back(Event::Lost(id));
            }
        }
        self.recovery.sent.recycle(p.chunks);
    }

    /// Tail loss: nothing acknowledged for a probe timeout. Resend the oldest
    /// unacknowledged reliable data (or a PING) in up to two probe packets.
    pub(crate) fn on_probe_timeout(&mut self) {
        self.recovery.pto_count = (self.recovery.pto_count + 1).min(16);
        self.stop_awaiting_open_group();
        self.owed.probes(2);
        let mut probe: Vec<Chunk> = Vec::new();
        for p in self.recovery.sent.oldest(2) {
            for c in &p.chunks {
                if unacked_reliable(self.outbox.channels(), c) {
                    probe.push(*c);
                }
            }
        }
        if probe.is_empty() {
            self.owed.ping();
        }
        for c in probe.into_iter().rev() {
            self.recovery.retransmit.push_front(c);
        }
    }
}
