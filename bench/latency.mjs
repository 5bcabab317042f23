// S6's latency half (bench/SCENARIOS.md; `npm run bench -- --sizing`, or alone
// `npm run bench -- --sizing --only latency`): the one-way latency the relay
// adds at half load, over WebTransport (the native data path and the JS
// path) and WebSocket, beside a plain `ws` echo server and the UDP floor, in
// one run. Loopback only.
//
// Every path is driven by the same Rust client (relay/native/examples/
// latency_probe.rs: WebTransport, a minimal WebSocket, or plain UDP) and,
// except the `ws` echo, answered by the same stamping UDP echo standing in
// for the game server. Each DATA packet carries the client's send time; the
// backend writes when it received and echoed it; the client reads the echo:
// up = backend receive − client send, down = client receive − backend send,
// all on CLOCK_MONOTONIC, which every process on the host shares (Node's
// process.hrtime.bigint() reads it too, so the `ws` echo stamps alike).
//
// Per path: a ramp of paced rates (16 sessions, 1.5 s a step) finds the
// highest rate it keeps up with (≤ 1 % lost, median round trip ≤ 5 ms); then
// 8 s at half of it; then, right after, the UDP floor (the client straight to
// the backend) at that same rate, so that "added" (path minus floor, per
// percentile and direction) leaves out what the client, the backend and the
// kernel cost anyway. The relay (and the `ws` echo server) runs on core 1, the
// client and the backend on core 0 (taskset), and as root every process here
// at nice -10, as in sizing.mjs: on a shared machine a process that waits for
// a core adds its wait to every figure (the load average is printed).
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { GOALS, added, costTable, latencyGoalMet, latencyTable, pc, saturation } from './latency-stats.mjs';
import { jsonLine } from './json-line.mjs';
import { cpuSeconds } from './proc-cpu.mjs';
import { startRelay } from './ricochet-packets.mjs';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const NATIVE = join(ROOT, 'relay', 'native');
export const PROBE = join(NATIVE, 'target', 'release', 'examples', 'latency_probe');
const SESSIONS = 16;
const RAMP = [2000, 4000, 8000, 12000, 16000, 24000, 32000, 48000, 64000, 96000, 128000, 192000, 256000];
const RAMP_SECONDS = 1.5;
const RAMP_P50_US = 5000;
const LOAD_SECONDS = 8;

/** Builds the probe (cargo, relay/native); throws when that fails. */
export function buildProbe() {
  const r = spawnSync('cargo', ['build', '--release', '--example', 'latency_probe'], { cwd: NATIVE, stdio: ['ignore', 'inherit', 'inherit'] });
  if (r.status !== 0) throw new Error('building relay/native/examples/latency_probe failed');
}

const twoCores = cpus().length >= 2;
const ROOT_USER = process.getuid?.() === 0;
/** `cmd args` pinned to `cpu` when the machine has two cores, at nice -10 as root. */
function pinned(cpu, cmd, args) {
  const [c, a] = twoCores ? ['taskset', ['-c', String(cpu), cmd, ...args]] : [cmd, args];
  return ROOT_USER ? ['nice', ['-n', '-10', c, ...a]] : [c, a];
}
/** As root, every thread of `pid` at nice -10 (sizing.mjs does the same). */
function boost(pid) {
  if (!ROOT_USER) return;
  for (const tid of readdirSync(`/proc/${pid}/task`)) spawnSync('renice', ['-n', '-10', '-p', tid], { stdio: 'ignore' });
}


/**
 * Runs the probe: `rates` one step each; resolves with its summary, each step
 * given the CPU busy share of `serverPid` over the step and its datagrams
 * (both directions) per server CPU-second.
 */
