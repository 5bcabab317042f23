import { expect, test } from 'vitest';
import { KEY_RIGHT, KEY_UP } from '../protocol/index.js';
import { Predictor, seqNewer } from './prediction.js';

const open = () => {
  const p = new Predictor([], 1600, 900);
  p.x = 500;
  p.y = 500;
  return p;
};
const right = { keys: KEY_RIGHT, fire: false, aim: 0 };

test('an input moves the local player at once, before the server answers', () => {
  const p = open();
  p.step(right);
  expect([p.x, p.y]).toEqual([504, 500]);
});

test('each input message repeats the three inputs before it, newest first', () => {
  const p = open();
  for (let i = 0; i < 5; i++) p.step({ ...right, aim: i });
  const m = p.step({ ...right, aim: 5 });
  expect(m.seq).toBe(6);
  expect(m.frames.map((f) => f.aim)).toEqual([5, 4, 3, 2]);
});

test('reconciling replays only the inputs the server has not applied', () => {
  const p = open();
  for (let i = 0; i < 5; i++) p.step(right); // predicted x = 520
  // The server applied inputs 1..3 (x = 512); 4 and 5 are replayed on top.
  p.reconcile({ x: 512, y: 500, alive: true }, 3);
  expect([p.x, p.y]).toEqual([520, 500]);
  expect(p.unacknowledged).toBe(2);
  expect(p.corrections).toBe(0);
});

test('a server position that disagrees wins and counts as a correction', () => {
  const p = open();
  p.step(right);
  p.step({ keys: KEY_UP, fire: false, aim: 0 });
  p.reconcile({ x: 600, y: 300, alive: true }, 1);
  expect([p.x, p.y]).toEqual([600, 296]);
  expect(p.corrections).toBe(1);
});

test('a dead player is not moved by inputs', () => {
  const p = open();
  p.reconcile({ x: 500, y: 500, alive: false }, 0);
  p.step(right);
  expect([p.x, p.y]).toEqual([500, 500]);
});

test('sequence numbers compare across the u16 wrap', () => {
  expect(seqNewer(1, 65535)).toBe(true);
  expect(seqNewer(65535, 1)).toBe(false);
  expect(seqNewer(7, 7)).toBe(false);
});
