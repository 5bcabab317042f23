import fc from 'fast-check';
import { expect, test } from 'vitest';
import { Quantizer, decodeAngle, encodeAngle } from '../src/quantize.js';

const POSITION = new Quantizer(0, 0.125, 14);

test('grid values round-trip exactly', () => {
  for (const v of [0, 0.125, 13.5, 1599.875, 2047.875]) expect(POSITION.decode(POSITION.encode(v))).toBe(v);
  expect(POSITION.max).toBe(2047.875);
});

test('values outside the range are clamped, NaN is the minimum', () => {
  expect(POSITION.encode(-5)).toBe(0);
  expect(POSITION.encode(1e9)).toBe(16383);
  expect(POSITION.encode(Number.NaN)).toBe(0);
});

test('values snap to the nearest grid point', () => {
  expect(POSITION.snap(10.06)).toBe(10);
  expect(POSITION.snap(10.07)).toBe(10.125);
});

test('a snapped value is at most half a step away and snaps to itself', () => {
  fc.assert(
    fc.property(fc.double({ min: 0, max: POSITION.max, noNaN: true }), (v) => {
      const s = POSITION.snap(v);
      expect(Math.abs(s - v)).toBeLessThanOrEqual(POSITION.step / 2);
      expect(POSITION.snap(s)).toBe(s);
    }),
  );
});

test('a signed range is a grid from a negative minimum', () => {
  const velocity = new Quantizer(-64, 0.5, 8);
  expect(velocity.snap(-3.3)).toBe(-3.5);
  expect(velocity.max).toBe(63.5);
});

test('a grid that cannot work is refused when made', () => {
  expect(() => new Quantizer(0, 0, 8)).toThrow(RangeError);
  expect(() => new Quantizer(0, 1, 33)).toThrow(RangeError);
  expect(() => new Quantizer(Number.NaN, 1, 8)).toThrow(RangeError);
});

test('angles wrap around the circle', () => {
  expect(encodeAngle(2 * Math.PI, 8)).toBe(0);
  expect(encodeAngle(-Math.PI / 2, 8)).toBe(192);
  expect(decodeAngle(64, 8)).toBe(Math.PI / 2);
  expect(encodeAngle(Number.NaN, 8)).toBe(0);
});

test('any angle comes back within half a step, modulo the circle', () => {
  fc.assert(
    fc.property(fc.double({ min: -100, max: 100, noNaN: true }), fc.integer({ min: 1, max: 16 }), (a, bits) => {
      const back = decodeAngle(encodeAngle(a, bits), bits);
      const d = Math.abs(((back - a) % (2 * Math.PI) + 3 * Math.PI) % (2 * Math.PI) - Math.PI);
      expect(d).toBeLessThanOrEqual(Math.PI / 2 ** bits + 1e-9);
    }),
  );
});
