// What a client must show to take a live session onto a new link: the
// session key from its HELLO (wasm/core/WIRE.md, "Authentication"). The
// first datagram on the new link must be a HELLO carrying that key, or a
// DATA packet whose tag verifies under it; knowing the token and the
// connection ID is not enough. Checked once per resume, so a plain BigInt
// SipHash-2-4 is fast enough and keeps the relay free of native code here.
import { timingSafeEqual } from 'node:crypto';

const MASK = (1n << 64n) - 1n;
const HELLO = 1;
const DATA = 4;
const KEY_LEN = 16;
const LABEL = Buffer.from('ricochet-3', 'latin1');
/** Client → server, the direction of everything a relay checks. */
const CLIENT_TO_SERVER = 1;

const rotl = (x: bigint, b: bigint) => ((x << b) | (x >> (64n - b))) & MASK;

/** SipHash-2-4 of `m` under the 16-byte key `k` (Aumasson and Bernstein). */
export function siphash24(k: Uint8Array, m: Uint8Array): bigint {
  const kb = Buffer.from(k.buffer, k.byteOffset, k.byteLength);
  const k0 = kb.readBigUInt64LE(0);
  const k1 = kb.readBigUInt64LE(8);
  let v0 = k0 ^ 0x736f6d6570736575n;
  let v1 = k1 ^ 0x646f72616e646f6dn;
  let v2 = k0 ^ 0x6c7967656e657261n;
  let v3 = k1 ^ 0x7465646279746573n;
  const round = () => {
    v0 = (v0 + v1) & MASK;
    v1 = rotl(v1, 13n) ^ v0;
    v0 = rotl(v0, 32n);
    v2 = (v2 + v3) & MASK;
    v3 = rotl(v3, 16n) ^ v2;
    v0 = (v0 + v3) & MASK;
    v3 = rotl(v3, 21n) ^ v0;
    v2 = (v2 + v1) & MASK;
    v1 = rotl(v1, 17n) ^ v2;
    v2 = rotl(v2, 32n);
  };
  const full = m.length - (m.length % 8);
  const mb = Buffer.from(m.buffer, m.byteOffset, m.byteLength);
  for (let i = 0; i < full; i += 8) {
    const w = mb.readBigUInt64LE(i);
    v3 ^= w;
    round();
    round();
    v0 ^= w;
  }
  let last = BigInt(m.length & 0xff) << 56n;
  for (let i = full; i < m.length; i++) last |= BigInt(m[i]!) << BigInt(8 * (i - full));
  v3 ^= last;
  round();
  round();
  v0 ^= last;
  v2 ^= 0xffn;
  for (let i = 0; i < 4; i++) round();
  return (v0 ^ v1 ^ v2 ^ v3) & MASK;
}

/** key(d) of WIRE.md: the 16-byte tag key of direction `d` under session key `k`. */
export function directionKey(k: Uint8Array, d: number): Buffer {
  const out = Buffer.alloc(16);
  for (const half of [0, 1]) out.writeBigUInt64LE(siphash24(k, Buffer.concat([LABEL, Buffer.from([d, half])])), half * 8);
  return out;
}

/** The tag of a DATA packet with full packet number `pn`, as WIRE.md defines it. */
export function dataTag(dirKey: Uint8Array, connId: number, pn: bigint, datagramLength: number): Buffer {
  const m = Buffer.alloc(17);
  m[0] = DATA;
  m.writeUInt32LE(connId >>> 0, 1);
  m.writeBigUInt64LE(pn, 5);
  m.writeUInt32LE(datagramLength >>> 0, 13);
  const tag = Buffer.alloc(8);
  tag.writeBigUInt64LE(siphash24(dirKey, m));
  return tag;
}

/** The full packet number with low 16 bits `low` closest to `expected` (RFC 9000 §A.3). */
export function expandPacketNumber(low: number, expected: bigint): bigint {
  const win = 1n << 16n;
  const half = win / 2n;
  let candidate = (expected & ~(win - 1n)) | BigInt(low);
  if (candidate + half <= expected) candidate += win;
  else if (candidate > expected + half && candidate >= win) candidate -= win;
  return candidate;
}

/** A session's key and the client's largest packet number seen, to judge a resume. */
export class SessionProof {
  private readonly key: Buffer;
  private readonly tagKey: Buffer;
  /** Largest client packet number forwarded (-1: none yet). */
  private largest = -1n;

  constructor(sessionKey: Uint8Array) {
    this.key = Buffer.from(sessionKey);
    this.tagKey = directionKey(this.key, CLIENT_TO_SERVER);
  }

  /** Note a DATA packet the session forwarded (cheap: its packet number only). */
  observe(d: Uint8Array): void {
    if (d[0] !== DATA || d.length < 15) return;
    const pn = expandPacketNumber(d[5]! | (d[6]! << 8), this.largest + 1n);
    if (pn > this.largest) this.largest = pn;
  }

  /** True if `d` proves the session key: a HELLO carrying it, or a DATA packet tagged with it. */
  proves(d: Uint8Array, connId: number): boolean {
    if (d[0] === HELLO) {
      const keyAt = 8 + (d[7] ?? 0);
      if (d.length < keyAt + KEY_LEN) return false;
      return timingSafeEqual(Buffer.from(d.subarray(keyAt, keyAt + KEY_LEN)), this.key);
    }
    if (d[0] !== DATA || d.length < 15) return false;
    const pn = expandPacketNumber(d[5]! | (d[6]! << 8), this.largest + 1n);
    return timingSafeEqual(dataTag(this.tagKey, connId, pn, d.length), Buffer.from(d.subarray(7, 15)));
  }
}
