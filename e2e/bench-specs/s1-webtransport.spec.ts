// S1's browser row: headless Chromium in namespace A sends 400-byte
// reliable-ordered messages at 60 Hz over WebTransport to the relay in
// namespace B, which forwards them to the native S1 receiver on B's loopback;
// the emulated link is the S1 profile (netem-stack.ts, the same machinery as
// the netem specs). Each cell writes browser-<cell>.json into
// RICOCHET_S1_OUT for bench/s1.mjs and asserts complete, in-order delivery.
//
// Clock: the page stamps performance.now() plus an offset to CLOCK_MONOTONIC
// (Chromium's performance.now() counts CLOCK_MONOTONIC on Linux), measured
// here by bracketing page.evaluate with process.hrtime; the narrowest of
// several brackets bounds the error, which the result reports.
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { expect, test, type Page } from '@playwright/test';
import { installCounters, readCounters } from '../../bench/s1-counters.mjs';
import { startNetemStack } from '../netem-stack.js';
import { ROOT } from '../stack.js';

const CELLS = (process.env.RICOCHET_S1_CELLS ?? 's1_clean,s1_1pct,s1_5pct,s1_bursty').split(',');
const COUNT = Number(process.env.RICOCHET_S1_COUNT ?? 10_000);
const OUT = process.env.RICOCHET_S1_OUT ?? join(ROOT, 'bench', 'results');
const SEED = Number(process.env.RICOCHET_S1_SEED ?? 1);
const SIZE = 400;
const HZ = 60;
const S1_PEER = join(ROOT, 'wasm', 'target', 'release', 'examples', 's1_peer');

const canRun = process.getuid?.() === 0 && existsSync('/dev/net/tun');

/** CLOCK_MONOTONIC ns minus the page's performance.now() in ns, and the bound on its error. */
async function clockOffset(page: Page): Promise<{ offsetNs: bigint; errorUs: number }> {
  let best = { width: Infinity, offsetNs: 0n };
  for (let i = 0; i < 40; i++) {
    const before = process.hrtime.bigint();
    const pageMs = await page.evaluate(() => performance.now());
    const after = process.hrtime.bigint();
    const width = Number(after - before);
    if (width < best.width) best = { width, offsetNs: (before + after) / 2n - BigInt(Math.round(pageMs * 1e6)) };
  }
  return { offsetNs: best.offsetNs, errorUs: best.width / 2000 };
}

for (const cell of CELLS) {
  test(`S1 ${cell}: Chromium over WebTransport through the relay delivers ${COUNT} messages in order`, async () => {
    test.skip(!canRun, 'needs root and /dev/net/tun (network namespaces + TUN devices)');
    test.setTimeout(((COUNT / HZ) * 1000) + 180_000);
    const maxMs = String(Math.round((COUNT / HZ) * 1000 + 90_000));
    const stack = await startNetemStack({
      profile: cell,
      seed: SEED,
      backend: { bin: S1_PEER, args: ['recv', '--listen', '127.0.0.1:0', '--count', String(COUNT), '--size', String(SIZE), '--max-ms', maxMs], rt: true },
    });
    try {
      const result = new Promise<Record<string, unknown>>((resolve) => {
        createInterface({ input: stack.backendProc.stdout! }).on('line', (l) => {
          if (l.startsWith('{"event":"result"')) resolve(JSON.parse(l));
        });
      });
      const wtPort = stack.relayInfo.wtPort as number;
      await installCounters(stack.lab, [{ ipProto: 'udp', port: wtPort }]);
      const browser = await stack.launchBrowser('chromium');
      const page = await browser.newPage();
      await page.goto(stack.pageUrl.replace('echo.html', 's1.html'));
      await page.waitForFunction(() => 'ricochetS1' in window);
      const clock = await clockOffset(page);
      const sender = await page.evaluate(
        (o) => (window as unknown as { ricochetS1: (o: unknown) => Promise<Record<string, unknown>> }).ricochetS1(o),
        { relayHttp: stack.relayHttp, token: stack.token(), count: COUNT, size: SIZE, hz: HZ, monoOffsetNs: clock.offsetNs.toString() },
      );
      const receiver = await result;
      const link = await stack.lab.stats();
      const wire = (await readCounters(stack.lab))[String(wtPort)];
      mkdirSync(OUT, { recursive: true });
      writeFileSync(join(OUT, `browser-${cell}.json`), JSON.stringify({ cell, sender, receiver, wire, link, clockErrorUs: clock.errorUs }));
      expect(sender.kind).toBe('webtransport');
      expect(receiver.received).toBe(COUNT);
      expect(receiver.order_errors).toBe(0);
      expect(receiver.corrupt).toBe(0);
    } finally {
      await stack.stop();
    }
  });
}
