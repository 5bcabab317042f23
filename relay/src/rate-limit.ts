// Token bucket: `rate` units per second, bursts up to `burst`.
export class TokenBucket {
  private tokens: number;
  private last: number;

  constructor(
    private readonly rate: number,
    private readonly burst: number,
    now = performance.now(),
  ) {
    this.tokens = burst;
    this.last = now;
  }

  /** True if at least one unit is available (takes nothing). */
  available(now = performance.now()): boolean {
    return Math.min(this.burst, this.tokens + ((now - this.last) / 1000) * this.rate) >= 1;
  }

  /** Take `n` units if available. */
  take(n = 1, now = performance.now()): boolean {
    this.tokens = Math.min(this.burst, this.tokens + ((now - this.last) / 1000) * this.rate);
    this.last = now;
    if (this.tokens < n) return false;
    this.tokens -= n;
    return true;
  }
}

/**
 * Events over a sliding window (two fixed halves, the older one weighted by
 * how much of it the window still covers), so a count decays instead of
 * growing for the life of a session.
 */
export class SlidingWindowCount {
  private current = 0;
  private previous = 0;
  private start: number;

  constructor(
    private readonly windowMs: number,
    now = performance.now(),
  ) {
    this.start = now;
  }

  /** Add `n` events at `now`; returns the estimated count in the window ending now. */
  add(n = 1, now = performance.now()): number {
    this.roll(now);
    this.current += n;
    return this.count(now);
  }

  count(now = performance.now()): number {
    this.roll(now);
    const covered = 1 - (now - this.start) / this.windowMs;
    return this.current + this.previous * Math.max(0, covered);
  }

  private roll(now: number): void {
    const elapsed = now - this.start;
    if (elapsed < this.windowMs) return;
    this.previous = elapsed < 2 * this.windowMs ? this.current : 0;
    this.current = 0;
    this.start = elapsed < 2 * this.windowMs ? this.start + this.windowMs : now;
  }
}
