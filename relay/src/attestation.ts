// Relay attestation (wasm/core/WIRE.md, "Relay attestation"): every HELLO
// the relay forwards carries the verified token claims, MACed with a key
// derived from the token secret and bound to the connection ID and session
// key, so the game server can trust who connected and a claim seen on the
// wire cannot be replayed for another connection.
import { createHmac } from 'node:crypto';

const MAGIC = Buffer.from('RCA1', 'latin1');
const HELLO = 1;
const VERSION = 3;
const KEY_LEN = 16;
/** Clients pad HELLO to this; the relay keeps the padding rule. */
const HELLO_MIN_LEN = 128;

/** The attestation key: HMAC-SHA256(token secret, "ricochet relay attestation v1"). */
export function attestationKey(tokenSecret: string | Uint8Array): Buffer {
  return createHmac('sha256', tokenSecret).update('ricochet relay attestation v1').digest();
}

/** The claims a game server learns: the token's `sub` and `data`, as JSON. */
export function claimsJson(claims: { sub: string; data?: string }): Buffer {
  return Buffer.from(JSON.stringify(claims.data === undefined ? { sub: claims.sub } : { sub: claims.sub, data: claims.data }));
}

function varint(n: number): Buffer {
  const out: number[] = [];
  do {
    let b = n & 0x7f;
    n = Math.floor(n / 128);
    if (n > 0) b |= 0x80;
    out.push(b);
  } while (n > 0);
  return Buffer.from(out);
}

/** A WIRE `varint` at `at`: [value, bytes read], or null if cut short or over 2^53. */
function readVarint(d: Uint8Array, at: number): [number, number] | null {
  let v = 0;
  let scale = 1;
  for (let i = 0; i < 8 && at + i < d.length; i++) {
    const b = d[at + i]!;
    v += (b & 0x7f) * scale;
    if ((b & 0x80) === 0) return [v, i + 1];
    scale *= 128;
  }
  return null;
}

const lenPrefixed = (b: Uint8Array) => Buffer.concat([varint(b.length), b]);

/** A version-3 HELLO's parts: everything before the key, the key, the client's payload. */
export interface ParsedHello {
  connId: number;
  head: Uint8Array;
  key: Uint8Array;
  payload: Uint8Array;
}

/** A version-3 HELLO's parts, or why it is not one. */
export function parseHello(d: Uint8Array): ParsedHello | string {
  if (d.length < 8 || d[0] !== HELLO) return 'not a HELLO';
  const version = d[5]! | (d[6]! << 8);
  if (version !== VERSION) return `unsupported protocol version ${version}; this relay speaks ${VERSION}`;
  const count = d[7]!;
  const keyAt = 8 + count;
  if (count === 0 || d.length < keyAt + KEY_LEN) return 'truncated HELLO';
  const len = readVarint(d, keyAt + KEY_LEN);
  if (!len) return 'truncated HELLO';
  const payloadAt = keyAt + KEY_LEN + len[1];
  const end = payloadAt + len[0];
  if (end > d.length) return 'truncated HELLO';
  for (let i = end; i < d.length; i++) if (d[i] !== 0) return 'non-zero HELLO padding';
  const connId = (d[1]! | (d[2]! << 8) | (d[3]! << 16) | (d[4]! << 24)) >>> 0;
  return { connId, head: d.subarray(0, keyAt), key: d.subarray(keyAt, keyAt + KEY_LEN), payload: d.subarray(payloadAt, end) };
}

/** The attested handshake payload for a connection (see the module doc). */
export function attestPayload(key: Buffer, connId: number, sessionKey: Uint8Array, claims: Uint8Array, clientPayload: Uint8Array): Buffer {
  const id = Buffer.alloc(4);
  id.writeUInt32LE(connId);
  const body = Buffer.concat([lenPrefixed(claims), lenPrefixed(clientPayload)]);
  const mac = createHmac('sha256', key).update(MAGIC).update(id).update(sessionKey).update(body).digest();
  return Buffer.concat([MAGIC, body, mac]);
}

/**
 * The HELLO to forward: the client's (`h`, from parseHello), with its
 * handshake payload replaced by the attestation, zero-padded as clients pad.
 */
export function attestHello(h: ParsedHello, key: Buffer, claims: Uint8Array): Buffer {
  const payload = attestPayload(key, h.connId, h.key, claims, h.payload);
  const hello = Buffer.concat([h.head, h.key, lenPrefixed(payload)]);
  return hello.length >= HELLO_MIN_LEN ? hello : Buffer.concat([hello, Buffer.alloc(HELLO_MIN_LEN - hello.length)]);
}
