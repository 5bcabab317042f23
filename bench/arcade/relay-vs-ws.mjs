#!/usr/bin/env node
// S6 (bench/SCENARIOS.md), the last step of `npm run bench:players`; alone:
// `node bench/arcade/relay-vs-ws.mjs`. The relay's forwarding cost against a
// plain `ws` echo server, same clients and load, in one run. Both servers run
// as child processes; their
// CPU time comes from /proc/<pid>/stat. The relay forwards WebSocket → UDP
// to an echo backend and back, so every echoed message is two forwarded
// datagrams; the `ws` server receives and sends each message once. Prints
// one JSON line. Loopback only.
//
// Then the relay's WebTransport side: Rust WebTransport clients (the addon's
// wt_client example, relay/native/examples/wt_client.rs, Ricochet-framed) at
// a fixed rate each, against the same UDP echo backend. The addon paces each session's sends (10 k/s by
// default), so the offered rate stays below that. ARCADE_BENCH_RELAY_WT_CLIENTS
// (4), _RATE (6,000/s) and _SECONDS (8) set the load: at 4 × 6,000 the relay
// is a third busy and its wake-ups cost more per datagram than at saturation
// (8 × 6,000 here: ~105 k per CPU-second, but a fifth of them lost).
import { randomBytes } from 'node:crypto';
import { spawn, spawnSync } from 'node:child_process';
import { createSocket } from 'node:dgram';
import { join } from 'node:path';
import { WebSocket } from 'ws';
import { ARCADE } from '../../demos/arcade/scripts/build.mjs';
import { jsonLine } from '../json-line.mjs';
import { cpuSeconds } from '../proc-cpu.mjs';
import { helloDatagram } from '../ricochet-packets.mjs';

const ROOT = join(ARCADE, '..', '..');
const SECRET = randomBytes(32).toString('base64url');
const CLIENTS = 8;
const MESSAGES = Number(process.env.ARCADE_BENCH_RELAY_MESSAGES ?? 200_000);
/** Messages each client keeps in flight (a window, so neither side buffers without bound). */
const WINDOW = 64;
const WT_CLIENTS = Number(process.env.ARCADE_BENCH_RELAY_WT_CLIENTS ?? 4);
const WT_RATE = Number(process.env.ARCADE_BENCH_RELAY_WT_RATE ?? 6_000);
const WT_SECONDS = Number(process.env.ARCADE_BENCH_RELAY_WT_SECONDS ?? 8);
const WT_CLIENT_BIN = join(ROOT, 'relay', 'native', 'target', 'release', 'examples', 'wt_client');


/** A packet of `type` (1 HELLO, 4 DATA) with the session's connection ID: all the relay inspects. */
function packet(connId, type = 4) {
  const b = Buffer.alloc(100);
  b[0] = type;
  b.writeUInt32LE(connId, 1);
  return b;
}

/** A relay session must open with HELLO: send one and wait for its echo. */
function hello(ws, connId) {
  return new Promise((resolve, reject) => {
    ws.once('message', () => resolve());
    ws.once('close', (code, reason) => reject(new Error(`relay closed the session: ${code} ${reason}`)));
    ws.send(helloDatagram(connId));
  });
}

/** Sends `total` messages over `sockets` with a window each; resolves with elapsed seconds once all echoes are back. */
async function drive(sockets, total, pid) {
  const per = Math.floor(total / sockets.length);
  const cpu0 = cpuSeconds(pid);
  const t0 = performance.now();
  await Promise.all(
    sockets.map(
      ({ ws, data }) =>
        new Promise((resolve, reject) => {
          // A closed socket would leave its echoes missing forever: fail instead.
          ws.once('close', (code, reason) => got < per && reject(new Error(`socket closed mid-run: ${code} ${reason}`)));
          let sent = 0;
          let got = 0;
          const pump = () => {
            while (sent < per && sent - got < WINDOW) (ws.send(data), sent++);
          };
          ws.on('message', () => {
            got++;
            if (got === per) resolve();
            else pump();
          });
          pump();
        }),
    ),
  );
  return { seconds: (performance.now() - t0) / 1000, cpuSeconds: cpuSeconds(pid) - cpu0, messages: per * sockets.length };
}

const open = (url) =>
  new Promise((resolve, reject) => {
    const ws = new WebSocket(url);
    ws.binaryType = 'nodebuffer';
    ws.once('open', () => resolve(ws));
    ws.once('error', reject);
  });

