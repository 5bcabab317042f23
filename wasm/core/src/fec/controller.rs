//! The adaptation rule: how many packets one repair may protect, from the
//! loss rate and burstiness the peer measured on our packets.
//!
//! One XOR repair over a group of `k` packets restores any single loss in
//! the group. A lost packet stays lost if another member or the repair is
//! lost too. With mean loss `p` and burstiness `c` = P(lost | previous
//! lost), the neighbour of a loss is lost with probability `c` and the rest
//! with `p`, so the residual loss is about
//!
//! ```text
//! residual(k) = p · (1 − (1 − c) · (1 − p)^(k − 1))
//! ```
//!
//! The controller picks the largest `k` (fewest repair bytes) that meets
//! the configured residual target; the byte budget and the per-channel
//! latency targets then decide when each repair actually leaves (see
//! `encoder.rs`).

use super::FecConfig;
#[cfg(not(feature = "std"))]
use crate::prelude::F64Ext;

/// Expected fraction of packets left unrecovered with groups of `k`.
pub fn residual_loss(p: f64, c: f64, k: u32) -> f64 {
    let p = p.clamp(0.0, 1.0);
    let c = c.clamp(0.0, 1.0);
    p * (1.0 - (1.0 - c) * (1.0 - p).powi(k.saturating_sub(1) as i32))
}

/// Packets per repair for this loss, or None when no repair is needed
/// (FEC off, or loss below `min_loss`).
pub fn group_size(cfg: &FecConfig, loss: f64, burst: f64) -> Option<u8> {
    if !cfg.enabled || loss.is_nan() || loss < cfg.min_loss {
        return None;
    }
    let k = (1..=cfg.max_group)
        .rev()
        .find(|&k| residual_loss(loss, burst, k as u32) <= cfg.target_residual_loss);
    Some(k.unwrap_or(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clean_link_needs_no_repair() {
        assert_eq!(group_size(&FecConfig::balanced(), 0.0, 0.0), None);
        assert_eq!(group_size(&FecConfig::off(), 0.2, 0.5), None);
    }

    #[test]
    fn more_loss_or_burstiness_means_smaller_groups() {
        let cfg = FecConfig::balanced();
        let at = |p, c| group_size(&cfg, p, c).unwrap();
        assert!(at(0.01, 0.01) > at(0.05, 0.05));
        assert!(at(0.05, 0.05) >= at(0.05, 0.3));
        assert_eq!(at(0.10, 0.25), 1);
    }
}
