// Helpers for the packaging suite (packaging.test.mjs): packing, one consumer
// directory outside the repository, a PATH without a Rust toolchain, the
// stack (native echo server + the relay CLI from the installed tarball), a
// static file server for the built apps and a Chromium driver.
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createReadStream, existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { createRequire } from 'node:module';
import { delimiter, dirname, extname, join, normalize, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
export const HERE = join(ROOT, 'packaging');
export const ECHO_BIN = join(ROOT, 'wasm', 'target', 'release', 'examples', 'echo_server');
export const CHROMIUM = process.env.RICOCHET_CHROMIUM ?? '/usr/bin/chromium';
// Never --disable-quic: WebTransport needs QUIC.
export const CHROMIUM_ARGS = ['--no-sandbox', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];

/** Build tools installed beside the tarballs: the root lock's versions where it has them. */
export function toolSpecs() {
  const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')).packages;
  const locked = (name, fallback) => `${name}@${lock[`node_modules/${name}`]?.version ?? fallback}`;
  return [
    locked('vite', '8.3.8'),
    locked('esbuild', '0.28.2'),
    locked('typescript', '5.9.3'),
    locked('ws', '8.23.0'),
    locked('@types/ws', '8.18.2'),
    locked('@types/node', '20.19.43'),
    // The optional peer of @ricochet/relay/playwright: a game's test suite that imports it has it.
    locked('@playwright/test', '1.64.1'),
    // Not in the root lock. Driven through its Node API (webpack-cli 7 wants Node ≥ 22.15).
    'webpack@5.112.2',
  ];
}

/**
 * The environment every consumer-side process gets: PATH without any
 * directory holding cargo, rustc or rustup (and no ~/.cargo/bin), no Cargo or
 * rustup variables, and no RICOCHET_RELAY_ADDON (the relay must find its
 * addon the way an installed one does).
 */
export function consumerEnv() {
  const dirs = (process.env.PATH ?? '').split(delimiter).filter((d) => {
    if (!d || d.split(/[\\/]/).includes('.cargo')) return false;
    return !['cargo', 'rustc', 'rustup'].some((bin) => existsSync(join(d, bin)));
  });
  const env = { ...process.env, PATH: dirs.join(delimiter) };
  for (const k of Object.keys(env)) if (/^(CARGO|RUSTUP|RUSTC)/.test(k) || k === 'RICOCHET_RELAY_ADDON') delete env[k];
  return env;
}

/** The absolute path `sh` finds for a command under env's PATH, or null. */
export function which(cmd, env) {
  const r = spawnSync('/bin/sh', ['-c', `command -v ${cmd}`], { env, encoding: 'utf8' });
  return r.status === 0 ? r.stdout.trim() : null;
}

/**
 * Runs a command to completion within timeoutMs. Resolves with its output;
 * rejects with the command, exit status and the tail of its output.
 */
export function run(cmd, args, { cwd, env = process.env, timeoutMs = 120_000 } = {}) {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(cmd, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c) => (stdout += c));
    child.stderr.on('data', (c) => (stderr += c));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', (e) => {
      clearTimeout(timer);
      reject(new Error(`${cmd}: ${e.message}`));
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      if (code === 0) return resolvePromise({ stdout, stderr });
      const why = signal === 'SIGKILL' ? `timed out after ${timeoutMs} ms` : signal ?? `exit ${code}`;
      const tail = `${stdout}\n${stderr}`.trim().split('\n').slice(-40).join('\n');
      reject(new Error(`${cmd} ${args.join(' ')} (in ${cwd ?? process.cwd()}) failed: ${why}\n${tail}`));
    });
  });
}

/**
 * `npm pack` of a package directory into dest; returns the tarball's path.
 * --ignore-scripts: packs what the build left (npm test builds first), rather
 * than letting prepack rebuild the working tree under other processes.
 */
export async function pack(pkgDir, dest) {
  const { stdout } = await run('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', dest], { cwd: pkgDir, timeoutMs: 60_000 });
  // prepack's own output comes first; npm's JSON array is the last line that is only "[".
  const start = [...stdout.matchAll(/^\[$/gm)].at(-1)?.index;
  if (start === undefined) throw new Error(`npm pack in ${pkgDir} printed no JSON:\n${stdout.slice(-2000)}`);
  const [info] = JSON.parse(stdout.slice(start));
  return join(dest, info.filename);
}

