// `npm run bench -- --hostile`: `ricochet-relay --production` under each
// attack class in turn (bench/hostile-attack.mjs, its own process), beside a
// legitimate SDK session that sends a timestamped reliable message every
// 16 ms and times the echo. Per class it prints the attacker's rate, the
// relay's peak RSS over its quiet baseline and its CPU, and the legitimate
// session's delivery and RTT p99 in the same phase; for the stalled-handshake
// class also how many legitimate WebTransport connects succeeded.
// Loopback only; every phase is bounded in time.
//
//   node bench/hostile.mjs [--seconds N] [--only metrics,stall,…]   (default 10 s per phase, every class)
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createSocket } from 'node:dgram';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { WebSocket } from 'ws';
import { Connection, Server, WebSocketTransport, serveUdp } from '@ricochet/sdk';
import { mintToken } from '../relay/dist/index.js';
import { cpuSeconds } from './proc-cpu.mjs';
import { lastJsonLine } from './ricochet-packets.mjs';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const argv = process.argv.slice(2);
const SECONDS = Number(argv[argv.indexOf('--seconds') + 1] || 0) || 10;
const ALL_ATTACKS = ['metrics', 'garbage', 'slowloris', 'frames', 'guess', 'flood', 'stall'];
// --only a,b runs those classes (and the baseline).
const ATTACKS = argv.includes('--only') ? argv[argv.indexOf('--only') + 1].split(',') : ALL_ATTACKS;
const WT_CLIENT = join(ROOT, 'relay', 'native', 'target', 'release', 'examples', 'wt_client');
const SECRET = randomBytes(32).toString('base64url');
const GOALS = { rssMiB: 100, rttP99Ms: 50, wtConnects: 0.95 };

function certificate() {
  const dir = mkdtempSync(join(tmpdir(), 'ricochet-hostile-'));
  const certFile = join(dir, 'relay.crt');
  const keyFile = join(dir, 'relay.key');
  const r = spawnSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '10', '-subj', '/CN=localhost', '-addext', 'subjectAltName=IP:127.0.0.1', '-keyout', keyFile, '-out', certFile], { stdio: 'ignore' });
  if (r.status !== 0) throw new Error('openssl could not make a certificate');
  return { certFile, keyFile };
}

const rssMiB = (pid) => Number(readFileSync(`/proc/${pid}/status`, 'utf8').match(/VmRSS:\s+(\d+)/)[1]) / 1024;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const p99 = (xs) => (xs.length ? [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * 0.99))] : NaN);

