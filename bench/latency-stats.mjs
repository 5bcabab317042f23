// The arithmetic and the table of S6's latency run (bench/latency.mjs): which
// ramp step a path kept up with, the latency a path adds over the UDP floor,
// the goals. Pure functions, tested by latency-stats.test.mjs.

/**
 * The issue's goals for S6 (bench/SCENARIOS.md): what the relay may add at
 * half load, what a relay CPU-second forwards over WebTransport, and
 * WebSocket holding its figure, read as the relay's datagrams per CPU-second
 * against the plain `ws` echo's in the same run, no worse than in S6's
 * reference run (145 k against 149 k, bench/reference/players.md).
 */
export const GOALS = { addedP99Us: 1000, wtDatagramsPerCpuSecond: 150_000, wsVsEcho: 0.97 };

/** A ramp step kept up: ≤ 1 % lost, median round trip ≤ `maxP50Us` (no queue building), and the pacer sent on time. */
export function keptUp(step, seconds, maxP50Us = 5000) {
  return step.received >= step.sent * 0.99 && step.rttUs.p50 <= maxP50Us && step.sendSecs <= seconds * 1.05 + 0.05;
}

/**
 * The saturation a ramp found: the highest step (rates ascending) that kept up
 * before the first that did not (`failedAt`, null when every step kept up, so
 * saturation is at least `rate`).
 */
export function saturation(steps, seconds, maxP50Us) {
  let rate = 0;
  let failedAt = null;
  for (const s of steps) {
    if (!keptUp(s, seconds, maxP50Us)) {
      failedAt = s.rate;
      break;
    }
    rate = s.rate;
  }
  return { rate, failedAt };
}

const KEYS = ['p50', 'p99', 'max'];

/** What a path adds over the floor, per direction: the difference of each percentile (µs, 0.1 µs). */
export function added(path, floor) {
  const d = (a, b) => Object.fromEntries(KEYS.map((k) => [k, Math.round((a[k] - b[k]) * 10) / 10]));
  return { up: d(path.upUs, floor.upUs), down: d(path.downUs, floor.downUs) };
}

/** The latency goal for one path's added figures: p99 of both directions within GOALS.addedP99Us. */
export function latencyGoalMet(add) {
  return add.up.p99 <= GOALS.addedP99Us && add.down.p99 <= GOALS.addedP99Us;
}

const f = (n) => (Number.isFinite(n) ? Math.round(n).toLocaleString('en') : '—');
const ms = (us) => (Number.isFinite(us) ? (us / 1000).toFixed(us < 10_000 ? 3 : 1) : '—');
const trio = (d) => `${ms(d.p50)} / ${ms(d.p99)} / ${ms(d.max)}`;
/** A share as a whole percentage; '—' when unknown. */
export const pc = (x) => (Number.isFinite(x) ? `${Math.round(x * 100)} %` : '—');

/**
 * The S6 latency table as markdown lines. `r.paths`: [{ name, key, server,
 * sat: { rate, failedAt }, load: step, floor: step, serverBusy, perCpuSecond,
 * lost }] in print order; the floor's own row has `floor: null`.
 */
export function latencyTable(r) {
  const out = [];
  out.push('| path | saturation (ramp) | load: half of it | one-way up p50 / p99 / max (ms) | one-way down p50 / p99 / max (ms) | UDP floor at that load, up / down p99 (ms) | **added up** p50 / p99 / max (ms) | **added down** p50 / p99 / max (ms) | goal: added p99 ≤ 1 ms both ways | server busy at load | client + backend core busy |');
  out.push('|---|---|---|---|---|---|---|---|---|---|---|');
  for (const p of r.paths) {
    const sat = `${f(p.sat.rate)}/s${p.sat.failedAt ? ` (not ${f(p.sat.failedAt)})` : ' (the ramp\'s top)'}`;
    const lost = p.load.sent - p.load.received;
    const load = `${f(p.load.rate)}/s each way${lost ? `, ${f(lost)} lost` : ''}`;
    if (!p.floor) {
      out.push(`| ${p.name} | ${sat} | ${load} | ${trio(p.load.upUs)} | ${trio(p.load.downUs)} | (this row) | 0 (the floor) | 0 (the floor) | — | ${pc(p.serverBusy)} | ${pc(p.load.clientBusy)} |`);
      continue;
    }
    const add = added(p.load, p.floor);
    const goal = p.goal ? `${latencyGoalMet(add) ? '**met**' : '**not met**'}` : 'reference';
    out.push(
      `| ${p.name} | ${sat} | ${load} | ${trio(p.load.upUs)} | ${trio(p.load.downUs)} | ${ms(p.floor.upUs.p99)} / ${ms(p.floor.downUs.p99)} | ${trio(add.up)} | ${trio(add.down)} | ${goal} | ${pc(p.serverBusy)} | ${pc(p.load.clientBusy)} |`,
    );
  }
  return out;
}

/**
 * The WebSocket relay's datagrams per CPU-second over the `ws` echo's at the
 * same ramp step (the relay's top one): the cost per datagram depends on the
 * rate, so both are taken at one rate. NaN when either is missing.
 */
export function wsVsEcho(r) {
  const ws = r.paths.find((p) => p.key === 'ws');
  const echo = r.paths.find((p) => p.key === 'wsEcho')?.ramp?.find((s) => s.rate === ws?.sat.rate);
  return ws && echo ? ws.topPerCpuSecond / echo.perCpuSecond : NaN;
}

/** The forwarding-cost table of the same run, with its goals: datagrams (both directions) per server CPU-second at each ramp's top step. */
export function costTable(r) {
  const by = Object.fromEntries(r.paths.map((p) => [p.key, p]));
  const ratio = wsVsEcho(r);
  const goal = {
    wtNative: (p) => `≥ ${f(GOALS.wtDatagramsPerCpuSecond)}: ${p.topPerCpuSecond >= GOALS.wtDatagramsPerCpuSecond ? '**met**' : '**not met**'}`,
    wtJs: () => 'reference (the JS path)',
    ws: (p) => `holds its figure, relay / \`ws\` echo at ${f(p.sat.rate)}/s ≥ ${GOALS.wsVsEcho}×: ${Number.isFinite(ratio) ? `${ratio.toFixed(2)}×, ${ratio >= GOALS.wsVsEcho ? '**met**' : '**not met**'}` : '—'}`,
    wsEcho: () => 'baseline',
    floor: () => '— (the backend\'s CPU)',
  };
  const out = ['| path | datagrams per server CPU-second, both directions | at (the ramp\'s top step that kept up) | goal |', '|---|---|---|---|'];
  for (const p of r.paths) out.push(`| ${p.name} | ${f(p.topPerCpuSecond)} | ${f(p.sat.rate)}/s each way, server ${pc(p.topBusy)} busy | ${goal[p.key]?.(p) ?? '—'} |`);
  return out;
}
