//! Forward error correction: repair data sent ahead of need, so most losses
//! are rebuilt at the receiver one one-way delay after the repair, with no
//! round trip. Reliable retransmission stays the backstop.
//!
//! * [`parity`] — parity over packet bodies in GF(4), with a check value per member.
//! * `encoder` — sender: groups, budget, repair timing.
//! * `controller` — group size from the measured loss and burstiness.
//! * `recovery` — receiver: stored bodies, pending repairs, rebuilding.
//! * `loss_meter` — receiver: loss and burstiness of arriving packets,
//!   reported to the sender in LOSS_REPORT frames.
//! * `config` — [`FecConfig`] and its presets.
//! * `rebuild_wait` — sender: a lost packet the peer may still rebuild waits
//!   before its unreliable messages are reported `Lost`.
//!
//! A latency-targeted message on a lossy path goes in halves
//! (`datagram_size::cut_for`): one XOR of the two, sent at once, rebuilds
//! either in the same tick for half a message of repair; under bursts,
//! repairs of powers 1 and 2 of ω follow, and any two of the packets
//! rebuild both halves. While the budget pays a whole copy, a message
//! queued behind an unsent one of its channel goes whole, and so does that
//! one (`Connection::several_go_whole`): a tick of several shares packets
//! and their copies (issue 16: in halves, each message's own rare loss
//! would hold the tick's later messages behind it).
//!
//! The receiver solves for up to three missing members (three powers
//! restore any three of a group whose indices differ mod 3: a tick over
//! three packets comes back from its three repairs alone). Not done here:
//! codes over larger fields for more repairs of larger groups.

// Public: the parity image (WIRE.md's REPAIR frame body; the wire vectors and
// the decode fuzzer build and check it) and the configuration hosts set.
mod config;
mod controller;
pub(crate) mod encoder;
pub(crate) mod loss_meter;
pub mod parity;
mod rebuild_wait;
mod recovery;

pub use config::FecConfig;
pub(crate) use encoder::{Halves, RepairEncoder, RepairFate};
pub(crate) use loss_meter::LossMeter;
pub use parity::IMAGE_HEADER;
pub(crate) use recovery::RecoveryBuffer;

/// FEC state of one connection: sender and receiver halves.
#[derive(Debug)]
pub(crate) struct FecState {
    pub tx: RepairEncoder,
    pub rx: RecoveryBuffer,
    pub meter: LossMeter,
    /// Lost packets the peer may still rebuild (see `rebuild_wait`).
    pub(crate) awaiting: crate::ring::Ring<rebuild_wait::Awaiting>,
}

impl FecState {
    pub fn new(config: FecConfig, max_datagram: usize) -> Self {
        FecState {
            tx: RepairEncoder::new(config, max_datagram),
            rx: RecoveryBuffer::default(),
            meter: LossMeter::default(),
            awaiting: Default::default(),
        }
    }
}
