//! Byte-level encoding of packets and frames, exactly as WIRE.md specifies.
//!
//! Decoding never panics: every read is bounds-checked and returns
//! `Err(WireError)` on short or malformed input. Encoding writes into a
//! caller-owned buffer through [`Writer`], which refuses (returns `false`)
//! rather than overflowing.

use crate::auth::{Nonce, SessionKey, KEY_LEN, NONCE_LEN, TAG_LEN};
use crate::prelude::*;

/// Protocol version carried in HELLO, WELCOME and REJECT.
pub const PROTOCOL_VERSION: u16 = 3;

/// Packet types (first byte of every datagram).
pub const PACKET_HELLO: u8 = 0x01;
pub const PACKET_WELCOME: u8 = 0x02;
pub const PACKET_REJECT: u8 = 0x03;
pub const PACKET_DATA: u8 = 0x04;

/// Frame types inside a DATA packet.
pub const FRAME_ACK: u8 = 0x01;
pub const FRAME_PING: u8 = 0x02;
pub const FRAME_CLOSE: u8 = 0x03;
pub const FRAME_MESSAGES: u8 = 0x10;
pub const FRAME_FRAGMENT: u8 = 0x11;
pub const FRAME_REPAIR: u8 = 0x20;
pub const FRAME_LOSS_REPORT: u8 = 0x21;
pub const FRAME_PATH_CHALLENGE: u8 = 0x30;
pub const FRAME_PATH_RESPONSE: u8 = 0x31;
/// Bytes of a PATH_CHALLENGE's (and PATH_RESPONSE's) data.
pub const PATH_DATA_LEN: usize = 8;

/// Most packets one REPAIR frame protects.
pub const MAX_REPAIR_COUNT: u8 = 32;
/// A REPAIR frame's count byte: the count in its low six bits, the power
/// of ω (`fec::parity`) in the top two.
const REPAIR_POWER_SHIFT: u8 = 6;
/// The count's bits in the REPAIR frame's count byte (below the power).
const REPAIR_COUNT_MASK: u8 = (1 << REPAIR_POWER_SHIFT) - 1;

/// Type byte + connection ID (4) + truncated packet number (2) + tag (8).
pub const DATA_HEADER_LEN: usize = 15;
/// WELCOME, and REJECT before its reason: type, ID, version, tag.
pub const HANDSHAKE_REPLY_HEADER_LEN: usize = 15;
/// WELCOME: the reply header and the server's nonce.
pub const WELCOME_LEN: usize = HANDSHAKE_REPLY_HEADER_LEN + NONCE_LEN;
/// Clients pad HELLO with zeros to this size, so that a server's REJECT,
/// which may never be larger than the HELLO it answers, has room for a reason.
pub const HELLO_MIN_LEN: usize = 128;
/// Most ACK ranges one ACK frame carries (beyond the first).
pub const MAX_ACK_RANGES: usize = 16;
/// Most channels a connection may declare (channel index is one byte).
pub const MAX_CHANNELS: usize = 255;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WireError {
    /// The input ended before the field was complete.
    Truncated,
    /// A varint ran past 10 bytes or overflowed 64 bits.
    BadVarint,
    /// An unknown packet or frame type byte.
    UnknownType(u8),
    /// A field holds a value the format forbids (zero count, bad kind, ...).
    Invalid(&'static str),
}

impl core::fmt::Display for WireError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            WireError::Truncated => write!(f, "datagram truncated"),
            WireError::BadVarint => write!(f, "malformed varint"),
            WireError::UnknownType(t) => write!(f, "unknown type byte 0x{t:02x}"),
            WireError::Invalid(what) => write!(f, "invalid field: {what}"),
        }
    }
}

