// The typed emitter on its own: listeners, once/off, and events held for the
// first listener (in order, after the call that attached it, bounded).
import { describe, expect, it } from 'vitest';
import { Emitter } from '../src/emitter.js';

interface Events {
  tick: number;
  note: string;
}

class Probe extends Emitter<Events> {
  overflowed = 0;
  fire<K extends keyof Events>(type: K, e: Events[K]): void {
    this.emit(type, e);
  }
  hold(limit: number): void {
    this.holdUnheard('tick', limit, () => this.overflowed++);
  }
}

const tick = () => new Promise<void>((r) => queueMicrotask(r));

describe('Emitter', () => {
  it('calls every listener in order; off and the returned function remove one; once runs once', () => {
    const p = new Probe();
    const got: string[] = [];
    const offA = p.on('tick', (n) => got.push(`a${n}`));
    const b = (n: number) => got.push(`b${n}`);
    p.on('tick', b);
    p.once('tick', (n) => got.push(`once${n}`));
    p.fire('tick', 1);
    p.fire('tick', 2);
    offA();
    p.off('tick', b);
    p.fire('tick', 3);
    expect(got).toEqual(['a1', 'b1', 'once1', 'a2', 'b2']);
  });

  it('a listener removed by another during an emit still gets that event (the list is copied)', () => {
    const p = new Probe();
    const got: string[] = [];
    let offB = () => {};
    p.on('note', (s) => {
      got.push(`a:${s}`);
      offB();
    });
    offB = p.on('note', (s) => got.push(`b:${s}`));
    p.fire('note', 'x');
    p.fire('note', 'y');
    expect(got).toEqual(['a:x', 'b:x', 'a:y']);
  });

  it('without holding, events nobody listens to are dropped', () => {
    const p = new Probe();
    p.fire('tick', 1);
    const got: number[] = [];
    p.on('tick', (n) => got.push(n));
    p.fire('tick', 2);
    expect(got).toEqual([2]);
  });

  it('held events reach the first listener after the call that attached it, then newer ones, in order', async () => {
    const p = new Probe();
    p.hold(10);
    p.fire('tick', 1);
    p.fire('tick', 2);
    const got: number[] = [];
    p.on('tick', (n) => got.push(n));
    expect(got).toEqual([]); // not during on()
    p.fire('tick', 3); // queues behind the held ones
    await tick();
    expect(got).toEqual([1, 2, 3]);
    p.fire('tick', 4);
    expect(got).toEqual([1, 2, 3, 4]); // delivered at once from then on
  });

  it('past the limit the overflow runs once and nothing more is held', async () => {
    const p = new Probe();
    p.hold(2);
    for (let i = 0; i < 5; i++) p.fire('tick', i);
    expect(p.overflowed).toBe(1);
    const got: number[] = [];
    p.on('tick', (n) => got.push(n));
    await tick();
    expect(got).toEqual([]);
    p.fire('tick', 9);
    expect(got).toEqual([9]);
  });
});
