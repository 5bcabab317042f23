//! Ricochet's protocol core. It performs no I/O, spawns nothing, and never
//! reads a clock or OS randomness: received datagrams, the current time
//! (`u64` microseconds from any epoch), a client's 20 random bytes and a server's 32-byte secret go in; datagrams to send, events and
//! the next deadline come out. The same inputs give the same outputs, byte for
//! byte, so one crate runs in browsers (wasm), in Node (wasm) and in native
//! game servers, and its tests run on virtual time.
//!
//! # Run loop
//!
//! A host (the SDK, the native driver, or a test's `ricochet_sim::Pair`) does:
//!
//! 1. Create a [`Connection::client`] or a [`Server`] (each from OS
//!    randomness the host supplies: 20 bytes, or a 32-byte secret).
//! 2. On every received datagram call `handle_datagram(now, bytes)`; when the
//!    time from `poll_timeout()` has passed call `handle_timeout(now)`; send
//!    with `send(now, channel, bytes)`, end with `close(now, code, reason)`.
//!    A server's host that sees a connection's datagram from a new address
//!    calls `Server::path_changed` and follows `transmit_to_candidate` and
//!    `poll_path_event` (WIRE.md, "Path validation").
//! 3. After each of those, drain the outputs in this order:
//!    `poll_transmit(now, buf)` until `None` (write each datagram to the
//!    network), then `poll_event()` until `None`, then ask `poll_timeout()`
//!    and arm one timer for it.
//!
//! The core never calls back into the host. Commands that cannot be honoured
//! return an error that hands the message back; network trouble and peer
//! misbehaviour arrive as events (`Event::Closed { .. }`). Malformed datagrams
//! are dropped and counted; no input bytes can make the core panic.
//!
//! The byte-exact wire format is in `WIRE.md`.

// No input may make the core panic: no `unwrap` outside tests (an `expect`
// states the invariant that makes it safe).
#![cfg_attr(not(test), deny(clippy::unwrap_used))]

// The public modules are the wire level: the byte format (`wire`), packet
// authentication (`auth`), relay attestations (`attest`), and the two pieces
// of frame encoding the wire-vector tests and fuzzers drive directly (`ack`
// ranges, `fec` parity images). Everything a host needs is re-exported below;
// the rest is the state machine's own.
pub mod ack;
mod amplify;
pub mod attest;
pub mod auth;
mod config;
mod congestion;
mod connection;
mod datagram_size;
mod early_resend;
mod error;
mod event;
pub mod fec;
mod loss;
mod packetizer;
mod path;
mod pn_bound;
mod recv_budget;
mod recv_channel;
mod rtt;
mod send_channel;
mod sent;
mod server;
mod slab_map;
mod stats;
mod timer;
pub mod wire;

pub use amplify::AMPLIFICATION_FACTOR;
pub use attest::{attest_key, relay_attest, verify_attestation, AttestKey};
pub use auth::{Nonce, ServerSecret, SessionKey, CLIENT_ENTROPY_LEN, SERVER_SECRET_LEN};
pub use config::{ChannelConfig, ChannelKind, Config, ConfigError, CongestionKind, ServerConfig};
pub use connection::{Connection, Side, State};
pub use error::{DropReason, SendError};
pub use event::{CloseReason, Event, MessageId};
pub use fec::FecConfig;
pub use path::{PathEvent, MAX_PATH_CHALLENGES};
pub use pn_bound::{MAX_PACKET_NUMBER_JUMP, MAX_PROBE_AHEAD, MAX_SEND_AHEAD};
pub use recv_budget::head_reserve;
pub use server::{ConnectionId, Server, RELAYED_DATAGRAM_SIZE};
pub use stats::{ChannelStats, Stats};
pub use timer::Timer;
