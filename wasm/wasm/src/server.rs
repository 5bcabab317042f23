use ricochet_core::Server as CoreServer;
use wasm_bindgen::prelude::*;

use crate::batch::Batch;
use crate::client::{drop_code, send_code};
use crate::config::ConfigInput;
use crate::events::stats_vec;
use crate::{deadline, micros, Scratch};

/// A server endpoint (see `ricochet_core::Server`). Connections are named by
/// their connection ID, a u32 that is never 0.
#[wasm_bindgen]
pub struct Server {
    server: CoreServer,
    io: Scratch,
    /// Room `transmit` gives each datagram (the config's).
    mds: usize,
    batch: Batch,
    last_drop: u32,
    path_conn: u32,
}

#[wasm_bindgen]
impl Server {
    /// `secret`: 32 bytes from `crypto.getRandomValues`, fresh per server
    /// (WELCOME nonces are derived from it).
    #[wasm_bindgen(constructor)]
    pub fn new(config: &ConfigInput, secret: &[u8]) -> Result<Server, JsError> {
        let cfg = config.to_server_config();
        let mds = cfg.connection.max_datagram_size;
        let secret: &ricochet_core::ServerSecret = secret
            .try_into()
            .map_err(|_| JsError::new("server secret: expected 32 bytes"))?;
        let server = CoreServer::new(cfg, secret).map_err(|e| JsError::new(&e.to_string()))?;
        Ok(Server {
            server,
            io: Scratch::default(),
            mds,
            batch: Batch::default(),
            last_drop: 0,
            path_conn: 0,
        })
    }

    #[wasm_bindgen(js_name = ioReserve)]
    pub fn io_reserve(&mut self, len: usize) -> usize {
        self.io.reserve(len) as usize
    }

    /// Feed a datagram written at `ioReserve`. Returns its connection ID, or 0
    /// if it was dropped (`lastDrop` says why).
    #[wasm_bindgen(js_name = handleDatagram)]
    pub fn handle_datagram(&mut self, now: f64, len: usize) -> u32 {
        self.batch.touch();
        let r = self.server.handle_datagram(micros(now), self.io.get(len));
        match r {
            Ok(id) => {
                self.last_drop = 0;
                id
            }
            Err(e) => {
                self.last_drop = drop_code(Err(e));
                0
            }
        }
    }

    /// Why the last dropped datagram was dropped (codes as `Client.handleDatagram`).
    #[wasm_bindgen(js_name = lastDrop)]
    pub fn last_drop(&self) -> u32 {
        self.last_drop
    }

    #[wasm_bindgen(js_name = handleTimeout)]
    pub fn handle_timeout(&mut self, now: f64) {
        self.batch.touch();
        self.server.handle_timeout(micros(now));
    }

    pub fn accept(&mut self, now: f64, conn: u32) -> bool {
        self.batch.touch();
        self.server.accept(micros(now), conn)
    }

    pub fn reject(&mut self, now: f64, conn: u32, reason: &str) -> bool {
        self.batch.touch();
        self.server.reject(micros(now), conn, reason)
    }

    /// Send the message written at `ioReserve` on one connection.
    pub fn send(&mut self, now: f64, conn: u32, channel: u8, len: usize) -> f64 {
        self.batch.touch();
        let data = self.io.get(len).to_vec();
        send_code(self.server.send(micros(now), conn, channel, data))
    }

    pub fn close(&mut self, now: f64, conn: u32, code: f64, reason: &str) {
        self.batch.touch();
        self.server.close(micros(now), conn, code as u64, reason);
    }

    /// Up to `max` datagrams due now, one record each (with its connection
    /// and whether it goes to the candidate address) in the table at
    /// `tablePtr` (see `batch.rs`). Returns how many; fewer than `max` means
    /// none is left.
    pub fn transmit(&mut self, now: f64, max: usize) -> u32 {
        let (server, now) = (&mut self.server, micros(now));
        self.batch.transmit(max, self.mds, |buf| {
            let (conn, n) = server.poll_transmit(now, buf)?;
            Some((n, conn, server.transmit_to_candidate()))
        })
    }

    /// Up to `max` events (as `Client.takeEvents`, plus 6 connect request),
    /// each record naming its connection.
    #[wasm_bindgen(js_name = takeEvents)]
    pub fn take_events(&mut self, max: usize) -> u32 {
        let server = &mut self.server;
        self.batch.events(max, || server.poll_event())
    }

    /// Address of the batch tables (fixed for the object's life).
    #[wasm_bindgen(js_name = tablePtr)]
    pub fn table_ptr(&self) -> usize {
        self.batch.table_ptr()
    }

    /// The relay-verified claims (UTF-8 JSON) of a pending connect request
    /// or live connection; undefined without a relay key.
    pub fn claims(&self, conn: u32) -> Option<Vec<u8>> {
        self.server.claims(conn).map(<[u8]>::to_vec)
    }

    #[wasm_bindgen(js_name = pollTimeout)]
    pub fn poll_timeout(&self) -> f64 {
        deadline(self.server.poll_timeout())
    }

    /// Stats of one connection (empty if unknown).
    pub fn stats(&self, conn: u32) -> Vec<f64> {
        self.server
            .connection(conn)
            .map(|c| stats_vec(&c.stats()))
            .unwrap_or_default()
    }

    /// Switch FEC for one connection (see `Client::set_fec`); false if unknown.
    #[wasm_bindgen(js_name = setFec)]
    pub fn set_fec(&mut self, conn: u32, preset: u8, budget: f64) -> Result<bool, JsError> {
        self.batch.touch();
        let fec = crate::config::fec_config(preset, budget);
        match self.server.with_conn(conn, |c| c.set_fec(fec)) {
            None => Ok(false),
            Some(r) => r.map(|_| true).map_err(|e| JsError::new(&e.0)),
        }
    }

    /// The last `handleDatagram` (Ok) came from an address that is neither
    /// the connection's current one nor its candidate (see
    /// `ricochet_core::Server::path_changed`): true, hold it as the candidate;
    /// false, move to it at once.
    #[wasm_bindgen(js_name = pathChanged)]
    pub fn path_changed(&mut self, now: f64, conn: u32, len: usize) -> bool {
        self.batch.touch();
        self.server.path_changed(micros(now), conn, len)
    }

    /// Another accepted datagram of `len` bytes came from the candidate.
    #[wasm_bindgen(js_name = candidateDatagram)]
    pub fn candidate_datagram(&mut self, conn: u32, len: usize) {
        self.batch.touch();
        self.server.candidate_datagram(conn, len);
    }

    /// Next candidate outcome: 0 none, 1 validated (move to it), 2 abandoned
    /// (forget it); `pathEventConn` names the connection.
    #[wasm_bindgen(js_name = pollPathEvent)]
    pub fn poll_path_event(&mut self) -> u32 {
        self.batch.touch();
        match self.server.poll_path_event() {
            Some((conn, ev)) => {
                self.path_conn = conn;
                match ev {
                    ricochet_core::PathEvent::Validated => 1,
                    ricochet_core::PathEvent::Abandoned => 2,
                }
            }
            None => 0,
        }
    }
    #[wasm_bindgen(js_name = pathEventConn)]
    pub fn path_event_conn(&self) -> u32 {
        self.path_conn
    }

    #[wasm_bindgen(js_name = connectionCount)]
    pub fn connection_count(&self) -> u32 {
        self.server.connection_count() as u32
    }
}
