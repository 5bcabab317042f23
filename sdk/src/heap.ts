// Moves bytes between JS and a wasm core through views into its memory:
// one copy in, one copy out, no per-datagram allocation inside wasm.
// (Internal: WebAssembly types must not reach the public declarations.)

const decoder = new TextDecoder();

interface HasIo {
  ioReserve(len: number): number;
}

/** Views into one wasm instance's memory. */
export class Heap {
  private view: Uint8Array | null = null;

  constructor(private readonly memory: WebAssembly.Memory) {}

  /** A view over the whole heap, refreshed after memory growth. */
  private bytes(): Uint8Array {
    const buf = this.memory.buffer;
    if (this.view === null || this.view.buffer !== buf) this.view = new Uint8Array(buf);
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

  /** A temporary view of `len` bytes at `ptr`: valid only until the next wasm call. */
  viewOut(ptr: number, len: number): Uint8Array {
    return this.bytes().subarray(ptr, ptr + len);
  }

  readText(ptr: number, len: number): string {
    return decoder.decode(this.viewOut(ptr, len));
  }
}
