// Against a running relay, while a browser session keeps exchanging messages:
// bad tokens, a backend off the allowlist, garbage and oversized input, and a
// burst of half-open handshakes. Each gets its clear error; the healthy
// session is unaffected; the relay's memory returns to its baseline.
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { expect, test } from '@playwright/test';
import { WebSocket } from 'ws';
import { helloDatagram } from '../../bench/ricochet-packets.mjs';
import { startStack, type Stack } from '../stack.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

let stack: Stack;
test.beforeAll(async () => {
  stack = await startStack();
});
test.afterAll(async () => stack?.stop());

function rawClose(url: string, send?: (ws: WebSocket) => void): Promise<{ code: number; reason: string }> {
  return new Promise((resolve) => {
    const ws = new WebSocket(url);
    ws.on('open', () => send?.(ws));
    ws.on('close', (code, reason) => resolve({ code, reason: reason.toString() }));
    ws.on('error', () => {});
  });
}

async function heapAfterGc(): Promise<number> {
  for (let i = 0; i < 3; i++) {
    gc();
    await new Promise((r) => setTimeout(r, 50));
  }
  return process.memoryUsage().heapUsed;
}

test('hostile inputs are refused with clear errors while a healthy browser session carries on', async ({ page }) => {
  const ws = stack.relay.addresses().webSocketUrl;
  await page.goto(stack.pageUrl);
  await page.waitForFunction(() => 'ricochetEcho' in window);
  // A long healthy session in the browser over WebTransport.
  const healthy = page.evaluate(
    (o) => (window as unknown as { ricochetEcho: (o: unknown) => Promise<Record<string, unknown>> }).ricochetEcho(o),
    { relayHttp: stack.relayHttp, token: stack.token(), pings: 50, reliablePerChannel: 6000, unreliable: 1500 },
  );
  await new Promise((r) => setTimeout(r, 300));
  const baseline = await heapAfterGc();

  const good = stack.token();
  const holder = new WebSocket(`${ws}?token=${good}`);
  await new Promise((r) => holder.once('open', r));
  const refusals: [string, (ws: WebSocket) => void, RegExp | number][] = [
    [`${ws}?token=not-a-token`, () => {}, /^RELAY_ERR_TOKEN_MALFORMED/],
    [`${ws}?token=${good.slice(0, -2)}xx`, () => {}, /^RELAY_ERR_TOKEN_SIGNATURE/],
    // Expired: no new connection (its HELLO is refused); a take-over of a live one, DATA first, could still be.
    [`${ws}?token=${stack.token({ ttlSeconds: -1 })}`, (s) => s.send(helloDatagram(0x0e0e0e0e)), /^RELAY_ERR_TOKEN_EXPIRED/],
    [`${ws}?token=${good}`, () => {}, /^RELAY_ERR_TOKEN_IN_USE/],
    [`${ws}?token=${stack.token({ backend: '127.0.0.1:1' })}`, () => {}, /^RELAY_ERR_BACKEND_NOT_ALLOWED/],
    [`${ws}?token=${stack.token()}`, (s) => s.send(Buffer.from('garbage that is not a packet')), /^RELAY_ERR_MALFORMED_DATAGRAM/],
    [`${ws}?token=${stack.token()}`, (s) => s.send(Buffer.alloc(4000, 4)), 1009],
  ];
  for (const [url, act, want] of refusals) {
    const c = await rawClose(url, act);
    if (typeof want === 'number') expect(c.code).toBe(want);
    else expect(c.reason).toMatch(want);
  }
  holder.close();

  // A thousand half-open handshakes: sockets that upgrade and never speak.
  const burst: WebSocket[] = [];
  for (let i = 0; i < 1000; i++) {
    const s = new WebSocket(`${ws}?token=${stack.token()}`);
    s.on('error', () => {});
    burst.push(s);
  }
  const t0 = Date.now();
  while (burst.some((s) => s.readyState !== WebSocket.CLOSED) && Date.now() - t0 < 30_000) await new Promise((r) => setTimeout(r, 50));
  expect(burst.every((s) => s.readyState === WebSocket.CLOSED)).toBe(true);

  const r = await healthy;
  console.log(JSON.stringify({ test: 'healthy-under-attack', ...r }));
  expect(r.ordered0).toBe(true);
  expect(r.ordered1).toBe(true);
  expect(r.receipts).toBe(r.messages);

  const t1 = Date.now();
  while (stack.relay.sessionCount > 0 && Date.now() - t1 < 10_000) await new Promise((r) => setTimeout(r, 50));
  expect(stack.relay.sessionCount).toBe(0);
  const after = await heapAfterGc();
  console.log(JSON.stringify({ test: 'relay-heap', baselineMiB: baseline / 2 ** 20, afterMiB: after / 2 ** 20 }));
  expect(after - baseline).toBeLessThan(8 * 2 ** 20);
});
