//! Bit-packing: a writer and a reader over a byte buffer, for compact game
//! messages.
//!
//! Bit order (identical in `game/src/bits.ts`, pinned by the arcade's shared
//! test vectors): stream bit `i` is bit `i % 8` of byte `i / 8`, and each
//! value is written least significant bit first. A message's final byte is
//! padded with zero bits. A 32-bit field written at a byte boundary is
//! therefore the value's four little-endian bytes.

use std::fmt;

/// Why a message could not be decoded. Every read is bounds-checked: bad
/// bytes give one of these, never a panic.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DecodeError {
    /// The message ended before the field did.
    Truncated,
    /// The leading tag names no known message.
    UnknownTag(u32),
    /// A string's bytes are not UTF-8.
    InvalidUtf8,
    /// A field decoded to a value the protocol forbids (names the field).
    OutOfRange(&'static str),
    /// Bytes remain after the message.
    TrailingBytes(usize),
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DecodeError::Truncated => write!(f, "message truncated"),
            DecodeError::UnknownTag(t) => write!(f, "unknown message tag {t}"),
            DecodeError::InvalidUtf8 => write!(f, "string is not UTF-8"),
            DecodeError::OutOfRange(field) => write!(f, "{field} out of range"),
            DecodeError::TrailingBytes(n) => write!(f, "{n} trailing bytes after the message"),
        }
    }
}

impl std::error::Error for DecodeError {}

/// Appends bit fields to a growing buffer.
#[derive(Default)]
pub struct BitWriter {
    bytes: Vec<u8>,
    /// Bits used in the last byte (0 = the next write starts a new byte).
    used: u32,
}

impl BitWriter {
    /// An empty writer.
    pub fn new() -> BitWriter {
        BitWriter::default()
    }

    /// An empty writer with room for `bytes` bytes before it reallocates.
    pub fn with_capacity(bytes: usize) -> BitWriter {
        BitWriter {
            bytes: Vec::with_capacity(bytes),
            used: 0,
        }
    }

    /// Writes the low `bits` bits of `value` (0..=32 bits; higher bits of
    /// `value` are ignored).
    pub fn write_bits(&mut self, value: u32, bits: u32) {
        debug_assert!(bits <= 32);
        if bits == 0 {
            return;
        }
        let value = if bits == 32 {
            value as u64
        } else {
            (value as u64) & ((1u64 << bits) - 1)
        };
        // One shifted OR over the (at most 5) bytes the field touches: bots
        // and server pack thousands of fields a tick, a loop per byte cost more.
        let (start, offset) = if self.used == 0 {
            (self.bytes.len(), 0)
        } else {
            (self.bytes.len() - 1, self.used)
        };
        let end_bit = offset + bits;
        let end = start + end_bit.div_ceil(8) as usize;
        self.bytes.resize(end, 0);
        let shifted = value << offset;
        for (i, b) in self.bytes[start..end].iter_mut().enumerate() {
            *b |= (shifted >> (8 * i)) as u8;
        }
        self.used = end_bit % 8;
    }

    /// Writes one bit.
    pub fn write_bool(&mut self, v: bool) {
        self.write_bits(v as u32, 1);
    }

    /// Pads to the next byte boundary with zero bits.
    pub fn align(&mut self) {
        self.used = 0;
    }

    /// Aligns, then appends raw bytes.
    pub fn write_bytes(&mut self, data: &[u8]) {
        self.align();
        self.bytes.extend_from_slice(data);
    }

    /// Aligns, then writes a length byte and the UTF-8 of `s`, cut at
    /// `max_bytes` (≤ 255) on a character boundary.
    pub fn write_string(&mut self, s: &str, max_bytes: usize) {
        let mut end = s.len().min(max_bytes).min(255);
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        self.align();
        self.bytes.push(end as u8);
        self.bytes.extend_from_slice(&s.as_bytes()[..end]);
    }

    /// Bytes written so far (a partly filled last byte counts).
    pub fn len_bytes(&self) -> usize {
        self.bytes.len()
    }

    /// The message's bytes.
    pub fn finish(self) -> Vec<u8> {
        self.bytes
    }
}