// --- relay → UDP echo backend
const echo = createSocket({ type: 'udp4', recvBufferSize: 8 << 20 });
await new Promise((r) => echo.bind(0, '127.0.0.1', r));
echo.on('message', (m, rinfo) => echo.send(m, rinfo.port, rinfo.address));
const backend = `127.0.0.1:${echo.address().port}`;
/** A relay forwarding to the echo backend with rate limits out of the way; `wtPort` -1 disables WebTransport. Resolves once it listens. */
async function startRelay(wtPort) {
  const proc = spawn(
    process.execPath,
    [join(ROOT, 'relay', 'dist', 'cli.js'), '--allow-backends', backend, '--http-port', '0', `--wt-port=${wtPort}`, '--max-datagrams-per-second', '10000000', '--max-bytes-per-second', '1000000000'],
    { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, RICOCHET_LOG_LEVEL: 'warn', RICOCHET_RELAY_TOKEN_SECRET: SECRET } },
  );
  return { proc, info: await jsonLine(proc, (m) => m.event === 'listening') };
}
const { proc: relay, info } = await startRelay(-1);
const { mintToken } = await import(join(ROOT, 'relay', 'dist', 'index.js'));
const relaySockets = [];
for (let i = 0; i < CLIENTS; i++) {
  const ws = await open(`${info.webSocketUrl}?token=${mintToken(SECRET, { sub: `b${i}`, backend, ttlSeconds: 600 })}`);
  await hello(ws, 1000 + i);
  relaySockets.push({ ws, data: packet(1000 + i) });
}
await drive(relaySockets, 2000, relay.pid); // warm-up
const r = await drive(relaySockets, MESSAGES, relay.pid);
for (const { ws } of relaySockets) ws.close();
relay.kill('SIGTERM');

// --- the relay's WebTransport side, same echo backend
const built = spawnSync(process.execPath, [join(ROOT, 'relay', 'native', 'build.mjs'), '--client'], { stdio: ['ignore', 'ignore', 'inherit'] });
if (built.status !== 0) throw new Error('building the WebTransport client failed');
const { proc: wtRelay, info: wtInfo } = await startRelay(0);
/** Runs the clients (`count` datagrams each at WT_RATE/s); resolves with their summaries and the relay's CPU over the run. */
function wtRun(count) {
  const cpu0 = cpuSeconds(wtRelay.pid);
  const t0 = performance.now();
  return Promise.all(
    Array.from({ length: WT_CLIENTS }, (_, i) => {
      const token = mintToken(SECRET, { sub: `wt${i}`, backend, ttlSeconds: 600 });
      const p = spawn(WT_CLIENT_BIN, ['--url', `${wtInfo.webTransportUrl}?token=${token}`, '--hash', wtInfo.certHashes[0], '--conn-id', String(2000 + i), '--count', String(count), '--size', '100', '--rate', String(WT_RATE)], {
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      let out = '';
      p.stdout.on('data', (c) => (out += c));
      return new Promise((resolve, reject) =>
        // 'close': stdout drained (its last line can come after 'exit').
        p.on('close', (code) => {
          const r = JSON.parse(out.trim().split('\n').pop() || '{}');
          code === 0 && !r.error ? resolve(r) : reject(new Error(`wt_client exited ${code}: ${out.trim()}`));
        }),
      );
    }),
  ).then((clients) => ({ clients, seconds: (performance.now() - t0) / 1000, cpuSeconds: cpuSeconds(wtRelay.pid) - cpu0 }));
}
await wtRun(2000); // warm-up
const w = await wtRun(WT_RATE * WT_SECONDS);
wtRelay.kill('SIGTERM');
echo.close();
const wtEchoes = w.clients.reduce((n, c) => n + c.received, 0);
const wtSent = w.clients.reduce((n, c) => n + c.sent, 0);

// --- plain ws echo server, same clients and load
const wsEcho = spawn(
  process.execPath,
  [
    '--input-type=module',
    '-e',
    `import { WebSocketServer } from 'ws';
     const s = new WebSocketServer({ host: '127.0.0.1', port: 0 });
     s.on('listening', () => console.log(JSON.stringify({ event: 'listening', port: s.address().port })));
     s.on('connection', (ws) => ws.on('message', (d, binary) => ws.send(d, { binary })));`,
  ],
  { cwd: ARCADE, stdio: ['ignore', 'pipe', 'inherit'] },
);
const echoInfo = await jsonLine(wsEcho, (m) => m.event === 'listening');
const echoSockets = [];
for (let i = 0; i < CLIENTS; i++) echoSockets.push({ ws: await open(`ws://127.0.0.1:${echoInfo.port}/`), data: packet(1000 + i) });
await drive(echoSockets, 2000, wsEcho.pid);
const e = await drive(echoSockets, MESSAGES, wsEcho.pid);
for (const { ws } of echoSockets) ws.close();
wsEcho.kill('SIGTERM');

const round = (x) => +x.toFixed(2);
console.log(
  JSON.stringify({
    clients: CLIENTS,
    relay: { datagrams: r.messages * 2, seconds: round(r.seconds), cpuSeconds: round(r.cpuSeconds), perCpuSecond: Math.round((r.messages * 2) / r.cpuSeconds) },
    relayWebTransport: {
      clients: WT_CLIENTS,
      offeredPerClient: WT_RATE,
      sent: wtSent,
      echoed: wtEchoes,
      datagrams: wtSent + wtEchoes,
      seconds: round(w.seconds),
      cpuSeconds: round(w.cpuSeconds),
      perCpuSecond: Math.round((wtSent + wtEchoes) / w.cpuSeconds),
      rttP50Us: Math.max(...w.clients.map((c) => c.rttUs.p50)),
      rttP99Us: Math.max(...w.clients.map((c) => c.rttUs.p99)),
    },
    wsEcho: { messages: e.messages, seconds: round(e.seconds), cpuSeconds: round(e.cpuSeconds), perCpuSecond: Math.round(e.messages / e.cpuSeconds) },
  }),
);
process.exit(0);
