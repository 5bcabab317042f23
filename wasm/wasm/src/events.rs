//! Events flattened for JS: a kind code from `poll_event`, details through
//! getters, bytes (message data, reason text) in the event buffer.

use ricochet_core::{CloseReason, Event};

pub const NONE: u32 = 0;
pub const CONNECTED: u32 = 1;
pub const MESSAGE: u32 = 2;
pub const ACKED: u32 = 3;
pub const LOST: u32 = 4;
pub const CLOSED: u32 = 5;
pub const CONNECT_REQUEST: u32 = 6;

/// Close reason kinds (`closeKind`).
pub const CLOSE_LOCAL: u32 = 1;
pub const CLOSE_PEER: u32 = 2;
pub const CLOSE_IDLE: u32 = 3;
pub const CLOSE_HANDSHAKE_TIMEOUT: u32 = 4;
pub const CLOSE_REJECTED: u32 = 5;

/// The last polled event's details.
#[derive(Default)]
pub struct EventSlot {
    pub channel: u32,
    pub id: f64,
    pub close_kind: u32,
    pub close_code: f64,
    pub bytes: Vec<u8>,
}

impl EventSlot {
    /// Store `ev` and return its kind code.
    pub fn store(&mut self, ev: Event) -> u32 {
        self.bytes.clear();
        match ev {
            Event::Connected => CONNECTED,
            Event::Message { channel, data } => {
                self.channel = channel as u32;
                // Hand over the message's own buffer: no copy in wasm.
                self.bytes = data;
                MESSAGE
            }
            Event::Acked(id) => {
                self.id = id as f64;
                ACKED
            }
            Event::Lost(id) => {
                self.id = id as f64;
                LOST
            }
            Event::ConnectRequest { payload } => {
                self.bytes = payload;
                CONNECT_REQUEST
            }
            Event::Closed(reason) => {
                let (kind, code, text) = match reason {
                    CloseReason::Local { code, reason } => (CLOSE_LOCAL, code, reason),
                    CloseReason::Peer { code, reason } => (CLOSE_PEER, code, reason),
                    CloseReason::IdleTimeout => (CLOSE_IDLE, 0, String::new()),
                    CloseReason::HandshakeTimeout => (CLOSE_HANDSHAKE_TIMEOUT, 0, String::new()),
                    CloseReason::Rejected { reason } => (CLOSE_REJECTED, 0, reason),
                };
                self.close_kind = kind;
                self.close_code = code as f64;
                self.bytes = text.into_bytes();
                CLOSED
            }
        }
    }
}

/// Stats flattened in a fixed order the SDK reads by name (its layout
/// is generated into sdk/src/wasm-codes.ts by sdk/scripts/gen-codes.mjs).
pub fn stats_vec(s: &ricochet_core::Stats) -> Vec<f64> {
    let mut v = vec![
        s.rtt_us as f64,
        s.rtt_var_us as f64,
        s.min_rtt_us as f64,
        s.loss_out,
        s.loss_in,
        s.packets_out as f64,
        s.packets_in as f64,
        s.bytes_out as f64,
        s.bytes_in as f64,
        s.packets_lost as f64,
        s.retransmissions as f64,
        s.duplicates as f64,
        s.malformed as f64,
        s.no_room as f64,
        s.overhead_bytes_out as f64,
        s.payload_bytes_out as f64,
        s.congestion_window.min(u32::MAX as u64) as f64,
        s.bytes_in_flight as f64,
        s.send_buffer_bytes as f64,
        s.recv_buffer_bytes as f64,
        s.residual_loss_in,
        s.fec_recovered as f64,
        s.fec_repair_bytes_out as f64,
        s.fec_repair_packets_out as f64,
        s.fec_peer_loss,
        s.fec_peer_burst,
        s.early_resends as f64,
        s.eliciting_packets_out as f64,
        s.unauthenticated as f64,
        s.too_far_ahead as f64,
        s.peer_packets_expected as f64,
        s.channels.len() as f64,
    ];
    for c in &s.channels {
        v.extend_from_slice(&[
            c.messages_sent as f64,
            c.messages_delivered as f64,
            c.queued_messages as f64,
            c.unacked_messages as f64,
        ]);
    }
    v
}

/// The `event*` getters, identical on `Client` and `Server` (each keeps its
/// last polled event in a field named `ev`).
macro_rules! event_getters {
    ($ty:ident) => {
        #[wasm_bindgen]
        impl $ty {
            #[wasm_bindgen(js_name = eventChannel)]
            pub fn event_channel(&self) -> u32 {
                self.ev.channel
            }
            #[wasm_bindgen(js_name = eventId)]
            pub fn event_id(&self) -> f64 {
                self.ev.id
            }
            #[wasm_bindgen(js_name = eventCloseKind)]
            pub fn event_close_kind(&self) -> u32 {
                self.ev.close_kind
            }
            #[wasm_bindgen(js_name = eventCloseCode)]
            pub fn event_close_code(&self) -> f64 {
                self.ev.close_code
            }
            #[wasm_bindgen(js_name = eventPtr)]
            pub fn event_ptr(&self) -> usize {
                self.ev.bytes.as_ptr() as usize
            }
            #[wasm_bindgen(js_name = eventLen)]
            pub fn event_len(&self) -> usize {
                self.ev.bytes.len()
            }
        }
    };
}
pub(crate) use event_getters;
