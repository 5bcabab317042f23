import { expect, test } from 'vitest';
import { KEY_RIGHT, KEY_UP, type Message, type PlayerState } from '../protocol/index.js';
import { GameState, lerpRoom, predictLocal } from './game.js';

const welcome: Message = { type: 'welcome', you: 2, room: 4, tickHz: 60, width: 1600, height: 900, walls: [] };
const snapshot = (tick: number, ack: number, meX: number): Message => ({
  type: 'snapshot',
  tick,
  ack,
  players: [
    { id: 2, x: meX, y: 100, aim: 0, hp: 3, alive: true },
    { id: 5, x: 700, y: 300, aim: 0, hp: 2, alive: true },
  ],
  bullets: [],
});

function joined(): GameState {
  let now = 0;
  const g = new GameState(() => (now += 16));
  g.apply(welcome);
  g.apply({ type: 'playerJoined', id: 2, name: 'me', kills: 0, deaths: 0 });
  g.apply({ type: 'playerJoined', id: 5, name: 'eve', kills: 7, deaths: 1 });
  return g;
}

test('the welcome sets who we are, the room and the map, and starts prediction', () => {
  const g = new GameState();
  expect(g.ready).toBe(false);
  g.apply(welcome);
  expect([g.me, g.room, g.ready]).toEqual([2, 4, true]);
});

test('a kill updates both players’ scores and the feed', () => {
  const g = joined();
  g.apply({ type: 'kill', killer: 5, victim: 2, killerKills: 8, victimDeaths: 1 });
  expect(g.roster.get(5)!.kills).toBe(8);
  expect(g.roster.get(2)!.deaths).toBe(1);
  expect(g.feed.at(-1)!.text).toBe('eve ✦ me');
});

test('a snapshot places the local player where the server says, others go to interpolation', () => {
  const g = joined();
  g.apply(snapshot(10, 0, 123));
  expect(g.predictor!.state).toEqual({ x: 123, y: 100, alive: true });
  expect(g.others.newestTick).toBe(10);
});

test('a snapshot older than the newest is counted and ignored', () => {
  const g = joined();
  g.apply(snapshot(10, 0, 123));
  g.apply(snapshot(9, 0, 999));
  expect(g.staleSnapshots).toBe(1);
  expect(g.predictor!.state.x).toBe(123);
});

test('chat lines carry the sender’s name; a player who leaves is removed', () => {
  const g = joined();
  g.apply({ type: 'chatFrom', from: 5, text: 'gg' });
  expect(g.chat).toEqual([{ from: 'eve', text: 'gg' }]);
  g.apply({ type: 'playerLeft', id: 5 });
  expect(g.roster.has(5)).toBe(false);
  expect(g.feed.at(-1)!.text).toBe('eve left');
});

// The arcade's prediction and interpolation on @ricochet/game (whose own tests cover the buffers).
const right = { keys: KEY_RIGHT, fire: false, aim: 0 };
const open = () => {
  const p = predictLocal([], 1600, 900);
  p.state = { x: 500, y: 500, alive: true };
  return p;
};

test('an input moves the local player at once with the server’s movement', () => {
  const p = open();
  p.input(right);
  expect(p.state).toEqual({ x: 504, y: 500, alive: true });
});

test('each input message repeats the three inputs before it, newest first', () => {
  const g = joined();
  for (let i = 0; i < 5; i++) g.input({ ...right, aim: i });
  const m = g.input({ ...right, aim: 5 });
  expect(m).toMatchObject({ type: 'input', seq: 6 });
  expect(m?.type === 'input' && m.frames.map((f) => f.aim)).toEqual([5, 4, 3, 2]);
});

test('reconciling replays the unacknowledged inputs with the server’s movement', () => {
  const p = open();
  p.input(right);
  p.input({ keys: KEY_UP, fire: false, aim: 0 });
  p.reconcile({ x: 600, y: 300, alive: true }, 1);
  expect(p.state).toEqual({ x: 600, y: 296, alive: true });
  expect(p.corrections).toBe(1);
});

test('a dead player is not moved by inputs', () => {
  const p = open();
  p.reconcile({ x: 500, y: 500, alive: false }, 0);
  p.input(right);
  expect(p.state).toEqual({ x: 500, y: 500, alive: false });
});

test('a respawn jumps instead of sliding across the arena; others slide', () => {
  const at = (x: number, alive = true): PlayerState => ({ id: 1, x, y: 100, aim: 0, hp: 3, alive });
  expect(lerpRoom({ players: [at(0, false)], bullets: [] }, { players: [at(900)], bullets: [] }, 0.5).players[0]!.x).toBe(900);
  expect(lerpRoom({ players: [at(0)], bullets: [] }, { players: [at(60)], bullets: [] }, 0.5).players[0]!.x).toBe(30);
});

test('the others are drawn 6 ticks behind the server', () => {
  let now = 0;
  const g = new GameState(() => now);
  g.apply(welcome);
  now = 100 * (1000 / 60);
  g.apply(snapshot(100, 0, 0));
  now = 106 * (1000 / 60);
  g.apply({ ...snapshot(106, 0, 0), players: [{ id: 5, x: 760, y: 300, aim: 0, hp: 2, alive: true }] } as Message);
  expect(g.view(109 * (1000 / 60)).players[0]!.x).toBeCloseTo(730, 6);
  expect(new GameState().view(0)).toEqual({ players: [], bullets: [] });
});
