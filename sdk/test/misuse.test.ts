// What plain JavaScript and the README's own order of calls must not be
// able to break: messages that arrive before a listener, payloads that are
// not bytes, event names with typos, tokens in error text.
import { describe, expect, it } from 'vitest';
import { Connection, HELD_MESSAGES_LIMIT } from '../src/connection.js';
import { Server } from '../src/server.js';
import { loopbackPair } from '../src/loopback.js';
import { VirtualClock } from '../src/clock.js';
import { RicochetError, payloadBytes, reasonOf, redactTokens, relayClose } from '../src/errors.js';
import { WebSocketTransport } from '../src/websocket.js';
import { check, payload } from './payload.js';

function setup() {
  const clock = new VirtualClock();
  const { client, server: end } = loopbackPair({ clock, network: 'lan', seed: 3 });
  const server = new Server({ clock });
  server.attach(end);
  const atServer: Uint8Array[] = [];
  server.on('message', (m) => atServer.push(m.data));
  return { clock, client, server, atServer };
}

describe('no silent loss', () => {
  it('messages the server sends on accept reach a listener attached after ready', async () => {
    const { clock, client, server } = setup();
    server.on('connection', ({ id }) => {
      for (let i = 0; i < 5; i++) server.send(id, 0, payload(i, 50));
    });
    const conn = new Connection(client, { clock });
    expect(clock.runUntil(() => conn.state === 'open', 2_000_000)).toBe(true);
    clock.advance(50_000); // the server's first messages arrive with nobody listening
    await conn.ready;
    const got: number[] = [];
    conn.on('message', (m) => got.push(check(m.data)));
    expect(got).toEqual([]); // delivered after the call that attached the listener returns
    await Promise.resolve();
    server.send(server.connections()[0]!, 0, payload(5, 50));
    await Promise.resolve(); // the server's sends flush at the end of the task
    clock.advance(50_000);
    expect(got).toEqual([0, 1, 2, 3, 4, 5]);
  });

  it('a client that never listens is closed with RICOCHET_ERR_NO_LISTENER instead of holding without bound', () => {
    const { clock, client, server } = setup();
    const conn = new Connection(client, { clock });
    expect(clock.runUntil(() => conn.state === 'open', 2_000_000)).toBe(true);
    const id = server.connections()[0]!;
    for (let i = 0; i <= HELD_MESSAGES_LIMIT; i++) {
      server.send(id, 1, payload(i, 8));
      if (i % 200 === 0) clock.advance(5_000);
    }
    expect(clock.runUntil(() => conn.state === 'closed', 5_000_000)).toBe(true);
    expect(conn.closeInfo?.code).toBe('RICOCHET_ERR_NO_LISTENER');
    expect(conn.closeInfo?.reason).toBe(`${HELD_MESSAGES_LIMIT} messages arrived with no 'message' listener`);
  });
});

describe('a page that goes away', () => {
  it('closes its connection on pagehide, so the server learns at once instead of at its idle timeout', () => {
    const page = new EventTarget();
    const g = globalThis as { addEventListener?: unknown; removeEventListener?: unknown };
    g.addEventListener = page.addEventListener.bind(page);
    g.removeEventListener = page.removeEventListener.bind(page);
    try {
      const { clock, client, server } = setup();
      const gone: string[] = [];
      server.on('disconnect', (e) => gone.push(`${e.code}: ${e.reason}`));
      const conn = new Connection(client, { clock });
      expect(clock.runUntil(() => conn.state === 'open', 2_000_000)).toBe(true);
      const t0 = clock.now();
      page.dispatchEvent(new Event('pagehide'));
      expect(clock.runUntil(() => gone.length === 1, 10_000_000)).toBe(true);
      expect(gone).toEqual(['RICOCHET_ERR_CLOSED_BY_PEER: page closed']);
      expect(clock.now() - t0).toBeLessThan(100_000); // a round trip on 'lan', not the 10 s idle timeout
    } finally {
      delete g.addEventListener;
      delete g.removeEventListener;
    }
  });
});

