//! Datagram size changes at run time: a session that moves to a transport
//! with smaller (or larger) datagrams, e.g. WebSocket's 1200 bytes to
//! Firefox's 1024-byte WebTransport datagrams.
//!
//! The wire fixes a message's fragments once any is sent (the receiver
//! joins fragments by index under one count), so a fragment in flight can
//! never be cut again. Fragments are therefore cut to `min_datagram_size`
//! from the start, and sizes below it are refused. Everything else is cut
//! again: messages never sent, and reliable whole messages too large to go
//! again whole, which start over as fragments under the same sequence
//! number (the receiver keeps whichever copy completes first, once).
//!
//! The fragment size is fixed for the connection's life (`min_datagram_size`
//! − reserve), so a message has only two possible cuts: whole, or its one
//! set of fragments. (A latency-targeted message may be queued in halves
//! instead, `cut_for`: fragments like any others, kept once one is sent;
//! never sent, it is cut again to the two cuts above.) Each packet's
//! record of a message (`Chunk::whole`) names the cut it carried. Records
//! of a cut the message no longer has are stale: never sent again (the old
//! whole copy is not fragment 0 of the new cut, which goes out as a first
//! transmission), and their ACK completes the message only if it was whole
//! (the peer has all of it).

use crate::config::{ConfigError, MAX_DATAGRAM_SIZE};
use crate::connection::{Connection, FRAGMENT_RESERVE};
use crate::prelude::*;
use crate::send_channel::Cut;

impl Connection {
    /// Set the largest datagram this side sends, bytes, from now on (the
    /// host moved the session onto a transport with another limit). Needs
    /// `min_datagram_size..=65507`; below `min_datagram_size` fragments
    /// already in flight could not be sent again, so the size is refused
    /// and nothing changes. Queued messages are cut again as needed (see
    /// the module docs); no datagram of `poll_transmit` exceeds the new
    /// size, though the host's buffer must hold it. (`_now` keeps the
    /// uniform `(now, …)` shape; nothing here depends on it yet.)
    pub fn set_max_datagram_size(&mut self, _now: u64, bytes: usize) -> Result<(), ConfigError> {
        let min = self.config.min_datagram_size;
        if !(min..=MAX_DATAGRAM_SIZE).contains(&bytes) {
            return Err(ConfigError(msg![
                "max_datagram_size: need ",
                min,
                "..=",
                MAX_DATAGRAM_SIZE,
                " bytes (min_datagram_size..), got ",
                bytes
            ]));
        }
        if bytes == self.config.max_datagram_size {
            return Ok(());
        }
        self.config.max_datagram_size = bytes;
        self.rate.set_max_datagram(bytes as u64);
        self.fec.tx.set_max_datagram(bytes);
        let cut = self.cut_sizes();
        let mut recut = Vec::new();
        for ch in 0..self.outbox.channels().len() {
            recut.clear();
            self.outbox.recut(ch, cut, &mut recut);
            if !recut.is_empty() {
                // Their queued retransmissions name the old cut (stale, see
                // the module docs); the fresh cut goes from its first fragment.
                self.recovery
                    .retain_retransmits(|c| c.channel as usize != ch || !recut.contains(&c.seq));
                self.stats.recut_messages += recut.len() as u64;
            }
        }
        self.refresh_timers();
        Ok(())
    }

    /// Largest message sent whole, and the fragment size for larger ones.
    pub(crate) fn cut_sizes(&self) -> (u32, u32) {
        let whole_max = self.config.max_datagram_size - FRAGMENT_RESERVE;
        let frag_size = self
            .config
            .min_datagram_size
            .min(self.config.max_datagram_size)
            - FRAGMENT_RESERVE;
        (whole_max as u32, frag_size as u32)
    }

    /// The cut for a new message of `len` bytes on `channel`: `cut_sizes`,
    /// except that a message of a latency-targeted channel on a path losing
    /// packets goes in two halves, each in a packet of its own, when they
    /// and their repairs cost less than the whole and its copies
    /// (`fec::controller::halves_pay`). Each repair is then half a message,
    /// where a message sent whole needs whole copies to be rebuilt in time:
    /// at 5 % independent loss one XOR of the halves, 1.5 messages of
    /// payload a message instead of 2; in bursts two or three repairs of
    /// different powers (any two of the packets rebuild it), 2.35 instead of
    /// about 3 (issue 16).
    /// Halves stay a message's one cut once one is sent; before that, a
    /// second message queued behind it may make both whole
    /// (`several_go_whole`).
    pub(crate) fn cut_for(&self, channel: u8, len: usize) -> Cut {
        let (whole_max, _) = self.cut_sizes();
        if len >= SPLIT_MIN_BYTES
            && len <= whole_max as usize
            && self.config.channels[channel as usize].latency_target_us > 0
            && self.fec.tx.halves_pay(len)
        {
            let half = len.div_ceil(2) as u32;
            return Cut {
                whole_max: half,
                frag_size: half,
                halves: true,
            };
        }
        Cut::sizes(self.cut_sizes())
    }

    /// Before a message joins its channel's queue: true when it should go
    /// whole because another waits unsent there, which then goes whole too
    /// if it was in halves. With several in a tick, halves each with their
    /// own repair would leave the later messages behind any earlier one's
    /// rare unrebuilt loss (reliable order), while whole they share a
    /// packet that its copies protect. Only while the budget pays a whole
    /// copy (`low-latency`'s does; the SDK's cap on Firefox's WebTransport
    /// does not, and there halves keep their XORs).
    pub(crate) fn several_go_whole(&mut self, channel: u8) -> bool {
        self.config.channels[channel as usize].latency_target_us > 0
            && self.config.fec.budget >= 1.0
            && self.outbox.unsent_before_push(channel, self.cut_sizes())
    }
}

/// Smallest message sent in halves: below it the third packet's headers
/// (≈ 50 bytes with IP and UDP) cost more than half a message saves.
pub(crate) const SPLIT_MIN_BYTES: usize = 160;
