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

/// A channel with a latency target counts a message whose repair was lost
/// too as late, and p99 allows 1 % of them late.
pub const LATE_ALLOWED: f64 = 0.01;

/// Packets the peer's loss meter remembers (`loss_meter`: windows of 64
/// keeping 3/4 of their weight).
const METER_MEMORY: f64 = 256.0;
/// Weight, in losses, given to independence before the measured burstiness.
const PRIOR_LOSSES: f64 = 10.0;

/// Share of the groups closed by a latency deadline whose repair should go
/// twice: none while one copy leaves at most half of [`LATE_ALLOWED`] of
/// packets lost past it (independent loss up to ~10 %), all once it leaves
/// the whole allowance or more (`s1_bursty`: 2.5 %), a share rising
/// linearly between. All-or-nothing at the ends on purpose: the reported
/// burstiness runs low when other traffic shares the bottleneck (its chain
/// steps between our packets, but not between two copies sent back to back),
/// so a share computed from it to hit the target exactly falls short.
pub fn second_copy_share(p: f64, c: f64, k: u32) -> f64 {
    let once = residual_loss(p, settled_burst(p, c), k);
    if once.is_nan() {
        return 0.0;
    }
    ((once - LATE_ALLOWED / 2.0) / (LATE_ALLOWED / 2.0)).clamp(0.0, 1.0)
}

/// The burstiness comes from the few losses the peer's meter remembers
/// (~256 packets: 13 losses at 5 %), so one extra pair of neighbours reads
/// as c = 0.15 on an independent link. Shrink it towards independence
/// (c = p) as if PRIOR_LOSSES more losses had been seen.
fn settled_burst(p: f64, c: f64) -> f64 {
    let losses = p.clamp(0.0, 1.0) * METER_MEMORY;
    (c.clamp(0.0, 1.0) * losses + p * PRIOR_LOSSES) / (losses + PRIOR_LOSSES)
}

/// Share of messages sent in halves (two packets and their XOR, back to
/// back) that cannot be rebuilt: two of the three lost. With mean loss `p`
/// and burstiness `c`, a packet after a delivered one is lost with
/// `q = p(1 − c)/(1 − p)`, so P(LL·) + P(LNL) + P(NLL) = pc + p(1−c)q + (1−p)qc.
pub fn halves_late_share(p: f64, c: f64) -> f64 {
    let p = p.clamp(0.0, 0.99);
    let c = settled_burst(p, c);
    let q = p * (1.0 - c) / (1.0 - p);
    p * c + p * (1.0 - c) * q + (1.0 - p) * q * c
}

/// Whether a latency-targeted message should go in halves at this loss
/// (the encoder passes reports averaged over several, see `encoder.rs`):
/// only while at most [`LATE_ALLOWED`] of such messages would be late
/// (independent loss up to ~5 %; never in bursts, where the loss that hits
/// one half mostly hits the next packet too — whole messages and their
/// copies fare better there).
pub fn halves_pay(p: f64, c: f64) -> bool {
    halves_late_share(p, c) <= LATE_ALLOWED
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

    #[test]
    fn independent_loss_needs_one_copy_of_a_deadline_repair_and_bursts_need_two() {
        assert_eq!(second_copy_share(0.01, 0.01, 1), 0.0);
        assert_eq!(second_copy_share(0.05, 0.05, 1), 0.0);
        assert_eq!(second_copy_share(0.10, 0.25, 1), 1.0);
        // The same bursts reported weaker (other flows share the link): still two.
        assert_eq!(second_copy_share(0.10, 0.12, 1), 1.0);
    }

    #[test]
    fn messages_go_in_halves_on_independent_loss_but_not_in_bursts() {
        assert!(halves_pay(0.01, 0.01));
        assert!(halves_pay(0.05, 0.05));
        assert!((halves_late_share(0.05, 0.05) - 0.00725).abs() < 1e-4);
        assert!(
            !halves_pay(0.10, 0.25),
            "s1_bursty: {}",
            halves_late_share(0.10, 0.25)
        );
        assert!(!halves_pay(0.15, 0.15));
    }

    #[test]
    fn one_extra_pair_of_losses_on_an_independent_link_asks_for_few_second_copies() {
        // 5 % iid: 13 losses in the meter's memory, 2 of them neighbours.
        let share = second_copy_share(0.05, 2.0 / 13.0, 1);
        assert!(share < 0.15, "{share}");
        let some = second_copy_share(0.05, 0.20, 1);
        assert!(some > 0.0 && some < 1.0, "{some}");
    }
}
