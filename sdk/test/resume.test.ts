// Session resumption over the in-memory loopback, on virtual time: the
// transport under an open connection dies and the session continues on a
// new one with nothing lost.
import { describe, expect, it } from 'vitest';
import { VirtualClock } from '../src/clock.js';
import { Connection, type ConnectionEvents } from '../src/connection.js';
import { loopbackPair, type LoopbackTransport } from '../src/loopback.js';
import { retryDelayMs, type ReconnectInfo } from '../src/resume.js';
import { relayClose } from '../src/errors.js';
import { Server } from '../src/server.js';
import type { Transport } from '../src/transport.js';
import { check, payload } from './payload.js';

const TICK = 16_667;
const S1 = { latencyMs: 10, jitterMs: 2 };

/** A server reachable over any number of loopback pairs, like a game server behind a relay. */
function world() {
  const clock = new VirtualClock();
  const server = new Server({ clock });
  const atServer: number[] = [];
  server.on('message', (m) => m.channel === 0 && atServer.push(check(m.data)));
  const ends: LoopbackTransport[] = [];
  let seed = 1;
  const open = (): LoopbackTransport => {
    const p = loopbackPair({ clock, network: { up: S1, down: S1 }, seed: seed++ });
    server.attach(p.server);
    ends.push(p.server);
    return p.client;
  };
  return { clock, server, atServer, ends, open };
}

/** Advance virtual time, letting promise callbacks (the async reconnect) run between steps. */
async function runUntil(clock: VirtualClock, cond: () => boolean, limitUs: number): Promise<boolean> {
  for (let t = 0; t <= limitUs; t += 1000) {
    if (cond()) return true;
    clock.advance(1000);
    for (let i = 0; i < 3; i++) await Promise.resolve();
  }
  return cond();
}

/** A transport that opens, then is closed by the far end with `reason` (a relay refusing a resume). */
function refusedBy(clock: VirtualClock, reason: string): Transport {
  return {
    kind: 'websocket',
    maxDatagramSize: 1200,
    send() {},
    onDatagram() {},
    onClose(handler) {
      clock.at(clock.now() + 1_000, () => handler(reason, relayClose(4410, reason)));
    },
    close() {},
  };
}

/** A DATA packet for connection `id` carrying a PING, with a tag that does not verify. */
function forgedData(id: number): Uint8Array {
  const d = new Uint8Array(16);
  d[0] = 0x04;
  new DataView(d.buffer).setUint32(1, id, true);
  d[5] = 7; // packet number 7; bytes 7-14: the (zero) tag
  d[15] = 0x02;
  return d;
}

/** Deliver `d` on `t` every `everyUs` until stopped. */
function injectEvery(clock: VirtualClock, t: LoopbackTransport, d: Uint8Array, everyUs: number): () => void {
  let cancel = (): void => {};
  const tick = (): void => {
    t.receive(d);
    cancel = clock.at(clock.now() + everyUs, tick);
  };
  cancel = clock.at(clock.now() + everyUs, tick);
  return () => cancel();
}

function record(conn: Connection) {
  const events: { type: string; e: unknown }[] = [];
  for (const type of ['reconnecting', 'resumed', 'close'] as const) conn.on(type, (e: ConnectionEvents[typeof type]) => events.push({ type, e }));
  const atClient: number[] = [];
  conn.on('message', (m) => m.channel === 0 && atClient.push(check(m.data)));
  return { events, atClient };
}

/** Both sides send one reliable message a tick for `n` ticks; `disrupt` runs at tick `at`. */
async function exchange(w: ReturnType<typeof world>, conn: Connection, n: number, at: number, disrupt: () => void) {
  for (let i = 0; i < n; i++) {
    conn.send(0, payload(i, 400));
    w.server.send(conn.id, 0, payload(i, 400));
    if (i === at) disrupt();
    w.clock.advance(TICK);
    await Promise.resolve();
  }
}

