// WebTransportTransport against fake WebTransport sessions (real streams, an
// in-process Server behind them): datagrams go out through
// `datagrams.writable` when it exists and `datagrams.createWritable()`
// otherwise (Safari 26.4); a session that stalls (writes never complete, or
// nothing arrives) moves the connection to WebSocket through resumption, and
// `openTransport` keeps off the stalled WebTransport afterwards.
import { afterEach, describe, expect, it } from 'vitest';
import { Connection, type ConnectionEvents } from '../src/connection.js';
import { RicochetError } from '../src/errors.js';
import { openTransport } from '../src/select.js';
import { Server } from '../src/server.js';
import type { WebSocketLike } from '../src/websocket.js';
import { forgetWebTransportStalls, WebTransportTransport } from '../src/webtransport.js';
import { check, payload } from './payload.js';

const WT_URL = 'https://relay.test:4433/ricochet?token=abc';
const WS_URL = 'wss://relay.test/ricochet?token=abc';

interface FakeConfig {
  /** Offer the legacy `datagrams.writable`. */
  writable?: boolean;
  /** Offer `datagrams.createWritable()`. */
  createWritable?: boolean;
  /** Writes after this many never complete (the sink's promise never settles). */
  stallWritesAfter?: number;
  /** Incoming datagrams after this many are swallowed. */
  stallReadsAfter?: number;
  /** Writes complete only when the test calls `release()`. */
  held?: (() => void)[];
  /** Offer `incomingUnidirectionalStreams`; the test pushes streams through the session's `uni`. */
  uni?: boolean;
}

interface FakeSession {
  url: string;
  writes: number;
  reads: number;
  createWritableCalls: unknown[];
  closeCalls: unknown[];
  /** With `uni`: hands the page an incoming unidirectional stream. */
  uni?: ReadableStreamDefaultController<ReadableStream<Uint8Array>>;
  /** Ends the session underneath: `closed` rejects with `error`. */
  fail: (error: unknown) => void;
}

const cleanup: (() => void)[] = [];
afterEach(() => {
  cleanup.splice(0).reverse().forEach((f) => f());
  forgetWebTransportStalls();
  delete (globalThis as { WebTransport?: unknown }).WebTransport;
});

/** An echo server for every fake session and socket. */
function echoServer(): Server {
  const server = new Server();
  server.on('message', ({ id, channel, data }) => server.send(id, channel, data));
  cleanup.push(() => server.shutdown());
  return server;
}

/** Installs a fake `globalThis.WebTransport` whose sessions reach `server`. */
function installFakeWebTransport(server: Server, cfg: FakeConfig): FakeSession[] {
  const sessions: FakeSession[] = [];
  class FakeWebTransport {
    readonly ready = Promise.resolve();
    readonly closed: Promise<unknown>;
    readonly datagrams: Record<string, unknown>;
    private readonly s: FakeSession;
    private resolveClosed!: (info: unknown) => void;
    constructor(url: string) {
      let rejectClosed!: (e: unknown) => void;
      const s: FakeSession = { url, writes: 0, reads: 0, createWritableCalls: [], closeCalls: [], fail: (e) => rejectClosed(e) };
      this.s = s;
      sessions.push(s);
      this.closed = new Promise((r, j) => {
        this.resolveClosed = r;
        rejectClosed = j;
      });
      if (cfg.uni) (this as Record<string, unknown>).incomingUnidirectionalStreams = new ReadableStream({ start: (c) => void (s.uni = c) });
      let ctrl!: ReadableStreamDefaultController<Uint8Array>;
      const readable = new ReadableStream<Uint8Array>({ start: (c) => void (ctrl = c) });
      const peer = {
        send: (d: Uint8Array) => {
          s.reads++;
          if (cfg.stallReadsAfter !== undefined && s.reads > cfg.stallReadsAfter) return;
          ctrl.enqueue(d.slice());
        },
      };
      const sink: UnderlyingSink<Uint8Array> = {
        write: (d) => {
          s.writes++;
          if (cfg.stallWritesAfter !== undefined && s.writes > cfg.stallWritesAfter) return new Promise<void>(() => {});
          server.handleDatagram(d, peer);
          return cfg.held ? new Promise<void>((r) => cfg.held!.push(r)) : undefined;
        },
      };
      this.datagrams = { maxDatagramSize: 1200, incomingHighWaterMark: 1, outgoingHighWaterMark: 1, readable };
      if (cfg.writable) this.datagrams.writable = new WritableStream(sink);
      if (cfg.createWritable) {
        this.datagrams.createWritable = (options?: unknown) => {
          s.createWritableCalls.push(options);
          return new WritableStream(sink);
        };
      }
    }
    close(info?: unknown): void {
      this.s.closeCalls.push(info);
      this.resolveClosed(info);
    }
  }
  (globalThis as { WebTransport?: unknown }).WebTransport = FakeWebTransport;
  return sessions;
}

