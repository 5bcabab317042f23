// Node clients: over UDP straight to the native server, and over WebSocket
// through the relay.
import { createSocket } from 'node:dgram';
import { expect, test } from '@playwright/test';
import { WebSocket } from 'ws';
import { Connection, UdpTransport, WebSocketTransport, type Transport } from '@ricochet/sdk';
import { startStack, type Stack } from '../stack.js';

// No browser here: run once, in the Chromium project.
test.skip(({ browserName }) => browserName !== 'chromium', 'Node clients only: run once, in the Chromium project');

let stack: Stack;
test.beforeAll(async () => {
  stack = await startStack();
});
test.afterAll(async () => stack?.stop());

async function exchange(transport: Transport, n: number) {
  const conn = new Connection(transport, { handshake: 'node' });
  await conn.ready;
  const got: number[] = [];
  conn.on('message', ({ data }) => got.push(new DataView(data.buffer, data.byteOffset).getUint32(0, true)));
  for (let i = 0; i < n; i++) {
    const b = new Uint8Array(200);
    new DataView(b.buffer).setUint32(0, i, true);
    conn.send(0, b);
    if (i % 50 === 49) await new Promise((r) => setTimeout(r, 10));
  }
  const t0 = Date.now();
  while (got.length < n && Date.now() - t0 < 15_000) await new Promise((r) => setTimeout(r, 10));
  conn.close();
  return got;
}

test('Node client over UDP directly to the native server', async () => {
  const sock = createSocket('udp4');
  await new Promise<void>((r) => sock.bind(0, '127.0.0.1', () => r()));
  const got = await exchange(new UdpTransport(sock, '127.0.0.1', stack.echoPort), 3000);
  expect(got).toEqual([...Array(3000).keys()]);
  sock.close();
});

test('Node client over WebSocket through the relay', async () => {
  const t = await WebSocketTransport.connect(`${stack.relay.addresses().webSocketUrl}?token=${stack.token()}`, { WebSocket: WebSocket as never });
  const got = await exchange(t, 3000);
  expect(got).toEqual([...Array(3000).keys()]);
});
