//! Session keys and packet authentication tags (WIRE.md, "Authentication").
//!
//! The client picks a 128-bit session key from OS randomness (the host
//! supplies it: the core reads no randomness) and sends it in HELLO. Each
//! direction tags its WELCOME, REJECT and DATA packets with SipHash-2-4
//! under a key derived from it, so an off-path attacker who learns a
//! connection ID still cannot forge, close or hijack the session. The tag
//! covers the header only (type, connection ID, full packet number, length):
//! constant cost per packet; the payload's integrity is the transport's job.

use hmac::{Hmac, Mac};
use sha2::Sha256;
use siphasher::sip::SipHasher24;

/// Bytes of the session key carried in HELLO.
pub const KEY_LEN: usize = 16;
/// Bytes of the tag in WELCOME, REJECT and DATA.
pub const TAG_LEN: usize = 8;
/// Where the tag sits in WELCOME, REJECT and DATA (after type, ID and the u16).
pub const TAG_OFFSET: usize = 7;
/// Bytes of randomness a client connection starts from: connection ID (4) and key (16).
pub const CLIENT_ENTROPY_LEN: usize = 4 + KEY_LEN;

/// The client's 128-bit session key, as sent in HELLO.
pub type SessionKey = [u8; KEY_LEN];

/// Bytes of the server's nonce N in WELCOME (see `TagKey::derive_client`).
pub const NONCE_LEN: usize = 8;
/// Bytes of the secret a server derives its nonces from.
pub const SERVER_SECRET_LEN: usize = 32;
/// The server's per-connection nonce, sent in WELCOME.
pub type Nonce = [u8; NONCE_LEN];
/// A server's secret (from OS randomness, supplied by the host).
pub type ServerSecret = [u8; SERVER_SECRET_LEN];

/// Which way a packet travels; each direction has its own tag key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    ClientToServer = 1,
    ServerToClient = 2,
}

/// A direction's SipHash key, derived from the session key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TagKey(u64, u64);

/// Label of the key derivation (WIRE.md): `"ricochet-3" ‖ direction ‖ half`.
const LABEL: &[u8; 10] = b"ricochet-3";

impl TagKey {
    /// `k0 = SipHash-2-4(K, label ‖ dir ‖ 0)`, `k1 = SipHash-2-4(K, label ‖ dir ‖ 1)`.
    pub fn derive(key: &SessionKey, dir: Direction) -> TagKey {
        let h = SipHasher24::new_with_key(key);
        let mut msg = [0u8; 12];
        msg[..10].copy_from_slice(LABEL);
        msg[10] = dir as u8;
        let k0 = h.hash(&msg);
        msg[11] = 1;
        TagKey(k0, h.hash(&msg))
    }

    /// The client → server key: as `derive` with the server's nonce N from
    /// WELCOME appended, `SipHash-2-4(K, label ‖ 0x01 ‖ half ‖ N)`. K is the
    /// client's choice and proves nothing about its address; a packet
    /// tagged under N proves its sender received the WELCOME there.
    pub fn derive_client(key: &SessionKey, nonce: &Nonce) -> TagKey {
        let h = SipHasher24::new_with_key(key);
        let mut msg = [0u8; 12 + NONCE_LEN];
        msg[..10].copy_from_slice(LABEL);
        msg[10] = Direction::ClientToServer as u8;
        msg[12..].copy_from_slice(nonce);
        let k0 = h.hash(&msg);
        msg[11] = 1;
        TagKey(k0, h.hash(&msg))
    }

    /// The 16 key bytes (k0 ‖ k1, little-endian), for test vectors.
    pub fn to_bytes(self) -> [u8; 16] {
        let mut b = [0u8; 16];
        b[..8].copy_from_slice(&self.0.to_le_bytes());
        b[8..].copy_from_slice(&self.1.to_le_bytes());
        b
    }

