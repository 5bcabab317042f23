//! Receiver side: measures the loss rate and burstiness of the peer's
//! packets as they arrive (before any repair), and decides when to tell the
//! peer (LOSS_REPORT), whose FEC adapts to it. A clean link is never reported.

/// Weight of history: each packet's outcome fades by 1/256 per later packet
/// (about 4 s at 60 packets/s).
const DECAY: f64 = 1.0 - 1.0 / 256.0;
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
                self.lost = (self.lost - 1.0).max(0.0);
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
        self.total = self.total * DECAY + 1.0;
        self.lost = self.lost * DECAY + lost as u8 as f64;
        if self.prev_lost {
            self.after_loss = self.after_loss * DECAY + 1.0;
            self.after_loss_lost = self.after_loss_lost * DECAY + lost as u8 as f64;
        }
        self.prev_lost = lost;
    }

    /// Recent fraction of the peer's packets lost on the link.
    pub fn loss(&self) -> f64 {
        if self.total < MIN_SAMPLES {
            0.0
        } else {
            (self.lost / self.total).clamp(0.0, 1.0)
        }
    }

    /// P(lost | previous lost); the mean loss until losses have successors.
    pub fn burst(&self) -> f64 {
        if self.after_loss < 2.0 {
            self.loss()
        } else {
            (self.after_loss_lost / self.after_loss).clamp(0.0, 1.0)
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
