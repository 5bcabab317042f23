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
//! ProbeRtt drops to half a BDP in flight (at the floor that expired) for
//! 200 ms every 10 s without a new minimum, so the RTT floor stays true;
//! if no RTT near the old floor shows meanwhile (the bandwidth estimate ran
//! ahead of a path that slowed), it goes on at a few datagrams. Its rounds
//! do not age the bandwidth estimate and its samples do not lower it: at a
//! ~30 ms RTT its ten-odd rounds could otherwise push the real bandwidth out
//! of the ten-round filter, leaving a low rate that ProbeBw then takes
//! seconds to grow back from (one of S2's 60 s runs on the simulator lost
//! 7 s that way).
//!
//! Loss response, bounded: lost bytes come off cwnd (acks grow it back to
//! its target within the round), and a round that loses more than
//! `HEAVY_LOSS_PERMILLE` of its bytes — a queue overflowing, not random loss
//! — resets the bandwidth estimate to what that round delivered and ends
//! Startup.
//!
//! Random loss compensation: the delivery rate counts only what arrived, so
//! on a path that loses a share p of packets after its bottleneck (or on
//! later hops) the bandwidth estimate is (1 − p) × the bottleneck's rate,
//! and pacing at it left up to that share of the link idle (S2, 5.9 % loss
//! end to end, on the simulator: the first hop 97 % busy between
//! ProbeRtts, 99 % with this). In ProbeBw the pacing rate is divided by
//! (1 − p), capped at `LOSS_COMPENSATION_MAX_PPM`, so the bottleneck runs
//! full. p is loss that does not come from our own sending: the smaller of
//! the smoothed loss share of recent rounds and the share lost of what was
//! sent in ProbeBw's drain phases (pacing at 3/4 of the estimate, below the
//! bottleneck's rate) — and none at all if what probe phases (5/4) sent
//! lost clearly more than that. Loss on the wire takes the same share at
//! any rate; a queue overflowing, deep or shallow, takes more of what
//! leaves while we probe than while we drain, so it earns no compensation.
//! And only while the path shows no standing queue: a queue means the
//! bottleneck is already full, so pacing falls back to the estimate and
//! the queue drains. A round of heavy loss forgets all loss shares. The
//! window is not compensated: it still bounds what can queue (about one
//! BDP), as before.

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
/// Time spent at ProbeRtt's window, µs.
const PROBE_RTT_DURATION_US: u64 = 200_000;
/// ProbeRtt's window, × BDP / UNIT.
const PROBE_RTT_CWND_GAIN: u64 = 500;
/// Fewest datagrams' worth of window.
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
/// Loss shares are in millionths.
const PPM: u64 = 1_000_000;
/// Most random loss the pacing rate makes up for, millionths: 10 %, half
/// of what counts as a heavy (overflow) round.
const LOSS_COMPENSATION_MAX_PPM: u64 = 100_000;
/// The smoothed loss share moves by 1/8 of each round's share.
const LOSS_EWMA_DIV: u64 = 8;
/// Rounds with fewer datagrams' worth of bytes than this do not move the
/// smoothed loss share (too few to measure a few percent).
const LOSS_SAMPLE_MIN_DATAGRAMS: u64 = 32;
/// A phase kind's loss share moves by 1/4 of each phase's share.
const PHASE_LOSS_EWMA_DIV: u64 = 4;
/// Loss is the path's, not overflow we cause, only if probe phases lose at
/// most this much more than drain phases: a quarter more, or 0.5 % of
/// what they sent, millionths.
const PROBE_LOSS_MARGIN_DIV: u64 = 4;
const PROBE_LOSS_MARGIN_MIN_PPM: u64 = 5_000;

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
    /// Rounds spent in ProbeRtt (the bandwidth filter does not count them).
    probe_rtt_rounds: u64,
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
    /// The min RTT that expired into this ProbeRtt, µs: its window's BDP
    /// uses it (the sample that replaced it may sit behind a queue).
    probe_rtt_floor: u64,
    /// This ProbeRtt saw an RTT near `probe_rtt_floor`: the queue drained.
    probe_rtt_drained: bool,
    /// Half a BDP did not drain it (the bandwidth estimate ran ahead of the
    /// path): ProbeRtt goes on at `min_cwnd`, as BBR v1's did.
    probe_rtt_fallback: bool,
    /// Losses since the last ack (ProbeBw stops probing on loss).
    lost_since_ack: bool,
    round_lost: u64,
    round_acked: u64,
    /// Highest non-app-limited rate sampled this round, bytes/s.
    round_max_rate: u64,
    /// Smallest RTT sampled this round, µs (u64::MAX before one).
    round_min_rtt: u64,
    round_rtt_samples: u32,
    /// Smoothed share of bytes lost per round, millionths.
    loss_ppm: u64,
    /// The last full round's RTTs all sat behind a queue.
    queue_standing: bool,
    /// Loss of what ProbeBw's drain (gain < 1) and probe (gain > 1)
    /// phases sent.
    drain_loss: PhaseLoss,
    probe_loss: PhaseLoss,
}

