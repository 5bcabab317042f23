//! Compact binary encoding for game messages. `bits` and `quantize` are
//! game-agnostic and reusable; `messages` is the arcade's protocol.

pub mod bits;
pub mod messages;
pub mod quantize;
#[cfg(test)]
mod vectors;

pub use bits::{BitReader, BitWriter, DecodeError};
pub use messages::*;
pub use quantize::{decode_angle, encode_angle, Quantizer};
