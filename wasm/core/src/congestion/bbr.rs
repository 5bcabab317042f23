//! BBR (v1 model, draft-cardwell-iccrg-bbr-congestion-control): the sender
//! measures the bottleneck bandwidth (max of recent delivery rates) and the
//! propagation RTT (min of recent RTTs), paces at gain × bandwidth and keeps
//! cwnd_gain × BDP in flight. Random loss does not cut the rate: the
//! bandwidth estimate is what the path delivered, losses already excluded.
//!
//! Modes: Startup doubles the rate each round until bandwidth stops growing
//! or, earlier, as soon as a round's first RTT samples all show a standing
//! queue (as HyStart++ does; BBR v1 alone would fill the bottleneck queue
//! for several rounds, delaying everything else on the path);
//! Drain empties the queue Startup built; ProbeBw cycles the pacing gain
//! (1.25 to probe for more, 0.75 to drain, then 1) once per min RTT;
//! ProbeRtt drops to a few datagrams in flight for 200 ms every 10 s without
//! a new minimum, so the RTT floor stays true.
//!
//! Loss response, bounded: lost bytes come off cwnd (acks grow it back to
//! its target within the round), and a round that loses more than
//! `HEAVY_LOSS_PERMILLE` of its bytes — a queue overflowing, not random loss
//! — resets the bandwidth estimate to what that round delivered and ends
//! Startup.

use super::max_filter::MaxFilter;
use super::{AckEvent, CongestionController, LossEvent};
use crate::rtt::RttEstimator;

/// Gains are in thousandths.
const UNIT: u64 = 1000;
/// 2/ln 2: the smallest gain that doubles delivery each round in Startup.
const HIGH_GAIN: u64 = 2885;
/// Drains in one round the queue Startup built.
const DRAIN_GAIN: u64 = 347;
const CWND_GAIN: u64 = 2000;
/// Startup's window is 2 × BDP as in BBR v3 (v1's 2.885 × let the queue
/// grow to nearly two BDPs before Startup could see it).
const STARTUP_CWND_GAIN: u64 = 2000;
/// ProbeBw pacing gains, one phase per min RTT.
const PROBE_BW_GAINS: [u64; 8] = [1250, 750, 1000, 1000, 1000, 1000, 1000, 1000];
/// ProbeBw starts in a cruising phase (deterministic: the core draws no randomness here).
const PROBE_BW_FIRST_PHASE: usize = 2;
/// The bandwidth estimate is the max over this many round trips.
const BTLBW_WINDOW_ROUNDS: u64 = 10;
/// The min RTT expires after this long without a new minimum, µs.
const MIN_RTT_WINDOW_US: u64 = 10_000_000;
/// Time spent at the minimum window in ProbeRtt, µs.
const PROBE_RTT_DURATION_US: u64 = 200_000;
/// Fewest datagrams' worth of window (and ProbeRtt's window).
const MIN_CWND_DATAGRAMS: u64 = 4;
const INITIAL_CWND_DATAGRAMS: u64 = 32;
/// Extra window for acks arriving in bunches, datagrams.
const ACK_AGGREGATION_DATAGRAMS: u64 = 3;
/// Startup ends after this many rounds without 25 % bandwidth growth.
const FULL_BW_GROWTH: u64 = 1250;
const FULL_BW_ROUNDS: u8 = 3;
/// Startup also ends once a round's first `STARTUP_QUEUE_SAMPLES` RTTs
/// all exceed the minimum by min_rtt / 4, clamped to these bounds, µs: a
/// queue is standing.
const STARTUP_QUEUE_SAMPLES: u32 = 8;
const STARTUP_QUEUE_MIN_US: u64 = 4_000;
const STARTUP_QUEUE_MAX_US: u64 = 16_000;
/// A round losing more than this share of its bytes (thousandths) is a
/// queue overflow: far above random loss on any playable path.
const HEAVY_LOSS_PERMILLE: u64 = 200;
/// ... and at least this many datagrams, so one unlucky loss in a tiny round
/// does not count.
const HEAVY_LOSS_MIN_DATAGRAMS: u64 = 4;

const MICROS_PER_SEC: u64 = 1_000_000;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Startup,
    Drain,
    ProbeBw,
    ProbeRtt,
}

