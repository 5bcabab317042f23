// openTransport's choice on its own: WebTransport first; WebSocket when
// WebTransport is missing, fails, or is slower than the deadline; `force`;
// and the errors when nothing opens. Fake WebTransport sessions and sockets
// that only open or fail (the stall memory is tested in webtransport.test.ts).
import { afterEach, describe, expect, it, vi } from 'vitest';
import { RicochetError } from '../src/errors.js';
import { openTransport, type OpenTransportOptions } from '../src/select.js';
import type { WebSocketLike } from '../src/websocket.js';
import { forgetWebTransportStalls, recordWebTransportStall } from '../src/webtransport.js';

const WT_URL = 'https://relay.test:4433/ricochet?token=t1';
const WS_URL = 'wss://relay.test/ricochet?token=t1';

const cleanup: (() => void)[] = [];
afterEach(() => {
  cleanup.splice(0).forEach((f) => f());
  forgetWebTransportStalls();
  delete (globalThis as { WebTransport?: unknown }).WebTransport;
});

type WtBehaviour = 'open' | 'refuse' | 'throw' | 'hang' | 'slow';

/** Installs a fake WebTransport; returns the (url, options) of every session made. */
function fakeWebTransport(behaviour: WtBehaviour) {
  const made: { url: string; options: unknown }[] = [];
  (globalThis as { WebTransport?: unknown }).WebTransport = class {
    readonly ready: Promise<void>;
    readonly closed = new Promise<unknown>(() => {});
    readonly datagrams = { maxDatagramSize: 1200, readable: new ReadableStream<Uint8Array>(), writable: new WritableStream<Uint8Array>() };
    constructor(url: string, options: unknown) {
      made.push({ url, options });
      if (behaviour === 'throw') throw new TypeError('bad certificate hash');
      this.ready =
        behaviour === 'open'
          ? Promise.resolve()
          : behaviour === 'refuse'
            ? Promise.reject(new Error('Opening handshake failed.'))
            : behaviour === 'slow'
              ? new Promise((r) => setTimeout(r, 3_000))
              : new Promise(() => {});
      this.ready.catch(() => {});
    }
    close() {}
  };
  return made;
}

/** A WebSocket constructor whose sockets open, or fail as a refused connection does. */
function fakeWebSocket(behaviour: 'open' | 'refuse') {
  const urls: string[] = [];
  const Ctor = class implements WebSocketLike {
    binaryType = 'blob';
    readyState = 0;
    bufferedAmount = 0;
    onopen: ((e: unknown) => void) | null = null;
    onmessage: ((e: { data: unknown }) => void) | null = null;
    onclose: ((e: { code?: number; reason?: string }) => void) | null = null;
    onerror: ((e: unknown) => void) | null = null;
    constructor(url: string) {
      urls.push(url);
      queueMicrotask(() => {
        if (behaviour === 'open') {
          this.readyState = 1;
          this.onopen?.({});
        } else {
          this.onerror?.({});
          this.onclose?.({ code: 1006 });
        }
      });
    }
    send() {}
    close() {}
  };
  return { urls, Ctor };
}

async function open(o: OpenTransportOptions) {
  const choice = await openTransport(o);
  cleanup.push(() => choice.transport.close());
  return choice;
}

async function failure(o: OpenTransportOptions): Promise<RicochetError> {
  const e = await openTransport(o).then(
    (c) => {
      c.transport.close();
      return null;
    },
    (err: unknown) => err,
  );
  expect(e).toBeInstanceOf(RicochetError);
  return e as RicochetError;
}

