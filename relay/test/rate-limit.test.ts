import { describe, expect, it } from 'vitest';
import { TokenBucket } from '../src/rate-limit.js';

describe('TokenBucket', () => {
  it('allows the burst, then the rate', () => {
    const b = new TokenBucket(100, 10, 0);
    let ok = 0;
    for (let i = 0; i < 20; i++) if (b.take(1, 0)) ok++;
    expect(ok).toBe(10);
    expect(b.take(1, 5)).toBe(false); // 0.5 token after 5 ms
    expect(b.take(1, 10)).toBe(true); // 1 token after 10 ms
  });
});
