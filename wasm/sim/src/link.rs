//! One direction of a simulated network path.
//!
//! A datagram handed to [`Link::send`] goes through, in order:
//!
//! 1. MTU check — oversize datagrams are dropped (IP would not fragment a
//!    game's UDP traffic usefully, so modelling that as loss is honest);
//! 2. the rate limit — a FIFO bottleneck that serializes `size / rate` after
//!    the previous datagram finished, tail-dropping when its byte backlog
//!    would exceed `queue_bytes`;
//! 3. the loss model — loss happens on the wire, after the bottleneck, so a
//!    lost datagram still used bottleneck capacity;
//! 4. duplication — a second copy takes its own trip through step 5;
//! 5. delay — `latency + uniform[0, jitter]`, never earlier than the previous
//!    datagram's delivery (jitter alone keeps order, as on real game paths),
//!    plus, with probability `reorder`, `reorder_extra_us` that lets later
//!    datagrams overtake this one.
//!
//! Each random concern (loss, jitter, duplication, reordering) has its own
//! RNG stream derived from the seed, so e.g. turning on jitter does not change
//! which datagrams are lost: A/B comparisons see the same loss pattern.
//!
//! Nothing here panics on odd input: times saturate, bad probabilities clamp.

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

use crate::loss::{LossModel, LossState};
use crate::rng::Rng;

const MICROS_PER_SEC: u128 = 1_000_000;

/// Configuration of one link direction. `Default` is a perfect link:
/// no delay, no loss, unlimited rate, no MTU.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LinkConfig {
    /// Fixed one-way propagation delay, microseconds. Default 0.
    pub latency_us: u64,
    /// Maximum extra random delay, microseconds; each datagram gets a uniform
    /// draw in `[0, jitter_us]`. Does not reorder on its own. Default 0.
    pub jitter_us: u64,
    /// Which datagrams are lost on the wire. Default [`LossModel::None`].
    pub loss: LossModel,
    /// Probability (per delivered-to-wire datagram, [0, 1]) that a second
    /// copy is also delivered. Default 0.
    pub duplicate: f64,
    /// Probability (per datagram copy, [0, 1]) that it is held back by
    /// `reorder_extra_us`, letting later datagrams pass it. Default 0.
    pub reorder: f64,
    /// Extra delay of a reordered datagram, microseconds. Default 0 (so
    /// `reorder` has no effect until this is set).
    pub reorder_extra_us: u64,
    /// Bottleneck rate, bytes per second; 0 = unlimited. Default 0.
    pub rate_bytes_per_sec: u64,
    /// Bottleneck queue capacity, bytes; a datagram that would push the
    /// backlog above it is tail-dropped. A datagram arriving at an empty
    /// queue is always accepted. 0 = unbounded. Only used when rate-limited.
    /// Default 0.
    pub queue_bytes: usize,
    /// Largest datagram carried, bytes; larger ones are dropped. 0 = no
    /// limit. Default 0.
    pub mtu: usize,
}

impl Default for LinkConfig {
    fn default() -> Self {
        LinkConfig {
            latency_us: 0,
            jitter_us: 0,
            loss: LossModel::None,
            duplicate: 0.0,
            reorder: 0.0,
            reorder_extra_us: 0,
            rate_bytes_per_sec: 0,
            queue_bytes: 0,
            mtu: 0,
        }
    }
}

fn check_prob(name: &str, x: f64) -> Result<(), String> {
    if x.is_finite() && (0.0..=1.0).contains(&x) {
        Ok(())
    } else {
        Err(format!("{name} must be a probability in [0, 1]"))
    }
}

impl LinkConfig {
    /// Ok if all probabilities are finite and in [0, 1]. A [`Link`] never
    /// panics on an invalid config (it clamps), but hosts taking configs from
    /// users should reject them here.
    pub fn validate(&self) -> Result<(), String> {
        self.loss.validate().map_err(|e| format!("loss: {e}"))?;
        check_prob("duplicate", self.duplicate)?;
        check_prob("reorder", self.reorder)
    }
}