/// Bounds-checked reader over a received datagram.
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub fn new(buf: &'a [u8]) -> Self {
        Reader { buf, pos: 0 }
    }
    pub fn pos(&self) -> usize {
        self.pos
    }
    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }
    pub fn is_empty(&self) -> bool {
        self.remaining() == 0
    }
    pub fn u8(&mut self) -> Result<u8, WireError> {
        let b = *self.buf.get(self.pos).ok_or(WireError::Truncated)?;
        self.pos += 1;
        Ok(b)
    }
    pub fn u16(&mut self) -> Result<u16, WireError> {
        let s = self.bytes(2)?;
        Ok(u16::from_le_bytes([s[0], s[1]]))
    }
    pub fn u32(&mut self) -> Result<u32, WireError> {
        let s = self.bytes(4)?;
        Ok(u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
    }
    /// LEB128 unsigned varint, at most 10 bytes.
    pub fn varint(&mut self) -> Result<u64, WireError> {
        let mut value: u64 = 0;
        for i in 0..10 {
            let b = self.u8()?;
            let part = (b & 0x7f) as u64;
            if i == 9 && part > 1 {
                return Err(WireError::BadVarint);
            }
            value |= part << (7 * i);
            if b & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(WireError::BadVarint)
    }
    /// A varint that must fit the given bound (used for lengths and counts).
    pub fn varint_max(&mut self, max: u64) -> Result<u64, WireError> {
        let v = self.varint()?;
        if v > max {
            return Err(WireError::Invalid("value above limit"));
        }
        Ok(v)
    }
    pub fn bytes(&mut self, n: usize) -> Result<&'a [u8], WireError> {
        let end = self.pos.checked_add(n).ok_or(WireError::Truncated)?;
        let s = self.buf.get(self.pos..end).ok_or(WireError::Truncated)?;
        self.pos = end;
        Ok(s)
    }
    /// A varint length followed by that many bytes.
    pub fn len_prefixed(&mut self) -> Result<&'a [u8], WireError> {
        let n = self.varint_max(self.remaining() as u64)?;
        self.bytes(n as usize)
    }
}

/// Writer into a caller-owned buffer. Every `put_*` returns false (and
/// writes nothing) when the value does not fit.
pub struct Writer<'a> {
    buf: &'a mut [u8],
    pos: usize,
}

impl<'a> Writer<'a> {
    pub fn new(buf: &'a mut [u8]) -> Self {
        Writer { buf, pos: 0 }
    }
    pub fn len(&self) -> usize {
        self.pos
    }
    pub fn is_empty(&self) -> bool {
        self.pos == 0
    }
    pub fn capacity(&self) -> usize {
        self.buf.len()
    }
    /// The bytes written so far.
    pub fn written(&self) -> &[u8] {
        &self.buf[..self.pos]
    }
    /// Lower the capacity (keeps room free at the end for later use).
    pub fn limit(&mut self, capacity: usize) {
        let cap = capacity.max(self.pos).min(self.buf.len());
        let buf = core::mem::take(&mut self.buf);
        self.buf = &mut buf[..cap];
    }
    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }
    /// Rewind to an earlier length (drops a frame that turned out not to fit).
    pub fn truncate(&mut self, len: usize) {
        self.pos = self.pos.min(len);
    }
    /// Overwrite one byte already written (fills in a count after the fact).
    pub fn patch_u8(&mut self, at: usize, v: u8) {
        if at < self.pos {
            self.buf[at] = v;
        }
    }
    pub fn put_u8(&mut self, v: u8) -> bool {
        self.put_bytes(&[v])
    }
    pub fn put_u16(&mut self, v: u16) -> bool {
        self.put_bytes(&v.to_le_bytes())
    }
    pub fn put_u32(&mut self, v: u32) -> bool {
        self.put_bytes(&v.to_le_bytes())
    }
    pub fn put_varint(&mut self, mut v: u64) -> bool {
        if v < 0x80 {
            return self.put_u8(v as u8);
        }
        let (mut tmp, mut n) = ([0u8; 10], 0);
        while v >= 0x80 {
            tmp[n] = v as u8 | 0x80;
            v >>= 7;
            n += 1;
        }
        tmp[n] = v as u8;
        self.put_bytes(&tmp[..=n])
    }
    pub fn put_bytes(&mut self, b: &[u8]) -> bool {
        if b.len() > self.remaining() {
            return false;
        }
        self.buf[self.pos..self.pos + b.len()].copy_from_slice(b);
        self.pos += b.len();
        true
    }
    pub fn put_len_prefixed(&mut self, b: &[u8]) -> bool {
        if varint_len(b.len() as u64) + b.len() > self.remaining() {
            return false;
        }
        self.put_varint(b.len() as u64) && self.put_bytes(b)
    }
}

