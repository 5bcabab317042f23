//! Shared helpers for scenario tests: self-checking payloads and profiles.
#![allow(dead_code)]

use ricochet_sim::{LinkConfig, LossModel, NetworkProfile};

pub use ricochet_sim::payload::payload;

/// Checks a payload made by `payload` and returns its number.
pub fn check(data: &[u8]) -> u32 {
    ricochet_sim::payload::verify(data)
        .unwrap_or_else(|| panic!("payload corrupted ({} bytes)", data.len()))
}

pub fn link(latency_us: u64, loss: LossModel) -> LinkConfig {
    LinkConfig {
        latency_us,
        loss,
        ..LinkConfig::default()
    }
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
    NetworkProfile {
        name: "hostile",
        client_to_server: l,
        server_to_client: l,
    }
}
