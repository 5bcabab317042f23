use ricochet_core::{Connection, DropReason, SendError, State, CLIENT_ENTROPY_LEN};
use wasm_bindgen::prelude::*;

use crate::config::ConfigInput;
use crate::events::{event_getters, stats_vec, EventSlot, NONE};
use crate::{deadline, micros, Scratch};

/// A client connection (see `ricochet_core::Connection`).
#[wasm_bindgen]
pub struct Client {
    conn: Connection,
    io: Scratch,
    tx: Vec<u8>,
    ev: EventSlot,
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
    /// `entropy`: 20 bytes from `crypto.getRandomValues` (connection ID and
    /// session key; see `Connection::client`).
    #[wasm_bindgen(constructor)]
    pub fn new(
        config: &ConfigInput,
        now: f64,
        entropy: &[u8],
        handshake: &[u8],
    ) -> Result<Client, JsError> {
        let entropy: &[u8; CLIENT_ENTROPY_LEN] = entropy.try_into().map_err(|_| {
            JsError::new(&format!(
                "entropy: {} bytes, need {CLIENT_ENTROPY_LEN}",
                entropy.len()
            ))
        })?;
        let cfg = config.to_config();
        let tx = vec![0; cfg.max_datagram_size];
        let conn = Connection::client(cfg, micros(now), entropy, handshake)
            .map_err(|e| JsError::new(&e.to_string()))?;
        Ok(Client {
            conn,
            io: Scratch::default(),
            tx,
            ev: EventSlot::default(),
        })
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
        drop_code(self.conn.handle_datagram(micros(now), self.io.get(len)))
    }

    #[wasm_bindgen(js_name = handleTimeout)]
    pub fn handle_timeout(&mut self, now: f64) {
        self.conn.handle_timeout(micros(now));
    }

    /// The run loop moved the connection onto a new transport.
    #[wasm_bindgen(js_name = handlePathChange)]
    pub fn handle_path_change(&mut self, now: f64) {
        self.conn.handle_path_change(micros(now));
    }

    /// The run loop moved onto a transport with another datagram size.
    /// False (nothing changed) below the config's `min_datagram_size`.
    #[wasm_bindgen(js_name = setMaxDatagramSize)]
    pub fn set_max_datagram_size(&mut self, now: f64, bytes: usize) -> bool {
        let ok = self.conn.set_max_datagram_size(micros(now), bytes).is_ok();
        if ok && self.tx.len() < bytes {
            self.tx.resize(bytes, 0);
        }
        ok
    }

    /// Send the message already written at `ioReserve`.
    pub fn send(&mut self, now: f64, channel: u8, len: usize) -> f64 {
        let data = self.io.get(len).to_vec();
        send_code(self.conn.send(micros(now), channel, data))
    }

    pub fn close(&mut self, now: f64, code: f64, reason: &str) {
        self.conn.close(micros(now), code as u64, reason);
    }

    /// Length of the next datagram (at `txPtr`), or -1 when none is due.
    #[wasm_bindgen(js_name = pollTransmit)]
    pub fn poll_transmit(&mut self, now: f64) -> i32 {
        self.conn
            .poll_transmit(micros(now), &mut self.tx)
            .map_or(-1, |n| n as i32)
    }

    #[wasm_bindgen(js_name = txPtr)]
    pub fn tx_ptr(&self) -> usize {
        self.tx.as_ptr() as usize
    }

    /// Next event's kind (0 none, 1 connected, 2 message, 3 acked, 4 lost,
    /// 5 closed); details via the `event*` getters.
    #[wasm_bindgen(js_name = pollEvent)]
    pub fn poll_event(&mut self) -> u32 {
        match self.conn.poll_event() {
            Some(ev) => self.ev.store(ev),
            None => NONE,
        }
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
    #[wasm_bindgen(js_name = setFec)]
    pub fn set_fec(&mut self, preset: u8, budget: f64) -> Result<(), JsError> {
        self.conn
            .set_fec(crate::config::fec_config(preset, budget))
            .map_err(|e| JsError::new(&e.0))
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

event_getters!(Client);
