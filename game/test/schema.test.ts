import fc from 'fast-check';
import { describe, expect, expectTypeOf, test } from 'vitest';
import { BitReader, BitWriter, DecodeError } from '../src/bits.js';
import { Quantizer } from '../src/quantize.js';
import { aligned, angle, array, bool, defineMessages, int, quantized, string, struct, uint, type MessageOf } from '../src/schema.js';

const POSITION = new Quantizer(0, 0.125, 14);
const schema = defineMessages(
  { idBits: 4 },
  {
    join: { id: 1, fields: { room: uint(8), name: string(16) } },
    input: { id: 2, fields: { seq: uint(16), frames: array(struct({ keys: uint(4), fire: bool(), aim: angle(8) }), { min: 1, max: 4 }) } },
    state: {
      id: 9,
      fields: {
        tick: aligned(uint(32)),
        players: array(struct({ id: uint(5), x: quantized(POSITION), y: quantized(POSITION), hp: uint(2, { max: 3 }), dx: int(6) }), { max: 32, countBits: 6 }),
      },
    },
  },
);
type Msg = MessageOf<typeof schema>;

/** Decodes, and fails the test on any throw but a DecodeError. */
function survive(bytes: Uint8Array): void {
  try {
    schema.decode(bytes);
  } catch (e) {
    if (!(e instanceof DecodeError)) throw e;
  }
}

const player = fc.record({
  id: fc.integer({ min: 0, max: 31 }),
  x: fc.integer({ min: 0, max: 16383 }).map((c) => POSITION.decode(c)),
  y: fc.integer({ min: 0, max: 16383 }).map((c) => POSITION.decode(c)),
  hp: fc.integer({ min: 0, max: 3 }),
  dx: fc.integer({ min: -32, max: 31 }),
});
const message: fc.Arbitrary<Msg> = fc.oneof(
  fc.record({ type: fc.constant('join' as const), room: fc.integer({ min: 0, max: 255 }), name: fc.string({ unit: 'grapheme-ascii', maxLength: 16 }) }),
  fc.record({
    type: fc.constant('input' as const),
    seq: fc.integer({ min: 0, max: 0xffff }),
    frames: fc.array(fc.record({ keys: fc.integer({ min: 0, max: 15 }), fire: fc.boolean(), aim: fc.integer({ min: 0, max: 255 }).map((c) => c * ((2 * Math.PI) / 256)) }), { minLength: 1, maxLength: 4 }),
  }),
  fc.record({ type: fc.constant('state' as const), tick: fc.integer({ min: 0, max: 0xffffffff }), players: fc.array(player, { maxLength: 32 }) }),
);

