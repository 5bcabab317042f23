// node --test bench/latency-stats.test.mjs
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { added, costTable, keptUp, latencyGoalMet, latencyTable, saturation, wsVsEcho } from './latency-stats.mjs';

const d = (p50, p99, max) => ({ p50, p90: p50, p99, max });
const step = (rate, { received = rate, p50 = 200, sendSecs = 1.5 } = {}) => ({ rate, sent: rate, received, sendSecs, rttUs: d(p50, p50 * 2, p50 * 3), upUs: d(100, 400, 900), downUs: d(80, 300, 700) });

test('a step keeps up with ≤ 1 % lost, median round trip within the bound, and the pacer on time', () => {
  assert.equal(keptUp(step(1000), 1.5), true);
  assert.equal(keptUp(step(1000, { received: 990 }), 1.5), true);
  assert.equal(keptUp(step(1000, { received: 989 }), 1.5), false);
  assert.equal(keptUp(step(1000, { p50: 5001 }), 1.5), false);
  assert.equal(keptUp(step(1000, { p50: 5001 }), 1.5, 6000), true);
  assert.equal(keptUp(step(1000, { sendSecs: 1.7 }), 1.5), false);
});

test('saturation is the highest step before the first that failed, even if a later one passes', () => {
  const steps = [step(2000), step(4000), step(8000, { p50: 9000 }), step(16000)];
  assert.deepEqual(saturation(steps, 1.5), { rate: 4000, failedAt: 8000 });
  assert.deepEqual(saturation([step(2000), step(4000)], 1.5), { rate: 4000, failedAt: null });
  assert.deepEqual(saturation([step(2000, { received: 0 })], 1.5), { rate: 0, failedAt: 2000 });
});

test('added latency is the path minus the floor, percentile by percentile, per direction', () => {
  const path = { upUs: d(300, 1200, 5000), downUs: d(250, 900.04, 3000) };
  const floor = { upUs: d(20, 150, 800), downUs: d(10, 60, 700) };
  const a = added(path, floor);
  assert.deepEqual(a.up, { p50: 280, p99: 1050, max: 4200 });
  assert.deepEqual(a.down, { p50: 240, p99: 840, max: 2300 });
  assert.equal(latencyGoalMet(a), false); // up p99 1,050 µs
  assert.equal(latencyGoalMet({ up: { p99: 1000 }, down: { p99: 999 } }), true);
});

test('the WebSocket ratio compares relay and ws echo at the same rate; the tables carry each goal', () => {
  const row = (key, rate, perCpuSecond, extra = {}) => ({
    key,
    name: key,
    sat: { rate, failedAt: rate * 2 },
    ramp: [
      { rate: 16000, perCpuSecond: 100_000 },
      { rate, perCpuSecond },
    ],
    topPerCpuSecond: perCpuSecond,
    topBusy: 0.5,
    load: { ...step(rate / 2), clientBusy: 0.6 },
    serverBusy: 0.25,
    floor: { upUs: d(10, 50, 100), downUs: d(5, 40, 90) },
    ...extra,
  });
  const r = {
    paths: [
      row('wtNative', 32000, 200_000, { goal: true }),
      row('ws', 16000, 98_000),
      row('wsEcho', 128000, 400_000),
      row('floor', 128000, 800_000, { floor: null }),
    ],
  };
  assert.equal(wsVsEcho(r), 0.98);
  const cost = costTable(r).join('\n');
  assert.match(cost, /≥ 150,000: \*\*met\*\*/);
  assert.match(cost, /0\.98×, \*\*met\*\*/);
  const lat = latencyTable(r);
  assert.equal(lat.length, 2 + r.paths.length);
  // wtNative: up p99 400 − 50 = 350 µs, down 300 − 40 = 260 µs: met.
  assert.match(lat[2], /^\| wtNative \| 32,000\/s \(not 64,000\) \| 16,000\/s each way \|.*\| 0\.090 \/ 0\.350 \/ 0\.800 \| 0\.075 \/ 0\.260 \/ 0\.610 \| \*\*met\*\* \| 25 % \| 60 % \|$/);
  assert.match(lat[5], /\(this row\) \| 0 \(the floor\)/);
});
