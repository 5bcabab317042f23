// Relay costs, measured on a relay child process through its /metrics:
// memory per idle WebSocket session, and CPU per datagram forwarded
// (WebSocket → UDP backend). Prints one JSON line. Loopback only.
import { randomBytes } from 'node:crypto';
import { createSocket } from 'node:dgram';
import { WebSocket } from 'ws';
import { mintToken } from '../relay/dist/index.js';
import { dataDatagram, helloDatagram, startRelay } from './ricochet-packets.mjs';

const SECRET = randomBytes(32).toString('base64url');
const IDLE = Number(process.argv[2] ?? 1000);
const DATAGRAMS = Number(process.argv[3] ?? 200_000);
const CLIENTS = 8;

const sink = createSocket({ type: 'udp4', recvBufferSize: 8 << 20 });
await new Promise((r) => sink.bind(0, '127.0.0.1', r));
let received = 0;
sink.on('message', () => received++);
const backend = `127.0.0.1:${sink.address().port}`;

const { proc: relay, info, metric } = await startRelay(
  ['--allow-backends', backend, '--http-port', '0', '--wt-port=-1', '--max-datagrams-per-second', '1000000', '--max-bytes-per-second', '1000000000', '--idle-timeout-ms', '600000'],
  { secret: SECRET },
);
// A session starts with a HELLO; then DATA, of which the relay reads only the header.
const open = (id) =>
  new Promise((resolve, reject) => {
    const ws = new WebSocket(`${info.webSocketUrl}?token=${mintToken(SECRET, { sub: `u${id}`, backend, ttlSeconds: 600 })}`);
    ws.on('open', () => {
      ws.send(helloDatagram(id));
      resolve(ws);
    });
    ws.on('error', reject);
  });
const settle = async () => {
  await new Promise((r) => setTimeout(r, 1500));
};

// Memory per idle session.
await settle();
const rss0 = await metric('process_resident_memory_bytes');
const heap0 = await metric('nodejs_heap_size_used_bytes');
const idle = [];
for (let i = 0; i < IDLE; i++) idle.push(await open(i + 1));
await settle();
const rss1 = await metric('process_resident_memory_bytes');
const heap1 = await metric('nodejs_heap_size_used_bytes');
for (const ws of idle) ws.close();

// CPU per forwarded datagram.
const clients = [];
for (let i = 0; i < CLIENTS; i++) clients.push(await open(100_000 + i));
await settle();
const cpu0 = (await metric('process_cpu_user_seconds_total')) + (await metric('process_cpu_system_seconds_total'));
const toBackend = () => metric('ricochet_relay_datagrams_total\\{direction="to_backend",transport="websocket"\\}');
const f0 = await toBackend();
const t0 = performance.now();
await Promise.all(
  clients.map(async (ws, i) => {
    const d = dataDatagram(100_000 + i);
    for (let n = 0; n < DATAGRAMS / CLIENTS; n++) {
      ws.send(d);
      if (n % 500 === 499 || ws.bufferedAmount > 1 << 20) await new Promise((r) => setImmediate(r));
    }
  }),
);
while ((await toBackend()) - f0 < DATAGRAMS && performance.now() - t0 < 60_000) await new Promise((r) => setTimeout(r, 20));
const seconds = (performance.now() - t0) / 1000;
const cpu1 = (await metric('process_cpu_user_seconds_total')) + (await metric('process_cpu_system_seconds_total'));
const forwarded = (await toBackend()) - f0;
console.log(
  JSON.stringify({
    idle_sessions: IDLE,
    rss_per_idle_session_kib: +((rss1 - rss0) / IDLE / 1024).toFixed(1),
    heap_per_idle_session_kib: +((heap1 - heap0) / IDLE / 1024).toFixed(1),
    datagrams_sent: DATAGRAMS,
    datagrams_forwarded: forwarded,
    seconds: +seconds.toFixed(2),
    datagrams_per_sec: Math.round(forwarded / seconds),
    relay_cpu_us_per_datagram: +(((cpu1 - cpu0) * 1e6) / forwarded).toFixed(2),
    relay_datagrams_per_cpu_second: Math.round(forwarded / (cpu1 - cpu0)),
  }),
);
for (const ws of clients) ws.close();
relay.kill('SIGTERM');
sink.close();
process.exit(0);