/// Bytes a varint of this value takes.
pub fn varint_len(v: u64) -> usize {
    let bits = 64 - (v | 1).leading_zeros() as usize;
    bits.div_ceil(7)
}

/// Expand a 16-bit truncated number to the full value closest to `expected`
/// (the QUIC rule, with a 2^16 window).
pub fn expand_u16(truncated: u16, expected: u64) -> u64 {
    const WIN: u64 = 1 << 16;
    const HALF: u64 = WIN / 2;
    let candidate = (expected & !(WIN - 1)) | truncated as u64;
    if candidate + HALF <= expected && candidate < u64::MAX - WIN {
        candidate + WIN
    } else if candidate > expected + HALF && candidate >= WIN {
        candidate - WIN
    } else {
        candidate
    }
}

/// Channel delivery kinds, as declared in HELLO (one byte each).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ChannelKind {
    /// Every message arrives, in send order; a loss on this channel never
    /// blocks another channel.
    ReliableOrdered = 0,
    /// Every message arrives, as soon as it is complete.
    ReliableUnordered = 1,
    /// Messages may be lost; an older message is never delivered after a newer one.
    UnreliableSequenced = 2,
    /// Messages may be lost and may arrive in any order.
    Unreliable = 3,
}

impl ChannelKind {
    pub fn from_byte(b: u8) -> Result<ChannelKind, WireError> {
        Ok(match b {
            0 => ChannelKind::ReliableOrdered,
            1 => ChannelKind::ReliableUnordered,
            2 => ChannelKind::UnreliableSequenced,
            3 => ChannelKind::Unreliable,
            _ => return Err(WireError::Invalid("channel kind")),
        })
    }
    pub fn is_reliable(self) -> bool {
        matches!(
            self,
            ChannelKind::ReliableOrdered | ChannelKind::ReliableUnordered
        )
    }
}

/// A decoded HELLO, WELCOME or REJECT packet (borrowing the datagram).
#[derive(Debug, PartialEq, Eq)]
pub enum Handshake<'a> {
    Hello {
        conn_id: u32,
        version: u16,
        channels: Vec<ChannelKind>,
        key: SessionKey,
        payload: &'a [u8],
    },
    Welcome {
        conn_id: u32,
        version: u16,
        nonce: Nonce,
    },
    Reject {
        conn_id: u32,
        version: u16,
        reason: &'a [u8],
    },
}

/// The connection ID of any packet, or None if the datagram is too short or
/// of an unknown type. Lets a server route without a full decode.
pub fn peek_conn_id(datagram: &[u8]) -> Option<(u8, u32)> {
    let ty = *datagram.first()?;
    if !(PACKET_HELLO..=PACKET_DATA).contains(&ty) {
        return None;
    }
    let id = datagram.get(1..5)?;
    Some((ty, u32::from_le_bytes([id[0], id[1], id[2], id[3]])))
}

pub fn decode_handshake(datagram: &[u8]) -> Result<Handshake<'_>, WireError> {
    let mut r = Reader::new(datagram);
    let ty = r.u8()?;
    let conn_id = r.u32()?;
    let version = r.u16()?;
    let hs = match ty {
        PACKET_HELLO => {
            let count = r.u8()? as usize;
            if count == 0 {
                return Err(WireError::Invalid("no channels"));
            }
            let kinds = r.bytes(count)?;
            let channels = kinds
                .iter()
                .map(|&b| ChannelKind::from_byte(b))
                .collect::<Result<Vec<_>, _>>()?;
            let mut key = [0u8; KEY_LEN];
            key.copy_from_slice(r.bytes(KEY_LEN)?);
            let payload = r.len_prefixed()?;
            // Padding: zeros only, so a HELLO still has one encoding per content.
            if r.bytes(r.remaining())?.iter().any(|&b| b != 0) {
                return Err(WireError::Invalid("non-zero HELLO padding"));
            }
            Handshake::Hello {
                conn_id,
                version,
                channels,
                key,
                payload,
            }
        }
        PACKET_WELCOME => {
            r.bytes(TAG_LEN)?;
            let mut nonce = [0u8; NONCE_LEN];
            nonce.copy_from_slice(r.bytes(NONCE_LEN)?);
            Handshake::Welcome {
                conn_id,
                version,
                nonce,
            }
        }
        PACKET_REJECT => {
            r.bytes(TAG_LEN)?;
            Handshake::Reject {
                conn_id,
                version,
                reason: r.len_prefixed()?,
            }
        }
        other => return Err(WireError::UnknownType(other)),
    };
    if !r.is_empty() {
        return Err(WireError::Invalid("trailing bytes"));
    }
    if conn_id == 0 {
        return Err(WireError::Invalid("connection ID 0"));
    }
    Ok(hs)
}

