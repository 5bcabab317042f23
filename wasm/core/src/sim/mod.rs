//! Seeded, deterministic network simulator.
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
//!
//! Typical drive loop: `send` what the endpoints emit, advance the clock to
//! the earliest of the endpoints' timers and [`Link::poll_timeout`], then
//! drain [`Link::poll_deliver`] into the receiving endpoint.

pub mod link;
pub mod loss;
pub mod profile;

pub use link::{Link, LinkConfig, LinkStats};
pub use loss::{LossModel, LossState};
pub use profile::{Duplex, NetworkProfile};
