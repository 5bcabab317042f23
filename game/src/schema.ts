// A typed message schema: message kinds with an id and fields of given bit
// widths and quantisers; encode and decode follow, with the TypeScript types
// inferred from the definition. Ids, counts, lengths and values are checked
// both ways: encoding a value that does not fit throws a RangeError (a bug
// in the sender), decoding bytes that do not fit throws a DecodeError (a bad
// or hostile peer), and every count has a maximum, so decoding allocates at
// most what the schema allows.
import { BitReader, BitWriter, DecodeError } from './bits.js';
import { Quantizer, decodeAngle, encodeAngle } from './quantize.js';

/** How one field is written and read. Build them with the functions below ({@link uint}, {@link array}, …). */
export interface Field<T> {
  /** The fewest bits an encoding takes (bounds an array's count before anything is allocated). */
  readonly minBits: number;
  /** Writes `value`; throws a RangeError naming `path` when it does not fit. */
  write(w: BitWriter, value: T, path: string): void;
  /** Reads a value; throws a DecodeError naming `path` when the bytes do not fit. */
  read(r: BitReader, path: string): T;
}

/** The value type of a field. */
export type Infer<F> = F extends Field<infer T> ? T : never;

/** Fields by name. */
export type Fields = Readonly<Record<string, Field<any>>>;

/** The object type of a set of fields. */
export type InferFields<F extends Fields> = { -readonly [K in keyof F]: Infer<F[K]> };

const misuse = (path: string, what: string) => new RangeError(`${path}: ${what}`);

/** An unsigned integer of `bits` bits (0..32), at most `max` (default 2^bits − 1). */
export function uint(bits: number, { max }: { max?: number } = {}): Field<number> {
  if (!Number.isInteger(bits) || bits < 0 || bits > 32) throw new RangeError(`uint: bits must be 0..32, not ${bits}`);
  const top = max ?? 2 ** bits - 1;
  if (!Number.isInteger(top) || top < 0 || top > 2 ** bits - 1) throw new RangeError(`uint: max ${top} does not fit in ${bits} bits`);
  return {
    minBits: bits,
    write(w, v, path) {
      if (!Number.isInteger(v) || v < 0 || v > top) throw misuse(path, `${v} is not an integer in 0..${top}`);
      w.writeBits(v, bits);
    },
    read(r, path) {
      const v = r.readBits(bits);
      if (v > top) throw new DecodeError('out-of-range', `${path}: ${v} over ${top}`);
      return v;
    },
  };
}

/** A signed integer of `bits` bits (2..32), in −2^(bits−1)..2^(bits−1) − 1, written offset by 2^(bits−1). */
export function int(bits: number): Field<number> {
  if (!Number.isInteger(bits) || bits < 2 || bits > 32) throw new RangeError(`int: bits must be 2..32, not ${bits}`);
  const half = 2 ** (bits - 1);
  return {
    minBits: bits,
    write(w, v, path) {
      if (!Number.isInteger(v) || v < -half || v >= half) throw misuse(path, `${v} is not an integer in ${-half}..${half - 1}`);
      w.writeBits(v + half, bits);
    },
    read: (r) => r.readBits(bits) - half,
  };
}

/** One bit. */
export function bool(): Field<boolean> {
  return { minBits: 1, write: (w, v) => w.writeBool(v), read: (r) => r.readBool() };
}

/** A real number on a {@link Quantizer}'s grid: clamped to its range when written, so the reader sees `q.snap(value)`. */
export function quantized(q: Quantizer): Field<number> {
  return {
    minBits: q.bits,
    write(w, v, path) {
      if (typeof v !== 'number') throw misuse(path, 'not a number');
      w.writeBits(q.encode(v), q.bits);
    },
    read: (r) => q.decode(r.readBits(q.bits)),
  };
}

/** An angle in radians as `bits` bits (1..32), wrapping; read back in [0, 2π). */
export function angle(bits: number): Field<number> {
  if (!Number.isInteger(bits) || bits < 1 || bits > 32) throw new RangeError(`angle: bits must be 1..32, not ${bits}`);
  return {
    minBits: bits,
    write(w, v, path) {
      if (typeof v !== 'number') throw misuse(path, 'not a number');
      w.writeBits(encodeAngle(v, bits), bits);
    },
    read: (r) => decodeAngle(r.readBits(bits), bits),
  };
}

