// Safari's WebTransport API, emulated in the browsers we have (issue 14):
// a page-level shim wraps `WebTransport` so that `datagrams.writable` is
// absent (Safari 26.4: datagrams go through `datagrams.createWritable()`;
// where the browser lacks createWritable the shim builds it on the real
// writable), and optionally stalls the datagram stream after N datagrams
// (reported Safari sessions whose flow-control credit never refills).
// Through the relay to the native echo server:
//  - createWritable path: echo completes over WebTransport;
//  - writes that stop completing, or datagrams that stop arriving: the
//    session moves to WebSocket through resumption, nothing lost on the
//    reliable channels, within stallTimeoutMs (writes) or
//    silenceTimeoutMs (reads) of the stall.
import { expect, test, type Page } from '@playwright/test';
import { startStack, type Stack } from '../stack.js';
import { expectComplete } from '../echo-checks.js';

let stack: Stack;
test.beforeAll(async () => {
  stack = await startStack();
});
test.afterAll(async () => stack?.stop());

interface ShimConfig {
  /** Hide `datagrams.writable` (always, here: Safari has none). */
  hideWritable: boolean;
  /** In each session, writes after this many never complete. */
  stallWritesAfter?: number;
  /** In each session, incoming datagrams after this many are swallowed. */
  stallReadsAfter?: number;
}

interface ShimState {
  sessions: number;
  nativeCreateWritable: boolean;
  createWritableCalls: number;
  writes: number;
  reads: number;
  stalledAt: number | null;
}

/** Runs in the page before any script: replaces `WebTransport` with a subclass whose `datagrams` is wrapped. */
function installShim(cfg: ShimConfig): void {
  const Real = (globalThis as { WebTransport?: new (url: string, o?: unknown) => object }).WebTransport;
  if (typeof Real !== 'function') return;
  type Datagrams = {
    readonly maxDatagramSize: number;
    incomingHighWaterMark: number;
    outgoingHighWaterMark: number;
    readonly readable: ReadableStream<Uint8Array>;
    readonly writable?: WritableStream<Uint8Array>;
    createWritable?: (o?: unknown) => WritableStream<Uint8Array>;
  };
  const proto = (Real.prototype as object);
  const realDatagrams = Object.getOwnPropertyDescriptor(proto, 'datagrams')!.get!;
  const state: ShimState = { sessions: 0, nativeCreateWritable: false, createWritableCalls: 0, writes: 0, reads: 0, stalledAt: null };
  (globalThis as { __wtShim?: ShimState }).__wtShim = state;
  const stall = () => (state.stalledAt ??= performance.now());
  const wrapped = new WeakMap<object, object>();

  function wrap(real: Datagrams): object {
    state.nativeCreateWritable = typeof real.createWritable === 'function';
    let writes = 0;
    let reads = 0;
    let readable: ReadableStream<Uint8Array> | null = null;
    let legacyWriter: WritableStreamDefaultWriter<Uint8Array> | null = null;
    /** One outgoing stream in front of `target` (a native createWritable() stream, or the shared real writable). */
    const outgoing = (write: (chunk: Uint8Array) => Promise<void>): WritableStream<Uint8Array> =>
      new WritableStream<Uint8Array>({
        write(chunk) {
          writes++;
          state.writes++;
          if (cfg.stallWritesAfter !== undefined && writes > cfg.stallWritesAfter) {
            stall();
            return new Promise<void>(() => {}); // never completes: the stream backs up
          }
          return write(chunk);
        },
      });
    const d: Record<string, unknown> = {
      get maxDatagramSize() {
        return real.maxDatagramSize;
      },
      get incomingHighWaterMark() {
        return real.incomingHighWaterMark;
      },
      set incomingHighWaterMark(v: number) {
        real.incomingHighWaterMark = v;
      },
      get outgoingHighWaterMark() {
        return real.outgoingHighWaterMark;
      },
      set outgoingHighWaterMark(v: number) {
        real.outgoingHighWaterMark = v;
      },
      get readable() {
        readable ??= real.readable.pipeThrough(
          new TransformStream<Uint8Array, Uint8Array>({
            transform(chunk, c) {
              reads++;
              state.reads++;
              if (cfg.stallReadsAfter !== undefined && reads > cfg.stallReadsAfter) {
                stall();
                return;
              }
              c.enqueue(chunk);
            },
          }),
          { preventCancel: false },
        );
        return readable;
      },
      createWritable(options?: unknown) {
        state.createWritableCalls++;
        if (typeof real.createWritable === 'function') {
          const w = real.createWritable(options).getWriter();
          return outgoing((chunk) => w.write(chunk));
        }
        legacyWriter ??= real.writable!.getWriter();
        const w = legacyWriter;
        return outgoing((chunk) => w.write(chunk));
      },
    };
    if (!cfg.hideWritable && real.writable) {
      Object.defineProperty(d, 'writable', { get: () => real.writable, enumerable: true });
    }
    return d;
  }

  class ShimWebTransport extends (Real as new (url: string, o?: unknown) => object) {
    constructor(url: string, o?: unknown) {
      super(url, o);
      state.sessions++;
    }
    get datagrams(): object {
      let d = wrapped.get(this);
      if (!d) {
        d = wrap(realDatagrams.call(this) as Datagrams);
        wrapped.set(this, d);
      }
      return d;
    }
  }
  (globalThis as { WebTransport?: unknown }).WebTransport = ShimWebTransport;
}

