//! A packet declared lost may still be rebuilt by the peer from repair, and
//! then acknowledged late. Its reliable data is queued for retransmission at
//! once as usual (the backstop; duplicates are suppressed), but the verdict
//! on its unreliable messages waits for an ACK that settles it: one that
//! covers the packet (rebuilt: `Acked`), or one that acknowledges a packet
//! sent after the repair without covering it (the peer could not rebuild
//! it: `Lost`). So a message reported `Lost` is never delivered.

use crate::connection::Connection;
use crate::event::Event;
use crate::fec::RepairFate;
use crate::prelude::*;
use crate::sent::{Chunk, SentPacket};
use crate::wire::AckRanges;

#[derive(Debug)]
pub(crate) struct Awaiting {
    pn: u64,
    chunks: Vec<Chunk>,
}

impl Connection {
    /// A lost packet: if the peer may rebuild it, hold its messages (returns
    /// true and takes the chunks); otherwise false.
    pub(crate) fn await_rebuild(&mut self, p: &mut SentPacket) -> bool {
        if self.fec.tx.repair_of(p.pn).is_none() {
            return false;
        }
        let chunks = core::mem::take(&mut p.chunks);
        self.fec.awaiting.push_back(Awaiting { pn: p.pn, chunks });
        true
    }

    /// A probe timeout: a lost packet whose group is still open would wait
    /// for more data to close it, which a quiet sender may never send. Drop
    /// that group, so the probe's ACK settles the packet (`Lost`).
    pub(crate) fn stop_awaiting_open_group(&mut self) {
        let open = self
            .fec
            .awaiting
            .iter()
            .any(|a| self.fec.tx.repair_of(a.pn) == Some(RepairFate::Pending));
        if open {
            self.fec.tx.abandon();
        }
    }

    /// An ACK arrived (largest expanded): settle the awaited packets it can.
    pub(crate) fn ack_awaited(&mut self, largest: u64, first_range: u64, ranges: &[u8]) {
        let mut i = 0;
        while i < self.fec.awaiting.len() {
            let Some(pn) = self.fec.awaiting.get(i).map(|a| a.pn) else {
                break;
            };
            let rebuilt = ack_covers(pn, largest, first_range, ranges);
            let settled = rebuilt
                || match self.fec.tx.repair_of(pn) {
                    Some(RepairFate::Pending) => false,
                    Some(RepairFate::SentIn(repair_pn)) => largest > repair_pn,
                    None => true,
                };
            if !settled {
                i += 1;
                continue;
            }
            let Some(a) = self.fec.awaiting.remove(i) else {
                break;
            };
            for c in &a.chunks {
                let settled = if rebuilt {
                    self.outbox.on_acked(c).map(Event::Acked)
                } else {
                    self.outbox.on_lost_unreliable(c).map(Event::Lost)
                };
                if let Some(ev) = settled {
                    self.events.push_back(ev);
                }
            }
            self.recovery.recycle(a.chunks);
        }
    }
}

/// Whether the ACK's ranges (WIRE.md's layout) include `pn`.
fn ack_covers(pn: u64, largest: u64, first_range: u64, ranges: &[u8]) -> bool {
    let mut hi = largest;
    let mut lo = largest.saturating_sub(first_range);
    let mut iter = AckRanges::new(ranges);
    loop {
        if (lo..=hi).contains(&pn) {
            return true;
        }
        if pn > hi {
            return false;
        }
        let Some((gap, len)) = iter.next() else {
            return false;
        };
        let Some(next_hi) = lo.checked_sub(gap + 2) else {
            return false;
        };
        hi = next_hi;
        lo = hi.saturating_sub(len);
    }
}