/// The share lost of what was sent in one kind of ProbeBw phase.
#[derive(Debug, Default)]
struct PhaseLoss {
    /// Smoothed share, millionths; None before the first measurement.
    ppm: Option<u64>,
    /// The last such phase's send interval, µs (start, end; end 0 while it
    /// runs), and the bytes sent in it acknowledged and lost so far.
    sent: (u64, u64),
    acked: u64,
    lost: u64,
}

impl PhaseLoss {
    /// Sent during the last such phase.
    fn covers(&self, sent_at: u64) -> bool {
        let (start, end) = self.sent;
        start != 0 && sent_at >= start && (end == 0 || sent_at < end)
    }

    /// A new phase starts: the last one's packets have all been
    /// acknowledged or declared lost by now (a whole cycle later), so its
    /// share is known — once enough was sent (short phases add up).
    fn start(&mut self, now: u64, min_bytes: u64) {
        let total = self.acked + self.lost;
        if total >= min_bytes {
            let share = self.lost.saturating_mul(PPM) / total;
            self.ppm = Some(match self.ppm {
                None => share,
                Some(p) => (p * (PHASE_LOSS_EWMA_DIV - 1) + share) / PHASE_LOSS_EWMA_DIV,
            });
            self.acked = 0;
            self.lost = 0;
        }
        self.sent = (now, 0);
    }

    fn forget(&mut self) {
        self.ppm = None;
        self.acked = 0;
        self.lost = 0;
    }
}

