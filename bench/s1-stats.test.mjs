// node --test bench/s1-stats.test.mjs
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { GOALS, percentile, summarize } from './s1-stats.mjs';

test('percentile is nearest-rank: p99 of 1..1000 is 990, p99.9 is 999', () => {
  const v = Array.from({ length: 1000 }, (_, i) => i + 1);
  assert.equal(percentile(v, 0.99), 990);
  assert.equal(percentile(v, 0.999), 999);
  assert.equal(percentile(v, 0.5), 500);
  assert.equal(percentile([7], 0.99), 7);
});

test('summarize reports population mean and sd in ms from µs, unsorted input', () => {
  const s = summarize([14_000, 10_000, 12_000, 12_000]);
  assert.equal(s.n, 4);
  assert.equal(s.mean, 12);
  assert.ok(Math.abs(s.sd - Math.SQRT2) < 1e-12);
  assert.ok(Math.abs(s.meanPlusSd - (12 + Math.SQRT2)) < 1e-12);
  assert.equal(s.p50, 12);
  assert.equal(s.max, 14);
  assert.equal(summarize([]), null);
});

test("goals: bursty compares with half of KCP's p99; 5 % needs both latency and bytes", () => {
  const row = (p99, wirePerPayload = 1.2) => ({ stats: { p99, meanPlusSd: 12 }, wirePerPayload });
  assert.equal(GOALS.s1_bursty(row(40), { kcp: row(85) }).met, true);
  assert.equal(GOALS.s1_bursty(row(43), { kcp: row(85) }).met, false);
  assert.equal(GOALS.s1_5pct(row(24, 1.29)).met, true);
  assert.equal(GOALS.s1_5pct(row(24, 1.31)).met, false);
  assert.equal(GOALS.s1_5pct(row(26, 1.2)).met, false);
  assert.equal(GOALS.s1_1pct(row(99)).met, true);
});
