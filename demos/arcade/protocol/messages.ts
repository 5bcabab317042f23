// The arcade's game messages on bits.ts and quantize.ts; byte-identical to
// server/src/codec/messages.rs, pinned by vectors.json. Every message starts
// with a 4-bit tag; positions are 14 bits on a 1/8 px grid, angles 8 bits,
// player ids 5 bits (32 per room); strings are a length byte and UTF-8.
import { BitReader, BitWriter, DecodeError } from './bits.js';
import { Quantizer, decodeAngle, encodeAngle } from './quantize.js';

export const MAX_PLAYERS = 32;
export const MAX_BULLETS = 127;
export const MAX_WALLS = 63;
/** The newest input and up to 3 repeats, so one lost datagram costs nothing. */
export const MAX_INPUT_FRAMES = 4;
export const MAX_NAME_BYTES = 16;
export const MAX_CHAT_BYTES = 120;
export const MAX_HP = 3;
export const POSITION = new Quantizer(0, 0.125, 14);
export const AIM_BITS = 8;
const WALL_BITS = 12;
const ID_BITS = 5;
export const SNAPSHOT_HEADER_BYTES = 7;

export const KEY_UP = 1;
export const KEY_DOWN = 2;
export const KEY_LEFT = 4;
export const KEY_RIGHT = 8;

const TAGS = { join: 1, input: 2, chat: 3, welcome: 4, playerJoined: 5, playerLeft: 6, kill: 7, chatFrom: 8, snapshot: 9 } as const;

export interface InputFrame {
  /** KEY_* bits. */
  keys: number;
  fire: boolean;
  /** Radians; sent as 8 bits. */
  aim: number;
}
export interface Wall {
  x: number;
  y: number;
  w: number;
  h: number;
}
export interface PlayerState {
  id: number;
  x: number;
  y: number;
  aim: number;
  hp: number;
  alive: boolean;
}
export interface BulletState {
  owner: number;
  x: number;
  y: number;
}

export type Message =
  | { type: 'join'; room: number; name: string }
  | { type: 'input'; seq: number; frames: InputFrame[] }
  | { type: 'chat'; text: string }
  | { type: 'welcome'; you: number; room: number; tickHz: number; width: number; height: number; walls: Wall[] }
  | { type: 'playerJoined'; id: number; name: string; kills: number; deaths: number }
  | { type: 'playerLeft'; id: number }
  | { type: 'kill'; killer: number; victim: number; killerKills: number; victimDeaths: number }
  | { type: 'chatFrom'; from: number; text: string }
  | { type: 'snapshot'; tick: number; ack: number; players: PlayerState[]; bullets: BulletState[] };

export type MessageOf<T extends Message['type']> = Extract<Message, { type: T }>;

export function encode(m: Message): Uint8Array {
  const w = new BitWriter(32);
  w.writeBits(TAGS[m.type], 4);
  switch (m.type) {
    case 'join':
      w.writeBits(m.room, 8);
      w.writeString(m.name, MAX_NAME_BYTES);
      break;
    case 'input': {
      const frames = m.frames.slice(0, MAX_INPUT_FRAMES);
      if (frames.length === 0) throw new RangeError('input: at least one frame');
      w.writeBits(m.seq, 16);
      w.writeBits(frames.length - 1, 2);
      for (const f of frames) {
        w.writeBits(f.keys, 4);
        w.writeBool(f.fire);
        w.writeBits(encodeAngle(f.aim, AIM_BITS), AIM_BITS);
      }
      break;
    }
    case 'chat':
      w.writeString(m.text, MAX_CHAT_BYTES);
      break;
    case 'welcome': {
      w.writeBits(m.you, ID_BITS);
      w.writeBits(m.room, 8);
      w.writeBits(m.tickHz, 8);
      w.writeBits(m.width, WALL_BITS);
      w.writeBits(m.height, WALL_BITS);
      const walls = m.walls.slice(0, MAX_WALLS);
      w.writeBits(walls.length, 6);
      for (const wall of walls) for (const v of [wall.x, wall.y, wall.w, wall.h]) w.writeBits(v, WALL_BITS);
      break;
    }
    case 'playerJoined':
      w.writeBits(m.id, ID_BITS);
      w.writeBits(m.kills, 16);
      w.writeBits(m.deaths, 16);
      w.writeString(m.name, MAX_NAME_BYTES);
      break;
    case 'playerLeft':
      w.writeBits(m.id, ID_BITS);
      break;
    case 'kill':
      w.writeBits(m.killer, ID_BITS);
      w.writeBits(m.victim, ID_BITS);
      w.writeBits(m.killerKills, 16);
      w.writeBits(m.victimDeaths, 16);
      break;
    case 'chatFrom':
      w.writeBits(m.from, ID_BITS);
      w.writeString(m.text, MAX_CHAT_BYTES);
      break;
    case 'snapshot': {
      w.align();
      const head = new Uint8Array(6);
      new DataView(head.buffer).setUint32(0, m.tick, true);
      new DataView(head.buffer).setUint16(4, m.ack, true);
      w.writeBytes(head);
      const players = m.players.slice(0, MAX_PLAYERS);
      w.writeBits(players.length, 6);
      for (const p of players) {
        w.writeBits(p.id, ID_BITS);
        w.writeBits(POSITION.encode(p.x), POSITION.bits);
        w.writeBits(POSITION.encode(p.y), POSITION.bits);
        w.writeBits(encodeAngle(p.aim, AIM_BITS), AIM_BITS);
        w.writeBits(Math.min(p.hp, MAX_HP), 2);
        w.writeBool(p.alive);
      }
      const bullets = m.bullets.slice(0, MAX_BULLETS);
      w.writeBits(bullets.length, 7);
      for (const b of bullets) {
        w.writeBits(b.owner, ID_BITS);
        w.writeBits(POSITION.encode(b.x), POSITION.bits);
        w.writeBits(POSITION.encode(b.y), POSITION.bits);
      }
      break;
    }
  }
  return w.finish();
}

