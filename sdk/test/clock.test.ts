import { describe, expect, it } from 'vitest';
import { VirtualClock } from '../src/clock.js';

describe('VirtualClock', () => {
  it('runs timers in time order, then insertion order, and honours cancel', () => {
    const c = new VirtualClock();
    const seen: string[] = [];
    c.at(300, () => seen.push('c'));
    c.at(100, () => seen.push('a'));
    const cancel = c.at(200, () => seen.push('x'));
    c.at(100, () => seen.push('b'));
    cancel();
    c.advance(250);
    expect(seen).toEqual(['a', 'b']);
    expect(c.now()).toBe(250);
    c.advance(100);
    expect(seen).toEqual(['a', 'b', 'c']);
  });

  it('timers scheduled by timers run within the same advance', () => {
    const c = new VirtualClock();
    let n = 0;
    const tick = () => {
      n++;
      if (n < 5) c.at(c.now() + 10, tick);
    };
    c.at(0, tick);
    c.advance(1000);
    expect(n).toBe(5);
  });
});
