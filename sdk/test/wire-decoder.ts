// Independent decoder of the Ricochet wire format, version 3, written from
// wasm/core/WIRE.md alone (not from the Rust sources). It cross-checks the
// document against the vectors the Rust core generates
// (wasm/core/tests/vectors/wire.json): see wire-vectors.test.ts.
//
// Context-free: without connection state it cannot check declared channels,
// connection existence, packet-number windows or 16-bit expansions. It applies
// every rule that a single datagram can be checked against.
//
// Output shape follows the vectors' `packet` field: byte fields as lowercase
// hex strings, reason strings as UTF-8 text, integers as JS numbers. The two
// unbounded varint fields (ACK ack_delay_us, CLOSE code) become a bigint only
// when the value exceeds Number.MAX_SAFE_INTEGER (never in the vectors).

export class WireDecodeError extends Error {
  /** Byte offset in the datagram where decoding failed. */
  readonly offset: number;

  constructor(message: string, offset: number) {
    super(`${message} (at byte ${offset})`);
    this.name = 'WireDecodeError';
    this.offset = offset;
  }
}

/** A channel kind byte (WIRE.md "Channels"). */
export type ChannelKind = 0 | 1 | 2 | 3;

export interface HelloPacket {
  type: 'HELLO';
  connection_id: number;
  version: number;
  channels: ChannelKind[];
  session_key: string;
  payload: string;
}

export interface WelcomePacket {
  type: 'WELCOME';
  connection_id: number;
  version: number;
  tag: string;
  /** The server's nonce N (8 bytes, hex): the client → server key mixes it in. */
  nonce: string;
}

export interface RejectPacket {
  type: 'REJECT';
  connection_id: number;
  version: number;
  tag: string;
  reason: string;
}

export interface AckFrame {
  type: 'ACK';
  /** Low 16 bits of the largest acknowledged packet number. */
  largest: number;
  ack_delay_us: number | bigint;
  first_range: number;
  /** Additional ranges, in wire order, as [gap, length]. */
  ranges: [number, number][];
}

export interface PingFrame {
  type: 'PING';
}

export interface CloseFrame {
  type: 'CLOSE';
  code: number | bigint;
  reason: string;
}

export interface MessagesFrame {
  type: 'MESSAGES';
  channel: number;
  first_seq: number;
  messages: string[];
}

export interface FragmentFrame {
  type: 'FRAGMENT';
  channel: number;
  seq: number;
  index: number;
  count: number;
  data: string;
}

export interface RepairFrame {
  type: 'REPAIR';
  /** Low 16 bits of the first protected packet number. */
  first_pn: number;
  count: number;
  /** Member i of the group enters the parity times ω^(power·i) in GF(4). */
  power: number;
  parity: string;
}

export interface LossReportFrame {
  type: 'LOSS_REPORT';
  /** Units of 1/65535. */
  loss: number;
  burst: number;
}

/** PATH_CHALLENGE (server → client) or PATH_RESPONSE (its echo): 8 bytes of data. */
export interface PathFrame {
  type: 'PATH_CHALLENGE' | 'PATH_RESPONSE';
  data: string;
}

export type Frame = AckFrame | PingFrame | CloseFrame | MessagesFrame | FragmentFrame | RepairFrame | LossReportFrame | PathFrame;

export interface DataPacket {
  type: 'DATA';
  connection_id: number;
  /** Low 16 bits of the packet number, as on the wire. */
  packet_number: number;
  tag: string;
  frames: Frame[];
}

export type DecodedPacket = HelloPacket | WelcomePacket | RejectPacket | DataPacket;

// Limits stated in WIRE.md.
const MAX_VARINT_BYTES = 10;
const MAX_ACK_RANGES = 16;
const MAX_ACK_RANGE_VALUE = 65535;
const MIN_FRAGMENT_COUNT = 2;
const MAX_FRAGMENT_COUNT = 1048576;
const MAX_CHANNEL_KIND = 3;
const MIN_REPAIR_COUNT = 1;
const MAX_REPAIR_COUNT = 32;
const MIN_PARITY_BYTES = 6; // u16 body_length + u32 check
const DATA_HEADER_BYTES = 15;
const SESSION_KEY_BYTES = 16;
const TAG_BYTES = 8;
const NONCE_BYTES = 8;

