// Portable impairment: the core's network simulator (via the SDK's wasm)
// applied per session in both directions inside the relay, so a game's own
// browser tests run under loss, latency and bursts with no root and no
// kernel support. Off unless configured; refused in production mode.
import { NETWORK_PROFILES, SimLink, type LinkCounters, type LinkSettings, type NetworkProfileName } from '@ricochet/sdk/simulator';

/** A preset name from the simulator, or explicit settings per direction. */
export type ImpairmentSpec = NetworkProfileName | { up: LinkSettings; down: LinkSettings };

let seedCounter = 1;

/**
 * Throws TypeError unless `spec` is a known preset or settings the simulator
 * accepts (checked by building the links once), so a bad spec is refused
 * where it is given instead of failing in the next session.
 */
export function checkImpairment(spec: unknown): asserts spec is ImpairmentSpec {
  if (typeof spec === 'string') {
    if (!(NETWORK_PROFILES as readonly string[]).includes(spec)) throw new TypeError(`unknown impairment profile ${JSON.stringify(spec.slice(0, 40))}; one of ${NETWORK_PROFILES.join(', ')}`);
    return;
  }
  const o = spec as { up?: unknown; down?: unknown } | null;
  if (typeof o !== 'object' || o === null || typeof o.up !== 'object' || o.up === null || typeof o.down !== 'object' || o.down === null)
    throw new TypeError('impairment must be a profile name or {up, down} link settings');
  try {
    new SessionImpairment(o as ImpairmentSpec, () => {}, () => {}).close();
  } catch (e) {
    throw new TypeError(`invalid impairment settings: ${(e as Error).message}`);
  }
}

/** Two simulated links for one session; datagrams come out when due. */
export class SessionImpairment {
  private readonly up: SimLink;
  private readonly down: SimLink;
  private timers: [NodeJS.Timeout | null, NodeJS.Timeout | null] = [null, null];
  private timerAt: [number, number] = [Infinity, Infinity];
  private closed = false;

  constructor(
    spec: ImpairmentSpec,
    private readonly toBackend: (d: Uint8Array) => void,
    private readonly toClient: (d: Uint8Array) => void,
  ) {
    const seed = seedCounter++;
    if (typeof spec === 'string') {
      this.up = SimLink.fromProfile(spec, true, seed);
      this.down = SimLink.fromProfile(spec, false, seed + 7919);
    } else {
      this.up = SimLink.custom(spec.up, seed);
      this.down = SimLink.custom(spec.down, seed + 7919);
    }
  }

  fromClient(d: Uint8Array): void {
    this.push(0, this.up, d, this.toBackend);
  }

  fromBackend(d: Uint8Array): void {
    this.push(1, this.down, d, this.toClient);
  }

  /** Per-direction counters: what the simulated link did. */
  counters(): { up: LinkCounters; down: LinkCounters } {
    return { up: this.up.counters(), down: this.down.counters() };
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    for (const t of this.timers) if (t) clearTimeout(t);
    this.up.free();
    this.down.free();
  }

  private push(dir: 0 | 1, link: SimLink, d: Uint8Array, out: (d: Uint8Array) => void): void {
    if (this.closed) return;
    link.send(nowUs(), d);
    this.schedule(dir, link, out);
  }

  private schedule(dir: 0 | 1, link: SimLink, out: (d: Uint8Array) => void): void {
    const at = link.nextArrival();
    if (at < 0 || at >= this.timerAt[dir]) return;
    const old = this.timers[dir];
    if (old) clearTimeout(old);
    this.timerAt[dir] = at;
    this.timers[dir] = setTimeout(() => {
      this.timers[dir] = null;
      this.timerAt[dir] = Infinity;
      if (this.closed) return;
      const now = nowUs();
      for (let d = link.deliver(now); d; d = link.deliver(now)) out(d);
      this.schedule(dir, link, out);
    }, Math.max(0, (at - nowUs()) / 1000));
  }
}

function nowUs(): number {
  return performance.now() * 1000;
}
