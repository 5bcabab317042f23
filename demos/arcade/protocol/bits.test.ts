import { describe, expect, test } from 'vitest';
import { BitReader, BitWriter, DecodeError } from './bits.js';

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
});
