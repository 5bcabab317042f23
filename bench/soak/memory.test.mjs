// The "memory flat" rule must pass a noisy flat series and catch a leak.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MIN_SAMPLES, judgeFlat } from './memory.mjs';

const MiB = 1 << 20;
const rule = { warmupSeconds: 20, relative: 0.1, absoluteBytes: 0.5 * MiB };
/** One sample every 5 s for `seconds`, value from `f(t)`. */
const series = (seconds, f) => Array.from({ length: seconds / 5 + 1 }, (_, i) => ({ t: i * 5, v: f(i * 5, i) }));

test('a flat series with GC-timing noise and one outlier is flat', () => {
  const v = judgeFlat(series(120, (t, i) => 2 * MiB + (i % 3) * 20_000 + (i === 20 ? 3 * MiB : 0)), rule);
  assert.equal(v.flat, true);
  assert.ok(v.growth < 0.1 * MiB);
});

test('growth during warm-up does not count', () => {
  const v = judgeFlat(series(120, (t) => (t < 20 ? t * 0.2 * MiB : 5 * MiB)), rule);
  assert.equal(v.flat, true);
});

test('a steady leak of 10 KiB/s is caught in two minutes', () => {
  const v = judgeFlat(series(120, (t) => 2 * MiB + t * 10 * 1024), rule);
  assert.equal(v.flat, false);
  assert.ok(v.growth > v.limit);
  assert.ok(Math.abs(v.slopePerMinute - 600 * 1024) < 1024);
});

test('a small leak over a large base passes only within the relative tolerance', () => {
  const base = 80 * MiB;
  assert.equal(judgeFlat(series(120, (t) => base + t * 50_000), rule).flat, true); // 3 MiB growth < 8 MiB
  assert.equal(judgeFlat(series(600, (t) => base + t * 50_000), rule).flat, false); // 20 MiB growth > 8 MiB
});

test('too few samples after warm-up is not flat', () => {
  const v = judgeFlat(series(20 + 5 * (MIN_SAMPLES - 2), () => MiB), rule);
  assert.equal(v.flat, false);
  assert.match(v.why, /fewer than/);
});
