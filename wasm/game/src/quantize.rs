//! Quantisation: real values on a fixed grid, so they pack into few bits.
//! Identical in `game/src/quantize.ts`, so both ends agree bit for bit.

use std::f64::consts::TAU;

/// Values in `[min, min + step * (2^bits - 1)]` on a grid of `step`.
/// With a power-of-two `step` every grid value is exact in f64 and in JS
/// numbers, so server and client agree bit for bit.
#[derive(Clone, Copy, Debug)]
pub struct Quantizer {
    /// The smallest value (code 0).
    pub min: f64,
    /// The grid's spacing (a power of two keeps every grid value exact).
    pub step: f64,
    /// Bits per code, 1..=32.
    pub bits: u32,
}

impl Quantizer {
    /// A grid of `2^bits` values from `min`, `step` apart.
    pub const fn new(min: f64, step: f64, bits: u32) -> Quantizer {
        Quantizer { min, step, bits }
    }

    /// The largest code, `2^bits - 1`.
    pub fn max_code(&self) -> u32 {
        if self.bits >= 32 {
            u32::MAX
        } else {
            (1u32 << self.bits) - 1
        }
    }

    /// Largest representable value.
    pub fn max(&self) -> f64 {
        self.min + self.step * self.max_code() as f64
    }

    /// Nearest grid code, clamped to the range (NaN maps to 0).
    pub fn encode(&self, v: f64) -> u32 {
        let q = ((v - self.min) / self.step).round();
        if q.is_nan() || q <= 0.0 {
            0
        } else if q >= self.max_code() as f64 {
            self.max_code()
        } else {
            q as u32
        }
    }

    /// The grid value of `code`.
    pub fn decode(&self, code: u32) -> f64 {
        self.min + code as f64 * self.step
    }

    /// `v` moved onto the grid (what a receiver will see).
    pub fn snap(&self, v: f64) -> f64 {
        self.decode(self.encode(v))
    }
}

/// An angle in radians as `bits` bits (wrapping, so -π and π share a code).
pub fn encode_angle(radians: f64, bits: u32) -> u32 {
    let steps = (1u64 << bits) as f64;
    let turns = radians.rem_euclid(TAU) / TAU;
    let q = (turns * steps).round();
    if q.is_nan() {
        return 0;
    }
    (q as u64 % (1u64 << bits)) as u32
}

/// The angle in radians (in `[0, 2π)`) of a code from [`encode_angle`].
pub fn decode_angle(code: u32, bits: u32) -> f64 {
    code as f64 * (TAU / (1u64 << bits) as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grid_values_round_trip_exactly() {
        let q = Quantizer::new(0.0, 0.125, 14);
        for v in [0.0, 0.125, 13.5, 1599.875, 2047.875] {
            assert_eq!(q.decode(q.encode(v)), v);
        }
    }

    #[test]
    fn values_outside_the_range_are_clamped() {
        let q = Quantizer::new(0.0, 0.125, 14);
        assert_eq!(q.encode(-5.0), 0);
        assert_eq!(q.encode(1e9), 16383);
        assert_eq!(q.encode(f64::NAN), 0);
    }

    #[test]
    fn values_snap_to_the_nearest_grid_point() {
        let q = Quantizer::new(0.0, 0.125, 14);
        assert_eq!(q.snap(10.06), 10.0);
        assert_eq!(q.snap(10.07), 10.125);
    }

    #[test]
    fn angles_wrap_around_the_circle() {
        assert_eq!(encode_angle(0.0, 8), 0);
        assert_eq!(encode_angle(TAU, 8), 0);
        assert_eq!(encode_angle(-TAU / 4.0, 8), 192);
        assert_eq!(decode_angle(64, 8), TAU / 4.0);
        assert_eq!(encode_angle(f64::NAN, 8), 0);
    }
}
