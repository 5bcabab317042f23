// The arcade's game messages, declared on @ricochet/game's message schema;
// byte-identical to server/src/codec/messages.rs, pinned by vectors.json.
// Every message starts with a 4-bit tag; positions are 14 bits on a 1/8 px
// grid, angles 8 bits, player ids 5 bits (32 per room); strings are a length
// byte and UTF-8.
import { Quantizer, aligned, angle, array, bool, defineMessages, quantized, string, struct, uint, type Infer, type MessageOf as SchemaMessage } from '@ricochet/game';

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
/** Tag, tick u32 and ack u16, byte-aligned: the server encodes a room's body once and prefixes it per recipient. */
export const SNAPSHOT_HEADER_BYTES = 7;

export const KEY_UP = 1;
export const KEY_DOWN = 2;
export const KEY_LEFT = 4;
export const KEY_RIGHT = 8;

const id = uint(5);
const counter = uint(16);
const position = quantized(POSITION);
const wallCoord = uint(12);

const inputFrame = struct({ keys: uint(4), fire: bool(), aim: angle(AIM_BITS) });
const wall = struct({ x: wallCoord, y: wallCoord, w: wallCoord, h: wallCoord });
const playerState = struct({ id, x: position, y: position, aim: angle(AIM_BITS), hp: uint(2, { max: MAX_HP }), alive: bool() });
const bulletState = struct({ owner: id, x: position, y: position });

/** One tick of a player's input: KEY_* bits, fire, aim in radians (sent as 8 bits). */
export type InputFrame = Infer<typeof inputFrame>;
export type Wall = Infer<typeof wall>;
export type PlayerState = Infer<typeof playerState>;
export type BulletState = Infer<typeof bulletState>;

export const arcadeMessages = defineMessages(
  { idBits: 4 },
  {
    join: { id: 1, fields: { room: uint(8), name: string(MAX_NAME_BYTES) } },
    input: { id: 2, fields: { seq: counter, frames: array(inputFrame, { min: 1, max: MAX_INPUT_FRAMES }) } },
    chat: { id: 3, fields: { text: string(MAX_CHAT_BYTES) } },
    welcome: {
      id: 4,
      fields: { you: id, room: uint(8), tickHz: uint(8), width: wallCoord, height: wallCoord, walls: array(wall, { max: MAX_WALLS }) },
    },
    playerJoined: { id: 5, fields: { id, kills: counter, deaths: counter, name: string(MAX_NAME_BYTES) } },
    playerLeft: { id: 6, fields: { id } },
    kill: { id: 7, fields: { killer: id, victim: id, killerKills: counter, victimDeaths: counter } },
    chatFrom: { id: 8, fields: { from: id, text: string(MAX_CHAT_BYTES) } },
    snapshot: {
      id: 9,
      fields: {
        tick: aligned(uint(32)),
        ack: counter,
        players: array(playerState, { max: MAX_PLAYERS, countBits: 6 }),
        bullets: array(bulletState, { max: MAX_BULLETS }),
      },
    },
  },
);

export type Message = SchemaMessage<typeof arcadeMessages>;
export type MessageOf<T extends Message['type']> = Extract<Message, { type: T }>;

/** The bytes of a message; a field that does not fit throws a RangeError. */
export const encode = (m: Message): Uint8Array => arcadeMessages.encode(m);
/** Decodes one whole message; anything malformed throws a DecodeError. */
export const decode = (bytes: Uint8Array): Message => arcadeMessages.decode(bytes);