function probe({ transport, urls, hash, rates, seconds, warmup, stopP50Us, serverPid, backendPid, connId }) {
  const args = ['--transport', transport, '--urls', urls.join(','), '--rates', rates.join(','), '--seconds', String(seconds), '--warmup', String(warmup), '--conn-id', String(connId)];
  if (hash) args.push('--hash', hash);
  if (stopP50Us) args.push('--stop-p50-ms', String(stopP50Us / 1000));
  const [cmd, a] = pinned(0, PROBE, args);
  const p = spawn(cmd, a, { stdio: ['ignore', 'pipe', 'inherit'] });
  const cpu = [];
  let mark = null;
  // The client and the backend share core 0: busy near 100 %, they queue
  // datagrams themselves, and "added" would blame the relay for it.
  const clientCpu = () => cpuSeconds(p.pid) + (backendPid && backendPid !== serverPid ? cpuSeconds(backendPid) : 0);
  return new Promise((resolve, reject) => {
    let summary = null;
    createInterface({ input: p.stdout }).on('line', (l) => {
      let m;
      try {
        m = JSON.parse(l);
      } catch {
        return;
      }
      if (m.event === 'step' && m.phase === 'start') mark = { cpu: cpuSeconds(serverPid), client: clientCpu(), t: performance.now() };
      else if (m.event === 'step' && m.phase === 'end') cpu[m.step] = { cpu: cpuSeconds(serverPid) - mark.cpu, client: clientCpu() - mark.client, wall: (performance.now() - mark.t) / 1000 };
      else if (m.mode === 'latency' || m.error) summary = m;
    });
    // 'close': stdout drained (its last line can come after 'exit').
    p.once('close', (code) => {
      if (code !== 0 || !summary || summary.error) return reject(new Error(`latency_probe (${transport}) exited ${code}: ${summary?.error ?? 'no summary'}`));
      summary.steps.forEach((s, i) => {
        const c = cpu[i];
        s.serverBusy = c ? c.cpu / c.wall : NaN;
        s.clientBusy = c ? c.client / c.wall : NaN;
        s.perCpuSecond = c && c.cpu > 0 ? (2 * s.received) / c.cpu : NaN;
      });
      resolve(summary);
    });
  });
}

