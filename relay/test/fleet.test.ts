// Relays share nothing but the token secret, yet a session outlives its
// relay: when one dies or drains, the client reconnects (here: straight to
// another relay; in a fleet: through the balancer) with the same token, the
// new relay opens its own backend socket, and the game server (an SDK Server
// that checks relay attestations) moves the connection only once the tag
// proves the session key. Same connection, same claims, nothing lost.
import { randomBytes } from 'node:crypto';
import { createSocket, type Socket } from 'node:dgram';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { Connection, Server, WebSocketTransport, connectRelay, serveUdp } from '@ricochet/sdk';
import { Relay } from '../src/relay.js';
import { hello } from './hostile-helpers.js';
import { mintToken } from '../src/token.js';
import { DEFAULTS, type RelayOptions } from '../src/options.js';
import { createLogger } from '../src/log.js';

const SECRET = randomBytes(32).toString('base64url');
let backendSock: Socket;
let backend: string;
let game: Server;
const disconnects: number[] = [];
/** Relays a test started, stopped after it. */
let relays: Relay[] = [];

/** The game server: echoes every message back on its channel. */
function startGame(sock: Socket): Server {
  const g = new Server({ relaySecret: SECRET });
  serveUdp(g, sock);
  g.on('message', ({ id, channel, data }) => g.send(id, channel, data));
  g.on('disconnect', ({ id }) => disconnects.push(id));
  return g;
}

beforeAll(async () => {
  backendSock = createSocket('udp4');
  await new Promise<void>((r) => backendSock.bind(0, '127.0.0.1', () => r()));
  backend = `127.0.0.1:${backendSock.address().port}`;
  game = startGame(backendSock);
});

afterEach(async () => {
  await Promise.all(relays.map((r) => r.stop()));
  relays = [];
});

afterAll(() => {
  game.shutdown();
  backendSock.close();
});

async function startRelay(o: Partial<RelayOptions> = {}): Promise<{ relay: Relay; wsUrl: string }> {
  const relay = new Relay(
    { ...DEFAULTS, httpPort: 0, wtPort: -1, tokenSecret: SECRET, allowBackends: [backend], handshakeTimeoutMs: 1000, ...o },
    createLogger('silent'),
  );
  relays.push(relay);
  return { relay, wsUrl: (await relay.start()).webSocketUrl };
}

const token = (ttlSeconds = 60) => mintToken(SECRET, { sub: 'fleet-player', data: 'room=3', backend, ttlSeconds });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const waitFor = async (cond: () => boolean, ms = 10_000) => {
  const t0 = Date.now();
  while (!cond() && Date.now() - t0 < ms) await sleep(10);
  return cond();
};
const connectWs = (url: string, t: string) => WebSocketTransport.connect(`${url}?token=${t}`, { WebSocket: WebSocket as never });

/** Raw socket: send `bytes` once open; resolves with the relay's close code and reason. */
function rawClose(url: string, bytes: Uint8Array): Promise<{ code: number; reason: string }> {
  return new Promise((resolve) => {
    const ws = new WebSocket(url);
    ws.on('open', () => ws.send(bytes));
    ws.on('close', (code, reason) => resolve({ code, reason: reason.toString() }));
    ws.on('error', () => {});
  });
}

/** A DATA packet for `connId` whose tag proves nothing. */
function forgedData(connId: number): Uint8Array {
  const b = new Uint8Array(40);
  b[0] = 4;
  new DataView(b.buffer).setUint32(1, connId, true);
  return b;
}

/**
 * A client on `firstUrl` that resumes on `nextUrl()` (a balancer would
 * choose), pumping numbered reliable messages and checking their echoes.
 */
