// `npm run bench -- --fleet [--out DIR] [--no-defaults]`: the relay fleet behind real load balancers
// (e2e/fleet/topology.ts: three relay hosts, HAProxy for WebSocket, nftables jhash DNAT for
// WebTransport, the native echo server, Chromium pages and Node bots). Runs the fleet specs
// (e2e/fleet-specs/) with RICOCHET_FLEET_OUT set, then prints each figure beside its goal:
// - resume after a relay dies, kill → first delivery again, p50/p99/max per transport
//   (goal p99: WebSocket ≤ 1 s, WebTransport ≤ 2.5 s), for a killed process (its host still
//   answers: TCP reset, ICMP port unreachable) and a silent host (nothing comes back);
// - rolling restart of every relay under 200 sessions: sessions lost, reliable messages lost,
//   duplicated or reordered (goal 0);
// - the game server restarts (SIGTERM) or crashes (SIGKILL): time until every session has a close event.
// The connection options of the first run are a game's tuned ones (silenceTimeoutMs 1000,
// keepaliveMs 250, a 500 ms WebTransport handshake deadline on resume attempts); a second run
// repeats the relay-death cases with the SDK's defaults (silenceTimeoutMs 4000, keepaliveMs 1000,
// handshake deadline 1500 ms) unless --no-defaults. Needs root.
// Writes DIR/fleet.json, DIR/fleet.md and the runs' output DIR/fleet-*.log (default bench/results/).
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { ROOT } from '../scripts/setup.mjs';

const GOALS = { websocket: 1000, webtransport: 2500 };

/** Runs the fleet specs; their whole output goes to `log`, the pass/fail lines to the console too. */
function playwright(args, env, log) {
  const e2e = join(ROOT, 'e2e');
  const require = createRequire(join(e2e, 'package.json'));
  const cli = join(dirname(require.resolve('@playwright/test/package.json')), 'cli.js');
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [cli, 'test', '-c', 'playwright.fleet.config.ts', ...args], { cwd: e2e, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } });
    const text = [];
    const take = (d) => {
      text.push(String(d));
      for (const l of String(d).split('\n')) if (/[✓✘]|^\s+\d+ (passed|failed|skipped|did not run)|Error:/.test(l)) console.log(`  ${l.trim()}`);
    };
    child.stdout.on('data', take);
    child.stderr.on('data', take);
    child.on('close', (code) => {
      writeFileSync(log, text.join(''));
      resolve(code === 0);
    });
  });
}

function readFigures(dir) {
  const out = {};
  if (!existsSync(dir)) return out;
  for (const f of readdirSync(dir)) if (f.endsWith('.json')) out[f.replace(/\.json$/, '')] = JSON.parse(readFileSync(join(dir, f), 'utf8'));
  return out;
}

const ms = (v) => (v === null || v === undefined ? '—' : `${Math.round(v)} ms`);
const met = (ok) => (ok ? 'met' : 'not met');

function killRows(label, k) {
  if (!k) return [];
  return ['websocket', 'webtransport'].map((t) => {
    const x = k[t];
    const p99 = x.killToDeliveryMs.p99;
    const ok = x.resumed === x.affected && p99 !== null && p99 <= GOALS[t];
    return `| ${label} | ${t} | ${x.resumed}/${x.affected} | ${ms(x.detectMs.p50)} / ${ms(x.detectMs.p99)} | ${ms(x.killToDeliveryMs.p50)} | ${ms(p99)} | ${ms(x.killToDeliveryMs.max)} | p99 ≤ ${GOALS[t]} ms: ${met(ok)} |`;
  });
}