#[derive(Debug)]
pub struct Bbr {
    max_datagram: u64,
    mode: Mode,
    /// Bottleneck bandwidth, bytes/s, keyed by round count.
    btlbw: MaxFilter,
    /// Propagation RTT estimate, µs (0 = no sample yet), and when it was set.
    min_rtt: u64,
    min_rtt_stamp: u64,
    round_count: u64,
    next_round_delivered: u64,
    round_start: bool,
    full_bw: u64,
    full_bw_rounds: u8,
    filled_pipe: bool,
    pacing_gain: u64,
    cwnd_gain: u64,
    cycle_index: usize,
    cycle_stamp: u64,
    /// Bytes/s; 0 until the first ack sets it.
    pacing_rate: u64,
    cwnd: u64,
    /// cwnd before ProbeRtt, restored after.
    prior_cwnd: u64,
    probe_rtt_done_at: Option<u64>,
    probe_rtt_round_done: bool,
    /// Losses since the last ack (ProbeBw stops probing on loss).
    lost_since_ack: bool,
    round_lost: u64,
    round_acked: u64,
    /// Highest non-app-limited rate sampled this round, bytes/s.
    round_max_rate: u64,
    /// Smallest RTT sampled this round, µs (u64::MAX before one).
    round_min_rtt: u64,
    round_rtt_samples: u32,
}

impl Bbr {
    pub fn new(max_datagram: u64) -> Self {
        Bbr {
            max_datagram,
            mode: Mode::Startup,
            btlbw: MaxFilter::new(BTLBW_WINDOW_ROUNDS),
            min_rtt: 0,
            min_rtt_stamp: 0,
            round_count: 0,
            next_round_delivered: 0,
            round_start: false,
            full_bw: 0,
            full_bw_rounds: 0,
            filled_pipe: false,
            pacing_gain: HIGH_GAIN,
            cwnd_gain: STARTUP_CWND_GAIN,
            cycle_index: PROBE_BW_FIRST_PHASE,
            cycle_stamp: 0,
            pacing_rate: 0,
            cwnd: INITIAL_CWND_DATAGRAMS * max_datagram,
            prior_cwnd: 0,
            probe_rtt_done_at: None,
            probe_rtt_round_done: false,
            lost_since_ack: false,
            round_lost: 0,
            round_acked: 0,
            round_max_rate: 0,
            round_min_rtt: u64::MAX,
            round_rtt_samples: 0,
        }
    }

    #[cfg(test)]
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// Bottleneck bandwidth estimate, bytes/s (0 before a sample).
    #[cfg(test)]
    pub fn bandwidth(&self) -> u64 {
        self.btlbw.get()
    }

    fn min_cwnd(&self) -> u64 {
        MIN_CWND_DATAGRAMS * self.max_datagram
    }

    /// gain × BDP plus room for bunched acks; the initial window until
    /// bandwidth and RTT are known.
    fn target_cwnd(&self, gain: u64) -> u64 {
        let bw = self.btlbw.get();
        if bw == 0 || self.min_rtt == 0 {
            return INITIAL_CWND_DATAGRAMS * self.max_datagram;
        }
        // Saturating u64 (not u128) arithmetic: this runs on every ack.
        let bdp = bw.saturating_mul(self.min_rtt) / MICROS_PER_SEC;
        let target = bdp.saturating_mul(gain) / UNIT;
        target
            .saturating_add(ACK_AGGREGATION_DATAGRAMS * self.max_datagram)
            .max(self.min_cwnd())
    }

    /// Startup's rate before any delivery sample: the initial window per RTT.
    fn initial_rate(&self, rtt: &RttEstimator) -> u64 {
        let srtt = rtt.smoothed().max(1);
        let rate =
            (INITIAL_CWND_DATAGRAMS * self.max_datagram).saturating_mul(MICROS_PER_SEC) / srtt;
        rate.saturating_mul(HIGH_GAIN) / UNIT
    }

    fn on_round_end(&mut self) {
        let total = self.round_lost + self.round_acked;
        let heavy = self.round_lost >= HEAVY_LOSS_MIN_DATAGRAMS * self.max_datagram
            && self.round_lost.saturating_mul(UNIT) > total.saturating_mul(HEAVY_LOSS_PERMILLE);
        if heavy && self.round_max_rate > 0 {
            // The bottleneck is full: believe what it delivered, not the
            // peak it delivered before (BBR v1 would overrun it for ten rounds).
            if self.round_max_rate < self.btlbw.get() {
                self.btlbw.reset(self.round_count, self.round_max_rate);
            }
            self.filled_pipe = true;
        }
        self.round_lost = 0;
        self.round_acked = 0;
        self.round_max_rate = 0;
        self.round_min_rtt = u64::MAX;
        self.round_rtt_samples = 0;
    }

