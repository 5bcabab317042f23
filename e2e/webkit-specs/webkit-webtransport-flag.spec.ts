// WebKitGTK with its WebTransport feature flag (MiniBrowser
// --features=+WebTransport). WebKitGTK 2.50 then defines `WebTransport`, but
// has no QUIC or HTTP/3 client behind it: on every port but Apple's, the
// network process's NetworkTransportSession is a stub that answers "no
// session" (WebKit Source/WebKit/NetworkProcess/webtransport/
// NetworkTransportSession.cpp, `#if !PLATFORM(COCOA)`), so `ready` rejects
// within milliseconds, with `undefined`, before any DNS lookup or UDP packet.
// Nothing the relay could change (certificate hashes, HTTP/3 SETTINGS) is
// involved: the relay is never contacted. Evidence: ../webkit-webtransport.md.
//
// These tests pin that down, so that a WebKitGTK that does implement it is
// noticed (the UDP check fails), and check the SDK's fallback when
// WebTransport exists but fails at once: WebSocket, at once, reason given.
import { createSocket, type Socket } from 'node:dgram';
import { expect, test } from '@playwright/test';
import { startStack, type Stack } from '../stack.js';
import { startWebKit, webkitAvailable, type WebKit } from '../webkit.js';
import { expectComplete } from '../echo-checks.js';

type Result = Record<string, unknown>;

test.describe('webkitgtk --features=+WebTransport', () => {
  test.describe.configure({ mode: 'serial' });
  test.skip(!webkitAvailable(), 'WebKitGTK MiniBrowser, WebKitWebDriver or Xvfb missing (npm test installs them)');

  let stack: Stack | undefined;
  let wk: WebKit | undefined;
  test.beforeAll(async () => {
    test.setTimeout(60_000);
    stack = await startStack();
    wk = await startWebKit({ features: ['+WebTransport'] });
  });
  test.afterAll(async () => {
    await wk?.quit();
    await stack?.stop();
  });

  async function open() {
    await wk!.navigate(stack!.pageUrl);
    await wk!.waitFor(`return 'ricochetEcho' in window`);
  }

  test('WebTransport is defined, but a session fails at once and sends no UDP', async () => {
    // A UDP socket that counts what reaches it: a QUIC Initial would.
    const hole: Socket = createSocket('udp4');
    let datagrams = 0;
    hole.on('message', () => datagrams++);
    await new Promise<void>((r) => hole.bind(0, '127.0.0.1', () => r()));
    try {
      await open();
      const info = (await (await fetch(`${stack!.relayHttp}/cert-hash`)).json()) as { webTransportUrl: string; certHashes: string[] };
      const r = await wk!.execute<Record<string, { ms: number; ready: string; closed: string }> & { wt: string }>(
        `const [targets, hashes] = arguments;
        const hex = (h) => new Uint8Array(h.match(/../g).map((x) => parseInt(x, 16)));
        const out = { wt: typeof WebTransport };
        for (const [name, url] of Object.entries(targets)) {
          const t0 = performance.now();
          const wt = new WebTransport(url, { serverCertificateHashes: hashes.map((h) => ({ algorithm: 'sha-256', value: hex(h) })) });
          const outcome = (p) => Promise.race([
            p.then(() => 'resolved', (e) => 'rejected: ' + (e === undefined ? 'undefined' : String(e))),
            new Promise((r) => setTimeout(() => r('pending after 3 s'), 3000)),
          ]);
          const ready = await outcome(wt.ready);
          out[name] = { ms: performance.now() - t0, ready, closed: await outcome(wt.closed) };
        }
        return out;`,
        {
          relay: `${info.webTransportUrl}?token=${encodeURIComponent(stack!.token())}`,
          udpHole: `https://127.0.0.1:${(hole.address() as { port: number }).port}/ricochet`,
          unresolvable: 'https://ricochet.invalid:4433/ricochet',
        },
        info.certHashes,
      );
      await new Promise((res) => setTimeout(res, 300));
      console.log(JSON.stringify({ test: 'webkit-webtransport-flag', version: wk!.version, ...r, udpDatagramsAtHole: datagrams }));
      expect(r.wt).toBe('function');
      for (const target of ['relay', 'udpHole', 'unresolvable']) {
        // Same outcome whatever the target, even a host that cannot resolve: nothing is tried.
        expect(r[target].ready).toBe('rejected: undefined');
        expect(r[target].closed).toBe('rejected: undefined');
        expect(r[target].ms).toBeLessThan(500);
      }
      expect(datagrams).toBe(0);
    } finally {
      hole.close();
    }
  });

  test('automatic choice: WebTransport fails at once, the SDK falls back to WebSocket at once and says why', async () => {
    await open();
    const r = await wk!.call<Result>('ricochetEcho', { relayHttp: stack!.relayHttp, token: stack!.token(), pings: 50, reliablePerChannel: 1000, unreliable: 250 });
    console.log(JSON.stringify({ test: 'webkit-webtransport-flag-fallback', kind: r.kind, fallbackReason: r.fallbackReason, transportMs: r.transportMs, receipts: r.receipts, messages: r.messages }));
    expect(r.kind).toBe('websocket');
    expect(String(r.fallbackReason)).toMatch(/^webtransport: .*undefined/);
    // Not the 1.5 s deadline: the failure is immediate.
    expect(r.transportMs as number).toBeLessThan(500);
    expectComplete(r);
  });
});
