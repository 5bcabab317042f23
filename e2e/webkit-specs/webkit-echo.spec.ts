// WebKitGTK (MiniBrowser, driven through WebKitWebDriver: see ../webkit.ts)
// → relay → native Rust echo server. WebKitGTK exposes no WebTransport by
// default, so every session here runs over the WebSocket fallback: the same
// echo page and checks as specs/browser-echo.spec.ts (reliable messages
// complete and in order per channel, exactly one receipt per message), the
// automatic fallback and its reason, and resumption after the relay cuts the
// transport mid-session.
import { expect, test } from '@playwright/test';
import { startStack, type Stack } from '../stack.js';
import { startWebKit, webkitAvailable, type WebKit } from '../webkit.js';
import { expectComplete } from '../echo-checks.js';

type Result = Record<string, unknown>;
type Events = { type: string; downtimeMs?: number; transport?: string; reason?: string }[];

test.describe('webkitgtk: echo over WebSocket', () => {
  test.describe.configure({ mode: 'serial' });
  test.skip(!webkitAvailable(), 'WebKitGTK MiniBrowser, WebKitWebDriver or Xvfb missing (npm test installs them)');

  let stack: Stack | undefined;
  let wk: WebKit | undefined;
  test.beforeAll(async () => {
    test.setTimeout(60_000);
    stack = await startStack({ testControl: true });
    wk = await startWebKit();
  });
  test.afterAll(async () => {
    await wk?.quit();
    await stack?.stop();
  });

  async function run(opts: Record<string, unknown>): Promise<Result> {
    await wk!.navigate(stack!.pageUrl);
    await wk!.waitFor(`return 'ricochetEcho' in window`);
    return wk!.call<Result>('ricochetEcho', { relayHttp: stack!.relayHttp, token: stack!.token(), ...opts });
  }

  test('WebTransport is absent by default', async () => {
    await wk!.navigate(stack!.pageUrl);
    const r = await wk!.execute<{ wt: string; ua: string; secure: boolean }>(
      `return { wt: typeof WebTransport, ua: navigator.userAgent, secure: window.isSecureContext }`,
    );
    console.log(JSON.stringify({ test: 'webkit-features', version: wk!.version, ...r }));
    expect(r.wt).toBe('undefined');
    // Not for want of a secure context: http://127.0.0.1 is one.
    expect(r.secure).toBe(true);
  });

  test('forced WebSocket: thousands of messages on two ordered channels plus unreliable, all receipts', async () => {
    const r = await run({ force: 'websocket' });
    console.log(JSON.stringify({ test: 'webkit-websocket-forced', ...r }));
    expect(r.kind).toBe('websocket');
    expectComplete(r);
  });

  test('automatic choice: WebTransport absent, falls back to WebSocket and says why', async () => {
    const r = await run({});
    console.log(JSON.stringify({ test: 'webkit-websocket-fallback', ...r }));
    expect(r.kind).toBe('websocket');
    expect(r.fallbackReason).toBe('WebTransport is not available in this runtime');
    expectComplete(r);
  });

  test('a transport killed mid-session resumes the same session over WebSocket, nothing lost', async () => {
    const r = await run({ resume: true, killAtTick: 10, pings: 50, reliablePerChannel: 1200, unreliable: 300 });
    const events = r.events as Events;
    const resumed = events.find((e) => e.type === 'resumed');
    console.log(JSON.stringify({ test: 'webkit-resume', kind: r.kind, resumeKinds: r.resumeKinds, events, maxGapMs: r.maxGapMs, retransmissions: r.retransmissions }));
    expect(r.kind).toBe('websocket');
    expectComplete(r);
    expect(events.map((e) => e.type)).toEqual(['reconnecting', 'resumed']);
    expect(resumed!.transport).toBe('websocket');
    expect(r.resumeKinds).toEqual(['websocket']);
    expect(resumed!.downtimeMs!).toBeLessThan(3_000);
  });
});
