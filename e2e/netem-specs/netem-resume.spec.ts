// Issue 4, disruptions across the emulated link (Chromium in namespace A,
// relay + native echo server in B, 10 ms each way + 2 ms jitter, 5 % iid loss):
// - the relay cuts the transport mid-session (as a network failure would) and
//   the SDK resumes the same session on a new one: nothing lost, in order,
//   the gap reported;
// - the page switches a live WebTransport session to WebSocket;
// - UDP is blocked on the link: WebTransport cannot open, and the page falls
//   back to WebSocket within the 1.5 s deadline.
// Needs root (namespaces, TUN). One JSON line per case is printed.
import { existsSync } from 'node:fs';
import { expect, test, type Browser } from '@playwright/test';
import { startNetemStack, type NetemStack } from '../netem-stack.js';
import { runEcho, type Result } from '../netem-echo.js';
import { expectComplete } from '../echo-checks.js';

const canRun = process.getuid?.() === 0 && existsSync('/dev/net/tun');
const LOAD = { pings: 50, reliablePerChannel: 1200, unreliable: 300 };
/** The SDK's default WebTransport → WebSocket fallback deadline. */
const DEADLINE_MS = 1_500;

type Events = { type: string; downtimeMs?: number; attempts?: number; transport?: string; reason?: string }[];

test.describe('netem resumption and fallback (s1_5pct)', () => {
  test.describe.configure({ mode: 'serial' });
  test.skip(!canRun, 'needs root and /dev/net/tun (network namespaces + TUN devices)');

  let stack: NetemStack | undefined;
  let browser: Browser;

  test.beforeAll(async ({}, info) => {
    test.setTimeout(90_000);
    stack = await startNetemStack({ profile: 's1_5pct', seed: 3 });
    browser = await stack.launchBrowser(info.project.use.browserName === 'firefox' ? 'firefox' : 'chromium');
  });
  test.afterAll(async () => {
    await stack?.stop();
  });

  const run = async (opts: Record<string, unknown>) => {
    const page = await browser.newPage();
    try {
      return (await runEcho(page, stack!, { ...LOAD, ...opts })).r;
    } finally {
      await page.close();
    }
  };

  for (const transport of ['webtransport', 'websocket'] as const) {
    test(`${transport}: a transport killed mid-session resumes the same session, nothing lost, gap reported`, async () => {
      const r = await run({ resume: true, killAtTick: 10, ...(transport === 'websocket' ? { force: 'websocket', resumeForce: 'websocket' } : { deadlineMs: 5_000 }) });
      const events = r.events as Events;
      const resumed = events.find((e) => e.type === 'resumed');
      console.log(JSON.stringify({ test: `netem-resume-${transport}`, kind: r.kind, resumeKinds: r.resumeKinds, events, maxGapMs: r.maxGapMs, rttP50: r.rttP50, retransmissions: r.retransmissions }));
      expect(r.kind).toBe(transport);
      expectComplete(r);
      expect(events.map((e) => e.type)).toEqual(['reconnecting', 'resumed']);
      expect(resumed!.transport).toBe(transport);
      // Reconnect (a new WebTransport or WebSocket handshake across 20 ms RTT
      // with 5 % loss) plus one round trip; bounded well below the 10 s window.
      // A WebSocket rides a new TCP connection, whose lost handshake packet
      // the kernel resends after 1 s, then 2 s more: CI's run of the seeded
      // link took 3.49 s on both tries (two such losses, by those steps; a
      // local run 1.08 s, one), and Firefox once 5.3 s over two attempts.
      // The kernel's backoff, not the SDK's; the window is still far off.
      expect(resumed!.downtimeMs!).toBeLessThan(transport === 'websocket' ? 7_500 : 3_000);
      expect(r.maxGapMs as number).toBeGreaterThanOrEqual(resumed!.downtimeMs! * 0.5);
    });
  }

  test('a live WebTransport session switched to WebSocket keeps every message', async () => {
    const r = await run({ switchAtTick: 10, switchTo: 'websocket', deadlineMs: 5_000 });
    const events = r.events as Events;
    console.log(JSON.stringify({ test: 'netem-switch-wt-to-ws', kind: r.kind, finalKind: r.finalKind, events, maxGapMs: r.maxGapMs }));
    expect(r.kind).toBe('webtransport');
    expect(r.finalKind).toBe('websocket');
    expectComplete(r);
    expect(events.map((e) => e.type)).toEqual(['reconnecting', 'resumed']);
  });
});

test.describe('netem UDP blocked on the link', () => {
  test.skip(!canRun, 'needs root and /dev/net/tun (network namespaces + TUN devices)');

  test('WebTransport cannot open; the page falls back to WebSocket within the deadline and the session works', async ({}, info) => {
    test.setTimeout(120_000);
    const stack = await startNetemStack({ settings: { delayMs: 10, jitterMs: 2 }, seed: 4, blockUdp: true });
    try {
      const browser = await stack.launchBrowser(info.project.use.browserName === 'firefox' ? 'firefox' : 'chromium');
      const page = await browser.newPage();
      const { r } = await runEcho(page, stack, { ...LOAD });
      const s = await stack.lab.stats();
      console.log(JSON.stringify({ test: 'netem-udp-blocked', kind: r.kind, fallbackReason: r.fallbackReason, transportMs: r.transportMs, udpBlocked: s.a_to_b.udp_blocked }));
      expect(r.kind).toBe('websocket');
      expect(r.fallbackReason).toBe(`webtransport handshake did not complete within ${DEADLINE_MS} ms`);
      // The deadline, then one WebSocket handshake across a 20 ms RTT.
      expect(r.transportMs as number).toBeGreaterThanOrEqual(DEADLINE_MS);
      expect(r.transportMs as number).toBeLessThan(DEADLINE_MS + 500);
      expect(s.a_to_b.udp_blocked).toBeGreaterThan(0);
      expectComplete(r);
    } finally {
      await stack.stop();
    }
  });
});
