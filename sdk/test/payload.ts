// Self-checking payloads for tests: size and bytes derived from a number.
import { expect } from 'vitest';

export function payload(n: number, len: number): Uint8Array {
  const b = new Uint8Array(Math.max(len, 4));
  new DataView(b.buffer).setUint32(0, n, true);
  for (let i = 4; i < b.length; i++) b[i] = (n * 31 + i * 7) & 0xff;
  return b;
}

/** Asserts the bytes match `payload(n, len)` and returns n. */
export function check(b: Uint8Array): number {
  const n = new DataView(b.buffer, b.byteOffset).getUint32(0, true);
  expect(b).toEqual(payload(n, b.length));
  return n;
}
