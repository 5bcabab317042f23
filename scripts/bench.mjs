#!/usr/bin/env node
// `npm run bench`: runs each benchmark scenario side by side in one run,
// prints a markdown table with each goal beside the measured figure, and
// writes results/bench.json. Speed goals live here, never in tests.
// `npm run bench -- --help` lists the modes; bench/README.md says what each
// measures, which scenario of bench/SCENARIOS.md it is and where its
// reference result lives (bench/reference/).
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { build } from './build.mjs';
import { ROOT, setup } from './setup.mjs';

const HELP = `npm run bench [-- MODE]: the benchmarks (bench/README.md; scenarios in bench/SCENARIOS.md)

  (no mode)                      S3 core cost per message (native; wasm in Node, Chromium, Firefox), the relay's WebSocket
                                 forwarding cost, then S1 and S2 when root; writes results/bench.json
  --s1 [--quick] [--cells a,b] [--rows a,b] [--no-browser] [--browser-rows a,b]
                                 S1 latency under loss on real sockets (root)   reference: bench/reference/s1.md
  --s2 [--quick] [--seconds S] [--only ricochet,kcp,tcp]
                                 S2 goodput over three lossy hops (root)        reference: bench/reference/s2.md
  --hostile [--seconds N]        the relay under attack                         reference: bench/reference/hostile.md
  --sizing [--quick] [--only ws|wt|latency] [--no-latency]
                                 what one relay core carries, then S6's added
                                 one-way latency at half load (every path, the
                                 ws echo and the UDP floor in one run)         reference: bench/reference/sizing.md
  --fleet [--out DIR] [--no-defaults]
                                 a relay fleet behind load balancers (root)     reference: bench/reference/fleet.md
  --players                      S5 players per arcade server and S6 relay vs a plain ws echo
                                 (= npm run bench:players)                      reference: bench/reference/players.md
  --help                         this list

Results go to results/ or bench/results/ (not committed).`;
if (process.argv.includes('--help') || process.argv.includes('-h')) {
  console.log(HELP);
  process.exit(0);
}
try {
  build(); // setup, wasm, SDK, game layer: each step skips itself when up to date
} catch (e) {
  console.error(`[build] ERROR: ${e.message}`);
  process.exit(1);
}

const messages = Number(process.env.RICOCHET_BENCH_MESSAGES ?? 1_000_000);

// `npm run bench -- --s1 [--quick] [--cells …] [--no-browser]`: only S1 on
// real sockets through the emulated link (bench/s1.mjs); `--s2 [--quick]
// [--seconds S] [--only …]`: only S2's three-hop goodput (bench/s2.mjs).
// Both need root. Without either flag every scenario runs, S1 and S2
// included when root.
const argv = process.argv.slice(2);
// `--hostile [--seconds N]`: only the relay under attack (bench/hostile.mjs).
if (argv.includes('--hostile')) {
  const { runHostile } = await import('../bench/hostile.mjs');
  const { failed } = await runHostile();
  process.exit(failed ? 1 : 0);
}
// `--sizing [--quick] [--only ws|wt|latency] [--no-latency]`: what one relay core
// carries, the README's "Sizing a relay" table (bench/sizing.mjs), then S6's
// latency at half load (bench/latency.mjs); writes results/sizing.json.
if (argv.includes('--sizing')) {
  for (const [script, ...args] of [[join('relay', 'scripts', 'build.mjs')], [join('relay', 'native', 'build.mjs'), '--client']]) {
    if (spawnSync(process.execPath, [join(ROOT, script), ...args], { stdio: 'inherit' }).status !== 0) process.exit(1);
  }
  const sizing = await (await import('../bench/sizing.mjs')).runSizing(argv);
  mkdirSync(join(ROOT, 'results'), { recursive: true });
  writeFileSync(join(ROOT, 'results', 'sizing.json'), JSON.stringify(sizing, null, 2));
  console.log('\nwritten: results/sizing.json');
  process.exit(0);
}
// `--players`: S5 and S6 on the arcade (bench/arcade/players.mjs, also `npm run bench:players`).
if (argv.includes('--players')) {
  const r = spawnSync(process.execPath, [join(ROOT, 'bench', 'arcade', 'players.mjs')], { stdio: 'inherit' });
  process.exit(r.status ?? 1);
}
// `--fleet [--out DIR] [--no-defaults]`: only the relay fleet behind load balancers (bench/fleet.mjs; root).
if (argv.includes('--fleet')) {
  const { runFleet } = await import('../bench/fleet.mjs');
  const r = await runFleet(argv.filter((a) => a !== '--fleet'));
  process.exit(r.failed?.length ? 1 : 0);
}
const only = { s1: argv.includes('--s1'), s2: argv.includes('--s2') };
const scenarioArgs = argv.filter((a) => a !== '--s1' && a !== '--s2');
async function runLabScenarios() {
  if (process.getuid?.() !== 0) {
    console.log('\nS1 and S2 on real sockets skipped: they need root (network namespaces, TUN devices).');
    return;
  }
  const all = !only.s1 && !only.s2;
  if (all || only.s1) await (await import('../bench/s1.mjs')).runS1(scenarioArgs);
  // S1's flags are not S2's: with both, S2 takes only --quick.
  if (all || only.s2) await (await import('../bench/s2.mjs')).runS2(only.s2 && !only.s1 ? scenarioArgs : scenarioArgs.filter((a) => a === '--quick'));
}
if (only.s1 || only.s2) {
  await runLabScenarios();
  process.exit(0);
}

