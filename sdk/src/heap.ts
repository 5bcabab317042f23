// Moves bytes between JS and a wasm core through views into its memory:
// one copy in, one copy out, no per-datagram allocation inside wasm; and
// reads a core's outputs in batches (`CorePort`): one boundary call for all
// the datagrams of a drain, one for all its events.
// (Internal: WebAssembly types must not reach the public declarations.)
import { BATCH } from './wasm-codes.js';

const decoder = new TextDecoder();

interface HasIo {
  ioReserve(len: number): number;
}

/** Views into one wasm instance's memory. */
export class Heap {
  /** The whole heap, as bytes and as 32-bit words (current after `fresh()`). */
  view: Uint8Array;
  words: Uint32Array;

  constructor(readonly memory: WebAssembly.Memory) {
    this.view = new Uint8Array(memory.buffer);
    this.words = new Uint32Array(memory.buffer);
  }

  /**
   * Renew the views if memory grew since they were made. Growth detaches
   * the old buffer, whose views then read `undefined` at any index: a test
   * far cheaper than `memory.buffer` or `byteLength` (tens of ns each, per
   * datagram and event).
   */
  fresh(): void {
    if (this.words[0] === undefined) {
      this.view = new Uint8Array(this.memory.buffer);
      this.words = new Uint32Array(this.memory.buffer);
    }
  }

  /** A view over the whole heap, refreshed after memory growth. */
  bytes(): Uint8Array {
    this.fresh();
    return this.view;
  }

  /** Copies `bytes` into the object's input buffer; returns the length. */
  writeIn(target: HasIo, bytes: Uint8Array): number {
    // `bytes` may be another core's output still in this memory (a loopback
    // or simulated link hands `viewOut` views straight across). Reserving can
    // grow memory, which detaches such a view: copy it out first.
    const src = bytes.buffer === this.memory.buffer ? bytes.slice() : bytes;
    const ptr = target.ioReserve(src.length);
    this.bytes().set(src, ptr);
    return src.length;
  }

  /** A copy of `len` bytes at `ptr` (safe to keep after further wasm calls). */
  readOut(ptr: number, len: number): Uint8Array {
    return this.bytes().slice(ptr, ptr + len);
  }

  readText(ptr: number, len: number): string {
    return decoder.decode(this.bytes().subarray(ptr, ptr + len));
  }
}

/** What `CorePort` needs of a wasm `Client` or `Server`. */
interface BatchCore extends HasIo {
  tablePtr(): number;
  transmit(now: number, max: number): number;
  takeEvents(max: number): number;
}

const TX_AT = BATCH.HEADER_WORDS;
const EV_AT = TX_AT + BATCH.RECORDS * BATCH.TX_WORDS;

/**
 * One wasm `Client` or `Server` seen from JS: its input buffer (reserved
 * once, reused while big enough) and its outputs, taken a batch at a time
 * (wasm/wasm/src/batch.rs) and handed out one by one. The cursors live here,
 * not in the caller's loop, so a drain re-entered from an event handler or
 * a synchronous transport carries on with the same batch, in order, as one
 * call per output did.
 */
export class CorePort {
  /** The table's first word in `heap.words`; word 0 counts the core's mutating calls. */
  private readonly table_: number;
  private ioPtr_ = 0;
  private ioCap_ = 0;
  private txAt_ = 0;
  private txEnd_ = 0;
  /** The last `transmit` was short at `txNow` and `txEpoch`: nothing more is due until either moves. */
  private txShort_ = false;
  private txNow_ = -1;
  private txEpoch_ = 0;
  private evAt_ = 0;
  private evEnd_ = 0;
  private evShort_ = false;
  private evEpoch_ = 0;
  /** The last datagram's connection and whether it goes to the candidate address (server). */
  txConn = 0;
  txCandidate = false;
  /** The last event's connection (server), channel or close kind, bytes, and message ID or close code. */
  evConn = 0;
  evArg = 0;
  evPtr = 0;
  evLen = 0;
  evWide = 0;

  constructor(
    readonly heap: Heap,
    private readonly core: BatchCore,
  ) {
    this.table_ = core.tablePtr() >>> 2;
  }

