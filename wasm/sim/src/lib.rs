//! Ricochet's test harness, kept out of the protocol core (and out of the
//! production wasm): a seeded, deterministic network simulator, a client and
//! a server joined by it on virtual time, and self-checking payloads.
//!
//! The protocol is sans-IO, so its tests need a network that is also just a
//! function of its inputs: two endpoints exchange datagrams over simulated
//! [`Link`]s on virtual time (`u64` microseconds passed in by the caller).
//! Same seed + same calls ⇒ the same deliveries at the same times, bit for
//! bit, natively and in wasm. That makes it the measuring instrument for the
//! protocol: a failing benchmark run can be replayed exactly.
//!
//! * [`loss`] — loss models (independent, Gilbert-Elliott, netem 4-state).
//! * [`link`] — one direction: rate limit, queue, loss, duplication, jitter,
//!   reordering.
//! * [`profile`] — named conditions ("wifi", "s1_bursty", …) and [`Duplex`].
//! * [`pair`] — a `ricochet_core` client and server over a [`Duplex`]
//!   ([`Pair`]), plus the fixed secret and seeded entropy tests use.
//! * [`payload`] — payloads whose bytes prove they arrived intact.
//! * [`rng`] — the seeded PRNG behind all of the above.
//!
//! Typical drive loop: `send` what the endpoints emit, advance the clock to
//! the earliest of the endpoints' timers and [`Link::poll_timeout`], then
//! drain [`Link::poll_deliver`] into the receiving endpoint ([`Pair`] does
//! exactly this).
//!
//! Users: the core's integration tests and examples, the native driver's
//! tests, the fuzz targets, the impaired-link emulator (`netem/`) and, through
//! the `ricochet-sim-wasm` bindings, the SDK's `@ricochet/sdk/simulator`
//! entry (which the relay's impairment uses).

pub mod link;
pub mod loss;
pub mod pair;
pub mod payload;
pub mod profile;
pub mod rng;

pub use link::{Link, LinkConfig, LinkStats};
pub use loss::{LossModel, LossState};
pub use pair::{insecure_seeded_entropy, AcceptPolicy, Pair, TEST_SERVER_SECRET};
pub use profile::{Duplex, NetworkProfile};