function json(cmd, args, { cwd = ROOT, env = process.env } = {}) {
  const r = spawnSync(cmd, args, { cwd, env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} failed`);
  return JSON.parse(r.stdout.trim().split('\n').pop());
}

console.log('Building the native benchmark (release)…');
const b = spawnSync('cargo', ['build', '--release', '--example', 'bench_s3', '-p', 'ricochet-core'], { cwd: join(ROOT, 'wasm'), stdio: 'inherit' });
if (b.status !== 0) process.exit(1);
const native = join(ROOT, 'wasm', 'target', 'release', 'examples', 'bench_s3');
// The same loop inside wasm: the core's own cost there, without bindings.
const { buildS3Core } = await import('../bench/s3-core.mjs');
const coreEnv = { ...process.env, RICOCHET_S3_CORE: buildS3Core() };

const rows = [];
for (const perTick of [1, 10]) {
  // Alternate native and wasm so machine noise hits both alike.
  const n = json(native, [String(messages), '100', String(perTick)]);
  const w = json(process.execPath, [join(ROOT, 'bench', 's3-wasm.mjs'), String(messages), '100', String(perTick)]);
  // The browser's client module is built for size (opt-level "s"): its cost beside the full one.
  const c = json(process.execPath, [join(ROOT, 'bench', 's3-wasm.mjs'), String(messages), '100', String(perTick), 'ricochet_client']);
  const core = json(process.execPath, [join(ROOT, 'bench', 's3-wasm.mjs'), String(messages), '100', String(perTick), 's3_core'], { env: coreEnv });
  rows.push({ perTick, native: n, wasm: w, client: c, core });
}
// The same loop in the browsers games run in (bench/s3-browser.mjs): each
// engine's own wasm compiler, the same JavaScript.
let browserRows = null;
let browsers = [];
try {
  setup({ browser: true });
  const { runS3InBrowsers, BROWSERS } = await import('../bench/s3-browser.mjs');
  browsers = BROWSERS;
  browserRows = [];
  for (const perTick of [1, 10]) browserRows.push(...(await runS3InBrowsers({ messages, perTick })));
} catch (e) {
  console.log(`S3 in browsers skipped: ${e.message}`);
}

// Issue 16, item 5: at one message per datagram, at most 0.7 µs per message in wasm.
const goalNs = 700;
console.log(`\n## S3 — core CPU cost per 100-byte reliable message (send + transmit + receive + deliver + ack), ${messages.toLocaleString('en')} messages\n`);
console.log('| messages per datagram | native ns/msg | native msg/s | wasm in Node ns/msg | wasm msg/s | wasm / native | browser client module ns/msg | core alone in wasm (no bindings) ns/msg | wire bytes per payload byte | goal (wasm) |');
console.log('|---|---|---|---|---|---|---|---|---|---|');
for (const { perTick, native: n, wasm: w, client: c, core } of rows) {
  const ok = w.ns_per_message <= goalNs ? 'met' : 'not met';
  console.log(
    `| ${perTick} | ${n.ns_per_message} | ${n.messages_per_sec.toLocaleString('en')} | ${w.ns_per_message} | ${w.messages_per_sec.toLocaleString('en')} | ${(w.ns_per_message / n.ns_per_message).toFixed(2)}× | ${c.ns_per_message} (${(c.ns_per_message / w.ns_per_message).toFixed(2)}× full) | ${core.ns_per_message} (${(core.ns_per_message / w.ns_per_message).toFixed(2)}× full) | ${w.wire_bytes_per_payload_byte} | ≤ ${goalNs} ns: ${ok} |`,
  );
}
if (browserRows) {
  console.log('\n| messages per datagram | browser | wasm ns/msg (full module) | browser client module ns/msg | core alone (no bindings) ns/msg | full module / Node\'s | goal (wasm) |');
  console.log('|---|---|---|---|---|---|---|');
  for (const { perTick, wasm: w } of rows) {
    for (const browser of browsers) {
      const of = (m) => browserRows.find((r) => r.browser === browser && r.per_tick === perTick && r.client_module === m);
      const [full, client, core] = [of('ricochet_wasm'), of('ricochet_client'), of('s3_core')];
      if (!full || !client || !core) continue;
      const ok = full.ns_per_message <= goalNs ? 'met' : 'not met';
      console.log(`| ${perTick} | ${browser} | ${full.ns_per_message} | ${client.ns_per_message} | ${core.ns_per_message} | ${(full.ns_per_message / w.ns_per_message).toFixed(2)}× | ≤ ${goalNs} ns: ${ok} |`);
    }
  }
}
console.log('\nBuilding the relay…');
const rb = spawnSync(process.execPath, [join(ROOT, 'relay', 'scripts', 'build.mjs')], { stdio: 'inherit' });
if (rb.status !== 0) process.exit(1);
const relay = json(process.execPath, [join(ROOT, 'bench', 'relay.mjs'), '1000', '200000']);
console.log('\n## Relay — WebSocket → UDP forwarding (relay in its own process, loopback)\n');
console.log('| idle sessions | RSS per idle session | heap per idle session | datagrams forwarded | relay CPU per datagram | datagrams per relay CPU-second |');
console.log('|---|---|---|---|---|---|');
console.log(
  `| ${relay.idle_sessions} | ${relay.rss_per_idle_session_kib} KiB | ${relay.heap_per_idle_session_kib} KiB | ${relay.datagrams_forwarded.toLocaleString('en')} | ${relay.relay_cpu_us_per_datagram} µs | ${relay.relay_datagrams_per_cpu_second.toLocaleString('en')} |`,
);

await runLabScenarios();

mkdirSync(join(ROOT, 'results'), { recursive: true });
writeFileSync(join(ROOT, 'results', 'bench.json'), JSON.stringify({ date: new Date().toISOString(), s3: rows, s3Browsers: browserRows, relay }, null, 2));
console.log('\nwritten: results/bench.json');