/// HELLO without padding (see [`pad_hello`]).
pub fn encode_hello(
    w: &mut Writer,
    conn_id: u32,
    channels: &[ChannelKind],
    key: &SessionKey,
    payload: &[u8],
) -> bool {
    w.put_u8(PACKET_HELLO)
        && w.put_u32(conn_id)
        && w.put_u16(PROTOCOL_VERSION)
        && w.put_u8(channels.len() as u8)
        && channels.iter().all(|&k| w.put_u8(k as u8))
        && w.put_bytes(key)
        && w.put_len_prefixed(payload)
}

/// Zero-pad a HELLO to [`HELLO_MIN_LEN`] (or as far as the buffer allows).
pub fn pad_hello(w: &mut Writer) {
    let n = HELLO_MIN_LEN.saturating_sub(w.len()).min(w.remaining());
    w.put_bytes(&[0; HELLO_MIN_LEN][..n]);
}

/// The tag is written as zeros: `TagKey::seal` fills it in once the
/// datagram is complete (it covers the length, and for WELCOME the nonce:
/// see `auth::welcome_number`).
pub fn encode_welcome(w: &mut Writer, conn_id: u32, nonce: &Nonce) -> bool {
    w.put_u8(PACKET_WELCOME)
        && w.put_u32(conn_id)
        && w.put_u16(PROTOCOL_VERSION)
        && w.put_bytes(&[0; TAG_LEN])
        && w.put_bytes(nonce)
}

/// Tag written as zeros, as for WELCOME.
pub fn encode_reject(w: &mut Writer, conn_id: u32, reason: &[u8]) -> bool {
    w.put_u8(PACKET_REJECT)
        && w.put_u32(conn_id)
        && w.put_u16(PROTOCOL_VERSION)
        && w.put_bytes(&[0; TAG_LEN])
        && w.put_len_prefixed(reason)
}

/// Tag written as zeros, as for WELCOME.
pub fn encode_data_header(w: &mut Writer, conn_id: u32, pn: u64) -> bool {
    let ([a, b, c, d], [e, f]) = (conn_id.to_le_bytes(), (pn as u16).to_le_bytes());
    // Type, ID, the number's low 16 bits, then room for the tag (`seal`).
    let header: [u8; DATA_HEADER_LEN] = [PACKET_DATA, a, b, c, d, e, f, 0, 0, 0, 0, 0, 0, 0, 0];
    w.put_bytes(&header)
}

/// The longest prefix of `reason`, cut at a char boundary, whose REJECT
/// fits in `max_len` bytes; None if not even an empty reason fits.
pub fn fit_reject_reason(reason: &str, max_len: usize) -> Option<&str> {
    let room = max_len.checked_sub(HANDSHAKE_REPLY_HEADER_LEN)?;
    let mut cut = reason.len().min(room);
    while cut > 0 && (!reason.is_char_boundary(cut) || varint_len(cut as u64) + cut > room) {
        cut -= 1;
    }
    // `get`, not indexing: `cut` is a char boundary, and this keeps str's
    // slice-panic formatting out of the wasm.
    if room >= 1 {
        reason.get(..cut)
    } else {
        None
    }
}