    fn check_full_pipe(&mut self, app_limited: bool) {
        if self.filled_pipe || !self.round_start || app_limited {
            return;
        }
        let bw = self.btlbw.get();
        if bw.saturating_mul(UNIT) >= self.full_bw.saturating_mul(FULL_BW_GROWTH) {
            self.full_bw = bw;
            self.full_bw_rounds = 0;
            return;
        }
        self.full_bw_rounds += 1;
        if self.full_bw_rounds >= FULL_BW_ROUNDS {
            self.filled_pipe = true;
        }
    }

    /// Startup: the first RTTs of this round all sat behind a queue.
    fn check_startup_queue(&mut self, app_limited: bool) {
        if self.mode != Mode::Startup
            || app_limited
            || self.round_rtt_samples < STARTUP_QUEUE_SAMPLES
        {
            return;
        }
        let threshold = (self.min_rtt / 4).clamp(STARTUP_QUEUE_MIN_US, STARTUP_QUEUE_MAX_US);
        if self.round_min_rtt > self.min_rtt + threshold {
            self.filled_pipe = true;
        }
    }

    fn enter_probe_bw(&mut self, now: u64) {
        self.mode = Mode::ProbeBw;
        self.cwnd_gain = CWND_GAIN;
        self.cycle_index = PROBE_BW_FIRST_PHASE;
        self.pacing_gain = PROBE_BW_GAINS[self.cycle_index];
        self.cycle_stamp = now;
    }

    fn check_drain(&mut self, now: u64, in_flight: u64) {
        if self.mode == Mode::Startup && self.filled_pipe {
            self.mode = Mode::Drain;
            self.pacing_gain = DRAIN_GAIN;
            self.cwnd_gain = HIGH_GAIN;
        }
        if self.mode == Mode::Drain && in_flight <= self.target_cwnd(UNIT) {
            self.enter_probe_bw(now);
        }
    }

    fn update_cycle_phase(&mut self, now: u64, prior_in_flight: u64, in_flight: u64) {
        if self.mode != Mode::ProbeBw {
            return;
        }
        let full_length = now.saturating_sub(self.cycle_stamp) > self.min_rtt;
        let next = match self.pacing_gain {
            UNIT => full_length,
            // Probe until the extra is in flight (or loss says there is no room).
            g if g > UNIT => {
                full_length && (self.lost_since_ack || prior_in_flight >= self.target_cwnd(g))
            }
            // Drain until the queue the probe built is gone.
            _ => full_length || in_flight <= self.target_cwnd(UNIT),
        };
        if next {
            self.cycle_index = (self.cycle_index + 1) % PROBE_BW_GAINS.len();
            self.cycle_stamp = now;
            self.pacing_gain = PROBE_BW_GAINS[self.cycle_index];
        }
    }

    fn update_min_rtt(&mut self, now: u64, ack: &AckEvent) {
        let expired =
            self.min_rtt != 0 && now > self.min_rtt_stamp.saturating_add(MIN_RTT_WINDOW_US);
        if ack.rtt_sampled {
            let sample = ack.rtt.latest().max(1);
            self.round_min_rtt = self.round_min_rtt.min(sample);
            self.round_rtt_samples += 1;
            if self.min_rtt == 0 || sample <= self.min_rtt || expired {
                self.min_rtt = sample;
                self.min_rtt_stamp = now;
            }
        }
        if expired && self.mode != Mode::ProbeRtt {
            self.mode = Mode::ProbeRtt;
            self.pacing_gain = UNIT;
            self.cwnd_gain = UNIT;
            self.prior_cwnd = self.cwnd;
            self.probe_rtt_done_at = None;
        }
        if self.mode != Mode::ProbeRtt {
            return;
        }
        match self.probe_rtt_done_at {
            None if ack.bytes_in_flight <= self.min_cwnd() => {
                self.probe_rtt_done_at = Some(now.saturating_add(PROBE_RTT_DURATION_US));
                self.probe_rtt_round_done = false;
                self.next_round_delivered = ack.delivered;
            }
            None => {}
            Some(done) => {
                self.probe_rtt_round_done |= self.round_start;
                if self.probe_rtt_round_done && now >= done {
                    self.min_rtt_stamp = now;
                    self.cwnd = self.cwnd.max(self.prior_cwnd);
                    if self.filled_pipe {
                        self.enter_probe_bw(now);
                    } else {
                        self.mode = Mode::Startup;
                        self.pacing_gain = HIGH_GAIN;
                        self.cwnd_gain = STARTUP_CWND_GAIN;
                    }
                }
            }
        }
    }

