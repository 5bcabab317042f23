// Prometheus metrics of the relay (served at /metrics).
import { Counter, Gauge, Registry, collectDefaultMetrics } from 'prom-client';

export type TransportName = 'webtransport' | 'websocket';

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

  constructor() {
    collectDefaultMetrics({ register: this.registry });
    for (const t of ['webtransport', 'websocket']) this.sessions.set({ transport: t }, 0);
  }
}