    /// Tag of a packet: SipHash-2-4 over `type u8 ‖ connection_id u32 ‖
    /// number u64 ‖ datagram_length u32` (17 bytes, little-endian).
    /// SipHash-2-4 itself, unrolled for this one 17-byte message (the
    /// generic hasher's buffering was ~30% of the cost; `tag_is_siphash`
    /// checks it against the crate).
    pub fn tag(self, ty: u8, conn_id: u32, number: u64, len: usize) -> u64 {
        // Little-endian words of the message: bytes 0–7, 8–15, then the
        // last byte with the length (17) in the top byte.
        let m0 = u64::from(ty) | u64::from(conn_id) << 8 | number << 40;
        let m1 = number >> 24 | u64::from(len as u32) << 40;
        let m2 = u64::from((len as u32) >> 24) | 17 << 56;
        let mut v = [
            self.0 ^ 0x736f_6d65_7073_6575,
            self.1 ^ 0x646f_7261_6e64_6f6d,
            self.0 ^ 0x6c79_6765_6e65_7261,
            self.1 ^ 0x7465_6462_7974_6573,
        ];
        for m in [m0, m1, m2] {
            v[3] ^= m;
            sip_round(&mut v);
            sip_round(&mut v);
            v[0] ^= m;
        }
        v[2] ^= 0xff;
        for _ in 0..4 {
            sip_round(&mut v);
        }
        v[0] ^ v[1] ^ v[2] ^ v[3]
    }

    /// Write the tag into a finished packet (its header is already in place).
    pub fn seal(self, packet: &mut [u8], number: u64) {
        if packet.len() < TAG_OFFSET + TAG_LEN {
            return;
        }
        let id = u32::from_le_bytes([packet[1], packet[2], packet[3], packet[4]]);
        let tag = self.tag(packet[0], id, number, packet.len());
        packet[TAG_OFFSET..TAG_OFFSET + TAG_LEN].copy_from_slice(&tag.to_le_bytes());
    }

    /// True if the packet's tag is right for this number. Constant time in
    /// the tag's bytes: an attacker learns nothing from how long it takes.
    pub fn verify(self, packet: &[u8], number: u64) -> bool {
        let Some(got) = packet.get(TAG_OFFSET..TAG_OFFSET + TAG_LEN) else {
            return false;
        };
        let id = u32::from_le_bytes([packet[1], packet[2], packet[3], packet[4]]);
        let want = self.tag(packet[0], id, number, packet.len()).to_le_bytes();
        ct_eq(got, &want)
    }
}

#[inline(always)]
fn sip_round(v: &mut [u64; 4]) {
    v[0] = v[0].wrapping_add(v[1]);
    v[1] = v[1].rotate_left(13) ^ v[0];
    v[0] = v[0].rotate_left(32);
    v[2] = v[2].wrapping_add(v[3]);
    v[3] = v[3].rotate_left(16) ^ v[2];
    v[0] = v[0].wrapping_add(v[3]);
    v[3] = v[3].rotate_left(21) ^ v[0];
    v[2] = v[2].wrapping_add(v[1]);
    v[1] = v[1].rotate_left(17) ^ v[2];
    v[2] = v[2].rotate_left(32);
}

/// Both directions' keys of one session.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SessionKeys {
    pub key: SessionKey,
    /// Tags what this side sends.
    pub tx: TagKey,
    /// Checks what this side receives.
    pub rx: TagKey,
}

impl SessionKeys {
    /// Keys of the side that sends in `tx_dir`, under the server's nonce
    /// (a client learns it from WELCOME; until then it sends no DATA).
    pub fn new(key: SessionKey, tx_dir: Direction, nonce: &Nonce) -> SessionKeys {
        let up = TagKey::derive_client(&key, nonce);
        let down = TagKey::derive(&key, Direction::ServerToClient);
        match tx_dir {
            Direction::ClientToServer => SessionKeys {
                key,
                tx: up,
                rx: down,
            },
            Direction::ServerToClient => SessionKeys {
                key,
                tx: down,
                rx: up,
            },
        }
    }

    /// Whether `other` is this session's key, in constant time.
    pub fn same_key(&self, other: &SessionKey) -> bool {
        ct_eq(&self.key, other)
    }
}

