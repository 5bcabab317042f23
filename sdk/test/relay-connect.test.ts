// connectRelay on its own: the URLs it derives from the relay's base URL, the
// `/cert-hash` it reads (again on every reconnect), the token asked for on
// each attempt, and the refusal of a base URL it cannot use. Sockets are
// fakes that reach an in-process Server; WebTransport is a fake that refuses.
import { afterEach, describe, expect, it } from 'vitest';
import { RicochetError } from '../src/errors.js';
import { connectRelay } from '../src/relay-connect.js';
import { Server } from '../src/server.js';
import type { WebSocketLike } from '../src/websocket.js';
import { forgetWebTransportStalls } from '../src/webtransport.js';

const cleanup: (() => void)[] = [];
afterEach(() => {
  cleanup.splice(0).reverse().forEach((f) => f());
  forgetWebTransportStalls();
  delete (globalThis as { WebTransport?: unknown }).WebTransport;
});

function echoServer(): Server {
  const server = new Server();
  server.on('message', ({ id, channel, data }) => server.send(id, channel, data));
  cleanup.push(() => server.shutdown());
  return server;
}

/** WebSockets that open at once and carry datagrams to `server`; `kill()` drops the newest as a network would. */
function sockets(server: Server) {
  const urls: string[] = [];
  const open: { onclose: ((e: { code?: number; reason?: string }) => void) | null; readyState: number }[] = [];
  const Ctor = class implements WebSocketLike {
    binaryType = 'arraybuffer';
    readyState = 1;
    bufferedAmount = 0;
    onopen: ((e: unknown) => void) | null = null;
    onmessage: ((e: { data: unknown }) => void) | null = null;
    onclose: ((e: { code?: number; reason?: string }) => void) | null = null;
    onerror: ((e: unknown) => void) | null = null;
    private readonly peer = {
      send: (d: Uint8Array) => {
        const copy = d.slice();
        queueMicrotask(() => this.readyState === 1 && this.onmessage?.({ data: copy.buffer }));
      },
    };
    constructor(url: string) {
      urls.push(url);
      open.push(this);
      queueMicrotask(() => this.onopen?.({}));
    }
    send(d: Uint8Array) {
      if (this.readyState === 1) server.handleDatagram(d, this.peer);
    }
    close() {
      this.readyState = 3;
    }
  };
  const kill = () => {
    const s = open.at(-1)!;
    s.readyState = 3;
    s.onclose?.({ code: 1006 });
  };
  return { Ctor, urls, kill };
}

/** A `fetch` for `/cert-hash` that records the URLs asked and answers `body` (or fails). */
function certHash(body: unknown, ok = true) {
  const asked: string[] = [];
  const fetch = async (url: string) => {
    asked.push(url);
    return { ok, status: ok ? 200 : 404, json: async () => body };
  };
  return { fetch, asked };
}

/** A WebTransport that records each session's URL and options, then refuses it. */
function refusingWebTransport() {
  const made: { url: string; options: unknown }[] = [];
  (globalThis as { WebTransport?: unknown }).WebTransport = class {
    readonly ready = Promise.reject(new Error('refused'));
    readonly closed = new Promise(() => {});
    readonly datagrams = {};
    constructor(url: string, options: unknown) {
      made.push({ url, options });
      this.ready.catch(() => {});
    }
    close() {}
  };
  return made;
}

const waitFor = async (cond: () => boolean, ms: number): Promise<boolean> => {
  const end = performance.now() + ms;
  while (!cond() && performance.now() < end) await new Promise((r) => setTimeout(r, 5));
  return cond();
};

describe('connectRelay', () => {
  it('derives the WebSocket URL from the base (wss for https), with the token encoded, and reads /cert-hash there', async () => {
    const ws = sockets(echoServer());
    const info = certHash({ webTransport: 'unavailable' });
    const conn = await connectRelay('https://relay.test:8443/ignored/path', 'a b+c', { transport: { WebSocket: ws.Ctor }, fetch: info.fetch });
    cleanup.push(() => conn.close());
    expect(conn.state).toBe('open');
    expect(conn.transport.kind).toBe('websocket');
    expect(info.asked).toEqual(['https://relay.test:8443/cert-hash']);
    expect(ws.urls).toEqual(['wss://relay.test:8443/ricochet?token=a%20b%2Bc']);
  });

  it('offers WebTransport on the URL\'s port (or webTransportPort) with the hashes /cert-hash lists', async () => {
    const made = refusingWebTransport();
    const ws = sockets(echoServer());
    const info = certHash({ certHashes: ['0a0b', 7, 'ff'], webTransport: 'available' });
    const conn = await connectRelay('http://relay.test:8080', 't', { transport: { WebSocket: ws.Ctor }, fetch: info.fetch, webTransportPort: 4433 });
    cleanup.push(() => conn.close());
    expect(made.map((m) => m.url)).toEqual(['https://relay.test:4433/ricochet?token=t']);
    // Only the strings among the hashes, as bytes.
    expect(made[0]!.options).toEqual({
      serverCertificateHashes: [
        { algorithm: 'sha-256', value: new Uint8Array([0x0a, 0x0b]) },
        { algorithm: 'sha-256', value: new Uint8Array([0xff]) },
      ],
    });
    expect(ws.urls).toEqual(['ws://relay.test:8080/ricochet?token=t']); // WebTransport refused: WebSocket
  });

  it('without /cert-hash (a production relay) WebTransport is still tried, without hashes; force keeps to one transport', async () => {
    const made = refusingWebTransport();
    const ws = sockets(echoServer());
    const conn = await connectRelay('https://relay.test', 't', { transport: { WebSocket: ws.Ctor }, fetch: certHash(null, false).fetch });
    cleanup.push(() => conn.close());
    expect(made).toEqual([{ url: 'https://relay.test:443/ricochet?token=t', options: {} }]);
    const forced = await connectRelay('https://relay.test', 't', { transport: { WebSocket: ws.Ctor }, fetch: certHash(null, false).fetch, force: 'websocket' });
    cleanup.push(() => forced.close());
    expect(made).toHaveLength(1);
    expect(ws.urls).toEqual(['wss://relay.test/ricochet?token=t', 'wss://relay.test/ricochet?token=t']);
  });

  it('asks for a token and reads /cert-hash again on every reconnect', async () => {
    const ws = sockets(echoServer());
    const info = certHash({ webTransport: 'unavailable' });
    let n = 0;
    const conn = await connectRelay('http://relay.test:8080', () => `tok${++n}`, { transport: { WebSocket: ws.Ctor }, fetch: info.fetch });
    cleanup.push(() => conn.close());
    let resumed = 0;
    conn.on('resumed', () => resumed++);
    ws.kill();
    expect(await waitFor(() => resumed === 1, 5000)).toBe(true);
    expect(ws.urls).toEqual(['ws://relay.test:8080/ricochet?token=tok1', 'ws://relay.test:8080/ricochet?token=tok2']);
    expect(info.asked).toHaveLength(2);
  });

  it('refuses a base URL that is not http(s)', async () => {
    for (const [url, message] of [
      ['relay test', 'relayUrl: not a URL: relay test'],
      ['wss://relay.test', 'relayUrl: expected http(s)://, got wss:'],
    ] as const) {
      const e = await connectRelay(url, 't').catch((err: unknown) => err);
      expect(e).toBeInstanceOf(RicochetError);
      expect((e as RicochetError).code).toBe('RICOCHET_ERR_INVALID_OPTIONS');
      expect((e as RicochetError).message).toBe(message);
    }
  });
});
