//! Windowed maximum (Kathleen Nichols' algorithm, as in Linux's
//! win_minmax.c): the best, second-best and third-best samples of the last
//! `window` time units, in constant space. BBR keeps the bottleneck
//! bandwidth as the max of the last ten round trips' delivery rates.

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Sample {
    time: u64,
    value: u64,
}

#[derive(Clone, Debug)]
pub struct MaxFilter {
    window: u64,
    best: [Sample; 3],
}

impl MaxFilter {
    /// Keeps samples for `window` units of the caller's time (e.g. rounds).
    pub fn new(window: u64) -> Self {
        MaxFilter {
            window,
            best: [Sample::default(); 3],
        }
    }

    pub fn get(&self) -> u64 {
        self.best[0].value
    }

    /// Forget everything and start from `value` at `time`.
    pub fn reset(&mut self, time: u64, value: u64) {
        self.best = [Sample { time, value }; 3];
    }

    pub fn update(&mut self, time: u64, value: u64) {
        let s = Sample { time, value };
        if value >= self.best[0].value || time.saturating_sub(self.best[2].time) > self.window {
            self.reset(time, value);
            return;
        }
        if value >= self.best[1].value {
            self.best[1] = s;
            self.best[2] = s;
        } else if value >= self.best[2].value {
            self.best[2] = s;
        }
        self.expire(s);
    }

    /// Age out the best samples once they leave the window.
    fn expire(&mut self, s: Sample) {
        let dt = s.time.saturating_sub(self.best[0].time);
        if dt > self.window {
            self.best[0] = self.best[1];
            self.best[1] = self.best[2];
            self.best[2] = s;
            if s.time.saturating_sub(self.best[0].time) > self.window {
                self.best[0] = self.best[1];
                self.best[1] = self.best[2];
            }
        } else if self.best[1].time == self.best[0].time && dt > self.window / 4 {
            // A quarter window passed with no second choice: take this one.
            self.best[1] = s;
            self.best[2] = s;
        } else if self.best[2].time == self.best[1].time && dt > self.window / 2 {
            self.best[2] = s;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_max_of_the_window_then_forgets_it() {
        let mut f = MaxFilter::new(10);
        f.update(0, 100);
        for t in 1..=10 {
            f.update(t, 50 + t);
            assert_eq!(f.get(), 100);
        }
        f.update(11, 40);
        assert!(f.get() < 100, "the peak left the window: {}", f.get());
        assert!(f.get() >= 40);
        for t in 12..40 {
            f.update(t, 40);
        }
        assert_eq!(f.get(), 40);
    }
}
