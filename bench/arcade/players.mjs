#!/usr/bin/env node
// `npm run bench:players` (= `npm run bench -- --players`): S5 and S6 from
// bench/SCENARIOS.md, in one run, on the arcade's game server and bots
// (demos/arcade). Reference: bench/reference/players.md.
//
// S5: the arcade server (four shards = threads per core) with N headless bots
// (Rust, one thread per core at idle priority, UDP, one socket each, 60
// inputs/s with redundancy; rooms of 20) at rising
// N. Reports tick time p50/p99 (µs, worst 1-second window of the steady
// state), ticks per second per shard, snapshots each bot received per
// second, and memory per player. A step is "held at 60 Hz" when every bot
// is connected, each shard ticks ≥ 59 times a second, every bot gets ≥ 95 %
// of its snapshots, sends ≥ 95 % of its 60 inputs a second (bots starved
// of CPU would understate the load), and tick p99 stays within the 16.7 ms
// budget. Bots and server share this machine's cores: the figures include
// that, and the bots' own CPU is reported beside the server's, as is the CPU
// time inside the ticks (a tick p99 far above its CPU p99 waited for a core).
//
// S6: relay datagrams forwarded per relay CPU-second against a plain `ws`
// echo server's messages per CPU-second, same clients, same run
// (relay-vs-ws.mjs).
//
// ARCADE_BENCH_PLAYERS=250,1000,2000 picks the steps; ARCADE_BENCH_SECONDS the steady time per step;
// ARCADE_BENCH_SERVER_ARGS adds server flags (e.g. '--ack-threshold 2 --ack-delay-ms 20', the ACK settings before 2026-11-24);
// ARCADE_BENCH_SHARDS, ARCADE_BENCH_BOT_THREADS and ARCADE_BENCH_BOT_PRIORITY (idle | normal) change the
// set-up (before 2026-11-25: 2 shards, 1 bot thread, normal); ARCADE_BENCH_S6=0 skips S6.
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { join } from 'node:path';
import { build } from '../../scripts/build.mjs';
import { ARCADE, buildServer } from '../../demos/arcade/scripts/build.mjs';
import { startGameServer } from '../../demos/arcade/scripts/stack.mjs';
import { cpuSeconds } from '../proc-cpu.mjs';

const ROOT = join(ARCADE, '..', '..');
const STEPS = (process.env.ARCADE_BENCH_PLAYERS ?? '250,500,1000,2000,3000').split(',').map(Number);
const STEADY_S = Number(process.env.ARCADE_BENCH_SECONDS ?? 8);
// Four shards a core: shard ticks are staggered across the period, so each
// is a quarter as long as one shard a core would tick and the cores take
// turns (2 a core: 2,000 players at tick p99 4.6–5.8 ms; 4 a core: 1.6–3.3).
const SHARDS = Number(process.env.ARCADE_BENCH_SHARDS ?? 4 * cpus().length);
const SNAPSHOT_HZ = 30;
const PER_ROOM = 20;
const BOT_THREADS = Number(process.env.ARCADE_BENCH_BOT_THREADS ?? cpus().length);
// The bots stand in for the players' own machines: at idle priority they get
// only the CPU the server leaves, and "held" still demands they got their
// full load out. `normal` shows what competing with them costs the ticks.
const BOT_PRIORITY = process.env.ARCADE_BENCH_BOT_PRIORITY ?? 'idle';
const BOTS_BIN = join(ARCADE, 'server', 'target', 'release', 'arcade-bots');
const FLOOR_BIN = join(ARCADE, 'server', 'target', 'release', 'udp-floor');