const utf8 = new TextDecoder('utf-8'); // WIRE.md does not say invalid UTF-8 is a drop reason: decode lossily.

function toHex(bytes: Uint8Array): string {
  let s = '';
  for (const b of bytes) s += b.toString(16).padStart(2, '0');
  return s;
}

class Reader {
  private pos = 0;

  constructor(private readonly buf: Uint8Array) {}

  get offset(): number {
    return this.pos;
  }

  get remaining(): number {
    return this.buf.length - this.pos;
  }

  fail(message: string, at: number = this.pos): never {
    throw new WireDecodeError(message, at);
  }

  private need(n: number, what: string): void {
    if (this.remaining < n) this.fail(`truncated ${what}: need ${n} bytes, have ${this.remaining}`);
  }

  u8(what: string): number {
    this.need(1, what);
    return this.buf[this.pos++]!;
  }

  u16(what: string): number {
    this.need(2, what);
    const v = this.buf[this.pos]! | (this.buf[this.pos + 1]! << 8);
    this.pos += 2;
    return v;
  }

  u32(what: string): number {
    this.need(4, what);
    const b = this.buf;
    const p = this.pos;
    const v = (b[p]! | (b[p + 1]! << 8) | (b[p + 2]! << 16) | (b[p + 3]! << 24)) >>> 0;
    this.pos += 4;
    return v;
  }

  take(n: number, what: string): Uint8Array {
    this.need(n, what);
    const out = this.buf.subarray(this.pos, this.pos + n);
    this.pos += n;
    return out;
  }

  /** Unsigned LEB128, at most 10 bytes, at most 2^64 − 1; non-shortest forms accepted. */
  varint(what: string): bigint {
    const start = this.pos;
    let value = 0n;
    for (let i = 0; i < MAX_VARINT_BYTES; i++) {
      if (this.remaining < 1) this.fail(`truncated varint ${what}`, start);
      const byte = this.buf[this.pos++]!;
      const group = BigInt(byte & 0x7f);
      if (i === MAX_VARINT_BYTES - 1) {
        // 10th byte: 9 × 7 = 63 bits so far, so only bit 63 remains.
        if (byte & 0x80) this.fail(`varint ${what} longer than ${MAX_VARINT_BYTES} bytes`, start);
        if (group > 1n) this.fail(`varint ${what} above 2^64 - 1`, start);
      }
      value |= group << BigInt(7 * i);
      if ((byte & 0x80) === 0) return value;
    }
    // Unreachable: the 10th iteration either returns or fails.
    return this.fail(`varint ${what} longer than ${MAX_VARINT_BYTES} bytes`, start);
  }

  /** A varint that must lie in [min, max] (max ≤ 2^53 − 1), returned as a number. */
  boundedVarint(what: string, min: number, max: number): number {
    const start = this.pos;
    const v = this.varint(what);
    if (v < BigInt(min) || v > BigInt(max)) this.fail(`${what} ${v} outside ${min}..=${max}`, start);
    return Number(v);
  }

  /** `bytes`: varint length then that many bytes. */
  bytes(what: string): Uint8Array {
    const start = this.pos;
    const len = this.varint(`${what} length`);
    if (len > BigInt(this.remaining)) {
      this.fail(`truncated ${what}: length ${len}, have ${this.remaining}`, start);
    }
    return this.take(Number(len), what);
  }
}

function numberOrBigint(v: bigint): number | bigint {
  return v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : v;
}

function connectionId(r: Reader): number {
  const at = r.offset;
  const id = r.u32('connection_id');
  if (id === 0) r.fail('connection ID 0 is invalid', at);
  return id;
}

