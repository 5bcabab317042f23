// Real UDP sockets on 127.0.0.1: an SDK client and an SDK server in Node.
import { createSocket } from 'node:dgram';
import { afterEach, describe, expect, it } from 'vitest';
import { Connection } from '../src/connection.js';
import { Server } from '../src/server.js';
import { UdpTransport, serveUdp } from '../src/udp.js';

const cleanup: (() => void)[] = [];
afterEach(() => cleanup.splice(0).reverse().forEach((f) => f()));

async function bound() {
  const s = createSocket('udp4');
  await new Promise<void>((r) => s.bind(0, '127.0.0.1', () => r()));
  cleanup.push(() => s.close());
  return s;
}

describe('UDP transport', () => {
  it('a Node client and server exchange 2,000 ordered messages over real sockets', async () => {
    const serverSock = await bound();
    const server = new Server();
    cleanup.push(() => server.shutdown());
    serveUdp(server, serverSock);
    server.on('message', ({ id, channel, data }) => server.send(id, channel, data));
    const clientSock = await bound();
    const conn = new Connection(new UdpTransport(clientSock, '127.0.0.1', serverSock.address().port));
    await conn.ready;
    const echoed: number[] = [];
    conn.on('message', ({ data }) => echoed.push(new DataView(data.buffer, data.byteOffset).getUint32(0, true)));
    for (let i = 0; i < 2000; i++) {
      const b = new Uint8Array(64);
      new DataView(b.buffer).setUint32(0, i, true);
      conn.send(0, b);
      if (i % 100 === 99) await new Promise((r) => setTimeout(r, 5));
    }
    const t0 = Date.now();
    while (echoed.length < 2000 && Date.now() - t0 < 10_000) await new Promise((r) => setTimeout(r, 10));
    expect(echoed).toEqual([...Array(2000).keys()]);
    conn.close();
  });

  it('ignores datagrams from other addresses', async () => {
    const a = await bound();
    const stranger = await bound();
    const t = new UdpTransport(a, '127.0.0.1', 9); // talks only to port 9
    const got: Uint8Array[] = [];
    t.onDatagram((d) => got.push(d));
    stranger.send(new Uint8Array([1, 2, 3]), a.address().port, '127.0.0.1');
    await new Promise((r) => setTimeout(r, 50));
    expect(got).toEqual([]);
  });
});