/** A WebSocket constructor whose sockets open at once and reach `server`. */
function fakeWebSocket(server: Server) {
  const opened: string[] = [];
  const Ctor = class implements WebSocketLike {
    binaryType = 'arraybuffer';
    readyState = 1;
    bufferedAmount = 0;
    onopen: ((e: unknown) => void) | null = null;
    onmessage: ((e: { data: unknown }) => void) | null = null;
    onclose: ((e: { code?: number; reason?: string }) => void) | null = null;
    onerror: ((e: unknown) => void) | null = null;
    private readonly peer = { send: (d: Uint8Array) => {
      const copy = d.slice();
      queueMicrotask(() => this.readyState === 1 && this.onmessage?.({ data: copy.buffer }));
    } };
    constructor(url: string) {
      opened.push(url);
      queueMicrotask(() => this.onopen?.({}));
    }
    send(d: Uint8Array) {
      server.handleDatagram(d, this.peer);
    }
    close() {
      this.readyState = 3;
    }
  };
  return { Ctor, opened };
}

const waitFor = async (cond: () => boolean, ms: number): Promise<boolean> => {
  const end = performance.now() + ms;
  while (!cond() && performance.now() < end) await new Promise((r) => setTimeout(r, 5));
  return cond();
};

function record(conn: Connection) {
  const events: { type: string; e: unknown }[] = [];
  for (const type of ['reconnecting', 'resumed', 'close'] as const) conn.on(type, (e: ConnectionEvents[typeof type]) => events.push({ type, e }));
  const echoed: number[] = [];
  conn.on('message', (m) => m.channel === 0 && echoed.push(check(m.data)));
  return { events, echoed };
}

/** Send `n` reliable messages, `perTick` every 5 ms; `at(i)` runs before message i. */
async function stream(conn: Connection, n: number, perTick: number, at?: (i: number) => void) {
  for (let i = 0; i < n; i++) {
    at?.(i);
    conn.send(0, payload(i, 200));
    if (i % perTick === perTick - 1) await new Promise((r) => setTimeout(r, 5));
  }
}

describe('WebTransport datagram writer', () => {
  for (const [name, cfg, want] of [
    ['datagrams.writable present (Chromium, Firefox)', { writable: true, createWritable: true }, 'writable'],
    ['datagrams.writable absent (Safari 26.4): createWritable()', { createWritable: true }, 'createWritable'],
  ] as const) {
    it(`${name}: uses ${want}; pacing and counters as before`, async () => {
      const server = echoServer();
      const sessions = installFakeWebTransport(server, cfg);
      const t = await WebTransportTransport.connect(WT_URL, { burst: 8, datagramsPerMs: 1 });
      expect(t.datagramWriter).toBe(want);
      expect(sessions[0]!.createWritableCalls.length).toBe(want === 'createWritable' ? 1 : 0);
      const conn = new Connection(t, { channels: ['reliable-ordered'] });
      cleanup.push(() => conn.close());
      const { echoed } = record(conn);
      await conn.ready;
      await stream(conn, 300, 30);
      expect(await waitFor(() => echoed.length === 300, 10_000)).toBe(true);
      expect(echoed).toEqual([...Array(300).keys()]);
      // The same size rule and pacing queue on either writer.
      t.send(new Uint8Array(t.maxDatagramSize + 1));
      expect(t.oversized).toBe(1);
      for (let i = 0; i < 600; i++) t.send(new Uint8Array(10));
      expect(t.dropped).toBeGreaterThan(0);
      expect(t.canSend()).toBe(false);
      expect(await waitFor(() => t.canSend(), 5_000)).toBe(true);
      expect(t.stalled).toBeNull();
    });
  }

  it('neither writable nor createWritable: the transport is unavailable, openTransport falls back to WebSocket', async () => {
    const server = echoServer();
    const sessions = installFakeWebTransport(server, {});
    const err = await WebTransportTransport.connect(WT_URL).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RicochetError);
    expect((err as RicochetError).code).toBe('RICOCHET_ERR_TRANSPORT_UNAVAILABLE');
    expect(sessions[0]!.closeCalls.length).toBe(1);
    const ws = fakeWebSocket(server);
    const choice = await openTransport({ webTransportUrl: WT_URL, webSocketUrl: WS_URL, WebSocket: ws.Ctor });
    expect(choice.kind).toBe('websocket');
    expect(choice.fallbackReason).toMatch(/createWritable/);
    choice.transport.close();
  });
});

