// Raw Ricochet packets for the relay benchmarks, which drive the relay with
// plain WebSockets (the relay reads only headers, and attests each HELLO),
// and the child-process helper they share.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';

/** A valid version-3 HELLO (one channel, a random session key, no payload), padded to 128 bytes (WIRE.md). */
export function helloDatagram(connId) {
  const b = Buffer.alloc(128);
  b[0] = 1;
  b.writeUInt32LE(connId >>> 0, 1);
  b.writeUInt16LE(3, 5);
  b[7] = 1;
  randomBytes(16).copy(b, 9);
  return b;
}

/** A DATA packet of `size` bytes for `connId` (the relay checks type and ID only; its tag is not valid). */
export function dataDatagram(connId, size = 100) {
  const b = Buffer.alloc(size);
  b[0] = 4;
  b.writeUInt32LE(connId >>> 0, 1);
  return b;
}

/** Runs `cmd` and resolves with the JSON of its last stdout line, or null (never blocks the event loop). */
export function lastJsonLine(cmd, args, options = {}) {
  return new Promise((resolve) => {
    const p = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'ignore'], ...options });
    let out = '';
    p.stdout.on('data', (d) => (out += d));
    p.on('error', () => resolve(null));
    p.on('exit', () => {
      try {
        resolve(JSON.parse(out.trim().split('\n').pop()));
      } catch {
        resolve(null);
      }
    });
  });
}
