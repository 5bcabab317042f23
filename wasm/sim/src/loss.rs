//! Packet-loss models.
//!
//! Real links lose packets in bursts, and burst shape matters more to a game
//! protocol than the average rate (one lost packet is cheap to repair; five in
//! a row stall a channel). So besides independent loss we offer the two-state
//! Gilbert-Elliott chain and netem's four-state chain. A model is plain data
//! (`Copy`, comparable); the evolving chain state lives in [`LossState`] so a
//! link can swap models live without losing its place in a burst.
//!
//! Every function here is total: out-of-range or NaN probabilities are clamped
//! (NaN counts as 0) instead of panicking, because configs come from browsers.
//! Use [`LossModel::validate`] to reject such values up front.

use crate::rng::Rng;

/// Longest correlation [`LossModel::bursty`] accepts. A correlation of exactly
/// 1 would make a burst never end; this caps the mean burst length at 10^6.
const MAX_CORRELATION: f64 = 1.0 - 1e-6;

/// Slack for "probabilities sum to at most 1" checks, so that e.g.
/// `0.7 + 0.3` is not rejected for floating-point rounding.
const SUM_EPSILON: f64 = 1e-9;

/// How a link decides, packet by packet, whether to lose a datagram.
///
/// All probabilities are per packet, unitless, in `[0, 1]`.
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub enum LossModel {
    /// Never lose anything. Default.
    #[default]
    None,
    /// Each packet is lost independently with probability `p`.
    Iid {
        /// Loss probability per packet.
        p: f64,
    },
    /// Two-state Markov chain (Good, Bad). Per packet the chain first
    /// transitions, then the packet is lost with the new state's loss
    /// probability. The chain starts in Good.
    GilbertElliott {
        /// P(Good -> Bad) per packet.
        p_good_to_bad: f64,
        /// P(Bad -> Good) per packet; mean time in Bad is `1 / p_bad_to_good`
        /// packets.
        p_bad_to_good: f64,
        /// Loss probability while in Good (classic Gilbert: 0).
        loss_in_good: f64,
        /// Loss probability while in Bad (classic Gilbert: 1).
        loss_in_bad: f64,
    },
    /// netem's 4-state Markov model (`loss state p13 p31 p32 p23 p14`,
    /// Salsano et al., "GI model"). States:
    ///
    /// 1. gap, received — the good period, packets get through;
    /// 2. burst, received — a packet that gets through inside a loss burst;
    /// 3. burst, lost — a packet lost inside a burst;
    /// 4. gap, isolated loss — a lone loss inside the good period
    ///    (always returns to state 1 on the next packet).
    ///
    /// Per packet the chain transitions (one uniform draw, like netem) and the
    /// packet is lost iff the new state is 3 or 4. Self-loops take the
    /// remaining probability: p11 = 1 - p13 - p14, p22 = 1 - p23,
    /// p33 = 1 - p31 - p32. The chain starts in state 1. If a row sums above
    /// 1 it is scaled down to sum to 1.
    Markov4 {
        /// P(1 -> 3): a burst starts.
        p13: f64,
        /// P(1 -> 4): an isolated loss.
        p14: f64,
        /// P(2 -> 3): a received packet inside a burst is followed by a loss.
        p23: f64,
        /// P(3 -> 1): the burst ends.
        p31: f64,
        /// P(3 -> 2): a loss inside a burst is followed by a received packet.
        p32: f64,
    },
}

/// NaN -> 0, then clamp into [0, 1].
fn prob(x: f64) -> f64 {
    if x.is_nan() {
        0.0
    } else {
        x.clamp(0.0, 1.0)
    }
}

/// Clamp a pair of outgoing transition probabilities so they sum to <= 1.
fn row(a: f64, b: f64) -> (f64, f64) {
    let (a, b) = (prob(a), prob(b));
    let s = a + b;
    if s > 1.0 {
        (a / s, b / s)
    } else {
        (a, b)
    }
}

