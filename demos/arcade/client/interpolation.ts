// Interpolation for the other players: snapshots are placed on the server's
// tick timeline, and the view is drawn a little in the past (between two
// received snapshots) so motion stays smooth through jitter and loss.
import type { BulletState, PlayerState } from '../protocol/index.js';

interface Snapshot {
  tick: number;
  players: Map<number, PlayerState>;
  bullets: BulletState[];
}

const MS_PER_TICK = 1000 / 60;

function lerpAngle(a: number, b: number, t: number): number {
  let d = b - a;
  while (d > Math.PI) d -= 2 * Math.PI;
  while (d < -Math.PI) d += 2 * Math.PI;
  return a + d * t;
}

export class Interpolator {
  private buffer: Snapshot[] = [];
  /** Estimated server tick minus local time in ticks. */
  private offset: number | null = null;

  /** How far behind the newest estimate the view is drawn, ticks (100 ms). */
  constructor(private readonly delayTicks = 6) {}

  get newestTick(): number {
    return this.buffer.at(-1)?.tick ?? -1;
  }

  push(tick: number, players: PlayerState[], bullets: BulletState[], nowMs: number): void {
    if (tick <= this.newestTick) return; // late or duplicate: older than what we have
    this.buffer.push({ tick, players: new Map(players.map((p) => [p.id, p])), bullets });
    if (this.buffer.length > 64) this.buffer.shift();
    const sample = tick - nowMs / MS_PER_TICK;
    // Follow early arrivals at once, late ones slowly: the least-delayed
    // snapshots mark the timeline, jitter only delays.
    this.offset = this.offset === null || sample > this.offset ? sample : this.offset + (sample - this.offset) * 0.02;
  }

  /** Other players and bullets as of the render time. */
  view(nowMs: number): { players: PlayerState[]; bullets: BulletState[] } {
    if (this.buffer.length === 0 || this.offset === null) return { players: [], bullets: [] };
    const at = nowMs / MS_PER_TICK + this.offset - this.delayTicks;
    let i = this.buffer.findIndex((s) => s.tick > at);
    if (i === -1) {
      const last = this.buffer.at(-1)!;
      return { players: [...last.players.values()], bullets: last.bullets };
    }
    if (i === 0) i = 1;
    const a = this.buffer[i - 1];
    const b = this.buffer[i];
    if (!a || !b) {
      const only = this.buffer[0]!;
      return { players: [...only.players.values()], bullets: only.bullets };
    }
    const t = Math.min(1, Math.max(0, (at - a.tick) / (b.tick - a.tick)));
    const players: PlayerState[] = [];
    for (const pb of b.players.values()) {
      const pa = a.players.get(pb.id);
      // Respawns teleport: no sliding across the map.
      if (!pa || !pa.alive || !pb.alive) players.push(pb);
      else players.push({ ...pb, x: pa.x + (pb.x - pa.x) * t, y: pa.y + (pb.y - pa.y) * t, aim: lerpAngle(pa.aim, pb.aim, t) });
    }
    return { players, bullets: t < 0.5 ? a.bullets : b.bullets };
  }
}
