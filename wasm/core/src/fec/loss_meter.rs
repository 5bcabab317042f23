//! Receiver side: measures the loss rate and burstiness of the peer's
//! packets as they arrive (before any repair), and decides when to tell the
//! peer (LOSS_REPORT), whose FEC adapts to it. A clean link is never reported.

#[cfg(not(feature = "std"))]
use crate::prelude::F64Ext;

/// Outcomes are counted in integer windows of this many packets (the per-
/// packet path stays a few increments); each full window is folded into the
/// history, which keeps 3/4 of its weight: about 256 packets of memory
/// (4 s at 60 packets/s).
const WINDOW: u32 = 64;
const KEEP: f64 = 0.75;
/// Estimates below this read as no loss.
const MIN_LOSS: f64 = 0.001;
/// Outcomes needed before the rate means anything.
const MIN_SAMPLES: f64 = 16.0;
/// A gap larger than this counts as this many losses (an outage, not a rate).
const MAX_GAP: u64 = 64;
/// A packet's fate is decided once this many later packets arrived, so
/// reordering on a lossless link is not mistaken for loss (as in loss
/// detection's packet threshold).
const REORDER_SLACK: u64 = 3;
/// Reports are at least this far apart, µs.
const MIN_REPORT_INTERVAL_US: u64 = 100_000;
/// A non-zero estimate is repeated this often (a report can be lost), µs.
const REFRESH_US: u64 = 1_000_000;

#[derive(Debug, Default)]
pub struct LossMeter {
    /// False until the first gap or reordering: until then arrivals only
    /// count (the common clean-link path costs an increment).
    irregular: bool,
    /// In-order arrivals before the first irregularity.
    clean_run: u64,
    largest: Option<u64>,
    /// Lowest packet number seen: nothing below it is judged.
    first: u64,
    /// Bit i: packet `largest − i` arrived.
    seen: u64,
    prev_lost: bool,
    /// The current window: outcomes, losses, outcomes after a loss, losses after a loss.
    win: [u32; 4],
    /// Folded history of the same four counts.
    total: f64,
    lost: f64,
    after_loss: f64,
    after_loss_lost: f64,
    reported: Option<(f64, f64)>,
    last_report: u64,
}

impl LossMeter {
    /// A packet arrived from the link (not rebuilt by repair).
    pub fn on_arrival(&mut self, pn: u64) {
        let Some(l) = self.largest else {
            self.largest = Some(pn);
            self.first = pn;
            self.seen = 1;
            self.clean_run = 1;
            return;
        };
        if !self.irregular {
            if pn == l + 1 {
                self.largest = Some(pn);
                self.clean_run += 1;
                return;
            }
            // First gap or reordering: the clean run so far becomes history
            // (every packet of it arrived; the last few are judged later).
            self.irregular = true;
            self.seen = u64::MAX;
            self.total = self.clean_run.saturating_sub(REORDER_SLACK).min(256) as f64;
        }
        if pn <= l {
            let age = l - pn;
            if age < 64 {
                self.seen |= 1 << age;
            }
            if age >= REORDER_SLACK && pn >= self.first {
                // Later than the slack: it was counted lost; take that back.
                if self.win[1] > 0 {
                    self.win[1] -= 1;
                } else {
                    self.lost = (self.lost - 1.0).max(0.0);
                }
            }
            return;
        }
        let shift = pn - l;
        self.seen = if shift < 64 {
            (self.seen << shift) | 1
        } else {
            1
        };
        self.largest = Some(pn);
        // Packets that just left the slack: judge each by its arrival bit.
        let from = (l + 1).saturating_sub(REORDER_SLACK).max(self.first);
        let to = pn.saturating_sub(REORDER_SLACK);
        if to < from || pn < REORDER_SLACK {
            return;
        }
        let judged = (to - from + 1).min(MAX_GAP + 1);
        for q in to + 1 - judged..=to {
            let age = pn - q;
            self.record(age >= 64 || self.seen & (1 << age) == 0);
        }
    }