fn check_prob(name: &str, x: f64) -> Result<(), String> {
    if x.is_finite() && (0.0..=1.0).contains(&x) {
        Ok(())
    } else {
        Err(format!("{name} must be a probability in [0, 1]"))
    }
}

/// Sanitized Markov4 parameters: (p13, p14, p23, p31, p32).
fn markov4_params(m: &LossModel) -> (f64, f64, f64, f64, f64) {
    match *m {
        LossModel::Markov4 {
            p13,
            p14,
            p23,
            p31,
            p32,
        } => {
            let (p13, p14) = row(p13, p14);
            let (p31, p32) = row(p31, p32);
            (p13, p14, prob(p23), p31, p32)
        }
        _ => (0.0, 0.0, 0.0, 0.0, 0.0),
    }
}

impl LossModel {
    /// Independent loss with probability `p` (clamped into [0, 1]; NaN -> 0).
    pub fn iid(p: f64) -> LossModel {
        let p = prob(p);
        if p == 0.0 {
            LossModel::None
        } else {
            LossModel::Iid { p }
        }
    }

    /// Bursty loss by its two observable numbers, as a classic Gilbert chain
    /// (`loss_in_good = 0`, `loss_in_bad = 1`, so "Bad" = "this packet lost"):
    ///
    /// * `mean_loss` — long-run fraction lost = `p_gb / (p_gb + p_bg)`;
    /// * `correlation` — P(loss | previous packet lost) = `1 - p_bg`.
    ///
    /// Hence `p_bg = 1 - correlation`, `p_gb = mean * p_bg / (1 - mean)`, and
    /// the mean burst length is `1 / p_bg` packets. `bursty(0.10, 0.25)` is the
    /// "Gilbert-Elliott 10 % average, 25 % correlation" benchmark profile.
    ///
    /// Edge cases (never panics, never NaN): NaN inputs count as 0;
    /// `mean_loss <= 0` gives [`LossModel::None`]; `mean_loss >= 1` gives
    /// `Iid { p: 1 }`; correlation is clamped to `[0, 1 - 1e-6]` (1 would be a
    /// burst that never ends). A mean above 1/2 forces
    /// `correlation >= 2 - 1/mean` (otherwise `p_gb` would exceed 1), so a
    /// too-small correlation is raised to that minimum: the mean is kept.
    pub fn bursty(mean_loss: f64, correlation: f64) -> LossModel {
        let mean = if mean_loss.is_nan() { 0.0 } else { mean_loss };
        if mean <= 0.0 {
            return LossModel::None;
        }
        if mean >= 1.0 {
            return LossModel::Iid { p: 1.0 };
        }
        let corr = if correlation.is_nan() {
            0.0
        } else {
            correlation.clamp(0.0, MAX_CORRELATION)
        };
        let corr = corr.max(2.0 - 1.0 / mean);
        let p_bad_to_good = 1.0 - corr;
        let p_good_to_bad = (mean * p_bad_to_good / (1.0 - mean)).min(1.0);
        if !(p_bad_to_good > 0.0 && p_good_to_bad > 0.0) {
            // Rounding ate a parameter (mean within ~1e-16 of 0 or 1):
            // independent loss at the requested rate is the honest fallback.
            return LossModel::Iid { p: mean };
        }
        LossModel::GilbertElliott {
            p_good_to_bad,
            p_bad_to_good,
            loss_in_good: 0.0,
            loss_in_bad: 1.0,
        }
    }

