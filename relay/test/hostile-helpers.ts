// Shared by the hostile-input suites: certificates, raw packets, polling.
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { WebSocket } from 'ws';
import { createSocket } from 'node:dgram';
import { Connection, Server, WebSocketTransport, serveUdp, type ServerOptions } from '@ricochet/sdk';

/** A UDP backend on 127.0.0.1 that answers every datagram with itself; `addr` is `host:port`. */
export async function udpEcho(): Promise<{ sock: ReturnType<typeof createSocket>; addr: string }> {
  const sock = createSocket('udp4');
  sock.on('message', (m, r) => sock.send(m, r.port, r.address));
  await new Promise<void>((r) => sock.bind(0, '127.0.0.1', () => r()));
  return { sock, addr: `127.0.0.1:${sock.address().port}` };
}

/** The addon's WebTransport test client (relay/native/examples/wt_client.rs; `npm test` builds it). */
export const WT_CLIENT = fileURLToPath(new URL('../native/target/release/examples/wt_client', import.meta.url));

/** A self-signed ECDSA P-256 certificate for 127.0.0.1, valid `days` (≤ 14 for serverCertificateHashes). */
export function makeCertificate(dir: string, name = 'relay', days = 10): { certFile: string; keyFile: string } {
  const certFile = join(dir, `${name}.crt`);
  const keyFile = join(dir, `${name}.key`);
  execFileSync('openssl', [
    'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', String(days),
    '-subj', '/CN=localhost', '-addext', 'subjectAltName=IP:127.0.0.1,DNS:localhost', '-keyout', keyFile, '-out', certFile,
  ], { stdio: 'ignore' });
  return { certFile, keyFile };
}

/** A Ricochet packet header: type, then the connection ID (little-endian u32), then a few bytes. */
export function packet(type: number, connId: number, size = 12): Uint8Array {
  const b = new Uint8Array(size);
  b[0] = type;
  new DataView(b.buffer).setUint32(1, connId, true);
  return b;
}

/** A valid version-3 HELLO (one reliable-ordered channel, a random session key, no payload), padded to 128 bytes. */
export function hello(connId: number): Uint8Array {
  const b = new Uint8Array(128);
  b[0] = 1;
  new DataView(b.buffer).setUint32(1, connId, true);
  b[5] = 3; // version 3, little-endian
  b[7] = 1; // one channel, kind 0
  b.set(randomBytes(16), 9);
  b[25] = 0; // empty handshake payload; zero padding follows
  return b;
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls `cond` every 10 ms for up to `ms`; its last value. */
export async function waitFor(cond: () => boolean, ms = 10_000): Promise<boolean> {
  const t0 = Date.now();
  while (!cond() && Date.now() - t0 < ms) await sleep(10);
  return cond();
}

/**
 * An SDK session over WebSocket that sends `perTick` numbered 100-byte
 * messages on the reliable channel every `everyMs` and records the echoes,
 * to show that a session beside an attack loses nothing.
 */
export async function pumpingClient(url: string, perTick = 20, everyMs = 10) {
  const t = await WebSocketTransport.connect(url, { WebSocket: WebSocket as never });
  const conn = new Connection(t);
  await conn.ready;
  const got: number[] = [];
  conn.on('message', ({ data }) => got.push(new DataView(data.buffer, data.byteOffset).getUint32(0, true)));
  let next = 0;
  const pump = setInterval(() => {
    for (let i = 0; i < perTick; i++) {
      const b = new Uint8Array(100);
      new DataView(b.buffer).setUint32(0, next++, true);
      conn.send(0, b);
    }
  }, everyMs);
  return { conn, got, sent: () => next, stop: () => clearInterval(pump) };
}

/** An SDK game server on a UDP socket at 127.0.0.1 that echoes every message; `backend` is its "host:port". */
export async function echoGame(options?: ServerOptions) {
  const sock = createSocket('udp4');
  await new Promise<void>((r) => sock.bind(0, '127.0.0.1', () => r()));
  const game = new Server(options);
  serveUdp(game, sock);
  game.on('message', ({ id, channel, data }) => game.send(id, channel, data));
  return {
    game,
    backend: `127.0.0.1:${sock.address().port}`,
    close() {
      game.shutdown();
      sock.close();
    },
  };
}