describe('a stalled WebTransport session', () => {
  async function stalledSession(cfg: FakeConfig, opts: { stallTimeoutMs?: number; silenceTimeoutMs?: number }) {
    const server = echoServer();
    const sessions = installFakeWebTransport(server, cfg);
    const ws = fakeWebSocket(server);
    const kinds: string[] = [];
    const reasons: (string | undefined)[] = [];
    const transportOptions = {
      webTransportUrl: WT_URL,
      webSocketUrl: WS_URL,
      WebSocket: ws.Ctor,
      ...(opts.stallTimeoutMs !== undefined ? { stallTimeoutMs: opts.stallTimeoutMs } : {}),
    };
    const first = await openTransport(transportOptions);
    expect(first.kind).toBe('webtransport');
    const conn = new Connection(first.transport, {
      channels: ['reliable-ordered'],
      ...(opts.silenceTimeoutMs !== undefined ? { silenceTimeoutMs: opts.silenceTimeoutMs } : {}),
      reconnect: async () => {
        const c = await openTransport(transportOptions);
        kinds.push(c.kind);
        reasons.push(c.fallbackReason);
        return c.transport;
      },
    });
    cleanup.push(() => conn.close());
    const rec = record(conn);
    await conn.ready;
    const t0 = performance.now();
    await stream(conn, 1000, 20);
    expect(await waitFor(() => rec.echoed.length === 1000, 15_000)).toBe(true);
    return { conn, ...rec, sessions, ws, kinds, reasons, wt: first.transport as WebTransportTransport, t0 };
  }

  it('writes that never complete: detected within stallTimeoutMs, resumed over WebSocket, nothing lost', async () => {
    const r = await stalledSession({ createWritable: true, stallWritesAfter: 60 }, { stallTimeoutMs: 300 });
    expect(r.echoed).toEqual([...Array(1000).keys()]);
    expect(r.events.map((e) => e.type)).toEqual(['reconnecting', 'resumed']);
    expect((r.events[0]!.e as { reason: string }).reason).toMatch(/webtransport stalled: a datagram write has not completed/);
    expect((r.events[1]!.e as ConnectionEvents['resumed']).transport).toBe('websocket');
    expect(r.kinds).toEqual(['websocket']);
    expect(r.reasons[0]).toMatch(/stalled .* websocket first/);
    expect(r.wt.stalled).toMatch(/stalled/);
    // The writes queued in the browser are bounded, and the stalled session is closed once WebSocket took over.
    expect(r.wt.maxInFlight).toBeLessThanOrEqual(256);
    expect(r.sessions.length).toBe(1);
    expect(r.sessions[0]!.closeCalls.length).toBe(1);
    expect(r.conn.transport.kind).toBe('websocket');
  });

  it('nothing arriving: the silence check moves the session to WebSocket and marks WebTransport stalled', async () => {
    const r = await stalledSession({ writable: true, stallReadsAfter: 40 }, { silenceTimeoutMs: 500 });
    expect(r.echoed).toEqual([...Array(1000).keys()]);
    expect(r.events.map((e) => e.type)).toEqual(['reconnecting', 'resumed']);
    expect((r.events[0]!.e as { reason: string }).reason).toBe('nothing arrived for 500 ms');
    expect(r.kinds).toEqual(['websocket']);
    expect(r.wt.stalled).toBe('nothing arrived for 500 ms');
    expect(r.sessions[0]!.closeCalls.length).toBe(1);
  });

  it("openTransport's stall memory: WebSocket first for stallMemoryMs, unless afterStall is 'webtransport' or forgotten", async () => {
    const r = await stalledSession({ createWritable: true, stallWritesAfter: 60 }, { stallTimeoutMs: 300 });
    const base = { webTransportUrl: WT_URL.replace('abc', 'other-token'), webSocketUrl: WS_URL, WebSocket: r.ws.Ctor };
    const open = async (o: Parameters<typeof openTransport>[0]) => {
      const c = await openTransport(o);
      c.transport.close();
      return c.kind;
    };
    expect(await open(base)).toBe('websocket'); // same endpoint, another token
    expect(await open({ ...base, afterStall: 'webtransport' })).toBe('webtransport');
    expect(await open({ ...base, force: 'webtransport' })).toBe('webtransport');
    expect(await open({ ...base, webTransportUrl: 'https://other.test:4433/ricochet' })).toBe('webtransport');
    await new Promise((res) => setTimeout(res, 30));
    expect(await open({ ...base, stallMemoryMs: 10 })).toBe('webtransport');
    // WebSocket failing after a stall: WebTransport is still tried.
    expect(await open({ ...base, webSocketUrl: 'wss://down.test/', WebSocket: failingWebSocket })).toBe('webtransport');
    forgetWebTransportStalls();
    expect(await open(base)).toBe('webtransport');
  });

  it('a page whose timers ran late (busy or throttled) does not count as a stall', async () => {
    const server = echoServer();
    const held: (() => void)[] = [];
    installFakeWebTransport(server, { createWritable: true, held });
    const t = await WebTransportTransport.connect(WT_URL, { stallTimeoutMs: 100 });
    const closed: string[] = [];
    t.onClose((reason) => closed.push(reason));
    cleanup.push(() => t.close());
    t.send(new Uint8Array(10));
    const end = performance.now() + 400; // the page is busy: nothing else runs, the write stays pending
    while (performance.now() < end);
    await new Promise((res) => setTimeout(res, 40)); // the late check runs
    expect(held.length).toBe(1);
    held.splice(0).forEach((r) => r()); // then the write completes
    await new Promise((res) => setTimeout(res, 300));
    expect(closed).toEqual([]);
    expect(t.stalled).toBeNull();
    // A write that stays pending while timers run on time is a stall.
    t.send(new Uint8Array(10));
    expect(await waitFor(() => closed.length === 1, 1_000)).toBe(true);
    expect(closed[0]).toMatch(/webtransport stalled/);
  });

  it('without reconnect, a stalled session closes the connection with the reason', async () => {
    const server = echoServer();
    const sessions = installFakeWebTransport(server, { createWritable: true, stallWritesAfter: 5 });
    const t = await WebTransportTransport.connect(WT_URL, { stallTimeoutMs: 200 });
    const conn = new Connection(t, { channels: ['reliable-ordered'] });
    const { events } = record(conn);
    await conn.ready;
    for (let i = 0; i < 20; i++) conn.send(0, payload(i, 100));
    expect(await waitFor(() => conn.state === 'closed', 3_000)).toBe(true);
    const close = events.find((e) => e.type === 'close')!.e as ConnectionEvents['close'];
    expect(close.code).toBe('RICOCHET_ERR_TRANSPORT_CLOSED');
    expect(close.reason).toMatch(/webtransport stalled/);
    expect(sessions[0]!.closeCalls.length).toBe(1);
  });
});

