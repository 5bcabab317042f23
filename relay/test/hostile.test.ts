// `ricochet-relay --production` as a hostile client meets it: every attack
// here once ended the whole process or held its resources. Each test asserts
// the answer the attacker gets, that the process lives on, and (at the end)
// that a legitimate session running beside every attack lost nothing.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createHmac, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { mintToken } from '../src/token.js';
import { WT_CLIENT, echoGame, hello, makeCertificate, pumpingClient, waitFor } from './hostile-helpers.js';

const CLI = fileURLToPath(new URL('../dist/cli.js', import.meta.url));
const NATIVE = fileURLToPath(new URL('../native/', import.meta.url));

const SECRET = randomBytes(32).toString('base64url');
const HANDSHAKE_MS = 2_000;
const PER_ADDRESS = 16;

let relay: ChildProcess;
let info: { httpPort: number; wtPort: number; webSocketUrl: string; certHashes: string[]; metricsPort: number };
let echo: Awaited<ReturnType<typeof echoGame>>;
let backend: string;
let certDir: string | undefined;
let legit: Awaited<ReturnType<typeof legitClient>>;

beforeAll(async () => {
  const built = spawnSync(process.execPath, [join(NATIVE, 'build.mjs'), '--client'], { stdio: 'inherit' });
  expect(built.status).toBe(0);
  echo = await echoGame();
  backend = echo.backend;
  certDir = mkdtempSync(join(tmpdir(), 'relay-hostile-'));
  const cert = makeCertificate(certDir);
  relay = spawn(
    process.execPath,
    [CLI, '--production', '--http-port', '0', '--wt-port', '0', '--metrics-port', '0', '--allow-backends', '127.0.0.1:*', '--handshake-timeout-ms', String(HANDSHAKE_MS)]
      .concat(['--max-pending-per-address', String(PER_ADDRESS), '--cert-file', cert.certFile, '--key-file', cert.keyFile]),
    { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, RICOCHET_RELAY_TOKEN_SECRET: SECRET, RICOCHET_LOG_LEVEL: 'warn' } },
  );
  info = await new Promise((resolve, reject) => {
    relay.once('exit', (code) => reject(new Error(`relay exited ${code}`)));
    createInterface({ input: relay.stdout! }).on('line', (l) => l.includes('"listening"') && resolve(JSON.parse(l)));
  });
  legit = await legitClient();
}, 15 * 60_000);

afterAll(async () => {
  legit?.stop();
  legit?.conn.close();
  relay?.kill('SIGKILL');
  echo?.close();
  if (certDir) rmSync(certDir, { recursive: true, force: true });
});

const token = (o: { backend?: string } = {}) => mintToken(SECRET, { sub: 'tester', backend: o.backend ?? backend, ttlSeconds: 60 });

/** A token signed with the relay's secret around any payload (what a careless backend could mint). */
function signed(payload: unknown): string {
  const p = Buffer.from(JSON.stringify(payload)).toString('base64url');
  return `rct1.${p}.${createHmac('sha256', SECRET).update(`rct1.${p}`).digest('base64url')}`;
}

/** A legitimate SDK session, pumping numbered messages through the relay for the whole file. */
const legitClient = () => pumpingClient(`${info.webSocketUrl}?token=${token()}`, 5, 16);

/** The relay process still runs and answers its health check. */
async function alive(): Promise<boolean> {
  if (relay.exitCode !== null || relay.signalCode !== null) return false;
  const r = await fetch(`http://127.0.0.1:${info.httpPort}/healthz`);
  return r.status === 200;
}

/** Raw TCP to the public listener: write `data`, collect what comes back until the relay closes (or `ms` passes). */
function raw(
  data: string | Buffer | (() => Buffer[]),
  o: { ms?: number; localAddress?: string; port?: number; until?: (text: string) => boolean } = {},
): Promise<{ text: string; closed: boolean; afterMs: number; socket: Socket }> {
  return new Promise((resolve) => {
    const t0 = Date.now();
    const chunks: Buffer[] = [];
    const s = connect({ port: o.port ?? info.httpPort, host: '127.0.0.1', ...(o.localAddress ? { localAddress: o.localAddress } : {}) });
    const done = (closed: boolean) => {
      clearTimeout(timer);
      resolve({ text: Buffer.concat(chunks).toString('latin1'), closed, afterMs: Date.now() - t0, socket: s });
    };
    const timer = setTimeout(() => done(false), o.ms ?? 5_000);
    s.on('connect', () => {
      if (typeof data === 'function') for (const b of data()) s.write(b);
      else s.write(data);
    });
    s.on('data', (d) => {
      chunks.push(d);
      if (o.until?.(Buffer.concat(chunks).toString('latin1'))) {
        s.destroy();
        done(false);
      }
    });
    s.on('error', () => {});
    s.on('close', () => done(true));
  });
}

const upgradeRequest = (target: string) =>
  `GET ${target} HTTP/1.1\r\nHost: relay\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n`;

