//! Relay attestations (WIRE.md, "Relay attestation").
//!
//! A relay that verified a client's connect token rewrites the HELLO's
//! handshake payload into `"RCA1" ‖ bytes claims ‖ bytes client_payload ‖
//! mac`, the mac an HMAC-SHA256 under a key both sides derive from the token
//! secret. The mac also covers the connection ID and session key, so an
//! attestation seen on the wire cannot admit another connection or key.
//! Pure functions: the relay, the server and the test vectors share them.

use crate::prelude::*;
use hmac::{Hmac, Mac};
use sha2::Sha256;

use crate::auth::SessionKey;
use crate::wire::{varint_len, Reader};

/// First bytes of an attested handshake payload.
pub const MAGIC: [u8; 4] = *b"RCA1";
/// Largest claims JSON an attestation may carry, bytes.
pub const MAX_CLAIMS_LEN: usize = 1024;
/// Bytes of the HMAC-SHA256 at the end of an attestation.
pub const MAC_LEN: usize = 32;
/// Label the attestation key is derived with (HMAC message, ASCII).
pub const KEY_LABEL: &[u8] = b"ricochet relay attestation v1";
/// Reason a server gives for a HELLO without a valid attestation.
pub const NOT_ADMITTED: &str = "not admitted by a relay";

/// The 32-byte HMAC-SHA256 key relays attest with.
pub type AttestKey = [u8; 32];

type HmacSha256 = Hmac<Sha256>;

fn hmac(key: &[u8]) -> HmacSha256 {
    // HMAC takes keys of any length: this cannot fail.
    <HmacSha256 as Mac>::new_from_slice(key).expect("HMAC accepts any key length")
}

/// `attest_key = HMAC-SHA256(token_secret, "ricochet relay attestation v1")`:
/// the relay's token secret never has to reach game servers itself.
pub fn attest_key(token_secret: &[u8]) -> AttestKey {
    let mut m = hmac(token_secret);
    m.update(KEY_LABEL);
    m.finalize().into_bytes().into()
}

/// The mac over `"RCA1" ‖ u32 connection_id ‖ session_key ‖ body`, where
/// `body` is `bytes(claims) ‖ bytes(client_payload)` exactly as on the wire.
fn mac(key: &AttestKey, conn_id: u32, session_key: &SessionKey, body: &[u8]) -> HmacSha256 {
    let mut m = hmac(key);
    m.update(&MAGIC);
    m.update(&conn_id.to_le_bytes());
    m.update(session_key);
    m.update(body);
    m
}

fn put_bytes(out: &mut Vec<u8>, b: &[u8]) {
    let mut v = b.len() as u64;
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
    out.extend_from_slice(b);
}

/// The handshake payload a relay puts in the HELLO of connection `conn_id`
/// with session key `session_key`. None if `claims` exceeds
/// [`MAX_CLAIMS_LEN`] (servers would refuse it).
pub fn relay_attest(
    key: &AttestKey,
    conn_id: u32,
    session_key: &SessionKey,
    claims: &[u8],
    client_payload: &[u8],
) -> Option<Vec<u8>> {
    if claims.len() > MAX_CLAIMS_LEN {
        return None;
    }
    let len = MAGIC.len()
        + varint_len(claims.len() as u64)
        + claims.len()
        + varint_len(client_payload.len() as u64)
        + client_payload.len()
        + MAC_LEN;
    let mut out = Vec::with_capacity(len);
    out.extend_from_slice(&MAGIC);
    put_bytes(&mut out, claims);
    put_bytes(&mut out, client_payload);
    let tag = mac(key, conn_id, session_key, &out[MAGIC.len()..])
        .finalize()
        .into_bytes();
    out.extend_from_slice(&tag);
    Some(out)
}

/// What a valid attestation vouches for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Attested<'a> {
    /// The relay-verified claims: UTF-8 JSON, at most [`MAX_CLAIMS_LEN`] bytes.
    pub claims: &'a [u8],
    /// The client's own handshake payload.
    pub payload: &'a [u8],
}

/// Checks a HELLO's handshake payload against `key`, this connection ID and
/// session key. None unless it is a well-formed attestation (claims UTF-8
/// and within the limit, nothing after the mac) whose mac verifies; the mac
/// is compared in constant time.
pub fn verify_attestation<'a>(
    key: &AttestKey,
    conn_id: u32,
    session_key: &SessionKey,
    payload: &'a [u8],
) -> Option<Attested<'a>> {
    let rest = payload.strip_prefix(&MAGIC)?;
    let body_len = rest.len().checked_sub(MAC_LEN)?;
    let (body, tag) = rest.split_at(body_len);
    let mut r = Reader::new(body);
    let claims = r.len_prefixed().ok()?;
    let client = r.len_prefixed().ok()?;
    if !r.is_empty() || claims.len() > MAX_CLAIMS_LEN || core::str::from_utf8(claims).is_err() {
        return None;
    }
    mac(key, conn_id, session_key, body)
        .verify_slice(tag)
        .ok()?;
    Some(Attested {
        claims,
        payload: client,
    })
}

/// The client's own payload inside a well-formed attestation, unverified,
/// for a server without a relay key: it trusts no claims, but an
/// application behind a relay still gets the payload its client sent.
/// None if `payload` is no attestation.
pub fn unwrap_unverified(payload: &[u8]) -> Option<&[u8]> {
    let rest = payload.strip_prefix(&MAGIC)?;
    let body_len = rest.len().checked_sub(MAC_LEN)?;
    let mut r = Reader::new(&rest[..body_len]);
    let claims = r.len_prefixed().ok()?;
    let client = r.len_prefixed().ok()?;
    (r.is_empty() && claims.len() <= MAX_CLAIMS_LEN).then_some(client)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hmac_sha256_matches_rfc_4231_case_2() {
        let mut m = hmac(b"Jefe");
        m.update(b"what do ya want for nothing?");
        let want = "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843";
        let got: String = m
            .finalize()
            .into_bytes()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(got, want);
    }

    #[test]
    fn an_attestation_round_trips_and_binds_its_inputs() {
        let key = attest_key(b"secret");
        let a = relay_attest(&key, 7, &[1; 16], br#"{"sub":"a"}"#, b"hi").unwrap();
        let ok = verify_attestation(&key, 7, &[1; 16], &a).unwrap();
        assert_eq!(
            (ok.claims, ok.payload),
            (br#"{"sub":"a"}"#.as_slice(), b"hi".as_slice())
        );
        assert!(verify_attestation(&key, 8, &[1; 16], &a).is_none());
        assert!(verify_attestation(&key, 7, &[2; 16], &a).is_none());
        assert!(verify_attestation(&attest_key(b"other"), 7, &[1; 16], &a).is_none());
        let mut longer = a.clone();
        longer.push(0);
        assert!(verify_attestation(&key, 7, &[1; 16], &longer).is_none());
        assert!(relay_attest(&key, 7, &[1; 16], &[b'x'; MAX_CLAIMS_LEN + 1], b"").is_none());
    }
}
