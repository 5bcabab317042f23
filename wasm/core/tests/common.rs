//! Shared helpers for scenario tests: self-checking payloads and profiles.
#![allow(dead_code)]

use ricochet_core::sim::{LinkConfig, LossModel, NetworkProfile};

/// A payload whose size and bytes derive from `n`, so the receiver can tell
/// corruption, loss or reordering from the bytes alone.
pub fn payload(n: u32, len: usize) -> Vec<u8> {
    let mut v = Vec::with_capacity(len.max(8));
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

/// Checks a payload made by `payload` and returns its number.
pub fn check(data: &[u8]) -> u32 {
    assert!(data.len() >= 8, "payload too short: {}", data.len());
    let n = u32::from_le_bytes(data[0..4].try_into().unwrap());
    let len = u32::from_le_bytes(data[4..8].try_into().unwrap()) as usize;
    assert_eq!(data, &payload(n, len)[..], "payload {n} corrupted");
    n
}

pub fn link(latency_us: u64, loss: LossModel) -> LinkConfig {
    LinkConfig { latency_us, loss, ..LinkConfig::default() }
}

/// Symmetric profile with loss, reordering and duplication.
pub fn hostile(loss: f64, reorder: f64, duplicate: f64) -> NetworkProfile {
    let l = LinkConfig {
        latency_us: 10_000,
        jitter_us: 2_000,
        loss: LossModel::iid(loss),
        reorder,
        reorder_extra_us: 5_000,
        duplicate,
        ..LinkConfig::default()
    };
    NetworkProfile { name: "hostile", client_to_server: l, server_to_client: l }
}
