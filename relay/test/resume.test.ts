// Resumption through the relay: an SDK client's WebSocket dies under an open
// session, the SDK reconnects with the same token, and the relay binds the
// new socket to the parked session, so the game server (an SDK Server on
// UDP) sees the same peer and nothing is lost. Plus what must be refused.
import { randomBytes } from 'node:crypto';
import { createSocket, type Socket } from 'node:dgram';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { Connection, Server, WebSocketTransport, serveUdp, type ConnectionEvents } from '@ricochet/sdk';
import { Relay } from '../src/relay.js';
import { hello } from './hostile-helpers.js';
import { mintToken } from '../src/token.js';
import { DEFAULTS } from '../src/options.js';
import { createLogger } from '../src/log.js';

const SECRET = randomBytes(32).toString('base64url');
const RESUME_WINDOW_MS = 1_500;
let relay: Relay;
let wsUrl: string;
let backendSock: Socket;
let backend: string;
let game: Server;
/** Source ports the game server saw datagrams from. */
const seenPorts = new Set<number>();
const disconnects: number[] = [];

beforeAll(async () => {
  backendSock = createSocket('udp4');
  await new Promise<void>((r) => backendSock.bind(0, '127.0.0.1', () => r()));
  backend = `127.0.0.1:${backendSock.address().port}`;
  backendSock.on('message', (_m, rinfo) => seenPorts.add(rinfo.port));
  game = new Server();
  serveUdp(game, backendSock);
  game.on('message', ({ id, channel, data }) => game.send(id, channel, data));
  game.on('disconnect', ({ id }) => disconnects.push(id));
  relay = new Relay(
    { ...DEFAULTS, httpPort: 0, wtPort: -1, tokenSecret: SECRET, allowBackends: [backend], handshakeTimeoutMs: 1000, resumeWindowMs: RESUME_WINDOW_MS },
    createLogger('silent'),
  );
  wsUrl = (await relay.start()).webSocketUrl;
});

afterAll(async () => {
  await relay.stop();
  game.shutdown();
  backendSock.close();
});

const token = (ttlSeconds = 60) => mintToken(SECRET, { sub: 'tester', backend, ttlSeconds });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const waitFor = async (cond: () => boolean, ms = 10_000) => {
  const t0 = Date.now();
  while (!cond() && Date.now() - t0 < ms) await sleep(10);
  return cond();
};

/**
 * The relay's view of the one session `start` opens (by ID, not by the
 * relay-wide count: sessions of earlier tests may still be ending).
 */
async function ownSession<T>(start: () => Promise<T>): Promise<{ s: T; relaySession: () => { parked: boolean } | undefined }> {
  const ids = () => relay.impairmentReport().sessions.map((x) => x.id);
  const before = new Set(ids());
  const s = await start();
  const mine = ids().filter((id) => !before.has(id));
  expect(mine).toHaveLength(1);
  return { s, relaySession: () => relay.impairmentReport().sessions.find((x) => x.id === mine[0]) };
}

/** `ws` sockets the SDK opens, so a test can cut one like a network would (no close frame). */
const sockets: WebSocket[] = [];
class TrackedWebSocket extends WebSocket {
  constructor(url: string) {
    super(url);
    sockets.push(this);
  }
}
const connectWs = (t: string) => WebSocketTransport.connect(`${wsUrl}?token=${t}`, { WebSocket: TrackedWebSocket as never });

/** Raw socket: send `bytes` once open; resolves with the relay's close code and reason. */
function rawClose(url: string, bytes?: Uint8Array): Promise<{ code: number; reason: string }> {
  return new Promise((resolve) => {
    const ws = new WebSocket(url);
    ws.on('open', () => bytes && ws.send(bytes));
    ws.on('close', (code, reason) => resolve({ code, reason: reason.toString() }));
    ws.on('error', () => {});
  });
}

/** A Ricochet packet header: type, then the connection ID (little-endian u32), then a few bytes. */
function packet(type: number, connId: number): Uint8Array {
  const b = new Uint8Array(12);
  b[0] = type;
  new DataView(b.buffer).setUint32(1, connId, true);
  return b;
}

