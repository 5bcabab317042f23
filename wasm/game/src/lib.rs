//! The optional game layer above Ricochet, for native game servers.
//!
//! Ricochet is a transport: it moves bytes on channels. This crate is the
//! layer above it that packs those bytes compactly, and depends on nothing
//! (not even the transport):
//!
//! - [`BitWriter`] / [`BitReader`]: bit fields of 0..=32 bits, booleans,
//!   byte-aligned raw bytes and strings. Every read is bounds-checked: bad
//!   bytes give a [`DecodeError`], never a panic.
//! - [`Quantizer`], [`encode_angle`] / [`decode_angle`]: real values on a
//!   fixed grid, so they pack into few bits.
//!
//! The format is byte-compatible with the TypeScript package `@ricochet/game`
//! (`game/` in this repository): stream bit `i` is bit `i % 8` of byte
//! `i / 8`, each value least significant bit first, and the final byte is
//! zero-padded. The arcade's shared vectors pin the two.
//!
//! ```
//! use ricochet_game::{BitReader, BitWriter, Quantizer};
//!
//! const POSITION: Quantizer = Quantizer::new(0.0, 0.125, 14); // 0..2047.875 px, 1/8 px steps
//! let mut w = BitWriter::new();
//! w.write_bits(9, 4); // a 4-bit tag
//! w.write_bits(POSITION.encode(812.3), POSITION.bits);
//! w.write_string("Zoë", 16);
//! let bytes = w.finish();
//!
//! let mut r = BitReader::new(&bytes);
//! assert_eq!(r.read_bits(4)?, 9);
//! assert_eq!(POSITION.decode(r.read_bits(POSITION.bits)?), 812.25);
//! assert_eq!(r.read_string(16, "name")?, "Zoë");
//! r.finish()?;
//! # Ok::<(), ricochet_game::DecodeError>(())
//! ```
//!
//! - [`define_messages!`] / [`define_struct!`]: typed message schemas,
//!   declared once with bit widths and quantisers; the Rust types, `encode`
//!   and `decode` follow ([`schema`]). The same declaration as
//!   `defineMessages` in TypeScript writes the same bytes.
//!
//! Not here: interpolation and prediction, which belong to clients (the
//! TypeScript package has them).

pub mod bits;
pub mod quantize;
pub mod schema;

pub use bits::{BitReader, BitWriter, DecodeError};
pub use quantize::{decode_angle, encode_angle, Quantizer};
pub use schema::EncodeError;
