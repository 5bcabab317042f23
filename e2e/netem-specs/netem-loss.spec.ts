// Issue 4, "Playwright under loss": headless Chromium in namespace A, relay +
// native echo server in namespace B, joined by ricochet-netem's emulated link
// (10 ms each way + up to 2 ms jitter, i.e. ~20-22 ms RTT) with no loss, 5 %
// iid loss (s1_5pct) and Gilbert-Elliott bursty loss (s1_bursty), over
// WebTransport and over forced WebSocket. Needs root (namespaces, TUN).
//
// Asserted per case: reliable channels complete and in order, exactly one
// receipt per message, the page's measured RTT near 20 ms, and the emulator's
// counters showing loss near the setting. One JSON line per case is printed.
import { existsSync } from 'node:fs';
import { expect, test, type Browser, type Page } from '@playwright/test';
import { startNetemStack, type DirectionStats, type LabStats, type NetemStack } from '../netem-stack.js';

const CASES = [
  { name: 'clean', lab: { settings: { delayMs: 10, jitterMs: 2 } }, loss: 0 },
  { name: 's1_5pct', lab: { profile: 's1_5pct' }, loss: 0.05 },
  { name: 's1_bursty', lab: { profile: 's1_bursty' }, loss: 0.1 },
] as const;

// Smaller than browser-echo's defaults: a TCP stream under 10 % bursty loss is slow.
const LOAD = { pings: 200, reliablePerChannel: 1000, unreliable: 500 };
// RTT: 2 × 10 ms + jitter (uniform 0-2 ms each way) + relay and echo server.
const RTT_MIN_MS = 19;
const RTT_MAX_MS = 32;

const canRun = process.getuid?.() === 0 && existsSync('/dev/net/tun');

type Result = Record<string, unknown>;

function delta(after: DirectionStats, before: DirectionStats | undefined) {
  const packets = after.packets_in - (before?.packets_in ?? 0);
  const lost = after.lost - (before?.lost ?? 0);
  return { packets, lost, lossRatio: packets ? lost / packets : 0, delayP50Us: after.delay_us.p50, delayP99Us: after.delay_us.p99, lateP99Us: after.late_us.p99 };
}

async function runEcho(page: Page, stack: NetemStack, opts: Record<string, unknown>): Promise<{ r: Result; sdk: Result | null }> {
  await page.goto(stack.pageUrl);
  await page.waitForFunction(() => 'ricochetEcho' in window);
  // Keep the connection's last stats() (echo.js calls it just before close) for the report.
  await page.evaluate(async () => {
    const w = window as unknown as { __lastStats?: unknown };
    const m = (await import('/sdk/index.js' as string)) as { Connection: { prototype: { stats(): unknown } } };
    const orig = m.Connection.prototype.stats;
    m.Connection.prototype.stats = function (this: unknown) {
      const s = orig.call(this);
      w.__lastStats = s;
      return s;
    };
  });
  const r = await page.evaluate((o) => (window as unknown as { ricochetEcho: (o: unknown) => Promise<Result> }).ricochetEcho(o), {
    relayHttp: stack.relayHttp,
    token: stack.token(),
    ...LOAD,
    ...opts,
  });
  const sdk = await page.evaluate(() => {
    const s = (window as unknown as { __lastStats?: Record<string, unknown> }).__lastStats;
    return s ? { rttMs: s.rttMs, minRttMs: s.minRttMs, lossOut: s.lossOut, lossIn: s.lossIn, packetsOut: s.packetsOut, packetsIn: s.packetsIn, packetsLost: s.packetsLost } : null;
  });
  return { r, sdk };
}

for (const c of CASES) {
  test.describe(`netem ${c.name}`, () => {
    test.describe.configure({ mode: 'serial' });
    test.skip(!canRun, 'needs root and /dev/net/tun (network namespaces + TUN devices)');

    let stack: NetemStack | undefined;
    let browser: Browser;
    let before: LabStats | undefined;

    test.beforeAll(async ({}, info) => {
      test.setTimeout(90_000);
      stack = await startNetemStack({ ...c.lab, seed: 1 });
      browser = await stack.launchBrowser((info.project.use.launchOptions?.args as string[] | undefined) ?? []);
    });
    test.afterAll(async () => {
      await stack?.stop();
    });

    for (const transport of ['webtransport', 'websocket'] as const) {
      test(`${transport} under ${c.name}: reliable complete and in order, one receipt each, RTT ≈ 20 ms, link loss ≈ ${c.loss * 100} %`, async () => {
        const s = stack!;
        before = await s.lab.stats();
        const t0 = Date.now();
        const page = await browser.newPage();
        let res: { r: Result; sdk: Result | null };
        try {
          res = await runEcho(page, s, transport === 'websocket' ? { force: 'websocket' } : {});
        } finally {
          await page.close();
        }
        const { r, sdk } = res;
        const after = await s.lab.stats();
        const ab = delta(after.a_to_b, before.a_to_b);
        const ba = delta(after.b_to_a, before.b_to_a);
        const linkLoss = (ab.lost + ba.lost) / Math.max(1, ab.packets + ba.packets);
        const received = r.received as number[];
        const unreliableRatio = received[2] / (r.unreliableSent as number);
        console.log(
          JSON.stringify({
            test: `netem-${c.name}-${transport}`,
            kind: r.kind,
            fallbackReason: r.fallbackReason,
            transportMs: r.transportMs,
            rttP50: r.rttP50,
            rttP99: r.rttP99,
            sdk,
            received,
            messages: r.messages,
            receipts: r.receipts,
            lostReceipts: r.lost,
            retransmissions: r.retransmissions,
            unreliableDelivery: Number(unreliableRatio.toFixed(4)),
            linkLossSetting: c.loss,
            linkLoss: Number(linkLoss.toFixed(4)),
            a_to_b: ab,
            b_to_a: ba,
            seconds: (Date.now() - t0) / 1000,
          }),
        );
        expect(r.kind).toBe(transport);
        expect(r.ordered0).toBe(true);
        expect(r.ordered1).toBe(true);
        expect(r.corrupt).toBe(0);
        expect(r.receipts).toBe(r.messages);
        expect(r.doubleReceipts).toBe(0);
        expect(r.rttP50 as number).toBeGreaterThanOrEqual(RTT_MIN_MS);
        expect(r.rttP50 as number).toBeLessThanOrEqual(RTT_MAX_MS);
        // The link's own counters: loss near the setting (per-packet, both directions).
        expect(ab.packets).toBeGreaterThan(200);
        expect(ba.packets).toBeGreaterThan(200);
        if (c.loss === 0) {
          expect(ab.lost + ba.lost).toBe(0);
          expect(unreliableRatio).toBe(1);
        } else {
          expect(linkLoss).toBeGreaterThan(c.loss * 0.5);
          expect(linkLoss).toBeLessThan(c.loss * 1.6);
          if (transport === 'webtransport') {
            // Datagrams: unreliable echoes are lost on the way out or back.
            expect(unreliableRatio).toBeLessThan(1);
            expect(r.retransmissions as number).toBeGreaterThan(0);
          } else {
            // TCP retransmits underneath; only the SDK's own backpressure
            // (maxAgeMs, highWaterBytes) could drop an unreliable message.
            expect(unreliableRatio).toBeGreaterThanOrEqual(0.95);
          }
        }
      });
    }
  });
}
