//! Log-linear histogram of microsecond values: exact below 1024 µs, then 128
//! buckets per power of two (< 0.8 % error), fixed memory whatever the run
//! length.

const LINEAR: u64 = 1024;
const SUB_BITS: u32 = 7;
const SUB: usize = 1 << SUB_BITS;
/// Octaves above LINEAR covered: up to 2^40 µs (12 days).
const OCTAVES: usize = 30;

pub struct Histogram {
    buckets: Vec<u64>,
    count: u64,
    sum: u128,
    max: u64,
}

fn index(v: u64) -> usize {
    if v < LINEAR {
        return v as usize;
    }
    let octave = 63 - v.leading_zeros(); // >= 10
    let sub = (v >> (octave - SUB_BITS)) as usize & (SUB - 1);
    let i = LINEAR as usize + (octave as usize - 10) * SUB + sub;
    i.min(LINEAR as usize + OCTAVES * SUB - 1)
}

/// Middle of bucket `i`.
fn value(i: usize) -> u64 {
    if i < LINEAR as usize {
        return i as u64;
    }
    let k = i - LINEAR as usize;
    let octave = (k / SUB) as u32 + 10;
    let width = 1u64 << (octave - SUB_BITS);
    (1u64 << octave) + (k % SUB) as u64 * width + width / 2
}

impl Histogram {
    pub fn new() -> Histogram {
        Histogram {
            buckets: vec![0; LINEAR as usize + OCTAVES * SUB],
            count: 0,
            sum: 0,
            max: 0,
        }
    }

    pub fn record(&mut self, v: u64) {
        self.buckets[index(v)] += 1;
        self.count += 1;
        self.sum += u128::from(v);
        self.max = self.max.max(v);
    }

    pub fn mean(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.sum as f64 / self.count as f64
        }
    }

    pub fn max(&self) -> u64 {
        self.max
    }

    /// Smallest recorded value v with at least `q` of the samples <= v
    /// (to bucket precision); 0 when empty.
    pub fn quantile(&self, q: f64) -> u64 {
        if self.count == 0 {
            return 0;
        }
        let rank = ((q.clamp(0.0, 1.0) * self.count as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for (i, &n) in self.buckets.iter().enumerate() {
            seen += n;
            if seen >= rank {
                // The last bucket collects everything beyond the range.
                if i == self.buckets.len() - 1 {
                    return self.max;
                }
                return value(i).min(self.max);
            }
        }
        self.max
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_are_within_one_percent() {
        let mut h = Histogram::new();
        for v in 1..=100_000u64 {
            h.record(v);
        }
        for (q, want) in [(0.5, 50_000.0), (0.99, 99_000.0), (0.01, 1_000.0)] {
            let got = h.quantile(q) as f64;
            assert!((got - want).abs() / want < 0.01, "q{q}: {got}");
        }
        assert_eq!(h.max(), 100_000);
        assert!((h.mean() - 50_000.5).abs() < 1e-6);
        h.record(u64::MAX);
        assert_eq!(h.quantile(1.0), u64::MAX);
    }

    #[test]
    fn small_values_are_exact() {
        let mut h = Histogram::new();
        for v in [3, 3, 7] {
            h.record(v);
        }
        assert_eq!((h.quantile(0.5), h.quantile(0.99)), (3, 7));
        assert_eq!(Histogram::new().quantile(0.5), 0);
    }
}