function decodeHello(r: Reader): HelloPacket {
  const connection_id = connectionId(r);
  const version = r.u16('version');
  const countAt = r.offset;
  const channelCount = r.u8('channel_count');
  if (channelCount < 1) r.fail('channel_count must be 1..=255', countAt);
  const channels: ChannelKind[] = [];
  for (let i = 0; i < channelCount; i++) {
    const at = r.offset;
    const kind = r.u8('channel kind');
    if (kind > MAX_CHANNEL_KIND) r.fail(`channel kind ${kind} outside 0..=${MAX_CHANNEL_KIND}`, at);
    channels.push(kind as ChannelKind);
  }
  const session_key = toHex(r.take(SESSION_KEY_BYTES, 'session_key'));
  const payload = toHex(r.bytes('handshake_payload'));
  const padAt = r.offset;
  if (r.take(r.remaining, 'padding').some((b) => b !== 0)) r.fail('non-zero byte in HELLO padding', padAt);
  return { type: 'HELLO', connection_id, version, channels, session_key, payload };
}

function decodeWelcome(r: Reader): WelcomePacket {
  const connection_id = connectionId(r);
  const version = r.u16('version');
  const tag = toHex(r.take(TAG_BYTES, 'tag'));
  const nonce = toHex(r.take(NONCE_BYTES, 'nonce'));
  if (r.remaining !== 0) r.fail(`${r.remaining} bytes after WELCOME`);
  return { type: 'WELCOME', connection_id, version, tag, nonce };
}

function decodeReject(r: Reader): RejectPacket {
  const connection_id = connectionId(r);
  const version = r.u16('version');
  const tag = toHex(r.take(TAG_BYTES, 'tag'));
  const reason = utf8.decode(r.bytes('reason'));
  if (r.remaining !== 0) r.fail(`${r.remaining} bytes after REJECT reason`);
  return { type: 'REJECT', connection_id, version, tag, reason };
}

function decodeAck(r: Reader): AckFrame {
  const largest = r.u16('largest_acknowledged');
  const ack_delay_us = numberOrBigint(r.varint('ack_delay_us'));
  const rangeCount = r.boundedVarint('range_count', 0, MAX_ACK_RANGES);
  const first_range = r.boundedVarint('first_range', 0, MAX_ACK_RANGE_VALUE);
  const ranges: [number, number][] = [];
  for (let i = 0; i < rangeCount; i++) {
    const gap = r.boundedVarint('gap', 0, MAX_ACK_RANGE_VALUE);
    const length = r.boundedVarint('length', 0, MAX_ACK_RANGE_VALUE);
    ranges.push([gap, length]);
  }
  return { type: 'ACK', largest, ack_delay_us, first_range, ranges };
}

function decodeClose(r: Reader): CloseFrame {
  const code = numberOrBigint(r.varint('code'));
  const reason = utf8.decode(r.bytes('reason'));
  return { type: 'CLOSE', code, reason };
}

function decodeMessages(r: Reader): MessagesFrame {
  const channel = r.u8('channel');
  const first_seq = r.u16('first_seq');
  const countAt = r.offset;
  const count = r.varint('count');
  if (count < 1n) r.fail('MESSAGES count must be at least 1', countAt);
  // Every message takes at least its 1-byte length: cheap early truncation check.
  if (count > BigInt(r.remaining)) r.fail(`MESSAGES count ${count} exceeds remaining bytes`, countAt);
  const messages: string[] = [];
  for (let i = 0n; i < count; i++) messages.push(toHex(r.bytes('message')));
  return { type: 'MESSAGES', channel, first_seq, messages };
}

function decodeFragment(r: Reader): FragmentFrame {
  const channel = r.u8('channel');
  const seq = r.u16('seq');
  const indexAt = r.offset;
  const indexRaw = r.varint('index');
  const count = r.boundedVarint('fragment count', MIN_FRAGMENT_COUNT, MAX_FRAGMENT_COUNT);
  if (indexRaw >= BigInt(count)) r.fail(`fragment index ${indexRaw} not below count ${count}`, indexAt);
  const dataAt = r.offset;
  const raw = r.bytes('fragment data');
  // WIRE.md: every fragment but the last carries at least 64 bytes.
  if (Number(indexRaw) + 1 < count && raw.length < 64) r.fail(`fragment ${indexRaw} of ${count} carries ${raw.length} bytes (< 64)`, dataAt);
  const data = toHex(raw);
  return { type: 'FRAGMENT', channel, seq, index: Number(indexRaw), count, data };
}

