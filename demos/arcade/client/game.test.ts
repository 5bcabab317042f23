import { expect, test } from 'vitest';
import type { Message } from '../protocol/index.js';
import { GameState } from './game.js';

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
  expect([g.predictor!.x, g.predictor!.y]).toEqual([123, 100]);
  expect(g.others.newestTick).toBe(10);
});

test('a snapshot older than the newest is counted and ignored', () => {
  const g = joined();
  g.apply(snapshot(10, 0, 123));
  g.apply(snapshot(9, 0, 999));
  expect(g.staleSnapshots).toBe(1);
  expect(g.predictor!.x).toBe(123);
});

test('chat lines carry the sender’s name; a player who leaves is removed', () => {
  const g = joined();
  g.apply({ type: 'chatFrom', from: 5, text: 'gg' });
  expect(g.chat).toEqual([{ from: 'eve', text: 'gg' }]);
  g.apply({ type: 'playerLeft', id: 5 });
  expect(g.roster.has(5)).toBe(false);
  expect(g.feed.at(-1)!.text).toBe('eve left');
});