/// One decoded frame of a DATA packet. Byte fields borrow the datagram.
#[derive(Debug, PartialEq, Eq)]
pub enum Frame<'a> {
    /// `largest` is truncated to 16 bits; `ranges` is the raw (gap, len)
    /// list after the first range, decoded lazily by [`AckRanges`].
    Ack {
        largest: u16,
        delay_us: u64,
        first_range: u64,
        ranges: &'a [u8],
        range_count: usize,
    },
    Ping,
    Close {
        code: u64,
        reason: &'a [u8],
    },
    /// `count` messages with consecutive sequence numbers from `first_seq`;
    /// `body` holds `count` length-prefixed messages.
    Messages {
        channel: u8,
        first_seq: u16,
        count: usize,
        body: &'a [u8],
    },
    Fragment {
        channel: u8,
        seq: u16,
        index: u32,
        count: u32,
        data: &'a [u8],
    },
    /// Parity over DATA packets `first_pn .. first_pn + count` (low 16
    /// bits of the first), member `i` times ω^(power·i) (see `fec::parity`
    /// for the layout; power 0 is their XOR).
    Repair {
        first_pn: u16,
        count: u8,
        power: u8,
        parity: &'a [u8],
    },
    /// The sender's measured loss on the packets it receives, and P(lost |
    /// previous lost), both in units of 1/65535.
    LossReport {
        loss: u16,
        burst: u16,
    },
    /// Server → client after the client's address changed: echo this.
    PathChallenge([u8; PATH_DATA_LEN]),
    /// Client → server: the data of a PATH_CHALLENGE it received.
    PathResponse([u8; PATH_DATA_LEN]),
}

/// Every fragment but a message's last carries at least this many bytes, so
/// a message of n bytes has at most n / 64 + 1 fragments (bounds bookkeeping).
pub const MIN_FRAGMENT_BYTES: usize = 64;

/// Hard upper bound on fragments per message (a 1 MiB message at the
/// smallest legal datagram needs far fewer); guards allocation.
pub const MAX_FRAGMENTS: u64 = 1 << 20;

/// Decode the next frame. The caller loops until the reader is empty.
pub fn decode_frame<'a>(r: &mut Reader<'a>) -> Result<Frame<'a>, WireError> {
    let ty = r.u8()?;
    Ok(match ty {
        FRAME_ACK => {
            let largest = r.u16()?;
            let delay_us = r.varint()?;
            let range_count = r.varint_max(MAX_ACK_RANGES as u64)? as usize;
            let first_range = r.varint_max(u16::MAX as u64)?;
            let start = r.pos();
            for _ in 0..range_count {
                r.varint_max(u16::MAX as u64)?;
                r.varint_max(u16::MAX as u64)?;
            }
            let end = r.pos();
            let all = r.buf;
            Frame::Ack {
                largest,
                delay_us,
                first_range,
                ranges: &all[start..end],
                range_count,
            }
        }
        FRAME_PING => Frame::Ping,
        FRAME_CLOSE => {
            let code = r.varint()?;
            let reason = r.len_prefixed()?;
            Frame::Close { code, reason }
        }
        FRAME_MESSAGES => {
            let channel = r.u8()?;
            let first_seq = r.u16()?;
            let count = r.varint_max(r.remaining() as u64)? as usize;
            if count == 0 {
                return Err(WireError::Invalid("empty MESSAGES frame"));
            }
            let start = r.pos();
            for _ in 0..count {
                r.len_prefixed()?;
            }
            let all = r.buf;
            Frame::Messages {
                channel,
                first_seq,
                count,
                body: &all[start..r.pos()],
            }
        }
        FRAME_FRAGMENT => {
            let channel = r.u8()?;
            let seq = r.u16()?;
            let index = r.varint_max(MAX_FRAGMENTS - 1)? as u32;
            let count = r.varint_max(MAX_FRAGMENTS)? as u32;
            if count < 2 || index >= count {
                return Err(WireError::Invalid("fragment index/count"));
            }
            let data = r.len_prefixed()?;
            if index + 1 < count && data.len() < MIN_FRAGMENT_BYTES {
                return Err(WireError::Invalid(
                    "fragment shorter than 64 bytes before the last",
                ));
            }
            Frame::Fragment {
                channel,
                seq,
                index,
                count,
                data,
            }
        }
        FRAME_REPAIR => {
            let first_pn = r.u16()?;
            let byte = r.u8()?;
            let (count, power) = (byte & REPAIR_COUNT_MASK, byte >> REPAIR_POWER_SHIFT);
            if count == 0 || count > MAX_REPAIR_COUNT {
                return Err(WireError::Invalid("repair count"));
            }
            if power >= crate::fec::parity::POWERS {
                return Err(WireError::Invalid("repair power"));
            }
            let parity = r.len_prefixed()?;
            if parity.len() < crate::fec::IMAGE_HEADER {
                return Err(WireError::Invalid("repair parity shorter than 6 bytes"));
            }
            Frame::Repair {
                first_pn,
                count,
                power,
                parity,
            }
        }
        FRAME_LOSS_REPORT => Frame::LossReport {
            loss: r.u16()?,
            burst: r.u16()?,
        },
        FRAME_PATH_CHALLENGE | FRAME_PATH_RESPONSE => {
            let mut data = [0u8; PATH_DATA_LEN];
            data.copy_from_slice(r.bytes(PATH_DATA_LEN)?);
            if ty == FRAME_PATH_CHALLENGE {
                Frame::PathChallenge(data)
            } else {
                Frame::PathResponse(data)
            }
        }
        other => return Err(WireError::UnknownType(other)),
    })
}