/// Counters of one link direction. `sent + duplicated = delivered + lost +
/// queue_dropped + oversize_dropped + in_flight` always holds.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct LinkStats {
    /// Datagrams passed to `send`.
    pub sent: u64,
    /// Datagrams returned by `poll_deliver` (duplicates included).
    pub delivered: u64,
    /// Datagrams dropped by the loss model.
    pub lost: u64,
    /// Datagrams tail-dropped by the full bottleneck queue.
    pub queue_dropped: u64,
    /// Datagrams dropped for exceeding the MTU.
    pub oversize_dropped: u64,
    /// Extra copies created by duplication.
    pub duplicated: u64,
    /// Copies held back by the reorder setting.
    pub reordered: u64,
    /// Bytes passed to `send`.
    pub bytes_sent: u64,
    /// Bytes returned by `poll_deliver`.
    pub bytes_delivered: u64,
    /// Copies scheduled but not yet delivered.
    pub in_flight: u64,
}

/// A scheduled delivery, ordered by (time, send sequence) only.
#[derive(Clone, Debug)]
struct Pending {
    deliver_at: u64,
    seq: u64,
    data: Vec<u8>,
}

impl PartialEq for Pending {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Pending {}

impl PartialOrd for Pending {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Pending {
    fn cmp(&self, other: &Self) -> Ordering {
        (self.deliver_at, self.seq).cmp(&(other.deliver_at, other.seq))
    }
}

/// One direction of a simulated path on virtual time (microseconds).
#[derive(Clone, Debug)]
pub struct Link {
    config: LinkConfig,
    loss_rng: Rng,
    jitter_rng: Rng,
    dup_rng: Rng,
    reorder_rng: Rng,
    loss_state: LossState,
    pending: BinaryHeap<Reverse<Pending>>,
    next_seq: u64,
    /// Latest delivery time given to an in-order copy; later copies are
    /// never scheduled before it, so jitter cannot reorder.
    in_order_floor: u64,
    /// When the bottleneck finishes serializing everything accepted so far.
    bottleneck_free_at: u64,
    stats: LinkStats,
}

impl Link {
    /// A link with `config`; all randomness derives from `seed`.
    pub fn new(config: LinkConfig, seed: u64) -> Link {
        let mut seeds = Rng::new(seed);
        Link {
            config,
            loss_rng: Rng::new(seeds.next_u64()),
            jitter_rng: Rng::new(seeds.next_u64()),
            dup_rng: Rng::new(seeds.next_u64()),
            reorder_rng: Rng::new(seeds.next_u64()),
            loss_state: LossState::new(),
            pending: BinaryHeap::new(),
            next_seq: 0,
            in_order_floor: 0,
            bottleneck_free_at: 0,
            stats: LinkStats::default(),
        }
    }

    /// The current configuration.
    pub fn config(&self) -> &LinkConfig {
        &self.config
    }

    /// Change the configuration live (e.g. a scripted outage). Datagrams
    /// already in flight keep their delivery times; the loss chain keeps its
    /// state and the bottleneck keeps its backlog.
    pub fn set_config(&mut self, config: LinkConfig) {
        self.config = config;
    }

    /// Offer a datagram to the link at `now_us`.
    pub fn send(&mut self, now_us: u64, datagram: &[u8]) {
        let size = datagram.len();
        self.stats.sent += 1;
        self.stats.bytes_sent = self.stats.bytes_sent.saturating_add(size as u64);
        if self.config.mtu != 0 && size > self.config.mtu {
            self.stats.oversize_dropped += 1;
            return;
        }
        let Some(departure) = self.bottleneck(now_us, size) else {
            self.stats.queue_dropped += 1;
            return;
        };
        if self.loss_state.lose(&self.config.loss, &mut self.loss_rng) {
            self.stats.lost += 1;
            return;
        }
        let duplicate = self.dup_rng.chance(self.config.duplicate);
        if duplicate {
            self.stats.duplicated += 1;
            self.schedule(departure, datagram.to_vec());
        }
        self.schedule(departure, datagram.to_vec());
    }

