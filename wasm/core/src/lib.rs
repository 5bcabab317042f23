//! Ricochet's protocol core. It performs no I/O, spawns nothing, and never
//! reads a clock or OS randomness: received datagrams, the current time
//! (`u64` microseconds from any epoch), a client's 20 random bytes and a server's 32-byte secret go in; datagrams to send, events and
//! the next deadline come out. The same inputs give the same outputs, byte for
//! byte, so one crate runs in browsers (wasm), in Node (wasm) and in native
//! game servers, and its tests run on virtual time.
//!
//! # Run loop
//!
//! A host (the SDK, the native driver, or a test [`pair::Pair`]) does:
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

pub mod ack;
mod amplify;
pub mod attest;
pub mod auth;
pub mod config;
pub mod congestion;
mod connection;
mod datagram_size;
mod early_resend;
mod loss;
pub mod error;
pub mod event;
pub mod fec;
mod packetizer;
pub mod path;
mod pn_bound;
pub mod pair;
pub mod payload;
mod recv_budget;
pub mod recv_channel;
pub mod rng;
pub mod rtt;
pub mod send_channel;
pub mod sent;
pub mod server;
mod slab_map;
pub mod sim;
pub mod stats;
pub mod timer;
pub mod wire;

pub use attest::{attest_key, relay_attest, verify_attestation, AttestKey};
pub use amplify::AMPLIFICATION_FACTOR;
pub use auth::{Nonce, ServerSecret, SessionKey, CLIENT_ENTROPY_LEN, SERVER_SECRET_LEN};
pub use config::{ChannelConfig, ChannelKind, Config, ConfigError, CongestionKind, ServerConfig};
pub use fec::FecConfig;
pub use connection::{Connection, Side, State};
pub use pn_bound::{MAX_PACKET_NUMBER_JUMP, MAX_PROBE_AHEAD, MAX_SEND_AHEAD};
pub use error::{DropReason, SendError};
pub use event::{CloseReason, Event, MessageId};
pub use path::{PathEvent, MAX_PATH_CHALLENGES};
pub use recv_budget::head_reserve;
pub use server::{ConnectionId, Server};
pub use stats::{ChannelStats, Stats};
pub use timer::Timer;
