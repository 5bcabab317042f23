// From options to the core's ConfigInput: units, defaults that follow other
// options, the datagram floor, channels, and the checks on the way.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { configuredDatagramSize, coreConfig, DATAGRAM_FLOOR, fecBudgetFor, fecShapeFor, fecPreset, headReserve } from '../src/core-config.js';
import { RicochetError } from '../src/errors.js';
import { Connection } from '../src/connection.js';
import { loopbackPair, type LoopbackTransport } from '../src/loopback.js';
import { Server } from '../src/server.js';
import { VirtualClock } from '../src/clock.js';
import type { ConnectionOptions } from '../src/options.js';
import { clientWasm, type ClientGlue } from '../src/wasm.js';
import { CONFIG_FIELD as F } from '../src/wasm-codes.js';

type Input = InstanceType<ClientGlue['ConfigInput']>;

const made: Input[] = [];
afterEach(() => made.splice(0).forEach((c) => c.free()));

/** The real ConfigInput, with the channels added to it recorded (it has no getter for them). */
function recordingGlue() {
  const channels: [kind: number, priority: number, maxAgeUs: number, latencyTargetUs: number][] = [];
  const Real = clientWasm().glue.ConfigInput;
  class ConfigInput {
    readonly real = new Real();
    constructor() {
      made.push(this.real);
    }
    get(f: number) {
      return this.real.get(f);
    }
    set(f: number, v: number) {
      this.real.set(f, v);
    }
    addChannel(kind: number, priority: number, maxAgeUs: number, latencyTargetUs: number) {
      channels.push([kind, priority, maxAgeUs, latencyTargetUs]);
      return this.real.addChannel(kind, priority, maxAgeUs, latencyTargetUs);
    }
    free() {}
  }
  return { glue: { ...clientWasm().glue, ConfigInput } as unknown as ClientGlue, channels };
}

type Options = Parameters<typeof coreConfig>[1];

function config(o: Options, transportMax = 1200, withChannels = true, kind = '') {
  const r = recordingGlue();
  const c = coreConfig(r.glue, o, transportMax, withChannels, kind);
  return { get: (f: number) => c.get(f), channels: r.channels };
}

function invalidMessage(f: () => unknown): string {
  try {
    f();
  } catch (e) {
    expect(e).toBeInstanceOf(RicochetError);
    expect((e as RicochetError).code).toBe('RICOCHET_ERR_INVALID_OPTIONS');
    return (e as Error).message;
  }
  throw new Error('did not throw');
}