    fn set_pacing_rate(&mut self, rtt: &RttEstimator) {
        if self.pacing_rate == 0 {
            self.pacing_rate = self.initial_rate(rtt);
        }
        let bw = self.btlbw.get();
        if bw == 0 {
            return;
        }
        let rate = bw.saturating_mul(self.pacing_gain) / UNIT;
        // Startup never slows down on a low (early, app-limited) sample.
        if self.filled_pipe || rate > self.pacing_rate {
            self.pacing_rate = rate;
        }
    }

    fn set_cwnd(&mut self, ack: &AckEvent) {
        let target = self.target_cwnd(self.cwnd_gain);
        if self.filled_pipe {
            self.cwnd = (self.cwnd + ack.acked_bytes).min(target);
        } else if self.cwnd < target || ack.delivered < INITIAL_CWND_DATAGRAMS * self.max_datagram {
            self.cwnd += ack.acked_bytes;
        }
        self.cwnd = self.cwnd.max(self.min_cwnd());
        if self.mode == Mode::ProbeRtt {
            self.cwnd = self.cwnd.min(self.min_cwnd());
        }
    }
}

impl CongestionController for Bbr {
    fn on_sent(&mut self, _now: u64, _bytes: u64, _in_flight: u64) {}

    fn on_ack(&mut self, now: u64, ack: &AckEvent) {
        self.round_start = false;
        self.round_acked += ack.acked_bytes;
        let mut app_limited = true;
        if let Some(s) = ack.sample {
            if s.prior_delivered >= self.next_round_delivered {
                self.next_round_delivered = ack.delivered;
                self.round_count += 1;
                self.round_start = true;
                self.on_round_end();
            }
            app_limited = s.app_limited;
            if let Some(rate) = s.rate {
                // An app-limited sample only says the path does at least this much.
                if !s.app_limited || rate >= self.btlbw.get() {
                    self.btlbw.update(self.round_count, rate);
                }
                if !s.app_limited {
                    self.round_max_rate = self.round_max_rate.max(rate);
                }
            }
        }
        let prior_in_flight = ack.bytes_in_flight + ack.acked_bytes;
        self.update_cycle_phase(now, prior_in_flight, ack.bytes_in_flight);
        self.check_full_pipe(app_limited);
        self.check_drain(now, ack.bytes_in_flight);
        self.update_min_rtt(now, ack);
        self.check_startup_queue(app_limited);
        self.set_pacing_rate(ack.rtt);
        self.set_cwnd(ack);
        self.lost_since_ack = false;
    }

    fn on_loss(&mut self, _now: u64, loss: &LossEvent) {
        self.lost_since_ack = true;
        self.round_lost += loss.lost_bytes;
        self.cwnd = self
            .cwnd
            .saturating_sub(loss.lost_bytes)
            .max(self.min_cwnd());
    }

    fn set_max_datagram(&mut self, bytes: u64) {
        self.max_datagram = bytes;
    }

    fn window(&self) -> u64 {
        self.cwnd
    }

