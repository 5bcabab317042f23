// Sizing a relay (`npm run bench -- --sizing`): what one relay process on one
// CPU core carries. The relay runs under `taskset -c 1`; everything else (this
// process, the load generator, the UDP echo "game server", the WebTransport
// clients) is pinned to core 0, so the relay's core is its own. Relay CPU is
// read from /proc/<pid>/stat, so every rate is also given per relay
// CPU-second (the machine may be shared); as root every process here runs at
// nice -10, and each step reports how busy the relay's core was with anything
// else (a step is measured again, up to three times, while that is over 15 %).
// Each transport gets a fresh relay. Loopback only.
//
// Measured, per transport:
//   memory   RSS growth per session (idle WebSocket sessions; WebTransport
//            sessions at 30 Hz, fewer of them: one client process each)
//   game     sessions at 30 Hz up + 30 Hz down (150 B), stepped up until the
//            relay's core passes 80 %, anything is lost or the median echo RTT
//            passes 10 ms: datagrams/s per core
//            and sessions per core (the largest step that kept up, and the
//            per-session cost extrapolated to 80 % of a core)
//   bulk     150 B and 1,100 B datagrams echoed as fast as the relay forwards
//            them: datagrams/s and Mbit/s per core
// then S6's latency half (latency.mjs): the one-way latency the relay adds at
// half load, every path beside a plain `ws` echo and the UDP floor in one run
// (`--no-latency` skips it, `--only latency` runs it alone).
//
//   node bench/sizing.mjs [--quick] [--only ws|wt|latency] [--no-latency] [--json FILE]
// Child roles (internal): --role echo | --role load.
import { fork, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createSocket } from 'node:dgram';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { fileURLToPath } from 'node:url';
import { cpuSeconds } from './proc-cpu.mjs';
import { runLatency } from './latency.mjs';
import { helloDatagram, lastJsonLine, rssBytes, startRelay } from './ricochet-packets.mjs';

const argv = process.argv.slice(2);
const role = argv.includes('--role') ? argv[argv.indexOf('--role') + 1] : 'main';
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const pin = (pid, cpu) => spawnSync('taskset', ['-a', '-p', '-c', String(cpu), String(pid)], { stdio: 'ignore' }).status === 0;
/** As root, every thread of `pid` at nice -10, so other work on a shared machine does not starve the measurement. */
const ROOT_USER = process.getuid?.() === 0;
const boost = (pid) => {
  if (!ROOT_USER) return;
  for (const tid of readdirSync(`/proc/${pid}/task`)) spawnSync('renice', ['-n', '-10', '-p', tid], { stdio: 'ignore' });
};
const pct = (xs, p) => (xs.length ? [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))] : NaN);
/** Source addresses spread over 127.1.0.0/16: the relay budgets new connections per address (50/s, bursts of 200). */
const sourceAddress = (i) => `127.1.${(i >> 6) & 255}.${2 + (i & 63)}`;

/** A DATA packet for `connId`, `size` bytes, carrying its send time (ms, float64) for the echo's RTT. */
function stamped(connId, size) {
  const b = Buffer.alloc(size);
  b[0] = 4;
  b.writeUInt32LE(connId >>> 0, 1);
  b.writeDoubleLE(performance.now(), 5);
  return b;
}

// ---- child: the game server, a UDP echo (each relay session has its own socket toward it)
if (role === 'echo') {
  const s = createSocket({ type: 'udp4', recvBufferSize: 16 << 20, sendBufferSize: 4 << 20 });
  s.on('message', (m, r) => s.send(m, r.port, r.address));
  s.bind(0, '127.0.0.1', () => process.send({ port: s.address().port }));
}

