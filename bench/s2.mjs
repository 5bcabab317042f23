#!/usr/bin/env node
// Scenario S2 (bench/SCENARIOS.md): bulk reliable transfer H0 → H3 across
// three emulated hops, each 200 Mbit/s, 5 ± 1 ms, 2 % iid loss (≈ 5.9 % end
// to end). Ricochet (native driver, default config), KCP (kcp-go turbo,
// windows 1024) and TCP run one after another, each through a fresh chain
// with the same seeds (at once they would share the bottleneck). Goodput is
// what the receiver's application got during the window after its first byte.
//
//   node bench/s2.mjs [--quick] [--seconds S] [--only ricochet,kcp,tcp] [--out DIR]
//
// --only runs the protocols named; with RICOCHET_S2_PEER (an absolute path
// to another build of s2_peer, run as is) Ricochet alone, run after run,
// compares two builds side by side.
//
// Needs root. Writes s2.md and s2.json into bench/results/ (or --out).
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { ROOT, run } from '../scripts/setup.mjs';
import { createChain } from './chain.mjs';
import { tcpCongestionControl } from './s1-counters.mjs';
import { GO_PEERS, ensureS1Tools } from './s1-tools.mjs';

const LINK = { delayMs: 4, jitterMs: 2, loss: 0.02, rateKbps: 200_000 };
const LINK_MBPS = LINK.rateKbps / 1000;
const HOPS = 3;
const GOAL = 0.8;
// RICOCHET_S2_PEER (an absolute path): another build of s2_peer, run as is.
const S2_PEER = process.env.RICOCHET_S2_PEER || join(ROOT, 'wasm', 'target', 'release', 'examples', 's2_peer');
const PEERS = [
  { key: 'ricochet', label: 'Ricochet (native UDP, default config)', bin: S2_PEER, pre: [], recv: 'recv', send: 'send', port: 6001 },
  { key: 'kcp', label: 'KCP (kcp-go 5.6.20, turbo 1,10,2,1, windows 1024)', bin: GO_PEERS, pre: ['kcp'], recv: 'bulk-recv', send: 'bulk-send', port: 6002 },
  { key: 'tcp', label: 'TCP', bin: GO_PEERS, pre: ['tcp'], recv: 'bulk-recv', send: 'bulk-send', port: 6003 },
];

function nextResult(child, label, ms) {
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`${label}: no result within ${ms} ms`)), ms);
    const lines = createInterface({ input: child.stdout });
    const seen = [];
    lines.on('line', (l) => {
      try {
        const m = JSON.parse(l);
        seen.push(m);
        if (m.event === 'result') {
          clearTimeout(t);
          resolve(m);
        }
      } catch {
        // not JSON
      }
    });
    // 'close': stdout drained (its last line can come after 'exit').
    child.once('close', (code) => reject(new Error(`${label} exited (${code}) without a result`)));
  });
}

async function runPeer(p, seconds, seed) {
  const chain = await createChain({ hops: HOPS, settings: LINK, seed });
  try {
    const stdio = ['pipe', 'pipe', 'inherit'];
    const recv = chain.exec(chain.last, p.bin, [...p.pre, p.recv, '--listen', `${chain.addrLast}:${p.port}`, '--seconds', String(seconds)], { rt: true, stdio });
    await new Promise((resolve) => createInterface({ input: recv.stdout }).once('line', resolve));
    const result = nextResult(recv, `${p.key} receiver`, (seconds + 60) * 1000);
    const send = chain.exec(chain.first, p.bin, [...p.pre, p.send, '--to', `${chain.addrLast}:${p.port}`], { rt: true, stdio });
    const r = await result;
    const sent = nextResult(send, `${p.key} sender`, 10_000).catch((e) => ({ error: e.message }));
    send.stdin.end();
    await new Promise((res) => setTimeout(res, 1200)); // one more stats file rewrite
    return { receiver: r, sender: await sent, hops: chain.stats(), tcpCc: await tcpCongestionControl(chain.first), realtime: chain.realtime };
  } finally {
    await chain.close();
  }
}

