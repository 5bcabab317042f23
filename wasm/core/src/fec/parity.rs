//! XOR parity over DATA packet bodies, as WIRE.md's REPAIR frame defines it.
//!
//! Each protected packet contributes its *image*: `u16 len ‖ u32 check(body)
//! ‖ body`, zero-padded to the parity's length. XOR of all images is the
//! parity. With every image but one, XOR gives back the missing image; its
//! check value and zero padding are checked before use, so a corrupted repair or a
//! corrupted stored packet is refused instead of delivering wrong bytes.

use crate::prelude::*;

/// Bytes an image adds before the body: length (2) and check value (4).
pub const IMAGE_HEADER: usize = 6;

/// FNV-1a, 32 bits. It must not be linear over XOR (a CRC is): with a
/// linear check, a corrupted *stored member* shifts the rebuilt body and the
/// rebuilt check by matching amounts and passes. Each FNV step is a bijection
/// of the state, so any single changed byte always changes the result.
pub fn check(data: &[u8]) -> u32 {
    let mut h = 0x811c_9dc5u32;
    for &b in data {
        h = (h ^ b as u32).wrapping_mul(0x0100_0193);
    }
    h
}

/// XOR one packet body's image into `parity`, growing it (with zeros) as
/// needed. Bodies longer than 65535 bytes cannot occur (datagrams are
/// smaller); they are cut to keep the length field honest.
pub fn xor_image(parity: &mut Vec<u8>, body: &[u8]) {
    let body = &body[..body.len().min(u16::MAX as usize)];
    let need = IMAGE_HEADER + body.len();
    if parity.len() < need {
        parity.resize(need, 0);
    }
    let mut head = [0u8; IMAGE_HEADER];
    head[..2].copy_from_slice(&(body.len() as u16).to_le_bytes());
    head[2..].copy_from_slice(&check(body).to_le_bytes());
    for (p, h) in parity.iter_mut().zip(head.iter()) {
        *p ^= h;
    }
    for (p, b) in parity[IMAGE_HEADER..].iter_mut().zip(body.iter()) {
        *p ^= b;
    }
}

/// Undo `xor_image` for one body (XOR is its own inverse), without growing:
/// a body longer than the parity cannot have been one of its members.
pub fn remove_image(parity: &mut [u8], body: &[u8]) -> bool {
    if IMAGE_HEADER + body.len() > parity.len() {
        return false;
    }
    let mut head = [0u8; IMAGE_HEADER];
    head[..2].copy_from_slice(&(body.len() as u16).to_le_bytes());
    head[2..].copy_from_slice(&check(body).to_le_bytes());
    for (p, h) in parity.iter_mut().zip(head.iter()) {
        *p ^= h;
    }
    for (p, b) in parity[IMAGE_HEADER..].iter_mut().zip(body.iter()) {
        *p ^= b;
    }
    true
}

/// A parity with every other member's image removed: the missing body, if
/// its length, padding and check value all verify.
pub fn recovered_body(image: &[u8]) -> Option<&[u8]> {
    let len = u16::from_le_bytes([*image.first()?, *image.get(1)?]) as usize;
    let expected = u32::from_le_bytes(image.get(2..6)?.try_into().ok()?);
    let body = image.get(IMAGE_HEADER..IMAGE_HEADER + len)?;
    if image[IMAGE_HEADER + len..].iter().any(|&b| b != 0) || check(body) != expected {
        return None;
    }
    Some(body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_is_fnv1a() {
        assert_eq!(check(b""), 0x811c_9dc5);
        assert_eq!(check(b"a"), 0xe40c_292c);
    }

    #[test]
    fn any_one_member_is_recovered_from_the_others() {
        let bodies: [&[u8]; 3] = [b"first packet", b"", b"a somewhat longer third packet body"];
        let mut parity = Vec::new();
        for b in bodies {
            xor_image(&mut parity, b);
        }
        for missing in 0..bodies.len() {
            let mut p = parity.clone();
            for (i, b) in bodies.iter().enumerate() {
                if i != missing {
                    assert!(remove_image(&mut p, b));
                }
            }
            assert_eq!(recovered_body(&p), Some(bodies[missing]));
        }
    }

    #[test]
    fn a_flipped_bit_anywhere_is_refused() {
        let mut parity = Vec::new();
        xor_image(&mut parity, b"one");
        xor_image(&mut parity, b"two!");
        for bit in 0..parity.len() * 8 {
            let mut p = parity.clone();
            p[bit / 8] ^= 1 << (bit % 8);
            remove_image(&mut p, b"one");
            assert_eq!(recovered_body(&p), None, "bit {bit}");
        }
    }
}
