import { expect, test } from 'vitest';
import { SnapshotBuffer, lerp, lerpAngle, lerpById } from '../src/interpolation.js';

const TICK = 1000 / 60;
interface Snap {
  x: number;
}
const buffer = (delayTicks = 6) => new SnapshotBuffer<Snap>({ lerp: (a, b, t) => ({ x: lerp(a.x, b.x, t) }), delayTicks });

test('the view is drawn between the two snapshots around the render time', () => {
  const b = buffer(6);
  b.push(100, { x: 0 }, 100 * TICK);
  b.push(106, { x: 60 }, 106 * TICK);
  // Render time is 6 ticks behind the newest estimate: tick 103 at local tick 109.
  expect(b.renderTick(109 * TICK)).toBeCloseTo(103, 9);
  expect(b.sample(109 * TICK)!.x).toBeCloseTo(30, 6);
});

test('a snapshot not newer than the newest is refused', () => {
  const b = buffer(0);
  expect(b.push(10, { x: 10 }, 10 * TICK)).toBe(true);
  expect(b.push(9, { x: 999 }, 10 * TICK)).toBe(false);
  expect(b.push(10, { x: 999 }, 10 * TICK)).toBe(false);
  expect(b.newestTick).toBe(10);
  expect(b.sample(10 * TICK)!.x).toBe(10);
});

test('without newer snapshots the view holds the newest one', () => {
  const b = buffer(6);
  b.push(100, { x: 0 }, 100 * TICK);
  b.push(102, { x: 8 }, 102 * TICK);
  expect(b.sample(200 * TICK)!.x).toBe(8);
});

test('before the oldest snapshot the view is the oldest, and nothing before the first', () => {
  const b = buffer(6);
  expect(b.sample(0)).toBeUndefined();
  b.push(100, { x: 5 }, 100 * TICK);
  b.push(101, { x: 6 }, 101 * TICK);
  expect(b.sample(101 * TICK)!.x).toBe(5);
});

test('late snapshots do not drag the timeline; early ones move it at once', () => {
  const b = buffer(0);
  b.push(100, { x: 0 }, 100 * TICK);
  b.push(101, { x: 1 }, 111 * TICK); // 10 ticks late
  expect(b.renderTick(111 * TICK)).toBeGreaterThan(110.5);
  b.push(130, { x: 2 }, 120 * TICK); // 10 ticks early
  expect(b.renderTick(120 * TICK)).toBeCloseTo(130, 9);
});

test('the buffer keeps at most its capacity', () => {
  const b = new SnapshotBuffer<Snap>({ lerp: (a) => a, capacity: 4 });
  for (let t = 1; t <= 10; t++) b.push(t, { x: t }, t * TICK);
  expect(b.size).toBe(4);
  b.clear();
  expect(b.size).toBe(0);
  expect(b.newestTick).toBe(-1);
});

test('angles take the short way round', () => {
  expect(lerpAngle(0.1, 2 * Math.PI - 0.1, 0.5)).toBeCloseTo(0, 9);
  expect(lerpAngle(0, Math.PI / 2, 0.5)).toBeCloseTo(Math.PI / 4, 9);
});

test('entities are matched by id; new ones appear as they are, gone ones vanish', () => {
  const a = [{ id: 1, x: 0 }, { id: 2, x: 50 }];
  const b = [{ id: 1, x: 10 }, { id: 3, x: 90 }];
  const out = lerpById(a, b, 0.5, (e) => e.id, (p, q, t) => ({ ...q, x: lerp(p.x, q.x, t) }));
  expect(out).toEqual([{ id: 1, x: 5 }, { id: 3, x: 90 }]);
});