/** A string: byte-aligned, a length byte and its UTF-8, at most `maxBytes` (≤ 255). A longer one is cut on a character boundary when written (`truncate`, the default) or refused. */
export function string(maxBytes: number, { truncate = true }: { truncate?: boolean } = {}): Field<string> {
  if (!Number.isInteger(maxBytes) || maxBytes < 0 || maxBytes > 255) throw new RangeError(`string: maxBytes must be 0..255, not ${maxBytes}`);
  const utf8 = new TextEncoder();
  return {
    minBits: 8,
    write(w, v, path) {
      if (typeof v !== 'string') throw misuse(path, 'not a string');
      if (!truncate && utf8.encode(v).length > maxBytes) throw misuse(path, `longer than ${maxBytes} bytes`);
      w.writeString(v, maxBytes);
    },
    read: (r, path) => r.readString(maxBytes, path),
  };
}

/** `field`, starting at a byte boundary (so a receiver can copy or patch aligned bytes; a 32-bit uint there is 4 little-endian bytes). */
export function aligned<T>(field: Field<T>): Field<T> {
  return {
    minBits: field.minBits,
    write(w, v, path) {
      w.align();
      field.write(w, v, path);
    },
    read(r, path) {
      r.align();
      return field.read(r, path);
    },
  };
}

/** Options of {@link array}. */
export interface ArrayOptions {
  /** Most items; more is a RangeError when written and a DecodeError when read. */
  max: number;
  /** Fewest items. Default 0. The count is written as count − min. */
  min?: number;
  /** Bits of the count. Default: the fewest that hold max − min. */
  countBits?: number;
}

/** A list of `item`s, its length first. */
export function array<T>(item: Field<T>, { max, min = 0, countBits }: ArrayOptions): Field<T[]> {
  if (!Number.isInteger(min) || !Number.isInteger(max) || min < 0 || max < min) throw new RangeError(`array: need integers 0 ≤ min ≤ max, not ${min}..${max}`);
  const bits = countBits ?? Math.ceil(Math.log2(max - min + 1));
  if (!Number.isInteger(bits) || bits < 0 || bits > 32 || max - min > 2 ** bits - 1) throw new RangeError(`array: ${max - min + 1} counts do not fit in ${bits} bits`);
  return {
    minBits: bits + min * item.minBits,
    write(w, v, path) {
      if (!Array.isArray(v)) throw misuse(path, 'not an array');
      if (v.length < min || v.length > max) throw misuse(path, `${v.length} items, not ${min}..${max}`);
      w.writeBits(v.length - min, bits);
      v.forEach((x, i) => item.write(w, x, `${path}[${i}]`));
    },
    read(r, path) {
      const n = r.readBits(bits) + min;
      if (n > max) throw new DecodeError('out-of-range', `${path}: count ${n} over ${max}`);
      // Refuse a count the bytes left cannot hold before allocating for it.
      if (n * item.minBits > r.remainingBits) throw new DecodeError('truncated', `${path}: ${n} items cannot fit in the bytes left`);
      const out: T[] = [];
      for (let i = 0; i < n; i++) out.push(item.read(r, `${path}[${i}]`));
      return out;
    },
  };
}

/** An object of named fields, written in the order they are listed. */
export function struct<F extends Fields>(fields: F): Field<InferFields<F>> {
  const entries = Object.entries(fields);
  return {
    minBits: entries.reduce((n, [, f]) => n + f.minBits, 0),
    write(w, v, path) {
      if (v === null || typeof v !== 'object') throw misuse(path, 'not an object');
      for (const [name, f] of entries) f.write(w, (v as Record<string, unknown>)[name], `${path}.${name}`);
    },
    read(r, path) {
      const out: Record<string, unknown> = {};
      for (const [name, f] of entries) out[name] = f.read(r, `${path}.${name}`);
      return out as InferFields<F>;
    },
  };
}

