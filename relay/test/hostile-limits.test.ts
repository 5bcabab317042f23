// Budgets and refusals of an in-process relay: bad test-control input,
// rate limits over a sliding window, the cached
// metrics exposition, drains that parked sessions cannot hold up, and
// certificates reloaded from their files.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import type { Socket as UdpSocket } from 'node:dgram';
import { connect } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { WebSocket } from 'ws';
import { createLogger } from '../src/log.js';
import { DEFAULTS, type RelayOptions } from '../src/options.js';
import { Relay } from '../src/relay.js';
import { mintToken } from '../src/token.js';
import { WT_CLIENT, hello, makeCertificate, packet, sleep, udpEcho, waitFor } from './hostile-helpers.js';

const SECRET = randomBytes(32).toString('base64url');
let backendSock: UdpSocket;
let backend: string;
const relays: Relay[] = [];

beforeAll(async () => {
  // A backend that answers every datagram, so sessions see traffic both ways.
  ({ sock: backendSock, addr: backend } = await udpEcho());
});

const certDirs: string[] = [];
/** A directory for a test's certificate, removed once every relay has stopped. */
function certDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'relay-cert-'));
  certDirs.push(dir);
  return dir;
}

afterAll(async () => {
  await Promise.all(relays.map((r) => r.stop()));
  backendSock.close();
  certDirs.forEach((d) => rmSync(d, { recursive: true, force: true }));
});

async function startRelay(o: Partial<RelayOptions> = {}): Promise<{ relay: Relay; wsUrl: string; httpUrl: string }> {
  const relay = new Relay({ ...DEFAULTS, httpPort: 0, wtPort: -1, tokenSecret: SECRET, allowBackends: [backend], handshakeTimeoutMs: 1000, ...o }, createLogger('silent'));
  relays.push(relay);
  const a = await relay.start();
  return { relay, wsUrl: a.webSocketUrl, httpUrl: `http://127.0.0.1:${a.httpPort}` };
}

const token = (b = backend) => mintToken(SECRET, { sub: 'tester', backend: b, ttlSeconds: 60 });

/** An open raw WebSocket that has sent its HELLO, and how it was closed, once it is. */
async function rawSession(url: string, connId: number) {
  const ws = new WebSocket(url);
  const closed = new Promise<{ code: number; reason: string }>((resolve) => ws.on('close', (code, reason) => resolve({ code, reason: reason.toString() })));
  ws.on('error', () => {});
  await new Promise<void>((r) => ws.on('open', () => r()));
  ws.send(hello(connId));
  return { ws, closed };
}

