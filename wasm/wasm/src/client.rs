use crate::prelude::*;
use ricochet_core::{Connection, DropReason, SendError, State, CLIENT_ENTROPY_LEN};
use wasm_bindgen::prelude::*;

use crate::batch::Batch;
use crate::config::ConfigInput;
use crate::events::stats_vec;
use crate::{deadline, micros, Scratch};

/// A client connection (see `ricochet_core::Connection`).
#[wasm_bindgen]
pub struct Client {
    conn: Connection,
    io: Scratch,
    /// Room `transmit` gives each datagram (the config's, or more after
    /// `setMaxDatagramSize`).
    mds: usize,
    batch: Batch,
}

pub(crate) fn drop_code(r: Result<(), DropReason>) -> u32 {
    match r {
        Ok(()) => 0,
        Err(DropReason::Malformed) => 1,
        Err(DropReason::UnknownConnection) => 2,
        Err(DropReason::Duplicate) => 3,
        Err(DropReason::NoRoom) => 4,
        Err(DropReason::Unexpected) => 5,
        Err(DropReason::Unauthenticated) => 6,
        Err(DropReason::TooFarAhead) => 7,
    }
}

/// Message ID, or a negative code: -1 buffer full, -2 too large,
/// -3 unknown channel, -4 not connected.
pub(crate) fn send_code(r: Result<u64, SendError>) -> f64 {
    match r {
        Ok(id) => id as f64,
        Err(SendError::BufferFull(_)) => -1.0,
        Err(SendError::TooLarge(_)) => -2.0,
        Err(SendError::UnknownChannel(_)) => -3.0,
        Err(SendError::NotConnected(_)) => -4.0,
    }
}

#[wasm_bindgen]
impl Client {
    /// A client from `config` and, written at `config.ioReserve` (`len`
    /// bytes in all), 20 bytes from `crypto.getRandomValues` (connection ID
    /// and session key; see `Connection::client`) then the handshake
    /// payload. `config.check` must have passed: a refusal here traps.
    #[wasm_bindgen(constructor)]
    pub fn new(config: &ConfigInput, now: f64, len: usize) -> Client {
        let io = config.io.get(len);
        let (entropy, handshake) = io.split_at(CLIENT_ENTROPY_LEN.min(io.len()));
        let cfg = config.to_config();
        let mds = cfg.max_datagram_size;
        let Some(conn) = entropy
            .try_into()
            .ok()
            .and_then(|e| Connection::client(cfg, micros(now), e, handshake).ok())
        else {
            unreachable!("Client::new without a passing ConfigInput::check")
        };
        Client {
            conn,
            io: Scratch::default(),
            mds,
            batch: Batch::default(),
        }
    }

    /// Address of an input buffer of at least `len` bytes (for a datagram or
    /// a message); valid until the next call into wasm.
    #[wasm_bindgen(js_name = ioReserve)]
    pub fn io_reserve(&mut self, len: usize) -> usize {
        self.io.reserve(len) as usize
    }

    /// Feed a datagram already written at `ioReserve`. Returns 0 if taken,
    /// else why it was dropped (1 malformed, 2 unknown connection,
    /// 3 duplicate, 4 no room, 5 unexpected, 6 unauthenticated, 7 packet
    /// number too far ahead).
    #[wasm_bindgen(js_name = handleDatagram)]
    pub fn handle_datagram(&mut self, now: f64, len: usize) -> u32 {
        self.batch.touch();
        drop_code(self.conn.handle_datagram(micros(now), self.io.get(len)))
    }

    #[wasm_bindgen(js_name = handleTimeout)]
    pub fn handle_timeout(&mut self, now: f64) {
        self.batch.touch();
        self.conn.handle_timeout(micros(now));
    }

    /// The run loop moved the connection onto a new transport.
    #[wasm_bindgen(js_name = handlePathChange)]
    pub fn handle_path_change(&mut self, now: f64) {
        self.batch.touch();
        self.conn.handle_path_change(micros(now));
    }