  /** The datagram view last handed out, reused while the next one has the same place. */
  private txView_: Uint8Array | null = null;
  private txViewOf_: Uint8Array | null = null;
  private txViewPtr_ = 0;

  /** The core's count of mutating calls (views must be fresh). */
  private epoch_(): number {
    return this.heap.words[this.table_]!;
  }

  /** Copies `bytes` into the core's input buffer; returns the length. */
  writeIn(bytes: Uint8Array): number {
    let src = bytes;
    if (src.length > this.ioCap_) {
      // Reserving can grow memory, detaching a view of it (a loopback hands
      // another core's output straight across): copy such a view out first.
      if (src.buffer === this.heap.memory.buffer) src = src.slice();
      this.ioCap_ = Math.max(src.length, 2048);
      this.ioPtr_ = this.core.ioReserve(this.ioCap_);
    }
    this.heap.bytes().set(src, this.ioPtr_);
    return src.length;
  }

  /** `len` bytes of text the core left in its input buffer (why a call was refused). */
  readText(len: number): string {
    this.ioCap_ = 0; // writing it may have moved the buffer: reserve anew next time
    return this.heap.readText(this.core.ioReserve(0), len);
  }

  /**
   * The next datagram due at `now` (a view valid until the next call into
   * this core), or null; `max` caps how many the core writes per call (1
   * when the transport may refuse the next one).
   */
  nextDatagram(now: number, max: number): Uint8Array | null {
    const heap = this.heap;
    heap.fresh();
    if (this.txAt_ >= this.txEnd_) {
      if (this.txShort_ && this.txNow_ === now && this.epoch_() === this.txEpoch_) return null;
      const n = this.core.transmit(now, max);
      heap.fresh();
      this.txAt_ = 0;
      this.txEnd_ = n;
      this.txShort_ = n < max;
      this.txNow_ = now;
      this.txEpoch_ = this.epoch_();
      if (n === 0) return null;
    }
    const w = heap.words;
    const r = this.table_ + TX_AT + this.txAt_++ * BATCH.TX_WORDS;
    const ptr = w[r]!;
    const len = w[r + 1]!;
    this.txConn = w[r + 2]!;
    this.txCandidate = w[r + 3] !== 0;
    // A new view costs more than the rest of this call: transports copy
    // what they are given before returning, so one that still has the
    // place is handed out again.
    let v = this.txView_;
    if (v === null || this.txViewPtr_ !== ptr || v.length !== len || this.txViewOf_ !== heap.view) {
      v = this.txView_ = heap.view.subarray(ptr, ptr + len);
      this.txViewOf_ = heap.view;
      this.txViewPtr_ = ptr;
    }
    return v;
  }

  /** The next event's kind (`EV`; 0 none), its details in the `ev*` fields until the next call. */
  nextEvent(): number {
    const heap = this.heap;
    heap.fresh();
    if (this.evAt_ >= this.evEnd_) {
      // Events arise only from calls that move the epoch.
      if (this.evShort_ && this.epoch_() === this.evEpoch_) return 0;
      const n = this.core.takeEvents(BATCH.RECORDS);
      heap.fresh();
      this.evAt_ = 0;
      this.evEnd_ = n;
      this.evShort_ = n < BATCH.RECORDS;
      this.evEpoch_ = this.epoch_();
      if (n === 0) return 0;
    }
    const w = heap.words;
    const r = this.table_ + EV_AT + this.evAt_++ * BATCH.EV_WORDS;
    this.evConn = w[r + 1]!;
    this.evArg = w[r + 2]!;
    this.evPtr = w[r + 3]!;
    this.evLen = w[r + 4]!;
    this.evWide = w[r + 5]! + w[r + 6]! * 4294967296;
    return w[r]!;
  }

  /** A copy of the last event's bytes. */
  eventBytes(): Uint8Array {
    return this.heap.readOut(this.evPtr, this.evLen);
  }

  /** The last event's bytes as text. */
  eventText(): string {
    return this.heap.readText(this.evPtr, this.evLen);
  }
}