/// How far above an RTT floor a sample shows a queue, µs.
fn queue_threshold_at(floor: u64) -> u64 {
    (floor / 4).clamp(STARTUP_QUEUE_MIN_US, STARTUP_QUEUE_MAX_US)
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
            probe_rtt_rounds: 0,
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
            probe_rtt_floor: 0,
            probe_rtt_drained: false,
            probe_rtt_fallback: false,
            lost_since_ack: false,
            round_lost: 0,
            round_acked: 0,
            round_max_rate: 0,
            round_min_rtt: u64::MAX,
            round_rtt_samples: 0,
            loss_ppm: 0,
            queue_standing: false,
            drain_loss: PhaseLoss::default(),
            probe_loss: PhaseLoss::default(),
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

    /// ProbeRtt's window: half a BDP, which leaves no queue at a bottleneck
    /// that one BDP fills, and keeps the link half busy meanwhile (as BBR v3
    /// does; v1's few datagrams left it idle: S2 lost ~2.5 % of its time).
    /// The BDP is taken at the floor that expired, not at the sample that
    /// replaced it. A few datagrams once half a BDP failed to drain.
    fn probe_rtt_cwnd(&self) -> u64 {
        if self.probe_rtt_fallback {
            return self.min_cwnd();
        }
        let rtt = self.min_rtt.min(self.probe_rtt_floor);
        let bdp = self.btlbw.get().saturating_mul(rtt) / MICROS_PER_SEC;
        (bdp.saturating_mul(PROBE_RTT_CWND_GAIN) / UNIT).max(self.min_cwnd())
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

    /// The bandwidth filter's clock: rounds outside ProbeRtt.
    fn bw_round(&self) -> u64 {
        self.round_count - self.probe_rtt_rounds
    }

    /// Standing-queue threshold above the min RTT, µs.
    fn queue_threshold(&self) -> u64 {
        queue_threshold_at(self.min_rtt)
    }

    fn on_round_end(&mut self) {
        let total = self.round_lost + self.round_acked;
        let heavy = self.round_lost >= HEAVY_LOSS_MIN_DATAGRAMS * self.max_datagram
            && self.round_lost.saturating_mul(UNIT) > total.saturating_mul(HEAVY_LOSS_PERMILLE);
        if heavy {
            self.loss_ppm = 0;
            self.drain_loss.forget();
            self.probe_loss.forget();
        } else if total >= LOSS_SAMPLE_MIN_DATAGRAMS * self.max_datagram {
            let share = self.round_lost.saturating_mul(PPM) / total;
            self.loss_ppm = (self.loss_ppm * (LOSS_EWMA_DIV - 1) + share) / LOSS_EWMA_DIV;
        }
        if self.round_rtt_samples > 0 {
            self.queue_standing = self.round_min_rtt > self.min_rtt + self.queue_threshold();
        }
        if heavy && self.round_max_rate > 0 {
            // The bottleneck is full: believe what it delivered, not the
            // peak it delivered before (BBR v1 would overrun it for ten rounds).
            if self.round_max_rate < self.btlbw.get() {
                self.btlbw.reset(self.bw_round(), self.round_max_rate);
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
        if self.round_min_rtt > self.min_rtt + self.queue_threshold() {
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
            if let Some(phase) = self.phase_loss() {
                phase.sent.1 = now;
            }
            self.cycle_index = (self.cycle_index + 1) % PROBE_BW_GAINS.len();
            self.cycle_stamp = now;
            self.pacing_gain = PROBE_BW_GAINS[self.cycle_index];
            let min_bytes = LOSS_SAMPLE_MIN_DATAGRAMS * self.max_datagram;
            if let Some(phase) = self.phase_loss() {
                phase.start(now, min_bytes);
            }
        }
    }

    /// Bytes sent at `sent_at` were acknowledged or lost: count them to the
    /// drain or probe phase that sent them.
    fn tally(&mut self, sent_at: u64, acked: u64, lost: u64) {
        for phase in [&mut self.drain_loss, &mut self.probe_loss] {
            if phase.covers(sent_at) {
                phase.acked += acked;
                phase.lost += lost;
            }
        }
    }

    /// The loss tally of the current ProbeBw phase, if it drains or probes.
    fn phase_loss(&mut self) -> Option<&mut PhaseLoss> {
        match self.pacing_gain {
            UNIT => None,
            g if g < UNIT => Some(&mut self.drain_loss),
            _ => Some(&mut self.probe_loss),
        }
    }

    /// Random loss share the pacing rate makes up for, millionths: what
    /// drain phases lose, if probing loses no more (else it is overflow).
    fn loss_compensation(&self) -> u64 {
        let (Some(drain), Some(probe)) = (self.drain_loss.ppm, self.probe_loss.ppm) else {
            return 0;
        };
        let margin = (drain / PROBE_LOSS_MARGIN_DIV).max(PROBE_LOSS_MARGIN_MIN_PPM);
        if probe > drain + margin {
            return 0;
        }
        self.loss_ppm.min(drain).min(LOSS_COMPENSATION_MAX_PPM)
    }

    fn update_min_rtt(&mut self, now: u64, ack: &AckEvent) {
        let expired =
            self.min_rtt != 0 && now > self.min_rtt_stamp.saturating_add(MIN_RTT_WINDOW_US);
        // The floor before this ack's sample can replace it on expiry.
        let floor = self.min_rtt;
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
            self.probe_rtt_floor = floor;
            self.probe_rtt_drained = false;
            self.probe_rtt_fallback = false;
        }
        if self.mode != Mode::ProbeRtt {
            return;
        }
        // Within the queue threshold of the old floor: nothing queued.
        let old_floor = self.probe_rtt_floor;
        self.probe_rtt_drained |= ack.rtt_sampled
            && ack.rtt.latest().max(1) <= old_floor.saturating_add(queue_threshold_at(old_floor));
        match self.probe_rtt_done_at {
            None if ack.bytes_in_flight <= self.probe_rtt_cwnd() => {
                self.probe_rtt_done_at = Some(now.saturating_add(PROBE_RTT_DURATION_US));
                self.probe_rtt_round_done = false;
                self.next_round_delivered = ack.delivered;
            }
            None => {}
            Some(done) => {
                self.probe_rtt_round_done |= self.round_start;
                if !self.probe_rtt_round_done || now < done {
                    return;
                }
                if !self.probe_rtt_drained && !self.probe_rtt_fallback {
                    // Start over at a few datagrams, which drain any queue of
                    // ours. If the path's RTT rose instead (or another flow
                    // keeps a queue), this costs 200 ms more once: the new
                    // floor comes from this ProbeRtt's samples, so the next
                    // one finds RTTs near it.
                    self.probe_rtt_fallback = true;
                    self.probe_rtt_done_at = None;
                    return;
                }
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

    fn set_pacing_rate(&mut self, rtt: &RttEstimator) {
        if self.pacing_rate == 0 {
            self.pacing_rate = self.initial_rate(rtt);
        }
        let bw = self.btlbw.get();
        if bw == 0 {
            return;
        }
        let mut rate = bw.saturating_mul(self.pacing_gain) / UNIT;
        if self.mode == Mode::ProbeBw && !self.queue_standing {
            // What arrived plus what random loss took: the bottleneck's rate.
            let p = self.loss_compensation();
            rate = rate.saturating_mul(PPM / 1000) / ((PPM - p) / 1000);
        }
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
            self.cwnd = self.cwnd.min(self.probe_rtt_cwnd());
        }
    }
}

impl CongestionController for Bbr {
    fn on_sent(&mut self, _now: u64, _bytes: u64, _in_flight: u64) {}

    fn on_ack(&mut self, now: u64, ack: &AckEvent) {
        self.round_start = false;
        self.round_acked += ack.acked_bytes;
        self.tally(ack.newest_acked_sent_at, ack.acked_bytes, 0);
        let mut app_limited = true;
        if let Some(s) = ack.sample {
            if s.prior_delivered >= self.next_round_delivered {
                self.next_round_delivered = ack.delivered;
                self.round_count += 1;
                if self.mode == Mode::ProbeRtt {
                    self.probe_rtt_rounds += 1;
                }
                self.round_start = true;
                self.on_round_end();
            }
            app_limited = s.app_limited;
            if let Some(rate) = s.rate {
                // An app-limited sample only says the path does at least
                // this much; so does one from ProbeRtt's capped window.
                let limited = s.app_limited || self.mode == Mode::ProbeRtt;
                if !limited || rate >= self.btlbw.get() {
                    self.btlbw.update(self.bw_round(), rate);
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
        self.tally(loss.newest_lost_sent_at, 0, loss.lost_bytes);
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
                rtt.update(20_000, 0, 0);
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
        rtt.update(rtt_us, 0, 0);
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

    /// 20 rounds at 2.5 MB/s over 20 ms, then 10 s of a standing queue (every
    /// RTT 30 ms, no new minimum) and one ack more: ProbeRtt.
    fn into_probe_rtt() -> (Bbr, RttEstimator, u64, u64, u64) {
        let (mut cc, mut rtt, mut d) = (Bbr::new(MSS), RttEstimator::new(20_000), 0);
        let mut now = drive(&mut cc, &mut rtt, 0, 20, 2_500_000, 0, &mut d);
        let window = cc.window();
        let end = now + MIN_RTT_WINDOW_US;
        while now < end {
            now += 20_000;
            ack(&mut cc, &mut rtt, now, 30_000, window, &mut d);
        }
        assert_eq!(cc.mode(), Mode::ProbeBw);
        now += 20_000;
        ack(&mut cc, &mut rtt, now, 30_000, window, &mut d);
        assert_eq!(cc.mode(), Mode::ProbeRtt);
        (cc, rtt, now, d, window)
    }

    #[test]
    fn probe_rtt_holds_half_a_bdp_after_10_s_without_a_new_minimum_then_restores_the_window() {
        let (mut cc, mut rtt, mut now, mut d, window) = into_probe_rtt();
        // Half a BDP at the floor that expired (2.5 MB/s × 20 ms / 2), not
        // at the 30 ms sample that replaced it, nor a few datagrams.
        assert_eq!(cc.window(), 25_000);
        // Flight falls to it (more than a few datagrams) and the RTT to the
        // floor; 200 ms and a round later the window comes back.
        for _ in 0..15 {
            now += 20_000;
            ack(&mut cc, &mut rtt, now, 20_000, 20_000, &mut d);
        }
        assert_eq!(cc.mode(), Mode::ProbeBw);
        assert_eq!(cc.min_rtt, 20_000, "the floor is measured again");
        assert!(cc.window() >= window, "{} < {window}", cc.window());
    }

    #[test]
    fn probe_rtt_falls_back_to_a_few_datagrams_when_half_a_bdp_leaves_a_queue() {
        let (mut cc, mut rtt, mut now, mut d, window) = into_probe_rtt();
        // The path slowed: at half the estimated BDP the RTT stays 30 ms.
        for _ in 0..15 {
            now += 20_000;
            ack(&mut cc, &mut rtt, now, 30_000, 20_000, &mut d);
        }
        assert_eq!(cc.mode(), Mode::ProbeRtt);
        assert_eq!(cc.window(), MIN_CWND_DATAGRAMS * MSS);
        // A few datagrams drain it; 200 ms and a round later ProbeRtt ends
        // with the window back.
        for _ in 0..15 {
            now += 20_000;
            ack(&mut cc, &mut rtt, now, 20_000, 2 * MSS, &mut d);
        }
        assert_eq!(cc.mode(), Mode::ProbeBw);
        assert_eq!(cc.min_rtt, 20_000);
        assert!(cc.window() >= window, "{} < {window}", cc.window());
        // The next ProbeRtt, 10 s on, starts at half a BDP again.
        let end = now + MIN_RTT_WINDOW_US;
        while now < end {
            now += 20_000;
            ack(&mut cc, &mut rtt, now, 30_000, window, &mut d);
        }
        now += 20_000;
        ack(&mut cc, &mut rtt, now, 30_000, window, &mut d);
        assert_eq!(cc.mode(), Mode::ProbeRtt);
        assert_eq!(cc.window(), 25_000);
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

    /// Pacing rate over the bandwidth estimate, thousandths, sampled in a
    /// cruising (gain 1) phase after `rounds` more rounds of `drive`-like
    /// traffic at 2.5 MB/s, 20 ms RTT (30 ms, a queue, from round
    /// `queue_from`), 1.2 BDP in flight. `lose` says, for a packet sent at a
    /// time, what share of it (thousandths) the path loses.
    fn cruise_ratio(rounds: u64, queue_from: u64, lose: impl Fn(&Bbr, u64) -> u64) -> u64 {
        let (mut cc, mut rtt, mut d) = (Bbr::new(MSS), RttEstimator::new(20_000), 0);
        let mut now = drive(&mut cc, &mut rtt, 0, 20, 2_500_000, 0, &mut d);
        assert_eq!(cc.mode(), Mode::ProbeBw);
        let per_ack = 2_500_000 / 500; // 10 acks per 20 ms round
        let mut ratio = None;
        for r in 0..rounds {
            let prior = d;
            for k in 0..10u64 {
                now += 2_000;
                rtt.update(if r >= queue_from { 30_000 } else { 20_000 }, 0, 0);
                let sent_at = now - 20_000;
                let lost = per_ack * lose(&cc, sent_at) / 1000;
                d += per_ack - lost;
                let sample = RateSample {
                    delivered: 2_500_000 / 50,
                    interval_us: 20_000,
                    rate: Some(2_500_000),
                    app_limited: false,
                    prior_delivered: if k == 0 { prior } else { prior - 1 },
                };
                cc.on_ack(
                    now,
                    &AckEvent {
                        acked_bytes: per_ack - lost,
                        newest_acked_sent_at: sent_at,
                        bytes_in_flight: 60_000,
                        rtt_sampled: true,
                        rtt: &rtt,
                        sample: Some(sample),
                        delivered: d,
                    },
                );
                if lost > 0 {
                    cc.on_loss(
                        now,
                        &LossEvent {
                            lost_bytes: lost,
                            newest_lost_sent_at: sent_at,
                            bytes_in_flight: 60_000,
                        },
                    );
                }
                if r + 20 >= rounds && cc.pacing_gain == UNIT {
                    ratio = Some(cc.pacing_rate(&rtt).unwrap() * UNIT / cc.bandwidth());
                }
            }
        }
        ratio.expect("a cruising phase near the end")
    }

    #[test]
    fn random_loss_raises_the_cruising_rate_to_what_the_bottleneck_carries() {
        // 6 % lost at any rate (on the wire): the estimate is 94 % of the
        // bottleneck, so pacing at it would leave 6 % of the link idle.
        let ratio = cruise_ratio(60, u64::MAX, |_, _| 60);
        assert!(
            (1_055..=1_066).contains(&ratio),
            "pacing at {ratio}‰ of the estimate, want 1000/0.94"
        );
    }

    #[test]
    fn loss_that_stops_while_draining_is_overflow_and_earns_no_compensation() {
        // A shallow queue overflows except while the sender paces below the
        // bottleneck: the loss is the sender's own, not the path's.
        let ratio = cruise_ratio(60, u64::MAX, |cc, sent_at| {
            if cc.drain_loss.covers(sent_at) {
                0
            } else {
                60
            }
        });
        assert_eq!(ratio, UNIT);
    }

    #[test]
    fn loss_that_grows_while_probing_is_overflow_and_earns_no_compensation() {
        // A shallow queue shared with other flows: some loss at any rate,
        // much more when this sender probes above its share.
        let ratio = cruise_ratio(60, u64::MAX, |cc, sent_at| {
            if cc.probe_loss.covers(sent_at) {
                150
            } else {
                40
            }
        });
        assert_eq!(ratio, UNIT);
    }

    #[test]
    fn a_standing_queue_turns_loss_compensation_off() {
        // The same random loss, measured for 60 rounds; then a queue 10 ms
        // deep stands (RTT 30 ms over a 20 ms floor).
        let ratio = cruise_ratio(80, 60, |_, _| 60);
        assert_eq!(ratio, UNIT);
    }

    /// `n` lossless rounds of 10 acks, 2 ms apart, each with an RTT of
    /// `rtt_us` and a (not app-limited) rate sample of `rate`.
    #[allow(clippy::too_many_arguments)]
    fn rounds(
        cc: &mut Bbr,
        rtt: &mut RttEstimator,
        mut now: u64,
        n: u64,
        rate: u64,
        rtt_us: u64,
        in_flight: u64,
        d: &mut u64,
    ) -> u64 {
        for _ in 0..n {
            let prior = *d;
            for k in 0..10u64 {
                now += 2_000;
                rtt.update(rtt_us, 0, 0);
                *d += MSS;
                let sample = RateSample {
                    delivered: 10 * MSS,
                    interval_us: rtt_us,
                    rate: Some(rate),
                    app_limited: false,
                    prior_delivered: if k == 0 { prior } else { prior - 1 },
                };
                let ack = AckEvent {
                    acked_bytes: MSS,
                    newest_acked_sent_at: now - rtt_us,
                    bytes_in_flight: in_flight,
                    rtt_sampled: true,
                    rtt,
                    sample: Some(sample),
                    delivered: *d,
                };
                cc.on_ack(now, &ack);
            }
        }
        now
    }

    #[test]
    fn probe_rtt_rounds_do_not_age_the_bandwidth_estimate_out() {
        let (mut cc, mut rtt, mut d) = (Bbr::new(MSS), RttEstimator::new(20_000), 0);
        let mut now = drive(&mut cc, &mut rtt, 0, 20, 2_500_000, 0, &mut d);
        // 10 s with a queue standing (no new minimum): ProbeRtt.
        while cc.mode() != Mode::ProbeRtt {
            now = rounds(&mut cc, &mut rtt, now, 1, 2_500_000, 30_000, 60_000, &mut d);
        }
        // ProbeRtt's window delivers at a few datagrams per RTT (a path
        // that slowed) for more rounds than the bandwidth filter's window.
        let mut n = 0;
        while cc.mode() == Mode::ProbeRtt {
            now = rounds(&mut cc, &mut rtt, now, 1, 200_000, 20_000, 2 * MSS, &mut d);
            n += 1;
        }
        assert!(n > BTLBW_WINDOW_ROUNDS, "{n} rounds in ProbeRtt");
        assert_eq!(cc.mode(), Mode::ProbeBw);
        assert_eq!(cc.bandwidth(), 2_500_000, "the estimate survives ProbeRtt");
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