/** Runs the bots; `onCpu(cpuSeconds)` samples their CPU while they run. */
function runBots(ports, bots, seconds, onCpu) {
  return new Promise((resolve, reject) => {
    const args = ['--ports', ports.join(','), '--bots', String(bots), '--per-room', String(PER_ROOM), '--seconds', String(seconds)];
    args.push('--ramp-per-tick', '20', '--threads', String(BOT_THREADS), '--priority', BOT_PRIORITY);
    const p = spawn(BOTS_BIN, args, {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const sampler = setInterval(() => {
      try {
        onCpu(cpuSeconds(p.pid));
      } catch {} // exited between two samples
    }, 250);
    let out = '';
    p.stdout.on('data', (c) => (out += c));
    // 'close': stdout drained (its last line can come after 'exit').
    p.on('close', (code) => {
      clearInterval(sampler);
      code === 0 ? resolve(JSON.parse(out.trim().split('\n').pop())) : reject(new Error(`arcade-bots exited ${code}`));
    });
  });
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;

async function step(players) {
  const lines = [];
  let server;
  // Server CPU over the steady state: from the 2nd full second with every bot seated to the last.
  const cpu = [];
  server = await startGameServer({
    extraArgs: (process.env.ARCADE_BENCH_SERVER_ARGS ?? '').split(' ').filter(Boolean),
    shards: SHARDS,
    snapshotHz: SNAPSHOT_HZ,
    statsMs: 1000,
    onLine: (m) => {
      if (m.event !== 'stats') return;
      lines.push(m);
      if (m.players === players && server) cpu.push({ at: performance.now(), s: cpuSeconds(server.pid) });
    },
  });
  await new Promise((r) => setTimeout(r, 1100));
  const rss0 = lines.at(-1)?.rssKiB ?? 0;
  const rampS = players / (20 * 60) + 1;
  // Bots' CPU over the same steady window as the server's (sampled while they run).
  const botCpu = [];
  const bots = await runBots(server.ports, players, rampS + STEADY_S, (s) => {
    if (cpu.length >= 2) botCpu.push({ at: performance.now(), s });
  });
  await server.stop();
  // Steady state: every bot seated, the first full second after the ramp dropped.
  const steady = lines.filter((l) => l.players === players).slice(1);
  if (steady.length === 0) return { players, bots, held: false, note: 'never had every bot seated' };
  const ticksPerShard = median(steady.map((l) => l.ticks)) / SHARDS;
  const [c0, c1] = [cpu[1] ?? cpu[0], cpu.at(-1)];
  const serverCores = c0 && c1 && c1.at > c0.at ? (c1.s - c0.s) / ((c1.at - c0.at) / 1000) : NaN;
  const [b0, b1] = [botCpu[0], botCpu.at(-1)];
  const botCores = b0 && b1 && b1.at > b0.at ? (b1.s - b0.s) / ((b1.at - b0.at) / 1000) : NaN;
  const r = {
    players,
    connected: bots.connected,
    tickP50Us: median(steady.map((l) => l.tickP50Us)),
    tickP99Us: Math.max(...steady.map((l) => l.tickP99Us)),
    tickP99MedianUs: median(steady.map((l) => l.tickP99Us)),
    tickMaxUs: Math.max(...steady.map((l) => l.tickMaxUs)),
    // CPU time inside the ticks: far below the wall time, a tick waited for a core.
    tickCpuP50Us: median(steady.map((l) => l.tickCpuP50Us ?? 0)),
    tickCpuP99MedianUs: median(steady.map((l) => l.tickCpuP99Us ?? 0)),
    ticksPerSecondPerShard: ticksPerShard,
    snapshotsPerBotPerSecond: bots.snapshotsPerBotPerSecond,
    inputsPerBotPerSecond: bots.inputsPerBotPerSecond,
    rssKiB: median(steady.map((l) => l.rssKiB)),
    memoryPerPlayerKiB: +((median(steady.map((l) => l.rssKiB)) - rss0) / players).toFixed(1),
    killsSeen: bots.killsSeen,
    // Cores the server process kept busy, and what one player costs it.
    serverCores: +serverCores.toFixed(2),
    serverCpuUsPerPlayerSecond: Math.round((serverCores * 1e6) / players),
    botCores: +botCores.toFixed(2),
  };
  r.held = r.connected === players && bots.closed === 0 && ticksPerShard >= 59 && r.snapshotsPerBotPerSecond >= 0.95 * SNAPSHOT_HZ && r.inputsPerBotPerSecond >= 0.95 * 60 && r.tickP99Us <= 16_667;
  return r;
}

console.log('Building (each step skips itself when up to date)…');
build(); // setup, wasm, SDK: the relay imports the SDK
for (const script of [join(ROOT, 'relay', 'native', 'build.mjs'), join(ROOT, 'relay', 'scripts', 'build.mjs')]) {
  if (spawnSync(process.execPath, [script], { stdio: 'inherit' }).status !== 0) throw new Error(`${script} failed`);
}
buildServer(); // the arcade server and bots
console.log(`\n## S5 — players per server: arcade server, ${SHARDS} shards (threads), 60 Hz tick, ${SNAPSHOT_HZ} Hz snapshots, rooms of ${PER_ROOM}, bots on the same machine (${cpus().length} cores; ${BOT_THREADS} bot threads at ${BOT_PRIORITY} priority)\n`);
console.log('| players | connected | tick p50 | tick p99 (worst s / median s) | tick max | tick CPU p50 / p99 (median s) | ticks/s per shard | snapshots per bot /s | inputs per bot /s | server CPU | server CPU per player | bots CPU | RSS | memory per player | held at 60 Hz | goal: tick p99 ≤ 5 ms |');
console.log('|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|');
const s5 = [];
for (const n of STEPS) {
  const r = await step(n);
  s5.push(r);
  if (r.note) {
    console.log(`| ${n} | ${r.bots.connected} | – | – | – | – | – | – | – | – | – | – | – | – | no (${r.note}) | – |`);
    continue;
  }
  const ms = (us) => `${(us / 1000).toFixed(2)} ms`;
  console.log(
    `| ${n} | ${r.connected} | ${ms(r.tickP50Us)} | ${ms(r.tickP99Us)} / ${ms(r.tickP99MedianUs)} | ${ms(r.tickMaxUs)} | ${ms(r.tickCpuP50Us)} / ${ms(r.tickCpuP99MedianUs)} | ${r.ticksPerSecondPerShard} | ${r.snapshotsPerBotPerSecond} | ${r.inputsPerBotPerSecond} | ${r.serverCores} cores | ${r.serverCpuUsPerPlayerSecond} µs/s | ${r.botCores} cores | ${(r.rssKiB / 1024).toFixed(1)} MiB | ${r.memoryPerPlayerKiB} KiB | ${r.held ? 'yes' : 'no'} | ${r.tickP99Us <= 5000 ? 'met' : 'not met'} |`,
  );
}
const held = s5.filter((r) => r.held).map((r) => r.players);
console.log(`\nPlayers held at 60 Hz: ${held.length ? Math.max(...held) : 0} (S5 reference: the $5 server held 250 on one core; goal ≥ 2,000 with tick p99 ≤ 5 ms on two cores)`);
// A player's cost at scale: the largest step where the bots produced the full
// load (≥ 55 inputs/s each); small steps carry the shards' fixed cost.
const loaded = s5.filter((r) => r.serverCpuUsPerPlayerSecond > 0 && r.inputsPerBotPerSecond >= 55).at(-1);
if (loaded) console.log(`Server CPU per player at ${loaded.players.toLocaleString('en')} players: ${loaded.serverCpuUsPerPlayerSecond} µs per second, so one dedicated core would serve about ${Math.floor(1e6 / loaded.serverCpuUsPerPlayerSecond).toLocaleString('en')} such players if nothing else ran on it.`);

if (process.env.ARCADE_BENCH_S6 === '0') process.exit(0); // S5 only
console.log('\n## S6 — relay datagrams forwarded per CPU-second vs a plain `ws` echo server (same clients, same run)\n');
const s6run = spawnSync(process.execPath, [join(ROOT, 'bench', 'arcade', 'relay-vs-ws.mjs')], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
if (s6run.status !== 0) throw new Error('relay-vs-ws.mjs failed');
const s6 = JSON.parse(s6run.stdout.trim().split('\n').pop());
console.log('| server | messages | wall time | CPU time | per CPU-second | goal |');
console.log('|---|---|---|---|---|---|');
console.log(`| relay (WebSocket ↔ UDP echo backend, both directions counted) | ${s6.relay.datagrams.toLocaleString('en')} datagrams | ${s6.relay.seconds} s | ${s6.relay.cpuSeconds} s | ${s6.relay.perCpuSecond.toLocaleString('en')} | ≥ 500,000: ${s6.relay.perCpuSecond >= 500_000 ? 'met' : 'not met'} |`);
const wt = s6.relayWebTransport;
console.log(`| relay (WebTransport ↔ UDP echo backend, ${wt.clients} Rust clients at ${wt.offeredPerClient.toLocaleString('en')}/s each, both directions counted; ${wt.echoed.toLocaleString('en')} of ${wt.sent.toLocaleString('en')} echoed, RTT p50 ${(wt.rttP50Us / 1000).toFixed(1)} / p99 ${(wt.rttP99Us / 1000).toFixed(1)} ms) | ${wt.datagrams.toLocaleString('en')} datagrams | ${wt.seconds} s | ${wt.cpuSeconds} s | ${wt.perCpuSecond.toLocaleString('en')} | ≥ 500,000: ${wt.perCpuSecond >= 500_000 ? 'met' : 'not met'} |`);
console.log(`| plain \`ws\` echo server (each message in and out) | ${s6.wsEcho.messages.toLocaleString('en')} messages | ${s6.wsEcho.seconds} s | ${s6.wsEcho.cpuSeconds} s | ${s6.wsEcho.perCpuSecond.toLocaleString('en')} | baseline (~133 k/core published) |`);
console.log(`\nrelay / ws echo: ${(s6.relay.perCpuSecond / s6.wsEcho.perCpuSecond).toFixed(2)}×`);
// udp-floor is a binary of the arcade crate (demos/arcade/server/src/bin/udp-floor.rs),
// built with it by buildServer(). The kernel's own cost per datagram on this
// machine caps any relay, whatever it is written in: WebSocket ↔ UDP pays one UDP send or one UDP receive per
// datagram forwarded (an echo: one of each), WebTransport ↔ UDP two.
const floorRun = spawnSync(FLOOR_BIN, ['--size', '64'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
if (floorRun.status !== 0) throw new Error('udp-floor failed');
const floor = JSON.parse(floorRun.stdout.trim().split('\n').pop());
const pair = floor.sendUsPerDatagram + floor.recvUsPerDatagram;
s6.udpFloor = { ...floor, wsCeilingPerCpuSecond: Math.round(2e6 / pair), wtCeilingPerCpuSecond: Math.round(1e6 / pair) };
const k = (n) => Math.round(n / 1000);
console.log(
  `Kernel floor here (udp-floor, 64-byte datagrams, 64 a call): sendmmsg ${floor.sendUsPerDatagram.toFixed(2)} µs and recvmmsg ${floor.recvUsPerDatagram.toFixed(2)} µs of CPU per datagram, ` +
    `so the UDP syscalls alone cap a relay at ${k(s6.udpFloor.wsCeilingPerCpuSecond)} k datagrams per CPU-second over WebSocket and ${k(s6.udpFloor.wtCeilingPerCpuSecond)} k over WebTransport (before any TCP, QUIC or JavaScript work).`,
);

mkdirSync(join(ROOT, 'results'), { recursive: true });
writeFileSync(join(ROOT, 'results', 'bench-players.json'), JSON.stringify({ date: new Date().toISOString(), cores: cpus().length, s5, s6 }, null, 2));
console.log('\nwritten: results/bench-players.json');
