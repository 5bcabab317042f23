//! Receiver side: measures the loss rate and burstiness of the peer's
//! packets as they arrive (before any repair), and decides when to tell the
//! peer (LOSS_REPORT), whose FEC adapts to it. A clean link is never reported.

/// Outcomes are counted in integer windows of this many packets (the per-
/// packet path stays a few increments); each full window is folded into the
/// history, which keeps 3/4 of its weight: about 256 packets of memory
/// (4 s at 60 packets/s).
const WINDOW: u32 = 64;
const KEEP: f64 = 0.75;
/// Outcomes needed before the rate means anything.
const MIN_SAMPLES: f64 = 16.0;
/// A gap larger than this counts as this many losses (an outage, not a rate).
const MAX_GAP: u64 = 64;
/// Reports are at least this far apart, µs.
const MIN_REPORT_INTERVAL_US: u64 = 100_000;
/// A non-zero estimate is repeated this often (a report can be lost), µs.
const REFRESH_US: u64 = 1_000_000;

#[derive(Debug, Default)]
pub struct LossMeter {
    largest: Option<u64>,
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
        match self.largest {
            Some(l) if pn <= l => {
                // Late, not lost: take back one of the losses counted for the gap.
                if self.win[1] > 0 {
                    self.win[1] -= 1;
                } else {
                    self.lost = (self.lost - 1.0).max(0.0);
                }
            }
            Some(l) => {
                for _ in 0..(pn - l - 1).min(MAX_GAP) {
                    self.record(true);
                }
                self.record(false);
                self.largest = Some(pn);
            }
            None => {
                self.record(false);
                self.largest = Some(pn);
            }
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
        ((self.lost + self.win[1] as f64) / total).clamp(0.0, 1.0)
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