/** A WebSocket that never opens. */
const failingWebSocket = class implements WebSocketLike {
  binaryType = 'arraybuffer';
  readyState = 0;
  bufferedAmount = 0;
  onopen: ((e: unknown) => void) | null = null;
  onmessage: ((e: { data: unknown }) => void) | null = null;
  onclose: ((e: { code?: number; reason?: string }) => void) | null = null;
  onerror: ((e: unknown) => void) | null = null;
  constructor() {
    queueMicrotask(() => this.onerror?.({}));
  }
  send() {}
  close() {}
};

/** A stream that yields `chunks`, then ends (or stays open with `open`); records whether the reader cancelled it. */
function uniStream(chunks: Uint8Array[], open = false): { stream: ReadableStream<Uint8Array>; cancelled: () => boolean; pulled: () => number } {
  let cancelled = false;
  let pulled = 0;
  const stream = new ReadableStream<Uint8Array>({
    pull(c) {
      const next = chunks[pulled++];
      if (next) c.enqueue(next);
      else if (!open) c.close();
    },
    cancel() {
      cancelled = true;
    },
  });
  return { stream, cancelled: () => cancelled, pulled: () => pulled };
}

function notice(code: number, reason: string, magic = 'RCLS'): Uint8Array {
  const r = new TextEncoder().encode(reason);
  const b = new Uint8Array(6 + r.length);
  b.set(new TextEncoder().encode(magic), 0);
  b[4] = code >> 8;
  b[5] = code & 0xff;
  b.set(r, 6);
  return b;
}

