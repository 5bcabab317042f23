// S1's browser rows: headless Chromium or Firefox ESR in namespace A sends
// 400-byte reliable-ordered messages at 60 Hz over WebTransport or WebSocket
// to the relay in namespace B, which forwards them to the native S1 receiver
// on B's loopback; the emulated link is the S1 profile (netem-stack.ts, the
// same machinery as the netem specs). Rows (browser, transport, connection
// configuration) are in bench/s1-browser-rows.mjs; RICOCHET_S1_ROWS picks
// them. Each row and cell writes browser-<row>-<cell>.json into
// RICOCHET_S1_OUT for bench/s1.mjs and asserts complete, in-order delivery.
//
// Clock: the page stamps performance.now() plus an offset to CLOCK_MONOTONIC,
// measured here by bracketing page.evaluate with process.hrtime; the
// narrowest of several brackets bounds the error, which the result reports.
// Only the rate has to match CLOCK_MONOTONIC's, not the origin, so this holds
// in both browsers; Firefox's 1 ms rounding of performance.now() is turned
// off for it (bench/s1-browser-rows.mjs says why).
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { expect, test, type Page } from '@playwright/test';
import { BROWSER_ROWS, DEFAULT_BROWSER_ROWS, FIREFOX_MEASURE_PREFS, LOW_LATENCY } from '../../bench/s1-browser-rows.mjs';
import { installCounters, readCounters } from '../../bench/s1-counters.mjs';
import { waitEvent } from '../child-events.js';
import { startNetemStack } from '../netem-stack.js';
import { ROOT } from '../stack.js';

const CELLS = (process.env.RICOCHET_S1_CELLS ?? 's1_clean,s1_1pct,s1_5pct,s1_bursty').split(',');
const COUNT = Number(process.env.RICOCHET_S1_COUNT ?? 10_000);
const OUT = process.env.RICOCHET_S1_OUT ?? join(ROOT, 'bench', 'results');
const SEED = Number(process.env.RICOCHET_S1_SEED ?? 1);
const ROWS = (process.env.RICOCHET_S1_ROWS ?? DEFAULT_BROWSER_ROWS.join(',')).split(',').map((k) => {
  const r = BROWSER_ROWS.find((x) => x.key === k);
  if (!r) throw new Error(`RICOCHET_S1_ROWS: unknown row ${k} (rows: ${BROWSER_ROWS.map((x) => x.key).join(', ')})`);
  return r;
});
const SIZE = 400;
const HZ = 60;
const S1_PEER = join(ROOT, 'wasm', 'target', 'release', 'examples', 's1_peer');
const MONO_CLOCK_SERVER = join(ROOT, 'e2e', 'mono-clock-server.mjs');

const canRun = process.getuid?.() === 0 && existsSync('/dev/net/tun');

/**
 * The same through a fetch to mono-clock-server.mjs on the browser's own
 * loopback: a bracket of one loopback round trip instead of one trip through
 * the browser's driver. Null if the page cannot reach it.
 */
async function loopbackClockOffset(page: Page, port: number, via: 'fetch' | 'websocket'): Promise<{ offsetNs: bigint; errorUs: number; via: string } | null> {
  const r = await page.evaluate(
    async ({ port, via }) => {
      let best = { width: Infinity, mid: 0, mono: '' };
      try {
        let ask: () => Promise<string>;
        if (via === 'fetch') {
          ask = async () => (await fetch(`http://127.0.0.1:${port}/`, { cache: 'no-store' })).text();
        } else {
          const ws = new WebSocket(`ws://127.0.0.1:${port}/`);
          await new Promise((res, rej) => ((ws.onopen = res), (ws.onerror = rej)));
          ask = () => new Promise<string>((res) => ((ws.onmessage = (e) => res(String(e.data))), ws.send('t')));
        }
        for (let i = 0; i < 100; i++) {
          const before = performance.now();
          const mono = await ask();
          const after = performance.now();
          if (i >= 5 && after - before < best.width) best = { width: after - before, mid: (before + after) / 2, mono };
        }
      } catch (e) {
        return { error: String(e) };
      }
      return best;
    },
    { port, via },
  );
  if ('error' in r || !r.mono) return null;
  return { offsetNs: BigInt(r.mono) - BigInt(Math.round(r.mid * 1e6)), errorUs: (r.width * 1000) / 2, via };
}

