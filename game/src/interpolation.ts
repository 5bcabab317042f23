// Snapshot interpolation: snapshots are placed on the server's tick
// timeline, and the view is drawn a little in the past (between two
// received snapshots) so motion stays smooth through jitter and loss.

/** Options of a {@link SnapshotBuffer}. */
export interface SnapshotBufferOptions<S> {
  /** The snapshot between `a` and `b` at `t` in [0, 1]. */
  lerp: (a: S, b: S, t: number) => S;
  /** How far behind the newest estimate of the server's tick the view is drawn, in ticks. Default 6 (100 ms at 60 Hz): two snapshots at 30 Hz, so one may be lost. */
  delayTicks?: number;
  /** Length of one server tick, ms. Default 1000 / 60. */
  msPerTick?: number;
  /** Snapshots kept; the oldest is dropped past this. Default 64. */
  capacity?: number;
}

interface Entry<S> {
  tick: number;
  snapshot: S;
}

/**
 * Buffers a server's snapshots and samples them at a render time behind
 * the newest, interpolating with the game's `lerp`. Time is passed in
 * (`nowMs`, any monotonic clock), so it runs the same in tests.
 */
export class SnapshotBuffer<S> {
  private readonly buffer: Entry<S>[] = [];
  /** Estimated server tick minus local time in ticks. */
  private offset: number | null = null;
  private readonly lerp: (a: S, b: S, t: number) => S;
  private readonly delayTicks: number;
  private readonly msPerTick: number;
  private readonly capacity: number;

  constructor(options: SnapshotBufferOptions<S>) {
    this.lerp = options.lerp;
    this.delayTicks = options.delayTicks ?? 6;
    this.msPerTick = options.msPerTick ?? 1000 / 60;
    this.capacity = options.capacity ?? 64;
    if (!(this.msPerTick > 0)) throw new RangeError('SnapshotBuffer: msPerTick must be positive');
    if (!Number.isInteger(this.capacity) || this.capacity < 2) throw new RangeError('SnapshotBuffer: capacity must be an integer ≥ 2');
  }

  /** The newest snapshot's tick, −1 before the first. */
  get newestTick(): number {
    return this.buffer.at(-1)?.tick ?? -1;
  }

  /** Snapshots held. */
  get size(): number {
    return this.buffer.length;
  }

  /** Adds the snapshot of server tick `tick`, received at `nowMs`. Returns false (and keeps nothing) for one not newer than the newest: late or duplicate. */
  push(tick: number, snapshot: S, nowMs: number): boolean {
    if (tick <= this.newestTick) return false;
    this.buffer.push({ tick, snapshot });
    if (this.buffer.length > this.capacity) this.buffer.shift();
    const sample = tick - nowMs / this.msPerTick;
    // Follow early arrivals at once, late ones slowly: the least-delayed
    // snapshots mark the timeline, jitter only delays.
    this.offset = this.offset === null || sample > this.offset ? sample : this.offset + (sample - this.offset) * 0.02;
    return true;
  }

  /** The server tick (fractional) drawn at `nowMs`, or null before the first snapshot. */
  renderTick(nowMs: number): number | null {
    return this.offset === null ? null : nowMs / this.msPerTick + this.offset - this.delayTicks;
  }

  /**
   * The view at `nowMs`: the two snapshots around the render tick
   * interpolated, the oldest before them, the newest after them (held, not
   * extrapolated); undefined before the first snapshot.
   */
  sample(nowMs: number): S | undefined {
    const at = this.renderTick(nowMs);
    if (at === null || this.buffer.length === 0) return undefined;
    const i = this.buffer.findIndex((e) => e.tick > at);
    if (i === -1) return this.buffer.at(-1)!.snapshot;
    if (i === 0) return this.buffer[0]!.snapshot;
    const a = this.buffer[i - 1]!;
    const b = this.buffer[i]!;
    return this.lerp(a.snapshot, b.snapshot, Math.min(1, Math.max(0, (at - a.tick) / (b.tick - a.tick))));
  }

  /** Forgets every snapshot and the timeline (a new room or a new server). */
  clear(): void {
    this.buffer.length = 0;
    this.offset = null;
  }
}

/** `a` to `b` at `t`. */
export function lerp(a: number, b: number, t: number): number {
  return a + (b - a) * t;
}

/** Angles in radians, the short way round. */
export function lerpAngle(a: number, b: number, t: number): number {
  let d = (b - a) % (2 * Math.PI);
  if (d > Math.PI) d -= 2 * Math.PI;
  if (d < -Math.PI) d += 2 * Math.PI;
  return a + d * t;
}

/**
 * Entities matched by `id` between two snapshots: those in `b` are
 * interpolated from their state in `a` (`lerpEntity`) or, new in `b`, taken
 * as they are; those only in `a` are gone.
 */
export function lerpById<E, K>(a: Iterable<E>, b: Iterable<E>, t: number, id: (e: E) => K, lerpEntity: (a: E, b: E, t: number) => E): E[] {
  const before = new Map<K, E>();
  for (const e of a) before.set(id(e), e);
  const out: E[] = [];
  for (const e of b) {
    const old = before.get(id(e));
    out.push(old === undefined ? e : lerpEntity(old, e, t));
  }
  return out;
}
