#!/usr/bin/env node
// Scenario S1 on real sockets through the emulated link (bench/SCENARIOS.md):
// 400-byte reliable-ordered messages at 60 Hz, 10 ms ± 2 ms each way, one lab
// per loss cell. Ricochet (native driver over UDP, default and low_latency
// presets), KCP (kcp-go turbo mode) and TCP (Nagle off) run concurrently
// through the same link, senders in namespace A, receivers in B, each peer
// under chrt like the emulator. One-way latency per message: the send time
// (CLOCK_MONOTONIC, shared by all namespaces) travels in the payload.
// Wire bytes: iptables counters per port in both namespaces, IP packets
// including IP and UDP/TCP headers, both directions, lost packets included.
//
//   node bench/s1.mjs [--quick] [--count N] [--size B] [--per-tick K] [--cells s1_5pct,s1_bursty] [--no-browser] [--browser-rows a,b] [--rows a,b] [--latencies] [--seed S] [--out DIR]
//
// --size sends messages of B bytes instead of S1's 400 (at least 16: each
// carries its number and send time), for the shapes beyond S1 (a game's
// small inputs); native rows only (with --no-browser). --per-tick K sends K
// messages each tick, queued together (Ricochet's native rows only: the
// KCP and TCP peers send one a tick).
//
// Then the same cells once more for Ricochet from Chromium and Firefox over
// WebTransport and WebSocket through the relay, default and low_latency
// configurations (bench/s1-browser.mjs, rows in s1-browser-rows.mjs;
// --browser-rows picks them, --no-browser skips them), each WebTransport row
// compared with its native row (issue 16: within 1.5 ms at p50 and p99, the
// same bytes ± 10 %) beside the page's own step timings.
// --rows picks the native rows (ricochet, ricochet_ll, kcp, tcp), which share
// one emulated link. Needs root (namespaces, TUN). Writes s1.md, s1.json and
// s1.svg into bench/results/ (or --out); with --latencies also
// s1-latencies.json, every row's per-message latencies (µs, in send order).
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { createLab } from '../netem/lab.mjs';
import { ROOT } from '../scripts/setup.mjs';
import { DEFAULT_BROWSER_ROWS, runBrowserRows } from './s1-browser.mjs';
import { writeChart } from './s1-chart.mjs';
import { browserTable, cellTable, linkLine, summarize } from './s1-stats.mjs';
import { installCounters, readCounters, tcpCongestionControl } from './s1-counters.mjs';
import { GO_PEERS, RICOCHET_PEER, ensureS1Tools } from './s1-tools.mjs';

export const CELLS = [
  { name: 's1_clean', title: '0 % loss' },
  { name: 's1_1pct', title: '1 % iid loss' },
  { name: 's1_5pct', title: '5 % iid loss' },
  { name: 's1_bursty', title: 'Gilbert-Elliott 10 % loss, 25 % correlation' },
  // Beyond S1 (issue 16: the default configuration beats kcp-go on every
  // profile, round trips of 10 to 150 ms and the simulator's other loss
  // models): native rows only.
  { name: 'rtt10_5pct', title: '5 % iid loss, 5 ± 2 ms each way', profile: 's1_5pct', settings: { delayMs: 5 }, beyond: true },
  { name: 'rtt50_5pct', title: '5 % iid loss, 25 ± 2 ms each way', profile: 's1_5pct', settings: { delayMs: 25 }, beyond: true },
  { name: 'rtt150_5pct', title: '5 % iid loss, 75 ± 2 ms each way', profile: 's1_5pct', settings: { delayMs: 75 }, beyond: true },
  { name: 'rtt150_bursty', title: 'Gilbert-Elliott 10 % / 25 %, 75 ± 2 ms each way', profile: 's1_bursty', settings: { delayMs: 75 }, beyond: true },
  { name: 'wifi', title: "the simulator's wifi: 5 ± 2 ms, Gilbert-Elliott 1 % / 30 %, 0.2 % reordered", profile: 'wifi', beyond: true },
  { name: 'mobile_lossy', title: "the simulator's mobile_lossy: 40 ± 10 ms, Gilbert-Elliott 5 % / 40 %, 1 % reordered, 8 Mbit/s", profile: 'mobile_lossy', beyond: true },
];
const SIZE = 400;
const MIN_SIZE = 16;
const HZ = 60;
const ALL_PEERS = [
  { key: 'ricochet', label: 'Ricochet (native UDP, default config)', ricochet: true, bin: RICOCHET_PEER, pre: [], extra: ['--preset', 'default'], ipProto: 'udp', port: 5001 },
  { key: 'ricochet_ll', label: 'Ricochet (native UDP, low_latency config, 15 ms channel target)', ricochet: true, bin: RICOCHET_PEER, pre: [], extra: ['--preset', 'low_latency', '--latency-target-ms', '15'], ipProto: 'udp', port: 5002 },
  { key: 'kcp', label: 'KCP (kcp-go 5.6.20, turbo 1,10,2,1)', bin: GO_PEERS, pre: ['kcp'], extra: [], ipProto: 'udp', port: 5003 },
  { key: 'tcp', label: 'TCP (Nagle off)', bin: GO_PEERS, pre: ['tcp'], extra: [], ipProto: 'tcp', port: 5004 },
];