    fn record(&mut self, lost: bool) {
        self.win[0] += 1;
        self.win[1] += lost as u32;
        if self.prev_lost {
            self.win[2] += 1;
            self.win[3] += lost as u32;
        }
        self.prev_lost = lost;
        if self.win[0] == WINDOW {
            self.total = self.total * KEEP + self.win[0] as f64;
            self.lost = self.lost * KEEP + self.win[1] as f64;
            self.after_loss = self.after_loss * KEEP + self.win[2] as f64;
            self.after_loss_lost = self.after_loss_lost * KEEP + self.win[3] as f64;
            self.win = [0; 4];
        }
    }

    /// Recent fraction of the peer's packets lost on the link.
    pub fn loss(&self) -> f64 {
        let total = self.total + self.win[0] as f64;
        if self.lost == 0.0 && self.win[1] == 0 || total < MIN_SAMPLES {
            return 0.0;
        }
        let loss = ((self.lost + self.win[1] as f64) / total).clamp(0.0, 1.0);
        // The decayed history never reaches exactly 0: below 0.1 % it is
        // the memory of old losses, reported once as 0 so the peer stops.
        if loss < MIN_LOSS {
            0.0
        } else {
            loss
        }
    }

    /// P(lost | previous lost); the mean loss until losses have successors.
    pub fn burst(&self) -> f64 {
        let after = self.after_loss + self.win[2] as f64;
        if after < 2.0 {
            self.loss()
        } else {
            ((self.after_loss_lost + self.win[3] as f64) / after).clamp(0.0, 1.0)
        }
    }

    /// The (loss, burst) to report now, if the estimate moved enough since
    /// the last report or a non-zero one needs repeating.
    pub fn report_due(&self, now: u64) -> Option<(f64, f64)> {
        if !self.irregular {
            return None;
        }
        let (l, b) = (self.loss(), self.burst());
        let Some((rl, rb)) = self.reported else {
            return (l > 0.0).then_some((l, b));
        };
        if now < self.last_report + MIN_REPORT_INTERVAL_US {
            return None;
        }
        let moved = (l - rl).abs() > (rl * 0.2).max(0.002) || (b - rb).abs() > 0.05;
        let refresh = l > 0.0 && now >= self.last_report + REFRESH_US;
        let cleared = l == 0.0 && rl > 0.0;
        (moved || refresh || cleared).then_some((l, b))
    }

    pub fn on_report_sent(&mut self, now: u64, report: (f64, f64)) {
        self.reported = Some(report);
        self.last_report = now;
    }
}

/// Fractions travel as u16 in units of 1/65535.
pub fn to_wire(x: f64) -> u16 {
    (x.clamp(0.0, 1.0) * 65535.0).round() as u16
}

pub fn from_wire(x: u16) -> f64 {
    x as f64 / 65535.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reordering_without_loss_is_not_loss() {
        let mut m = LossMeter::default();
        // Swap every fifth pair: 0 1 2 3 5 4 6 7 8 10 9 ...
        for base in (0..2000u64).step_by(5) {
            for pn in [base, base + 1, base + 2, base + 4, base + 3] {
                m.on_arrival(pn);
                assert_eq!(m.report_due(0), None);
            }
        }
        assert_eq!(m.loss(), 0.0);
    }

    #[test]
    fn one_loss_after_a_long_clean_run_reads_small() {
        let mut m = LossMeter::default();
        for pn in (0..9_010).filter(|&p| p != 9_000) {
            m.on_arrival(pn);
        }
        assert!(m.loss() > 0.0 && m.loss() < 0.01, "{}", m.loss());
    }

    #[test]
    fn clean_arrivals_are_never_reported() {
        let mut m = LossMeter::default();
        for pn in 0..1000 {
            m.on_arrival(pn);
            assert_eq!(m.report_due(pn * 16_000), None);
        }
    }

    #[test]
    fn every_tenth_packet_lost_reads_ten_percent_and_no_bursts() {
        let mut m = LossMeter::default();
        for pn in (0..3000).filter(|p| p % 10 != 5) {
            m.on_arrival(pn);
        }
        assert!((m.loss() - 0.1).abs() < 0.01, "{}", m.loss());
        assert!(m.burst() < 0.01);
        assert!(m.report_due(0).is_some());
    }

    #[test]
    fn pairs_of_losses_read_as_bursty() {
        let mut m = LossMeter::default();
        for pn in (0..3000).filter(|p| p % 10 != 5 && p % 10 != 6) {
            m.on_arrival(pn);
        }
        assert!((m.burst() - 0.5).abs() < 0.05, "{}", m.burst());
    }
}