function decodeRepair(r: Reader): RepairFrame {
  const first_pn = r.u16('first_pn');
  const countAt = r.offset;
  const countByte = r.u8('repair count');
  // Low six bits the count, top two the power of ω (0..=2).
  const count = countByte & 0x3f;
  const power = countByte >> 6;
  if (count < MIN_REPAIR_COUNT || count > MAX_REPAIR_COUNT) r.fail(`REPAIR count ${count} outside ${MIN_REPAIR_COUNT}..=${MAX_REPAIR_COUNT}`, countAt);
  if (power > 2) r.fail(`REPAIR power ${power} outside 0..=2`, countAt);
  const parityAt = r.offset;
  const raw = r.bytes('parity');
  if (raw.length < MIN_PARITY_BYTES) r.fail(`REPAIR parity of ${raw.length} bytes (< ${MIN_PARITY_BYTES})`, parityAt);
  return { type: 'REPAIR', first_pn, count, power, parity: toHex(raw) };
}

function decodeLossReport(r: Reader): LossReportFrame {
  const loss = r.u16('loss');
  const burst = r.u16('burst');
  return { type: 'LOSS_REPORT', loss, burst };
}

function decodeData(r: Reader): DataPacket {
  const connection_id = connectionId(r);
  const packet_number = r.u16('packet_number');
  const tag = toHex(r.take(TAG_BYTES, 'tag'));
  const frames: Frame[] = [];
  while (r.remaining > 0) {
    const at = r.offset;
    const frameType = r.u8('frame type');
    switch (frameType) {
      case 0x01:
        frames.push(decodeAck(r));
        break;
      case 0x02:
        frames.push({ type: 'PING' });
        break;
      case 0x03:
        frames.push(decodeClose(r));
        break;
      case 0x10:
        frames.push(decodeMessages(r));
        break;
      case 0x11:
        frames.push(decodeFragment(r));
        break;
      case 0x20:
        frames.push(decodeRepair(r));
        break;
      case 0x21:
        frames.push(decodeLossReport(r));
        break;
      case 0x30:
      case 0x31:
        frames.push({ type: frameType === 0x30 ? 'PATH_CHALLENGE' : 'PATH_RESPONSE', data: toHex(r.take(8, 'path data')) });
        break;
      default:
        r.fail(`unknown frame type 0x${frameType.toString(16).padStart(2, '0')}`, at);
    }
  }
  return { type: 'DATA', connection_id, packet_number, tag, frames };
}

/** Decodes one datagram; throws WireDecodeError on anything WIRE.md says to reject. */
export function decodeDatagram(bytes: Uint8Array): DecodedPacket {
  const r = new Reader(bytes);
  const packetType = r.u8('packet type');
  switch (packetType) {
    case 0x01:
      return decodeHello(r);
    case 0x02:
      return decodeWelcome(r);
    case 0x03:
      return decodeReject(r);
    case 0x04:
      return decodeData(r);
    default:
      return r.fail(`unknown packet type 0x${packetType.toString(16).padStart(2, '0')}`, 0);
  }
}

/**
 * Absolute acknowledged ranges [largest, smallest] (inclusive, descending) of an
 * ACK frame, given the full 64-bit largest acknowledged packet number (the
 * 16-bit wire value expanded by the caller, which needs connection state).
 * Throws WireDecodeError if a range would go below packet 0.
 */
export function ackRanges(ack: AckFrame, fullLargest: bigint): [bigint, bigint][] {
  if ((fullLargest & 0xffffn) !== BigInt(ack.largest)) {
    throw new WireDecodeError(`full largest ${fullLargest} does not match wire low bits ${ack.largest}`, 0);
  }
  const out: [bigint, bigint][] = [];
  let hi = fullLargest;
  let lo = hi - BigInt(ack.first_range);
  if (lo < 0n) throw new WireDecodeError('ACK first range below packet 0', 0);
  out.push([hi, lo]);
  for (const [gap, length] of ack.ranges) {
    hi = lo - BigInt(gap) - 2n;
    lo = hi - BigInt(length);
    if (lo < 0n) throw new WireDecodeError('ACK range below packet 0', 0);
    out.push([hi, lo]);
  }
  return out;
}