/** Resolves with the first JSON line on stdout whose event is `event`. */
function nextEvent(child, event, label, ms) {
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`${label}: no ${event} within ${ms} ms`)), ms);
    createInterface({ input: child.stdout }).on('line', (l) => {
      let m;
      try {
        m = JSON.parse(l);
      } catch {
        return;
      }
      if (m.event === event) {
        clearTimeout(t);
        resolve(m);
      }
    });
    // 'close', not 'exit': a child's last stdout line can be read after
    // 'exit' fires, and the result would be lost to a race.
    child.once('close', (code, sig) => {
      clearTimeout(t);
      reject(new Error(`${label} exited (${sig ?? code}) before ${event}`));
    });
  });
}

async function runCell(cell, { count, seed, rows, size, perTick }) {
  const peers = ALL_PEERS.filter((p) => rows.includes(p.key));
  const lab = await createLab({ profile: cell.profile ?? cell.name, settings: cell.settings, seed });
  try {
    await installCounters(lab, peers);
    const runMs = (count / perTick / HZ) * 1000;
    const maxMs = String(Math.round(runMs + 60_000));
    const common = ['--count', String(count), '--size', String(size), '--max-ms', maxMs];
    const stdio = ['pipe', 'pipe', 'inherit'];
    const receivers = peers.map((p) => {
      const child = lab.exec(lab.nsB, p.bin, [...p.pre, 'recv', '--listen', `${lab.addrB}:${p.port}`, ...common], { rt: true, stdio });
      const listening = nextEvent(child, 'listening', `${p.key} receiver`, 10_000);
      return { p, child, listening, result: nextEvent(child, 'result', `${p.key} receiver`, runMs + 90_000) };
    });
    await Promise.all(receivers.map((r) => r.listening));
    const senders = peers.map((p) => {
      const tick = perTick > 1 ? ['--per-tick', String(perTick)] : [];
      const child = lab.exec(lab.nsA, p.bin, [...p.pre, 'send', '--to', `${lab.addrB}:${p.port}`, '--hz', String(HZ), ...tick, ...p.extra, ...common], { rt: true, stdio });
      const result = nextEvent(child, 'result', `${p.key} sender`, runMs + 120_000);
      // If a receiver fails first, the lab's teardown kills the senders: that
      // rejection must not mask the receiver's error as an unhandled one.
      result.catch(() => {});
      return { p, child, result };
    });
    const got = await Promise.all(receivers.map((r) => r.result));
    const link = await lab.stats();
    // Receivers are done; the senders report once their stdin ends.
    for (const s of senders) s.child.stdin.end();
    const sent = await Promise.all(senders.map((s) => s.result));
    const counters = await readCounters(lab);
    const rows = {};
    peers.forEach((p, i) => {
      const c = counters[p.port];
      const { latencies_us: lat, ...recv } = got[i];
      rows[p.key] = {
        label: p.label,
        ricochet: !!p.ricochet,
        stats: summarize(lat),
        latenciesUs: lat,
        sent: sent[i].sent,
        wirePerPayload: c ? c.bytes / (lat.length * size) : null,
        wire: c,
        receiver: recv,
        sender: sent[i],
      };
    });
    return { cell, rows, link, tcpCc: await tcpCongestionControl(lab.nsA), realtime: lab.realtime };
  } finally {
    await lab.close();
  }
}

