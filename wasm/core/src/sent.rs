//! Sender side of packet acknowledgement: ack-eliciting packets in flight,
//! what each carried, and time/packet-threshold loss detection (RFC 9002 §6).

use crate::prelude::*;

use crate::congestion::DeliveryStamp;
use crate::ring::Ring;

/// One message fragment carried by a packet (`frag` is 0 when unfragmented).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Chunk {
    pub channel: u8,
    /// The message went whole. A message is cut one of two ways, whole or
    /// in fragments of the connection's fixed fragment size (see
    /// `datagram_size`), so this names the cut the chunk belongs to: one
    /// from a cut the message no longer has is stale (`OutMessage::is_cut`).
    pub whole: bool,
    pub seq: u64,
    pub frag: u32,
}

#[derive(Debug)]
pub struct SentPacket {
    pub pn: u64,
    pub time_sent: u64,
    pub size: u64,
    pub chunks: Vec<Chunk>,
    /// Delivery-rate bookkeeping at send (see `congestion::delivery`).
    pub delivery: DeliveryStamp,
    /// No early resend for this packet (see `early_resend`): its data was
    /// already sent again, or it is itself a retransmission or probe (a
    /// retransmission whose ACK is overdue waits for loss detection or the
    /// probe timeout, which back off; early resends do not), or it carries
    /// the first half of a message sent in halves (its loss shows in the
    /// ACK of the second half or of the repair), or it was given up on
    /// while its `first_half` was unacknowledged.
    pub skip_early_resend: bool,
    /// Carries a second half whose repair followed it at once: the packet
    /// that carried its first half. Resent early only once that one is no
    /// longer in flight (acknowledged, or declared lost: `early_resend`);
    /// cleared once resent.
    pub first_half: Option<u64>,
    /// The peer holds this packet's ACK for its `max_ack_delay`, as far as
    /// the sender can tell (`early_resend::peer_holds_ack`).
    pub ack_held: bool,
}

/// Ack-eliciting packets awaiting acknowledgement, indexed by packet number.
/// Packets that elicit no ack (pure ACKs) are never tracked.
#[derive(Debug, Default)]
pub struct SentPackets {
    base_pn: u64,
    slots: Ring<Option<SentPacket>>,
    bytes_in_flight: u64,
    /// Emptied chunk vectors, reused so steady-state sending does not allocate.
    pool: Vec<Vec<Chunk>>,
}

impl SentPackets {
    pub fn bytes_in_flight(&self) -> u64 {
        self.bytes_in_flight
    }

    pub fn is_empty(&self) -> bool {
        self.bytes_in_flight == 0
    }

    pub fn take_chunk_vec(&mut self) -> Vec<Chunk> {
        self.pool.pop().unwrap_or_default()
    }

    pub fn recycle(&mut self, mut v: Vec<Chunk>) {
        v.clear();
        if self.pool.len() < 64 {
            self.pool.push(v);
        }
    }

    pub fn insert(&mut self, p: SentPacket) {
        if self.slots.is_empty() {
            self.base_pn = p.pn;
        }
        // Packet numbers are dense; pure-ACK packets leave empty slots.
        while self.base_pn + (self.slots.len() as u64) < p.pn {
            self.slots.push_back(None);
        }
        self.bytes_in_flight += p.size;
        self.slots.push_back(Some(p));
    }

    /// Remove and return the packet if it is still awaiting acknowledgement.
    pub fn take(&mut self, pn: u64) -> Option<SentPacket> {
        let idx = usize::try_from(pn.checked_sub(self.base_pn)?).ok()?;
        let p = self.slots.get_mut(idx)?.take()?;
        self.bytes_in_flight -= p.size;
        while let Some(None) = self.slots.front() {
            self.slots.pop_front();
            self.base_pn += 1;
        }
        Some(p)
    }

    pub fn get(&self, pn: u64) -> Option<&SentPacket> {
        let idx = usize::try_from(pn.checked_sub(self.base_pn)?).ok()?;
        self.slots.get(idx)?.as_ref()
    }

    pub fn get_mut(&mut self, pn: u64) -> Option<&mut SentPacket> {
        let idx = usize::try_from(pn.checked_sub(self.base_pn)?).ok()?;
        self.slots.get_mut(idx)?.as_mut()
    }

    /// Tracked packet numbers lie in `base..end` (acks outside have nothing to do).
    pub fn tracked(&self) -> core::ops::Range<u64> {
        self.base_pn..self.base_pn + self.slots.len() as u64
    }

    /// Packets lost by the time or packet threshold, given the largest
    /// acknowledged packet. Returns the lost packets and the earliest time a
    /// remaining older packet will become lost.
    pub fn detect_lost(
        &mut self,
        now: u64,
        largest_acked: u64,
        loss_delay: u64,
        threshold: u64,
        lost: &mut Vec<SentPacket>,
    ) -> Option<u64> {
        let mut next_loss_time: Option<u64> = None;
        let lost_before = now.saturating_sub(loss_delay);
        let mut pns = Vec::new();
        for p in self.slots.iter().flatten() {
            if p.pn >= largest_acked {
                break;
            }
            if p.time_sent <= lost_before || largest_acked >= p.pn + threshold {
                pns.push(p.pn);
            } else {
                let t = p.time_sent + loss_delay;
                next_loss_time = Some(next_loss_time.map_or(t, |n| n.min(t)));
            }
        }
        for pn in pns {
            if let Some(p) = self.take(pn) {
                lost.push(p);
            }
        }
        next_loss_time
    }

    /// The oldest packets still in flight (probe timeouts resend their data).
    pub fn oldest(&self, n: usize) -> impl Iterator<Item = &SentPacket> {
        self.slots.iter().flatten().take(n)
    }

    /// Everything still tracked (for teardown).
    pub fn drain(&mut self) -> impl Iterator<Item = SentPacket> + '_ {
        self.bytes_in_flight = 0;
        self.base_pn += self.slots.len() as u64;
        self.slots.drain().flatten()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn packet(pn: u64, t: u64) -> SentPacket {
        SentPacket {
            pn,
            time_sent: t,
            size: 100,
            chunks: Vec::new(),
            delivery: DeliveryStamp::default(),
            skip_early_resend: false,
            first_half: None,
            ack_held: false,
        }
    }

    #[test]
    fn packet_threshold_and_time_threshold_declare_loss() {
        let mut s = SentPackets::default();
        for pn in 0..6 {
            s.insert(packet(pn, pn * 10));
        }
        s.take(5);
        let mut lost = Vec::new();
        // pn 0,1,2 are ≥3 below 5; pn 3 was sent at 30, loss delay 25 → lost at 55.
        let next = s.detect_lost(50, 5, 25, 3, &mut lost);
        assert_eq!(lost.iter().map(|p| p.pn).collect::<Vec<_>>(), vec![0, 1, 2]);
        assert_eq!(next, Some(55));
        assert_eq!(s.bytes_in_flight(), 200);
    }
}
