// The WebTransport data path inside the addon (`wtDataPath: 'native'`):
// once a session is established its datagrams go to the backend's UDP
// socket and back in Rust, never through JS; JS keeps the limits (a datagram
// that breaks one hands the path back, and JS closes the session as on the
// JS path), the metrics (polled from the addon) and resumption (the path
// comes back to JS). Driven by the addon's test client (wt_client), which
// frames Ricochet packets around an echo backend.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import type { Socket as UdpSocket } from 'node:dgram';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { createLogger } from '../src/log.js';
import { DEFAULTS, type RelayOptions } from '../src/options.js';
import { Relay } from '../src/relay.js';
import type { Session } from '../src/session.js';
import { mintToken } from '../src/token.js';
import type { WtListener } from '../src/wt-listener.js';
import { WT_CLIENT, makeCertificate, udpEcho, waitFor } from './hostile-helpers.js';

const SECRET = randomBytes(32).toString('base64url');
let backendSock: UdpSocket;
let backend: string;
const relays: Relay[] = [];
const certDir = mkdtempSync(join(tmpdir(), 'relay-native-'));
const cert = makeCertificate(certDir);

beforeAll(async () => {
  ({ sock: backendSock, addr: backend } = await udpEcho());
});

afterAll(async () => {
  await Promise.all(relays.map((r) => r.stop()));
  backendSock.close();
  rmSync(certDir, { recursive: true, force: true });
});

async function startRelay(o: Partial<RelayOptions>) {
  const relay = new Relay(
    { ...DEFAULTS, httpPort: 0, wtPort: 0, certFile: cert.certFile, keyFile: cert.keyFile, tokenSecret: SECRET, allowBackends: [backend], handshakeTimeoutMs: 2000, ...o },
    createLogger(process.env.NP_LOG ?? 'silent'),
  );
  relays.push(relay);
  await relay.start();
  const wt = (relay as unknown as { wt: WtListener }).wt;
  const sessions = (relay as unknown as { sessions: Map<number, Session> }).sessions;
  return { relay, wt, sessions, a: relay.addresses() };
}

const token = () => mintToken(SECRET, { sub: 'p', backend, ttlSeconds: 60 });

interface EchoResult {
  sent: number;
  received: number;
  closedByServer: boolean;
  notice: string | null;
}

/** One wt_client run (HELLO first, then DATA) against the relay; its JSON summary. */
async function wtClient(url: string, hash: string, args: string[]): Promise<EchoResult> {
  const c = spawn(WT_CLIENT, ['--url', url, '--hash', hash, ...args], { stdio: ['ignore', 'pipe', 'ignore'] });
  let out = '';
  c.stdout.on('data', (d: Buffer) => (out += d.toString()));
  await new Promise((r) => c.once('exit', r));
  return JSON.parse(out.trim().split('\n').pop() || '{}') as EchoResult;
}

/** The relay's forwarded-datagram counter for one direction of WebTransport. */
async function forwarded(relay: Relay, direction: 'to_backend' | 'to_client'): Promise<number> {
  const text = await relay.metrics.registry.metrics();
  const m = text.match(new RegExp(`ricochet_relay_datagrams_total\\{[^}]*direction="${direction}"[^}]*transport="webtransport"[^}]*\\} (\\d+)`));
  return m ? Number(m[1]) : 0;
}