/** A tarball's files as [{ path (without "package/"), size }], from `tar -tzvf`. */
export async function listTarball(tgz) {
  const { stdout } = await run('tar', ['-tzvf', tgz]);
  return stdout
    .split('\n')
    .filter((l) => l.startsWith('-'))
    .map((l) => {
      const f = l.trim().split(/\s+/);
      return { path: f.slice(5).join(' ').replace(/^package\//, ''), size: Number(f[2]) };
    })
    .sort((a, b) => a.path.localeCompare(b.path));
}

/** The text of one file inside a tarball. */
export async function tarballFile(tgz, path) {
  return (await run('tar', ['-xzOf', tgz, `package/${path}`])).stdout;
}

/** The npm name of this host's prebuilt relay addon, as relay/native/index.js derives it. */
export function hostAddonPackage() {
  let glibc = null;
  if (process.platform === 'linux') glibc = process.report.getReport().header.glibcVersionRuntime ?? null;
  const abi = process.platform === 'linux' ? (glibc ? '-gnu' : '-musl') : process.platform === 'win32' ? '-msvc' : '';
  return `@ricochet/relay-${process.platform}-${process.arch}${abi}`;
}

/** Sum of gzip -9 sizes of the given files. */
export function gzipBytes(files) {
  return files.reduce((n, f) => n + gzipSync(readFileSync(f), { level: 9 }).length, 0);
}

/**
 * "exports" entry that Node's require() cannot reach: conditions name only
 * "import" (and "types"), no "require", "node" or "default".
 */
export function importOnly(entry) {
  if (typeof entry === 'string') return false;
  if (Array.isArray(entry)) return entry.every(importOnly);
  if (entry === null) return true;
  return Object.entries(entry).every(([cond, v]) => !['require', 'node', 'default', 'module-sync'].includes(cond) || importOnly(v));
}

/** Every exported subpath of an installed package: [{ spec, key, entry }]. */
export function exportedSubpaths(consumer, name) {
  const pj = JSON.parse(readFileSync(join(consumer, 'node_modules', name, 'package.json'), 'utf8'));
  const map = pj.exports && typeof pj.exports === 'object' && !Array.isArray(pj.exports) && Object.keys(pj.exports)[0]?.startsWith('.') ? pj.exports : { '.': pj.exports ?? pj.main };
  return Object.entries(map).map(([key, entry]) => ({ name, spec: name + key.slice(1), key, entry }));
}

/** Reads lines from a child's stdout until one parses as JSON with the given event, within timeoutMs. */
function waitForEvent(child, event, timeoutMs, what) {
  const lines = createInterface({ input: child.stdout });
  let seen = '';
  return new Promise((resolvePromise, reject) => {
    const fail = (why) => reject(new Error(`${what} ${why}\n${seen.split('\n').slice(-30).join('\n')}`));
    const timer = setTimeout(() => fail(`did not report "${event}" within ${timeoutMs} ms`), timeoutMs);
    lines.on('line', (l) => {
      seen += `${l}\n`;
      try {
        const m = JSON.parse(l);
        if (m.event === event) {
          clearTimeout(timer);
          resolvePromise({ ...m, output: () => seen });
        }
      } catch {
        // not JSON
      }
    });
    child.stderr?.on('data', (c) => (seen += c));
    child.once('exit', (c) => {
      clearTimeout(timer);
      fail(`exited (${c})`);
    });
  });
}

/** The native echo server on 127.0.0.1; resolves with { port, stop }. */
export async function startEcho(env) {
  if (!existsSync(ECHO_BIN)) throw new Error(`${ECHO_BIN} is missing: cargo build --release -p ricochet-native --example echo_server --manifest-path wasm/Cargo.toml (npm test builds it)`);
  const proc = spawn(ECHO_BIN, ['--port', '0'], { env, stdio: ['pipe', 'pipe', 'pipe'] });
  const m = await waitForEvent(proc, 'listening', 10_000, 'echo server');
  return { port: m.port, stop: () => stopChild(proc) };
}

/**
 * The relay started from the consumer's node_modules/.bin/ricochet-relay,
 * its secret in a file. Resolves with the CLI's "listening" event (ports,
 * webSocketUrl, webTransportUrl, webTransportOff), output() (all it printed),
 * token() (mints one with the installed CLI: tokens are single use) and stop().
 */
export async function startRelayCli(consumer, env, backend) {
  const secretFile = join(consumer, 'relay-secret');
  writeFileSync(secretFile, randomBytes(32).toString('base64url'), { mode: 0o600 });
  const bin = join(consumer, 'node_modules', '.bin', 'ricochet-relay');
  const args = ['--host', '127.0.0.1', '--http-port', '0', '--wt-port', '0', '--allow-backends', backend, '--token-secret-file', secretFile];
  const proc = spawn(bin, args, { cwd: consumer, env: { ...env, RICOCHET_LOG_LEVEL: 'info' }, stdio: ['ignore', 'pipe', 'pipe'] });
  const listening = await waitForEvent(proc, 'listening', 15_000, `ricochet-relay ${args.join(' ')}`);
  return {
    ...listening,
    httpUrl: `http://127.0.0.1:${listening.httpPort}`,
    async token(sub = 'packaging') {
      const { stdout } = await run(bin, ['mint-token', '--secret-file', secretFile, '--backend', backend, '--sub', sub, '--ttl', '120'], { cwd: consumer, env, timeoutMs: 15_000 });
      return stdout.trim();
    },
    stop: () => stopChild(proc),
  };
}

function stopChild(proc) {
  if (proc.exitCode !== null || proc.signalCode !== null) return Promise.resolve();
  return new Promise((r) => {
    const t = setTimeout(() => proc.kill('SIGKILL'), 5_000);
    proc.once('exit', () => {
      clearTimeout(t);
      r();
    });
    proc.stdin?.end();
    proc.kill('SIGTERM');
  });
}

const TYPES = { '.html': 'text/html', '.js': 'text/javascript', '.mjs': 'text/javascript', '.wasm': 'application/wasm', '.css': 'text/css', '.map': 'application/json' };

/** Serves roots[name] under /name/ on 127.0.0.1; resolves with { url, close }. */
export function staticServer(roots) {
  const server = createServer((req, res) => {
    const path = decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname);
    const [, name, ...rest] = path.split('/');
    const base = roots[name];
    const file = base && normalize(join(base, rest.join('/') || 'index.html'));
    if (!file || !file.startsWith(base) || !existsSync(file) || !statSync(file).isFile()) return res.writeHead(404).end('not found');
    res.writeHead(200, { 'content-type': TYPES[extname(file)] ?? 'application/octet-stream' });
    createReadStream(file).pipe(res);
  });
  return new Promise((r) =>
    server.listen(0, '127.0.0.1', () =>
      r({ url: `http://127.0.0.1:${server.address().port}`, close: () => new Promise((c) => server.close(c)) }),
    ),
  );
}

/** Debian's Chromium (or `executablePath`) through the repository's own Playwright (only the driver comes from the repo). */
export async function launchChromium(executablePath = CHROMIUM) {
  const require = createRequire(join(ROOT, 'e2e', 'package.json'));
  const { chromium } = require(require.resolve('playwright-core', { paths: [dirname(require.resolve('@playwright/test/package.json'))] }));
  return chromium.launch({ executablePath, args: CHROMIUM_ARGS });
}

/**
 * Opens a built app's page and waits (deadline) for its #result JSON.
 * Returns the parsed result plus the page's console errors.
 */
export async function runPage(browser, url, timeoutMs = 20_000) {
  const page = await browser.newPage();
  const errors = [];
  page.on('console', (m) => m.type() === 'error' && errors.push(m.text()));
  page.on('pageerror', (e) => errors.push(e.message));
  try {
    await page.goto(url);
    const handle = await page.waitForFunction(() => document.getElementById('result')?.textContent || null, null, { timeout: timeoutMs });
    return { ...JSON.parse(await handle.jsonValue()), errors };
  } catch (e) {
    throw new Error(`${url}: ${e.message.split('\n')[0]}; page errors: ${JSON.stringify(errors)}`);
  } finally {
    await page.close();
  }
}