describe('coreConfig', () => {
  it('datagrams: the transport’s size up to 1200 by default; larger only when asked and carried', () => {
    expect(config({}, 1200).get(F.maxDatagramSize)).toBe(1200);
    expect(config({}, 1024).get(F.maxDatagramSize)).toBe(1024);
    expect(config({}, 65507).get(F.maxDatagramSize)).toBe(1200);
    expect(config({ maxDatagramBytes: 9000.7 }, 65507).get(F.maxDatagramSize)).toBe(9000);
    expect(invalidMessage(() => config({ maxDatagramBytes: 1500 }, 1200))).toBe("maxDatagramBytes (1500) exceeds the transport's maximum (1200)");
    const c = recordingGlue();
    expect(configuredDatagramSize(coreConfig(c.glue, { maxDatagramBytes: 800 }, 1200, false))).toBe(800);
  });

  it('the datagram floor: 1024 on browser transports or with reconnect, else the session’s own size', () => {
    expect(config({}, 1200, true, 'websocket').get(F.minDatagramSize)).toBe(DATAGRAM_FLOOR);
    expect(config({}, 1200, true, 'webtransport').get(F.minDatagramSize)).toBe(1024);
    expect(config({}, 900, true, 'webtransport').get(F.minDatagramSize)).toBe(900); // never above the datagram size
    expect(config({}, 1200, true, 'udp').get(F.minDatagramSize)).toBe(1200);
    expect(config({ reconnect: async () => null as never }, 1200, true, 'udp').get(F.minDatagramSize)).toBe(1024);
    expect(config({ minDatagramBytes: 600.5 }, 1200, true, 'websocket').get(F.minDatagramSize)).toBe(600);
    expect(invalidMessage(() => config({ minDatagramBytes: 100 }, 1200, true, 'udp'))).toBe('minDatagramBytes: expected 128..1200 (maxDatagramBytes), got 100');
    expect(invalidMessage(() => config({ minDatagramBytes: 1300 }, 1200, true, 'udp'))).toBe('minDatagramBytes: expected 128..1200 (maxDatagramBytes), got 1300');
    // A server (no channels of its own here) sets no floor.
    const defaults = new (clientWasm().glue.ConfigInput)();
    made.push(defaults);
    expect(config({}, 65507, false).get(F.minDatagramSize)).toBe(defaults.get(F.minDatagramSize));
  });

  it('times go to the core in microseconds', () => {
    const c = config({ idleTimeoutMs: 2500, keepaliveMs: 250, handshakeTimeoutMs: 1000, maxAckDelayMs: 2 });
    expect(c.get(F.idleTimeoutUs)).toBe(2_500_000);
    expect(c.get(F.keepaliveIntervalUs)).toBe(250_000);
    expect(c.get(F.handshakeTimeoutUs)).toBe(1_000_000);
    expect(c.get(F.maxAckDelayUs)).toBe(2000);
  });

  it('a larger maxMessageBytes grows the buffers it must fit in, unless they are set', () => {
    const big = 16 << 20;
    const grown = config({ maxMessageBytes: big });
    expect(grown.get(F.maxMessageSize)).toBe(big);
    expect(grown.get(F.sendBufferBytes)).toBe(big);
    expect(grown.get(F.recvBufferBytes)).toBe(headReserve(big));
    // …and the server-wide budget covers one connection's buffer.
    expect(grown.get(F.recvBudgetBytes)).toBeGreaterThanOrEqual(headReserve(big));
    const set = config({ maxMessageBytes: big, sendBufferBytes: 1 << 20, recvBufferBytes: 2 << 20 });
    expect(set.get(F.sendBufferBytes)).toBe(1 << 20);
    expect(set.get(F.recvBufferBytes)).toBe(2 << 20);
    const small = config({ maxMessageBytes: 1000 });
    expect(small.get(F.sendBufferBytes)).toBe(8 << 20); // never shrunk below the default
  });

  it('headReserve is the core’s: the message, 16 bytes per smallest fragment plus one, and a table slot', () => {
    expect(headReserve(64)).toBe(64 + 16 * 2 + 64);
    expect(headReserve(65)).toBe(65 + 16 * 3 + 64);
    expect(headReserve(1 << 20)).toBe((1 << 20) + 16 * ((1 << 20) / 64 + 1) + 64);
  });

  it('the receive buffer grown for a large maxMessageBytes is one the core accepts', () => {
    const { client } = loopbackPair({ clock: new VirtualClock(), network: 'lan', seed: 1 });
    const conn = new Connection(client, { clock: new VirtualClock(), maxMessageBytes: 16 << 20 });
    expect(conn.state).toBe('connecting');
    conn.close();
  });

  it('server limits, FEC and congestion by name', () => {
    const c = config({ maxConnections: 10, maxChannels: 3, recvBudgetBytes: 64 << 20, fec: 'thrifty', fecBudget: 0.5, congestion: 'newreno' }, 65507, false);
    expect(c.get(F.maxConnections)).toBe(10);
    expect(c.get(F.maxChannels)).toBe(3);
    expect(c.get(F.recvBudgetBytes)).toBe(64 << 20);
    expect(c.get(F.fecPreset)).toBe(3);
    expect(c.get(F.fecBudget)).toBe(0.5);
    expect(c.get(F.congestion)).toBe(1);
    const d = config({});
    expect(d.get(F.fecPreset)).toBe(fecPreset(undefined));
    expect(d.get(F.fecPreset)).toBe(1);
    expect(d.get(F.congestion)).toBe(0);
  });

  it("low-latency's repair is capped at 0.6 on Firefox's WebTransport unless fecBudget is set", () => {
    const firefox = 'Mozilla/5.0 (X11; Linux x86_64; rv:153.0) Gecko/20100101 Firefox/153.0';
    const chromium = 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0.0.0 Safari/537.36';
    const budget = (ua: string, o: Options, kind: string) => {
      vi.stubGlobal('navigator', { userAgent: ua });
      try {
        return config(o, 1024, true, kind).get(F.fecBudget);
      } finally {
        vi.unstubAllGlobals();
      }
    };
    expect(budget(firefox, { fec: 'low-latency' }, 'webtransport')).toBeCloseTo(0.6);
    expect(fecBudgetFor('low-latency', 'webtransport')).toBeUndefined(); // Node: no navigator, or not Firefox's
    expect(budget(firefox, { fec: 'low-latency', fecBudget: 2 }, 'webtransport')).toBe(2);
    // 0: the preset's own budget.
    expect(budget(firefox, { fec: 'low-latency' }, 'websocket')).toBe(0);
    expect(budget(firefox, { fec: 'balanced' }, 'webtransport')).toBe(0);
    expect(budget(firefox, {}, 'webtransport')).toBe(0);
    expect(budget(chromium, { fec: 'low-latency' }, 'webtransport')).toBe(0);
  });

  it("latency-targeted messages go whole on Chromium's WebTransport: FEC_WHOLE on the preset's number", () => {
    const chromium = 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0.0.0 Safari/537.36';
    const firefox = 'Mozilla/5.0 (X11; Linux x86_64; rv:153.0) Gecko/20100101 Firefox/153.0';
    const preset = (ua: string | null, o: Options, kind: string) => {
      if (ua !== null) vi.stubGlobal('navigator', { userAgent: ua });
      try {
        return config(o, 1024, true, kind).get(F.fecPreset);
      } finally {
        vi.unstubAllGlobals();
      }
    };
    expect(preset(chromium, { fec: 'low-latency' }, 'webtransport')).toBe(2 + 16);
    expect(preset(chromium, {}, 'webtransport')).toBe(1); // other presets keep halves (not measured there)
    expect(preset(chromium, { fec: 'balanced' }, 'webtransport')).toBe(1);
    const headless = chromium.replace('Chrome/', 'HeadlessChrome/');
    expect(preset(headless, { fec: 'low-latency' }, 'webtransport')).toBe(2 + 16); // the same network stack
    expect(preset(chromium, { fec: 'low-latency' }, 'websocket')).toBe(2);
    expect(preset(firefox, { fec: 'low-latency' }, 'webtransport')).toBe(2);
    expect(preset(null, { fec: 'low-latency' }, 'webtransport')).toBe(2); // Node
    expect(fecShapeFor('low-latency', 'webtransport')).toBe(0);
  });

  it('refuses unknown names and out-of-range values, naming the option', () => {
    expect(invalidMessage(() => config({ fec: 'max' as ConnectionOptions['fec'] }))).toBe('fec: expected one of off, balanced, low-latency, thrifty, got max');
    expect(invalidMessage(() => config({ congestion: 'cubic' as ConnectionOptions['congestion'] }))).toBe('congestion: expected one of bbr, newreno, got cubic');
    expect(invalidMessage(() => config({ fecBudget: 3.5 }))).toBe('fecBudget: expected a number in (0, 3], got 3.5');
    expect(invalidMessage(() => config({ maxChannels: 256 }))).toBe('maxChannels: expected a number in (0, 255], got 256');
    expect(invalidMessage(() => config({ idleTimeoutMs: 0 }))).toMatch(/^idleTimeoutMs: expected a number/);
  });

  it('channels: kinds by number, priority, ages and latency targets in microseconds', () => {
    const c = config({
      channels: ['unreliable', { kind: 'reliable-ordered', name: 'chat', priority: 255 }, { kind: 'unreliable-sequenced', maxAgeMs: 50, latencyTargetMs: 30 }],
    });
    expect(c.channels).toEqual([
      [3, 128, 0, 0],
      [0, 255, 0, 0],
      [2, 128, 50_000, 30_000],
    ]);
    expect(config({}).channels.map(([k]) => k)).toEqual([0, 1, 2, 3]); // the default layout
    expect(config({}, 1200, false).channels).toEqual([]); // a server without a declared layout
  });

  it('refuses a priority outside 0..255 and a non-positive latency target, by channel', () => {
    expect(invalidMessage(() => config({ channels: ['unreliable', { kind: 'unreliable', priority: 256 }] }))).toBe('channels[1].priority: expected 0..255, got 256');
    expect(invalidMessage(() => config({ channels: [{ kind: 'unreliable', priority: 1.5 }] }))).toBe('channels[0].priority: expected 0..255, got 1.5');
    expect(invalidMessage(() => config({ channels: [{ kind: 'unreliable', latencyTargetMs: -1 }] }))).toMatch(/^channels\[0\]\.latencyTargetMs: expected a number/);
  });
});

