// Time source and timers for the run loop. Real time by default; tests and
// simulations use VirtualClock so runs are deterministic and need no sleeps.

export interface Clock {
  /** Microseconds from an arbitrary epoch. */
  now(): number;
  /** Call `fn` at time `atUs` (or soon after); returns a cancel function. */
  at(atUs: number, fn: () => void): () => void;
}

export const realClock: Clock = {
  now: () => performance.now() * 1000,
  at(atUs, fn) {
    const delayMs = Math.max(0, (atUs - performance.now() * 1000) / 1000);
    const t = setTimeout(fn, Math.ceil(delayMs));
    return () => clearTimeout(t);
  },
};

interface Pending {
  at: number;
  seq: number;
  fn: () => void;
  cancelled: boolean;
}

/** Manually advanced time: `advance(us)` runs due timers in order. */
export class VirtualClock implements Clock {
  private time = 0;
  private seq = 0;
  private queue: Pending[] = [];

  now(): number {
    return this.time;
  }

  at(atUs: number, fn: () => void): () => void {
    const p: Pending = { at: Math.max(atUs, this.time), seq: this.seq++, fn, cancelled: false };
    this.queue.push(p);
    return () => {
      p.cancelled = true;
    };
  }

  /** Run every timer due within the next `us` microseconds, in time order. */
  advance(us: number): void {
    const end = this.time + us;
    for (;;) {
      this.queue = this.queue.filter((p) => !p.cancelled);
      let next: Pending | undefined;
      for (const p of this.queue) if (!next || p.at < next.at || (p.at === next.at && p.seq < next.seq)) next = p;
      if (!next || next.at > end) break;
      this.time = next.at;
      next.cancelled = true;
      next.fn();
    }
    this.time = end;
  }

  /** Advance in steps until `cond()` holds or `limitUs` passes; returns whether it held. */
  runUntil(cond: () => boolean, limitUs: number, stepUs = 1000): boolean {
    for (let t = 0; t <= limitUs; t += stepUs) {
      if (cond()) return true;
      this.advance(stepUs);
    }
    return cond();
  }
}