describe('relay budgets and refusals', () => {
  it('refuses an unknown impairment profile or bad link settings with 400, and the next session still opens', async () => {
    const { wsUrl, httpUrl } = await startRelay({ testControl: true });
    for (const body of [{ profile: 'nope' }, { profile: 42 }, { up: { loss: 5 }, down: {} }, { up: 'x', down: 'y' }, [1], null]) {
      const r = await fetch(`${httpUrl}/test/impairment`, { method: 'POST', body: JSON.stringify(body) });
      expect(r.status, JSON.stringify(body)).toBe(400);
    }
    const s = await rawSession(`${wsUrl}?token=${token()}`, 0x01020304);
    const echoed = await new Promise<boolean>((r) => {
      s.ws.once('message', () => r(true));
      setTimeout(() => r(false), 3000);
    });
    expect(echoed).toBe(true);
    s.ws.close(1000);
  });

  it('forgives bursts averaging under a third of the rate limit, and closes sustained traffic at four times the limit', async () => {
    const { wsUrl } = await startRelay({ maxDatagramsPerSecond: 1000 });
    // Each burst overruns the 100-datagram bucket by 500; a counter that never decays closed the session at the fifth.
    const bursty = await rawSession(`${wsUrl}?token=${token()}`, 0x11111111);
    let bursts = 0;
    let closed: { code: number } | null = null;
    void bursty.closed.then((c) => (closed = c));
    for (; bursts < 5 && !closed; bursts++) {
      for (let i = 0; i < 600; i++) bursty.ws.send(packet(4, 0x11111111));
      await sleep(2000);
    }
    expect(closed).toBeNull();
    bursty.ws.close(1000);
    const flood = await rawSession(`${wsUrl}?token=${token()}`, 0x22222222);
    const pump = setInterval(() => {
      for (let i = 0; i < 80; i++) flood.ws.send(packet(4, 0x22222222));
    }, 20);
    const c = await Promise.race([flood.closed, sleep(6000).then(() => null)]);
    clearInterval(pump);
    expect(c?.code).toBe(4429);
  }, 30_000);

  it('renders the metrics exposition once for any number of scrapes within a second', async () => {
    const { relay, httpUrl } = await startRelay();
    const render = vi.spyOn(relay.metrics.registry, 'metrics');
    // 12 at once: within the per-address caps on connections (16) and requests (a burst of 40).
    const texts = await Promise.all(Array.from({ length: 12 }, () => fetch(`${httpUrl}/metrics`).then((r) => r.text())));
    expect(new Set(texts).size).toBe(1);
    expect(render.mock.calls.length).toBeLessThanOrEqual(2);
  });

  it('drains without waiting for parked sessions, and tells an upgrade during the drain why it is refused', async () => {
    const { relay, wsUrl } = await startRelay({ drainMs: 8000, drainNoticeMs: 1000, resumeWindowMs: 8000 });
    const live = await rawSession(`${wsUrl}?token=${token()}`, 0x55555555);
    const parked = await rawSession(`${wsUrl}?token=${token()}`, 0x33333333);
    await waitFor(() => relay.sessionCount === 2);
    parked.ws.terminate(); // no close frame: the session parks for a resume
    expect(await waitFor(() => relay.impairmentReport().sessions.some((x) => x.parked))).toBe(true);
    const t0 = Date.now();
    const drained = relay.drain();
    const late = await rawSession(`${wsUrl}?token=${token()}`, 0x44444444);
    expect(await late.closed).toMatchObject({ code: 1001, reason: expect.stringMatching(/^RELAY_SHUTTING_DOWN/) });
    // The parked session is gone at once; the live one is told to move after the notice.
    expect(await waitFor(() => relay.sessionCount === 1, 900)).toBe(true);
    expect(await live.closed).toMatchObject({ code: 4002, reason: expect.stringMatching(/^RELAY_SESSION_MOVING/) });
    await drained;
    expect(Date.now() - t0).toBeLessThan(3000);
  });

  it('a trusted balancer is not one client: its connections meet only the total cap, its requests are budgeted per forwarded client', async () => {
    const { relay } = await startRelay({ trustedProxies: ['127.0.0.3'], maxPendingPerAddress: 4 });
    const port = relay.addresses().httpPort;
    const open = (from: string) => {
      const s = connect({ port, host: '127.0.0.1', localAddress: from });
      s.on('error', () => {});
      return s;
    };
    const viaBalancer = Array.from({ length: 12 }, () => open('127.0.0.3'));
    const direct = Array.from({ length: 12 }, () => open('127.0.0.4'));
    await waitFor(() => direct.filter((s) => s.destroyed).length >= 8, 3_000);
    await sleep(200);
    expect(direct.filter((s) => s.destroyed).length).toBe(8); // a plain address: 4 pending at most
    expect(viaBalancer.filter((s) => s.destroyed).length).toBe(0);
    for (const s of [...viaBalancer, ...direct]) s.destroy();
    // One player behind the balancer spends its own request budget (20/s, bursts of 40), not everyone's.
    const pipelined = (client: string, n: number) =>
      new Promise<string>((resolve) => {
        const s = open('127.0.0.3');
        let text = '';
        s.on('data', (d) => (text += d.toString('latin1')));
        s.on('connect', () => s.write(`GET /healthz HTTP/1.1\r\nHost: relay\r\nX-Forwarded-For: 203.0.113.9, ${client}\r\n\r\n`.repeat(n)));
        setTimeout(() => {
          s.destroy();
          resolve(text);
        }, 1_000);
      });
    const greedy = await pipelined('198.51.100.1', 80);
    expect(greedy).toMatch(/HTTP\/1\.1 429/);
    const other = await pipelined('198.51.100.2', 1);
    expect(other).toMatch(/^HTTP\/1\.1 200/);
    expect(() => new Relay({ ...DEFAULTS, tokenSecret: SECRET, trustedProxies: ['10.0.0.0/33'] })).toThrowError(/trustedProxies/);
  });

  it('closes a WebTransport session that sends a datagram over maxDatagramBytes with 4413', async () => {
    const dir = certDir();
    const cert = makeCertificate(dir);
    const { relay } = await startRelay({ wtPort: 0, certFile: cert.certFile, keyFile: cert.keyFile, maxDatagramBytes: 1000 });
    const a = relay.addresses();
    // 1 100 bytes fit a QUIC datagram from the first packet on (1 200-byte initial MTU) but not the relay's limit.
    const client = spawn(WT_CLIENT, ['--url', `${a.webTransportUrl}?token=${token()}`, '--hash', a.certHashes[0]!, '--conn-id', '4413', '--count', '1', '--size', '1100', '--wait-ms', '1000'], { stdio: 'ignore' });
    await new Promise((r) => client.once('exit', r));
    const text = await relay.metrics.registry.metrics();
    expect(text).toMatch(/ricochet_relay_rejected_total\{code="RELAY_ERR_DATAGRAM_TOO_LARGE"\} 1/);
  });

  it('reloads the WebTransport certificate when its files change, with no restart', async () => {
    const dir = certDir();
    const first = makeCertificate(dir, 'live');
    const { relay } = await startRelay({ wtPort: 0, certFile: first.certFile, keyFile: first.keyFile, certReloadMs: 1000 });
    const before = relay.addresses().certHashes[0];
    await sleep(50);
    makeCertificate(dir, 'live'); // a renewal writes new files in place
    expect(await waitFor(() => relay.addresses().certHashes[0] !== before, 5000)).toBe(true);
    expect(relay.addresses().certHashes[0]).toMatch(/^[0-9a-f]{64}$/);
  });
});