/** Runs S6's latency measurement; prints its table (markdown) and resolves with the figures. */
export async function runLatency({ log = (m) => console.error(`[s6-latency] ${m}`) } = {}) {
  buildProbe();
  const secret = randomBytes(32).toString('base64url');
  const { mintToken } = await import('../relay/dist/index.js');
  const started = { date: new Date().toISOString(), loadBefore: loadavg(), cpuModel: cpus()[0]?.model ?? 'unknown', cores: cpus().length, node: process.version, boosted: ROOT_USER };
  const children = [];
  const spawnPinned = (cpu, cmd, args, opts) => {
    const [c, a] = pinned(cpu, cmd, args);
    const p = spawn(c, a, opts);
    children.push(p);
    return p;
  };
  try {
    // The game server: a stamping UDP echo, beside the client on core 0.
    const echo = spawnPinned(0, PROBE, ['--mode', 'stamp-echo', '--listen', '127.0.0.1:0'], { stdio: ['pipe', 'pipe', 'inherit'] });
    const { port } = await jsonLine(echo, (m) => m.event === 'listening');
    const backend = `127.0.0.1:${port}`;
    // The plain `ws` echo (S6's baseline), stamping as the backend does.
    const wsEcho = spawnPinned(
      1,
      process.execPath,
      [
        '--input-type=module',
        '-e',
        `import { WebSocketServer } from 'ws';
         const s = new WebSocketServer({ host: '127.0.0.1', port: 0, perMessageDeflate: false });
         s.on('listening', () => console.log(JSON.stringify({ event: 'listening', port: s.address().port })));
         s.on('connection', (ws) => ws.on('message', (d) => {
           const t = process.hrtime.bigint();
           if (d.length >= 33 && d[0] === 4) (d.writeBigUInt64LE(t, 17), d.writeBigUInt64LE(process.hrtime.bigint(), 25));
           ws.send(d, { binary: true });
         }));`,
      ],
      { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] },
    );
    const wsEchoPort = (await jsonLine(wsEcho, (m) => m.event === 'listening')).port;
    const relayArgs = (dataPath) => ['--allow-backends', backend, '--http-port', '0', '--wt-port=0', '--wt-data-path', dataPath, '--max-datagrams-per-second', '10000000', '--max-bytes-per-second', '1000000000', '--idle-timeout-ms', '600000'];
    const native = await startRelay(relayArgs('native'), { secret, cpu: twoCores ? 1 : null });
    children.push(native.proc);
    const js = await startRelay(relayArgs('js'), { secret, cpu: twoCores ? 1 : null });
    children.push(js.proc);
    for (const p of [native.proc, js.proc]) boost(p.pid);
    if (!native.info.webTransportUrl) throw new Error('the relay has no WebTransport (the addon did not load)');

    let connId = 10_000;
    let sub = 0;
    const tokenUrls = (base) => Array.from({ length: SESSIONS }, () => `${base}?token=${mintToken(secret, { sub: `lat${sub++}`, backend, ttlSeconds: 900 })}`);
    /** The paths, in print order; `urls()` gives fresh sessions each run. */
    const paths = [
      { key: 'wtNative', name: 'relay, WebTransport, native data path', goal: true, transport: 'wt', urls: () => tokenUrls(native.info.webTransportUrl), hash: native.info.certHashes[0], pid: native.proc.pid },
      { key: 'wtJs', name: 'relay, WebTransport, JS path (`--wt-data-path js`)', transport: 'wt', urls: () => tokenUrls(js.info.webTransportUrl), hash: js.info.certHashes[0], pid: js.proc.pid },
      { key: 'ws', name: 'relay, WebSocket', transport: 'ws', urls: () => tokenUrls(native.info.webSocketUrl), pid: native.proc.pid },
      { key: 'wsEcho', name: 'plain `ws` echo server (no relay, no UDP)', transport: 'ws', urls: () => Array(SESSIONS).fill(`ws://127.0.0.1:${wsEchoPort}/`), pid: wsEcho.pid },
      { key: 'floor', name: 'UDP floor: client → backend directly', transport: 'udp', urls: () => Array(SESSIONS).fill(`udp://${backend}`), pid: echo.pid },
    ];
    const run = (p, rates, seconds, warmup, stopP50Us) => {
      connId += 100;
      return probe({ transport: p.transport, urls: p.urls(), hash: p.hash, rates, seconds, warmup, stopP50Us, serverPid: p.pid, backendPid: echo.pid, connId });
    };
    const floor = paths.at(-1);
    const out = [];
    for (const p of paths) {
      const ramp = await run(p, RAMP, RAMP_SECONDS, 0.3, RAMP_P50_US);
      const sat = saturation(ramp.steps, RAMP_SECONDS, RAMP_P50_US);
      const top = ramp.steps.find((s) => s.rate === sat.rate);
      log(`${p.key}: ramp ${ramp.steps.map((s) => `${s.rate}→${s.received}/${s.sent} p50 ${s.rttUs.p50}µs busy ${(s.serverBusy * 100).toFixed(0)}%`).join('; ')}`);
      if (!sat.rate) throw new Error(`${p.key}: not even the ramp's first step (${RAMP[0]}/s) kept up`);
      const rate = Math.round(sat.rate / 2);
      const load = (await run(p, [rate], LOAD_SECONDS, 1)).steps[0];
      const floorLoad = p === floor ? null : (await run(floor, [rate], LOAD_SECONDS, 1)).steps[0];
      const row = {
        key: p.key,
        name: p.name,
        goal: !!p.goal,
        sat,
        ramp: ramp.steps.map((s) => ({ rate: s.rate, sent: s.sent, received: s.received, rttP50Us: s.rttUs.p50, serverBusy: s.serverBusy, perCpuSecond: s.perCpuSecond })),
        topPerCpuSecond: top?.perCpuSecond,
        topBusy: top?.serverBusy,
        load,
        floor: floorLoad,
        serverBusy: load.serverBusy,
      };
      if (floorLoad) row.added = added(load, floorLoad);
      if (p.goal) {
        // The goal path again at a quarter of its saturation: with the client's
        // core far from full, what the relay itself adds.
        const quarter = (await run(p, [Math.round(sat.rate / 4)], LOAD_SECONDS, 1)).steps[0];
        const quarterFloor = (await run(floor, [quarter.rate], LOAD_SECONDS, 1)).steps[0];
        row.quarter = { load: quarter, floor: quarterFloor, added: added(quarter, quarterFloor) };
      }
      log(`${p.key}: at ${rate}/s up p99 ${load.upUs.p99} µs, down p99 ${load.downUs.p99} µs; floor up p99 ${floorLoad?.upUs.p99} µs, down p99 ${floorLoad?.downUs.p99} µs`);
      out.push(row);
    }
    const result = { ...started, loadAfter: loadavg(), sessions: SESSIONS, paths: out };
    printLatency(result);
    return result;
  } finally {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGTERM');
  }
}