    /// The run loop moved onto a transport with another datagram size.
    /// False (nothing changed) below the config's `min_datagram_size`.
    #[wasm_bindgen(js_name = setMaxDatagramSize)]
    pub fn set_max_datagram_size(&mut self, now: f64, bytes: usize) -> bool {
        self.batch.touch();
        let ok = self.conn.set_max_datagram_size(micros(now), bytes).is_ok();
        if ok {
            self.mds = self.mds.max(bytes);
        }
        ok
    }

    /// Send the message already written at `ioReserve`.
    pub fn send(&mut self, now: f64, channel: u8, len: usize) -> f64 {
        self.batch.touch();
        let data = self.io.get(len).to_vec();
        send_code(self.conn.send(micros(now), channel, data))
    }

    /// Close with `code` and the UTF-8 reason already written at `ioReserve`.
    pub fn close(&mut self, now: f64, code: f64, len: usize) {
        self.batch.touch();
        let reason = core::str::from_utf8(self.io.get(len)).unwrap_or_default();
        self.conn.close(micros(now), code as u64, reason);
    }

    /// Up to `max` datagrams due now (`poll_transmit` until none is), one
    /// record each in the table at `tablePtr` (see `batch.rs`). Returns
    /// how many; fewer than `max` means none is left.
    pub fn transmit(&mut self, now: f64, max: usize) -> u32 {
        let (conn, now) = (&mut self.conn, micros(now));
        self.batch.transmit(max, self.mds, |buf| {
            conn.poll_transmit(now, buf).map(|n| (n, 0, false))
        })
    }

    /// Up to `max` events (kinds as `EV` in the SDK's wasm-codes.ts), one
    /// record each in the table at `tablePtr`; their bytes stay valid
    /// until the next call. Fewer than `max` means none is left.
    #[wasm_bindgen(js_name = takeEvents)]
    pub fn take_events(&mut self, max: usize) -> u32 {
        let conn = &mut self.conn;
        self.batch.events(max, || conn.poll_event().map(|e| (0, e)))
    }

    /// Address of the batch tables (fixed for the object's life).
    #[wasm_bindgen(js_name = tablePtr)]
    pub fn table_ptr(&self) -> usize {
        self.batch.table_ptr()
    }

    /// Next deadline in µs, or -1.
    #[wasm_bindgen(js_name = pollTimeout)]
    pub fn poll_timeout(&self) -> f64 {
        deadline(self.conn.poll_timeout())
    }

    pub fn stats(&self) -> Vec<f64> {
        stats_vec(&self.conn.stats())
    }

    /// Switch FEC at run time: preset 0 off, 1 balanced, 2 low latency,
    /// 3 thrifty; `budget` > 0 overrides the preset's.
    /// Returns 0, or the length of why not, written at `ioReserve`.
    #[wasm_bindgen(js_name = setFec)]
    pub fn set_fec(&mut self, preset: u8, budget: f64) -> usize {
        self.batch.touch();
        match self.conn.set_fec(crate::config::fec_config(preset, budget)) {
            Ok(()) => 0,
            Err(e) => self.io.put(e.0.as_bytes()),
        }
    }

    pub fn id(&self) -> u32 {
        self.conn.id()
    }

    /// 0 connecting, 1 connected, 2 closing, 3 drained.
    pub fn state(&self) -> u32 {
        match self.conn.state() {
            State::Connecting => 0,
            State::Connected => 1,
            State::Closing => 2,
            State::Drained => 3,
        }
    }

    /// Which timer fires next, for debugging.
    #[cfg(feature = "debug")]
    #[wasm_bindgen(js_name = nextTimer)]
    pub fn next_timer(&self) -> String {
        self.conn
            .next_timer()
            .map_or_else(String::new, |(t, at)| format!("{t:?} at {at}"))
    }
}