describe('no silent corruption', () => {
  it('send() carries exactly the bytes of any typed array, DataView or ArrayBuffer', () => {
    const { clock, client, server, atServer } = setup();
    const conn = new Connection(client, { clock });
    expect(clock.runUntil(() => conn.state === 'open', 2_000_000)).toBe(true);
    const floats = new Float32Array([1.5, -2]);
    const backing = new Uint8Array([9, 8, 7, 6, 5, 4]);
    conn.send(0, floats);
    conn.send(0, floats.buffer);
    conn.send(0, new DataView(backing.buffer, 2, 3));
    conn.send(0, new Uint16Array([0x0102]));
    expect(clock.runUntil(() => atServer.length === 4, 2_000_000)).toBe(true);
    expect(atServer.map((d) => [...d])).toEqual([
      [...new Uint8Array(floats.buffer)],
      [...new Uint8Array(floats.buffer)],
      [7, 6, 5],
      [0x02, 0x01],
    ]);
  });

  it('send() refuses a string, a number, null or a plain array with RICOCHET_ERR_INVALID_PAYLOAD, client and server alike', () => {
    const { clock, client, server } = setup();
    const conn = new Connection(client, { clock });
    expect(clock.runUntil(() => conn.state === 'open', 2_000_000)).toBe(true);
    const id = server.connections()[0]!;
    for (const bad of ['hello', 42, null, undefined, [1, 2, 3], { byteLength: 3 }]) {
      for (const send of [() => conn.send(0, bad as never), () => server.send(id, 0, bad as never), () => server.broadcast(0, bad as never)]) {
        let err: unknown;
        try {
          send();
        } catch (e) {
          err = e;
        }
        expect(err).toBeInstanceOf(RicochetError);
        expect((err as RicochetError).code).toBe('RICOCHET_ERR_INVALID_PAYLOAD');
      }
    }
    expect(() => payloadBytes('x')).toThrow(/got string/);
    expect(() => payloadBytes([1])).toThrow(/got Array/);
  });

  it('event names are checked by the compiler', () => {
    const { client } = setup();
    const conn = new Connection(client, { clock: new VirtualClock() });
    // @ts-expect-error: no such event ('message' misspelt)
    conn.on('mesage', () => {});
    const server = new Server({ clock: new VirtualClock() });
    // @ts-expect-error: no such event
    server.on('connect', () => {});
    conn.close();
    server.shutdown();
  });
});

