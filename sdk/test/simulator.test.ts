import { describe, expect, it } from 'vitest';
import { NETWORK_PROFILES, SimLink } from '../src/simulator.js';

function blast(link: SimLink, n: number, everyUs = 1000): { arrivals: number[]; delivered: number } {
  const arrivals: number[] = [];
  let delivered = 0;
  for (let i = 0; i < n; i++) link.send(i * everyUs, new Uint8Array([i & 0xff]));
  for (let t = 0; t < n * everyUs + 1_000_000; t += 500) {
    for (let d = link.deliver(t); d; d = link.deliver(t)) {
      delivered++;
      arrivals.push(t);
    }
  }
  return { arrivals, delivered };
}

describe('SimLink', () => {
  it('drops about the configured share of datagrams, and counts it', () => {
    const link = SimLink.custom({ latencyMs: 10, loss: 0.1 }, 3);
    const { delivered } = blast(link, 20_000);
    expect(delivered / 20_000).toBeGreaterThan(0.88);
    expect(delivered / 20_000).toBeLessThan(0.92);
    const c = link.counters();
    expect(c.sent).toBe(20_000);
    expect(c.lost + c.delivered).toBe(20_000);
  });

  it('delays by the configured latency', () => {
    const link = SimLink.custom({ latencyMs: 25 }, 1);
    link.send(0, new Uint8Array([1]));
    expect(link.nextArrival()).toBe(25_000);
    expect(link.deliver(24_999)).toBeNull();
    expect(link.deliver(25_000)).toEqual(new Uint8Array([1]));
  });

  it('same seed, same losses', () => {
    const a = blast(SimLink.custom({ loss: 0.3, burstCorrelation: 0.5 }, 9), 2_000);
    const b = blast(SimLink.custom({ loss: 0.3, burstCorrelation: 0.5 }, 9), 2_000);
    expect(a).toEqual(b);
  });

  it('every named profile exists', () => {
    for (const name of NETWORK_PROFILES) expect(() => SimLink.fromProfile(name, true)).not.toThrow();
    expect(() => SimLink.fromProfile('nope' as never, true)).toThrowError(expect.objectContaining({ code: 'RICOCHET_ERR_INVALID_OPTIONS' }));
  });

  it('rejects out-of-range settings with the field name', () => {
    expect(() => SimLink.custom({ loss: 2 })).toThrowError(/loss/);
    expect(() => SimLink.custom({ latencyMs: -1 })).toThrowError(/latencyMs/);
  });

  it('settings change live', () => {
    const link = SimLink.custom({ loss: 0 }, 1);
    link.set({ loss: 1 });
    expect(blast(link, 100).delivered).toBe(0);
  });
});