    /// Earliest pending delivery time, if anything is in flight.
    pub fn poll_timeout(&self) -> Option<u64> {
        self.pending.peek().map(|p| p.0.deliver_at)
    }

    /// The next datagram due at or before `now_us`, in delivery-time order
    /// (ties in send order). Call repeatedly until `None`.
    pub fn poll_deliver(&mut self, now_us: u64) -> Option<Vec<u8>> {
        if self.pending.peek()?.0.deliver_at > now_us {
            return None;
        }
        let Reverse(p) = self.pending.pop()?;
        self.stats.delivered += 1;
        self.stats.bytes_delivered = self
            .stats
            .bytes_delivered
            .saturating_add(p.data.len() as u64);
        Some(p.data)
    }

    /// Counters so far.
    pub fn stats(&self) -> LinkStats {
        LinkStats {
            in_flight: self.pending.len() as u64,
            ..self.stats
        }
    }

    /// Pass `size` bytes through the FIFO bottleneck: the time it leaves, or
    /// `None` if the queue is full.
    fn bottleneck(&mut self, now_us: u64, size: usize) -> Option<u64> {
        let rate = u128::from(self.config.rate_bytes_per_sec);
        if rate == 0 {
            return Some(now_us);
        }
        let backlog_us = self.bottleneck_free_at.saturating_sub(now_us);
        if self.config.queue_bytes != 0 && backlog_us > 0 {
            // Fluid model: bytes not yet serialized. Floor, so rounding the
            // serialization time up never counts a phantom extra byte.
            let backlog_bytes = u128::from(backlog_us) * rate / MICROS_PER_SEC;
            if backlog_bytes + size as u128 > self.config.queue_bytes as u128 {
                return None;
            }
        }
        let serialize_us = (size as u128 * MICROS_PER_SEC).div_ceil(rate);
        let start = now_us.max(self.bottleneck_free_at);
        let finish = u64::try_from(u128::from(start) + serialize_us).unwrap_or(u64::MAX);
        self.bottleneck_free_at = finish;
        Some(finish)
    }