describe('session resumption', () => {
  it('resumes on a new transport after the old one dies, every reliable message in order both ways', async () => {
    const w = world();
    const infos: ReconnectInfo[] = [];
    const conn = new Connection(w.open(), {
      clock: w.clock,
      reconnect: async (info) => {
        infos.push(info);
        return w.open();
      },
    });
    const { events, atClient } = record(conn);
    expect(await runUntil(w.clock, () => conn.state === 'open', 1_000_000)).toBe(true);
    await exchange(w, conn, 600, 200, () => w.ends[0]!.close()); // the transport dies under the session (server end hangs up)
    expect(await runUntil(w.clock, () => w.atServer.length === 600 && atClient.length === 600, 5_000_000)).toBe(true);
    expect(w.atServer).toEqual([...Array(600).keys()]);
    expect(atClient).toEqual([...Array(600).keys()]);
    expect(infos).toEqual([{ attempt: 1, reason: 'peer transport closed' }]);
    expect(events.map((x) => x.type)).toEqual(['reconnecting', 'resumed']);
    const resumed = events[1]!.e as ConnectionEvents['resumed'];
    expect(resumed.attempts).toBe(1);
    // One loopback round trip (≈ 20 ms) after an immediate reconnect.
    expect(resumed.downtimeMs).toBeGreaterThan(5);
    expect(resumed.downtimeMs).toBeLessThan(100);
    expect(w.server.connections()).toEqual([conn.id]);
  });

  it('keeps trying with backoff and resumes once a transport can be had', async () => {
    const w = world();
    const infos: ReconnectInfo[] = [];
    const conn = new Connection(w.open(), {
      clock: w.clock,
      reconnect: async (info) => {
        infos.push(info);
        if (info.attempt < 4) throw new Error('network unreachable');
        return w.open();
      },
    });
    const { events } = record(conn);
    expect(await runUntil(w.clock, () => conn.state === 'open', 1_000_000)).toBe(true);
    const died = w.clock.now();
    w.ends[0]!.close();
    expect(await runUntil(w.clock, () => events.some((x) => x.type === 'resumed'), 5_000_000)).toBe(true);
    expect(infos.map((i) => i.attempt)).toEqual([1, 2, 3, 4]);
    expect(infos[1]!.reason).toBe('network unreachable');
    const backoff = retryDelayMs(2) + retryDelayMs(3) + retryDelayMs(4);
    expect((w.clock.now() - died) / 1000).toBeGreaterThanOrEqual(backoff);
    expect(conn.state).toBe('open');
  });

  it('gives up with RICOCHET_ERR_RESUME_FAILED when no transport comes within resumeWindowMs', async () => {
    const w = world();
    const conn = new Connection(w.open(), {
      clock: w.clock,
      resumeWindowMs: 3_000,
      reconnect: async () => {
        throw new Error('network unreachable');
      },
    });
    const { events } = record(conn);
    expect(await runUntil(w.clock, () => conn.state === 'open', 1_000_000)).toBe(true);
    const died = w.clock.now();
    w.ends[0]!.close();
    expect(() => conn.send(0, payload(1, 10))).not.toThrow(); // queues while reconnecting
    expect(await runUntil(w.clock, () => conn.state === 'closed', 5_000_000)).toBe(true);
    const close = events.find((x) => x.type === 'close')!.e as ConnectionEvents['close'];
    expect(close.code).toBe('RICOCHET_ERR_RESUME_FAILED');
    expect(close.reason).toMatch(/resumeWindowMs \(3000 ms\).*network unreachable/);
    expect((w.clock.now() - died) / 1000).toBeGreaterThanOrEqual(3_000);
    expect((w.clock.now() - died) / 1000).toBeLessThan(3_100);
  });

  it('stops at once when the relay refuses the resume for good', async () => {
    const w = world();
    let attempts = 0;
    const conn = new Connection(w.open(), {
      clock: w.clock,
      reconnect: async () => {
        attempts++;
        return refusedBy(w.clock, 'RELAY_ERR_RESUME_FAILED: the session has ended');
      },
    });
    const { events } = record(conn);
    expect(await runUntil(w.clock, () => conn.state === 'open', 1_000_000)).toBe(true);
    w.ends[0]!.close();
    expect(await runUntil(w.clock, () => conn.state === 'closed', 1_000_000)).toBe(true);
    expect(attempts).toBe(1);
    const close = events.find((x) => x.type === 'close')!.e as ConnectionEvents['close'];
    expect(close.code).toBe('RICOCHET_ERR_RESUME_FAILED');
    expect(close.reason).toBe('resume refused: RELAY_ERR_RESUME_FAILED: the session has ended');
  });

  it('treats a transport that goes silent for silenceTimeoutMs as dead and resumes on a new one', async () => {
    const w = world();
    const first = w.open();
    const conn = new Connection(first, {
      clock: w.clock,
      silenceTimeoutMs: 3_000,
      quietProbeMs: 0,
      reconnect: async () => w.open(),
    });
    const { events, atClient } = record(conn);
    expect(await runUntil(w.clock, () => conn.state === 'open', 1_000_000)).toBe(true);
    const silent = { ...S1, loss: 1 };
    first.setLink(silent);
    w.ends[0]!.setLink(silent);
    const cut = w.clock.now();
    for (let i = 0; i < 10; i++) w.server.send(conn.id, 0, payload(i, 100));
    expect(await runUntil(w.clock, () => events.some((x) => x.type === 'reconnecting'), 10_000_000)).toBe(true);
    const detected = (w.clock.now() - cut) / 1000;
    expect(detected).toBeGreaterThanOrEqual(3_000);
    expect(detected).toBeLessThan(4_100);
    expect((events[0]!.e as { reason: string }).reason).toBe('nothing arrived for 3000 ms');
    expect(await runUntil(w.clock, () => atClient.length === 10, 3_000_000)).toBe(true);
    expect(atClient).toEqual([...Array(10).keys()]);
    expect(conn.state).toBe('open');
  });

  it('silence is counted from the last datagram heard, not from the last check', async () => {
    const w = world();
    const first = w.open();
    const conn = new Connection(first, { clock: w.clock, silenceTimeoutMs: 3_000, quietProbeMs: 0, reconnect: async () => w.open() });
    const { events } = record(conn);
    expect(await runUntil(w.clock, () => conn.state === 'open', 1_000_000)).toBe(true);
    // Traffic for a while after the first check was armed, then the path goes silent.
    for (let i = 0; i < 30; i++) {
      conn.send(0, payload(i, 100));
      w.server.send(conn.id, 0, payload(i, 100));
      w.clock.advance(TICK);
      await Promise.resolve();
    }
    const silent = { ...S1, loss: 1 };
    first.setLink(silent);
    w.ends[0]!.setLink(silent);
    const cut = w.clock.now();
    expect(await runUntil(w.clock, () => events.some((x) => x.type === 'reconnecting'), 10_000_000)).toBe(true);
    const detected = (w.clock.now() - cut) / 1000;
    expect(detected).toBeGreaterThanOrEqual(2_900);
    expect(detected).toBeLessThan(3_200);
  });

  it('a forged datagram (wrong tag) does not keep a silent transport alive', async () => {
    const w = world();
    const first = w.open();
    const conn = new Connection(first, { clock: w.clock, silenceTimeoutMs: 3_000, quietProbeMs: 0, reconnect: async () => w.open() });
    const { events } = record(conn);
    expect(await runUntil(w.clock, () => conn.state === 'open', 1_000_000)).toBe(true);
    const silent = { ...S1, loss: 1 };
    first.setLink(silent);
    w.ends[0]!.setLink(silent);
    const cut = w.clock.now();
    // An off-path attacker who knows the connection ID keeps injecting.
    const stop = injectEvery(w.clock, first, forgedData(conn.id), 500_000);
    expect(await runUntil(w.clock, () => events.some((x) => x.type === 'reconnecting'), 10_000_000)).toBe(true);
    stop();
    const detected = (w.clock.now() - cut) / 1000;
    expect(detected).toBeGreaterThanOrEqual(3_000);
    expect(detected).toBeLessThan(4_100);
    expect(conn.stats().unauthenticated).toBeGreaterThanOrEqual(5);
  });

  it('a transport that answers none of its quiet probes is dead in about a second, long before silenceTimeoutMs', async () => {
    const w = world();
    const first = w.open();
    const conn = new Connection(first, { clock: w.clock, reconnect: async () => w.open() });
    const { events, atClient } = record(conn);
    expect(await runUntil(w.clock, () => conn.state === 'open', 1_000_000)).toBe(true);
    const silent = { ...S1, loss: 1 };
    first.setLink(silent);
    w.ends[0]!.setLink(silent);
    const cut = w.clock.now();
    for (let i = 0; i < 10; i++) w.server.send(conn.id, 0, payload(i, 100));
    expect(await runUntil(w.clock, () => events.some((x) => x.type === 'reconnecting'), 10_000_000)).toBe(true);
    const detected = (w.clock.now() - cut) / 1000;
    // 500 ms of quiet, then three probes given 250 ms each (this path's round trip is ~20 ms).
    expect(detected).toBeGreaterThanOrEqual(1_250);
    expect(detected).toBeLessThan(1_400);
    expect((events[0]!.e as { reason: string }).reason).toMatch(/^no answer to 3 probes in 1\d{3} ms of silence$/);
    expect(await runUntil(w.clock, () => atClient.length === 10, 3_000_000)).toBe(true);
    expect(atClient).toEqual([...Array(10).keys()]);
  });

  it('a quiet but live peer answers the probes: a minute with nothing to say, and 5 % loss, never reconnects', async () => {
    const w = world();
    const first = w.open();
    const lossy = { ...S1, loss: 0.05 };
    const conn = new Connection(first, { clock: w.clock, reconnect: async () => w.open() });
    const { events } = record(conn);
    expect(await runUntil(w.clock, () => conn.state === 'open', 1_000_000)).toBe(true);
    first.setLink(lossy);
    w.ends[0]!.setLink(lossy);
    const sentBefore = conn.stats().packetsOut;
    await runUntil(w.clock, () => false, 60_000_000);
    expect(events).toEqual([]);
    expect(conn.state).toBe('open');
    // The probes cost a few packets a second, not a stream.
    expect(conn.stats().packetsOut - sentBefore).toBeLessThan(60 * 8);
  });

  it('a forged datagram on the new transport does not complete a resume; the real peer does', async () => {
    const w = world();
    let next: LoopbackTransport | null = null;
    const conn = new Connection(w.open(), {
      clock: w.clock,
      reconnect: async () => {
        next = w.open();
        w.ends[w.ends.length - 1]!.setLink({ ...S1, loss: 1 }); // the server's answers do not arrive yet
        return next;
      },
    });
    const { events } = record(conn);
    expect(await runUntil(w.clock, () => conn.state === 'open', 1_000_000)).toBe(true);
    w.ends[0]!.close();
    expect(await runUntil(w.clock, () => next !== null, 1_000_000)).toBe(true);
    const forged = forgedData(conn.id);
    for (let i = 0; i < 5; i++) {
      next!.receive(forged);
      w.clock.advance(100_000);
      await Promise.resolve();
    }
    expect(events.map((x) => x.type)).toEqual(['reconnecting']);
    expect(conn.state).toBe('reconnecting');
    expect(conn.stats().unauthenticated).toBe(5);
    // Positive control: once the server's own packets get through, the resume completes.
    w.ends[w.ends.length - 1]!.setLink(S1);
    expect(await runUntil(w.clock, () => events.some((x) => x.type === 'resumed'), 5_000_000)).toBe(true);
    expect(conn.state).toBe('open');
  });

  it('switchTransport moves an open session to another transport without losing a message', async () => {
    const w = world();
    const conn = new Connection(w.open(), { clock: w.clock });
    const { events, atClient } = record(conn);
    let second: LoopbackTransport | null = null;
    expect(await runUntil(w.clock, () => conn.state === 'open', 1_000_000)).toBe(true);
    // The old transport must stay open until the new one is proven (a relay
    // ends a session whose client closes on purpose).
    let oldClosedAt = -1;
    let resumedAt = -1;
    w.ends[0]!.onClose(() => (oldClosedAt = w.clock.now()));
    conn.on('resumed', () => (resumedAt = w.clock.now()));
    await exchange(w, conn, 300, 100, () => {
      second = w.open();
      conn.switchTransport(second);
    });
    expect(await runUntil(w.clock, () => w.atServer.length === 300 && atClient.length === 300, 5_000_000)).toBe(true);
    expect(w.atServer).toEqual([...Array(300).keys()]);
    expect(atClient).toEqual([...Array(300).keys()]);
    expect(events.map((x) => x.type)).toEqual(['reconnecting', 'resumed']);
    expect(conn.transport).toBe(second);
    expect(resumedAt).toBeGreaterThan(0);
    expect(oldClosedAt).toBe(resumedAt);
  });

  it('without reconnect, a dead transport still closes the connection', async () => {
    const w = world();
    const conn = new Connection(w.open(), { clock: w.clock });
    const { events } = record(conn);
    expect(await runUntil(w.clock, () => conn.state === 'open', 1_000_000)).toBe(true);
    w.ends[0]!.close();
    expect(conn.state).toBe('closed');
    expect((events[0]!.e as ConnectionEvents['close']).code).toBe('RICOCHET_ERR_TRANSPORT_CLOSED');
  });
});