    /// Analytic long-run fraction of packets lost (stationary distribution,
    /// starting from the Good / state-1 start when the chain is reducible).
    /// Always finite, in [0, 1].
    pub fn mean_loss(&self) -> f64 {
        match *self {
            LossModel::None => 0.0,
            LossModel::Iid { p } => prob(p),
            LossModel::GilbertElliott {
                p_good_to_bad,
                p_bad_to_good,
                loss_in_good,
                loss_in_bad,
            } => {
                let (gb, bg) = (prob(p_good_to_bad), prob(p_bad_to_good));
                let pi_bad = if gb + bg > 0.0 { gb / (gb + bg) } else { 0.0 };
                pi_bad * prob(loss_in_bad) + (1.0 - pi_bad) * prob(loss_in_good)
            }
            LossModel::Markov4 { .. } => {
                let (p13, p14, p23, p31, p32) = markov4_params(self);
                let m = if p13 == 0.0 {
                    // Never enters a burst: alternates between 1 and 4.
                    p14 / (1.0 + p14)
                } else if p31 == 0.0 {
                    // Bursts never end: absorbed into {2, 3}.
                    if p32 == 0.0 {
                        1.0
                    } else if p23 == 0.0 {
                        0.0
                    } else {
                        p23 / (p23 + p32)
                    }
                } else if p32 > 0.0 && p23 == 0.0 {
                    // State 2 is reachable and absorbing.
                    0.0
                } else {
                    // Balance equations: pi3 = pi1 p13 / p31,
                    // pi2 = pi3 p32 / p23, pi4 = pi1 p14.
                    let r3 = p13 / p31;
                    let r2 = if p32 == 0.0 { 0.0 } else { r3 * p32 / p23 };
                    let r4 = p14;
                    (r3 + r4) / (1.0 + r2 + r3 + r4)
                };
                prob(m)
            }
        }
    }

    /// Ok if every probability is finite and in [0, 1], and each Markov4
    /// row (p13 + p14, p31 + p32) sums to at most 1.
    pub fn validate(&self) -> Result<(), String> {
        match *self {
            LossModel::None => Ok(()),
            LossModel::Iid { p } => check_prob("loss p", p),
            LossModel::GilbertElliott {
                p_good_to_bad,
                p_bad_to_good,
                loss_in_good,
                loss_in_bad,
            } => {
                check_prob("p_good_to_bad", p_good_to_bad)?;
                check_prob("p_bad_to_good", p_bad_to_good)?;
                check_prob("loss_in_good", loss_in_good)?;
                check_prob("loss_in_bad", loss_in_bad)
            }
            LossModel::Markov4 {
                p13,
                p14,
                p23,
                p31,
                p32,
            } => {
                check_prob("p13", p13)?;
                check_prob("p14", p14)?;
                check_prob("p23", p23)?;
                check_prob("p31", p31)?;
                check_prob("p32", p32)?;
                if p13 + p14 > 1.0 + SUM_EPSILON {
                    return Err("p13 + p14 must be <= 1".into());
                }
                if p31 + p32 > 1.0 + SUM_EPSILON {
                    return Err("p31 + p32 must be <= 1".into());
                }
                Ok(())
            }
        }
    }
}

/// The evolving state of a loss chain. Kept apart from [`LossModel`] so a
/// model can be replaced live while the link keeps its place in a burst.
///
/// `state` meaning depends on the model: Gilbert-Elliott uses 0 = Good,
/// 1 = Bad; Markov4 uses 0..=3 for netem states 1..=4. Values a model does
/// not know are treated as its start state.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LossState {
    state: u8,
}

impl LossState {
    /// Start state (Good / netem state 1).
    pub fn new() -> LossState {
        LossState::default()
    }

