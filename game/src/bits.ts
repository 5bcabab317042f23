// Bit-packing for compact game messages. Byte-compatible with the Rust crate
// ricochet-game (wasm/game/src/bits.rs), pinned by the arcade's shared
// vectors: stream bit i is bit i % 8 of byte i / 8, and each value is written
// least significant bit first. The last byte is zero-padded, so a 32-bit
// field at a byte boundary is the value's four little-endian bytes.

/** Why bytes could not be decoded (`DecodeError.code`). */
export type DecodeErrorCode = 'truncated' | 'unknown-tag' | 'invalid-utf8' | 'out-of-range' | 'trailing-bytes';

/**
 * Why bytes could not be decoded. Decoding bad bytes throws this, never
 * anything else: catch it, count it and drop the message.
 */
export class DecodeError extends Error {
  constructor(
    /** `truncated`: the bytes ended inside a field; `unknown-tag`: no message has that id; `invalid-utf8`: a string's bytes; `out-of-range`: a count, length or value over its bound; `trailing-bytes`: bytes after the message. */
    readonly code: DecodeErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'DecodeError';
  }
}

const utf8 = new TextEncoder();
const utf8Strict = new TextDecoder('utf-8', { fatal: true });

function checkWidth(bits: number): void {
  if (!Number.isInteger(bits) || bits < 0 || bits > 32) throw new RangeError(`a bit field is 0..32 bits, not ${bits}`);
}

/** Appends bit fields to a growing buffer; `finish()` returns the bytes. */
export class BitWriter {
  private bytes: Uint8Array;
  private length = 0;
  /** Bits used in the last byte (0 = the next write starts a new byte). */
  private used = 0;

  constructor(capacity = 64) {
    this.bytes = new Uint8Array(Math.max(capacity, 8));
  }

  private push(byte: number): void {
    if (this.length === this.bytes.length) {
      const grown = new Uint8Array(this.bytes.length * 2);
      grown.set(this.bytes);
      this.bytes = grown;
    }
    this.bytes[this.length++] = byte;
  }

  /** Writes the low `bits` bits (0..32) of the integer `value` (higher bits are dropped). */
  writeBits(value: number, bits: number): void {
    checkWidth(bits);
    // Split so every step fits in 31-bit-safe integer arithmetic.
    let v = bits === 32 ? value >>> 0 : (value >>> 0) % 2 ** bits;
    let left = bits;
    while (left > 0) {
      if (this.used === 0) this.push(0);
      const take = Math.min(8 - this.used, left);
      this.bytes[this.length - 1]! |= (v % (1 << take)) << this.used;
      v = Math.floor(v / (1 << take));
      left -= take;
      this.used = (this.used + take) % 8;
    }
  }

  /** Writes one bit. */
  writeBool(v: boolean): void {
    this.writeBits(v ? 1 : 0, 1);
  }

  /** Pads to the next byte boundary with zero bits. */
  align(): void {
    this.used = 0;
  }

  /** Aligns, then appends raw bytes. */
  writeBytes(data: Uint8Array): void {
    this.align();
    for (const b of data) this.push(b);
  }

  /** Aligns, then a length byte and the UTF-8 of `s`, cut at `maxBytes` (≤ 255) on a character boundary. */
  writeString(s: string, maxBytes: number): void {
    let raw = utf8.encode(s);
    let end = Math.min(raw.length, maxBytes, 255);
    while (end > 0 && end < raw.length && (raw[end]! & 0xc0) === 0x80) end--;
    raw = raw.subarray(0, end);
    this.align();
    this.push(end);
    for (const b of raw) this.push(b);
  }

  /** Bytes written so far (a partly filled last byte counts). */
  get byteLength(): number {
    return this.length;
  }

  /** A copy of the bytes written. */
  finish(): Uint8Array {
    return this.bytes.slice(0, this.length);
  }
}

/** Reads bit fields written by {@link BitWriter}. Every read is bounds-checked and throws only {@link DecodeError}. */
export class BitReader {
  /** Next bit to read. */
  private pos = 0;

  constructor(private readonly bytes: Uint8Array) {}

  /** Bits left to read (the last byte's padding included). */
  get remainingBits(): number {
    return this.bytes.length * 8 - this.pos;
  }

  /** Reads `bits` bits (0..32) as an unsigned integer. */
  readBits(bits: number): number {
    checkWidth(bits);
    if (this.pos + bits > this.bytes.length * 8) throw new DecodeError('truncated', 'message truncated');
    let value = 0;
    let got = 0;
    while (got < bits) {
      const offset = this.pos % 8;
      const take = Math.min(8 - offset, bits - got);
      value += ((this.bytes[this.pos >>> 3]! >>> offset) & ((1 << take) - 1)) * 2 ** got;
      got += take;
      this.pos += take;
    }
    return value;
  }

  /** Reads one bit. */
  readBool(): boolean {
    return this.readBits(1) === 1;
  }

  /** Skips to the next byte boundary. */
  align(): void {
    this.pos = Math.ceil(this.pos / 8) * 8;
  }

  /** Aligns, then takes `n` raw bytes (a view, not a copy). */
  readBytes(n: number): Uint8Array {
    this.align();
    const start = this.pos / 8;
    if (start + n > this.bytes.length) throw new DecodeError('truncated', 'message truncated');
    this.pos = (start + n) * 8;
    return this.bytes.subarray(start, start + n);
  }

  /** A string written by `writeString`; longer than `maxBytes` is an error naming `field`. */
  readString(maxBytes: number, field: string): string {
    const len = this.readBytes(1)[0]!;
    if (len > maxBytes) throw new DecodeError('out-of-range', `${field} out of range`);
    try {
      return utf8Strict.decode(this.readBytes(len));
    } catch (e) {
      if (e instanceof DecodeError) throw e;
      throw new DecodeError('invalid-utf8', 'string is not UTF-8');
    }
  }

  /** Throws unless only the final byte's zero padding is left. */
  finish(): void {
    this.align();
    const left = this.bytes.length - this.pos / 8;
    if (left > 0) throw new DecodeError('trailing-bytes', `${left} trailing bytes after the message`);
  }
}
