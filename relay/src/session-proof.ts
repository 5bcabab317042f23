// What a client must show to take a live session onto a new link: the
// session key from its HELLO (wasm/core/WIRE.md, "Authentication"). The
// first datagram on the new link must be a HELLO carrying that key, or a
// DATA packet whose tag verifies under key(1), which mixes in the nonce of
// the server's WELCOME; knowing the token and the connection ID is not
// enough. Checked once per resume, so a plain BigInt
// SipHash-2-4 is fast enough and keeps the relay free of native code here.
import { timingSafeEqual } from 'node:crypto';

const MASK = (1n << 64n) - 1n;
const HELLO = 1;
const WELCOME = 2;
const DATA = 4;
/** type, ID, version, tag, nonce N (8 bytes). */
const WELCOME_LEN = 23;
const KEY_LEN = 16;
const LABEL = Buffer.from('ricochet-3', 'latin1');
/** Client → server: what a resume must prove. */
const CLIENT_TO_SERVER = 1;
/** Server → client: the WELCOME that carries the nonce. */
const SERVER_TO_CLIENT = 2;

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

/** key(d) of WIRE.md: the tag key of direction `d` under session key `k` (key(1) also mixes in the WELCOME's nonce). */
export function directionKey(k: Uint8Array, d: number, nonce: Uint8Array = new Uint8Array(0)): Buffer {
  const out = Buffer.alloc(16);
  for (const half of [0, 1]) out.writeBigUInt64LE(siphash24(k, Buffer.concat([LABEL, Buffer.from([d, half]), nonce])), half * 8);
  return out;
}

/** The tag of a packet of `type` (DATA: full packet number `pn`; WELCOME: its nonce as a number), as WIRE.md defines it. */
export function dataTag(dirKey: Uint8Array, connId: number, pn: bigint, datagramLength: number, type = DATA): Buffer {
  const m = Buffer.alloc(17);
  m[0] = type;
  m.writeUInt32LE(connId >>> 0, 1);
  m.writeBigUInt64LE(pn, 5);
  m.writeUInt32LE(datagramLength >>> 0, 13);
  const tag = Buffer.alloc(8);
  tag.writeBigUInt64LE(siphash24(dirKey, m));
  return tag;
}

/**
 * The full packet number with low 16 bits `low` closest to `expected` (RFC
 * 9000 §A.3). Plain numbers (exact below 2^53, far beyond any session's
 * count): this runs for every DATA packet a session forwards.
 */
export function expandPacketNumber(low: number, expected: number): number {
  const win = 0x1_0000;
  let candidate = expected - (expected % win) + low;
  if (candidate + win / 2 <= expected) candidate += win;
  else if (candidate > expected + win / 2 && candidate >= win) candidate -= win;
  return candidate;
}

/** A session's key and the client's largest packet number seen, to judge a resume. */
export class SessionProof {
  private readonly key: Buffer;
  /** key(1), once the WELCOME's nonce is known. */
  private tagKey: Buffer | null = null;
  /** key(2): the server's packets, to check the WELCOME. */
  private readonly serverKey: Buffer;
  /** Largest client packet number forwarded (-1: none yet). */
  private largest = -1;

  constructor(sessionKey: Uint8Array) {
    this.key = Buffer.from(sessionKey);
    this.serverKey = directionKey(this.key, SERVER_TO_CLIENT);
  }

  /**
   * Note a datagram from the server: its WELCOME's nonce N completes key(1).
   * Only a WELCOME whose tag verifies under key(2) counts, so a datagram
   * forged toward the relay's backend socket cannot spoil later resumes.
   */
  observeDown(d: Uint8Array): void {
    if (d[0] !== WELCOME || d.length !== WELCOME_LEN || this.tagKey !== null) return;
    const b = Buffer.from(d.buffer, d.byteOffset, d.byteLength);
    const nonce = b.subarray(15, 23);
    const tag = dataTag(this.serverKey, b.readUInt32LE(1), nonce.readBigUInt64LE(0), WELCOME_LEN, WELCOME);
    if (timingSafeEqual(tag, b.subarray(7, 15))) this.tagKey = directionKey(this.key, CLIENT_TO_SERVER, nonce);
  }

  /** Note a DATA packet the session forwarded (cheap: its packet number only). */
  observe(d: Uint8Array): void {
    if (d[0] !== DATA || d.length < 15) return;
    const pn = expandPacketNumber(d[5]! | (d[6]! << 8), this.largest + 1);
    if (pn > this.largest) this.largest = pn;
  }

  /** True once the WELCOME's nonce is known (a DATA packet can prove the key). */
  get complete(): boolean {
    return this.tagKey !== null;
  }

  /** The largest client packet number seen (-1: none). */
  get largestSeen(): number {
    return this.largest;
  }

  /** Note packets forwarded elsewhere (the addon's native data path): the largest number among them. */
  raiseLargest(pn: number): void {
    if (pn > this.largest) this.largest = pn;
  }

  /** True if `d` proves the session key: a HELLO carrying it, or a DATA packet tagged with it. */
  proves(d: Uint8Array, connId: number): boolean {
    if (d[0] === HELLO) {
      const keyAt = 8 + (d[7] ?? 0);
      if (d.length < keyAt + KEY_LEN) return false;
      return timingSafeEqual(Buffer.from(d.subarray(keyAt, keyAt + KEY_LEN)), this.key);
    }
    if (d[0] !== DATA || d.length < 15 || this.tagKey === null) return false;
    const pn = expandPacketNumber(d[5]! | (d[6]! << 8), this.largest + 1);
    return timingSafeEqual(dataTag(this.tagKey, connId, BigInt(pn), d.length), Buffer.from(d.subarray(7, 15)));
  }
}
