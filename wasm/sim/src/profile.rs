//! Named network profiles and a two-way path built from them.
//!
//! Tests, benchmarks and the browser demo must all mean the same thing by
//! "wifi" or "S1 bursty", so the conditions are defined once, here, by name.

use crate::link::{Link, LinkConfig, LinkStats};
use crate::loss::LossModel;
use crate::rng::Rng;

/// Conditions of a client-server path, one [`LinkConfig`] per direction
/// (real paths are often asymmetric, e.g. mobile uplinks).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NetworkProfile {
    /// Stable identifier, as accepted by [`NetworkProfile::by_name`].
    pub name: &'static str,
    /// Client -> server direction.
    pub client_to_server: LinkConfig,
    /// Server -> client direction.
    pub server_to_client: LinkConfig,
}

const NAMES: &[&str] = &[
    "perfect",
    "lan",
    "wifi",
    "mobile_lossy",
    "s1_clean",
    "s1_1pct",
    "s1_5pct",
    "s1_bursty",
];

impl NetworkProfile {
    /// The same config both ways.
    fn symmetric(name: &'static str, cfg: LinkConfig) -> NetworkProfile {
        NetworkProfile {
            name,
            client_to_server: cfg,
            server_to_client: cfg,
        }
    }

    /// No delay, loss or limits: isolates protocol logic from the network.
    pub fn perfect() -> NetworkProfile {
        NetworkProfile::symmetric("perfect", LinkConfig::default())
    }

    /// Wired LAN: 0.5 ms one way, 0.1 ms jitter, no loss.
    pub fn lan() -> NetworkProfile {
        NetworkProfile::symmetric(
            "lan",
            LinkConfig {
                latency_us: 500,
                jitter_us: 100,
                ..LinkConfig::default()
            },
        )
    }

    /// Home Wi-Fi: 5 ms one way, 2 ms jitter, 1 % bursty loss (correlation
    /// 0.3), 0.2 % of datagrams held back 4 ms (reordered).
    pub fn wifi() -> NetworkProfile {
        NetworkProfile::symmetric(
            "wifi",
            LinkConfig {
                latency_us: 5_000,
                jitter_us: 2_000,
                loss: LossModel::bursty(0.01, 0.3),
                reorder: 0.002,
                reorder_extra_us: 4_000,
                ..LinkConfig::default()
            },
        )
    }

    /// Poor mobile link: 40 ms one way, 10 ms jitter, 5 % bursty loss
    /// (correlation 0.4), 0.5 % duplicates, 1 % held back 20 ms, 1 MB/s
    /// bottleneck with a 64 kB (64 ms) queue.
    pub fn mobile_lossy() -> NetworkProfile {
        NetworkProfile::symmetric(
            "mobile_lossy",
            LinkConfig {
                latency_us: 40_000,
                jitter_us: 10_000,
                loss: LossModel::bursty(0.05, 0.4),
                duplicate: 0.005,
                reorder: 0.01,
                reorder_extra_us: 20_000,
                rate_bytes_per_sec: 1_000_000,
                queue_bytes: 64_000,
                mtu: 0,
            },
        )
    }

    /// Scenario S1: 10 ms each way, 2 ms jitter, `loss` in both directions.
    /// Named "s1"; [`NetworkProfile::by_name`] gives the variants their own
    /// names.
    pub fn s1(loss: LossModel) -> NetworkProfile {
        NetworkProfile::symmetric(
            "s1",
            LinkConfig {
                latency_us: 10_000,
                jitter_us: 2_000,
                loss,
                ..LinkConfig::default()
            },
        )
    }

    /// Look a preset up by name (see [`NetworkProfile::names`]).
    /// `s1_1pct`/`s1_5pct` use independent loss; `s1_bursty` is
    /// `LossModel::bursty(0.10, 0.25)`.
    pub fn by_name(name: &str) -> Option<NetworkProfile> {
        let (name, profile) = match name {
            "perfect" => ("perfect", NetworkProfile::perfect()),
            "lan" => ("lan", NetworkProfile::lan()),
            "wifi" => ("wifi", NetworkProfile::wifi()),
            "mobile_lossy" => ("mobile_lossy", NetworkProfile::mobile_lossy()),
            "s1_clean" => ("s1_clean", NetworkProfile::s1(LossModel::None)),
            "s1_1pct" => ("s1_1pct", NetworkProfile::s1(LossModel::iid(0.01))),
            "s1_5pct" => ("s1_5pct", NetworkProfile::s1(LossModel::iid(0.05))),
            "s1_bursty" => (
                "s1_bursty",
                NetworkProfile::s1(LossModel::bursty(0.10, 0.25)),
            ),
            _ => return None,
        };
        Some(NetworkProfile { name, ..profile })
    }

    /// Every name [`NetworkProfile::by_name`] accepts.
    pub fn names() -> &'static [&'static str] {
        NAMES
    }
}

/// Both directions of a client-server path.
#[derive(Clone, Debug)]
pub struct Duplex {
    /// Carries what the client sends.
    pub client_to_server: Link,
    /// Carries what the server sends.
    pub server_to_client: Link,
}