/// Reads bit fields written by [`BitWriter`].
pub struct BitReader<'a> {
    bytes: &'a [u8],
    /// Next bit to read, from the start of `bytes`.
    pos: usize,
}

impl<'a> BitReader<'a> {
    /// A reader at the first bit of `bytes`.
    pub fn new(bytes: &'a [u8]) -> BitReader<'a> {
        BitReader { bytes, pos: 0 }
    }

    /// Reads `bits` bits (0..=32).
    pub fn read_bits(&mut self, bits: u32) -> Result<u32, DecodeError> {
        debug_assert!(bits <= 32);
        if self.pos + bits as usize > self.bytes.len() * 8 {
            return Err(DecodeError::Truncated);
        }
        if bits == 0 {
            return Ok(0);
        }
        // A field spans at most 5 bytes (7 bits of offset + 32): read them as
        // one little-endian word instead of a loop per byte.
        let start = self.pos / 8;
        let end = (start + 8).min(self.bytes.len());
        let mut word = [0u8; 8];
        word[..end - start].copy_from_slice(&self.bytes[start..end]);
        let value = (u64::from_le_bytes(word) >> (self.pos % 8)) & ((1u64 << bits) - 1);
        self.pos += bits as usize;
        Ok(value as u32)
    }

    /// Reads one bit.
    pub fn read_bool(&mut self) -> Result<bool, DecodeError> {
        Ok(self.read_bits(1)? == 1)
    }

    /// Bits left to read (the final byte's padding included).
    pub fn remaining_bits(&self) -> usize {
        self.bytes.len() * 8 - self.pos
    }

    /// Skips to the next byte boundary.
    pub fn align(&mut self) {
        self.pos = self.pos.div_ceil(8) * 8;
    }

    /// Aligns, then takes `n` raw bytes.
    pub fn read_bytes(&mut self, n: usize) -> Result<&'a [u8], DecodeError> {
        self.align();
        let start = self.pos / 8;
        let end = start.checked_add(n).ok_or(DecodeError::Truncated)?;
        let out = self.bytes.get(start..end).ok_or(DecodeError::Truncated)?;
        self.pos = end * 8;
        Ok(out)
    }

    /// Reads a string written by [`BitWriter::write_string`]; longer than
    /// `max_bytes` is an error naming `field`.
    pub fn read_string(
        &mut self,
        max_bytes: usize,
        field: &'static str,
    ) -> Result<String, DecodeError> {
        let len = self.read_bytes(1)?[0] as usize; // read_bytes(1) returned exactly one byte
        if len > max_bytes {
            return Err(DecodeError::OutOfRange(field));
        }
        let raw = self.read_bytes(len)?;
        String::from_utf8(raw.to_vec()).map_err(|_| DecodeError::InvalidUtf8)
    }