async function run(page: Page, shim: ShimConfig, opts: Record<string, unknown>) {
  await page.addInitScript(installShim, shim);
  await page.goto(stack.pageUrl);
  await page.waitForFunction(() => 'ricochetEcho' in window);
  const r = await page.evaluate((o) => (window as unknown as { ricochetEcho: (o: unknown) => Promise<Record<string, unknown>> }).ricochetEcho(o), {
    relayHttp: stack.relayHttp,
    token: stack.token(),
    ...opts,
  });
  const state = await page.evaluate(() => (window as unknown as { __wtShim?: ShimState }).__wtShim ?? null);
  return { r, shim: state };
}

type FirstTransport = { kind: string; datagramWriter: string | null; stalled: string | null; maxInFlight: number | null };

test('no datagrams.writable (Safari 26.4): datagrams go through createWritable(), echo complete over WebTransport', async ({ page }) => {
  const { r, shim } = await run(page, { hideWritable: true }, {});
  const first = r.firstTransport as FirstTransport;
  console.log(JSON.stringify({ test: 'wt-createWritable', kind: r.kind, first, shim, received: r.received, lost: r.lost, rttP50: r.rttP50 }));
  expect(shim).not.toBeNull();
  expect(shim!.sessions).toBe(1);
  expect(shim!.createWritableCalls).toBe(1);
  expect(shim!.writes).toBeGreaterThan(1000);
  expect(r.kind).toBe('webtransport');
  expect(r.finalKind).toBe('webtransport');
  expect(first.datagramWriter).toBe('createWritable');
  expect(first.stalled).toBeNull();
  expect(r.events).toEqual([]);
  expect((r.transportDrops as { oversized: number }).oversized).toBe(0);
  expectComplete(r);
});

for (const mode of ['writes', 'reads'] as const) {
  test(`WebTransport stalls (${mode === 'writes' ? 'datagram writes stop completing' : 'datagrams stop arriving'}): the session resumes over WebSocket, nothing lost`, async ({ page }) => {
    const shimCfg: ShimConfig = mode === 'writes' ? { hideWritable: true, stallWritesAfter: 300 } : { hideWritable: true, stallReadsAfter: 300 };
    const { r, shim } = await run(page, shimCfg, { resume: true, pings: 50 });
    const first = r.firstTransport as FirstTransport;
    const times = r.eventTimes as { type: string; at: number }[];
    const detectMs = times[0] && shim?.stalledAt != null ? times[0].at - shim.stalledAt : null;
    console.log(JSON.stringify({ test: `wt-stall-${mode}`, kind: r.kind, finalKind: r.finalKind, first, shim, events: r.events, resumeKinds: r.resumeKinds, detectMs, maxGapMs: r.maxGapMs }));
    expect(r.kind).toBe('webtransport');
    expect(first.datagramWriter).toBe('createWritable');
    expect(shim!.stalledAt).not.toBeNull();
    // One WebTransport session only: the reconnect kept off the stalled one.
    expect(shim!.sessions).toBe(1);
    const events = r.events as { type: string; reason?: string; transport?: string }[];
    expect(events.map((e) => e.type)).toEqual(['reconnecting', 'resumed']);
    // Reads stopped: the SDK's quiet probes go unanswered (500 ms of silence, then 3 probes of ≥ 250 ms).
    expect(events[0]!.reason).toMatch(mode === 'writes' ? /webtransport stalled: a datagram write has not completed/ : /^no answer to 3 probes in \d+ ms of silence$/);
    expect(events[1]!.transport).toBe('websocket');
    expect(r.resumeKinds).toEqual(['websocket']);
    expect(r.finalKind).toBe('websocket');
    expect(first.stalled).not.toBeNull();
    // Detected within stallTimeoutMs (2 s) of the first stuck write, or
    // silenceTimeoutMs (4 s, the probes' upper bound) of the last datagram that arrived, plus timer slack.
    expect(detectMs).not.toBeNull();
    expect(detectMs!).toBeLessThan(mode === 'writes' ? 2_600 : 4_600);
    expectComplete(r);
  });
}