// ---- child: WebSocket clients, driven over IPC
if (role === 'load') {
  const { WebSocket } = await import('ws');
  /** @type {{ ws: import('ws').WebSocket, id: number }[]} */
  const socks = [];
  let received = 0;
  let bytesIn = 0;
  let rtts = [];
  let onEcho = null;
  const open = (url, id, i) =>
    new Promise((resolve) => {
      const ws = new WebSocket(url, { localAddress: sourceAddress(i), perMessageDeflate: false });
      ws.binaryType = 'nodebuffer';
      const fail = () => resolve(null);
      ws.once('error', fail);
      ws.once('close', fail);
      ws.once('open', () => {
        ws.send(helloDatagram(id));
        ws.once('message', () => {
          ws.on('message', (d) => {
            received++;
            bytesIn += d.length;
            if (d.length >= 13 && (received & 7) === 0) rtts.push(performance.now() - d.readDoubleLE(5));
            onEcho?.(ws);
          });
          resolve({ ws, id });
        });
      });
    });
  const commands = {
    async open({ urls, idBase }) {
      let failed = 0;
      for (let i = 0; i < urls.length; i += 64) {
        const batch = await Promise.all(urls.slice(i, i + 64).map((u, k) => open(u, idBase + i + k, socks.length + i + k)));
        for (const s of batch) s ? socks.push(s) : failed++;
      }
      return { open: socks.length, failed };
    },
    /** Every socket sends `hz` datagrams/s of `size` bytes for `seconds`, spread evenly over time. */
    async rate({ hz, size, seconds }) {
      received = 0;
      bytesIn = 0;
      rtts = [];
      const packets = socks.map((s) => stamped(s.id, size));
      const want = hz * socks.length;
      let sent = 0;
      let next = 0;
      let maxLateMs = 0;
      const t0 = performance.now();
      await new Promise((resolve) => {
        const tick = () => {
          const now = performance.now();
          const elapsed = now - t0;
          if (elapsed >= seconds * 1000) return resolve();
          const due = Math.min(Math.floor((elapsed * want) / 1000), Math.floor(seconds * want));
          if (due - sent > want / 100) maxLateMs = Math.max(maxLateMs, ((due - sent) / want) * 1000);
          for (; sent < due; sent++) {
            const k = next++ % socks.length;
            packets[k].writeDoubleLE(performance.now(), 5);
            socks[k].ws.send(packets[k]);
          }
          setTimeout(tick, 2);
        };
        tick();
      });
      await sleep(500);
      return { sent, received, bytesIn, seconds, intended: Math.floor(seconds * want), maxLateMs: +maxLateMs.toFixed(1), rttP50Ms: +pct(rtts, 0.5).toFixed(2), rttP99Ms: +pct(rtts, 0.99).toFixed(2) };
    },
    /** Each socket keeps `window` datagrams of `size` bytes in flight (a new one per echo) for `seconds`. */
    async flood({ size, window, seconds }) {
      received = 0;
      bytesIn = 0;
      rtts = [];
      let sent = 0;
      let stop = false;
      const pkt = new Map(socks.map((s) => [s.ws, stamped(s.id, size)]));
      onEcho = (ws) => {
        if (stop) return;
        ws.send(pkt.get(ws));
        sent++;
      };
      for (const s of socks) for (let n = 0; n < window; n++) (s.ws.send(pkt.get(s.ws)), sent++);
      await sleep(seconds * 1000);
      stop = true;
      onEcho = null;
      await sleep(300);
      return { sent, received, bytesIn, seconds };
    },
    async close() {
      for (const s of socks.splice(0)) s.ws.close(1000);
      await sleep(300);
      return {};
    },
  };
  process.on('message', async ({ cmd, args }) => process.send(await commands[cmd](args)));
  process.on('disconnect', () => process.exit(0));
}

// ---- the run
/** Busy seconds of CPU `cpu` from /proc/stat (user to steal, 10 ms grain), or NaN. */
function coreBusy(cpu) {
  const line = readFileSync('/proc/stat', 'utf8').match(new RegExp(`^cpu${cpu} (.*)$`, 'm'));
  if (!line) return NaN;
  const [user, nice, system, , , irq, softirq, steal] = line[1].trim().split(/\s+/).map(Number);
  return (user + nice + system + irq + softirq + steal) / 100;
}

/**
 * Relay CPU and wall time over `f`, and how busy the relay's core was with
 * anything else (other processes, interrupts): a shared machine shows here.
 */