/** 32-bit FNV-1a (WIRE.md REPAIR: offset basis 0x811C9DC5, prime 0x01000193). */
export function fnv1a32(bytes: Uint8Array): number {
  let h = 0x811c9dc5;
  for (const b of bytes) h = Math.imul(h ^ b, 0x01000193) >>> 0;
  return h >>> 0;
}

/** REPAIR image of a protected DATA packet: u16 body_length ‖ u32 check ‖ body. */
function image(datagram: Uint8Array): Uint8Array {
  const body = datagram.subarray(DATA_HEADER_BYTES);
  const out = new Uint8Array(MIN_PARITY_BYTES + body.length);
  const view = new DataView(out.buffer);
  view.setUint16(0, body.length, true);
  view.setUint32(2, fnv1a32(body), true);
  out.set(body, MIN_PARITY_BYTES);
  return out;
}

// GF(4) = {0, 1, ω, ω²} with ω² = ω + 1: each byte holds four elements,
// bit pairs whose low bit counts 1 and high bit ω. Non-zero elements as
// powers of ω: 1 = 0b01, ω = 0b10, ω² = 0b11.
const GF4_EXP = [0b01, 0b10, 0b11];
const GF4_LOG = [-1, 0, 1, 2];

/** Every element of byte `x` times ω^power. */
export function gf4Times(x: number, power: number): number {
  let out = 0;
  for (let shift = 0; shift < 8; shift += 2) {
    const e = (x >> shift) & 3;
    if (e !== 0) out |= GF4_EXP[(GF4_LOG[e]! + power) % 3]! << shift;
  }
  return out;
}

/** The body an image carries, or null when WIRE.md says to refuse it. */
function bodyOfImage(img: Uint8Array): Uint8Array | null {
  const view = new DataView(img.buffer, img.byteOffset, img.byteLength);
  const len = view.getUint16(0, true);
  if (MIN_PARITY_BYTES + len > img.length) return null;
  const body = img.subarray(MIN_PARITY_BYTES, MIN_PARITY_BYTES + len);
  if (img.subarray(MIN_PARITY_BYTES + len).some((b) => b !== 0)) return null;
  if (fnv1a32(body) !== view.getUint32(2, true)) return null;
  return body;
}

const fromHex = (h: string) => Uint8Array.from(h.match(/../g) ?? [], (x) => parseInt(x, 16));

/**
 * Both members of a two-packet group, both lost, from two of its REPAIRs of
 * different powers p and q: r = A + ω^p·B and s = A + ω^q·B, so
 * r + s = (ω^p + ω^q)·B and A = r + ω^p·B. Null if either is refused.
 */
export function rebuildBoth(r: RepairFrame, s: RepairFrame): [Uint8Array, Uint8Array] | null {
  const x = fromHex(r.parity);
  const y = fromHex(s.parity);
  if (r.count !== 2 || s.count !== 2 || r.power === s.power || x.length !== y.length) return null;
  const sum = GF4_EXP[r.power]! ^ GF4_EXP[s.power]!; // ω^p + ω^q, non-zero
  const inverse = (3 - GF4_LOG[sum]!) % 3;
  const b = x.map((v, i) => gf4Times(v ^ y[i]!, inverse));
  const a = x.map((v, i) => v ^ gf4Times(b[i]!, r.power));
  const bodyA = bodyOfImage(a);
  const bodyB = bodyOfImage(b);
  return bodyA && bodyB ? [bodyA, bodyB] : null;
}

/**
 * Rebuilds the body (frames) of the one protected packet missing from a
 * REPAIR's group (power 0), given every other member's datagram as received. Returns
 * null when WIRE.md says to refuse the result (length beyond the parity,
 * non-zero padding, or a check value that does not match).
 */
export function rebuildBody(parityHex: string, others: Uint8Array[]): Uint8Array | null {
  const parity = fromHex(parityHex);
  for (const d of others) {
    const img = image(d);
    if (img.length > parity.length) return null;
    for (let i = 0; i < img.length; i++) parity[i]! ^= img[i]!;
  }
  return bodyOfImage(parity);
}

