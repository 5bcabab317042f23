// What the client knows of its room: the map, the roster and scores
// (reliable events), the local player's prediction and everyone else's
// interpolated snapshots, on @ricochet/game's Predictor and SnapshotBuffer.
import { Predictor, SnapshotBuffer, lerp, lerpAngle, lerpById } from '@ricochet/game';
import { MAX_INPUT_FRAMES, movePlayer, type BulletState, type InputFrame, type Message, type PlayerState, type Wall } from '../protocol/index.js';

/** What is drawn of the others: players and bullets. */
export interface RoomView {
  players: PlayerState[];
  bullets: BulletState[];
}

/** The local player's predicted state. */
export interface LocalState {
  x: number;
  y: number;
  alive: boolean;
}

/** Two snapshots of the others at `t`: a respawn jumps instead of sliding across the map; bullets are not interpolated. */
export function lerpRoom(a: RoomView, b: RoomView, t: number): RoomView {
  const players = lerpById(a.players, b.players, t, (p) => p.id, (pa, pb) =>
    !pa.alive || !pb.alive ? pb : { ...pb, x: lerp(pa.x, pb.x, t), y: lerp(pa.y, pb.y, t), aim: lerpAngle(pa.aim, pb.aim, t) },
  );
  return { players, bullets: t < 0.5 ? a.bullets : b.bullets };
}

/** Prediction of the local player with the server's own movement (sim.ts), so replays land where the server does. */
export function predictLocal(walls: readonly Wall[], width: number, height: number): Predictor<InputFrame, LocalState> {
  return new Predictor<InputFrame, LocalState>({
    initial: { x: 0, y: 0, alive: true },
    redundancy: MAX_INPUT_FRAMES,
    step: (s, f) => {
      if (!s.alive) return s;
      const [x, y] = movePlayer(s.x, s.y, f.keys, walls, width, height);
      return { x, y, alive: true };
    },
    // A correction is a replay that moved the player (px), not a death or respawn alone.
    equals: (a, b) => Math.abs(a.x - b.x) + Math.abs(a.y - b.y) <= 0.01,
  });
}

const NOTHING: RoomView = { players: [], bullets: [] };

export interface RosterEntry {
  id: number;
  name: string;
  kills: number;
  deaths: number;
}

export interface FeedLine {
  text: string;
  atMs: number;
}

export class GameState {
  me = -1;
  room = -1;
  width = 1600;
  height = 900;
  walls: Wall[] = [];
  roster = new Map<number, RosterEntry>();
  predictor: Predictor<InputFrame, LocalState> | null = null;
  /** The others, drawn 6 ticks (100 ms) behind the server. */
  readonly others = new SnapshotBuffer<RoomView>({ lerp: lerpRoom, delayTicks: 6 });
  /** The local player's latest authoritative state (hp, aim). */
  meServer: PlayerState | null = null;
  feed: FeedLine[] = [];
  chat: { from: string; text: string }[] = [];
  snapshots = 0;
  /** Snapshots dropped as older than one already received. */
  staleSnapshots = 0;

  constructor(private readonly now: () => number = () => performance.now()) {}

  get ready(): boolean {
    return this.predictor !== null;
  }

  /** The others as of the render time. */
  view(nowMs: number): RoomView {
    return this.others.sample(nowMs) ?? NOTHING;
  }

  /** Applies one local input now; returns the input message to send (it repeats the 3 inputs before). */
  input(frame: InputFrame): Message | null {
    if (!this.predictor) return null;
    const { seq, inputs } = this.predictor.input(frame);
    return { type: 'input', seq, frames: inputs };
  }

  name(id: number): string {
    return this.roster.get(id)?.name ?? `#${id}`;
  }

  apply(m: Message): void {
    switch (m.type) {
      case 'welcome':
        this.me = m.you;
        this.room = m.room;
        this.width = m.width;
        this.height = m.height;
        this.walls = m.walls;
        this.predictor = predictLocal(m.walls, m.width, m.height);
        break;
      case 'playerJoined':
        this.roster.set(m.id, { id: m.id, name: m.name, kills: m.kills, deaths: m.deaths });
        if (m.id !== this.me) this.pushFeed(`${m.name} joined`);
        break;
      case 'playerLeft':
        this.pushFeed(`${this.name(m.id)} left`);
        this.roster.delete(m.id);
        break;
      case 'kill': {
        const killer = this.roster.get(m.killer);
        const victim = this.roster.get(m.victim);
        if (killer) killer.kills = m.killerKills;
        if (victim) victim.deaths = m.victimDeaths;
        this.pushFeed(`${this.name(m.killer)} ✦ ${this.name(m.victim)}`);
        break;
      }
      case 'chatFrom':
        this.chat.push({ from: this.name(m.from), text: m.text });
        if (this.chat.length > 50) this.chat.shift();
        break;
      case 'snapshot':
        this.onSnapshot(m.tick, m.ack, m.players, m.bullets);
        break;
      default:
        break; // client-to-server kinds never arrive here
    }
  }

  private onSnapshot(tick: number, ack: number, players: PlayerState[], bullets: BulletState[]): void {
    if (tick <= this.others.newestTick) {
      this.staleSnapshots++;
      return;
    }
    this.snapshots++;
    const mine = players.find((p) => p.id === this.me);
    if (mine && this.predictor) {
      this.meServer = mine;
      this.predictor.reconcile({ x: mine.x, y: mine.y, alive: mine.alive }, ack);
    }
    this.others.push(tick, { players: players.filter((p) => p.id !== this.me), bullets }, this.now());
  }

  private pushFeed(text: string): void {
    this.feed.push({ text, atMs: this.now() });
    if (this.feed.length > 6) this.feed.shift();
  }
}
