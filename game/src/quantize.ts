// Quantisation: real values on a fixed grid so they pack into few bits.
// Identical to the Rust crate ricochet-game (wasm/game/src/quantize.rs).

const TAU = 2 * Math.PI;

/**
 * Values in [min, min + step * (2^bits - 1)] on a grid of `step`. With a
 * power-of-two step every grid value is exact, so server and client agree
 * bit for bit.
 */
export class Quantizer {
  constructor(
    /** The smallest value (code 0). */
    readonly min: number,
    /** The grid's spacing. */
    readonly step: number,
    /** Bits per code, 1..32. */
    readonly bits: number,
  ) {
    if (!Number.isInteger(bits) || bits < 1 || bits > 32) throw new RangeError(`Quantizer: bits must be 1..32, not ${bits}`);
    if (!(step > 0) || !Number.isFinite(step) || !Number.isFinite(min)) throw new RangeError('Quantizer: min must be finite and step finite and positive');
  }

  /** The largest code, 2^bits − 1. */
  get maxCode(): number {
    return 2 ** this.bits - 1;
  }

  /** Nearest grid code, clamped to the range (NaN maps to 0). */
  encode(v: number): number {
    const q = Math.round((v - this.min) / this.step);
    if (Number.isNaN(q) || q <= 0) return 0;
    return q >= this.maxCode ? this.maxCode : q;
  }

  /** Largest representable value. */
  get max(): number {
    return this.decode(this.maxCode);
  }

  /** The grid value of `code`. */
  decode(code: number): number {
    return this.min + code * this.step;
  }

  /** `v` moved onto the grid (what a receiver will see). */
  snap(v: number): number {
    return this.decode(this.encode(v));
  }
}

/** An angle in radians as `bits` bits, wrapping. */
export function encodeAngle(radians: number, bits: number): number {
  const steps = 2 ** bits;
  const r = radians % TAU;
  const turns = (r < 0 ? r + TAU : r) / TAU;
  const q = Math.round(turns * steps);
  return Number.isNaN(q) ? 0 : q % steps;
}

/** The angle in radians, in [0, 2π), of a code from {@link encodeAngle}. */
export function decodeAngle(code: number, bits: number): number {
  return code * (TAU / 2 ** bits);
}
