#!/usr/bin/env node
// Firefox inside a network namespace, driven from outside it.
//
//   node firefox-in-netns.mjs <netns> <firefox> [firefox args...]
//
// Playwright launches this as Firefox's executable (netem-stack.ts writes a
// wrapper script that calls it). Chromium is driven over a pipe, which
// survives `ip netns exec`; Firefox is driven over WebDriver BiDi on a
// WebSocket that Firefox opens on *its* namespace's 127.0.0.1, out of reach
// of Playwright in the root namespace. So this script:
//   1. runs `ip netns exec <netns> <firefox> ...args`, passing its output on;
//   2. when Firefox prints "WebDriver BiDi listening on ws://127.0.0.1:PORT",
//      starts a forwarder inside the namespace (this script in `inner` mode)
//      from a Unix socket (Unix sockets are not namespaced) to that port;
//   3. listens on the root namespace's 127.0.0.1 (the same port number when
//      free, so the Host header Firefox checks is unchanged) and forwards
//      each connection to the Unix socket;
//   4. prints the "listening" line with the outer address for Playwright.
// Only the control connection crosses; the page's traffic stays in the
// namespace and crosses the emulated link. Exits with Firefox.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createConnection, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';

function pipeBoth(a, b) {
  a.pipe(b);
  b.pipe(a);
  const end = () => {
    a.destroy();
    b.destroy();
  };
  a.on('error', end).on('close', end);
  b.on('error', end).on('close', end);
}

if (process.argv[2] === '--inner') {
  // Inside the namespace: Unix socket → 127.0.0.1:port.
  const [, , , sockPath, port] = process.argv;
  const server = createServer((c) => pipeBoth(c, createConnection({ host: '127.0.0.1', port: Number(port) })));
  server.listen(sockPath, () => process.stdout.write('ready\n'));
  process.on('SIGTERM', () => process.exit(0));
} else {
  const [, , ns, firefox, ...args] = process.argv;
  const tmp = mkdtempSync(join(tmpdir(), 'ricochet-ff-netns-'));
  const sockPath = join(tmp, 'bidi.sock');
  const children = [];
  const ff = spawn('ip', ['netns', 'exec', ns, firefox, ...args], { stdio: ['ignore', 'inherit', 'pipe'] });
  children.push(ff);
  const cleanup = () => {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGTERM');
    rmSync(tmp, { recursive: true, force: true });
  };
  for (const sig of ['SIGTERM', 'SIGINT', 'SIGHUP']) process.on(sig, () => {
    cleanup();
    process.exit(1);
  });
  ff.on('exit', (code, signal) => {
    cleanup();
    process.exit(code ?? (signal ? 1 : 0));
  });

  const forward = async (port) => {
    const inner = spawn('ip', ['netns', 'exec', ns, process.execPath, process.argv[1], '--inner', sockPath, String(port)], { stdio: ['ignore', 'pipe', 'inherit'] });
    children.push(inner);
    await new Promise((resolve, reject) => {
      createInterface({ input: inner.stdout }).once('line', resolve);
      inner.once('exit', (c) => reject(new Error(`BiDi forwarder exited (${c})`)));
    });
    const server = createServer((c) => pipeBoth(c, createConnection(sockPath)));
    const listen = (p) =>
      new Promise((resolve, reject) => {
        server.once('error', reject);
        server.listen(p, '127.0.0.1', () => resolve(server.address().port));
      });
    return listen(port).catch(() => listen(0));
  };

  createInterface({ input: ff.stderr }).on('line', (line) => {
    const m = line.match(/^(.*WebDriver BiDi listening on ws:\/\/)127\.0\.0\.1:(\d+)(.*)$/);
    if (!m) {
      process.stderr.write(`${line}\n`);
      return;
    }
    forward(Number(m[2])).then(
      (port) => process.stderr.write(`${m[1]}127.0.0.1:${port}${m[3]}\n`),
      (e) => {
        process.stderr.write(`firefox-in-netns: ${e.message}\n`);
        cleanup();
        process.exit(1);
      },
    );
  });
}
