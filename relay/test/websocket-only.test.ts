// The relay without WebTransport: when no addon loads (RICOCHET_RELAY_ADDON
// pointing at nothing stands in for a platform without a prebuilt addon), and
// when --no-webtransport turns it off on purpose. Either way it serves
// WebSocket, /cert-hash offers no WebTransport, and the log says why once.
// Runs the built CLI (dist/cli.js), as an installed relay would run.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { mintToken } from '../src/token.js';
import { echoGame, pumpingClient, waitFor } from './hostile-helpers.js';

const CLI = fileURLToPath(new URL('../dist/cli.js', import.meta.url));
const SECRET = randomBytes(32).toString('base64url');
const WARN = 40;

interface Started {
  info: { httpPort: number; wtPort: number | null; webSocketUrl: string; webTransportOff: string | null };
  logs: { level: number; msg: string }[];
}

let echo: Awaited<ReturnType<typeof echoGame>>;
let proc: ChildProcess | null = null;

beforeAll(async () => {
  echo = await echoGame();
});
afterAll(() => echo.close());
afterEach(async () => {
  const p = proc;
  proc = null;
  if (p && p.exitCode === null) {
    const exited = new Promise((r) => p.once('exit', r));
    p.kill('SIGTERM');
    await exited;
  }
});

/** Starts the CLI with `args` and extra env; resolves at its "listening" line with the log lines so far (and later ones as they come). */
function startCli(args: string[], env: Record<string, string>): Promise<Started> {
  const p = spawn(process.execPath, [CLI, '--http-port', '0', '--wt-port', '0', '--allow-backends', echo.backend, '--drain-ms', '100', ...args], {
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, RICOCHET_LOG_LEVEL: 'info', RICOCHET_RELAY_TOKEN_SECRET: SECRET, ...env },
  });
  proc = p;
  const logs: Started['logs'] = [];
  return new Promise((resolve, reject) => {
    p.once('exit', (code) => reject(new Error(`relay exited with ${code}`)));
    createInterface({ input: p.stdout! }).on('line', (l) => {
      const j = JSON.parse(l) as { event?: string; level?: number; msg?: string };
      if (j.event === 'listening') resolve({ info: j as unknown as Started['info'], logs });
      else if (j.level !== undefined) logs.push({ level: j.level, msg: j.msg ?? '' });
    });
  });
}

/** A WebSocket session through the relay to the echo game server: true when every message came back. */
async function webSocketSessionWorks(wsUrl: string): Promise<boolean> {
  const h = await pumpingClient(`${wsUrl}?token=${mintToken(SECRET, { sub: 'ws-only', backend: echo.backend, ttlSeconds: 60 })}`, 5, 10);
  await waitFor(() => h.sent() >= 20);
  h.stop();
  const ok = await waitFor(() => h.got.length === h.sent());
  h.conn.close();
  return ok;
}

const certHash = async (httpPort: number) => (await fetch(`http://127.0.0.1:${httpPort}/cert-hash`)).json();

describe('relay without WebTransport', () => {
  it('with no addon for this platform, serves WebSocket only and warns once, naming the platform and the fixes', async () => {
    const { info, logs } = await startCli([], { RICOCHET_RELAY_ADDON: '/nonexistent/ricochet_relay_wt.node' });
    expect(info).toMatchObject({ wtPort: null, webTransportOff: 'unavailable' });
    expect(await webSocketSessionWorks(info.webSocketUrl)).toBe(true);
    const warnings = logs.filter((l) => l.level >= WARN);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]!.msg).toContain(`WebTransport is off on ${process.platform}-${process.arch}: no WebTransport addon could be loaded`);
    expect(warnings[0]!.msg).toContain('npm install @ricochet/relay-');
    expect(warnings[0]!.msg).toContain('--no-webtransport');
  });

  it('with no addon, /cert-hash offers no WebTransport URL or hash and says it is unavailable', async () => {
    const { info } = await startCli([], { RICOCHET_RELAY_ADDON: '/nonexistent/ricochet_relay_wt.node' });
    expect(await certHash(info.httpPort)).toEqual({
      certHashes: [],
      validUntilMs: null,
      webTransportUrl: null,
      webSocketUrl: info.webSocketUrl,
      webTransport: 'unavailable',
    });
  });

  it('--no-webtransport serves WebSocket only, logs that it is on purpose, and warns about nothing', async () => {
    const { info, logs } = await startCli(['--no-webtransport'], {});
    expect(info).toMatchObject({ wtPort: null, webTransportOff: 'disabled' });
    expect(await webSocketSessionWorks(info.webSocketUrl)).toBe(true);
    expect(logs.filter((l) => l.level >= WARN)).toEqual([]);
    expect(logs.map((l) => l.msg)).toContain('webtransport disabled on purpose (--no-webtransport or RICOCHET_RELAY_WEBTRANSPORT=false); serving WebSocket only');
    expect(await certHash(info.httpPort)).toMatchObject({ webTransportUrl: null, certHashes: [], webTransport: 'disabled' });
  });

  it('RICOCHET_RELAY_WEBTRANSPORT=false turns WebTransport off like the flag', async () => {
    const { info, logs } = await startCli([], { RICOCHET_RELAY_WEBTRANSPORT: 'false' });
    expect(info).toMatchObject({ wtPort: null, webTransportOff: 'disabled' });
    expect(logs.filter((l) => l.level >= WARN)).toEqual([]);
  });

  it('with the addon, serves WebTransport and /cert-hash says so', async () => {
    const { info, logs } = await startCli([], {});
    expect(info.wtPort).toBeGreaterThan(0);
    expect(info.webTransportOff).toBeNull();
    expect(logs.filter((l) => l.level >= WARN)).toEqual([]);
    const c = (await certHash(info.httpPort)) as { certHashes: string[]; webTransport: string; webTransportUrl: string };
    expect(c).toMatchObject({ webTransport: 'available', webTransportUrl: `https://127.0.0.1:${info.wtPort}/ricochet` });
    expect(c.certHashes[0]).toMatch(/^[0-9a-f]{64}$/);
  });
});
