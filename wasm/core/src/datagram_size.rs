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
//! set of fragments. Each packet's record of a message (`Chunk::whole`)
//! names the cut it carried. Records of a cut the message no longer has are
//! stale: never sent again (the old whole copy is not fragment 0 of the new
//! cut, which goes out as a first transmission), and their ACK completes
//! the message only if it was whole (the peer has all of it).

use crate::config::{ConfigError, MAX_DATAGRAM_SIZE};
use crate::connection::{Connection, FRAGMENT_RESERVE};
use crate::prelude::*;

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
}
