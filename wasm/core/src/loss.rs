//! Loss recovery on the sender: packets declared lost (RFC 9002 time and
//! packet thresholds, see `sent.rs`) and probe timeouts for tail loss. Early
//! resend on thin streams is in `early_resend.rs`; FEC's hold on the verdict
//! of lost unreliable messages in `fec/rebuild_wait.rs`.

use crate::congestion::LossEvent;
use crate::connection::Connection;
use crate::event::Event;
use crate::send_channel::{Released, SendChannel};
use crate::sent::{Chunk, SentPacket};
use crate::timer::Timer;

/// True if chunk `c` is reliable data its peer has not acknowledged yet, so
/// a lost, probed or overdue packet's copy of it must go again. Not if the
/// message was cut again since (`datagram_size`): the new cut is sent from
/// its first fragment, and the stale copy is no part of it.
pub(crate) fn unacked_reliable(send: &[SendChannel], c: &Chunk) -> bool {
    let ch = &send[c.channel as usize];
    ch.kind().is_reliable() && ch.get(c.seq).is_some_and(|m| m.is_cut(c) && !m.is_acked(c.frag))
}

impl Connection {
    pub(crate) fn detect_lost(&mut self, now: u64) {
        let Some(largest) = self.largest_acked else { return };
        let mut lost = core::mem::take(&mut self.lost_scratch);
        let next = self.sent.detect_lost(now, largest, self.rtt.loss_delay(), self.config.packet_threshold, &mut lost);
        match next {
            Some(t) => self.timers.set(Timer::LossDetection, t),
            None => self.timers.stop(Timer::LossDetection),
        }
        if let Some(newest) = lost.iter().map(|p| p.time_sent).max() {
            let lost_bytes = lost.iter().map(|p| p.size).sum();
            self.cc.on_loss(now, &LossEvent { lost_bytes, newest_lost_sent_at: newest, bytes_in_flight: self.sent.bytes_in_flight() });
        }
        for p in lost.drain(..) {
            self.stats.packets_lost += 1;
            self.on_packet_lost(p);
        }
        self.lost_scratch = lost;
    }

    pub(crate) fn on_packet_lost(&mut self, mut p: SentPacket) {
        for c in &p.chunks {
            if unacked_reliable(&self.send, c) {
                self.retransmit.push_back(*c);
            }
        }
        if self.await_rebuild(&mut p) {
            return;
        }
        for c in &p.chunks {
            let ch = &mut self.send[c.channel as usize];
            if !ch.kind().is_reliable() {
                if let Some(r) = ch.drop_message(c.seq) {
                    self.send_buffered -= r.bytes;
                    self.events.push_back(Event::Lost(r.id));
                }
            }
        }
        self.sent.recycle(p.chunks);
    }

    pub(crate) fn release_lost(&mut self, released: &mut Vec<Released>) {
        for r in released.drain(..) {
            self.send_buffered -= r.bytes;
            self.events.push_back(Event::Lost(r.id));
        }
    }

    /// Tail loss: nothing acknowledged for a probe timeout. Resend the oldest
    /// unacknowledged reliable data (or a PING) in up to two probe packets.
    pub(crate) fn on_probe_timeout(&mut self) {
        self.pto_count = (self.pto_count + 1).min(16);
        self.stop_awaiting_open_group();
        self.probes_due = 2;
        let mut probe: Vec<Chunk> = Vec::new();
        for p in self.sent.oldest(2) {
            for c in &p.chunks {
                if unacked_reliable(&self.send, c) {
                    probe.push(*c);
                }
            }
        }
        if probe.is_empty() {
            self.ping_due = true;
        }
        for c in probe.into_iter().rev() {
            self.retransmit.push_front(c);
        }
    }
}