    /// Advance the chain by one packet and report whether it is lost.
    /// [`LossModel::None`] draws no randomness.
    pub fn lose(&mut self, model: &LossModel, rng: &mut Rng) -> bool {
        match *model {
            LossModel::None => false,
            LossModel::Iid { p } => rng.chance(prob(p)),
            LossModel::GilbertElliott {
                p_good_to_bad,
                p_bad_to_good,
                loss_in_good,
                loss_in_bad,
            } => {
                let bad = self.state == 1;
                let bad = if bad {
                    !rng.chance(prob(p_bad_to_good))
                } else {
                    rng.chance(prob(p_good_to_bad))
                };
                self.state = u8::from(bad);
                rng.chance(prob(if bad { loss_in_bad } else { loss_in_good }))
            }
            LossModel::Markov4 { .. } => {
                let (p13, p14, p23, p31, p32) = markov4_params(model);
                let r = rng.next_f64();
                // Same draw layout as netem's loss_4state().
                self.state = match self.state {
                    1 => {
                        if r < p23 {
                            2
                        } else {
                            1
                        }
                    }
                    2 => {
                        if r < p31 {
                            0
                        } else if r < p31 + p32 {
                            1
                        } else {
                            2
                        }
                    }
                    3 => 0,
                    _ => {
                        if r < p14 {
                            3
                        } else if r < p14 + p13 {
                            2
                        } else {
                            0
                        }
                    }
                };
                self.state >= 2
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const N: usize = 200_000;

    /// Draw `N` loss decisions.
    fn draws(model: LossModel, seed: u64) -> Vec<bool> {
        let mut rng = Rng::new(seed);
        let mut st = LossState::new();
        (0..N).map(|_| st.lose(&model, &mut rng)).collect()
    }

    fn rate(v: &[bool]) -> f64 {
        v.iter().filter(|&&l| l).count() as f64 / v.len() as f64
    }

    /// P(loss | previous packet lost).
    fn conditional(v: &[bool]) -> f64 {
        let prev_lost = v.windows(2).filter(|w| w[0]).count();
        let both = v.windows(2).filter(|w| w[0] && w[1]).count();
        both as f64 / prev_lost as f64
    }

    /// Lengths of maximal runs of consecutive losses.
    fn bursts(v: &[bool]) -> Vec<usize> {
        let mut out = Vec::new();
        let mut run = 0;
        for &l in v {
            if l {
                run += 1;
            } else if run > 0 {
                out.push(run);
                run = 0;
            }
        }
        if run > 0 {
            out.push(run);
        }
        out
    }

    fn mean_burst(v: &[bool]) -> f64 {
        let b = bursts(v);
        b.iter().sum::<usize>() as f64 / b.len() as f64
    }

    #[test]
    fn none_never_loses() {
        assert!(!draws(LossModel::None, 1).iter().any(|&l| l));
        assert_eq!(LossModel::None.mean_loss(), 0.0);
    }

    #[test]
    fn iid_loss_rate_matches_setting() {
        // 200k draws at p = 0.1: sd of the rate is 0.00067; 0.005 is > 7 sd.
        for (p, seed) in [(0.01, 3), (0.1, 4), (0.5, 5)] {
            let v = draws(LossModel::iid(p), seed);
            assert!((rate(&v) - p).abs() < 0.005, "p={p} got {}", rate(&v));
            // Independent: P(loss | prev lost) is p itself.
            assert!((conditional(&v) - p).abs() < 0.03, "p={p}");
        }
    }

    #[test]
    fn bursty_parameterization_matches_formula() {
        let m = LossModel::bursty(0.10, 0.25);
        let LossModel::GilbertElliott {
            p_good_to_bad,
            p_bad_to_good,
            loss_in_good,
            loss_in_bad,
        } = m
        else {
            panic!("expected Gilbert-Elliott, got {m:?}");
        };
        assert!((p_bad_to_good - 0.75).abs() < 1e-12);
        assert!((p_good_to_bad - 0.1 * 0.75 / 0.9).abs() < 1e-12);
        assert_eq!((loss_in_good, loss_in_bad), (0.0, 1.0));
        assert!((m.mean_loss() - 0.10).abs() < 1e-12);
    }

    #[test]
    fn bursty_profile_has_mean_burst_length_above_one() {
        let v = draws(LossModel::bursty(0.10, 0.25), 11);
        // ~20k losses: sd of the rate ~0.001, of the conditional ~0.003.
        assert!((rate(&v) - 0.10).abs() < 0.008, "rate {}", rate(&v));
        assert!(
            (conditional(&v) - 0.25).abs() < 0.02,
            "corr {}",
            conditional(&v)
        );
        // Mean burst = 1 / p_bg = 4/3; iid at 10 % would give 1.11.
        let mb = mean_burst(&v);
        assert!((mb - 4.0 / 3.0).abs() < 0.04, "mean burst {mb}");
    }

    #[test]
    fn bursty_high_correlation_gives_long_bursts() {
        let v = draws(LossModel::bursty(0.05, 0.8), 12);
        assert!((rate(&v) - 0.05).abs() < 0.01, "rate {}", rate(&v));
        assert!((mean_burst(&v) - 5.0).abs() < 0.4, "{}", mean_burst(&v));
    }

    #[test]
    fn bursty_edge_cases_never_nan_and_keep_mean() {
        let odd = [
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            -1.0,
            0.0,
            1e-300,
            0.3,
            0.6,
            0.99,
            1.0 - 1e-16,
            1.0,
            2.0,
        ];
        for &mean in &odd {
            for &corr in &odd {
                let m = LossModel::bursty(mean, corr);
                let ml = m.mean_loss();
                assert!(ml.is_finite() && (0.0..=1.0).contains(&ml), "{mean} {corr}");
                assert!(m.validate().is_ok(), "{mean} {corr} -> {m:?}");
                if mean.is_finite() && mean > 0.0 && mean < 1.0 {
                    assert!((ml - mean).abs() < 1e-9, "{mean} {corr}: {ml}");
                }
            }
        }
        assert_eq!(LossModel::bursty(0.0, 0.5), LossModel::None);
        assert_eq!(LossModel::bursty(1.0, 0.5), LossModel::Iid { p: 1.0 });
        // Mean above 1/2 with tiny correlation: correlation is raised.
        let v = draws(LossModel::bursty(0.8, 0.0), 13);
        assert!((rate(&v) - 0.8).abs() < 0.01);
    }

    #[test]
    fn gilbert_elliott_partial_loss_matches_analytic_mean() {
        let m = LossModel::GilbertElliott {
            p_good_to_bad: 0.02,
            p_bad_to_good: 0.2,
            loss_in_good: 0.01,
            loss_in_bad: 0.5,
        };
        let expect = (0.02 / 0.22) * 0.5 + (0.2 / 0.22) * 0.01;
        assert!((m.mean_loss() - expect).abs() < 1e-12);
        let v = draws(m, 21);
        assert!(
            (rate(&v) - expect).abs() < 0.008,
            "{} vs {expect}",
            rate(&v)
        );
    }

    #[test]
    fn markov4_loss_rate_matches_analytic_mean() {
        let m = LossModel::Markov4 {
            p13: 0.05,
            p14: 0.02,
            p23: 0.3,
            p31: 0.4,
            p32: 0.3,
        };
        // pi3 = pi1/8, pi2 = pi1/8, pi4 = pi1/50.
        let expect = (0.125 + 0.02) / (1.0 + 0.125 + 0.125 + 0.02);
        assert!((m.mean_loss() - expect).abs() < 1e-12);
        let v = draws(m, 31);
        assert!((rate(&v) - expect).abs() < 0.01, "{} vs {expect}", rate(&v));
    }

    #[test]
    fn markov4_isolated_losses_are_single() {
        let m = LossModel::Markov4 {
            p13: 0.0,
            p14: 0.1,
            p23: 0.0,
            p31: 0.0,
            p32: 0.0,
        };
        let v = draws(m, 41);
        assert!(bursts(&v).iter().all(|&b| b == 1));
        assert!((rate(&v) - 0.1 / 1.1).abs() < 0.005);
        assert!((m.mean_loss() - 0.1 / 1.1).abs() < 1e-12);
    }

    #[test]
    fn markov4_without_isolated_loss_equals_gilbert() {
        // Only states 1 and 3 in use: same chain as classic Gilbert.
        let m4 = LossModel::Markov4 {
            p13: 0.03,
            p14: 0.0,
            p23: 0.0,
            p31: 0.5,
            p32: 0.0,
        };
        let ge = LossModel::GilbertElliott {
            p_good_to_bad: 0.03,
            p_bad_to_good: 0.5,
            loss_in_good: 0.0,
            loss_in_bad: 1.0,
        };
        assert!((m4.mean_loss() - ge.mean_loss()).abs() < 1e-12);
        let v = draws(m4, 51);
        assert!((mean_burst(&v) - 2.0).abs() < 0.1, "{}", mean_burst(&v));
    }

    #[test]
    fn degenerate_chains_have_finite_mean_and_do_not_panic() {
        let cases = [
            LossModel::Markov4 {
                p13: 1.0,
                p14: 0.0,
                p23: 0.0,
                p31: 0.0,
                p32: 0.0,
            },
            LossModel::Markov4 {
                p13: 0.5,
                p14: 0.0,
                p23: 0.0,
                p31: 0.5,
                p32: 0.5,
            },
            LossModel::Markov4 {
                p13: 0.5,
                p14: 0.0,
                p23: 0.2,
                p31: 0.0,
                p32: 0.2,
            },
            LossModel::Markov4 {
                p13: 0.9,
                p14: 0.9,
                p23: 2.0,
                p31: f64::NAN,
                p32: -1.0,
            },
            LossModel::Markov4 {
                p13: 0.0,
                p14: 1.0,
                p23: 0.0,
                p31: 0.0,
                p32: 0.0,
            },
            LossModel::GilbertElliott {
                p_good_to_bad: f64::NAN,
                p_bad_to_good: f64::INFINITY,
                loss_in_good: -3.0,
                loss_in_bad: 7.0,
            },
            LossModel::Iid { p: f64::NAN },
            LossModel::Iid { p: 5.0 },
        ];
        let expected = [1.0, 0.0, 0.5, f64::NAN, 0.5, 0.0, 0.0, 1.0];
        for (m, want) in cases.iter().zip(expected) {
            let ml = m.mean_loss();
            assert!(ml.is_finite() && (0.0..=1.0).contains(&ml), "{m:?}");
            if !want.is_nan() {
                assert!((ml - want).abs() < 1e-12, "{m:?}: {ml} vs {want}");
                let r = {
                    let mut rng = Rng::new(61);
                    let mut st = LossState::new();
                    let n = 100_000;
                    (0..n).filter(|_| st.lose(m, &mut rng)).count() as f64 / n as f64
                };
                assert!((r - want).abs() < 0.01, "{m:?}: simulated {r}");
            }
        }
        assert!(cases[3].validate().is_err());
        assert!(cases[5].validate().is_err());
    }

    #[test]
    fn validate_rejects_bad_probabilities() {
        assert!(LossModel::iid(0.2).validate().is_ok());
        assert!(LossModel::Iid { p: 1.5 }.validate().is_err());
        assert!(LossModel::Iid { p: f64::NAN }.validate().is_err());
        let rows = LossModel::Markov4 {
            p13: 0.6,
            p14: 0.6,
            p23: 0.0,
            p31: 0.0,
            p32: 0.0,
        };
        assert!(rows.validate().is_err());
        let ok = LossModel::Markov4 {
            p13: 0.7,
            p14: 0.3,
            p23: 0.0,
            p31: 0.3,
            p32: 0.7,
        };
        assert!(ok.validate().is_ok());
        assert_eq!(LossModel::iid(0.0), LossModel::None);
        assert_eq!(LossModel::iid(f64::NAN), LossModel::None);
    }

    #[test]
    fn same_seed_same_loss_pattern() {
        let m = LossModel::bursty(0.1, 0.25);
        assert_eq!(draws(m, 9), draws(m, 9));
        assert_ne!(draws(m, 9), draws(m, 10));
    }
}
