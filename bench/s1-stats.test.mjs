// node --test bench/s1-stats.test.mjs
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { GOALS, beatsKcp, cellTable, latencyTargetGoal, percentile, summarize } from './s1-stats.mjs';

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
  assert.equal(summarize([25_000, 25_001, 1_000, 40_000]).over25, 0.5, 'strictly later than 25 ms');
});

test("the latency-targeted row's goals (issue 16): 5 % at ≤ 2.0 B/B, bursty within 10 % of the bound", () => {
  const row = (p99, wirePerPayload) => ({ stats: { p99, over25: 0.0089 }, wirePerPayload });
  assert.equal(latencyTargetGoal('s1_5pct', row(23.4, 1.99)).met, true);
  assert.equal(latencyTargetGoal('s1_5pct', row(23.4, 2.19)).met, false);
  assert.equal(latencyTargetGoal('s1_5pct', row(25.1, 1.9)).met, false);
  assert.match(latencyTargetGoal('s1_5pct', row(23.4, 2.19)).text, /0\.89 % over 25 ms/);
  assert.equal(latencyTargetGoal('s1_bursty', row(24, 2.9)).met, true);
  assert.equal(latencyTargetGoal('s1_bursty', row(24, 3.99)).met, false);
  assert.equal(latencyTargetGoal('s1_1pct', row(12, 2.0)), null);
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

test('beating kcp-go: no slower at p50, p99 and p99.9 (0.1 ms is a tie) at no more than 1.5× its bytes', () => {
  const row = (p50, p99, p999, wirePerPayload) => ({ stats: { p50, p99, p999 }, wirePerPayload });
  const kcp = row(11.2, 50, 90, 1.4);
  assert.equal(beatsKcp(row(11.3, 43, 50, 1.8), { kcp }).met, true, 'a tie at the floor, faster in the tail');
  assert.equal(beatsKcp(row(11.4, 43, 50, 1.8), { kcp }).met, false, 'slower at p50');
  assert.equal(beatsKcp(row(11.2, 43, 91, 1.8), { kcp }).met, false, 'slower at p99.9');
  assert.equal(beatsKcp(row(11.2, 43, 50, 2.2), { kcp }).met, false, 'over 1.5× the bytes');
  assert.equal(beatsKcp(row(11.2, 43, 50, 1.8), {}), null, 'no kcp-go row');
});

test('the cell table checks kcp-go only on the default Ricochet row', () => {
  const row = (label, ricochet, p) => ({ label, ricochet, sent: 1, stats: { n: 1, mean: p, sd: 0, meanPlusSd: p, p50: p, p99: p, p999: p, max: p }, wirePerPayload: 1.3 });
  const md = cellTable({ name: 'rtt150_5pct' }, { ricochet: row('default', true, 10), ricochet_ll: row('ll', true, 20), kcp: row('kcp', false, 15) });
  const lines = md.split('\n');
  assert.match(lines[2], /kcp-go's, ≤ 1.5× its bytes: \*\*met\*\*/);
  assert.doesNotMatch(lines[3], /kcp-go/);
});