describe("the relay's close notice (a unidirectional stream before it ends the session)", () => {
  async function open() {
    const sessions = installFakeWebTransport(echoServer(), { writable: true, uni: true });
    const t = await WebTransportTransport.connect(WT_URL, { stallTimeoutMs: 0 });
    cleanup.push(() => t.close());
    const closes: { reason: string; relay: unknown }[] = [];
    t.onClose((reason, relay) => closes.push({ reason, relay: relay ?? null }));
    return { t, s: sessions[0]!, closes };
  }

  it('a notice (split across chunks) reports its code and name and closes the session', async () => {
    const { s, closes } = await open();
    const n = notice(4410, 'RELAY_ERR_RESUME_FAILED: the game server does not know this session');
    s.uni!.enqueue(uniStream([n.subarray(0, 3), n.subarray(3)]).stream);
    expect(await waitFor(() => closes.length === 1, 1_000)).toBe(true);
    expect(closes[0]!.relay).toMatchObject({ code: 4410, error: 'RELAY_ERR_RESUME_FAILED' });
    expect(closes[0]!.reason).toMatch(/^webtransport closed \(4410: RELAY_ERR_RESUME_FAILED/);
    expect(s.closeCalls.length).toBe(1);
  });

  it('the session failing ("Connection lost") while the notice is read still reports the notice', async () => {
    const { s, closes } = await open();
    const n = notice(4401, 'RELAY_ERR_TOKEN_EXPIRED: token expired 2 s ago');
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    s.uni!.enqueue(
      new ReadableStream<Uint8Array>({
        async pull(c) {
          await gate;
          c.enqueue(n);
          c.close();
        },
      }),
    );
    await new Promise((r) => setTimeout(r, 5));
    s.fail(new Error('Connection lost.'));
    setTimeout(release, 5);
    expect(await waitFor(() => closes.length === 1, 1_000)).toBe(true);
    expect(closes[0]!.relay).toMatchObject({ code: 4401, error: 'RELAY_ERR_TOKEN_EXPIRED' });
  });

  it('hostile streams: garbled, oversized, endless, bad UTF-8 and extra streams are cancelled and ignored', async () => {
    for (const bad of [
      [notice(4410, 'RELAY_ERR_RESUME_FAILED', 'XXXX')], // wrong magic
      [new Uint8Array([0x52, 0x43])], // truncated
      [notice(4410, 'x'.repeat(124))], // reason over 123 bytes
      [new Uint8Array(100), new Uint8Array(100), new Uint8Array(1 << 20)], // oversized
      [notice(4410, 'RELAY_ERR_RESUME_FAILED'), new Uint8Array([0xff, 0xfe])], // not UTF-8
      [notice(1000, 'not a relay close')], // no relay code or name
    ]) {
      const { t, s, closes } = await open();
      const first = uniStream(bad);
      s.uni!.enqueue(first.stream);
      // More streams (a flood) are cancelled unread; memory does not grow with them.
      const extra = Array.from({ length: 50 }, () => uniStream([new Uint8Array(1 << 16)], true));
      for (const e of extra) s.uni!.enqueue(e.stream);
      expect(await waitFor(() => extra.every((e) => e.cancelled()), 1_000)).toBe(true);
      expect(extra.every((e) => e.pulled() <= 1)).toBe(true);
      await new Promise((r) => setTimeout(r, 20));
      expect(closes).toEqual([]);
      expect(t.canSend()).toBe(true);
      // The session ending reports its own close, not the garbage.
      s.fail(new Error('Connection lost.'));
      expect(await waitFor(() => closes.length === 1, 1_000)).toBe(true);
      expect(closes[0]).toEqual({ reason: 'webtransport failed: Connection lost.', relay: null });
      t.close();
    }
  });

  it('an endless notice stream is cut after 129 bytes', async () => {
    const { s, closes } = await open();
    const endless = uniStream(Array.from({ length: 1000 }, () => new Uint8Array(64)), true);
    s.uni!.enqueue(endless.stream);
    expect(await waitFor(() => endless.cancelled(), 1_000)).toBe(true);
    expect(endless.pulled()).toBeLessThanOrEqual(4);
    expect(closes).toEqual([]);
  });
});
