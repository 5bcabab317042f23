// The relay end to end in Node: SDK clients over WebSocket through the relay
// to an SDK game server on UDP, plus every kind of hostile input.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { Connection, RicochetError, Server, WebSocketTransport } from '@ricochet/sdk';
import { Relay } from '../src/relay.js';
import { mintToken } from '../src/token.js';
import { DEFAULTS } from '../src/options.js';
import { createLogger } from '../src/log.js';
import { echoGame, hello, pumpingClient } from './hostile-helpers.js';

const SECRET = randomBytes(32).toString('base64url');
let relay: Relay;
let wsUrl: string;
let echo: Awaited<ReturnType<typeof echoGame>>;
let backend: string;
let game: Server;

beforeAll(async () => {
  echo = await echoGame();
  ({ game, backend } = echo);
  relay = new Relay(
    { ...DEFAULTS, httpPort: 0, wtPort: -1, tokenSecret: SECRET, allowBackends: [backend, '127.0.0.1:9'], handshakeTimeoutMs: 1000 },
    createLogger('silent'),
  );
  const a = await relay.start();
  wsUrl = a.webSocketUrl;
});

afterAll(async () => {
  await relay.stop();
  echo.close();
});

const token = (o: { backend?: string; ttlSeconds?: number } = {}) => mintToken(SECRET, { sub: 'tester', backend: o.backend ?? backend, ttlSeconds: o.ttlSeconds ?? 60 });

/** Raw socket: resolves with the close code and reason the relay sent. */
function rawClose(url: string, send?: (ws: WebSocket) => void): Promise<{ code: number; reason: string }> {
  return new Promise((resolve) => {
    const ws = new WebSocket(url);
    ws.on('open', () => send?.(ws));
    ws.on('close', (code, reason) => resolve({ code, reason: reason.toString() }));
    ws.on('error', () => {});
  });
}

const healthyClient = () => pumpingClient(`${wsUrl}?token=${token()}`);

const waitFor = async (cond: () => boolean, ms = 10_000) => {
  const t0 = Date.now();
  while (!cond() && Date.now() - t0 < ms) await new Promise((r) => setTimeout(r, 10));
  return cond();
};

describe('relay over WebSocket', () => {
  it('forwards a session to the UDP game server and back, in order', async () => {
    const h = await healthyClient();
    await new Promise((r) => setTimeout(r, 500));
    h.stop();
    expect(await waitFor(() => h.got.length === h.sent())).toBe(true);
    expect(h.got).toEqual([...Array(h.sent()).keys()]);
    expect(game.connections()).toContain(h.conn.id);
    h.conn.close();
  });

  it('refuses bad tokens and bad backends with clear reasons while a healthy session carries on', async () => {
    const h = await healthyClient();
    const good = token();
    const held = await WebSocketTransport.connect(`${wsUrl}?token=${good}`, { WebSocket: WebSocket as never });
    // A live token's session could be resumed, so a second socket on it is
    // judged by its first datagram: a HELLO for another connection is refused.
    const sendHello = (ws: WebSocket) => ws.send(hello(0x09090909));
    const cases: [string, RegExp, ((ws: WebSocket) => void)?][] = [
      [`${wsUrl}`, /^RELAY_ERR_TOKEN_MALFORMED/],
      [`${wsUrl}?token=${good.slice(0, -3)}abc`, /^RELAY_ERR_TOKEN_SIGNATURE/],
      // Expired: no new connection (a take-over of a live one, DATA first, is still let through).
      [`${wsUrl}?token=${token({ ttlSeconds: -5 })}`, /^RELAY_ERR_TOKEN_EXPIRED/, sendHello],
      [`${wsUrl}?token=${good}`, /^RELAY_ERR_TOKEN_IN_USE/, sendHello],
      [`${wsUrl}?token=${token({ backend: '127.0.0.1:1' })}`, /^RELAY_ERR_BACKEND_NOT_ALLOWED/],
    ];
    for (const [url, reason, send] of cases) {
      const c = await rawClose(url, send);
      expect(c.reason).toMatch(reason);
      expect(c.code).toBeGreaterThanOrEqual(4000);
    }
    held.close();
    h.stop();
    expect(await waitFor(() => h.got.length === h.sent())).toBe(true);
    expect(h.got).toEqual([...Array(h.sent()).keys()]);
    h.conn.close();
  });

  it("an SDK client reads a refusal as fields it can act on: the relay's code and name, no text to parse", async () => {
    const refusal = async (t: string) => {
      const conn = new Connection(await WebSocketTransport.connect(`${wsUrl}?token=${t}`, { WebSocket: WebSocket as never }));
      const err = (await conn.ready.catch((e: unknown) => e)) as RicochetError;
      return { err, close: conn.closeInfo };
    };
    const expired = await refusal(token({ ttlSeconds: -5 }));
    expect(expired.err).toBeInstanceOf(RicochetError);
    expect(expired.err.relay).toMatchObject({ code: 4401, error: 'RELAY_ERR_TOKEN_EXPIRED' });
    expect(expired.err.reason).toMatch(/RELAY_ERR_TOKEN_EXPIRED: token expired \d+ s ago/);
    expect(expired.close?.relay).toEqual(expired.err.relay);
    const offList = await refusal(token({ backend: '127.0.0.1:1' }));
    expect(offList.err.relay).toMatchObject({ code: 4403, error: 'RELAY_ERR_BACKEND_NOT_ALLOWED' });
    // Nothing a program logs carries the token.
    for (const text of [expired.err.message, expired.err.reason, offList.err.message]) expect(text).not.toMatch(/rct1\./);
  });

  it('closes only the offending session on garbage, text and oversized frames', async () => {
    const h = await healthyClient();
    const garbage = await rawClose(`${wsUrl}?token=${token()}`, (ws) => ws.send(Buffer.from([0xff, 1, 2, 3, 4, 5])));
    expect(garbage.reason).toMatch(/^RELAY_ERR_MALFORMED_DATAGRAM/);
    const text = await rawClose(`${wsUrl}?token=${token()}`, (ws) => ws.send('hello'));
    expect(text.reason).toMatch(/^RELAY_ERR_MALFORMED_DATAGRAM/);
    const big = await rawClose(`${wsUrl}?token=${token()}`, (ws) => ws.send(Buffer.alloc(5000, 1)));
    expect(big.code).toBe(1009); // ws refuses frames over maxPayload
    const silent = await rawClose(`${wsUrl}?token=${token()}`);
    expect(silent.reason).toMatch(/^RELAY_ERR_HANDSHAKE_TIMEOUT/);
    h.stop();
    expect(await waitFor(() => h.got.length === h.sent())).toBe(true);
    expect(h.conn.state).toBe('open');
    h.conn.close();
  });

  it('reports a dead backend', async () => {
    const c = await rawClose(`${wsUrl}?token=${token({ backend: '127.0.0.1:9' })}`, (ws) => ws.send(hello(1)));
    expect(c.reason).toMatch(/^RELAY_ERR_BACKEND_UNREACHABLE/);
  });

  it('survives a burst of a thousand half-open handshakes and returns to zero sessions', async () => {
    const h = await healthyClient();
    const sockets: WebSocket[] = [];
    for (let i = 0; i < 1000; i++) {
      const ws = new WebSocket(`${wsUrl}?token=${token()}`);
      ws.on('error', () => {});
      sockets.push(ws);
    }
    expect(await waitFor(() => sockets.every((s) => s.readyState === WebSocket.CLOSED), 20_000)).toBe(true);
    h.stop();
    expect(await waitFor(() => h.got.length === h.sent())).toBe(true);
    h.conn.close();
    const ok = await waitFor(() => h.got.length === h.sent(), 20_000);
    expect({ ok, got: h.got.length, sent: h.sent(), state: h.conn.state, close: h.conn.closeInfo, stats: h.conn.state === "open" ? h.conn.stats() : null }).toMatchObject({ ok: true });
  });

  it('serves health and Prometheus metrics', async () => {
    const base = wsUrl.replace('ws://', 'http://').replace('/ricochet', '');
    const health = await (await fetch(`${base}/healthz`)).json();
    expect(health).toMatchObject({ status: 'ok' });
    const metrics = await (await fetch(`${base}/metrics`)).text();
    expect(metrics).toMatch(/ricochet_relay_datagrams_total\{direction="to_backend",transport="websocket"\} [1-9]/);
    expect(metrics).toMatch(/ricochet_relay_rejected_total\{code="RELAY_ERR_TOKEN_SIGNATURE"\} [1-9]/);
    expect(metrics).toMatch(/ricochet_relay_sessions\{transport="websocket"\}/);
  });
});