function parseArgs(argv) {
  const o = { quick: false, browser: true, browserRows: DEFAULT_BROWSER_ROWS, count: 10_000, size: SIZE, perTick: 1, cells: CELLS.map((c) => c.name), out: join(ROOT, 'bench', 'results'), seed: 1, rows: ALL_PEERS.map((p) => p.key), latencies: false };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--quick') o.quick = true;
    else if (a === '--no-browser') o.browser = false;
    else if (a === '--browser-rows') o.browserRows = argv[++i].split(',');
    else if (a === '--count') o.count = Number(argv[++i]);
    else if (a === '--size') o.size = Number(argv[++i]);
    else if (a === '--per-tick') o.perTick = Number(argv[++i]);
    else if (a === '--cells') o.cells = argv[++i].split(',');
    else if (a === '--out') o.out = argv[++i];
    else if (a === '--seed') o.seed = Number(argv[++i]);
    else if (a === '--rows') o.rows = argv[++i].split(',');
    else if (a === '--latencies') o.latencies = true;
    else throw usageError(`unknown argument ${a}`);
  }
  if (o.quick && !argv.includes('--count')) o.count = 600;
  if (!Number.isInteger(o.size) || o.size < MIN_SIZE || o.size > 1_000) throw usageError(`--size: ${MIN_SIZE} to 1000 bytes`);
  // The browser page sends S1's 400 bytes (e2e/bench-specs/s1-browser.spec.ts).
  if (o.size !== SIZE && o.browser) throw usageError('--size other than 400 needs --no-browser');
  if (!Number.isInteger(o.perTick) || o.perTick < 1 || o.perTick > 16) throw usageError('--per-tick: 1 to 16');
  if (o.perTick > 1 && (o.browser || o.rows.some((r) => !ALL_PEERS.find((p) => p.key === r)?.ricochet))) throw usageError('--per-tick needs --no-browser and Ricochet rows only (--rows ricochet,ricochet_ll)');
  for (const r of o.rows) if (!ALL_PEERS.some((p) => p.key === r)) throw usageError(`unknown row ${r} (rows: ${ALL_PEERS.map((p) => p.key).join(', ')})`);
  for (const c of o.cells) if (!CELLS.some((x) => x.name === c)) throw usageError(`unknown cell ${c} (cells: ${CELLS.map((x) => x.name).join(', ')})`);
  return o;
}

/** A command-line mistake: reported as one line with the usage, no stack. */
function usageError(message) {
  return Object.assign(new Error(`${message}\nusage: s1 [--quick] [--no-browser] [--browser-rows a,b] [--count N] [--size B] [--per-tick K] [--cells a,b] [--rows a,b] [--latencies] [--out DIR] [--seed N]`), { usage: true });
}

