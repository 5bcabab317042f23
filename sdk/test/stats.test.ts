// The stats vector read by name (its layout generated from Rust), and the
// recent window: figures since the kept reading closest to a window ago.
import { describe, expect, it } from 'vitest';
import { decodeStats, StatsWindow } from '../src/stats.js';
import { CHANNEL_STATS, STATS } from '../src/wasm-codes.js';

type Fields = Partial<Record<keyof typeof STATS, number>>;

/** A stats vector as the core lays it out, with `f` set and two channels. */
function vector(f: Fields, channels: number[][] = []): number[] {
  const v = new Array<number>(Object.keys(STATS).length).fill(0);
  for (const [k, x] of Object.entries(f)) v[STATS[k as keyof typeof STATS]] = x;
  v[STATS.channels] = channels.length;
  for (const c of channels) v.push(...c);
  return v;
}

describe('decodeStats', () => {
  it('reads each figure from its position, times in ms, and the channels after them', () => {
    const s = decodeStats(vector({ rttUs: 12_500, rttVarUs: 500, minRttUs: 10_000, lossIn: 0.25, bytesOut: 1234, peerPacketsExpected: 40, tooFarAhead: 2 }, [
      [1, 2, 3, 4],
      [5, 6, 7, 8],
    ]));
    expect(s).toMatchObject({ rttMs: 12.5, rttVarMs: 0.5, minRttMs: 10, lossIn: 0.25, bytesOut: 1234, peerPacketsExpected: 40, tooFarAhead: 2, packetsIn: 0 });
    expect(s.channels).toEqual([
      { messagesSent: 1, messagesDelivered: 2, queuedMessages: 3, unackedMessages: 4 },
      { messagesSent: 5, messagesDelivered: 6, queuedMessages: 7, unackedMessages: 8 },
    ]);
    expect(Object.keys(CHANNEL_STATS)).toEqual(['messagesSent', 'messagesDelivered', 'queuedMessages', 'unackedMessages']);
  });

  it('every figure of the vector reaches a field (none read from a wrong position)', () => {
    // Distinct values at every position: each decoded number must be a distinct position's.
    const n = Object.keys(STATS).length - 1; // all but the channel count
    const v = [...Array(n).keys()].map((i) => (i + 1) * 1000);
    v.push(0);
    const s = decodeStats(v);
    const seen = Object.entries(s)
      .filter(([k]) => k !== 'channels')
      .map(([k, x]) => (k.endsWith('Ms') ? (x as number) * 1000 : (x as number)));
    expect(new Set(seen).size).toBe(n);
    expect(seen.every((x) => x >= 1000 && x <= n * 1000)).toBe(true);
  });
});

describe('StatsWindow', () => {
  const W = 2_000_000; // 2 s

  it('before a window has passed, recent covers the time since the start', () => {
    const w = new StatsWindow(W, 1_000_000);
    const r = w.read(1_500_000, decodeStats(vector({ bytesIn: 1000, packetsIn: 10 }))).recent;
    expect(r.windowMs).toBe(500);
    expect(r.bytesInPerSecond).toBe(2000);
    expect(r.packetsInPerSecond).toBe(20);
  });

  it('loss in the window only: once the network heals, recent loss falls to zero while the total remembers', () => {
    const w = new StatsWindow(W, 0);
    // 0–2 s: 100 expected, 10 missing (10 %); our 50 eliciting packets, 5 lost.
    const lossy = decodeStats(vector({ peerPacketsExpected: 100, lossIn: 0.1, elicitingPacketsOut: 50, packetsLost: 5 }));
    const first = w.read(2_000_000, lossy);
    expect(first.recent.lossIn).toBeCloseTo(0.1);
    expect(first.recent.lossOut).toBeCloseTo(0.1);
    // 2–4 s: 100 more expected, none missing; 50 more sent, none lost.
    const healed = decodeStats(vector({ peerPacketsExpected: 200, lossIn: 0.05, elicitingPacketsOut: 100, packetsLost: 5 }));
    const second = w.read(4_000_000, healed);
    expect(second.lossIn).toBe(0.05);
    expect(second.recent.windowMs).toBe(2000);
    expect(second.recent.lossIn).toBeCloseTo(0);
    expect(second.recent.lossOut).toBe(0);
  });

  it('fractions stay within 0..1 and a span with nothing expected reads as no loss', () => {
    const w = new StatsWindow(W, 0);
    const s = w.read(0, decodeStats(vector({ lossIn: 0.5 })));
    expect(s.recent.lossIn).toBe(0);
    expect(s.recent.bytesInPerSecond).toBe(0); // no time has passed
  });

  it('keeps few readings however often it is read', () => {
    const w = new StatsWindow(W, 0);
    for (let t = 1; t <= 10_000; t++) w.read(t * 1000, decodeStats(vector({ bytesIn: t })));
    const readings = (w as unknown as { readings: unknown[] }).readings;
    expect(readings.length).toBeLessThanOrEqual(16);
    const r = w.read(10_001_000, decodeStats(vector({ bytesIn: 10_001 }))).recent;
    expect(r.windowMs).toBeGreaterThanOrEqual(2000);
    expect(r.windowMs).toBeLessThanOrEqual(2000 + 2000 / 8 + 1);
  });
});