describe('relay drain', () => {
  it('stays up answering 503 for the whole notice even with no session, so balancers see it leave', async () => {
    const r = new Relay({ ...DEFAULTS, httpPort: 0, wtPort: -1, tokenSecret: SECRET, allowBackends: [backend], drainNoticeMs: 400 }, createLogger('silent'));
    const a = await r.start();
    const t0 = Date.now();
    const draining = r.drain();
    await new Promise((res) => setTimeout(res, 200));
    expect((await fetch(a.webSocketUrl.replace('ws://', 'http://').replace('/ricochet', '/healthz'))).status).toBe(503);
    await draining;
    expect(Date.now() - t0).toBeGreaterThanOrEqual(390);
  });


  it('on drain, refuses new sessions and reports draining at once, then tells the rest to move to another relay', async () => {
    const r = new Relay({ ...DEFAULTS, httpPort: 0, wtPort: -1, tokenSecret: SECRET, allowBackends: [backend], drainMs: 3000, drainNoticeMs: 300 }, createLogger('silent'));
    const a = await r.start();
    const t = await WebSocketTransport.connect(`${a.webSocketUrl}?token=${token()}`, { WebSocket: WebSocket as never });
    const conn = new Connection(t);
    await conn.ready;
    const draining = r.drain();
    await new Promise((res) => setTimeout(res, 50));
    const refused = await rawClose(`${a.webSocketUrl}?token=${token()}`);
    // The upgrade completes so the browser can read why it is refused (a failed upgrade shows only 1006).
    expect(refused).toMatchObject({ code: 1001, reason: expect.stringMatching(/^RELAY_SHUTTING_DOWN/) });
    const health = await fetch(a.webSocketUrl.replace('ws://', 'http://').replace('/ricochet', '/healthz'));
    expect(health.status).toBe(503);
    expect(await health.json()).toMatchObject({ status: 'draining' });
    expect(conn.state).toBe('open'); // still served during the notice
    await draining;
    // This client has no `reconnect`, so the move ends it; one with it resumes elsewhere (fleet.test.ts).
    expect(await waitFor(() => conn.state === 'closed')).toBe(true);
    expect(conn.closeInfo?.reason).toMatch(/\(4002: RELAY_SESSION_MOVING: resume through another relay\)/);
  });
});