/** Runs S1; prints and writes the tables and chart; returns the results. */
export async function runS1(argv = []) {
  const o = parseArgs(argv);
  if (process.getuid?.() !== 0) throw new Error('S1 on real sockets needs root (network namespaces, TUN devices)');
  ensureS1Tools({ go: ALL_PEERS.some((p) => p.bin === GO_PEERS && o.rows.includes(p.key)) });
  const results = [];
  for (const name of o.cells) {
    const cell = CELLS.find((c) => c.name === name);
    console.error(`S1 ${cell.name}: ${o.count} messages per protocol, ≈ ${Math.round(o.count / o.perTick / HZ)} s…`);
    results.push(await runCell(cell, o));
  }
  const browserCells = o.cells.filter((name) => !CELLS.find((c) => c.name === name).beyond);
  if (o.browser && browserCells.length > 0) {
    const n = browserCells.length * o.browserRows.length;
    console.error(`S1 browser rows: ${o.browserRows.join(', ')} × ${browserCells.length} cells, ≈ ${Math.round((n * o.count) / HZ)} s plus set-up…`);
    const browser = runBrowserRows(browserCells, { count: o.count, seed: o.seed, size: o.size, rows: o.browserRows });
    for (const r of results) {
      if (!browser[r.cell.name]) continue;
      r.browser = browser[r.cell.name];
      for (const [key, b] of Object.entries(r.browser)) r.rows[key] = b.row;
    }
  }
  // The figures first, so that a failure while rendering loses none of them.
  mkdirSync(o.out, { recursive: true });
  const slim = results.map((r) => ({
    cell: r.cell.name,
    link: r.link,
    browserLinks: r.browser && Object.fromEntries(Object.entries(r.browser).map(([k, x]) => [k, { link: x.link, clockErrorUs: x.clockErrorUs }])),
    tcpCc: r.tcpCc,
    rows: Object.fromEntries(Object.entries(r.rows).map(([k, v]) => [k, { ...v, latenciesUs: undefined }])),
  }));
  writeFileSync(join(o.out, 's1.json'), JSON.stringify({ date: new Date().toISOString(), count: o.count, size: o.size, perTick: o.perTick, results: slim }, null, 1));
  if (o.latencies) {
    const byCell = Object.fromEntries(results.map((r) => [r.cell.name, Object.fromEntries(Object.entries(r.rows).map(([k, v]) => [k, v.latenciesUs ?? null]))]));
    writeFileSync(join(o.out, 's1-latencies.json'), JSON.stringify(byCell));
  }
  const md = [
    `## S1 — one-way delivery latency of ${o.size}-byte reliable-ordered messages${o.perTick > 1 ? `, ${o.perTick} a tick,` : ''} at 60 Hz, 10 ± 2 ms each way unless the cell says otherwise (ms)`,
    '',
    `${o.count.toLocaleString('en')} messages per protocol per cell. Native rows run at once through one emulated link per cell;`,
    'each browser row runs afterwards in its own lab with the same profile and seed, one after another.',
    'Wire bytes: IP packets both ways (IP and UDP/TCP headers included, lost packets included), iptables counters per port',
    "(a browser row counts QUIC, or WebSocket's TCP, between the browser and the relay). Goals (issue 5) are checked on Ricochet's rows;",
    "each cell's second table holds each browser row against its native row (issue 16) beside the page's own step timings:",
    'how late the 60 Hz timer fired, send + flush, ticks whose datagram the SDK held for pacing, the browser completing a',
    "datagram write, performance.now()'s step, and the SDK's packets out against those that reached the relay.",
    '',
  ];
  for (const r of results) {
    const b = r.browser;
    const block = [
      `### ${r.cell.title} (${r.cell.name})`,
      '',
      cellTable(r.cell, r.rows),
      '',
      ...(b ? [browserTable(r.rows, b), ''] : []),
      `native lab: ${linkLine(r.link)}`,
      ...Object.entries(b ?? {}).flatMap(([key, x]) => [
        ...(x.link ? [`browser lab ${key}: ${linkLine(x.link)}; page clock offset error ≤ ${x.clockErrorUs.toFixed(0)} µs`] : []),
        ...(x.row.error ? [`browser row ${key}: ${x.row.error}`] : []),
      ]),
      `TCP congestion control: ${r.tcpCc}; native peers and emulator under chrt -f 20: ${r.realtime}.`,
      '',
    ];
    console.log(`\n${block.join('\n')}`);
    md.push(...block);
  }
  writeFileSync(join(o.out, 's1.md'), `${md.join('\n')}\n`);
  await writeChart(join(o.out, 's1.svg'), results);
  console.log(`\nwritten: ${['s1.md', 's1.json', 's1.svg'].map((f) => join(o.out, f)).join(', ')}`);
  return results;
}

if (process.argv[1] && import.meta.url === `file://${process.argv[1]}`) {
  runS1(process.argv.slice(2)).catch((e) => {
    console.error(`s1: ${e.usage ? e.message : (e.stack ?? e.message)}`);
    process.exit(1);
  });
}