/// The number a WELCOME's tag covers: its nonce, read little-endian (so the
/// tag vouches for the nonce too).
pub fn welcome_number(nonce: &Nonce) -> u64 {
    u64::from_le_bytes(*nonce)
}

/// An unpredictable 8-byte value for connection `id` (its nonce, or a path
/// challenge): HMAC-SHA256 under the server's secret over a label, the ID,
/// the session key and a counter the server never repeats, truncated. Only
/// the server reads it back, so it is not part of the wire format.
pub fn server_nonce(
    secret: &ServerSecret,
    label: &[u8],
    id: u32,
    key: &SessionKey,
    counter: u64,
) -> Nonce {
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(secret).expect("HMAC takes any key length");
    mac.update(label);
    mac.update(&id.to_le_bytes());
    mac.update(key);
    mac.update(&counter.to_le_bytes());
    let out = mac.finalize().into_bytes();
    let mut n = [0u8; NONCE_LEN];
    n.copy_from_slice(&out[..NONCE_LEN]);
    n
}

/// Equal-length byte strings compared without an early exit.
pub fn ct_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let diff = a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y));
    core::hint::black_box(diff) == 0
}

/// Split a client's entropy into its connection ID (never 0) and session key.
pub fn split_entropy(entropy: &[u8; CLIENT_ENTROPY_LEN]) -> (u32, SessionKey) {
    let id = u32::from_le_bytes([entropy[0], entropy[1], entropy[2], entropy[3]]);
    let mut key = [0u8; KEY_LEN];
    key.copy_from_slice(&entropy[4..]);
    // 0 is reserved; any fixed substitute keeps the ID uniform enough.
    (if id == 0 { 1 } else { id }, key)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn siphash_matches_the_reference_vector() {
        // SipHash paper, appendix A: key 00..0f, message 00..0e.
        let key: [u8; 16] = core::array::from_fn(|i| i as u8);
        let msg: [u8; 15] = core::array::from_fn(|i| i as u8);
        assert_eq!(
            SipHasher24::new_with_key(&key).hash(&msg),
            0xa129_ca61_49be_45e5
        );
    }

    #[test]
    fn tag_is_siphash() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for _ in 0..2000 {
            let key = TagKey(next(), next());
            let (ty, id, number, len) = (next() as u8, next() as u32, next(), next() as u32);
            let mut msg = [0u8; 17];
            msg[0] = ty;
            msg[1..5].copy_from_slice(&id.to_le_bytes());
            msg[5..13].copy_from_slice(&number.to_le_bytes());
            msg[13..17].copy_from_slice(&len.to_le_bytes());
            assert_eq!(
                key.tag(ty, id, number, len as usize),
                SipHasher24::new_with_keys(key.0, key.1).hash(&msg)
            );
        }
    }

    #[test]
    fn tags_differ_by_direction_number_and_length() {
        let keys = SessionKeys::new([7; 16], Direction::ClientToServer, &[1; NONCE_LEN]);
        let t = keys.tx.tag(4, 9, 1, 100);
        assert_ne!(t, keys.rx.tag(4, 9, 1, 100));
        assert_ne!(t, keys.tx.tag(4, 9, 1 + (1 << 16), 100));
        assert_ne!(t, keys.tx.tag(4, 9, 1, 101));
        let mut p = vec![4, 9, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x02];
        keys.tx.seal(&mut p, 1);
        assert!(keys.tx.verify(&p, 1));
        assert!(!keys.tx.verify(&p, 2));
        p[15] = 0x03;
        assert!(keys.tx.verify(&p, 1), "the body is not covered");
        p.push(0);
        assert!(!keys.tx.verify(&p, 1), "the length is");
    }

    #[test]
    fn the_client_key_depends_on_the_servers_nonce() {
        let a = SessionKeys::new([7; 16], Direction::ClientToServer, &[1; NONCE_LEN]);
        let b = SessionKeys::new([7; 16], Direction::ClientToServer, &[2; NONCE_LEN]);
        assert_ne!(a.tx, b.tx);
        assert_eq!(a.rx, b.rx, "server → client keys need no nonce");
    }
}
