// The browser (Chromium, Firefox) → relay → native Rust echo server, over WebTransport and over the
// WebSocket fallback: reliable messages complete and in order per channel,
// every message gets exactly one receipt.
import { createSocket } from 'node:dgram';
import { expect, test } from '@playwright/test';
import { MIN_DATAGRAM_SIZE } from '../browsers.js';
import { startStack, type Stack } from '../stack.js';
import { expectComplete } from '../echo-checks.js';

let stack: Stack;
test.beforeAll(async () => {
  stack = await startStack();
});
test.afterAll(async () => stack?.stop());

async function run(page: import('@playwright/test').Page, opts: Record<string, unknown>) {
  await page.goto(stack.pageUrl);
  await page.waitForFunction(() => 'ricochetEcho' in window);
  return page.evaluate((o) => (window as unknown as { ricochetEcho: (o: unknown) => Promise<Record<string, unknown>> }).ricochetEcho(o), {
    relayHttp: stack.relayHttp,
    token: stack.token(),
    ...opts,
  });
}

test('WebTransport: thousands of messages on two ordered channels plus unreliable, all receipts', async ({ page, browserName }) => {
  const r = await run(page, {});
  console.log(JSON.stringify({ test: 'webtransport', ...r }));
  expect(r.kind).toBe('webtransport');
  // Each browser's own datagram limit (Chromium exactly 1211; Firefox 1024 at
  // first, more later); the SDK sizes its packets to it and never sends one too large.
  if (browserName === 'chromium') expect(r.maxDatagramSize).toBe(MIN_DATAGRAM_SIZE.chromium);
  else expect(r.maxDatagramSize as number).toBeGreaterThanOrEqual(MIN_DATAGRAM_SIZE.firefox);
  expect((r.transportDrops as { oversized: number }).oversized).toBe(0);
  expectComplete(r);
});

test('connectRelay: one line from the relay URL and a token opens WebTransport with the hashes it fetches itself', async ({ page }) => {
  await page.goto(stack.pageUrl);
  const info = (await (await fetch(`${stack.relayHttp}/cert-hash`)).json()) as { webTransportUrl: string };
  const r = await page.evaluate(
    async (o) => {
      const { connectRelay } = await import('/sdk/index.js' as string);
      const conn = await connectRelay(o.relayHttp, o.token, { webTransportPort: o.wtPort });
      const got: number[] = [];
      conn.on('message', (m: { data: Uint8Array }) => got.push(m.data[0]!));
      for (let i = 0; i < 50; i++) conn.send(0, new Uint8Array([i, 1, 2, 3]));
      const t0 = performance.now();
      while (got.length < 50 && performance.now() - t0 < 5000) await new Promise((res) => setTimeout(res, 20));
      const kind = conn.transport.kind;
      conn.close();
      return { kind, got };
    },
    { relayHttp: stack.relayHttp, token: stack.token(), wtPort: Number(new URL(info.webTransportUrl).port) },
  );
  expect(r.kind).toBe('webtransport');
  expect(r.got).toEqual([...Array(50).keys()]);
});

test('a session moved from WebSocket to WebTransport mid-run keeps every message of 1,100 bytes and more', async ({ page }) => {
  // WebSocket carries 1200-byte datagrams, Firefox's WebTransport 1024 at first: the
  // session's packets must shrink with the move, and nothing in flight may be lost.
  const r = await run(page, { force: 'websocket', switchAtTick: 8, switchTo: 'webtransport', sizes: [1100, 3000, 80], reliablePerChannel: 600, pings: 20 });
  console.log(JSON.stringify({ test: 'switch-ws-to-wt', kind: r.kind, finalKind: r.finalKind, received: r.received, transportDrops: r.transportDrops }));
  expect(r.kind).toBe('websocket');
  expect(r.finalKind).toBe('webtransport');
  expect((r.transportDrops as { oversized: number }).oversized).toBe(0);
  expectComplete(r);
});

test('WebTransport unavailable: automatic WebSocket fallback, same guarantees', async ({ page }) => {
  const r = await run(page, { disableWebTransport: true });
  console.log(JSON.stringify({ test: 'websocket-fallback', ...r }));
  expect(r.kind).toBe('websocket');
  expect(String(r.fallbackReason)).toMatch(/not available/);
  expectComplete(r);
});

test('forced WebSocket', async ({ page }) => {
  const r = await run(page, { force: 'websocket' });
  console.log(JSON.stringify({ test: 'websocket-forced', ...r }));
  expect(r.kind).toBe('websocket');
  expectComplete(r);
});

test('WebTransport blocked (UDP black hole): falls back to WebSocket within the 1.5 s deadline', async ({ page }) => {
  // A UDP port that swallows everything: the QUIC handshake never completes.
  const hole = createSocket('udp4');
  await new Promise<void>((r) => hole.bind(0, '127.0.0.1', () => r()));
  try {
    const r = await run(page, { webTransportUrl: `https://127.0.0.1:${hole.address().port}/ricochet`, pings: 20, reliablePerChannel: 200, unreliable: 50 });
    console.log(JSON.stringify({ test: 'websocket-after-blackhole', kind: r.kind, fallbackReason: r.fallbackReason, transportMs: r.transportMs }));
    expect(r.kind).toBe('websocket');
    expect(String(r.fallbackReason)).toMatch(/within 1500 ms/);
    expect(r.transportMs as number).toBeLessThan(2500);
    expectComplete(r);
  } finally {
    hole.close();
  }
});
