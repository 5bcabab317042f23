import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { BitReader, BitWriter, DecodeError } from '../src/bits.js';

describe('bits', () => {
  test('values round-trip at every width and offset', () => {
    const w = new BitWriter(1);
    const v = (bits: number) => (bits === 32 ? 0xdeadbeef : 0xdeadbeef % 2 ** bits);
    for (let bits = 0; bits <= 32; bits++) w.writeBits(v(bits), bits);
    const r = new BitReader(w.finish());
    for (let bits = 0; bits <= 32; bits++) expect(r.readBits(bits)).toBe(v(bits));
    r.finish();
  });

  test('bits fill each byte from the least significant end', () => {
    const w = new BitWriter();
    w.writeBits(0b1, 1);
    w.writeBits(0b10, 2);
    w.writeBits(0x1f, 5);
    w.writeBits(0x3, 4);
    expect([...w.finish()]).toEqual([0b11111101, 0x03]);
  });

  test('reading past the end throws truncated', () => {
    const r = new BitReader(new Uint8Array([0xff]));
    expect(r.readBits(7)).toBe(0x7f);
    expect(() => r.readBits(2)).toThrow(DecodeError);
    expect(() => new BitReader(new Uint8Array([5, 97])).readString(255, 's')).toThrow(/truncated/);
  });

  test('strings are cut on a character boundary', () => {
    const w = new BitWriter();
    w.writeString('héllo', 2);
    const bytes = w.finish();
    expect([...bytes]).toEqual([1, 104]);
    expect(new BitReader(bytes).readString(16, 's')).toBe('h');
  });

  test('invalid UTF-8 and overlong strings are decode errors', () => {
    expect(() => new BitReader(new Uint8Array([1, 0xff])).readString(16, 's')).toThrow(/UTF-8/);
    expect(() => new BitReader(new Uint8Array([3, 97, 98, 99])).readString(2, 'name')).toThrow(/name out of range/);
  });

  test('trailing bytes are reported', () => {
    expect(() => new BitReader(new Uint8Array([1, 2])).finish()).toThrow(/2 trailing bytes/);
  });

  test('a 32- and a 16-bit field at a byte boundary are little-endian bytes', () => {
    const w = new BitWriter();
    w.writeBits(0xf, 4);
    w.align();
    w.writeBits(0x12345678, 32);
    w.writeBits(0xabcd, 16);
    expect([...w.finish()]).toEqual([0x0f, 0x78, 0x56, 0x34, 0x12, 0xcd, 0xab]);
  });

  test('a width outside 0..32 is a RangeError, not a silent wrong field', () => {
    expect(() => new BitWriter().writeBits(1, 33)).toThrow(RangeError);
    expect(() => new BitReader(new Uint8Array(8)).readBits(-1)).toThrow(RangeError);
  });

  test('any sequence of fields reads back as written, bit by bit as defined', () => {
    const field = fc.integer({ min: 0, max: 32 }).chain((bits) => fc.tuple(fc.constant(bits), fc.integer({ min: 0, max: 2 ** bits - 1 })));
    fc.assert(
      fc.property(fc.array(field, { maxLength: 60 }), (fields) => {
        const w = new BitWriter(1);
        for (const [bits, v] of fields) w.writeBits(v, bits);
        const bytes = w.finish();
        // The definition: stream bit i is bit i % 8 of byte i / 8, values least significant bit first.
        const expected = new Uint8Array(Math.ceil(fields.reduce((n, [b]) => n + b, 0) / 8));
        let bit = 0;
        for (const [bits, v] of fields) for (let b = 0; b < bits; b++, bit++) if (Math.floor(v / 2 ** b) % 2) expected[bit >> 3]! |= 1 << (bit & 7);
        expect(bytes).toEqual(expected);
        const r = new BitReader(bytes);
        for (const [bits, v] of fields) expect(r.readBits(bits)).toBe(v);
        r.finish();
      }),
    );
  });

  test('no bytes make the reader throw anything but a DecodeError', () => {
    const op = fc.oneof(
      fc.record({ k: fc.constant('bits' as const), n: fc.integer({ min: 0, max: 32 }) }),
      fc.record({ k: fc.constant('string' as const), n: fc.integer({ min: 0, max: 255 }) }),
      fc.record({ k: fc.constant('bytes' as const), n: fc.integer({ min: 0, max: 64 }) }),
    );
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 48 }), fc.array(op, { maxLength: 20 }), (bytes, ops) => {
        const r = new BitReader(bytes);
        try {
          for (const { k, n } of ops) {
            if (k === 'bits') r.readBits(n);
            else if (k === 'string') r.readString(n, 's');
            else r.readBytes(n);
            expect(r.remainingBits).toBeGreaterThanOrEqual(0);
          }
          r.finish();
        } catch (e) {
          if (!(e instanceof DecodeError)) throw e;
        }
      }),
    );
  });
});
