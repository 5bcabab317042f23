//! What a connection tells its host, drained with `poll_event`.

use crate::prelude::*;

/// Identifies a sent message in `Acked`/`Lost` receipts. Unique per connection,
/// increasing from 1.
pub type MessageId = u64;

/// Why a connection ended. Every end arrives as exactly one `Event::Closed`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CloseReason {
    /// This side called `close`.
    Local { code: u64, reason: String },
    /// The peer closed with this code and reason.
    Peer { code: u64, reason: String },
    /// Nothing arrived for `idle_timeout_us`.
    IdleTimeout,
    /// Client: no answer to HELLO within `handshake_timeout_us`.
    HandshakeTimeout,
    /// Client: the server refused the connection with this reason.
    Rejected { reason: String },
}

impl CloseReason {
    /// Stable code string, as listed in the error table of the SDK.
    pub fn code(&self) -> &'static str {
        match self {
            CloseReason::Local { .. } => "RICOCHET_CLOSED_LOCALLY",
            CloseReason::Peer { .. } => "RICOCHET_CLOSED_BY_PEER",
            CloseReason::IdleTimeout => "RICOCHET_IDLE_TIMEOUT",
            CloseReason::HandshakeTimeout => "RICOCHET_HANDSHAKE_TIMEOUT",
            CloseReason::Rejected { .. } => "RICOCHET_REJECTED",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// Server only: a client asks to connect with this handshake payload.
    /// Answer with `Server::accept` or `Server::reject`. With a relay key
    /// it is the client's own payload from inside the attestation, and
    /// `Server::claims` holds what the relay verified.
    ConnectRequest { payload: Vec<u8> },
    /// The handshake completed; messages flow.
    Connected,
    /// A complete message arrived on a channel.
    Message { channel: u8, data: Vec<u8> },
    /// Every packet carrying this message was acknowledged: the peer's
    /// endpoint received it (for unreliable channels, it may still have been
    /// dropped there as stale).
    Acked(MessageId),
    /// This message will not be delivered: an unreliable message whose packet
    /// was lost, dropped as stale or too old before sending, or any message
    /// still outstanding when the connection closed.
    Lost(MessageId),
    /// The connection ended; no events follow.
    Closed(CloseReason),
}