    /// Ok if nothing but the final byte's zero padding is left.
    pub fn finish(mut self) -> Result<(), DecodeError> {
        self.align();
        let left = self.bytes.len() - self.pos / 8;
        if left > 0 {
            return Err(DecodeError::TrailingBytes(left));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_round_trip_at_every_width_and_offset() {
        let mut w = BitWriter::new();
        for bits in 0..=32u32 {
            let v = if bits == 32 {
                0xdead_beef
            } else {
                0xdead_beef & ((1u32 << bits) - 1)
            };
            w.write_bits(v, bits);
        }
        let bytes = w.finish();
        let mut r = BitReader::new(&bytes);
        for bits in 0..=32u32 {
            let v = if bits == 32 {
                0xdead_beef
            } else {
                0xdead_beef & ((1u32 << bits) - 1)
            };
            assert_eq!(r.read_bits(bits).unwrap(), v, "width {bits}");
        }
        r.finish().unwrap();
    }

    /// The word-at-a-time reader and writer against the format's definition
    /// (stream bit i is bit i % 8 of byte i / 8), one bit at a time.
    #[test]
    fn fields_match_the_bit_by_bit_definition() {
        let mut seed = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let fields: Vec<(u32, u32)> = (0..500)
            .map(|_| ((next() % 33) as u32, next() as u32))
            .collect();
        let mut expected = Vec::new();
        let mut bit = 0usize;
        for &(bits, v) in &fields {
            for b in 0..bits {
                if bit.is_multiple_of(8) {
                    expected.push(0u8);
                }
                expected[bit / 8] |= (((v >> b) & 1) as u8) << (bit % 8);
                bit += 1;
            }
        }
        let mut w = BitWriter::new();
        fields.iter().for_each(|&(bits, v)| w.write_bits(v, bits));
        let bytes = w.finish();
        assert_eq!(bytes, expected);
        let mut r = BitReader::new(&bytes);
        for &(bits, v) in &fields {
            let masked = if bits == 32 {
                v
            } else {
                v & ((1u32 << bits) - 1)
            };
            assert_eq!(r.read_bits(bits).unwrap(), masked);
        }
        r.finish().unwrap();
    }

    #[test]
    fn bits_fill_each_byte_from_the_least_significant_end() {
        let mut w = BitWriter::new();
        w.write_bits(0b1, 1);
        w.write_bits(0b10, 2);
        w.write_bits(0x1f, 5);
        w.write_bits(0x3, 4);
        assert_eq!(w.finish(), vec![0b1111_1101, 0x03]);
    }

    #[test]
    fn reading_past_the_end_is_truncated_not_a_panic() {
        let mut r = BitReader::new(&[0xff]);
        assert_eq!(r.read_bits(7).unwrap(), 0x7f);
        assert_eq!(r.read_bits(2), Err(DecodeError::Truncated));
        assert_eq!(
            BitReader::new(&[]).read_bytes(1),
            Err(DecodeError::Truncated)
        );
        assert_eq!(
            BitReader::new(&[5, b'a']).read_string(255, "s"),
            Err(DecodeError::Truncated)
        );
    }

    #[test]
    fn strings_are_cut_on_a_character_boundary() {
        let mut w = BitWriter::new();
        w.write_string("héllo", 2); // 'h' + half of 'é' → only 'h'
        let bytes = w.finish();
        assert_eq!(bytes, vec![1, b'h']);
        assert_eq!(BitReader::new(&bytes).read_string(16, "s").unwrap(), "h");
    }

    #[test]
    fn invalid_utf8_and_overlong_strings_are_errors() {
        assert_eq!(
            BitReader::new(&[1, 0xff]).read_string(16, "s"),
            Err(DecodeError::InvalidUtf8)
        );
        assert_eq!(
            BitReader::new(&[3, b'a', b'b', b'c']).read_string(2, "name"),
            Err(DecodeError::OutOfRange("name"))
        );
    }

    #[test]
    fn trailing_bytes_are_reported() {
        let r = BitReader::new(&[1, 2]);
        assert_eq!(r.finish(), Err(DecodeError::TrailingBytes(2)));
    }

    /// A 32- and a 16-bit field at a byte boundary are the little-endian
    /// bytes of the values (what `DataView.setUint32(.., true)` writes).
    #[test]
    fn aligned_fields_are_little_endian() {
        let mut w = BitWriter::new();
        w.write_bits(0xf, 4);
        w.align();
        w.write_bits(0x1234_5678, 32);
        w.write_bits(0xabcd, 16);
        assert_eq!(w.finish(), vec![0x0f, 0x78, 0x56, 0x34, 0x12, 0xcd, 0xab]);
    }

    #[test]
    fn no_bytes_make_the_reader_panic() {
        let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for len in 0..300usize {
            let bytes: Vec<u8> = (0..len % 40).map(|_| next() as u8).collect();
            let mut r = BitReader::new(&bytes);
            for _ in 0..20 {
                let _ = match next() % 4 {
                    0 => r.read_bits((next() % 33) as u32).map(|_| ()),
                    1 => r.read_string((next() % 256) as usize, "s").map(|_| ()),
                    2 => r.read_bytes((next() % 64) as usize).map(|_| ()),
                    _ => r.read_bool().map(|_| ()),
                };
                assert!(r.remaining_bits() <= bytes.len() * 8);
            }
            let _ = r.finish();
        }
    }
}