describe('errors a program can act on', () => {
  it("reads a relay's close as a code and a name; other closes are not the relay's", () => {
    expect(relayClose(4401, 'RELAY_ERR_TOKEN_EXPIRED: token expired 3 s ago')).toEqual({ code: 4401, error: 'RELAY_ERR_TOKEN_EXPIRED', reason: 'RELAY_ERR_TOKEN_EXPIRED: token expired 3 s ago' });
    expect(relayClose(1001, 'RELAY_SHUTTING_DOWN')).toEqual({ code: 1001, error: 'RELAY_SHUTTING_DOWN', reason: 'RELAY_SHUTTING_DOWN' });
    expect(relayClose(4503, '')).toEqual({ code: 4503, error: null, reason: '' });
    expect(relayClose(1006, '')).toBeNull();
    expect(relayClose(1000, 'closed')).toBeNull();
  });

  it('never puts a connect token in an error, a reason or a log line', async () => {
    const url = 'ws://127.0.0.1:9/ricochet?token=rct1.eyJzdWIiOiJhIn0.c2ln&x=1';
    expect(redactTokens(`failed: ${url}`)).toBe('failed: ws://127.0.0.1:9/ricochet?token=[redacted]&x=1');
    expect(reasonOf(new Error(`could not reach ${url}`))).not.toMatch(/rct1/);
    // Port 9 (discard) is closed on loopback: the WebSocket fails, and its error names the endpoint only.
    const { WebSocket } = await import('ws');
    const err = await WebSocketTransport.connect(url, { WebSocket: WebSocket as never, timeoutMs: 2000 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RicochetError);
    expect((err as Error).message).toMatch(/127\.0\.0\.1:9/);
    expect((err as Error).message).not.toMatch(/rct1|eyJ/);
  });
});

describe('channels both sides agree on', () => {
  const layout = [
    { kind: 'reliable-ordered', name: 'chat' },
    { kind: 'unreliable-sequenced', name: 'input' },
  ] as const;

  it('a server that declares its channels refuses a client that lists them in another order, with a clear code', () => {
    const clock = new VirtualClock();
    const { client, server: end } = loopbackPair({ clock, network: 'lan', seed: 5 });
    const server = new Server({ clock, channels: [...layout] });
    server.attach(end);
    const requests: number[] = [];
    server.on('connection', ({ id }) => requests.push(id));
    const conn = new Connection(client, { clock, channels: [layout[1], layout[0]] });
    expect(clock.runUntil(() => conn.state === 'closed', 2_000_000)).toBe(true);
    expect(conn.closeInfo?.code).toBe('RICOCHET_ERR_CHANNELS_DIFFER');
    expect(conn.closeInfo?.reason).toBe('channel layout differs: server has reliable-ordered, unreliable-sequenced');
    expect(requests).toEqual([]);
  });

  it("with the same layout, the server's events carry channel names and it sends by name", () => {
    const clock = new VirtualClock();
    const { client, server: end } = loopbackPair({ clock, network: 'lan', seed: 6 });
    const server = new Server({ clock, channels: [...layout] });
    server.attach(end);
    const seen: string[] = [];
    server.on('message', (m) => {
      seen.push(`${m.channelName}:${m.data.length}`);
      server.send(m.id, 'chat', m.data);
    });
    const conn = new Connection(client, { clock, channels: [...layout] });
    const back: string[] = [];
    conn.on('message', (m) => back.push(`${m.channelName}:${m.data.length}`));
    expect(clock.runUntil(() => conn.state === 'open', 2_000_000)).toBe(true);
    conn.send('chat', new Uint8Array(3));
    conn.send('input', new Uint8Array(5));
    expect(clock.runUntil(() => back.length === 2, 2_000_000)).toBe(true);
    expect(seen.sort()).toEqual(['chat:3', 'input:5']);
    expect(back.sort()).toEqual(['chat:3', 'chat:5']);
    // @ts-expect-error: not a declared channel name (plain JavaScript gets the error at run time)
    expect(() => server.send(server.connections()[0]!, 'nope', new Uint8Array(1))).toThrow(/no channel named nope/);
  });
});

describe('stats a game can graph', () => {
  it('recent loss falls back to zero once the network heals, while the totals remember it', () => {
    const clock = new VirtualClock();
    const lossy = { latencyMs: 10, jitterMs: 1, loss: 0.1 };
    const { client, server: end } = loopbackPair({ clock, network: { up: lossy, down: lossy }, seed: 9 });
    const server = new Server({ clock });
    server.attach(end);
    const conn = new Connection(client, { clock, statsWindowMs: 2000 });
    expect(clock.runUntil(() => conn.state === 'open', 5_000_000)).toBe(true);
    const id = server.connections()[0]!;
    const tick = (ms: number) => {
      for (let t = 0; t < ms; t += 20) {
        conn.send(1, new Uint8Array(100));
        server.send(id, 1, new Uint8Array(100));
        clock.advance(20_000);
        conn.flush();
      }
    };
    tick(6000);
    const during = conn.stats();
    expect(during.recent.lossIn).toBeGreaterThan(0.04);
    expect(during.lossIn).toBeGreaterThan(0.04);
    client.setLink({ latencyMs: 10, jitterMs: 1 });
    end.setLink({ latencyMs: 10, jitterMs: 1 });
    for (let i = 0; i < 4; i++) {
      tick(1000);
      conn.stats(); // a graph reads every second
    }
    const after = conn.stats();
    expect(after.recent.windowMs).toBeGreaterThanOrEqual(2000);
    expect(after.recent.windowMs).toBeLessThan(3100);
    expect(after.recent.lossIn).toBe(0);
    expect(after.recent.lossOut).toBe(0);
    expect(after.lossIn).toBeGreaterThan(0.02); // the whole connection's figure still carries the lossy minute
    expect(after.recent.packetsInPerSecond).toBeGreaterThan(40); // 50 a second sent each way
    expect(after.recent.bytesOutPerSecond).toBeGreaterThan(5000);
    const s = server.stats(id)!;
    expect(s.recent.windowMs).toBe(0); // the server's first reading of this connection
  });
});
