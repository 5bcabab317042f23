// The soak's system under test, started for real on 127.0.0.1: the native
// echo server (UDP), the relay in its own process, the page server, and
// Debian's Chromium or Firefox ESR driven by Playwright (launch options as in
// e2e/browsers.ts: Chromium over CDP, Firefox over WebDriver BiDi).
import { fork, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { createStaticServer } from '../../e2e/static-server.mjs';

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const ECHO_BIN = join(ROOT, 'wasm', 'target', 'release', 'examples', 'echo_server');
const CHROMIUM = process.env.RICOCHET_CHROMIUM ?? '/usr/bin/chromium';
const FIREFOX = process.env.RICOCHET_FIREFOX ?? '/usr/bin/firefox-esr';

/** Waits for a child's `{"event":"listening"}` JSON line on stdout. */
function listening(proc, what) {
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`${what} did not start`)), 15_000);
    createInterface({ input: proc.stdout }).on('line', (l) => {
      try {
        const m = JSON.parse(l);
        if (m.event === 'listening') {
          clearTimeout(t);
          resolve(m);
        }
      } catch {
        // a log line
      }
    });
    proc.once('exit', (c) => reject(new Error(`${what} exited (${c})`)));
  });
}

export async function startEcho() {
  if (!existsSync(ECHO_BIN)) throw new Error(`${ECHO_BIN} is missing: cargo build --release -p ricochet-native --example echo_server --manifest-path wasm/Cargo.toml`);
  const proc = spawn(ECHO_BIN, ['--port', '0'], { stdio: ['pipe', 'pipe', 'inherit'] });
  const { port } = await listening(proc, 'echo server');
  return {
    pid: proc.pid,
    backend: `127.0.0.1:${port}`,
    stop() {
      proc.stdin.end();
      proc.kill('SIGTERM');
    },
  };
}

/** The relay child (relay-process.mjs); `sample()` forces a GC there and returns its memory. */
export async function startRelay(backend, profile) {
  const child = fork(join(ROOT, 'bench', 'soak', 'relay-process.mjs'), [backend, profile], {
    execArgv: ['--expose-gc'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    env: { ...process.env, RICOCHET_LOG_LEVEL: process.env.RICOCHET_LOG_LEVEL ?? 'warn' },
  });
  const next = (type) =>
    new Promise((resolve, reject) => {
      const onExit = (c) => reject(new Error(`relay process exited (${c})`));
      child.once('exit', onExit);
      const onMessage = (m) => {
        if (m.type !== type) return;
        child.off('message', onMessage);
        child.off('exit', onExit);
        resolve(m);
      };
      child.on('message', onMessage);
    });
  const ready = await next('ready');
  return {
    pid: child.pid,
    httpUrl: ready.httpUrl,
    tokens: ready.tokens,
    sample() {
      const reply = next('sample');
      child.send({ type: 'sample' });
      return reply;
    },
    async stop() {
      if (child.exitCode !== null) return;
      const exited = new Promise((r) => child.once('exit', r));
      child.send({ type: 'stop' });
      await Promise.race([exited, new Promise((r) => setTimeout(r, 5000))]);
      if (child.exitCode === null) child.kill('SIGKILL');
    },
  };
}

/** Serves e2e/pages (soak.html) and sdk/dist on 127.0.0.1. */
export async function startPages() {
  const server = createStaticServer();
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${server.address().port}/soak.html`, stop: () => server.close() };
}

/**
 * Chromium or Firefox through the e2e workspace's Playwright (it cannot
 * download its own browsers here).
 */
export async function launchBrowser(name = 'chromium') {
  const require = createRequire(join(ROOT, 'e2e', 'package.json'));
  const playwright = await import(pathToFileURL(require.resolve('@playwright/test')).href);
  const { chromium, firefox } = playwright.chromium ? playwright : playwright.default; // CommonJS seen from ESM
  if (name === 'firefox') {
    return firefox.launch({
      channel: 'moz-firefox',
      executablePath: FIREFOX,
      firefoxUserPrefs: { 'app.update.enabled': false, 'datareporting.policy.dataSubmissionEnabled': false, 'network.captive-portal-service.enabled': false, 'network.connectivity-service.enabled': false },
    });
  }
  if (name !== 'chromium') throw new Error(`unknown browser ${name}: chromium or firefox`);
  return chromium.launch({
    executablePath: CHROMIUM,
    // Never --disable-quic: WebTransport needs QUIC.
    args: ['--no-sandbox', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
}
