//! Events flattened for JS: a kind code and details per record of a
//! `takeEvents` batch (see `batch.rs`); the stats vector.

use crate::prelude::*;
use ricochet_core::{CloseReason, Event};

/// No event: the SDK's `EV.NONE` (a record never carries it).
#[allow(dead_code)]
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

/// An event flattened for a batch record (see `batch.rs`): its kind code,
/// its channel or close kind, its bytes (message data, connect payload or
/// close reason: the event's own buffer, not a copy) and its message ID or
/// close code.
pub fn store(ev: Event) -> (u32, u32, Vec<u8>, u64) {
    match ev {
        Event::Connected => (CONNECTED, 0, Vec::new(), 0),
        Event::Message { channel, data } => (MESSAGE, channel as u32, data, 0),
        Event::Acked(id) => (ACKED, 0, Vec::new(), id),
        Event::Lost(id) => (LOST, 0, Vec::new(), id),
        Event::ConnectRequest { payload } => (CONNECT_REQUEST, 0, payload, 0),
        Event::Closed(reason) => {
            let (kind, code, text) = match reason {
                CloseReason::Local { code, reason } => (CLOSE_LOCAL, code, reason),
                CloseReason::Peer { code, reason } => (CLOSE_PEER, code, reason),
                CloseReason::IdleTimeout => (CLOSE_IDLE, 0, String::new()),
                CloseReason::HandshakeTimeout => (CLOSE_HANDSHAKE_TIMEOUT, 0, String::new()),
                CloseReason::Rejected { reason } => (CLOSE_REJECTED, 0, reason),
            };
            (CLOSED, kind, text.into_bytes(), code)
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