async function measured(pid, f, relayCore = 1, clientCore = 0) {
  const c0 = cpuSeconds(pid);
  const b0 = coreBusy(relayCore);
  const l0 = coreBusy(clientCore);
  const t0 = performance.now();
  const r = await f();
  const wall = (performance.now() - t0) / 1000;
  const relayCpu = cpuSeconds(pid) - c0;
  return {
    ...r,
    wall,
    relayCpu,
    othersOnCore: +Math.max(0, (coreBusy(relayCore) - b0 - relayCpu) / wall).toFixed(2),
    // The clients' core: near 1, the clients (not the relay) set the pace.
    clientCoreBusy: +((coreBusy(clientCore) - l0) / wall).toFixed(2),
  };
}

/** Other processes' share of the relay's core above which a measurement is taken again. */
const CALM = 0.15;
/** Runs the measurement `f` up to 3 times while others took over CALM of the relay's core; keeps the calmest. */
async function calm(f) {
  let best = null;
  for (let i = 0; i < 3; i++) {
    const r = await f();
    if (best === null || r.othersOnCore < best.othersOnCore) best = r;
    if (r.othersOnCore <= CALM) break;
  }
  return best;
}

const HZ = 30;
const SIZE = 150;
const BULK_SIZE = 1100;
/**
 * A step kept up: nothing lost (≤ 0.1 %), no relay drops, the relay ≤ 80 % busy, and no queue
 * building (median echo RTT ≤ 10 ms: past its capacity a relay still forwards everything, late).
 */
const keptUp = (s) => s.relayCore <= 0.8 && s.lost <= s.datagramsPerSec * 0.001 && !s.relayDrops && s.rttP50Ms <= 10;

/** WebSocket: idle memory, the 30 Hz ladder, bulk. `ctx` holds the relay and the load child. */
async function measureWs({ relay, metric, ask, openWs, quick, log }) {
  const out = {};
  const drops = async () => (await metric('ricochet_relay_drops_total')) || 0;
  // Memory per idle session: RSS growth over IDLE sessions (HELLO sent and echoed, then silence).
  const IDLE = quick ? 500 : 2000;
  await sleep(1000);
  const rss0 = rssBytes(relay.pid);
  const heap0 = await metric('nodejs_heap_size_used_bytes');
  const o = await openWs(IDLE);
  await sleep(1500);
  const rss1 = rssBytes(relay.pid);
  const heap1 = await metric('nodejs_heap_size_used_bytes');
  out.memory = { sessions: o.open, failed: o.failed, baseRssMiB: +(rss0 / 2 ** 20).toFixed(1), rssPerSessionKiB: +((rss1 - rss0) / o.open / 1024).toFixed(1), heapPerSessionKiB: +((heap1 - heap0) / o.open / 1024).toFixed(1) };
  log(`ws memory ${JSON.stringify(out.memory)}`);
  await ask('close');
  await sleep(500);

  // Game rate: every session 30 Hz up, echoed down, 150 B; more sessions per step.
  const STEP_S = quick ? 3 : 5;
  const steps = quick ? [200, 600] : [250, 500, 750, 900, 1000, 1250, 1500, 2000, 2500, 3000];
  out.game = [];
  let have = 0;
  for (const n of steps) {
    have = (await openWs(n - have)).open;
    await ask('rate', { hz: HZ, size: SIZE, seconds: 1 }); // warm-up
    const d0 = await drops();
    await metric('nodejs_eventloop_lag_p99_seconds'); // resets the relay's loop-delay histogram
    const r = await calm(() => measured(relay.pid, () => ask('rate', { hz: HZ, size: SIZE, seconds: STEP_S })));
    const step = {
      sessions: have,
      relayCore: +(r.relayCpu / r.wall).toFixed(3),
      datagramsPerSec: Math.round((r.sent + r.received) / r.seconds),
      lost: r.sent - r.received,
      relayDrops: (await drops()) - d0,
      relayLoopP99Ms: +((await metric('nodejs_eventloop_lag_p99_seconds')) * 1000).toFixed(1),
      offeredShare: +(r.sent / r.intended).toFixed(3),
      clientsLateMs: r.maxLateMs,
      rttP50Ms: r.rttP50Ms,
      rttP99Ms: r.rttP99Ms,
      relayCpuUsPerDatagram: +((r.relayCpu * 1e6) / (r.sent + r.received)).toFixed(2),
      othersOnCore: r.othersOnCore,
      clientCoreBusy: r.clientCoreBusy,
    };
    out.game.push(step);
    log(`ws game ${JSON.stringify(step)}`);
    // Past 80 %, or losing, or the clients' own core cannot offer the rate: no further step says more.
    if (!keptUp(step) || step.offeredShare < 0.97) break;
  }
  await ask('close');

  // Bulk: 32 sessions × 16 datagrams in flight, each echo answered by a new one.
  out.bulk = [];
  await openWs(32);
  for (const size of [SIZE, BULK_SIZE]) {
    await ask('flood', { size, window: 16, seconds: 1 });
    const r = await calm(() => measured(relay.pid, () => ask('flood', { size, window: 16, seconds: quick ? 3 : 5 })));
    const datagrams = r.sent + r.received;
    const bytes = r.bytesIn * 2; // every echoed byte crossed the relay twice
    const b = {
      size,
      relayCore: +(r.relayCpu / r.wall).toFixed(3),
      datagramsPerSec: Math.round(datagrams / r.seconds),
      datagramsPerCoreSecond: Math.round(datagrams / r.relayCpu),
      mbitPerSec: +((bytes * 8) / r.seconds / 1e6).toFixed(1),
      mbitPerCoreSecond: +((bytes * 8) / r.relayCpu / 1e6).toFixed(1),
      othersOnCore: r.othersOnCore,
    };
    out.bulk.push(b);
    log(`ws bulk ${JSON.stringify(b)}`);
  }
  await ask('close');
  return out;
}