/** S2's flags; anything else, or a flag without its value, is refused before the run. */
function parseArgs(argv) {
  const known = PEERS.map((p) => p.key);
  const o = { quick: false, seconds: undefined, out: join(ROOT, 'bench', 'results'), only: known };
  const value = (i, flag) => {
    const v = argv[i];
    if (v === undefined || v.startsWith('--')) throw new Error(`${flag} needs a value`);
    return v;
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--quick') o.quick = true;
    else if (a === '--seconds') {
      o.seconds = Number(value(++i, a));
      if (!(o.seconds > 0)) throw new Error(`--seconds: a positive number, got ${argv[i]}`);
    } else if (a === '--out') o.out = value(++i, a);
    else if (a === '--only') {
      o.only = value(++i, a).split(',').filter((k) => k !== '');
      const unknown = o.only.filter((k) => !known.includes(k));
      if (o.only.length === 0 || unknown.length) throw new Error(`--only: name one or more of ${known.join(', ')}, comma-separated${unknown.length ? ` (unknown: ${unknown.join(', ')})` : ''}`);
    } else throw new Error(`unknown argument ${a} (S2 takes --quick, --seconds S, --only a,b, --out DIR)`);
  }
  o.seconds ??= o.quick ? 10 : 60;
  return o;
}

export async function runS2(argv = []) {
  const { seconds, out, only } = parseArgs(argv);
  if (process.getuid?.() !== 0) throw new Error('S2 needs root (network namespaces, TUN devices)');
  ensureS1Tools({ go: PEERS.some((p) => p.bin === GO_PEERS && only.includes(p.key)) });
  if (!process.env.RICOCHET_S2_PEER) run('cargo', ['build', '--release', '-p', 'ricochet-native', '--example', 's2_peer', '--manifest-path', join(ROOT, 'wasm', 'Cargo.toml')]);
  const rows = [];
  for (const p of PEERS.filter((q) => only.includes(q.key))) {
    console.error(`S2 ${p.key}: ${seconds} s…`);
    try {
      rows.push({ p, ...(await runPeer(p, seconds, 1)) });
    } catch (e) {
      // One protocol's failure is a row of the table, not the end of the run.
      console.error(`S2 ${p.key} failed: ${e.message}`);
      rows.push({ p, error: e.message });
    }
  }
  const hopLine = (hops) =>
    hops
      .map((h, k) => (h ? `hop ${k + 1}: ${((100 * h.a_to_b.lost) / Math.max(1, h.a_to_b.packets_in)).toFixed(2)} % lost, ${h.a_to_b.queue_dropped} queue drops, late_us p99 ${h.a_to_b.late_us.p99} max ${h.a_to_b.late_us.max}` : `hop ${k + 1}: no stats`))
      .join('; ');
  const measured = rows.find((r) => !r.error); // a row that ran, for the set-up line
  const md = [
    `## S2 — bulk goodput H0 → H3 over ${HOPS} hops (each ${LINK_MBPS} Mbit/s, 5 ± 1 ms, ${LINK.loss * 100} % loss), ${seconds} s per protocol`,
    '',
    '| protocol | goodput (Mbit/s) | share of link rate | goal (Ricochet): ≥ 80 % | emulator, data direction |',
    '|---|---|---|---|---|',
    ...rows.map((r) => {
      if (r.error) return `| ${r.p.label} | failed: ${r.error} |  | ${r.p.key === 'ricochet' ? '**not met**' : ''} |  |`;
      const share = r.receiver.mbps / LINK_MBPS;
      const goal = r.p.key === 'ricochet' ? `**${share >= GOAL ? 'met' : 'not met'}**` : '';
      return `| ${r.p.label} | ${r.receiver.mbps.toFixed(1)} | ${(100 * share).toFixed(1)} % | ${goal} | ${hopLine(r.hops)} |`;
    }),
    '',
    ...(process.env.RICOCHET_S2_PEER ? [`Ricochet's peer: ${S2_PEER} (RICOCHET_S2_PEER).`, ''] : []),
    `TCP congestion control: ${measured?.tcpCc ?? 'unknown'}; peers and emulators under chrt -f 20: ${measured?.realtime ?? 'unknown'}. Published (BATS paper): BATS 42.4, kcptun 16.7, TCP 1.96 Mbit/s.`,
    '',
  ];
  console.log(`\n${md.join('\n')}`);
  mkdirSync(out, { recursive: true });
  writeFileSync(join(out, 's2.md'), `${md.join('\n')}\n`);
  writeFileSync(join(out, 's2.json'), JSON.stringify({ date: new Date().toISOString(), seconds, link: LINK, ricochetPeer: S2_PEER, rows: rows.map(({ p, ...r }) => ({ protocol: p.key, ...r })) }, null, 1));
  console.log(`written: ${join(out, 's2.md')}, ${join(out, 's2.json')}`);
  if (rows.some((r) => r.error)) process.exitCode = 1;
}

if (process.argv[1] && import.meta.url === `file://${process.argv[1]}`) {
  runS2(process.argv.slice(2)).catch((e) => {
    console.error(`s2: ${e.stack ?? e.message}`);
    process.exit(1);
  });
}