export async function runFleet(argv = []) {
  if (process.getuid?.() !== 0) {
    console.log('\nThe fleet benchmark skipped: it needs root (network namespaces, nftables).');
    return { skipped: true };
  }
  const outArg = argv.indexOf('--out');
  const outDir = outArg >= 0 ? argv[outArg + 1] : join(ROOT, 'bench', 'results');
  const tmp = mkdtempSync(join(tmpdir(), 'ricochet-bench-fleet-'));
  const runs = [];
  try {
    console.log('\n## Relay fleet: 3 relays behind HAProxy (WebSocket) and nftables jhash DNAT (WebTransport)\n');
    console.log('Run 1: every case, tuned options (silenceTimeoutMs 1000, keepaliveMs 250, WebTransport resume handshake deadline 500 ms)…');
    const tuned = join(tmp, 'tuned');
    mkdirSync(outDir, { recursive: true });
    const ok1 = await playwright([], { RICOCHET_FLEET_OUT: tuned }, join(outDir, 'fleet-tuned.log'));
    runs.push({ name: 'tuned', ok: ok1, connOptions: { silenceTimeoutMs: 1000, keepaliveMs: 250, webTransportReconnectDeadlineMs: 500 }, figures: readFigures(tuned) });
    if (!argv.includes('--no-defaults')) {
      console.log('Run 2: relay death only, the SDK defaults (silenceTimeoutMs 4000, keepaliveMs 1000, quietProbeMs if the SDK has it, handshake deadline 1500 ms)…');
      const defaults = join(tmp, 'defaults');
      const ok2 = await playwright(
        ['-g', '\\(a\\)'], { RICOCHET_FLEET_OUT: defaults, RICOCHET_FLEET_SILENCE_MS: '4000', RICOCHET_FLEET_KEEPALIVE_MS: '1000', RICOCHET_FLEET_RECONNECT_DEADLINE_MS: '0' },
        join(outDir, 'fleet-defaults.log'),
      );
      runs.push({ name: 'sdk defaults', ok: ok2, connOptions: { silenceTimeoutMs: 4000, keepaliveMs: 1000, webTransportReconnectDeadlineMs: 1500 }, figures: readFigures(defaults) });
    }
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }

  const lines = [];
  const say = (s = '') => {
    lines.push(s);
    console.log(s);
  };
  say('\n### Resume after a relay dies (kill → first echo delivered again on every session it held)\n');
  say('| case (connection options) | transport | resumed | detected p50 / p99 | p50 | p99 | max | goal |');
  say('|---|---|---|---|---|---|---|---|');
  const alarms = [];
  for (const r of runs) {
    const o = `${r.name}: silence ${r.connOptions.silenceTimeoutMs} ms, keepalive ${r.connOptions.keepaliveMs} ms, WT resume deadline ${r.connOptions.webTransportReconnectDeadlineMs} ms`;
    for (const [key, what] of [['kill', 'relay process SIGKILLed'], ['kill-host', 'relay host silent, then SIGKILL']]) {
      const k = r.figures[key];
      for (const row of killRows(`${what} (${o})`, k)) say(row);
      if (k) alarms.push(`${what} (${r.name}): ${k.relayHeld} sessions on the dead relay, ${k.quiet.affected} of them quiet (a message every 2 s), ${k.falseAlarms} false alarms (reconnects on live relays), ${k.lostMessages} messages lost, ${k.reordered} reordered, ${k.closed.length} sessions closed`);
    }
  }
  if (alarms.length) say(`\n${alarms.map((a) => `- ${a}`).join('\n')}`);
  say(
    '\nThe goals are the issue\'s, set for a killed relay process (WebSocket sees the reset at once). A silent host sends no reset and no ICMP: every transport waits for silence detection, so those rows show what silenceTimeoutMs (and the SDK\'s quiet probes) cost.',
  );
  const roll = runs[0]?.figures.rolling;
  if (roll) {
    say('\n### Rolling restart of every relay (SIGTERM, drain, exit, start, back in rotation)\n');
    say('| sessions | moves | resume downtime p50 / p99 / max | sessions lost | messages lost | duplicated | reordered | goal |');
    say('|---|---|---|---|---|---|---|---|');
    const ok = roll.sessionsLost === 0 && roll.lostMessages === 0 && roll.reordered === 0 && roll.duplicates === 0;
    say(
      `| ${roll.sessions} | ${roll.moves} | ${ms(roll.resumeDowntimeMs.p50)} / ${ms(roll.resumeDowntimeMs.p99)} / ${ms(roll.resumeDowntimeMs.max)} | ${roll.sessionsLost} | ${roll.lostMessages} of ${roll.sent} | ${roll.duplicates} | ${roll.reordered} | 0 lost, 0 reordered: ${met(ok)} |`,
    );
    say(`\nPer relay: ${roll.steps.map((s) => `relay ${s.relay} held ${s.held}, drained in ${s.drainedMs} ms, back in rotation after ${s.backInRotationMs} ms`).join('; ')}.`);
  }
  const games = [runs[0]?.figures['game-restart'], runs[0]?.figures['game-crash']].filter(Boolean);
  if (games.length) {
    say('\n### The game server restarts: every session ends with a clear reason\n');
    say('| game server | sessions | ended | time to close p50 / p99 / max | reasons |');
    say('|---|---|---|---|---|');
    for (const g of games)
      say(
        `| ${g.signal === 'SIGTERM' ? 'SIGTERM, restarted' : 'SIGKILL (crash), restarted'} | ${g.sessions} | ${g.ended} | ${ms(g.timeToCloseMs.p50)} / ${ms(g.timeToCloseMs.p99)} / ${ms(g.timeToCloseMs.max)} | ${Object.entries(g.byReason)
          .map(([k, n]) => `${n}× ${k}`)
          .join('; ')} |`,
      );
  }
  const failed = runs.filter((r) => !r.ok).map((r) => r.name);
  if (failed.length) say(`\nSpec failures in run(s): ${failed.join(', ')} (figures above are from the cases that finished; see ${outDir}/fleet-*.log).`);
  mkdirSync(outDir, { recursive: true });
  writeFileSync(join(outDir, 'fleet.json'), JSON.stringify({ date: new Date().toISOString(), goals: { resumeP99Ms: GOALS, rollingLostSessions: 0 }, runs }, null, 1));
  writeFileSync(join(outDir, 'fleet.md'), `${lines.join('\n')}\n`);
  console.log(`\nwritten: ${join(outDir, 'fleet.json')}, ${join(outDir, 'fleet.md')}`);
  return { runs, failed };
}
