// The relay's close codes reach the page over WebTransport, as they do over
// WebSocket, so the SDK can tell a final refusal (4410, 4401) from a transient
// one (4002). The relay ends a session with a close notice on a unidirectional
// stream (read by the SDK) and then the WebTransport session close
// (CLOSE_WEBTRANSPORT_SESSION, for `WebTransport.closed`); see close_task in
// relay/native/src/lib.rs. Before, Chromium only saw "Connection lost".
import { expect, test } from '@playwright/test';
import { startStack, type Stack } from '../stack.js';

let stack: Stack;
test.beforeAll(async () => {
  stack = await startStack();
});
test.afterAll(async () => stack?.stop());

type Fn = 'rawClose' | 'sdkTransportClose' | 'connectionRefusal' | 'openLive';
async function call(page: import('@playwright/test').Page, fn: Fn, o: Record<string, unknown>, s = stack) {
  await page.goto(s.pageUrl.replace('echo.html', 'close-codes.html'));
  await page.waitForFunction((f) => f in window, fn);
  return page.evaluate(
    ([f, a]) => (window as unknown as Record<string, (o: unknown) => Promise<Record<string, unknown>>>)[f as string]!(a),
    [fn, { relayHttp: s.relayHttp, ...o }] as const,
  );
}

test('a take-over the game server does not answer: the page gets 4410 RELAY_ERR_RESUME_FAILED (close notice, session close)', async ({ page }) => {
  const r = await call(page, 'rawClose', { token: stack.token(), sendData: true });
  console.log(JSON.stringify({ test: 'raw-4410', ...r }));
  // The close notice the SDK reads: "RCLS", 4410 (u16 big-endian), the reason.
  const reason = 'RELAY_ERR_RESUME_FAILED: the game server does not know this session';
  expect(r.notice).toBe(Buffer.concat([Buffer.from('RCLS'), Buffer.from([4410 >> 8, 4410 & 0xff]), Buffer.from(reason)]).toString('hex'));
  // Then the WebTransport session close. Chromium 156 passes it on to the page
  // most of the time; now and then its network service's teardown overtakes it
  // and `closed` rejects with "Connection lost." (why the notice exists).
  if (r.resolved) expect(r).toMatchObject({ closeCode: 4410, reason });
  else expect(r.error).toMatch(/Connection lost/);
});

test("the SDK transport's onClose carries the relay's code and name (4410)", async ({ page }) => {
  const r = (await call(page, 'sdkTransportClose', { token: stack.token(), sendData: true })) as { reason: string; relay: Record<string, unknown> | null };
  console.log(JSON.stringify({ test: 'sdk-4410', ...r }));
  expect(r.relay).toMatchObject({ code: 4410, error: 'RELAY_ERR_RESUME_FAILED' });
});

test('an expired token over WebTransport: conn.ready rejects with err.relay.code 4401', async ({ page }) => {
  const r = await call(page, 'connectionRefusal', { token: stack.token({ ttlSeconds: -1 }) });
  console.log(JSON.stringify({ test: 'expired-4401', ...r }));
  expect(r.ready).toBe(false);
  expect(r.relay).toMatchObject({ code: 4401, error: 'RELAY_ERR_TOKEN_EXPIRED' });
});

test('a draining relay moves a live WebTransport session with 4002 RELAY_SESSION_MOVING', async ({ page }) => {
  const own = await startStack({ drainNoticeMs: 0, drainMs: 5000 });
  try {
    expect(await call(page, 'openLive', { token: own.token() }, own)).toBe(true);
    const drained = own.relay.drain();
    const r = (await page.evaluate(() => (window as unknown as { liveClose: Promise<Record<string, unknown>> }).liveClose)) as {
      reason: string;
      relay: Record<string, unknown> | null;
    };
    console.log(JSON.stringify({ test: 'drain-4002', ...r }));
    expect(r.relay).toMatchObject({ code: 4002, error: 'RELAY_SESSION_MOVING' });
    await drained;
  } finally {
    await own.stop();
  }
});
