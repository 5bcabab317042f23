// Portable impairment in the relay: sessions pass through the core's
// simulator both ways; the SDK's own loss measurement agrees with what the
// simulated links did.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { Connection, WebSocketTransport } from '@ricochet/sdk';
import { Relay } from '../src/relay.js';
import { mintToken } from '../src/token.js';
import { DEFAULTS } from '../src/options.js';
import { createLogger } from '../src/log.js';
import { echoGame } from './hostile-helpers.js';

const SECRET = randomBytes(32).toString('base64url');
let relay: Relay;
let echo: Awaited<ReturnType<typeof echoGame>>;
let backend: string;

beforeAll(async () => {
  echo = await echoGame();
  backend = echo.backend;
  relay = new Relay({ ...DEFAULTS, httpPort: 0, wtPort: -1, tokenSecret: SECRET, allowBackends: [backend], testControl: true }, createLogger('silent'));
  await relay.start();
});
afterAll(async () => {
  await relay.stop();
  echo.close();
});

describe('relay impairment', () => {
  it('is refused in production mode', () => {
    expect(() => new Relay({ ...DEFAULTS, tokenSecret: SECRET, production: true, testControl: true })).toThrowError(/production/);
    expect(() => new Relay({ ...DEFAULTS, tokenSecret: SECRET, impairment: 'nope' })).toThrowError(/impairment must be one of/);
  });

  it('a session under 5 % loss each way keeps its reliable stream whole and the loss shows up in both counters', async () => {
    const base = relay.addresses().webSocketUrl.replace('ws://', 'http://').replace('/ricochet', '');
    const set = await fetch(`${base}/test/impairment`, { method: 'POST', body: JSON.stringify({ up: { latencyMs: 10, jitterMs: 2, loss: 0.05 }, down: { latencyMs: 10, jitterMs: 2, loss: 0.05 } }) });
    expect(set.status).toBe(200);
    const t = await WebSocketTransport.connect(`${relay.addresses().webSocketUrl}?token=${mintToken(SECRET, { sub: 'lossy', backend })}`, { WebSocket: WebSocket as never });
    const conn = new Connection(t);
    await conn.ready;
    const got: number[] = [];
    conn.on('message', ({ channel, data }) => channel === 0 && got.push(new DataView(data.buffer, data.byteOffset).getUint32(0, true)));
    for (let i = 0; i < 1500; i++) {
      const b = new Uint8Array(100);
      new DataView(b.buffer).setUint32(0, i, true);
      conn.send(0, b);
      if (i % 10 === 9) await new Promise((r) => setTimeout(r, 16));
    }
    const t0 = Date.now();
    while (got.length < 1500 && Date.now() - t0 < 20_000) await new Promise((r) => setTimeout(r, 20));
    expect(got).toEqual([...Array(1500).keys()]);
    const report = (await (await fetch(`${base}/test/impairment`)).json()) as { sessions: { counters: { up: { sent: number; lost: number }; down: { sent: number; lost: number } } }[] };
    const c = report.sessions[0]!.counters;
    const upLoss = c.up.lost / c.up.sent;
    const downLoss = c.down.lost / c.down.sent;
    expect(upLoss).toBeGreaterThan(0.02);
    expect(upLoss).toBeLessThan(0.09);
    const s = conn.stats();
    // The SDK measures what the relay's simulated links did.
    expect(Math.abs(s.lossIn - downLoss)).toBeLessThan(0.03);
    // The sender sees loss only on its ack-eliciting packets (pure ACKs and
    // repair packets are never declared lost): about 160 here, so its
    // estimate is held to three binomial standard deviations of that sample.
    const outSd = Math.sqrt((upLoss * (1 - upLoss)) / s.elicitingPacketsOut);
    expect(Math.abs(s.lossOut - upLoss)).toBeLessThan(3 * outSd + 0.01);
    expect(s.rttMs).toBeGreaterThan(18);
    conn.close();
    await fetch(`${base}/test/impairment`, { method: 'POST', body: JSON.stringify({ off: true }) });
  });
});