impl Duplex {
    /// Links for `profile`. The two directions get different seeds derived
    /// from `seed`, so their losses are independent yet reproducible.
    pub fn new(profile: NetworkProfile, seed: u64) -> Duplex {
        // Salt the seed so a Duplex and a bare Link built from the same
        // number do not share streams.
        let mut seeds = Rng::new(seed ^ 0xD0_91E7_5EED_u64);
        let c2s = seeds.next_u64();
        let s2c = seeds.next_u64();
        Duplex {
            client_to_server: Link::new(profile.client_to_server, c2s),
            server_to_client: Link::new(profile.server_to_client, s2c),
        }
    }

    /// Switch both directions to `profile` live (queued datagrams stay).
    pub fn set_profile(&mut self, profile: NetworkProfile) {
        self.client_to_server.set_config(profile.client_to_server);
        self.server_to_client.set_config(profile.server_to_client);
    }

    /// Earliest pending delivery in either direction.
    pub fn poll_timeout(&self) -> Option<u64> {
        match (
            self.client_to_server.poll_timeout(),
            self.server_to_client.poll_timeout(),
        ) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// (client -> server, server -> client) counters.
    pub fn stats(&self) -> (LinkStats, LinkStats) {
        (self.client_to_server.stats(), self.server_to_client.stats())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_resolves_validates_and_keeps_its_name() {
        let names = NetworkProfile::names();
        assert_eq!(names.len(), 8);
        for &n in names {
            let p = NetworkProfile::by_name(n).unwrap_or_else(|| panic!("{n}"));
            assert_eq!(p.name, n);
            assert_eq!(p.client_to_server.validate(), Ok(()), "{n}");
            assert_eq!(p.server_to_client.validate(), Ok(()), "{n}");
        }
        let mut sorted = names.to_vec();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), names.len(), "duplicate names");
        assert_eq!(NetworkProfile::by_name("nope"), None);
    }

    #[test]
    fn s1_variants_have_the_benchmark_loss() {
        let loss = |n| NetworkProfile::by_name(n).unwrap().client_to_server.loss;
        assert_eq!(loss("s1_clean"), LossModel::None);
        assert_eq!(loss("s1_1pct"), LossModel::iid(0.01));
        assert_eq!(loss("s1_5pct"), LossModel::iid(0.05));
        assert_eq!(loss("s1_bursty"), LossModel::bursty(0.10, 0.25));
        let s1 = NetworkProfile::by_name("s1_bursty").unwrap();
        assert_eq!(s1.server_to_client, s1.client_to_server);
        assert_eq!(
            (
                s1.client_to_server.latency_us,
                s1.client_to_server.jitter_us
            ),
            (10_000, 2_000)
        );
    }

    #[test]
    fn presets_have_the_documented_mean_loss() {
        let mean = |p: NetworkProfile| p.client_to_server.loss.mean_loss();
        assert_eq!(mean(NetworkProfile::perfect()), 0.0);
        assert_eq!(mean(NetworkProfile::lan()), 0.0);
        assert!((mean(NetworkProfile::wifi()) - 0.01).abs() < 1e-12);
        assert!((mean(NetworkProfile::mobile_lossy()) - 0.05).abs() < 1e-12);
    }

    #[test]
    fn duplex_directions_draw_independent_losses() {
        let mut d = Duplex::new(NetworkProfile::by_name("s1_bursty").unwrap(), 77);
        let n = 100_000u32;
        let mut both = 0;
        let mut c2s_lost = 0;
        let mut s2c_lost = 0;
        for i in 0..n {
            let now = u64::from(i) * 1_000;
            let before = d.stats();
            d.client_to_server.send(now, &i.to_be_bytes());
            d.server_to_client.send(now, &i.to_be_bytes());
            let after = d.stats();
            let a = after.0.lost > before.0.lost;
            let b = after.1.lost > before.1.lost;
            c2s_lost += u32::from(a);
            s2c_lost += u32::from(b);
            both += u32::from(a && b);
        }
        // Each ~10 %; if the directions shared a stream `both` would be ~10 %,
        // independent it is ~1 % (1000, sd ~32).
        for lost in [c2s_lost, s2c_lost] {
            assert!((9_000..11_000).contains(&lost), "{lost}");
        }
        assert!((800..1_200).contains(&both), "both {both}");
    }

    #[test]
    fn same_seed_same_duplex() {
        let run = |seed| {
            let mut d = Duplex::new(NetworkProfile::mobile_lossy(), seed);
            let mut got = Vec::new();
            for i in 0..5_000u32 {
                let now = u64::from(i) * 2_000;
                d.client_to_server.send(now, &[7; 300]);
                d.server_to_client.send(now, &i.to_be_bytes());
                while let Some(p) = d.server_to_client.poll_deliver(now) {
                    got.push((now, p));
                }
            }
            while let Some(t) = d.poll_timeout() {
                while let Some(p) = d.server_to_client.poll_deliver(t) {
                    got.push((t, p));
                }
                while d.client_to_server.poll_deliver(t).is_some() {}
            }
            (got, d.stats())
        };
        assert_eq!(run(1), run(1));
        assert_ne!(run(1).0, run(2).0);
    }

    #[test]
    fn set_profile_changes_both_directions() {
        let mut d = Duplex::new(NetworkProfile::perfect(), 1);
        d.client_to_server.send(0, b"a");
        d.set_profile(NetworkProfile::lan());
        assert_eq!(d.server_to_client.config().latency_us, 500);
        assert_eq!(d.client_to_server.config().latency_us, 500);
        assert_eq!(d.poll_timeout(), Some(0));
        assert_eq!(
            d.client_to_server.poll_deliver(0).as_deref(),
            Some(&b"a"[..])
        );
    }
}
