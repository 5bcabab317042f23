// WebSocket transport against a real `ws` server in Node, plus the
// backpressure rule with a socket whose buffer we control.
import { afterEach, describe, expect, it } from 'vitest';
import { WebSocket, WebSocketServer } from 'ws';
import { Connection } from '../src/connection.js';
import { Server } from '../src/server.js';
import { WebSocketTransport, type WebSocketLike } from '../src/websocket.js';

const cleanup: (() => void)[] = [];
afterEach(() => cleanup.splice(0).reverse().forEach((f) => f()));

/** A socket that opens at once, records writes, and whose send buffer the test sets. */
function stallingSocket() {
  const state = { buffered: 0, written: [] as Uint8Array[], Ctor: undefined as unknown as new (url: string) => WebSocketLike };
  state.Ctor = class implements WebSocketLike {
    binaryType = 'arraybuffer';
    readyState = 1;
    onopen: ((e: unknown) => void) | null = null;
    onmessage: ((e: { data: unknown }) => void) | null = null;
    onclose: ((e: { code?: number }) => void) | null = null;
    onerror: ((e: unknown) => void) | null = null;
    constructor() {
      queueMicrotask(() => this.onopen?.({}));
    }
    get bufferedAmount() {
      return state.buffered;
    }
    send(d: Uint8Array) {
      state.written.push(d);
    }
    close() {}
  };
  return state;
}

describe('WebSocket transport', () => {
  it('carries a Ricochet session over a real WebSocket', async () => {
    const wss = new WebSocketServer({ port: 0, host: '127.0.0.1' });
    cleanup.push(() => wss.close());
    const server = new Server();
    cleanup.push(() => server.shutdown());
    wss.on('connection', (ws) => {
      const peer = { send: (d: Uint8Array) => ws.send(d) };
      ws.on('message', (data: Buffer) => server.handleDatagram(new Uint8Array(data), peer));
    });
    server.on('message', ({ id, channel, data }) => server.send(id, channel, data));
    await new Promise((r) => wss.once('listening', r));
    const port = (wss.address() as { port: number }).port;
    const t = await WebSocketTransport.connect(`ws://127.0.0.1:${port}/`, { WebSocket: WebSocket as never });
    const conn = new Connection(t);
    await conn.ready;
    const got: string[] = [];
    conn.on('message', ({ data }) => got.push(new TextDecoder().decode(data)));
    for (let i = 0; i < 100; i++) conn.send(0, new TextEncoder().encode(`m${i}`));
    const t0 = Date.now();
    while (got.length < 100 && Date.now() - t0 < 5000) await new Promise((r) => setTimeout(r, 10));
    expect(got).toEqual([...Array(100).keys()].map((i) => `m${i}`));
    conn.close();
  });

  it('fails with a clear error when nothing listens', async () => {
    await expect(WebSocketTransport.connect('ws://127.0.0.1:9/', { WebSocket: WebSocket as never, timeoutMs: 2000 })).rejects.toMatchObject({
      code: 'RICOCHET_ERR_TRANSPORT_FAILED',
    });
  });

  it('a stalled socket holds messages in the core: sequenced channels keep only the newest', async () => {
    const sock = stallingSocket();
    const sent = sock.written;
    const t = await WebSocketTransport.connect('ws://stall', { WebSocket: sock.Ctor, highWaterBytes: 1000 });
    sock.buffered = 5000; // the socket is backed up
    expect(t.canSend()).toBe(false);
    const before = sent.length;
    t.send(new Uint8Array(1)); // the transport itself still writes what it is given…
    expect(sent.length).toBe(before + 1);
    // …but the run loop asks canSend first, so nothing more is written while stalled.
    let writable = 0;
    t.onWritable(() => writable++);
    sock.buffered = 0;
    await new Promise((r) => setTimeout(r, 20));
    expect(writable).toBe(1);
  });
});

describe('WebSocket fallback keeps unreliable meaning over TCP', () => {
  it('while the socket is stalled, sequenced messages are superseded in the core, not queued in the socket', async () => {
    const sock = stallingSocket();
    const written = sock.written;
    const transport = await WebSocketTransport.connect('ws://stall', { WebSocket: sock.Ctor, highWaterBytes: 1000 });
    // A real server on the other side of an in-memory "socket".
    const server = new Server();
    cleanup.push(() => server.shutdown());
    const peer = { send: (d: Uint8Array) => transport['ws'].onmessage?.({ data: d.slice().buffer }) };
    const conn = new Connection(transport, { channels: ['unreliable-sequenced'] });
    const pump = () => {
      for (const d of written.splice(0)) server.handleDatagram(d, peer);
    };
    for (let i = 0; i < 50 && conn.state !== 'open'; i++) {
      pump();
      await new Promise((r) => setTimeout(r, 5));
    }
    expect(conn.state).toBe('open');
    pump(); // the client's first DATA (its PING on WELCOME) proves its address
    const received: number[] = [];
    server.on('message', ({ data }) => received.push(data[0]!));
    const lost: number[] = [];
    conn.on('lost', (e) => lost.push(e.id));
    sock.buffered = 10_000; // the TCP socket backs up
    for (let i = 0; i < 100; i++) conn.send(0, new Uint8Array([i]));
    await new Promise((r) => setTimeout(r, 20));
    expect(written.length).toBe(0); // nothing more piles into the socket
    sock.buffered = 0; // it drains
    await new Promise((r) => setTimeout(r, 30));
    pump();
    await new Promise((r) => setTimeout(r, 20));
    expect(received).toEqual([99]); // only the newest position went out
    expect(lost.length).toBe(99); // the superseded ones are reported lost
  });
});