/// Bytes a REPAIR frame takes for this parity length.
pub fn repair_frame_len(parity_len: usize) -> usize {
    1 + 2 + 1 + varint_len(parity_len as u64) + parity_len
}

/// `power` < `fec::parity::POWERS`, `count` ≤ [`MAX_REPAIR_COUNT`].
pub fn encode_repair(w: &mut Writer, first_pn: u64, count: u8, power: u8, parity: &[u8]) -> bool {
    if repair_frame_len(parity.len()) > w.remaining() {
        return false;
    }
    w.put_u8(FRAME_REPAIR)
        && w.put_u16(first_pn as u16)
        && w.put_u8(count | power << REPAIR_POWER_SHIFT)
        && w.put_len_prefixed(parity)
}

/// PATH_CHALLENGE or PATH_RESPONSE (`ty`), whole or not at all.
pub fn encode_path_frame(w: &mut Writer, ty: u8, data: &[u8; PATH_DATA_LEN]) -> bool {
    if w.remaining() < 1 + PATH_DATA_LEN {
        return false;
    }
    w.put_u8(ty) && w.put_bytes(data)
}

pub fn encode_loss_report(w: &mut Writer, loss: u16, burst: u16) -> bool {
    if w.remaining() < 5 {
        return false;
    }
    w.put_u8(FRAME_LOSS_REPORT) && w.put_u16(loss) && w.put_u16(burst)
}

/// Iterates the message payloads of a MESSAGES frame body (already validated
/// by `decode_frame`, so it cannot fail; malformed input simply ends it).
pub struct MessageIter<'a> {
    r: Reader<'a>,
}

impl<'a> MessageIter<'a> {
    pub fn new(body: &'a [u8]) -> Self {
        MessageIter {
            r: Reader::new(body),
        }
    }
}

impl<'a> Iterator for MessageIter<'a> {
    type Item = &'a [u8];
    fn next(&mut self) -> Option<&'a [u8]> {
        self.r.len_prefixed().ok()
    }
}

/// Iterates the (gap, len) pairs after the first range of an ACK frame.
pub struct AckRanges<'a> {
    r: Reader<'a>,
}

impl<'a> AckRanges<'a> {
    pub fn new(raw: &'a [u8]) -> Self {
        AckRanges {
            r: Reader::new(raw),
        }
    }
}

impl Iterator for AckRanges<'_> {
    type Item = (u64, u64);
    fn next(&mut self) -> Option<(u64, u64)> {
        let gap = self.r.varint().ok()?;
        let len = self.r.varint().ok()?;
        Some((gap, len))
    }
}

/// Bytes a MESSAGES frame header takes (type, channel, first_seq, count).
pub fn messages_header_len(count: usize) -> usize {
    1 + 1 + 2 + varint_len(count as u64)
}

