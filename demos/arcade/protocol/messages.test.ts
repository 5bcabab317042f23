import { readFileSync } from 'node:fs';
import { describe, expect, test } from 'vitest';
import { DecodeError, decodeAngle, encodeAngle } from '@ricochet/game';
import { decode, encode, type Message } from './messages.js';

// The same file the Rust codec's tests run (server/src/codec/vectors.rs).
const vectors: { name: string; message: Message; hex: string }[] = JSON.parse(readFileSync(new URL('./vectors.json', import.meta.url), 'utf8'));
const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');

describe('shared vectors', () => {
  test('there is a vector for every message kind', () => {
    expect(new Set(vectors.map((v) => v.message.type)).size).toBe(9);
  });
  for (const v of vectors) {
    test(`${v.name} encodes to the Rust encoder's bytes`, () => expect(hex(encode(v.message))).toBe(v.hex));
    test(`${v.name} decodes back to the message`, () => expect(decode(Buffer.from(v.hex, 'hex'))).toEqual(v.message));
  }
});

describe('messages', () => {
  test('angles wrap around the circle', () => {
    expect(encodeAngle(2 * Math.PI, 8)).toBe(0);
    expect(encodeAngle(-Math.PI / 2, 8)).toBe(192);
    expect(decodeAngle(64, 8)).toBe(Math.PI / 2);
  });

  test('an unknown tag is a decode error', () => {
    expect(() => decode(new Uint8Array([0x0f]))).toThrow(/unknown message tag 15/);
    expect(() => decode(new Uint8Array([]))).toThrow(/truncated/);
  });

  test('a snapshot claiming 63 players is refused', () => {
    expect(() => decode(new Uint8Array([9, 0, 0, 0, 0, 0, 0, 63]))).toThrow(/snapshot\.players: count 63 over 32/);
  });

  test('no bytes make the decoder throw anything but a DecodeError', () => {
    const survive = (b: Uint8Array) => {
      try {
        decode(b);
      } catch (e) {
        if (!(e instanceof DecodeError)) throw e;
      }
    };
    for (const v of vectors) {
      const b = Buffer.from(v.hex, 'hex');
      for (let cut = 0; cut < b.length; cut++) survive(b.subarray(0, cut));
      for (let bit = 0; bit < b.length * 8; bit++) {
        const f = Uint8Array.from(b);
        f[bit >> 3]! ^= 1 << (bit & 7);
        survive(f);
      }
    }
    let x = 0x9e3779b9;
    for (let len = 0; len < 2000; len++) {
      const b = new Uint8Array(len % 200);
      for (let i = 0; i < b.length; i++) {
        x ^= x << 13;
        x ^= x >>> 17;
        x ^= x << 5;
        b[i] = x & 0xff;
      }
      survive(b);
    }
  });
});
