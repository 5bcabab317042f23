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
    return timeout(fn, (atUs - performance.now() * 1000) / 1000);
  },
};

// Browsers hold a setTimeout to at least 4 ms once timers nest five deep
// (HTML's timer nesting level), and a game's tick (setInterval, or a loop
// awaiting a setTimeout) runs that deep: a 1 ms pacing or resend timer armed
// from it fired 3 ms late (Chromium 156, Firefox 153). A timer armed from a
// message task starts at level 0, so in a browser each one is armed after a
// MessageChannel hop (tens of µs, the time it took deducted). Side effect:
// the SDK's timers are never a nested chain, the kind Chromium's intensive
// throttling of long-hidden tabs (one wake-up a minute) applies to; they
// keep the ordinary hidden-tab rate (one a second).
// Node (also under a DOM shim: its ports hold the process open) and Deno keep
// plain setTimeout; Node has no such clamp.
const clamps =
  (typeof document !== 'undefined' || typeof (globalThis as { importScripts?: unknown }).importScripts === 'function') &&
  typeof MessageChannel !== 'undefined' &&
  (globalThis as { process?: { versions?: { node?: string } } }).process?.versions?.node === undefined;
let port: MessagePort | null = null;
let hopped: (() => void)[] = [];

/** Runs `arm` in a message task: one message for all arms queued before it runs. */
function hop(arm: () => void): void {
  if (port === null) {
    const channel = new MessageChannel();
    channel.port1.onmessage = () => {
      const arms = hopped;
      hopped = [];
      for (const a of arms) a(); // each only calls setTimeout: nothing here throws
    };
    port = channel.port2;
  }
  if (hopped.push(arm) === 1) port.postMessage(0);
}

/**
 * Calls `fn` after `delayMs` (whole milliseconds, rounded up; a timer task
 * either way), free of the browsers' nesting clamp. Returns a cancel function.
 */
export function timeout(fn: () => void, delayMs: number): () => void {
  if (!clamps) {
    const t = setTimeout(fn, Math.ceil(Math.max(0, delayMs)));
    return () => clearTimeout(t);
  }
  const due = performance.now() + delayMs;
  let live = true;
  let t: ReturnType<typeof setTimeout> | undefined;
  hop(() => {
    if (live) t = setTimeout(() => live && fn(), Math.ceil(Math.max(0, due - performance.now())));
  });
  return () => {
    live = false;
    if (t !== undefined) clearTimeout(t);
  };
}

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