// ---- Authentication (WIRE.md "Authentication"), on BigInt for clarity ----

const MASK64 = (1n << 64n) - 1n;
const rotl = (x: bigint, b: bigint): bigint => ((x << b) | (x >> (64n - b))) & MASK64;

function le64(bytes: Uint8Array, at: number): bigint {
  let v = 0n;
  for (let i = 7; i >= 0; i--) v = (v << 8n) | BigInt(bytes[at + i] ?? 0);
  return v;
}

/** SipHash-2-4 of `msg` under the 128-bit key (k0, k1). */
export function siphash24(k0: bigint, k1: bigint, msg: Uint8Array): bigint {
  let v0 = k0 ^ 0x736f6d6570736575n;
  let v1 = k1 ^ 0x646f72616e646f6dn;
  let v2 = k0 ^ 0x6c7967656e657261n;
  let v3 = k1 ^ 0x7465646279746573n;
  const round = () => {
    v0 = (v0 + v1) & MASK64;
    v1 = rotl(v1, 13n) ^ v0;
    v0 = rotl(v0, 32n);
    v2 = (v2 + v3) & MASK64;
    v3 = rotl(v3, 16n) ^ v2;
    v0 = (v0 + v3) & MASK64;
    v3 = rotl(v3, 21n) ^ v0;
    v2 = (v2 + v1) & MASK64;
    v1 = rotl(v1, 17n) ^ v2;
    v2 = rotl(v2, 32n);
  };
  // Whole 8-byte words, then the last word: the tail bytes and the length's low byte on top.
  const last = new Uint8Array(8);
  const whole = msg.length - (msg.length % 8);
  last.set(msg.subarray(whole));
  last[7] = msg.length & 0xff;
  const words: bigint[] = [];
  for (let i = 0; i < whole; i += 8) words.push(le64(msg, i));
  words.push(le64(last, 0));
  for (const m of words) {
    v3 ^= m;
    round();
    round();
    v0 ^= m;
  }
  v2 ^= 0xffn;
  for (let i = 0; i < 4; i++) round();
  return v0 ^ v1 ^ v2 ^ v3;
}

/**
 * A direction's tag key from the session key: 2 server → client; 1 client →
 * server, which also mixes in the server's nonce N from WELCOME.
 */
export function tagKey(sessionKey: Uint8Array, direction: 1, nonce: Uint8Array): [bigint, bigint];
export function tagKey(sessionKey: Uint8Array, direction: 2): [bigint, bigint];
export function tagKey(sessionKey: Uint8Array, direction: 1 | 2, nonce?: Uint8Array): [bigint, bigint] {
  const k0 = le64(sessionKey, 0);
  const k1 = le64(sessionKey, 8);
  const label = new TextEncoder().encode('ricochet-3');
  const n = direction === 1 ? [...nonce!] : [];
  if (n.length !== (direction === 1 ? NONCE_BYTES : 0)) throw new Error('tagKey: client → server needs the 8-byte nonce');
  const half = (h: number) => siphash24(k0, k1, Uint8Array.from([...label, direction, h, ...n]));
  return [half(0), half(1)];
}

/** The number a WELCOME's tag covers: its nonce read as a little-endian u64. */
export function welcomeNumber(nonce: Uint8Array): bigint {
  return le64(nonce, 0);
}

/** The tag of a packet: SipHash-2-4 over type ‖ connection ID ‖ number (u64) ‖ length (u32). */
export function packetTag(key: [bigint, bigint], datagram: Uint8Array, number: bigint): string {
  const msg = new Uint8Array(17);
  const view = new DataView(msg.buffer);
  msg[0] = datagram[0]!;
  msg.set(datagram.subarray(1, 5), 1);
  view.setBigUint64(5, number, true);
  view.setUint32(13, datagram.length, true);
  const t = siphash24(key[0], key[1], msg);
  const out = new Uint8Array(8);
  new DataView(out.buffer).setBigUint64(0, t, true);
  return toHex(out);
}