/** CLOCK_MONOTONIC ns minus the page's performance.now() in ns, and the bound on its error. */
async function clockOffset(page: Page): Promise<{ offsetNs: bigint; errorUs: number; via: string } | null> {
  let best = { width: Infinity, offsetNs: 0n };
  for (let i = 0; i < 40; i++) {
    const before = process.hrtime.bigint();
    const pageMs = await page.evaluate(() => performance.now());
    const after = process.hrtime.bigint();
    const width = Number(after - before);
    if (width < best.width) best = { width, offsetNs: (before + after) / 2n - BigInt(Math.round(pageMs * 1e6)) };
  }
  return { offsetNs: best.offsetNs, errorUs: best.width / 2000, via: 'evaluate' };
}

for (const cell of CELLS) for (const row of ROWS) {
  test(`S1 ${cell} ${row.key}: ${row.label} delivers ${COUNT} messages in order`, async () => {
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
      // WebTransport: QUIC to the relay's UDP port; WebSocket: TCP to its HTTP port (which also
      // serves the page's one /cert-hash request, ~1 KB).
      const ws = row.transport === 'websocket';
      const port = (ws ? stack.relayInfo.httpPort : stack.relayInfo.wtPort) as number;
      await installCounters(stack.lab, [{ ipProto: ws ? 'tcp' : 'udp', port }]);
      const browser = await stack.launchBrowser(row.browser, { firefoxPrefs: row.coarseClock ? {} : FIREFOX_MEASURE_PREFS });
      const page = await browser.newPage();
      await page.goto(stack.pageUrl.replace('echo.html', 's1.html'));
      await page.waitForFunction(() => 'ricochetS1' in window);
      const clockServer = stack.lab.exec(stack.lab.nsA, process.execPath, [MONO_CLOCK_SERVER], { stdio: ['pipe', 'pipe', 'inherit'] });
      const clockPort = (await waitEvent(clockServer, 'listening', 'clock server')).port as number;
      // Three ways to the page's clock offset; the narrowest bracket wins, and the
      // spread of the three is reported beside its bound.
      const ways = [await clockOffset(page), await loopbackClockOffset(page, clockPort, 'fetch'), await loopbackClockOffset(page, clockPort, 'websocket')];
      clockServer.kill('SIGTERM');
      const found = ways.filter((w) => w !== null);
      const clock = found.reduce((a, b) => (b.errorUs < a.errorUs ? b : a));
      const clockWays = found.map((w) => ({ via: w.via, errorUs: Math.round(w.errorUs), deltaUs: Number(w.offsetNs - clock.offsetNs) / 1000 }));
      const sender = await page.evaluate(
        (o) => (window as unknown as { ricochetS1: (o: unknown) => Promise<Record<string, unknown>> }).ricochetS1(o),
        {
          relayHttp: stack.relayHttp,
          token: stack.token(),
          count: COUNT,
          size: SIZE,
          hz: HZ,
          monoOffsetNs: clock.offsetNs.toString(),
          force: row.transport,
          lowLatency: row.config === 'low_latency' ? { ...LOW_LATENCY, ...(row.fec ? { fec: row.fec } : {}), ...(row.fecBudget ? { fecBudget: row.fecBudget } : {}) } : null,
          burst: row.burst ?? null,
        },
      );
      const receiver = await result;
      const link = await stack.lab.stats();
      const wire = (await readCounters(stack.lab))[String(port)];
      // Datagrams that reached the relay from the page vs those the SDK handed the browser:
      // the gap is the link's loss plus what the browser's QUIC stack discarded.
      const relay = ws ? null : await stack.relayDatagrams('webtransport');
      mkdirSync(OUT, { recursive: true });
      writeFileSync(join(OUT, `browser-${row.key}-${cell}.json`), JSON.stringify({ cell, row: row.key, sender, receiver, wire, link, relay, clockErrorUs: clock.errorUs, clockVia: clock.via, clockWays }));
      expect(sender.kind).toBe(row.transport);
      expect(receiver.received).toBe(COUNT);
      expect(receiver.order_errors).toBe(0);
      expect(receiver.corrupt).toBe(0);
    } finally {
      await stack.stop();
    }
  });
}