/// Bytes a FRAGMENT frame takes for this index/count/data length.
pub fn fragment_frame_len(index: u32, count: u32, data_len: usize) -> usize {
    1 + 1
        + 2
        + varint_len(index as u64)
        + varint_len(count as u64)
        + varint_len(data_len as u64)
        + data_len
}

pub fn encode_fragment(
    w: &mut Writer,
    channel: u8,
    seq: u64,
    index: u32,
    count: u32,
    data: &[u8],
) -> bool {
    if fragment_frame_len(index, count, data.len()) > w.remaining() {
        return false;
    }
    w.put_u8(FRAME_FRAGMENT)
        && w.put_u8(channel)
        && w.put_u16(seq as u16)
        && w.put_varint(index as u64)
        && w.put_varint(count as u64)
        && w.put_len_prefixed(data)
}

pub fn encode_close(w: &mut Writer, code: u64, reason: &[u8]) -> bool {
    let mark = w.len();
    let ok = w.put_u8(FRAME_CLOSE) && w.put_varint(code) && w.put_len_prefixed(reason);
    if !ok {
        w.truncate(mark);
    }
    ok
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varint_round_trips_edges() {
        for v in [0u64, 1, 127, 128, 16383, 16384, u32::MAX as u64, u64::MAX] {
            let mut buf = [0u8; 10];
            let mut w = Writer::new(&mut buf);
            assert!(w.put_varint(v));
            assert_eq!(w.len(), varint_len(v));
            let n = w.len();
            assert_eq!(Reader::new(&buf[..n]).varint(), Ok(v));
        }
    }

    #[test]
    fn varint_rejects_overlong_and_overflow() {
        assert_eq!(Reader::new(&[0x80; 11]).varint(), Err(WireError::BadVarint));
        let mut over = [0xffu8; 10];
        over[9] = 0x02;
        assert_eq!(Reader::new(&over).varint(), Err(WireError::BadVarint));
        assert_eq!(Reader::new(&[0x80]).varint(), Err(WireError::Truncated));
    }

    #[test]
    fn expand_u16_picks_nearest() {
        assert_eq!(expand_u16(5, 0), 5);
        assert_eq!(expand_u16(0xffff, 0x1_0002), 0xffff);
        assert_eq!(expand_u16(2, 0xfffe), 0x1_0002);
        assert_eq!(expand_u16(0x8000, 0), 0x8000);
    }

    #[test]
    fn hello_round_trips() {
        let mut buf = [0u8; 64];
        let mut w = Writer::new(&mut buf);
        assert!(encode_hello(
            &mut w,
            9,
            &[ChannelKind::ReliableOrdered, ChannelKind::Unreliable],
            &[5; 16],
            b"hi"
        ));
        let n = w.len();
        let hs = decode_handshake(&buf[..n]).unwrap();
        assert_eq!(
            hs,
            Handshake::Hello {
                conn_id: 9,
                version: PROTOCOL_VERSION,
                channels: vec![ChannelKind::ReliableOrdered, ChannelKind::Unreliable],
                key: [5; 16],
                payload: b"hi"
            }
        );
    }

    #[test]
    fn reject_reason_is_cut_at_a_char_boundary_to_fit() {
        assert_eq!(fit_reject_reason("server full", 15), None);
        assert_eq!(fit_reject_reason("server full", 16), Some(""));
        assert_eq!(fit_reject_reason("server full", 22), Some("server"));
        assert_eq!(fit_reject_reason("ééé", 16 + 3), Some("é"));
        assert_eq!(fit_reject_reason("server full", 100), Some("server full"));
        let long = "x".repeat(300);
        let cut = fit_reject_reason(&long, 200).unwrap();
        assert_eq!(
            HANDSHAKE_REPLY_HEADER_LEN + varint_len(cut.len() as u64) + cut.len(),
            200
        );
    }

    #[test]
    fn writer_refuses_overflow_without_partial_write() {
        let mut buf = [0u8; 3];
        let mut w = Writer::new(&mut buf);
        assert!(!w.put_u32(1));
        assert_eq!(w.len(), 0);
        assert!(!w.put_len_prefixed(b"abc"));
        assert_eq!(w.len(), 0);
    }
}