describe.skipIf(!existsSync(WT_CLIENT))('WebTransport data path', () => {
  it.each(['native', 'js'] as const)('%s: every datagram echoes, the metrics count them, and only the js path enters JavaScript', async (path) => {
    const { relay, wt, a } = await startRelay({ wtDataPath: path });
    const r = await wtClient(`${a.webTransportUrl}?token=${token()}`, a.certHashes[0]!, ['--conn-id', '77', '--count', '3000', '--rate', '2000', '--size', '200', '--wait-ms', '1000']);
    // Loopback, but the echo backend shares this process's event loop: a few may drop on a busy machine.
    expect(r.received).toBeGreaterThanOrEqual(2900);
    const st = wt.nativeStats()!;
    if (path === 'native') {
      // The HELLO (and at most a few datagrams queued before the switch) entered JS; the rest never did.
      expect(wt.jsDatagrams).toBeLessThanOrEqual(20);
      expect(st.nativeUp).toBeGreaterThanOrEqual(2980);
      expect(st.nativeDown).toBeGreaterThanOrEqual(2900);
    } else {
      expect(wt.jsDatagrams).toBeGreaterThanOrEqual(3001);
      expect(st.nativeUp).toBe(0);
    }
    // The session ended (the client closed): the metrics hold every datagram, both ways.
    expect(await waitFor(() => wt.openSessions === 0, 5000)).toBe(true);
    expect(await forwarded(relay, 'to_backend')).toBeGreaterThanOrEqual(3000);
    expect(await forwarded(relay, 'to_client')).toBeGreaterThanOrEqual(2900);
    expect(st.backendsOpen).toBeLessThanOrEqual(1);
    expect(await waitFor(() => wt.nativeStats()!.backendsOpen === 0, 3000)).toBe(true);
  });

  it.each(['native', 'js'] as const)('%s: a datagram over maxDatagramBytes mid-session closes it with 4413', async (path) => {
    const { relay, wt, a } = await startRelay({ wtDataPath: path, maxDatagramBytes: 1000 });
    // 200-byte DATA first (the session goes native), then 1 100-byte ones.
    const r = await wtClient(`${a.webTransportUrl}?token=${token()}`, a.certHashes[0]!, ['--conn-id', '4413', '--count', '1', '--size', '1100', '--wait-ms', '1000']);
    expect(r.received).toBe(0);
    const text = await relay.metrics.registry.metrics();
    expect(text).toMatch(/ricochet_relay_rejected_total\{code="RELAY_ERR_DATAGRAM_TOO_LARGE"\} 1/);
    if (path === 'native') expect(wt.nativeStats()!.nativeHandbacks).toBeGreaterThanOrEqual(1);
  });

  it('native: a flood over maxDatagramsPerSecond is handed back to JS, which drops it and closes the session', async () => {
    const { relay, wt, a } = await startRelay({ wtDataPath: 'native', maxDatagramsPerSecond: 500, maxBytesPerSecond: 1e9 });
    const r = await wtClient(`${a.webTransportUrl}?token=${token()}`, a.certHashes[0]!, ['--conn-id', '429', '--count', '30000', '--rate', '0', '--size', '100', '--wait-ms', '1000']);
    // Far fewer than sent reached the backend and came back.
    expect(r.received).toBeLessThan(r.sent / 2);
    expect(wt.nativeStats()!.nativeHandbacks).toBeGreaterThanOrEqual(1);
    const text = await relay.metrics.registry.metrics();
    expect(text).toMatch(/ricochet_relay_rejected_total\{code="RELAY_ERR_RATE_LIMITED"\} 1/);
    expect(await forwarded(relay, 'to_backend')).toBeLessThan(r.sent / 2);
  });

  it('native: a cut link parks the session, the path comes back to JS and a resume over WebSocket carries on', async () => {
    const { relay, wt, sessions, a } = await startRelay({ wtDataPath: 'native', resumeWindowMs: 10_000, testControl: true });
    const tok = token();
    const client = wtClient(`${a.webTransportUrl}?token=${tok}`, a.certHashes[0]!, ['--conn-id', '99', '--count', '4000', '--rate', '2000', '--size', '100', '--wait-ms', '200']);
    expect(await waitFor(() => [...sessions.values()].some((s) => s.native), 5000)).toBe(true);
    expect(await waitFor(() => wt.nativeStats()!.nativeUp > 200, 5000)).toBe(true);
    const s = [...sessions.values()][0]!;
    expect(relay.killTransports()).toBe(1);
    expect(s.native).toBe(false);
    expect(s.parked).toBe(true);
    // The wt_client's HELLO key (examples/wt_client.rs): proof of ownership for the resume.
    const helloPkt = Buffer.alloc(128);
    helloPkt[0] = 1;
    helloPkt.writeUInt32LE(99, 1);
    helloPkt.writeUInt16LE(3, 5);
    helloPkt[7] = 1;
    for (let i = 0; i < 16; i++) helloPkt[9 + i] = (99 * 31 + i) & 0xff;
    const ws = new WebSocket(`${a.webSocketUrl}?token=${tok}`);
    const got: Buffer[] = [];
    ws.on('message', (d: Buffer) => got.push(d));
    await new Promise((r) => ws.once('open', r));
    ws.send(helloPkt);
    await waitFor(() => got.length > 0, 3000);
    if (process.env.NP_LOG) console.log((await relay.metrics.registry.metrics()).split('\n').filter((l) => /drops|datagrams_total/.test(l)).join('\n'), wt.nativeStats());
    expect(got.length).toBeGreaterThan(0);
    const data = Buffer.alloc(40);
    data[0] = 4;
    data.writeUInt32LE(99, 1);
    ws.send(data);
    expect(await waitFor(() => got.some((g) => g[0] === 4), 3000)).toBe(true);
    expect(s.resumes).toBe(1);
    expect(s.transport).toBe('websocket');
    expect(s.native).toBe(false);
    ws.close();
    await client;
  });
});
