//! Self-checking payloads for tests, fuzzing, soaks and benchmarks: size and
//! bytes derive from a sequence number, so a receiver detects corruption,
//! loss or reordering from the bytes alone.

/// A payload of `len` bytes (at least 8) for sequence number `n`.
pub fn payload(n: u32, len: usize) -> Vec<u8> {
    let len = len.max(8);
    let mut v = Vec::with_capacity(len);
    v.extend_from_slice(&n.to_le_bytes());
    v.extend_from_slice(&(len as u32).to_le_bytes());
    let mut x = n.wrapping_mul(2654435761) | 1;
    while v.len() < len {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        v.push(x as u8);
    }
    v
}

/// The sequence number of an intact payload, or None if any byte is off.
pub fn verify(data: &[u8]) -> Option<u32> {
    let n = u32::from_le_bytes(data.get(0..4)?.try_into().ok()?);
    let len = u32::from_le_bytes(data.get(4..8)?.try_into().ok()?) as usize;
    (len == data.len() && data == payload(n, len).as_slice()).then_some(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn any_flipped_byte_is_detected() {
        let p = payload(42, 300);
        assert_eq!(verify(&p), Some(42));
        for i in 0..p.len() {
            let mut q = p.clone();
            q[i] ^= 0x10;
            assert_eq!(verify(&q), None, "byte {i}");
        }
        assert_eq!(verify(&p[..299]), None);
    }
}
