// What the client knows of its room: the map, the roster and scores
// (reliable events), the local player's prediction and everyone else's
// interpolated snapshots.
import type { BulletState, Message, PlayerState, Wall } from '../protocol/index.js';
import { Interpolator } from './interpolation.js';
import { Predictor } from './prediction.js';

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
  predictor: Predictor | null = null;
  readonly others = new Interpolator();
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
        this.predictor = new Predictor(m.walls, m.width, m.height);
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
      this.predictor.reconcile(mine, ack);
    }
    this.others.push(
      tick,
      players.filter((p) => p.id !== this.me),
      bullets,
      this.now(),
    );
  }

  private pushFeed(text: string): void {
    this.feed.push({ text, atMs: this.now() });
    if (this.feed.length > 6) this.feed.shift();
  }
}
