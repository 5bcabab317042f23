//! Parity over DATA packet bodies, as WIRE.md's REPAIR frame defines it.
//!
//! Each protected packet contributes its *image*: `u16 len ‖ u32 check(body)
//! ‖ body`, zero-padded to the parity's length. A repair of power `e` sums
//! member `i`'s image times ω^(e·i) in GF(4) (each byte four elements, see
//! [`times`]; addition is XOR, so power 0 is the plain XOR of the images).
//! With every image but one, one repair gives back the missing image; with
//! every image but two, two repairs of different powers do (when the two
//! members' indices differ mod 3). Its check value and zero padding are
//! checked before use, so a corrupted repair or a corrupted stored packet is
//! refused instead of delivering wrong bytes.

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

/// Powers of ω a repair may use (WIRE.md: the top two bits of its count byte).
pub const POWERS: u8 = 3;

/// `x` times ω^`power` in GF(4) = {0, 1, ω, ω²} (ω² = ω + 1), for each of
/// the byte's four elements (bit pairs: the low bit counts 1, the high bit
/// ω): ω·(a + bω) = b + (a + b)ω. Zero stays zero, so padding does.
pub fn times(x: u8, power: u8) -> u8 {
    let mut x = x;
    for _ in 0..power % POWERS {
        let high = x & 0xaa;
        x = (high >> 1) | ((x & 0x55) << 1 ^ high);
    }
    x
}

/// The power of ω member `index` of a group enters a repair of `power` with.
pub fn member_power(power: u8, index: u64) -> u8 {
    (power as u64 * index % POWERS as u64) as u8
}

fn image_head(body: &[u8]) -> [u8; IMAGE_HEADER] {
    let mut head = [0u8; IMAGE_HEADER];
    head[..2].copy_from_slice(&(body.len() as u16).to_le_bytes());
    head[2..].copy_from_slice(&check(body).to_le_bytes());
    head
}

fn add_scaled(parity: &mut [u8], head: &[u8], body: &[u8], power: u8) {
    let (p_head, p_body) = parity.split_at_mut(IMAGE_HEADER);
    add_scaled_image(p_head, head, power);
    add_scaled_image(p_body, body, power);
}

/// Add one packet body's image into `parity`, growing it (with zeros) as
/// needed. Bodies longer than 65535 bytes cannot occur (datagrams are
/// smaller); they are cut to keep the length field honest.
pub fn xor_image(parity: &mut Vec<u8>, body: &[u8]) {
    add_images(&mut [(parity, 0)], body);
}

/// Add one body's image times ω^power into each `(parity, power)`: the
/// check value is computed once for all of them.
pub fn add_images(parities: &mut [(&mut Vec<u8>, u8)], body: &[u8]) {
    let body = &body[..body.len().min(u16::MAX as usize)];
    let head = image_head(body);
    for (parity, power) in parities.iter_mut() {
        if parity.len() < IMAGE_HEADER + body.len() {
            parity.resize(IMAGE_HEADER + body.len(), 0);
        }
        add_scaled(parity, &head, body, *power);
    }
}

/// Remove one body's image times ω^power from `parity` (adding is its own
/// inverse), without growing: a body longer than the parity cannot have
/// been one of its members.
pub fn remove_scaled(parity: &mut [u8], body: &[u8], power: u8) -> bool {
    if IMAGE_HEADER + body.len() > parity.len() {
        return false;
    }
    add_scaled(parity, &image_head(body), body, power);
    true
}

/// Multiply every byte of `image` by ω^power.
#[inline(never)]
pub fn scale(image: &mut [u8], power: u8) {
    if !power.is_multiple_of(POWERS) {
        image.iter_mut().for_each(|b| *b = times(*b, power));
    }
}

/// `into += from × ω^power`, over the shorter length (both images of one
/// group have the same length).
pub fn add_scaled_image(into: &mut [u8], from: &[u8], power: u8) {
    if power.is_multiple_of(POWERS) {
        into.iter_mut().zip(from).for_each(|(p, b)| *p ^= b);
    } else {
        into.iter_mut()
            .zip(from)
            .for_each(|(p, &b)| *p ^= times(b, power));
    }
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
                    assert!(remove_scaled(&mut p, b, 0));
                }
            }
            assert_eq!(recovered_body(&p), Some(bodies[missing]));
        }
    }

    #[test]
    fn times_is_multiplication_in_gf4() {
        // Elements 0, 1, ω, ω² are the bit pairs 0b00, 0b01, 0b10, 0b11.
        let mul = |a: u8, b: u8| -> u8 {
            let log = |x: u8| [0u8, 0, 1, 2][x as usize];
            if a == 0 || b == 0 {
                0
            } else {
                [1u8, 2, 3][((log(a) + log(b)) % 3) as usize]
            }
        };
        for x in 0..=255u8 {
            assert_eq!(times(x, 0), x);
            assert_eq!(times(times(times(x, 1), 1), 1), x, "ω³ = 1");
            assert_eq!(times(x, 2), times(times(x, 1), 1));
            for pair in 0..4 {
                let e = x >> (2 * pair) & 3;
                for power in 0..3 {
                    let w = [1u8, 2, 3][power as usize];
                    assert_eq!(times(x, power) >> (2 * pair) & 3, mul(e, w));
                }
            }
        }
    }

    #[test]
    fn two_missing_members_come_back_from_two_powers() {
        let bodies: [&[u8]; 3] = [b"first half", b"second half!", b"x"];
        let (mut p1, mut p2) = (Vec::new(), Vec::new());
        for (i, b) in bodies.iter().enumerate() {
            add_images(&mut [(&mut p1, i as u8), (&mut p2, (2 * i % 3) as u8)], b);
        }
        // Members 0 and 1 lost: remove member 2 from both, then solve.
        assert!(remove_scaled(&mut p1, bodies[2], 2));
        assert!(remove_scaled(&mut p2, bodies[2], 1));
        // p1 = A + ωB, p2 = A + ω²B: p1 + p2 = (ω + ω²)B = B.
        let mut b = p1.clone();
        add_scaled_image(&mut b, &p2, 0);
        assert_eq!(recovered_body(&b), Some(bodies[1]));
        assert!(remove_scaled(&mut p1, bodies[1], 1));
        assert_eq!(recovered_body(&p1), Some(bodies[0]));
    }

    #[test]
    fn a_flipped_bit_anywhere_is_refused() {
        let mut parity = Vec::new();
        xor_image(&mut parity, b"one");
        xor_image(&mut parity, b"two!");
        for bit in 0..parity.len() * 8 {
            let mut p = parity.clone();
            p[bit / 8] ^= 1 << (bit % 8);
            remove_scaled(&mut p, b"one", 0);
            assert_eq!(recovered_body(&p), None, "bit {bit}");
        }
    }
}