/** An echo session that pumps numbered messages on the reliable channel and checks the echoes. */
async function echoSession(t: string) {
  const events: string[] = [];
  let resumed: ConnectionEvents['resumed'] | null = null;
  const conn = new Connection(await connectWs(t), { reconnect: async () => connectWs(t) });
  conn.on('reconnecting', () => events.push('reconnecting'));
  conn.on('resumed', (e) => {
    events.push('resumed');
    resumed = e;
  });
  conn.on('close', (c) => events.push(`close ${c.code}`));
  await conn.ready;
  const got: number[] = [];
  conn.on('message', ({ channel, data }) => channel === 0 && got.push(new DataView(data.buffer, data.byteOffset).getUint32(0, true)));
  let next = 0;
  const pump = setInterval(() => {
    if (conn.state === 'closed') return;
    const b = new Uint8Array(200);
    new DataView(b.buffer).setUint32(0, next++, true);
    conn.send(0, b);
  }, 5);
  return { conn, got, events, sent: () => next, stop: () => clearInterval(pump), resumed: () => resumed };
}

describe('session resumption through the relay', () => {
  it('a client whose socket dies resumes the same session: same backend peer, nothing lost, in order', async () => {
    seenPorts.clear();
    const s = await echoSession(token());
    await sleep(300);
    const before = sockets.length;
    sockets.at(-1)!.terminate(); // the TCP connection dies under the session
    await waitFor(() => s.events.includes('resumed'));
    await sleep(300);
    s.stop();
    expect(await waitFor(() => s.got.length === s.sent())).toBe(true);
    expect(s.got).toEqual([...Array(s.sent()).keys()]);
    expect(s.events).toEqual(['reconnecting', 'resumed']);
    expect(sockets.length).toBe(before + 1);
    expect(s.resumed()!.downtimeMs).toBeLessThan(1_000);
    // The game server saw one peer (the relay's per-session socket) and no disconnect.
    expect(seenPorts.size).toBe(1);
    expect(game.connections()).toContain(s.conn.id);
    expect(disconnects).not.toContain(s.conn.id);
    const metrics = await (await fetch(wsUrl.replace('ws://', 'http://').replace('/ricochet', '/metrics'))).text();
    expect(metrics).toMatch(/ricochet_relay_resumes_total\{transport="websocket"\} [1-9]/);
    s.conn.close();
  });

  it('killTransports cuts every client transport; each session resumes on its own', async () => {
    const a = await echoSession(token());
    const b = await echoSession(token());
    await sleep(200);
    expect(relay.killTransports()).toBe(2);
    expect(await waitFor(() => a.events.includes('resumed') && b.events.includes('resumed'))).toBe(true);
    a.stop();
    b.stop();
    for (const s of [a, b]) {
      expect(await waitFor(() => s.got.length === s.sent())).toBe(true);
      expect(s.got).toEqual([...Array(s.sent()).keys()]);
      s.conn.close();
    }
    // The HTTP control is off unless testControl is set.
    const base = wsUrl.replace('ws://', 'http://').replace('/ricochet', '');
    expect((await fetch(`${base}/test/kill-transports`, { method: 'POST' })).status).toBe(404);
  });

  it('resumes with the session token even after it expired, while the session lives', async () => {
    // Minted just after a second starts: good for just under 2 s (token times are whole seconds).
    await sleep(1_010 - (Date.now() % 1_000));
    const t = token(2);
    const expiresAt = (Math.floor(Date.now() / 1_000) + 2) * 1_000;
    const s = await echoSession(t);
    await sleep(Math.max(0, expiresAt - Date.now()) + 300); // the token is now expired; the session is not
    // An expired token opens no new connection (it could still carry a live one over: fleet.test.ts).
    expect((await rawClose(`${wsUrl}?token=${token(-1)}`, hello(0x0a0b0c0d))).reason).toMatch(/^RELAY_ERR_TOKEN_EXPIRED/);
    sockets.at(-1)!.terminate();
    expect(await waitFor(() => s.events.includes('resumed'))).toBe(true);
    s.stop();
    expect(await waitFor(() => s.got.length === s.sent())).toBe(true);
    expect(s.got).toEqual([...Array(s.sent()).keys()]);
    s.conn.close();
  });

  it('a resume must present the session connection ID and prove its session key, and a new session must start with HELLO', async () => {
    const t = token();
    const s = await echoSession(t);
    // Same token, another connection ID: a second connection, not a resume.
    const other = await rawClose(`${wsUrl}?token=${t}`, packet(4, (s.conn.id ^ 1) >>> 0));
    expect(other).toMatchObject({ code: 4409 });
    expect(other.reason).toMatch(/^RELAY_ERR_TOKEN_IN_USE/);
    // The token and the connection ID without the session key: a DATA packet whose tag does not verify.
    const forged = await rawClose(`${wsUrl}?token=${t}`, packet(4, s.conn.id));
    expect(forged.code).toBe(4410);
    expect(forged.reason).toMatch(/^RELAY_ERR_RESUME_FAILED: the first datagram does not prove the session key/);
    // Another valid token cannot adopt this session's connection ID by sending DATA first.
    const hijack = await rawClose(`${wsUrl}?token=${token()}`, packet(4, s.conn.id));
    expect(hijack.code).toBe(4410);
    expect(hijack.reason).toMatch(/^RELAY_ERR_RESUME_FAILED/);
    s.stop();
    expect(await waitFor(() => s.got.length === s.sent())).toBe(true);
    expect(s.events).toEqual([]);
    s.conn.close();
  });

  it('a socket the client closes on purpose ends its session at once, nothing parked', async () => {
    const { s, relaySession: session } = await ownSession(() => echoSession(token()));
    s.stop();
    s.conn.close();
    // Judged by state, not by a deadline (CI machines stall): a parked session
    // stays visible as parked for the whole resume window, so polling every
    // 10 ms until the session is gone must never see it parked.
    let sawParked = false;
    const gone = await waitFor(() => {
      sawParked ||= session()?.parked === true;
      return session() === undefined;
    });
    expect(gone).toBe(true);
    expect(sawParked).toBe(false);
  });

  it('a token is single use: a new connection on the token of a parked session is refused and the parked session stays', async () => {
    const t = token();
    const first = await echoSession(t);
    const conn = first.conn as unknown as { resume: { reconnect: () => Promise<unknown> } };
    conn.resume.reconnect = () => new Promise(() => {}); // this client never comes back
    sockets.at(-1)!.terminate();
    expect(await waitFor(() => relay.impairmentReport().sessions.some((x) => x.parked))).toBe(true);
    // Same token, a fresh connection (HELLO, new ID): a replay of a spent token.
    const refused = await rawClose(`${wsUrl}?token=${t}`, hello(0x07070707));
    expect(refused.code).toBe(4409);
    expect(refused.reason).toMatch(/^RELAY_ERR_TOKEN_REUSED/);
    expect(relay.impairmentReport().sessions.some((x) => x.parked)).toBe(true);
    first.stop();
    first.conn.close();
  });

  it('a session parked longer than resumeWindowMs ends at the relay; the late client takes its connection over on a new backend socket', async () => {
    seenPorts.clear();
    const { s, relaySession } = await ownSession(() => echoSession(token()));
    // Cut the socket and keep the client from reconnecting until the window has passed.
    const conn = s.conn as unknown as { resume: { reconnect: () => Promise<unknown> } };
    const open = conn.resume.reconnect;
    conn.resume.reconnect = async () => {
      await sleep(RESUME_WINDOW_MS + 500);
      return open();
    };
    sockets.at(-1)!.terminate();
    expect(await waitFor(() => relaySession() === undefined)).toBe(true);
    // The game server still holds the connection: it moves it to the new socket once the tag verifies.
    expect(await waitFor(() => s.events.includes('resumed'), 5_000)).toBe(true);
    s.stop();
    expect(await waitFor(() => s.got.length === s.sent())).toBe(true);
    expect(s.got).toEqual([...Array(s.sent()).keys()]);
    expect(seenPorts.size).toBe(2);
    expect(disconnects).not.toContain(s.conn.id);
    s.conn.close();
  });

  it('a take-over of a connection the game server does not hold is refused once the server stays silent', async () => {
    const t0 = Date.now();
    const refused = await rawClose(`${wsUrl}?token=${token()}`, packet(4, 0x5eed0001));
    expect(refused.code).toBe(4410);
    expect(refused.reason).toBe('RELAY_ERR_RESUME_FAILED: the game server does not know this session');
    // Refused at the handshake deadline (1 000 ms here), not at once and not at the idle timeout.
    expect(Date.now() - t0).toBeGreaterThanOrEqual(900);
  });
});
