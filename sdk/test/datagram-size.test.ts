// A session that moves from a 1200-byte transport (WebSocket) to a 1024-byte
// one (Firefox's WebTransport) mid-run: the core follows the new size, so
// nothing is lost to oversized datagrams. Virtual time, loopback transports
// that drop oversized datagrams as Firefox does.
import { describe, expect, it } from 'vitest';
import { VirtualClock } from '../src/clock.js';
import { Connection } from '../src/connection.js';
import { reasonOf } from '../src/errors.js';
import { loopbackPair, type LoopbackTransport } from '../src/loopback.js';
import { Server } from '../src/server.js';
import { check, payload } from './payload.js';

const TICK = 16_667;
const S1 = { latencyMs: 10, jitterMs: 2 };
const SIZES = [1100, 1137, 1500, 3000, 20_000, 400];

function world() {
  const clock = new VirtualClock();
  const server = new Server({ clock });
  const at: number[][] = [[], []];
  server.on('message', (m) => m.channel < 2 && at[m.channel]!.push(check(m.data)));
  let seed = 1;
  const open = (maxDatagramSize: number): LoopbackTransport => {
    const p = loopbackPair({ clock, network: { up: S1, down: S1 }, seed: seed++, maxDatagramSize });
    server.attach(p.server);
    return p.client;
  };
  return { clock, server, at, open };
}

async function runUntil(clock: VirtualClock, cond: () => boolean, limitUs: number): Promise<boolean> {
  for (let t = 0; t <= limitUs; t += 1000) {
    if (cond()) return true;
    clock.advance(1000);
    for (let i = 0; i < 3; i++) await Promise.resolve();
  }
  return cond();
}

/** Sends `n` messages a side on channels 0 and 1, sizes from SIZES, `disrupt` at tick `at`. */
async function send(w: ReturnType<typeof world>, conn: Connection, n: number, at: number, disrupt: () => void) {
  for (let i = 0; i < n; i++) {
    const data = payload(i, SIZES[i % SIZES.length]!);
    conn.send(0, data);
    conn.send(1, data);
    if (i === at) disrupt();
    w.clock.advance(TICK);
    await Promise.resolve();
  }
}

describe('datagram size follows the transport', () => {
  it('switchTransport from 1200 to 1024 mid-run delivers every 1,100-byte and larger message in order', async () => {
    const w = world();
    // Loopback transports stand for browser ones: the session may move to 1024.
    const conn = new Connection(w.open(1200), { clock: w.clock, minDatagramBytes: 1024 });
    expect(await runUntil(w.clock, () => conn.state === 'open', 1_000_000)).toBe(true);
    await send(w, conn, 200, 60, () => conn.switchTransport(w.open(1024)));
    expect(await runUntil(w.clock, () => w.at[0]!.length === 200 && w.at[1]!.length === 200, 10_000_000)).toBe(true);
    expect(w.at[0]).toEqual([...Array(200).keys()]);
    expect([...w.at[1]!].sort((a, b) => a - b)).toEqual([...Array(200).keys()]);
    expect(conn.state).toBe('open');
    expect(conn.transport.maxDatagramSize).toBe(1024);
  });

  it('a resume onto a 1024-byte transport after the 1200 one dies delivers everything in order', async () => {
    const w = world();
    const first = w.open(1200);
    const conn = new Connection(first, { clock: w.clock, reconnect: async () => w.open(1024) });
    expect(await runUntil(w.clock, () => conn.state === 'open', 1_000_000)).toBe(true);
    await send(w, conn, 120, 40, () => first.close());
    expect(await runUntil(w.clock, () => w.at[0]!.length === 120 && w.at[1]!.length === 120, 10_000_000)).toBe(true);
    expect(w.at[0]).toEqual([...Array(120).keys()]);
  });

  it('a session that starts at 1024 and moves to 1200 keeps delivering', async () => {
    const w = world();
    const conn = new Connection(w.open(1024), { clock: w.clock });
    expect(await runUntil(w.clock, () => conn.state === 'open', 1_000_000)).toBe(true);
    await send(w, conn, 100, 30, () => conn.switchTransport(w.open(1200)));
    expect(await runUntil(w.clock, () => w.at[0]!.length === 100 && w.at[1]!.length === 100, 10_000_000)).toBe(true);
    expect(w.at[0]).toEqual([...Array(100).keys()]);
  });
});

describe('smallest datagram size a session may move to', () => {
  /** Header bytes the client spends sending one `bytes`-byte message (some per fragment). */
  async function overheadOf(conn: Connection, w: ReturnType<typeof world>, bytes: number): Promise<number> {
    expect(await runUntil(w.clock, () => conn.state === 'open', 1_000_000)).toBe(true);
    const before = conn.stats().overheadBytesOut;
    conn.send(0, payload(0, bytes));
    expect(await runUntil(w.clock, () => w.at[0]!.length === 1, 5_000_000)).toBe(true);
    return conn.stats().overheadBytesOut - before;
  }

  it('a client that cannot move (no browser transport, no reconnect) cuts fragments to its own datagrams', async () => {
    const w = world();
    const conn = new Connection(w.open(65507), { clock: w.clock, maxDatagramBytes: 65507 });
    // 200 kB in four 65 kB fragments (~95 header bytes), not some 200 cut
    // for 1024-byte datagrams (~2 kB).
    expect(await overheadOf(conn, w, 200_000)).toBeLessThan(500);
  });

  it('a client with reconnect cuts fragments for 1024-byte datagrams, unless minDatagramBytes says otherwise', async () => {
    const reconnect = async () => {
      throw new Error('unused');
    };
    const w = world();
    const floored = new Connection(w.open(65507), { clock: w.clock, maxDatagramBytes: 65507, reconnect });
    // Messages up to a datagram still go whole; larger ones in ~1 kB fragments.
    expect(await overheadOf(floored, w, 200_000)).toBeGreaterThan(1500);
    const v = world();
    const own = new Connection(v.open(65507), { clock: v.clock, maxDatagramBytes: 65507, reconnect, minDatagramBytes: 65507 });
    expect(await overheadOf(own, v, 200_000)).toBeLessThan(500);
  });

  it('a session on a WebSocket moves to a 1024-byte transport without the option', async () => {
    const w = world();
    const ws = Object.assign(w.open(1200), { kind: 'websocket' });
    const conn = new Connection(ws, { clock: w.clock });
    expect(await runUntil(w.clock, () => conn.state === 'open', 1_000_000)).toBe(true);
    await send(w, conn, 60, 20, () => conn.switchTransport(w.open(1024)));
    expect(await runUntil(w.clock, () => w.at[0]!.length === 60, 10_000_000)).toBe(true);
    expect(conn.state).toBe('open');
  });

  it('minDatagramBytes above maxDatagramBytes or below 128 is refused', () => {
    const w = world();
    expect(() => new Connection(w.open(1200), { clock: w.clock, minDatagramBytes: 1300 })).toThrow(/minDatagramBytes/);
    expect(() => new Connection(w.open(1200), { clock: w.clock, minDatagramBytes: 100 })).toThrow(/minDatagramBytes/);
  });
});

describe('reasonOf', () => {
  it('gives a readable reason for rejections that carry no Error', () => {
    expect(reasonOf(undefined)).toBe('no reason given (undefined)');
    expect(reasonOf(null)).toBe('no reason given (null)');
    expect(reasonOf(new Error('boom'))).toBe('boom');
    expect(reasonOf('closed')).toBe('closed');
    expect(reasonOf({ closeCode: 3, reason: 'x' })).toBe('{"closeCode":3,"reason":"x"}');
  });
});
