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
// `no_std` + `alloc` without the `std` feature (the browser's client module:
// no std panic machinery, whose handler keeps `core::fmt` alive); native
// builds, the tests and the full wasm module keep std (default feature).
#![cfg_attr(not(feature = "std"), no_std)]

extern crate alloc;

/// What std's prelude gives and `no_std` does not: every module that
/// allocates starts with `use crate::prelude::*;`.
mod prelude {
    pub(crate) use crate::msg;
    #[cfg(not(feature = "std"))]
    pub(crate) use crate::no_std_float::F64Ext;
    pub(crate) use alloc::boxed::Box;
    pub(crate) use alloc::string::{String, ToString};
    pub(crate) use alloc::vec;
    pub(crate) use alloc::vec::Vec;
}

/// The two `f64` methods the core uses that only std has, for `no_std`
/// builds: the same results, bit for bit, as std's (`round`: half away from
/// zero; `powi`: compiler-builtins' `__powidf2`, which std's calls).
#[cfg(any(test, not(feature = "std")))]
mod no_std_float {
    pub(crate) trait F64Ext {
        fn round(self) -> f64;
        fn powi(self, n: i32) -> f64;
    }

    impl F64Ext for f64 {
        fn round(self) -> f64 {
            // 2^52 and beyond (and infinities, NaN): already integral.
            if self.is_nan() || self.abs() >= 4_503_599_627_370_496.0 {
                return self;
            }
            let t = self as i64 as f64;
            // Exact: x and trunc(x) share sign and exponent range.
            let d = self - t;
            if d >= 0.5 {
                t + 1.0
            } else if d <= -0.5 {
                t - 1.0
            } else {
                // std gives -0.0 for (-0.5, -0.0]: keep the sign.
                f64::from_bits(t.to_bits() | (self.to_bits() & (1 << 63)))
            }
        }

        fn powi(self, n: i32) -> f64 {
            let mut a = self;
            let mut pow = n.unsigned_abs();
            let mut mul = 1.0;
            loop {
                if pow & 1 != 0 {
                    mul *= a;
                }
                pow >>= 1;
                if pow == 0 {
                    break;
                }
                a *= a;
            }
            if n < 0 {
                1.0 / mul
            } else {
                mul
            }
        }
    }

    #[cfg(test)]
    mod tests {
        use super::F64Ext;

        #[test]
        fn round_and_powi_match_std_bit_for_bit() {
            let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
            let mut values = std::vec![0.5, -0.5, 1.5, -2.5, 0.49999999999999994, -0.0, 1e300];
            values.extend([
                f64::NAN,
                f64::INFINITY,
                f64::NEG_INFINITY,
                4503599627370495.5,
            ]);
            for _ in 0..100_000 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                values.push((x >> 11) as f64 / (1u64 << 53) as f64 * 131_072.0 - 65_536.0);
                values.push(f64::from_bits(x));
            }
            for v in values {
                let (a, b) = (F64Ext::round(v), v.round());
                assert!(
                    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan()),
                    "round({v})"
                );
                for k in [0, 1, 2, 7, 31, -3] {
                    let (a, b) = (F64Ext::powi(v, k), v.powi(k));
                    assert!(
                        a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan()),
                        "powi({v}, {k})"
                    );
                }
            }
        }
    }
}

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
mod outbox;
mod packetizer;
mod path;
mod pn_bound;
mod recv_budget;
mod recv_channel;
mod ring;
mod rtt;
mod send_channel;
mod send_rate;
mod sent;
mod seq_slots;
mod server;
mod slab_map;
mod stats;
#[doc(hidden)]
pub mod text;
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