export async function runHostile() {
  for (const step of [['relay', 'native', 'build.mjs'], ['relay', 'scripts', 'build.mjs']]) {
    const b = spawnSync(process.execPath, [join(ROOT, ...step), ...(step[1] === 'native' ? ['--client'] : [])], { stdio: 'inherit' });
    if (b.status !== 0) throw new Error(`${step.join('/')} failed`);
  }
  const backendSock = createSocket({ type: 'udp4', recvBufferSize: 1 << 20 });
  await new Promise((r) => backendSock.bind(0, '127.0.0.1', r));
  const backend = `127.0.0.1:${backendSock.address().port}`;
  const game = new Server();
  serveUdp(game, backendSock);
  game.on('message', ({ id, channel, data }) => game.send(id, channel, data));
  // The WebTransport probes (wt_client) frame raw datagrams, so they need a plain echo behind the relay.
  const echoSock = createSocket('udp4');
  echoSock.on('message', (m, r) => echoSock.send(m, r.port, r.address));
  await new Promise((r) => echoSock.bind(0, '127.0.0.1', r));
  const echoBackend = `127.0.0.1:${echoSock.address().port}`;

  const cert = certificate();
  const relay = spawn(
    process.execPath,
    [join(ROOT, 'relay', 'dist', 'cli.js'), '--production', '--http-port', '0', '--wt-port', '0', '--metrics-port', '0', '--allow-backends', `${backend},${echoBackend}`, '--cert-file', cert.certFile, '--key-file', cert.keyFile],
    { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, RICOCHET_LOG_LEVEL: 'error', RICOCHET_RELAY_TOKEN_SECRET: SECRET } },
  );
  const info = await new Promise((resolve, reject) => {
    relay.once('exit', (code) => reject(new Error(`relay exited ${code}`)));
    createInterface({ input: relay.stdout }).on('line', (l) => l.includes('"listening"') && resolve(JSON.parse(l)));
  });

  // The legitimate session: a reliable message every 16 ms carrying its sequence number and send time.
  const transport = await WebSocketTransport.connect(`${info.webSocketUrl}?token=${mintToken(SECRET, { sub: 'player', backend, ttlSeconds: 600 })}`, { WebSocket });
  const conn = new Connection(transport);
  await conn.ready;
  // A phase counts the messages sent while its attack ran, and their echoes whenever they come.
  let phase = { first: 0, last: Infinity, got: 0, rtts: [] };
  conn.on('message', ({ data }) => {
    const v = new DataView(data.buffer, data.byteOffset, data.byteLength);
    const n = v.getUint32(0, true);
    if (n < phase.first || n >= phase.last) return;
    phase.got++;
    phase.rtts.push(performance.now() - v.getFloat64(4, true));
  });
  let current = 'none (baseline)';
  let closed = null;
  conn.on('close', (info) => (closed = { during: current, code: info?.code, reason: info?.reason }));
  let seq = 0;
  const pump = setInterval(() => {
    if (closed) return;
    const b = new Uint8Array(64);
    const v = new DataView(b.buffer);
    v.setUint32(0, seq++, true);
    v.setFloat64(4, performance.now(), true);
    conn.send(0, b);
  }, 16);

  /** Legitimate WebTransport connects (from 127.0.0.1) that completed an echo, of `tries` (never blocking this event loop). */
  async function wtConnects(tries) {
    let ok = 0;
    for (let i = 0; i < tries; i++) {
      const token = mintToken(SECRET, { sub: `wt${i}`, backend: echoBackend, ttlSeconds: 60 });
      const args = ['--url', `${info.webTransportUrl}?token=${token}`, '--hash', info.certHashes[0], '--conn-id', String(70_000 + i), '--count', '5', '--rate', '100', '--wait-ms', '1500'];
      if ((await lastJsonLine(WT_CLIENT, args, { timeout: 15_000 }))?.received > 0) ok++;
    }
    return ok;
  }

  /** One phase: run `attack` (or nothing) for SECONDS while sampling the relay. */
  async function measure(attack) {
    await sleep(1000); // let the previous phase's backlog clear
    phase = { first: seq, last: Infinity, got: 0, rtts: [] };
    current = attack ?? 'none (baseline)';
    console.error(`[hostile] ${current} for ${SECONDS} s`);
    const rss0 = rssMiB(relay.pid);
    let peak = rss0;
    const sampler = setInterval(() => (peak = Math.max(peak, rssMiB(relay.pid))), 100);
    const cpu0 = cpuSeconds(relay.pid);
    const t0 = performance.now();
    const attackInfo = JSON.stringify({ ...info, secret: SECRET, backend });
    const attacker = attack
      ? // The attacker stands in for machines elsewhere on the internet: at idle
        // priority it gets only the CPU that the relay and the player leave.
        lastJsonLine('chrt', ['--idle', '0', process.execPath, join(ROOT, 'bench', 'hostile-attack.mjs'), attack, String(SECONDS), attackInfo]).then((r) => r ?? { rate: NaN, unit: 'attacker failed' })
      : sleep(SECONDS * 1000).then(() => null);
    // Under the handshake flood, legitimate WebTransport clients try to connect meanwhile.
    const wt = attack === 'stall' ? sleep(2000).then(() => wtConnects(20)) : null;
    const a = await attacker;
    const wtOk = await wt;
    phase.last = seq;
    const wall = (performance.now() - t0) / 1000;
    const cpu = (cpuSeconds(relay.pid) - cpu0) / wall;
    clearInterval(sampler);
    await sleep(1000); // echoes in flight
    const alive = relay.exitCode === null && relay.signalCode === null;
    const r = { attack: current, a, rss0, peakOver: peak - rss0, cpu, sent: phase.last - phase.first, got: phase.got, p99: p99(phase.rtts), wtOk, alive };
    console.error(`[hostile] ${JSON.stringify({ ...r, rtts: undefined })}`);
    return r;
  }

  const rows = [await measure(null)];
  for (const attack of ATTACKS) {
    rows.push(await measure(attack));
    if (relay.exitCode !== null) break;
  }
  clearInterval(pump);
  const closedByAttack = closed;
  closed ??= { during: 'the end of the run' };
  if (closedByAttack) console.log(`\nThe legitimate session was closed during "${closedByAttack.during}": ${closedByAttack.code} ${closedByAttack.reason ?? ''}`);
  else conn.close();
  relay.kill('SIGTERM');
  game.shutdown();
  backendSock.close();
  echoSock.close();

  console.log(`\n## Hostile — \`ricochet-relay --production\` under attack, ${SECONDS} s per class, a legitimate session beside each\n`);
  console.log('| attack | attacker rate | relay RSS over baseline (peak) | relay CPU | legitimate: delivered / sent | legitimate RTT p99 | relay alive | goal |');
  console.log('|---|---|---|---|---|---|---|---|');
  let failed = 0;
  for (const r of rows) {
    const goals = [`RSS ≤ +${GOALS.rssMiB} MiB: ${r.peakOver <= GOALS.rssMiB ? 'met' : 'not met'}`, `nothing lost: ${r.got >= r.sent ? 'met' : 'not met'}`];
    if (r.attack === 'metrics') goals.push(`RTT p99 ≤ ${GOALS.rttP99Ms} ms: ${r.p99 <= GOALS.rttP99Ms ? 'met' : 'not met'}`);
    if (r.wtOk !== null) goals.push(`WebTransport connects ${r.wtOk}/20 ≥ 95 %: ${r.wtOk / 20 >= GOALS.wtConnects ? 'met' : 'not met'}`);
    if (closedByAttack?.during === r.attack) goals.push('**legitimate session closed**');
    if (goals.some((g) => g.endsWith('not met') || g.includes('closed')) || !r.alive) failed++;
    const rate = r.a ? `${(r.a.rate ?? NaN).toLocaleString('en')} ${r.a.unit}` : '—';
    console.log(`| ${r.attack} | ${rate} | +${r.peakOver.toFixed(1)} MiB (of ${r.rss0.toFixed(0)}) | ${(r.cpu * 100).toFixed(0)} % of a core | ${r.got} / ${r.sent} | ${r.p99.toFixed(1)} ms | ${r.alive ? 'yes' : '**no**'} | ${goals.join('; ')} |`);
  }
  return { rows, failed };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { failed } = await runHostile();
  process.exit(failed ? 1 : 0);
}
