// The Rust twin of defineMessages (ricochet-game's define_messages!, in
// wasm/game/src/schema.rs) writes the same bytes: these vectors are in both
// suites, byte for byte (wasm/game/tests/schema.rs, `cross_check`), over the
// same declaration.
import { describe, expect, test } from 'vitest';
import { decodeAngle, Quantizer } from '../src/quantize.js';
import { aligned, angle, array, bool, defineMessages, int, quantized, string, struct, uint, type MessageOf } from '../src/schema.js';

const POSITION = new Quantizer(0, 0.125, 14);
const SPEED = new Quantizer(-8, 0.0625, 8);
/** `Message` in wasm/game/tests/schema.rs. */
const CROSS_CHECK = defineMessages(
  { idBits: 4 },
  {
    join: { id: 1, fields: { room: uint(8), name: string(16) } },
    input: { id: 2, fields: { seq: uint(16), frames: array(struct({ keys: uint(4), fire: bool(), aim: angle(8) }), { min: 1, max: 4 }) } },
    nudge: { id: 3, fields: { dx: int(6), dy: int(12), speed: quantized(SPEED) } },
    snapshot: {
      id: 9,
      fields: { tick: aligned(uint(32)), players: array(struct({ id: uint(5), x: quantized(POSITION), y: quantized(POSITION), hp: uint(2, { max: 3 }) }), { max: 32, countBits: 6 }) },
    },
  },
);
type Message = MessageOf<typeof CROSS_CHECK>;

const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');
const unhex = (s: string) => new Uint8Array(Buffer.from(s, 'hex'));

/** [message as written, its bytes (as the Rust test has them), what decoding gives]. */
const VECTORS: [Message, string, Message][] = [
  [{ type: 'join', room: 7, name: 'Zoë' }, '7100045a6fc3ab', { type: 'join', room: 7, name: 'Zoë' }],
  [
    { type: 'input', seq: 65535, frames: [{ keys: 5, fire: true, aim: -Math.PI / 2 }, { keys: 15, fire: false, aim: 1 }] },
    'f2ff5f057e29',
    { type: 'input', seq: 65535, frames: [{ keys: 5, fire: true, aim: decodeAngle(192, 8) }, { keys: 15, fire: false, aim: decodeAngle(41, 8) }] },
  ],
  [{ type: 'nudge', dx: -32, dy: 2047, speed: 3.3 }, '03fc7f2d', { type: 'nudge', dx: -32, dy: 2047, speed: 3.3125 }],
  [
    { type: 'snapshot', tick: 0x12345678, players: [{ id: 3, x: 812.3, y: 0, hp: 3 }, { id: 31, x: 2047.875, y: 1e9, hp: 0 }] },
    '0978563412c210cb0080ffffffff03',
    { type: 'snapshot', tick: 0x12345678, players: [{ id: 3, x: 812.25, y: 0, hp: 3 }, { id: 31, x: 2047.875, y: 2047.875, hp: 0 }] },
  ],
  [{ type: 'snapshot', tick: 0, players: [] }, '090000000000', { type: 'snapshot', tick: 0, players: [] }],
];

describe('the schema against ricochet-game (Rust)', () => {
  test.each(VECTORS)('%o is the bytes the Rust crate writes and reads', (message, bytes, decoded) => {
    expect(hex(CROSS_CHECK.encode(message))).toBe(bytes);
    expect(CROSS_CHECK.decode(unhex(bytes))).toEqual(decoded);
    expect(hex(CROSS_CHECK.encode(decoded))).toBe(bytes);
  });
});