    /// Give one copy its delivery time and queue it.
    fn schedule(&mut self, departure: u64, data: Vec<u8>) {
        let jitter_us = self.config.jitter_us;
        let jitter = if jitter_us == 0 {
            0
        } else {
            self.jitter_rng.below(jitter_us.saturating_add(1))
        };
        let mut deliver_at = departure
            .saturating_add(self.config.latency_us)
            .saturating_add(jitter)
            .max(self.in_order_floor);
        self.in_order_floor = deliver_at;
        if self.reorder_rng.chance(self.config.reorder) && self.config.reorder_extra_us > 0 {
            deliver_at = deliver_at.saturating_add(self.config.reorder_extra_us);
            self.stats.reordered += 1;
        }
        self.pending.push(Reverse(Pending {
            deliver_at,
            seq: self.next_seq,
            data,
        }));
        self.next_seq += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Deliver everything in flight; returns (delivery time, payload).
    fn drain(link: &mut Link) -> Vec<(u64, Vec<u8>)> {
        let mut out = Vec::new();
        while let Some(t) = link.poll_timeout() {
            while let Some(d) = link.poll_deliver(t) {
                out.push((t, d));
            }
        }
        out
    }

    fn payload(i: u32) -> [u8; 4] {
        i.to_be_bytes()
    }

    fn index(d: &[u8]) -> u32 {
        u32::from_be_bytes([d[0], d[1], d[2], d[3]])
    }

    fn conserved(s: &LinkStats) -> bool {
        s.sent + s.duplicated
            == s.delivered + s.lost + s.queue_dropped + s.oversize_dropped + s.in_flight
    }

    #[test]
    fn perfect_link_delivers_immediately_in_order() {
        let mut link = Link::new(LinkConfig::default(), 1);
        for i in 0..10 {
            link.send(100, &payload(i));
        }
        assert_eq!(link.poll_timeout(), Some(100));
        assert_eq!(link.poll_deliver(99), None);
        let got: Vec<u32> = (0..10)
            .map(|_| index(&link.poll_deliver(100).unwrap()))
            .collect();
        assert_eq!(got, (0..10).collect::<Vec<_>>());
        assert_eq!(link.poll_deliver(100), None);
        assert_eq!(link.poll_timeout(), None);
    }

    #[test]
    fn latency_delays_delivery_exactly() {
        let cfg = LinkConfig {
            latency_us: 10_000,
            ..LinkConfig::default()
        };
        let mut link = Link::new(cfg, 1);
        link.send(5, b"x");
        assert_eq!(link.poll_deliver(10_004), None);
        assert_eq!(link.poll_timeout(), Some(10_005));
        assert_eq!(link.poll_deliver(10_005).as_deref(), Some(&b"x"[..]));
    }

    #[test]
    fn jitter_never_reorders_without_reorder_setting() {
        let cfg = LinkConfig {
            latency_us: 10_000,
            jitter_us: 2_000,
            ..LinkConfig::default()
        };
        let mut link = Link::new(cfg, 7);
        let n = 100_000u32;
        for i in 0..n {
            link.send(u64::from(i) * 1_000, &payload(i));
        }
        let got = drain(&mut link);
        assert_eq!(got.len(), n as usize);
        let mut extra_sum = 0u64;
        for (k, (t, d)) in got.iter().enumerate() {
            assert_eq!(index(d), k as u32, "out of order");
            let sent = k as u64 * 1_000;
            let extra = t - sent - 10_000;
            extra_sum += extra;
        }
        // Jitter is really applied: the mean extra delay is a bit above
        // jitter/2 = 1000 (clamping to stay in order only adds delay).
        let mean = extra_sum as f64 / f64::from(n);
        assert!((1_000.0..1_300.0).contains(&mean), "mean extra {mean}");
        assert_eq!(link.stats().reordered, 0);
    }

    #[test]
    fn jitter_stays_within_bound_when_sparse() {
        // Sends spaced wider than the jitter: no clamping, so every delay is
        // in [latency, latency + jitter] and both ends get hit.
        let cfg = LinkConfig {
            latency_us: 1_000,
            jitter_us: 50,
            ..LinkConfig::default()
        };
        let mut link = Link::new(cfg, 8);
        for i in 0..100_000u32 {
            link.send(u64::from(i) * 100, &payload(i));
        }
        let got = drain(&mut link);
        let extras: Vec<u64> = got
            .iter()
            .map(|(t, d)| t - u64::from(index(d)) * 100 - 1_000)
            .collect();
        assert!(extras.iter().all(|&e| e <= 50));
        assert!(extras.contains(&0) && extras.contains(&50));
    }

    #[test]
    fn reorder_setting_reorders_and_counts() {
        let cfg = LinkConfig {
            latency_us: 5_000,
            reorder: 0.1,
            reorder_extra_us: 3_000,
            ..LinkConfig::default()
        };
        let mut link = Link::new(cfg, 9);
        let n = 100_000u32;
        for i in 0..n {
            link.send(u64::from(i) * 1_000, &payload(i));
        }
        let got = drain(&mut link);
        assert_eq!(got.len(), n as usize);
        let r = link.stats().reordered;
        // Expect 10_000; sd ~95.
        assert!((9_500..10_500).contains(&r), "reordered {r}");
        let inversions = got
            .windows(2)
            .filter(|w| index(&w[1].1) < index(&w[0].1))
            .count();
        assert!(inversions > 8_000, "inversions {inversions}");
        for (t, d) in &got {
            let sent = u64::from(index(d)) * 1_000;
            assert!(*t == sent + 5_000 || *t == sent + 8_000);
        }
    }

    #[test]
    fn rate_limit_spaces_deliveries_by_serialization_time() {
        // 1000-byte datagrams at 100 kB/s: 10 ms each.
        let cfg = LinkConfig {
            latency_us: 2_000,
            rate_bytes_per_sec: 100_000,
            ..LinkConfig::default()
        };
        let mut link = Link::new(cfg, 1);
        for _ in 0..5 {
            link.send(0, &[0u8; 1000]);
        }
        let times: Vec<u64> = drain(&mut link).into_iter().map(|(t, _)| t).collect();
        assert_eq!(times, vec![12_000, 22_000, 32_000, 42_000, 52_000]);
        // An idle bottleneck does not bank credit.
        link.send(1_000_000, &[0u8; 500]);
        assert_eq!(link.poll_timeout(), Some(1_000_000 + 5_000 + 2_000));
    }

    #[test]
    fn full_queue_tail_drops() {
        let cfg = LinkConfig {
            rate_bytes_per_sec: 1_000,
            queue_bytes: 3_000,
            ..LinkConfig::default()
        };
        let mut link = Link::new(cfg, 1);
        for i in 0..10 {
            link.send(0, &[i; 1000]);
        }
        let s = link.stats();
        assert_eq!((s.queue_dropped, s.in_flight), (7, 3));
        // The first three (not the last three) survive: tail drop.
        let got = drain(&mut link);
        let firsts: Vec<u8> = got.iter().map(|(_, d)| d[0]).collect();
        assert_eq!(firsts, vec![0, 1, 2]);
        // After 1.5 s the backlog is 1500 bytes: one more 1000 B fits.
        link.send(1_500_000, &[9; 1000]);
        link.send(1_500_000, &[9; 1000]);
        assert_eq!(link.stats().queue_dropped, 8);
        assert!(conserved(&link.stats()));
    }

    #[test]
    fn queue_smaller_than_datagram_still_passes_one_at_a_time() {
        let cfg = LinkConfig {
            rate_bytes_per_sec: 1_000,
            queue_bytes: 100,
            ..LinkConfig::default()
        };
        let mut link = Link::new(cfg, 1);
        link.send(0, &[0; 1000]);
        link.send(0, &[0; 1000]);
        assert_eq!(link.stats().queue_dropped, 1);
        link.send(1_000_000, &[0; 1000]);
        assert_eq!(link.stats().queue_dropped, 1);
    }

    #[test]
    fn same_seed_same_deliveries() {
        let cfg = LinkConfig {
            latency_us: 40_000,
            jitter_us: 10_000,
            loss: LossModel::bursty(0.05, 0.4),
            duplicate: 0.01,
            reorder: 0.02,
            reorder_extra_us: 15_000,
            rate_bytes_per_sec: 1_000_000,
            queue_bytes: 32_000,
            mtu: 1_200,
        };
        let run = |seed: u64| {
            let mut link = Link::new(cfg, seed);
            let mut out = Vec::new();
            for i in 0..20_000u32 {
                let now = u64::from(i) * 500;
                let size = 4 + (i as usize * 37) % 1_300;
                let mut d = vec![0u8; size];
                d[..4].copy_from_slice(&payload(i));
                link.send(now, &d);
                while let Some(d) = link.poll_deliver(now) {
                    out.push((now, d));
                }
            }
            out.extend(drain(&mut link));
            (out, link.stats())
        };
        let (a, sa) = run(42);
        let (b, sb) = run(42);
        assert_eq!(a, b);
        assert_eq!(sa, sb);
        assert!(conserved(&sa));
        assert!(sa.lost > 0 && sa.duplicated > 0 && sa.reordered > 0);
        assert!(sa.queue_dropped > 0 && sa.oversize_dropped > 0);
        let (c, _) = run(43);
        assert_ne!(a, c);
    }

    #[test]
    fn loss_pattern_independent_of_jitter() {
        let base = LinkConfig {
            loss: LossModel::iid(0.2),
            ..LinkConfig::default()
        };
        let jittery = LinkConfig {
            jitter_us: 5_000,
            ..base
        };
        let survivors = |cfg: LinkConfig| {
            let mut link = Link::new(cfg, 5);
            for i in 0..10_000u32 {
                link.send(u64::from(i) * 10_000, &payload(i));
            }
            let mut v: Vec<u32> = drain(&mut link).iter().map(|(_, d)| index(d)).collect();
            v.sort_unstable();
            v
        };
        assert_eq!(survivors(base), survivors(jittery));
    }

    #[test]
    fn link_loss_rate_matches_model() {
        let cfg = LinkConfig {
            loss: LossModel::iid(0.05),
            ..LinkConfig::default()
        };
        let mut link = Link::new(cfg, 3);
        for i in 0..200_000u32 {
            link.send(u64::from(i), &payload(i));
        }
        let s = link.stats();
        // Expect 10_000; sd ~97.
        assert!((9_500..10_500).contains(&s.lost), "lost {}", s.lost);
        assert!(conserved(&s));
    }

    #[test]
    fn duplicate_setting_duplicates() {
        let cfg = LinkConfig {
            duplicate: 0.2,
            ..LinkConfig::default()
        };
        let mut link = Link::new(cfg, 4);
        let n = 100_000u32;
        for i in 0..n {
            link.send(u64::from(i) * 10, &payload(i));
        }
        let got = drain(&mut link);
        let s = link.stats();
        // Expect 20_000; sd ~126.
        assert!((19_000..21_000).contains(&s.duplicated), "{}", s.duplicated);
        assert_eq!(s.delivered, u64::from(n) + s.duplicated);
        assert_eq!(got.len() as u64, s.delivered);
        assert_eq!(s.bytes_delivered, 4 * s.delivered);
        // Copies arrive together, in order: each index appears once or twice
        // consecutively.
        let idx: Vec<u32> = got.iter().map(|(_, d)| index(d)).collect();
        assert!(idx.windows(2).all(|w| w[1] == w[0] || w[1] == w[0] + 1));
    }

    #[test]
    fn oversize_datagram_dropped() {
        let cfg = LinkConfig {
            mtu: 1_200,
            ..LinkConfig::default()
        };
        let mut link = Link::new(cfg, 1);
        link.send(0, &[0; 1_200]);
        link.send(0, &[0; 1_201]);
        let s = link.stats();
        assert_eq!((s.oversize_dropped, s.in_flight), (1, 1));
        assert_eq!(drain(&mut link)[0].1.len(), 1_200);
        assert_eq!(s.bytes_sent, 2_401);
    }

    #[test]
    fn set_config_keeps_queued_packets() {
        let cfg = LinkConfig {
            latency_us: 50_000,
            ..LinkConfig::default()
        };
        let mut link = Link::new(cfg, 1);
        link.send(0, b"old");
        link.set_config(LinkConfig {
            loss: LossModel::iid(1.0),
            ..LinkConfig::default()
        });
        link.send(10, b"new");
        assert_eq!(link.stats().lost, 1);
        assert_eq!(link.config().loss, LossModel::iid(1.0));
        assert_eq!(drain(&mut link), vec![(50_000, b"old".to_vec())]);
    }

    #[test]
    fn time_going_backwards_and_huge_values_do_not_panic() {
        let cfg = LinkConfig {
            latency_us: u64::MAX,
            jitter_us: u64::MAX,
            loss: LossModel::Iid { p: f64::NAN },
            duplicate: 7.0,
            reorder: f64::INFINITY,
            reorder_extra_us: u64::MAX,
            rate_bytes_per_sec: 1,
            queue_bytes: usize::MAX,
            mtu: 0,
        };
        assert!(cfg.validate().is_err());
        let mut link = Link::new(cfg, 1);
        link.send(u64::MAX, &[0; 100]);
        link.send(0, &[0; 100]);
        link.send(u64::MAX - 1, &[]);
        assert_eq!(link.poll_timeout(), Some(u64::MAX));
        assert_eq!(drain(&mut link).len(), 6);
        let mut link = Link::new(
            LinkConfig {
                latency_us: 1_000,
                jitter_us: 500,
                ..LinkConfig::default()
            },
            2,
        );
        link.send(1_000_000, b"a");
        link.send(10, b"b");
        let got = drain(&mut link);
        // Order is preserved even when the clock runs backwards.
        assert_eq!(got[0].1, b"a");
        assert!(got[1].0 >= got[0].0);
        assert!(conserved(&link.stats()));
    }

    #[test]
    fn default_config_validates() {
        assert_eq!(LinkConfig::default().validate(), Ok(()));
        let bad = LinkConfig {
            reorder: -0.1,
            ..LinkConfig::default()
        };
        assert!(bad.validate().is_err());
    }
}
