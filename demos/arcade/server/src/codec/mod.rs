//! The arcade's compact binary messages, on the bit-packing and
//! quantisation of the `ricochet-game` crate (`wasm/game`).

pub mod messages;
#[cfg(test)]
mod vectors;

pub use messages::*;
pub use ricochet_game::{decode_angle, encode_angle, BitReader, BitWriter, DecodeError, Quantizer};