/** One message kind: its id (the tag written first) and its fields. */
export interface MessageDef {
  readonly id: number;
  readonly fields: Fields;
}

/** The union of a schema's messages, each `{ type: name, ...fields }`. */
export type MessageUnion<M extends Readonly<Record<string, MessageDef>>> = {
  // One flat object type per kind (an intersection would read worse in editors).
  [K in keyof M & string]: { [P in 'type' | keyof M[K]['fields']]: P extends 'type' ? K : Infer<M[K]['fields'][P]> };
}[keyof M & string];

/** The message type of a schema: `MessageOf<typeof schema>`. */
export type MessageOf<S> = S extends Schema<infer M> ? M : never;

/** Encoder and decoder of one set of message kinds. */
export interface Schema<M extends { type: string }> {
  /** Bits of the leading id. */
  readonly idBits: number;
  /** The bytes of `message`; a value that does not fit its field throws a RangeError. */
  encode(message: M): Uint8Array;
  /** Appends `message` to a writer (to prefix or batch it). */
  write(w: BitWriter, message: M): void;
  /** One whole message from `bytes`; bad bytes throw a {@link DecodeError}, and nothing else. */
  decode(bytes: Uint8Array): M;
  /** One message from a reader, leaving it after the message (for several in one datagram). */
  read(r: BitReader): M;
  /** The id of a message kind. */
  idOf(type: M['type']): number;
}

/**
 * Defines message kinds. Each starts with its id in `idBits` bits; ids are
 * checked to be distinct and to fit when defined.
 *
 * ```ts
 * const schema = defineMessages({ idBits: 4 }, {
 *   join: { id: 1, fields: { room: uint(8), name: string(16) } },
 *   move: { id: 2, fields: { x: quantized(new Quantizer(0, 0.125, 14)), aim: angle(8) } },
 * });
 * type Msg = MessageOf<typeof schema>; // { type: 'join'; room: number; name: string } | { type: 'move'; … }
 * ```
 */
export function defineMessages<const D extends Readonly<Record<string, MessageDef>>>(options: { idBits: number }, defs: D): Schema<MessageUnion<D>> {
  type M = MessageUnion<D>;
  const { idBits } = options;
  if (!Number.isInteger(idBits) || idBits < 1 || idBits > 32) throw new RangeError(`defineMessages: idBits must be 1..32, not ${idBits}`);
  const byId = new Map<number, { type: string; body: Field<Record<string, unknown>> }>();
  const ids = new Map<string, number>();
  for (const [type, def] of Object.entries(defs)) {
    if (!Number.isInteger(def.id) || def.id < 0 || def.id > 2 ** idBits - 1) throw new RangeError(`defineMessages: ${type}: id ${def.id} does not fit in ${idBits} bits`);
    const clash = byId.get(def.id);
    if (clash) throw new RangeError(`defineMessages: ${type} and ${clash.type} share id ${def.id}`);
    if ('type' in def.fields) throw new RangeError(`defineMessages: ${type}: "type" names the message, not a field`);
    byId.set(def.id, { type, body: struct(def.fields) as Field<Record<string, unknown>> });
    ids.set(type, def.id);
  }
  const write = (w: BitWriter, m: M): void => {
    const id = ids.get(m?.type);
    if (id === undefined) throw new RangeError(`unknown message type ${String(m?.type)}`);
    w.writeBits(id, idBits);
    byId.get(id)!.body.write(w, m as unknown as Record<string, unknown>, m.type);
  };
  const read = (r: BitReader): M => {
    const id = r.readBits(idBits);
    const kind = byId.get(id);
    if (!kind) throw new DecodeError('unknown-tag', `unknown message tag ${id}`);
    return { type: kind.type, ...kind.body.read(r, kind.type) } as unknown as M;
  };
  return {
    idBits,
    write,
    read,
    encode(m) {
      const w = new BitWriter(32);
      write(w, m);
      return w.finish();
    },
    decode(bytes) {
      const r = new BitReader(bytes);
      const m = read(r);
      r.finish();
      return m;
    },
    idOf: (type) => ids.get(type)!,
  };
}