/** WebTransport: one wt_client process (Rust, quinn) per session, pinned beside the other clients. */
async function measureWt({ relay, info, mintToken, secret, backend, wtClient, clientCpu, quick, log }) {
  const out = {};
  const client = (i, { size, rate, count }) => {
    const token = mintToken(secret, { sub: `wt${i}`, backend, ttlSeconds: 900 });
    const args = ['--url', `${info.webTransportUrl}?token=${token}`, '--hash', info.certHashes[0], '--conn-id', String(900_000 + i), '--bind', sourceAddress(i), '--count', String(count), '--size', String(size), '--rate', String(rate), '--wait-ms', '1500'];
    const pinned = clientCpu === null ? [wtClient, ...args] : ['taskset', '-c', String(clientCpu), wtClient, ...args];
    return ROOT_USER ? lastJsonLine('nice', ['-n', '-10', ...pinned]) : lastJsonLine(pinned[0], pinned.slice(1));
  };
  const sum = (cs, k) => cs.reduce((n, c) => n + (c[k] ?? 0), 0);
  // Game rate: N sessions at 30 Hz each way for SECS; relay CPU and RSS sampled once all are connected.
  const SECS = quick ? 7 : 9;
  const steps = quick ? [20] : [40, 80, 120, 160, 200];
  out.game = [];
  let idBase = 0;
  // Warm-up (the addon's first sessions allocate what every later one shares), then the memory baseline.
  await Promise.all(Array.from({ length: 8 }, () => client(idBase++, { size: SIZE, rate: HZ, count: HZ })));
  await sleep(1000);
  const rss0 = rssBytes(relay.pid);
  const runStep = async (n) => {
    const runs = [];
    for (let k = 0; k < n; k++) {
      runs.push(client(idBase + k, { size: SIZE, rate: HZ, count: HZ * SECS }));
      if (k % 10 === 9) await sleep(50); // stagger the handshakes
    }
    idBase += n;
    await sleep(3500);
    const rss1 = rssBytes(relay.pid);
    const r = await measured(relay.pid, () => sleep(3000));
    const done = (await Promise.all(runs)).filter(Boolean);
    const ok = done.filter((c) => !c.error);
    await sleep(1000);
    return {
      sessions: n,
      connected: ok.length,
      errors: [...new Set(done.filter((c) => c.error).map((c) => c.error))].slice(0, 2),
      rssPerSessionKiB: +((rss1 - rss0) / n / 1024).toFixed(1),
      relayCore: +(r.relayCpu / r.wall).toFixed(3),
      datagramsPerSec: n * HZ * 2,
      lost: sum(ok, 'sent') - sum(ok, 'received') + (n - ok.length) * HZ * SECS,
      relayDrops: 0,
      rttP50Ms: +(Math.max(...ok.map((c) => c.rttUs?.p50 ?? 0)) / 1000).toFixed(2),
      rttP99Ms: +(Math.max(...ok.map((c) => c.rttUs?.p99 ?? 0)) / 1000).toFixed(2),
      othersOnCore: r.othersOnCore,
      clientCoreBusy: r.clientCoreBusy,
    };
  };
  for (const n of steps) {
    const step = await calm(() => runStep(n));
    step.relayCpuUsPerDatagram = +((step.relayCore * 1e6) / step.datagramsPerSec).toFixed(2);
    out.game.push(step);
    log(`wt game ${JSON.stringify(step)}`);
    if (!keptUp(step)) break;
  }
  // Bulk: 4 sessions at 5,000 datagrams/s each (the addon paces each session's sends).
  out.bulk = [];
  for (const size of [SIZE, BULK_SIZE]) {
    const rate = 5000;
    const secs = quick ? 3 : 5;
    const r = await calm(() => measured(relay.pid, async () => ({ clients: (await Promise.all([0, 1, 2, 3].map(() => client(idBase++, { size, rate, count: rate * secs })))).filter(Boolean) })));
    const s = sum(r.clients, 'sent');
    const g = sum(r.clients, 'received');
    const b = {
      size,
      offeredPerSec: 4 * rate,
      sent: s,
      echoed: g,
      relayCore: +(r.relayCpu / r.wall).toFixed(3),
      datagramsPerCoreSecond: Math.round((s + g) / r.relayCpu),
      mbitPerSec: +(((s + g) * size * 8) / secs / 1e6).toFixed(1),
      mbitPerCoreSecond: +(((s + g) * size * 8) / r.relayCpu / 1e6).toFixed(1),
      othersOnCore: r.othersOnCore,
    };
    out.bulk.push(b);
    log(`wt bulk ${JSON.stringify(b)}`);
  }
  return out;
}

