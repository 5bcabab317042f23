import { readFileSync } from 'node:fs';
import { expect, test } from 'vitest';
import type { Wall } from './messages.js';
import { movePlayer } from './sim.js';

// Trajectories computed by the server's Rust movement (server/src/game/sim.rs).
const v: { width: number; height: number; walls: Wall[]; trajectories: { name: string; start: [number, number]; keys: number[]; positions: [number, number][] }[] } =
  JSON.parse(readFileSync(new URL('./movement.json', import.meta.url), 'utf8'));

for (const t of v.trajectories) {
  test(`prediction reproduces the server's "${t.name}" step for step`, () => {
    let [x, y] = t.start;
    const got = t.keys.map((k) => ([x, y] = movePlayer(x, y, k, v.walls, v.width, v.height)));
    expect(got).toEqual(t.positions);
  });
}
