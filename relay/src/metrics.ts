// Prometheus metrics of the relay (served at /metrics).
import { Counter, Gauge, Registry, collectDefaultMetrics } from 'prom-client';

export type TransportName = 'webtransport' | 'websocket';
export type Direction = 'to_backend' | 'to_client';

/** The datagram and byte counters of one direction and transport. */
export interface Forwarded {
  datagrams: Counter.Internal;
  bytes: Counter.Internal;
}

export class RelayMetrics {
  readonly registry = new Registry();
  readonly sessions = new Gauge({ name: 'ricochet_relay_sessions', help: 'Live sessions by transport', labelNames: ['transport'], registers: [this.registry] });
  readonly datagrams = new Counter({
    name: 'ricochet_relay_datagrams_total',
    help: 'Datagrams forwarded, by direction (to_backend, to_client) and transport',
    labelNames: ['direction', 'transport'],
    registers: [this.registry],
  });
  readonly bytes = new Counter({ name: 'ricochet_relay_bytes_total', help: 'Bytes forwarded, by direction and transport', labelNames: ['direction', 'transport'], registers: [this.registry] });
  readonly drops = new Counter({ name: 'ricochet_relay_drops_total', help: 'Datagrams dropped, by reason', labelNames: ['reason'], registers: [this.registry] });
  readonly resumes = new Counter({ name: 'ricochet_relay_resumes_total', help: 'Sessions resumed on a new client transport, by that transport', labelNames: ['transport'], registers: [this.registry] });
  readonly rejected = new Counter({ name: 'ricochet_relay_rejected_total', help: 'Sessions refused or closed for cause, by code', labelNames: ['code'], registers: [this.registry] });

  private readonly bound: Record<Direction, Record<TransportName, Forwarded>>;
  private cached: { at: number; text: Promise<string> } | null = null;

  constructor() {
    collectDefaultMetrics({ register: this.registry });
    for (const t of ['webtransport', 'websocket']) this.sessions.set({ transport: t }, 0);
    const bind = (direction: Direction, transport: TransportName): Forwarded => ({
      datagrams: this.datagrams.labels({ direction, transport }),
      bytes: this.bytes.labels({ direction, transport }),
    });
    const both = (direction: Direction) => ({ webtransport: bind(direction, 'webtransport'), websocket: bind(direction, 'websocket') });
    this.bound = { to_backend: both('to_backend'), to_client: both('to_client') };
  }

  /**
   * The counters for one direction and transport with their labels bound:
   * the per-datagram path then skips prom-client's label hashing.
   */
  forwarded(direction: Direction, transport: TransportName): Forwarded {
    return this.bound[direction][transport];
  }

  /**
   * The text exposition, rendered at most once per `maxAgeMs` and shared by
   * every request in between: scrapes, however many and however pipelined,
   * cost one render a second, not one each.
   */
  exposition(maxAgeMs = 1000, now = performance.now()): Promise<string> {
    if (!this.cached || now - this.cached.at >= maxAgeMs) {
      const text = this.registry.metrics();
      this.cached = { at: now, text };
      // A failed render is not cached.
      text.catch(() => {
        if (this.cached?.text === text) this.cached = null;
      });
    }
    return this.cached.text;
  }
}
