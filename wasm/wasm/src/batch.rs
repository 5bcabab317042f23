//! The outputs of one drain in as few boundary calls as possible: `transmit`
//! runs `poll_transmit` until nothing is due (or the batch is full) and
//! `takeEvents` runs `poll_event` likewise, each writing one record per
//! output into a table JS reads through a view. The table is allocated once
//! and never moves, so JS takes its address once (`tablePtr`); the bytes the
//! records point at (datagrams, message data, reasons) stay valid until the
//! next call of the same kind. The layout is generated into
//! sdk/src/wasm-codes.ts (`BATCH`) by sdk/scripts/gen-codes.mjs.

use crate::prelude::*;
use alloc::boxed::Box;

/// Most records one `transmit` or `takeEvents` call writes.
pub const RECORDS: usize = 32;
/// Words (u32) before the tables: the mutation count (see `Batch::touch`).
pub const HEADER_WORDS: usize = 1;
/// Words per datagram record: address, length, connection ID, 1 if it goes
/// to the connection's candidate address (server only).
pub const TX_WORDS: usize = 4;
/// Words per event record: kind, connection ID (server), channel or close
/// kind, bytes' address, bytes' length, message ID or close code (low and
/// high 32 bits), unused.
pub const EV_WORDS: usize = 8;
/// Where the datagram table starts, in words.
pub(crate) const TX_AT: usize = HEADER_WORDS;
/// Where the event table starts, in words.
pub(crate) const EV_AT: usize = TX_AT + RECORDS * TX_WORDS;

/// The tables and the buffers their records point into.
pub(crate) struct Batch {
    table: Box<[u32]>,
    /// Datagrams of the last `transmit`, back to back.
    out: Vec<u8>,
    /// Bytes of the last `takeEvents`' events, back to back.
    bytes: Vec<u8>,
}

impl Default for Batch {
    fn default() -> Self {
        Batch {
            table: vec![0; EV_AT + RECORDS * EV_WORDS].into_boxed_slice(),
            out: Vec::new(),
            bytes: Vec::new(),
        }
    }
}

impl Batch {
    pub fn table_ptr(&self) -> usize {
        self.table.as_ptr() as usize
    }

    /// Count a call that may have queued events: JS polls again after
    /// dispatching a short batch only if this count moved meanwhile.
    pub fn touch(&mut self) {
        if let Some(count) = self.table.first_mut() {
            *count = count.wrapping_add(1);
        }
    }

    /// Up to `max` (≤ RECORDS) datagrams of at most `mds` bytes each from
    /// `poll`, which returns a datagram's length, connection ID and
    /// candidate flag. Returns how many.
    pub fn transmit(
        &mut self,
        max: usize,
        mds: usize,
        mut poll: impl FnMut(&mut [u8]) -> Option<(usize, u32, bool)>,
    ) -> u32 {
        self.touch();
        let mut used = 0;
        let mut n = 0;
        // Records through exact chunks: no index checks (nor their panics) in the module.
        for rec in self.table[TX_AT..EV_AT]
            .chunks_exact_mut(TX_WORDS)
            .take(max)
        {
            if self.out.len() < used + mds {
                self.out.resize(used + mds, 0);
            }
            let Some((len, conn, candidate)) = poll(&mut self.out[used..used + mds]) else {
                break;
            };
            rec.copy_from_slice(&[used as u32, len as u32, conn, candidate as u32]);
            used += len;
            n += 1;
        }
        // Offsets become addresses once the buffer stopped growing.
        let base = self.out.as_ptr() as u32;
        for rec in self.table[TX_AT..EV_AT].chunks_exact_mut(TX_WORDS).take(n) {
            rec[0] += base;
        }
        n as u32
    }

    /// Up to `max` (≤ RECORDS) events from `poll`. Returns how many.
    pub fn events(
        &mut self,
        max: usize,
        mut poll: impl FnMut() -> Option<(u32, ricochet_core::Event)>,
    ) -> u32 {
        self.bytes.clear();
        let mut n = 0;
        for rec in self.table[EV_AT..].chunks_exact_mut(EV_WORDS).take(max) {
            let Some((conn, ev)) = poll() else {
                break;
            };
            let (kind, a, bytes, wide) = crate::events::store(ev);
            rec.copy_from_slice(&[
                kind,
                conn,
                a,
                self.bytes.len() as u32,
                bytes.len() as u32,
                wide as u32,
                (wide >> 32) as u32,
                0,
            ]);
            // One buffer for all (a copy of ~100 bytes a message costs less
            // than the module size of keeping each event's own).
            self.bytes.extend_from_slice(&bytes);
            n += 1;
        }
        let base = self.bytes.as_ptr() as u32;
        for rec in self.table[EV_AT..].chunks_exact_mut(EV_WORDS).take(n) {
            rec[3] += base;
        }
        n as u32
    }
}
