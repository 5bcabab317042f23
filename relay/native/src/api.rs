//! The objects exchanged with JS: options in, listen/certificate results
//! and stats out.

use napi_derive::napi;

/// Options as passed by `index.js` (callbacks are passed separately).
#[napi(object)]
pub struct NativeOptions {
    pub port: u32,
    pub host: Option<String>,
    pub cert_pem: Option<String>,
    pub key_pem: Option<String>,
    pub max_datagram_size: Option<u32>,
    pub max_sessions: Option<u32>,
    pub handshake_timeout_ms: Option<u32>,
    pub max_pending_handshakes: Option<u32>,
    pub max_pending_handshakes_per_address: Option<u32>,
    pub retry_at_pending_handshakes: Option<u32>,
    pub idle_timeout_ms: Option<u32>,
    pub keep_alive_ms: Option<u32>,
    pub send_rate_per_sec: Option<u32>,
    pub send_burst: Option<u32>,
    pub send_queue_max: Option<u32>,
    pub recv_queue_max: Option<u32>,
    pub udp_buffer_bytes: Option<u32>,
    pub close_grace_ms: Option<u32>,
}

#[napi(object)]
pub struct ListenResult {
    pub port: u32,
    pub cert_hashes: Vec<String>,
    pub valid_until_ms: f64,
    /// Effective kernel buffer sizes of the UDP socket (Linux reports double
    /// the requested value, capped by net.core.rmem_max / wmem_max).
    pub udp_recv_buffer: u32,
    pub udp_send_buffer: u32,
}

#[napi(object)]
pub struct CertificateResult {
    pub cert_hashes: Vec<String>,
    pub valid_until_ms: f64,
}

#[napi(object)]
pub struct DropStats {
    /// Datagrams from peers larger than `maxDatagramSize`. Not dropped: they
    /// reach JS like any other, so the relay can close the session with 4413.
    pub oversize_in: f64,
    /// Datagrams from a peer while JS had not yet taken `recvQueueMax` earlier ones.
    pub recv_queue_full: f64,
    /// Oldest queued outbound datagrams discarded because `sendQueueMax` was reached.
    pub send_queue_full: f64,
    /// Outbound datagrams larger than the session's current max datagram size.
    pub oversize_out: f64,
    /// `send` / `close` for a session id that is not (or no longer) open.
    pub unknown_session: f64,
    /// Outbound datagrams still queued when their session closed.
    pub closed_with_queue: f64,
    /// Peer does not support datagrams.
    pub unsupported_by_peer: f64,
    /// DATAGRAM frames quinn received that never reached this server's
    /// session loop (quinn's receive buffer overflowed while the session loop
    /// was behind, or a datagram for an unknown WebTransport session).
    pub quic_recv_overflow: f64,
}

#[napi(object)]
pub struct HandshakeStats {
    pub accepted: f64,
    pub timeout: f64,
    pub failed: f64,
    /// Refused because `maxSessions` sessions were open (QUIC refuse or HTTP 429).
    pub rejected_full: f64,
    /// Refused because `maxPendingHandshakes` handshakes were in progress.
    pub rejected_backlog: f64,
    /// Refused because `maxPendingHandshakesPerAddress` handshakes from the
    /// same IPv4 address (or IPv6 /64) were in progress.
    pub rejected_per_address: f64,
    /// QUIC Retry packets sent to unvalidated addresses while at least
    /// `retryAtPendingHandshakes` handshakes were pending.
    pub retries: f64,
    pub pending: f64,
}

#[napi(object)]
pub struct ServerStats {
    pub sessions_active: f64,
    pub sessions_opened: f64,
    pub sessions_closed: f64,
    pub datagrams_in: f64,
    pub bytes_in: f64,
    pub datagrams_out: f64,
    pub bytes_out: f64,
    /// Outbound datagrams currently waiting in per-session pacing queues.
    pub send_queued: f64,
    /// Times a session's sender waited because quinn's datagram send buffer was full.
    pub send_buffer_waits: f64,
    /// Event batches delivered to JS (one threadsafe-function call each).
    pub batches: f64,
    /// Panics caught in session / handshake tasks.
    pub panics: f64,
    /// Datagrams forwarded inside the addon (native data path), client → backend and back.
    pub native_up: f64,
    pub native_down: f64,
    /// Native-path sessions handed back to JS by a datagram breaking a limit (or a HELLO).
    pub native_handbacks: f64,
    /// Backend sockets open.
    pub backends_open: f64,
    pub drops: DropStats,
    pub handshakes: HandshakeStats,
}

/// What a session on the native data path may send (see `attach_backend`).
#[napi(object)]
pub struct AttachLimits {
    /// The session's pinned connection ID: a datagram with another goes to JS.
    pub connection_id: u32,
    pub max_datagram_bytes: u32,
    pub max_datagrams_per_second: f64,
    pub max_bytes_per_second: f64,
    /// Largest client DATA packet number seen so far (-1: none).
    pub largest: f64,
    /// Copy WELCOME-shaped datagrams to JS (`onObserved`): its resume proof lacks the nonce.
    pub watch_welcome: bool,
}

#[napi(object)]
pub struct BackendStats {
    pub attached: bool,
    /// Largest client DATA packet number forwarded natively (-1: none, or not attached).
    pub largest: f64,
    pub native_up_datagrams: f64,
    pub native_up_bytes: f64,
    pub native_down_datagrams: f64,
    pub native_down_bytes: f64,
    /// Datagrams the socket refused to send (either path).
    pub send_failed: f64,
}
