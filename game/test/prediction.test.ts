import { expect, test } from 'vitest';
import { Predictor, seqNewer } from '../src/prediction.js';

// A one-dimensional world: the state is x, an input moves it by dx.
const predictor = (x = 500) => new Predictor<number, number>({ step: (s, dx) => s + dx, initial: x });

test('an input moves the local state at once, before the server answers', () => {
  const p = predictor();
  p.input(4);
  expect(p.state).toBe(504);
});

test('each input returned to send repeats the inputs before it, newest first', () => {
  const p = predictor();
  for (let i = 0; i < 5; i++) p.input(i);
  const m = p.input(5);
  expect(m.seq).toBe(6);
  expect(m.inputs).toEqual([5, 4, 3, 2]);
});

test('reconciling replays only the inputs the server has not applied', () => {
  const p = predictor();
  for (let i = 0; i < 5; i++) p.input(4); // predicted 520
  // The server applied inputs 1..3 (512); 4 and 5 are replayed on top.
  p.reconcile(512, 3);
  expect(p.state).toBe(520);
  expect(p.unacknowledged).toBe(2);
  expect(p.corrections).toBe(0);
});

test('a server state that disagrees wins and counts as a correction', () => {
  const p = predictor();
  p.input(4);
  p.input(-4);
  p.reconcile(600, 1);
  expect(p.state).toBe(596);
  expect(p.corrections).toBe(1);
});

test('equals decides what counts as a correction', () => {
  const p = new Predictor<number, { x: number }>({ step: (s, dx) => ({ x: s.x + dx }), initial: { x: 0 }, equals: (a, b) => Math.abs(a.x - b.x) < 0.5 });
  p.input(1);
  p.reconcile({ x: 1.25 }, 1);
  expect(p.corrections).toBe(0);
  p.reconcile({ x: 3 }, 1);
  expect(p.corrections).toBe(1);
});

test('unacknowledged inputs are bounded', () => {
  const p = new Predictor<number, number>({ step: (s, dx) => s + dx, initial: 0, maxPending: 10, redundancy: 2 });
  for (let i = 0; i < 100; i++) expect(p.input(1).inputs.length).toBeLessThanOrEqual(2);
  expect(p.unacknowledged).toBe(10);
});

test('sequence numbers wrap at 16 bits and compare across the wrap', () => {
  const p = predictor(0);
  let seq = 0;
  for (let i = 0; i < 65537; i++) seq = p.input(0).seq;
  expect(seq).toBe(1);
  expect(seqNewer(1, 65535)).toBe(true);
  expect(seqNewer(65535, 1)).toBe(false);
  expect(seqNewer(7, 7)).toBe(false);
});