describe('schema', () => {
  test('the message types are inferred from the definition', () => {
    expectTypeOf<Extract<Msg, { type: 'join' }>>().toEqualTypeOf<{ type: 'join'; room: number; name: string }>();
    expectTypeOf<Extract<Msg, { type: 'input' }>['frames']>().toEqualTypeOf<{ keys: number; fire: boolean; aim: number }[]>();
  });

  test('a message is its id, then its fields in order, packed least significant bit first', () => {
    expect(Buffer.from(schema.encode({ type: 'join', room: 7, name: 'Zoë' })).toString('hex')).toBe('7100045a6fc3ab');
    expect(schema.idOf('state')).toBe(9);
  });

  test('an aligned 32-bit field is four little-endian bytes after the padding', () => {
    expect([...schema.encode({ type: 'state', tick: 0x01020304, players: [] })]).toEqual([9, 4, 3, 2, 1, 0]);
  });

  test('every message round-trips', () => {
    fc.assert(
      fc.property(message, (m) => {
        expect(schema.decode(schema.encode(m))).toEqual(m);
      }),
    );
  });

  test('every strict prefix of a message is a truncated DecodeError', () => {
    fc.assert(
      fc.property(message, (m) => {
        const bytes = schema.encode(m);
        for (let cut = 0; cut < bytes.length; cut++) expect(() => schema.decode(bytes.subarray(0, cut))).toThrow(expect.objectContaining({ code: 'truncated' }));
      }),
      { numRuns: 50 },
    );
  });

  test('random and bit-flipped bytes throw only DecodeErrors', () => {
    fc.assert(fc.property(fc.uint8Array({ maxLength: 300 }), survive), { numRuns: 2000 });
    fc.assert(
      fc.property(message, fc.nat(), (m, bit) => {
        const bytes = schema.encode(m);
        if (bytes.length === 0) return;
        const at = bit % (bytes.length * 8);
        bytes[at >> 3]! ^= 1 << (at & 7);
        survive(bytes);
      }),
    );
  });

  test('hostile counts and values are refused by name, before anything is allocated for them', () => {
    // 63 players claimed by a 6-bit count with a maximum of 32.
    expect(() => schema.decode(new Uint8Array([9, 0, 0, 0, 0, 63]))).toThrow(/state\.players: count 63 over 32/);
    // 32 players claimed with no bytes for them.
    expect(() => schema.decode(new Uint8Array([9, 0, 0, 0, 0, 32]))).toThrow(/state\.players: 32 items cannot fit/);
    const hp = defineMessages({ idBits: 1 }, { m: { id: 0, fields: { hp: uint(2, { max: 2 }) } } });
    expect(() => hp.decode(new Uint8Array([0b110]))).toThrow(/m\.hp: 3 over 2/);
    expect(() => schema.decode(new Uint8Array([0x0f]))).toThrow(/unknown message tag 15/);
    expect(() => schema.decode(new Uint8Array([0x71, 0x00, 0x04, 0x5a, 0x6f, 0xc3, 0xab, 0x00]))).toThrow(/1 trailing bytes/);
    expect(() => schema.decode(new Uint8Array([0x71, 0x00, 0x11]))).toThrow(/join\.name out of range/);
  });

  test('encoding a value that does not fit is a RangeError naming the field', () => {
    expect(() => schema.encode({ type: 'join', room: 256, name: '' })).toThrow(/join\.room: 256 is not an integer in 0\.\.255/);
    expect(() => schema.encode({ type: 'input', seq: 1, frames: [] })).toThrow(/input\.frames: 0 items, not 1\.\.4/);
    expect(() => schema.encode({ type: 'state', tick: 0, players: [{ id: 0, x: 0, y: 0, hp: 0, dx: 32 }] })).toThrow(/state\.players\[0\]\.dx/);
    expect(() => schema.encode({ type: 'nope' } as never)).toThrow(/unknown message type nope/);
  });

  test('quantised fields clamp to their range; long strings are cut on a character boundary unless refused', () => {
    const m = schema.decode(schema.encode({ type: 'state', tick: 1, players: [{ id: 1, x: -4, y: 1e6, hp: 1, dx: 0 }] }));
    expect(m).toMatchObject({ players: [{ x: 0, y: POSITION.max }] });
    expect(schema.decode(schema.encode({ type: 'join', room: 0, name: 'ééééééééé' }))).toEqual({ type: 'join', room: 0, name: 'éééééééé' });
    const strict = defineMessages({ idBits: 1 }, { m: { id: 1, fields: { s: string(2, { truncate: false }) } } });
    expect(() => strict.encode({ type: 'm', s: 'abc' })).toThrow(/m\.s: longer than 2 bytes/);
  });

  test('ids are checked when the schema is defined', () => {
    expect(() => defineMessages({ idBits: 2 }, { a: { id: 1, fields: {} }, b: { id: 1, fields: {} } })).toThrow(/b and a share id 1/);
    expect(() => defineMessages({ idBits: 2 }, { a: { id: 4, fields: {} } })).toThrow(/id 4 does not fit in 2 bits/);
    expect(() => defineMessages({ idBits: 2 }, { a: { id: 0, fields: { type: uint(1) } } })).toThrow(/"type" names the message/);
    expect(() => array(bool(), { max: 8, countBits: 3 })).toThrow(/9 counts do not fit in 3 bits/);
  });

  test('several messages share one datagram through write and read', () => {
    const w = new BitWriter();
    schema.write(w, { type: 'join', room: 1, name: 'a' });
    schema.write(w, { type: 'input', seq: 2, frames: [{ keys: 1, fire: true, aim: 0 }] });
    const r = new BitReader(w.finish());
    expect(schema.read(r)).toEqual({ type: 'join', room: 1, name: 'a' });
    expect(schema.read(r)).toMatchObject({ type: 'input', seq: 2 });
    r.finish();
  });
});