/** Prints the table and how it was measured. */
export function printLatency(r) {
  const la = (l) => l.map((x) => x.toFixed(2)).join(', ');
  console.log(`\n## S6: the relay's added one-way latency at half load, beside a plain \`ws\` echo and the UDP floor (${r.cpuModel}, ${r.cores} cores, Node ${r.node}, ${r.date.slice(0, 16)}Z, load average ${la(r.loadBefore)} before, ${la(r.loadAfter)} after)\n`);
  for (const l of latencyTable(r)) console.log(l);
  const wt = r.paths.find((p) => p.key === 'wtNative');
  console.log(`\nForwarding cost in the same run (a server below saturation pays more per datagram in wake-ups: \`--sizing\`'s bulk row is the saturated figure):\n`);
  for (const l of costTable(r)) console.log(l);
  if (wt?.added) console.log(`\nGoal, relay's added one-way latency p99 ≤ ${GOALS.addedP99Us / 1000} ms at half load over WebTransport (native data path): ${latencyGoalMet(wt.added) ? 'met' : 'not met'} (up ${wt.added.up.p99} µs, down ${wt.added.down.p99} µs; client + backend core ${pc(wt.load.clientBusy)} busy).`);
  if (wt?.quarter) {
    const q = wt.quarter;
    console.log(`At a quarter of its saturation (${q.load.rate.toLocaleString('en')}/s each way, relay ${pc(q.load.serverBusy)}, client + backend core ${pc(q.load.clientBusy)} busy): added up p50 / p99 / max ${q.added.up.p50} / ${q.added.up.p99} / ${q.added.up.max} µs, down ${q.added.down.p50} / ${q.added.down.p99} / ${q.added.down.max} µs (${latencyGoalMet(q.added) ? 'within' : 'over'} 1 ms at p99).`);
  }
  console.log(
    `\nHow: one Rust client (relay/native/examples/latency_probe.rs), ${r.sessions} sessions, 100-byte Ricochet DATA packets paced evenly from one thread, each echoed by a stamping UDP backend (the game server) or by the \`ws\` echo itself; one-way times from CLOCK_MONOTONIC stamps (client send, backend receive, backend send, client receive), shared by all processes on the host.` +
      ` Saturation: a ramp of ${RAMP_SECONDS} s steps, the highest rate with ≤ 1 % lost and median round trip ≤ ${RAMP_P50_US / 1000} ms ("not N": the first step that failed); the load is half of it for ${LOAD_SECONDS} s (first second left out).` +
      ' The UDP floor (the client straight to the backend) is measured right after each path at the same rate; "added" is the path minus that floor, percentile by percentile, per direction.' +
      ` Relay and \`ws\` echo on core 1, client and backend on core 0 (taskset)${r.boosted ? ', all at nice -10' : ''}; "server busy" is that server's CPU over the load run; datagrams per server CPU-second count both directions, at the ramp's highest step that kept up.`,
  );
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const r = await runLatency();
  if (process.argv.includes('--json')) writeFileSync(process.argv[process.argv.indexOf('--json') + 1], JSON.stringify(r, null, 2));
  process.exit(0);
}
