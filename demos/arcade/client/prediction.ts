// Client-side prediction with reconciliation for the local player: every
// input is applied at once and kept until the server's snapshot says it
// was applied (`ack`); then the server's position is taken and the inputs
// it has not seen yet are replayed on top.
import { MAX_INPUT_FRAMES, movePlayer, type InputFrame, type Wall } from '../protocol/index.js';

interface Pending {
  seq: number;
  frame: InputFrame;
}

/** `a` is newer than `b` in wrapping u16 sequence space. */
export function seqNewer(a: number, b: number): boolean {
  const d = (a - b) & 0xffff;
  return d !== 0 && d < 0x8000;
}

export class Predictor {
  x = 0;
  y = 0;
  alive = true;
  private seq = 0;
  private pending: Pending[] = [];
  /** The last MAX_INPUT_FRAMES inputs, newest first, for redundancy. */
  private recent: InputFrame[] = [];
  /** Replays that ended somewhere other than the prediction had (px moved). */
  corrections = 0;

  constructor(
    private readonly walls: readonly Wall[],
    private readonly width: number,
    private readonly height: number,
  ) {}

  /** Applies one local input; returns the input message's fields to send. */
  step(frame: InputFrame): { seq: number; frames: InputFrame[] } {
    this.seq = (this.seq + 1) & 0xffff;
    this.pending.push({ seq: this.seq, frame });
    if (this.pending.length > 240) this.pending.shift(); // 4 s unacknowledged: the server has dropped them
    this.recent.unshift(frame);
    this.recent.length = Math.min(this.recent.length, MAX_INPUT_FRAMES);
    if (this.alive) [this.x, this.y] = movePlayer(this.x, this.y, frame.keys, this.walls, this.width, this.height);
    return { seq: this.seq, frames: [...this.recent] };
  }

  /** Takes the server's state for this player as of input `ack`, replays the rest. */
  reconcile(server: { x: number; y: number; alive: boolean }, ack: number): void {
    this.pending = this.pending.filter((p) => seqNewer(p.seq, ack));
    const before = [this.x, this.y];
    this.alive = server.alive;
    this.x = server.x;
    this.y = server.y;
    if (this.alive) for (const p of this.pending) [this.x, this.y] = movePlayer(this.x, this.y, p.frame.keys, this.walls, this.width, this.height);
    if (Math.abs(before[0]! - this.x) + Math.abs(before[1]! - this.y) > 0.01) this.corrections++;
  }

  get unacknowledged(): number {
    return this.pending.length;
  }
}