/** A masked client frame header for `len` bytes (the payload is not sent). */
function frameHeader(first: number, len: number): Buffer {
  if (len < 126) return Buffer.from([first, 0x80 | len, 1, 2, 3, 4]);
  const b = Buffer.alloc(14);
  b[0] = first;
  b[1] = 0x80 | 127;
  b.writeBigUInt64BE(BigInt(len), 2);
  return b;
}

describe('ricochet-relay --production under attack', () => {
  it('answers request targets that are no path (//, ///, /\\, http://[) with 400, for plain requests and upgrades', async () => {
    for (const target of ['//', '///', '/\\', 'http://[', '//ricochet?token=x']) {
      const get = await raw(`GET ${target} HTTP/1.1\r\nHost: relay\r\nConnection: close\r\n\r\n`);
      expect(get.text, target).toMatch(/^HTTP\/1\.1 400/);
      const up = await raw(upgradeRequest(target));
      expect(up.text, target).toMatch(/^HTTP\/1\.1 400/);
    }
    expect(await alive()).toBe(true);
  });

  it('a refused WebSocket that then sends an invalid frame (unmasked, RSV1, oversized) costs that socket only', async () => {
    const invalid = [Buffer.from([0x82, 0x02, 1, 2]), Buffer.concat([frameHeader(0xc2, 2), Buffer.from([9, 9])]), frameHeader(0x82, 70_000)];
    for (const frame of invalid) {
      const r = await raw(() => [Buffer.from(upgradeRequest('/ricochet?token=bad')), frame], { ms: 4_000 });
      expect(r.text).toMatch(/^HTTP\/1\.1 101/);
      expect(r.text).toContain('RELAY_ERR_TOKEN_MALFORMED');
      expect(r.closed).toBe(true);
    }
    expect(await alive()).toBe(true);
  });

  it('a refused WebSocket that never answers the close frame is cut within the grace period, not 30 s', async () => {
    const r = await raw(upgradeRequest('/ricochet?token=bad'), { ms: 6_000 });
    expect(r.text).toContain('RELAY_ERR_TOKEN_MALFORMED');
    expect(r.closed).toBe(true);
    expect(r.afterMs).toBeLessThan(3_500);
  });

  it('cuts a half-sent request after the handshake timeout, not 35 s', async () => {
    const r = await raw('GET /healthz HTTP/1.1\r\nHost: relay\r\nX-Slow:', { ms: 8_000 });
    expect(r.closed).toBe(true);
    expect(r.afterMs).toBeLessThan(HANDSHAKE_MS + 2_500);
  });

  it('answers an oversized request head with 431', async () => {
    const r = await raw(`GET /healthz HTTP/1.1\r\nHost: relay\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`);
    expect(r.text).toMatch(/^HTTP\/1\.1 431/);
    expect(await alive()).toBe(true);
  });

  it('caps connections without a session per address; other addresses still get in', async () => {
    const held: Socket[] = [];
    let refused = 0;
    for (let i = 0; i < PER_ADDRESS + 8; i++) {
      const s = connect({ port: info.httpPort, host: '127.0.0.1', localAddress: '127.0.0.2' });
      s.on('error', () => {});
      held.push(s);
    }
    await waitFor(() => held.filter((s) => s.destroyed).length >= 8, 3_000);
    refused = held.filter((s) => s.destroyed).length;
    expect(refused).toBe(8);
    expect(await alive()).toBe(true); // from 127.0.0.1
    for (const s of held) s.destroy();
  });

  it('refuses tokens whose signed payload is null, a list, a number, or names port 0, 99999 or abc, with 4401', async () => {
    const now = Math.floor(Date.now() / 1000);
    const claims = (backendAddr: string) => ({ sub: 'x', backend: backendAddr, iat: now, exp: now + 60, jti: randomBytes(9).toString('base64url') });
    const bad = [signed(null), signed([1, 2]), signed(7), signed('x'), ...['127.0.0.1:0', '127.0.0.1:99999', '127.0.0.1:abc'].map((b) => signed(claims(b)))];
    for (const t of bad) {
      const r = await raw(upgradeRequest(`/ricochet?token=${t}`), { ms: 4_000, until: (text) => text.includes('RELAY_ERR_TOKEN_MALFORMED') });
      expect(r.text).toContain('RELAY_ERR_TOKEN_MALFORMED');
    }
    expect(await alive()).toBe(true);
  });

  it('refuses a HELLO that carries another live session’s connection ID (4409), and the victim carries on', async () => {
    const close = await new Promise<{ code: number; reason: string }>((resolve) => {
      const ws = new WebSocket(`${info.webSocketUrl}?token=${token()}`);
      ws.on('open', () => ws.send(hello(legit.conn.id)));
      ws.on('close', (code, reason) => resolve({ code, reason: reason.toString() }));
      ws.on('error', () => {});
    });
    expect(close.code).toBe(4409);
    expect(close.reason).toMatch(/^RELAY_ERR_CONNECTION_ID_IN_USE/);
    const before = legit.got.length;
    expect(await waitFor(() => legit.got.length > before + 20)).toBe(true);
  });

  it('a connect token opens one session, once', async () => {
    const t = token();
    const first = await new Promise<void>((resolve) => {
      const ws = new WebSocket(`${info.webSocketUrl}?token=${t}`);
      ws.on('open', () => {
        ws.send(hello(0x1234_5678));
        setTimeout(() => ws.close(1000), 200);
      });
      ws.on('close', () => resolve());
      ws.on('error', () => {});
    });
    void first;
    const again = await new Promise<{ code: number; reason: string }>((resolve) => {
      const ws = new WebSocket(`${info.webSocketUrl}?token=${t}`);
      ws.on('open', () => ws.send(hello(0x1234_5679)));
      ws.on('close', (code, reason) => resolve({ code, reason: reason.toString() }));
      ws.on('error', () => {});
    });
    expect(again.code).toBe(4409);
    expect(again.reason).toMatch(/^RELAY_ERR_TOKEN_REUSED/);
  });

  it('the metrics listener answers one request per connection and reads nothing pipelined behind it', async () => {
    const r = await raw('GET /metrics HTTP/1.1\r\nHost: relay\r\n\r\n'.repeat(200), { port: info.metricsPort, ms: 5_000 });
    expect(r.text.match(/HTTP\/1\.1 \d+/g)).toEqual(['HTTP/1.1 200']);
    expect(r.closed).toBe(true);
  });

  it('answers requests pipelined to the public listener up to the per-address budget, then an empty 429 each', async () => {
    const r = await raw('GET /healthz HTTP/1.1\r\nHost: relay\r\n\r\n'.repeat(200), {
      ms: 5_000,
      until: (text) => (text.match(/HTTP\/1\.1 (200|429)/g)?.length ?? 0) >= 100,
    });
    const answered = r.text.match(/HTTP\/1\.1 200/g)?.length ?? 0;
    expect(answered).toBeGreaterThan(0);
    expect(answered).toBeLessThanOrEqual(41);
    expect(r.text).toMatch(/HTTP\/1\.1 429 Too Many Requests\r\nretry-after: 1\r\ncontent-length: 0/i);
    await new Promise((res) => setTimeout(res, 2_100)); // the budget refills for the tests after this one
  });

  it('serves /metrics only on its own listener in production', async () => {
    expect((await fetch(`http://127.0.0.1:${info.httpPort}/metrics`)).status).toBe(404);
    const m = await fetch(`http://127.0.0.1:${info.metricsPort}/metrics`);
    expect(m.status).toBe(200);
    expect(await m.text()).toContain('ricochet_relay_rejected_total');
  });

  it('refuses a WebTransport CONNECT whose path is // (or any path but /ricochet) and lives on', async () => {
    for (const path of ['//', '/other']) {
      const r = spawnSync(WT_CLIENT, ['--url', `https://127.0.0.1:${info.wtPort}${path}`, '--hash', info.certHashes[0]!, '--count', '1', '--wait-ms', '500'], { encoding: 'utf8', timeout: 20_000 });
      expect(r.status, r.stderr).not.toBeNull();
    }
    expect(await alive()).toBe(true);
    // The exposition is cached for a second.
    let m = '';
    for (let i = 0; i < 30 && !/RELAY_ERR_NOT_FOUND"\} [1-9]/.test(m); i++) {
      m = await (await fetch(`http://127.0.0.1:${info.metricsPort}/metrics`)).text();
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(m).toMatch(/ricochet_relay_rejected_total\{code="RELAY_ERR_NOT_FOUND"\} [1-9]/);
  });

  it('WebTransport CONNECT paths, fuzzed: 60 random targets through the addon leave the relay running', async () => {
    // Paths the client's URL parser lets through reach the addon's CONNECT handling and then JS.
    const alphabet = [...'/\\?#%.:@!$&()*+,;=~-_abcXYZ019', '%00', '%2F', '%zz', '//', '/\\', 'é', '\u{1F600}'];
    const paths = fc.sample(fc.array(fc.constantFrom(...alphabet), { maxLength: 24 }).map((a) => `/${a.join('')}`), { numRuns: 60, seed: 12 });
    const notFound = async () => {
      const m = await (await fetch(`http://127.0.0.1:${info.metricsPort}/metrics`)).text();
      return Number(m.match(/ricochet_relay_rejected_total\{code="RELAY_ERR_NOT_FOUND"\} (\d+)/)?.[1] ?? 0);
    };
    const before = await notFound();
    for (const path of paths) {
      const client = spawn(WT_CLIENT, ['--url', `https://127.0.0.1:${info.wtPort}${path}`, '--hash', info.certHashes[0]!, '--count', '1', '--wait-ms', '200'], { stdio: 'ignore' });
      await new Promise((r) => client.once('exit', r));
    }
    expect(await alive()).toBe(true);
    // Most reached the relay and were refused there (the exposition is cached for a second).
    await new Promise((r) => setTimeout(r, 1_100));
    expect((await notFound()) - before).toBeGreaterThan(40);
  });

  it('the legitimate session ran beside every attack and lost nothing', async () => {
    legit.stop();
    expect(await waitFor(() => legit.got.length === legit.sent())).toBe(true);
    expect(legit.got).toEqual([...Array(legit.sent()).keys()]);
    expect(await alive()).toBe(true);
  });
});