    fn pacing_rate(&self, rtt: &RttEstimator) -> Option<u64> {
        Some(if self.pacing_rate == 0 {
            self.initial_rate(rtt)
        } else {
            self.pacing_rate
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::congestion::RateSample;

    const MSS: u64 = 1000;

    /// Feed `rounds` round trips of acks at `rate` bytes/s over a 20 ms RTT,
    /// losing `loss_permille` of each round's bytes. Returns the time reached.
    fn drive(
        cc: &mut Bbr,
        rtt: &mut RttEstimator,
        start: u64,
        rounds: u64,
        rate: u64,
        loss_permille: u64,
        delivered: &mut u64,
    ) -> u64 {
        let mut now = start;
        let per_round = rate / 50; // bytes per 20 ms
        for _ in 0..rounds {
            let prior = *delivered;
            for k in 0..10u64 {
                now += 2_000;
                rtt.update(20_000, 0);
                let acked = per_round / 10;
                *delivered += acked;
                let sample = RateSample {
                    delivered: per_round,
                    interval_us: 20_000,
                    rate: Some(rate),
                    app_limited: false,
                    prior_delivered: if k == 0 {
                        prior
                    } else {
                        prior.saturating_sub(1)
                    },
                };
                let ack = AckEvent {
                    acked_bytes: acked,
                    newest_acked_sent_at: now.saturating_sub(20_000),
                    bytes_in_flight: per_round,
                    rtt_sampled: true,
                    rtt,
                    sample: Some(sample),
                    delivered: *delivered,
                };
                cc.on_ack(now, &ack);
            }
            let lost = per_round * loss_permille / 1000;
            if lost > 0 {
                cc.on_loss(
                    now,
                    &LossEvent {
                        lost_bytes: lost,
                        newest_lost_sent_at: now.saturating_sub(20_000),
                        bytes_in_flight: per_round,
                    },
                );
            }
        }
        now
    }

    /// One ack of `acked` bytes at `now` with an RTT sample of `rtt_us` and
    /// `in_flight` left, starting a new round.
    fn ack(
        cc: &mut Bbr,
        rtt: &mut RttEstimator,
        now: u64,
        rtt_us: u64,
        in_flight: u64,
        delivered: &mut u64,
    ) {
        rtt.update(rtt_us, 0);
        let prior = *delivered;
        *delivered += MSS;
        let sample = RateSample {
            delivered: MSS,
            interval_us: rtt_us,
            rate: None,
            app_limited: true,
            prior_delivered: prior,
        };
        let ack = AckEvent {
            acked_bytes: MSS,
            newest_acked_sent_at: now.saturating_sub(rtt_us),
            bytes_in_flight: in_flight,
            rtt_sampled: true,
            rtt,
            sample: Some(sample),
            delivered: *delivered,
        };
        cc.on_ack(now, &ack);
    }

    #[test]
    fn probe_rtt_shrinks_the_window_after_10_s_without_a_new_minimum_then_restores_it() {
        let (mut cc, mut rtt, mut d) = (Bbr::new(MSS), RttEstimator::new(20_000), 0);
        let mut now = drive(&mut cc, &mut rtt, 0, 20, 2_500_000, 0, &mut d);
        let window = cc.window();
        // A standing queue: every RTT 10 ms above the minimum, for 10 s.
        let end = now + MIN_RTT_WINDOW_US;
        while now < end {
            now += 20_000;
            ack(&mut cc, &mut rtt, now, 30_000, window, &mut d);
        }
        assert_eq!(cc.mode(), Mode::ProbeBw);
        now += 20_000;
        ack(&mut cc, &mut rtt, now, 30_000, window, &mut d);
        assert_eq!(cc.mode(), Mode::ProbeRtt);
        assert_eq!(cc.window(), MIN_CWND_DATAGRAMS * MSS);
        // Flight drains; 200 ms and a round later the window comes back.
        for _ in 0..15 {
            now += 20_000;
            ack(&mut cc, &mut rtt, now, 20_000, 2 * MSS, &mut d);
        }
        assert_eq!(cc.mode(), Mode::ProbeBw);
        assert!(cc.window() >= window, "{} < {window}", cc.window());
    }

    #[test]
    fn random_loss_does_not_cut_the_pacing_rate() {
        let (mut cc, mut rtt, mut d) = (Bbr::new(MSS), RttEstimator::new(20_000), 0);
        let now = drive(&mut cc, &mut rtt, 0, 20, 2_500_000, 0, &mut d);
        assert_eq!(cc.mode(), Mode::ProbeBw);
        let before = cc.bandwidth();
        drive(&mut cc, &mut rtt, now, 20, 2_500_000, 50, &mut d);
        assert_eq!(
            cc.bandwidth(),
            before,
            "5 % loss leaves the bandwidth estimate alone"
        );
        assert!(cc.pacing_rate(&rtt).unwrap() >= before * 3 / 4);
        assert!(
            cc.window() >= 2 * 2_500_000 / 50 * 9 / 10,
            "window stays near 2 BDP: {}",
            cc.window()
        );
    }

    #[test]
    fn a_round_of_heavy_loss_resets_bandwidth_to_what_was_delivered() {
        let (mut cc, mut rtt, mut d) = (Bbr::new(MSS), RttEstimator::new(20_000), 0);
        let now = drive(&mut cc, &mut rtt, 0, 20, 2_500_000, 0, &mut d);
        // The path halves; the old estimate would overrun it for ten rounds.
        drive(&mut cc, &mut rtt, now, 3, 1_250_000, 400, &mut d);
        assert_eq!(cc.bandwidth(), 1_250_000);
    }
}