describe('openTransport', () => {
  it('opens WebTransport when it can, with the certificate hashes as bytes, and WebSocket is never tried', async () => {
    const sessions = fakeWebTransport('open');
    const ws = fakeWebSocket('open');
    const c = await open({ webTransportUrl: WT_URL, webSocketUrl: WS_URL, WebSocket: ws.Ctor, serverCertificateHashes: ['0aff', 'AB:CD'] });
    expect(c.kind).toBe('webtransport');
    expect(c.transport.kind).toBe('webtransport');
    expect(c).not.toHaveProperty('fallbackReason');
    expect(c.elapsedMs).toBeGreaterThanOrEqual(0);
    expect(sessions).toHaveLength(1);
    expect(sessions[0]!.url).toBe(WT_URL);
    expect(sessions[0]!.options).toEqual({
      serverCertificateHashes: [
        { algorithm: 'sha-256', value: new Uint8Array([0x0a, 0xff]) },
        { algorithm: 'sha-256', value: new Uint8Array([0xab, 0xcd]) },
      ],
    });
    expect(ws.urls).toEqual([]);
  });

  it('falls back to WebSocket, saying why: no URL, no WebTransport in this runtime, refused, thrown, too slow', async () => {
    const ws = fakeWebSocket('open');
    const base = { webSocketUrl: WS_URL, WebSocket: ws.Ctor };
    expect((await open(base)).fallbackReason).toBe('no webTransportUrl given');
    expect((await open({ ...base, webTransportUrl: WT_URL })).fallbackReason).toBe('WebTransport is not available in this runtime');
    fakeWebTransport('refuse');
    expect((await open({ ...base, webTransportUrl: WT_URL })).fallbackReason).toBe('webtransport: Opening handshake failed.');
    fakeWebTransport('throw');
    expect((await open({ ...base, webTransportUrl: WT_URL })).fallbackReason).toBe('webtransport: bad certificate hash');
    fakeWebTransport('hang');
    const slow = await open({ ...base, webTransportUrl: WT_URL, deadlineMs: 30 });
    expect(slow.kind).toBe('websocket');
    expect(slow.fallbackReason).toBe('webtransport handshake did not complete within 30 ms');
    expect(ws.urls).toEqual(Array(5).fill(WS_URL));
  });

  it("force: 'websocket' never opens WebTransport; 'webtransport' never falls back", async () => {
    const sessions = fakeWebTransport('open');
    const ws = fakeWebSocket('open');
    const base = { webTransportUrl: WT_URL, webSocketUrl: WS_URL, WebSocket: ws.Ctor };
    const c = await open({ ...base, force: 'websocket' });
    expect(c.kind).toBe('websocket');
    expect(c.fallbackReason).toBe('forced websocket');
    expect(sessions).toHaveLength(0);
    fakeWebTransport('refuse');
    const e = await failure({ ...base, force: 'webtransport' });
    expect(e.code).toBe('RICOCHET_ERR_TRANSPORT_FAILED');
    expect(e.message).toBe('webtransport: Opening handshake failed.');
    expect(ws.urls).toEqual([WS_URL]); // only the forced WebSocket above
  });

  it("force: 'webtransport' waits out a slow handshake: there is nothing to fall back to", async () => {
    // A QUIC handshake that lost a packet or two on a lossy link takes seconds.
    vi.useFakeTimers();
    cleanup.push(() => vi.useRealTimers());
    fakeWebTransport('slow');
    const forced = openTransport({ webTransportUrl: WT_URL, force: 'webtransport' });
    await vi.advanceTimersByTimeAsync(3_000);
    const c = await forced;
    expect(c.kind).toBe('webtransport');
    c.transport.close();
    const ws = fakeWebSocket('open');
    const fallback = openTransport({ webTransportUrl: WT_URL, webSocketUrl: WS_URL, WebSocket: ws.Ctor });
    await vi.advanceTimersByTimeAsync(3_000);
    expect((await fallback).fallbackReason).toBe('webtransport handshake did not complete within 1500 ms');
  });

  it('with no transport to fall back to, the error says what failed', async () => {
    fakeWebTransport('refuse');
    const e = await failure({ webTransportUrl: WT_URL });
    expect(e.code).toBe('RICOCHET_ERR_TRANSPORT_FAILED');
    expect(e.message).toBe('no transport: webtransport: Opening handshake failed.; and no webSocketUrl given');
    const ws = fakeWebSocket('refuse');
    const down = await failure({ webTransportUrl: WT_URL, webSocketUrl: WS_URL, WebSocket: ws.Ctor });
    expect(down.code).toBe('RICOCHET_ERR_TRANSPORT_FAILED');
    expect(down.message).toBe('websocket to wss://relay.test/ricochet?token=[redacted] failed'); // no token in errors
  });

  it('after a recent stall both failing: the error names both', async () => {
    fakeWebTransport('refuse');
    recordWebTransportStall(WT_URL, 'writes stopped');
    const ws = fakeWebSocket('refuse');
    const e = await failure({ webTransportUrl: WT_URL, webSocketUrl: WS_URL, WebSocket: ws.Ctor });
    expect(e.code).toBe('RICOCHET_ERR_TRANSPORT_FAILED');
    expect(e.message).toBe('no transport: websocket to wss://relay.test/ricochet?token=[redacted] failed; then webtransport: webtransport: Opening handshake failed.');
  });
});