async function player(firstUrl: string, nextUrl: () => string, t = token()) {
  const events: string[] = [];
  const conn = new Connection(await connectWs(firstUrl, t), { reconnect: async () => connectWs(nextUrl(), t), silenceTimeoutMs: 1000 });
  conn.on('reconnecting', ({ reason }) => events.push(`reconnecting ${reason}`));
  conn.on('resumed', () => events.push('resumed'));
  await conn.ready;
  const got: number[] = [];
  conn.on('message', ({ channel, data }) => channel === 0 && got.push(new DataView(data.buffer, data.byteOffset).getUint32(0, true)));
  let next = 0;
  const pump = setInterval(() => {
    if (conn.state === 'closed') return;
    const b = new Uint8Array(120);
    new DataView(b.buffer).setUint32(0, next++, true);
    conn.send(0, b);
  }, 5);
  return {
    conn,
    events,
    resumed: () => events.includes('resumed'),
    /** Stop sending; true once every message sent came back, each once, in order. */
    async finish(): Promise<boolean> {
      clearInterval(pump);
      await waitFor(() => got.length >= next);
      return got.length === next && got.every((v, i) => v === i);
    },
  };
}

describe('a session outlives its relay', () => {
  it('continues through another relay when its relay dies: same connection and claims, nothing lost, in order', async () => {
    const a = await startRelay();
    const b = await startRelay();
    const p = await player(a.wsUrl, () => b.wsUrl);
    await sleep(200);
    const id = p.conn.id;
    expect(game.claims(id)).toEqual({ sub: 'fleet-player', data: 'room=3' });
    // The relay dies as a process would: links cut with no close, backend sockets gone.
    a.relay.killTransports();
    await a.relay.stop();
    expect(await waitFor(p.resumed)).toBe(true);
    await sleep(200);
    expect(await p.finish()).toBe(true);
    expect(game.connections()).toContain(id);
    expect(game.claims(id)).toEqual({ sub: 'fleet-player', data: 'room=3' });
    expect(disconnects).not.toContain(id);
    expect(b.relay.sessionCount).toBe(1);
    const metrics = await b.relay.metrics.exposition();
    expect(metrics).toMatch(/ricochet_relay_resumes_total\{transport="websocket"\} 1/);
    p.conn.close();
  });

  it('a draining relay tells every client to move, and each resumes through another relay at once', async () => {
    const a = await startRelay({ drainMs: 5000 });
    const b = await startRelay();
    const players = await Promise.all([1, 2, 3].map(() => player(a.wsUrl, () => b.wsUrl)));
    await sleep(200);
    await a.relay.drain();
    for (const p of players) expect(await waitFor(p.resumed)).toBe(true);
    await sleep(200);
    for (const p of players) {
      expect(await p.finish()).toBe(true);
      // Told to move (4002), not a silent death: no silence timeout was needed.
      expect(p.events[0]).toMatch(/^reconnecting .*RELAY_SESSION_MOVING/);
      expect(disconnects).not.toContain(p.conn.id);
      p.conn.close();
    }
    expect(b.relay.sessionCount).toBe(3);
  });

  it('a token past its expiry still carries its session to another relay, but opens no new connection there', async () => {
    const a = await startRelay();
    const b = await startRelay();
    // Token times are whole seconds: minted just after a second starts, a
    // 2-second token is good for just under 2 s (a 1-second one minted at
    // x.99 s was good for 10 ms, and the first connect could find it expired).
    await sleep(1_010 - (Date.now() % 1_000));
    const t = token(2);
    const expiresAt = (Math.floor(Date.now() / 1_000) + 2) * 1_000;
    const p = await player(a.wsUrl, () => b.wsUrl, t);
    await sleep(Math.max(0, expiresAt - Date.now()) + 300);
    a.relay.killTransports();
    await a.relay.stop();
    expect(await waitFor(p.resumed)).toBe(true);
    expect(await p.finish()).toBe(true);
    const fresh = await rawClose(`${b.wsUrl}?token=${t}`, hello(0x0c0c0c0c));
    expect(fresh.code).toBe(4401);
    expect(fresh.reason).toMatch(/^RELAY_ERR_TOKEN_EXPIRED/);
    p.conn.close();
  });

  it('connectRelay: one line from a base URL and a token; each reconnect asks the relay afresh', async () => {
    const a = await startRelay();
    const base = a.wsUrl.replace('ws://', 'http://').replace('/ricochet', '');
    const asked: string[] = [];
    const conn = await connectRelay(base, token(), {
      transport: { WebSocket: WebSocket as never },
      silenceTimeoutMs: 1000,
      fetch: async (url: string) => {
        asked.push(new URL(url).pathname);
        return fetch(url);
      },
    });
    expect(conn.state).toBe('open');
    expect(conn.transport.kind).toBe('websocket'); // Node has no WebTransport; /cert-hash says this relay serves none either
    const resumed = new Promise((r) => conn.once('resumed', r));
    a.relay.killTransports();
    await resumed;
    expect(asked).toEqual(['/cert-hash', '/cert-hash']);
    const echoed = new Promise<number>((r) => conn.once('message', (m) => r(m.data.length)));
    conn.send(0, new Uint8Array(7));
    expect(await echoed).toBe(7);
    conn.close();
    await expect(connectRelay('ftp://x', 't')).rejects.toMatchObject({ code: 'RICOCHET_ERR_INVALID_OPTIONS' });
  });

  it('a token too long expired is refused outright', async () => {
    const b = await startRelay({ resumeTokenMaxAgeSeconds: 1 });
    const old = mintToken(SECRET, { sub: 'fleet-player', backend, ttlSeconds: -5 });
    const refused = await rawClose(`${b.wsUrl}?token=${old}`, forgedData(0x0d0d0d0d));
    expect(refused.code).toBe(4401);
    expect(refused.reason).toMatch(/^RELAY_ERR_TOKEN_EXPIRED/);
  });

  it('a forged take-over moves nothing: another token and the ID without the key are refused, the owner carries on', async () => {
    const a = await startRelay();
    const b = await startRelay();
    const victim = await player(a.wsUrl, () => a.wsUrl);
    await sleep(100);
    const forged = await rawClose(`${b.wsUrl}?token=${token()}`, forgedData(victim.conn.id));
    expect(forged).toEqual({ code: 4410, reason: 'RELAY_ERR_RESUME_FAILED: the game server does not know this session' });
    await sleep(100);
    expect(await victim.finish()).toBe(true);
    expect(victim.events).toEqual([]);
    expect(b.relay.sessionCount).toBe(0);
    victim.conn.close();
  });

  it.each([
    ['through another relay', false],
    ['on the same relay', true],
  ])('a game server that lost its sessions (restarted) ends a client resuming %s with RESUME_FAILED and why', async (_, sameRelay) => {
    // A game server of its own, so the restart touches no other test.
    let sock = createSocket('udp4');
    await new Promise<void>((r) => sock.bind(0, '127.0.0.1', () => r()));
    const port = sock.address().port;
    const own = `127.0.0.1:${port}`;
    let g = startGame(sock);
    const a = await startRelay({ allowBackends: [own] });
    const b = await startRelay({ allowBackends: [own] });
    const p = await player(a.wsUrl, () => (sameRelay ? a.wsUrl : b.wsUrl), mintToken(SECRET, { sub: 'fleet-player', backend: own, ttlSeconds: 60 }));
    await sleep(100);
    // Crash and restart: no CLOSE reaches anyone; the new process knows no session.
    sock.close();
    g.shutdown(); // its CLOSEs have no socket to leave by

    sock = createSocket('udp4');
    await new Promise<void>((r) => sock.bind(port, '127.0.0.1', () => r()));
    g = startGame(sock);
    // Silence (1 s here) and the relay's wait for the game server (1 s), not the 10 s resume window.
    expect(await waitFor(() => p.conn.state === 'closed', 6_000)).toBe(true);
    expect(p.conn.closeInfo?.code).toBe('RICOCHET_ERR_RESUME_FAILED');
    expect(p.conn.closeInfo?.reason).toMatch(/the game server does not know this session/);
    g.shutdown();
    sock.close();
  });
});