/**
 * Runs the sizing measurements and prints them (markdown), then S6's latency
 * table; resolves with the figures. `args`: --quick (fewer, shorter steps),
 * --only ws|wt|latency, --no-latency.
 */
export async function runSizing(args = []) {
  const only = args.includes('--only') ? args[args.indexOf('--only') + 1] : null;
  const latency = only === null || only === 'latency' ? !args.includes('--no-latency') : false;
  if (only === 'latency') return { latency: await runLatency() };
  const quick = args.includes('--quick');
  const ROOT = fileURLToPath(new URL('..', import.meta.url));
  const wtClient = `${ROOT}relay/native/target/release/examples/wt_client`;
  const SELF = fileURLToPath(import.meta.url);
  const secret = randomBytes(32).toString('base64url');
  const twoCores = cpus().length >= 2;
  // Relay on core 1, everything else on core 0 (one core: unpinned, figures per relay CPU-second still hold).
  const relayCpu = twoCores ? 1 : null;
  const clientCpu = twoCores ? 0 : null;
  if (twoCores) pin(process.pid, clientCpu);
  boost(process.pid);
  const log = (m) => console.error(`[sizing] ${m}`);
  const child = (r) => {
    const c = fork(SELF, ['--role', r], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    if (twoCores) pin(c.pid, clientCpu);
    boost(c.pid);
    return c;
  };
  const echo = child('echo');
  const { port } = await new Promise((r) => echo.once('message', r));
  const backend = `127.0.0.1:${port}`;
  const wt = only !== 'ws' && existsSync(wtClient);
  const { mintToken } = await import('../relay/dist/index.js');
  /** A fresh relay per transport (so neither inherits the other's memory), pinned and boosted; stopped after `f`. */
  const withRelay = async (webTransport, f) => {
    const { proc: relay, info, metric } = await startRelay(
      ['--allow-backends', backend, '--http-port', '0', `--wt-port=${webTransport ? 0 : -1}`, '--max-datagrams-per-second', '1000000', '--max-bytes-per-second', '1000000000', '--idle-timeout-ms', '600000', '--max-sessions', '100000'],
      { secret, cpu: relayCpu },
    );
    boost(relay.pid);
    const exited = new Promise((r) => relay.once('exit', r));
    try {
      return await f({ relay, info, metric });
    } finally {
      relay.kill('SIGTERM');
      await exited;
    }
  };
  const result = { date: new Date().toISOString(), cpuModel: cpus()[0]?.model ?? 'unknown', cores: cpus().length, relayPinned: relayCpu !== null, node: process.version };
  try {
    if (only !== 'wt') {
      result.ws = await withRelay(false, async ({ relay, info, metric }) => {
        const load = child('load');
        const ask = (cmd, a = {}) => new Promise((r) => (load.once('message', r), load.send({ cmd, args: a })));
        let nextId = 1;
        const openWs = (n) => {
          const idBase = nextId;
          const urls = Array.from({ length: n }, (_, k) => `${info.webSocketUrl}?token=${mintToken(secret, { sub: `s${idBase + k}`, backend, ttlSeconds: 900 })}`);
          nextId += n;
          return ask('open', { urls, idBase });
        };
        const out = await measureWs({ relay, metric, ask, openWs, quick, log });
        // Wait for the children: orphans would outlive this process.
        const loadExited = new Promise((r) => load.once('exit', r));
        load.disconnect();
        await loadExited;
        return out;
      });
    }
    if (wt) {
      result.wt = await withRelay(true, ({ relay, info }) =>
        info.webTransportUrl ? measureWt({ relay, info, mintToken, secret, backend, wtClient, clientCpu, quick, log }) : null,
      );
      if (!result.wt) result.wtMissing = 'the WebTransport addon did not load';
    } else if (only !== 'ws') result.wtMissing = 'wt_client is not built (node relay/native/build.mjs --client)';
  } finally {
    const echoExited = echo.exitCode !== null || echo.signalCode !== null ? Promise.resolve() : new Promise((r) => echo.once('exit', r));
    echo.kill();
    await echoExited;
  }
  printSizing(result);
  // Its own processes, pinned as here; after the sizing ones have stopped.
  if (latency) result.latency = await runLatency();
  return result;
}

/** The figures as markdown, with how they were measured. */
export function printSizing(r) {
  const KIB_PER_GIB = 2 ** 20;
  const f = (n) => (Number.isFinite(n) ? Math.round(n).toLocaleString('en') : '—');
  const pc = (x) => `${Math.round(x * 100)} %`;
  /** The largest step that kept up (else the first), and the sessions its per-session CPU gives at 80 % of a core. */
  const best = (game) => {
    const s = game.filter(keptUp).at(-1) ?? game[0];
    // Sessions as carried (datagrams/s over a session's 2 × 30), in case the clients fell short of the rate.
    return { ...s, at80: (0.8 * s.datagramsPerSec) / (2 * HZ) / s.relayCore };
  };
  const col = (t, g) => (t ? g(t) : '—');
  const ws = r.ws;
  const wt = r.wt;
  const wsBest = ws && best(ws.game);
  const wtBest = wt && best(wt.game);
  const bulk = (t, size) => t?.bulk.find((b) => b.size === size);
  console.log(`\n## Sizing a relay: one relay process on one core (${r.cpuModel}, ${r.cores} cores, relay pinned: ${r.relayPinned}, Node ${r.node}, ${r.date.slice(0, 10)})\n`);
  console.log('| per relay core | WebSocket | WebTransport |');
  console.log('|---|---|---|');
  console.log(
    `| memory per session (RSS growth) | ${col(ws, () => `${ws.memory.rssPerSessionKiB} KiB idle (JS heap ${ws.memory.heapPerSessionKiB} KiB): ~${f(KIB_PER_GIB / ws.memory.rssPerSessionKiB)} sessions per GiB`)} | ${col(wt, () => `${wtBest.rssPerSessionKiB} KiB at 30 Hz: ~${f(KIB_PER_GIB / wtBest.rssPerSessionKiB)} sessions per GiB`)} |`,
  );
  const game = (b) => `${f(b.datagramsPerSec / b.relayCore)} (${b.relayCpuUsPerDatagram} µs each)`;
  console.log(`| datagrams/s, 150 B, 30 Hz each way per session | ${col(ws, () => game(wsBest))} | ${col(wt, () => game(wtBest))} |`);
  console.log(`| datagrams/s, 150 B, as fast as they come | ${col(ws, () => f(bulk(ws, SIZE).datagramsPerCoreSecond))} | ${col(wt, () => f(bulk(wt, SIZE).datagramsPerCoreSecond))} |`);
  const mbit = (b) => `${b.mbitPerCoreSecond} (measured ${b.mbitPerSec} with the relay ${pc(b.relayCore)} busy)`;
  console.log(`| Mbit/s, 1,100 B datagrams | ${col(ws, () => mbit(bulk(ws, BULK_SIZE)))} | ${col(wt, () => mbit(bulk(wt, BULK_SIZE)))} |`);
  const sessions = (b) => `${f(b.sessions)} kept up (relay ${pc(b.relayCore)} busy, RTT p99 ${b.rttP99Ms} ms); ~${f(b.at80)} at 80 %`;
  console.log(`| sessions at 30 Hz up + 30 Hz down, 150 B | ${col(ws, () => sessions(wsBest))} | ${col(wt, () => sessions(wtBest))} |`);
  console.log(
    '\nHow: the relay runs alone on core 1 (taskset); the clients and a UDP echo standing in for the game server share core 0 (as root all at nice -10).' +
      ' Rates are datagrams forwarded, both directions, per second of relay CPU (/proc/<pid>/stat), so they hold on a shared machine.' +
      ` WebSocket: \`ws\` clients in one process; memory over ${f(ws?.memory.sessions)} idle sessions. WebTransport: one Rust wt_client (quinn) process per session.` +
      ' "Kept up": nothing lost, no relay drops, relay ≤ 80 % busy, median RTT ≤ 10 ms; "at 80 %" scales the per-session CPU of the largest such step.' +
      ' Bulk: WebSocket 32 sessions × 16 datagrams in flight; WebTransport 4 sessions × 5,000/s offered.',
  );
  for (const [name, t] of [['WebSocket', ws], ['WebTransport', wt]]) {
    if (!t) continue;
    console.log(`\n${name} steps (every session 30 Hz each way, 150 B):\n`);
    console.log('| sessions | relay busy | datagrams/s | relay CPU per datagram | lost | RTT p50 / p99 | others on the relay\'s core | clients\' core busy |');
    console.log('|---|---|---|---|---|---|---|---|');
    for (const s of t.game)
      console.log(`| ${f(s.sessions)} | ${pc(s.relayCore)} | ${f(s.datagramsPerSec)} | ${s.relayCpuUsPerDatagram} µs | ${s.lost} | ${s.rttP50Ms} / ${s.rttP99Ms} ms | ${pc(s.othersOnCore)} | ${pc(s.clientCoreBusy)} |`);
  }
  for (const [name, t] of [['WebSocket', ws], ['WebTransport', wt]]) {
    const last = t?.game.at(-1);
    if (last && !keptUp(last) && last.clientCoreBusy >= 0.9)
      console.log(`\n${name}: at ${f(last.sessions)} sessions the clients' core was ${pc(last.clientCoreBusy)} busy: the clients, not the relay, set the limit there, so the "~" figure (scaled from the last step that kept up) is the estimate.`);
  }
  const busy = Math.max(0, ...[ws?.game, ws?.bulk, wt?.game, wt?.bulk].flat().filter(Boolean).map((s) => s.othersOnCore ?? 0));
  if (busy > 0.2)
    console.log(`\n**Warning:** other processes kept the relay's core up to ${pc(busy)} busy during a step (after three tries): a relay that is descheduled batches more, so its figures may be optimistic. Re-run on a quiet machine.`);
  if (r.wtMissing) console.log(`\nWebTransport not measured: ${r.wtMissing}.`);
}

if (role === 'main' && import.meta.url === `file://${process.argv[1]}`) {
  const r = await runSizing(argv);
  if (argv.includes('--json')) writeFileSync(argv[argv.indexOf('--json') + 1], JSON.stringify(r, null, 2));
  process.exit(0);
}
