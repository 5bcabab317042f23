//! Ricochet's native driver: a UDP socket and timers around the sans-IO
//! [`ricochet_core`], for game servers (and for the bots, tools and tests
//! that talk to them).
//!
//! The driver owns the clock (microseconds from an `Instant` taken when the
//! endpoint is created), the socket (non-blocking, 4 MiB buffers) and the
//! core's run loop. It spawns no thread: the application calls `poll` from
//! its own loop, then drains `events`.
//!
//! # Run loop
//!
//! 1. [`UdpServer::bind`] (or [`UdpClient::connect`]).
//! 2. Call `poll(max_wait)`: it sends what commands queued, waits for a
//!    datagram or the core's next deadline (never longer than `max_wait`),
//!    reads every datagram already queued in the socket, fires due timers
//!    and sends the resulting output.
//! 3. Drain `events()`; answer `ConnectRequest`s with `accept`/`reject`
//!    (or set [`AcceptPolicy::AcceptAll`]; behind a relay, set
//!    `ServerConfig::relay_key` and read [`UdpServer::claims`]; to refuse
//!    clients whose channels differ from `connection.channels`, set
//!    `ServerConfig::strict_channels`); `send`, `broadcast`, `close`.
//!    Commands queue their output, so messages sent together share
//!    datagrams; it leaves on the next `poll` (or at once with `flush`).
//!
//! On Linux, `UdpServer` reads a burst of datagrams with one `recvmmsg` and
//! sends each round of output with one `sendmmsg` per 64 datagrams (a loop
//! of single calls elsewhere); `UdpClient`, which moves one or two datagrams
//! per poll, keeps single calls (cheaper there).
//!
//! Sessions are identified by connection ID, never by address: each
//! connection's peer address follows the last datagram the core accepted
//! for it, so a NAT rebinding or a relay changing ports does not break it.
//! Datagrams the core refuses (garbage, unknown connections) are counted
//! and dropped without touching any session.
//!
//! Not done here: encryption and integrity (run behind WebTransport/DTLS or
//! accept UDP's checksum), and multi-threading (put one endpoint per thread).

// A panic takes the game server down: library code reports errors instead
// (scripts/lint.mjs denies this for the core too).
#![cfg_attr(not(test), deny(clippy::unwrap_used))]

mod batch;
mod client;
mod clock;
pub mod ffi;
mod server;
mod socket;

pub use client::UdpClient;
pub use server::{AcceptPolicy, UdpServer};
pub use socket::SocketStats;

pub use ricochet_core::attest::{attest_key, AttestKey};
pub use ricochet_core::{
    ChannelConfig, ChannelKind, CloseReason, Config, ConnectionId, Event, MessageId, SendError,
    ServerConfig, State, Stats,
};