/** Decodes one whole message; anything malformed throws a DecodeError. */
export function decode(bytes: Uint8Array): Message {
  const r = new BitReader(bytes);
  const tag = r.readBits(4);
  let m: Message;
  switch (tag) {
    case TAGS.join: {
      const room = r.readBits(8);
      m = { type: 'join', room, name: r.readString(MAX_NAME_BYTES, 'name') };
      break;
    }
    case TAGS.input: {
      const seq = r.readBits(16);
      const n = r.readBits(2) + 1;
      const frames: InputFrame[] = [];
      for (let i = 0; i < n; i++) {
        const keys = r.readBits(4);
        const fire = r.readBool();
        frames.push({ keys, fire, aim: decodeAngle(r.readBits(AIM_BITS), AIM_BITS) });
      }
      m = { type: 'input', seq, frames };
      break;
    }
    case TAGS.chat:
      m = { type: 'chat', text: r.readString(MAX_CHAT_BYTES, 'text') };
      break;
    case TAGS.welcome: {
      const you = r.readBits(ID_BITS);
      const room = r.readBits(8);
      const tickHz = r.readBits(8);
      const width = r.readBits(WALL_BITS);
      const height = r.readBits(WALL_BITS);
      const n = r.readBits(6);
      const walls: Wall[] = [];
      for (let i = 0; i < n; i++) walls.push({ x: r.readBits(WALL_BITS), y: r.readBits(WALL_BITS), w: r.readBits(WALL_BITS), h: r.readBits(WALL_BITS) });
      m = { type: 'welcome', you, room, tickHz, width, height, walls };
      break;
    }
    case TAGS.playerJoined: {
      const id = r.readBits(ID_BITS);
      const kills = r.readBits(16);
      const deaths = r.readBits(16);
      m = { type: 'playerJoined', id, name: r.readString(MAX_NAME_BYTES, 'name'), kills, deaths };
      break;
    }
    case TAGS.playerLeft:
      m = { type: 'playerLeft', id: r.readBits(ID_BITS) };
      break;
    case TAGS.kill:
      m = { type: 'kill', killer: r.readBits(ID_BITS), victim: r.readBits(ID_BITS), killerKills: r.readBits(16), victimDeaths: r.readBits(16) };
      break;
    case TAGS.chatFrom: {
      const from = r.readBits(ID_BITS);
      m = { type: 'chatFrom', from, text: r.readString(MAX_CHAT_BYTES, 'text') };
      break;
    }
    case TAGS.snapshot: {
      const head = r.readBytes(6);
      const view = new DataView(head.buffer, head.byteOffset, 6);
      const tick = view.getUint32(0, true);
      const ack = view.getUint16(4, true);
      const np = r.readBits(6);
      if (np > MAX_PLAYERS) throw new DecodeError('out-of-range', 'player count out of range');
      const players: PlayerState[] = [];
      for (let i = 0; i < np; i++) {
        const id = r.readBits(ID_BITS);
        const x = POSITION.decode(r.readBits(POSITION.bits));
        const y = POSITION.decode(r.readBits(POSITION.bits));
        const aim = decodeAngle(r.readBits(AIM_BITS), AIM_BITS);
        const hp = r.readBits(2);
        players.push({ id, x, y, aim, hp, alive: r.readBool() });
      }
      const nb = r.readBits(7);
      const bullets: BulletState[] = [];
      for (let i = 0; i < nb; i++) {
        const owner = r.readBits(ID_BITS);
        const x = POSITION.decode(r.readBits(POSITION.bits));
        bullets.push({ owner, x, y: POSITION.decode(r.readBits(POSITION.bits)) });
      }
      m = { type: 'snapshot', tick, ack, players, bullets };
      break;
    }
    default:
      throw new DecodeError('unknown-tag', `unknown message tag ${tag}`);
  }
  r.finish();
  return m;
}