describe("the FEC budget follows the session's transport", () => {
  const FIREFOX = 'Mozilla/5.0 (X11; Linux x86_64; rv:153.0) Gecko/20100101 Firefox/153.0';
  const CHROMIUM = 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0.0.0 Safari/537.36';
  afterEach(() => vi.unstubAllGlobals());

  /** A low-latency session opened on WebTransport under user agent `ua`, the core's `setFec` calls, and a way to move it to a transport of another kind. */
  async function session(ua: string) {
    vi.stubGlobal('navigator', { userAgent: ua });
    const clock = new VirtualClock();
    const server = new Server({ clock });
    let seed = 1;
    /** A loopback transport standing for a browser one of `kind`. */
    const open = (kind: string): LoopbackTransport => {
      const p = loopbackPair({ clock, network: 'lan', seed: seed++ });
      server.attach(p.server);
      Object.defineProperty(p.client, 'kind', { value: kind });
      return p.client;
    };
    const until = async (cond: () => boolean) => {
      for (let t = 0; t < 2_000_000 && !cond(); t += 1000) {
        clock.advance(1000);
        for (let i = 0; i < 3; i++) await Promise.resolve();
      }
      return cond();
    };
    const conn = new Connection(open('webtransport'), { clock, fec: 'low-latency' });
    expect(await until(() => conn.state === 'open')).toBe(true);
    const core = (conn as unknown as { core_: { setFec(preset: number, budget: number): number } }).core_;
    const calls = vi.spyOn(core, 'setFec');
    let resumed = 0;
    conn.on('resumed', () => resumed++);
    const moveTo = async (kind: string) => {
      conn.switchTransport(open(kind));
      const want = resumed + 1;
      expect(await until(() => resumed === want)).toBe(true);
    };
    return { conn, calls: calls.mock.calls, moveTo };
  }

  it("a low-latency session moving between Firefox's WebTransport and WebSocket gets 0.6 and the preset's in turn, unless the app set it", async () => {
    const { conn, calls, moveTo } = await session(FIREFOX);
    await moveTo('websocket');
    expect(calls).toEqual([[2, 0]]);
    await moveTo('websocket');
    expect(calls).toEqual([[2, 0]]); // same kind: no change
    await moveTo('webtransport');
    expect(calls).toEqual([[2, 0], [2, 0.6]]);
    conn.setFec('low-latency', 2); // the app's own budget holds on every transport
    await moveTo('websocket');
    expect(calls).toEqual([[2, 0], [2, 0.6], [2, 2]]);
    conn.close();
  });

  it("a session moving between Chromium's WebTransport and WebSocket sends latency-targeted messages whole on the first only, whatever the budget", async () => {
    const { conn, calls, moveTo } = await session(CHROMIUM);
    await moveTo('websocket');
    expect(calls).toEqual([[2, 0]]);
    await moveTo('webtransport');
    expect(calls).toEqual([[2, 0], [2 + 16, 0]]);
    conn.setFec('low-latency', 2);
    await moveTo('websocket');
    expect(calls).toEqual([[2, 0], [2 + 16, 0], [2 + 16, 2], [2, 2]]);
    conn.close();
  });
});
