import { expect, test } from 'vitest';
import { Interpolator } from './interpolation.js';

const player = (x: number, alive = true) => ({ id: 1, x, y: 100, aim: 0, hp: 3, alive });
const TICK = 1000 / 60;

test('other players are drawn between the two snapshots around the render time', () => {
  const i = new Interpolator(6);
  i.push(100, [player(0)], [], 100 * TICK);
  i.push(106, [player(60)], [], 106 * TICK);
  // Render time is 6 ticks behind the newest estimate: tick 103 at local tick 109.
  expect(i.view(109 * TICK).players[0]!.x).toBeCloseTo(30, 6);
});

test('a snapshot older than the newest is ignored', () => {
  const i = new Interpolator(0);
  i.push(10, [player(10)], [], 10 * TICK);
  i.push(9, [player(999)], [], 10 * TICK);
  expect(i.newestTick).toBe(10);
  expect(i.view(10 * TICK).players[0]!.x).toBe(10);
});

test('a respawn jumps instead of sliding across the arena', () => {
  const i = new Interpolator(6);
  i.push(100, [player(0, false)], [], 100 * TICK);
  i.push(106, [player(900)], [], 106 * TICK);
  expect(i.view(109 * TICK).players[0]!.x).toBe(900);
});

test('without newer snapshots the view holds the newest one', () => {
  const i = new Interpolator(6);
  i.push(100, [player(0)], [], 100 * TICK);
  i.push(102, [player(8)], [], 102 * TICK);
  expect(i.view(200 * TICK).players[0]!.x).toBe(8);
});
