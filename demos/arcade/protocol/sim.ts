// Player movement and wall collision: the same arithmetic as the server's
// server/src/game/sim.rs, so prediction replays land exactly where the
// server does. movement.json pins the two together.
import { KEY_DOWN, KEY_LEFT, KEY_RIGHT, KEY_UP, POSITION, type Wall } from './messages.js';

export const PLAYER_HALF = 14;
export const PLAYER_STEP = 4;
export const BULLET_RADIUS = 4;

function overlaps(x: number, y: number, w: Wall): boolean {
  return x + PLAYER_HALF > w.x && x - PLAYER_HALF < w.x + w.w && y + PLAYER_HALF > w.y && y - PLAYER_HALF < w.y + w.h;
}

const clamp = (v: number, lo: number, hi: number) => Math.min(Math.max(v, lo), hi);

/** One tick of movement: x, then y, each snapped to the grid, kept in the arena and out of walls. */
export function movePlayer(x: number, y: number, keys: number, walls: readonly Wall[], width: number, height: number): [number, number] {
  const dx = (keys & KEY_RIGHT ? 1 : 0) - (keys & KEY_LEFT ? 1 : 0);
  const dy = (keys & KEY_DOWN ? 1 : 0) - (keys & KEY_UP ? 1 : 0);
  const step = dx !== 0 && dy !== 0 ? PLAYER_STEP * Math.SQRT1_2 : PLAYER_STEP;
  let nx = x;
  if (dx !== 0) {
    nx = clamp(POSITION.snap(x + dx * step), PLAYER_HALF, width - PLAYER_HALF);
    for (const w of walls) if (overlaps(nx, y, w)) nx = dx > 0 ? w.x - PLAYER_HALF : w.x + w.w + PLAYER_HALF;
  }
  let ny = y;
  if (dy !== 0) {
    ny = clamp(POSITION.snap(y + dy * step), PLAYER_HALF, height - PLAYER_HALF);
    for (const w of walls) if (overlaps(nx, ny, w)) ny = dy > 0 ? w.y - PLAYER_HALF : w.y + w.h + PLAYER_HALF;
  }
  return [nx, ny];
}
