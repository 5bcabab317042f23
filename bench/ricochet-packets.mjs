// Raw Ricochet packets for the relay benchmarks, which drive the relay with
// plain WebSockets (the relay reads only headers, and attests each HELLO),
// and the child-process helpers they share.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

const RELAY_CLI = fileURLToPath(new URL('../relay/dist/cli.js', import.meta.url));

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
    // 'close', not 'exit': stdout may still hold the line when the process exits.
    p.on('close', () => {
      try {
        resolve(JSON.parse(out.trim().split('\n').pop()));
      } catch {
        resolve(null);
      }
    });
  });
}

/**
 * Starts `relay/dist/cli.js` with `args` in its own process (under `taskset -c <cpu>` if `cpu`
 * is given) and resolves once it listens, with the process, its `listening` line and a
 * `metric(name)` reader of its /metrics (the first sample matching the regex source `name`).
 */
export async function startRelay(args, { secret, cpu = null, logLevel = 'warn' }) {
  const [cmd, pre] = cpu === null ? [process.execPath, []] : ['taskset', ['-c', String(cpu), process.execPath]];
  const proc = spawn(cmd, [...pre, RELAY_CLI, ...args], {
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, RICOCHET_LOG_LEVEL: logLevel, RICOCHET_RELAY_TOKEN_SECRET: secret },
  });
  const info = await new Promise((resolve, reject) => {
    proc.once('exit', (code) => reject(new Error(`relay exited ${code}`)));
    createInterface({ input: proc.stdout }).on('line', (l) => {
      try {
        const m = JSON.parse(l);
        if (m.event === 'listening') resolve(m);
      } catch {
        // a log line
      }
    });
  });
  const base = `http://127.0.0.1:${info.httpPort}`;
  async function metric(name) {
    const text = await (await fetch(`${base}/metrics`)).text();
    const m = text.match(new RegExp(`^${name}(?:\\{[^}]*\\})? ([0-9.e+-]+)$`, 'm'));
    return m ? Number(m[1]) : NaN;
  }
  return { proc, info, metric };
}

/** Resident set size of process `pid` in bytes (Linux /proc). */
export function rssBytes(pid) {
  return Number(readFileSync(`/proc/${pid}/status`, 'utf8').match(/VmRSS:\s+(\d+)/)[1]) * 1024;
}
