// Moves bytes between JS and the wasm core through views into wasm memory:
// one copy in, one copy out, no per-datagram allocation inside wasm.
import { wasmExports } from './wasm.js';

let view: Uint8Array | null = null;

/** A view over the whole wasm heap, refreshed after memory growth. */
function heap(): Uint8Array {
  const buf = wasmExports().memory.buffer;
  if (view === null || view.buffer !== buf) view = new Uint8Array(buf);
  return view;
}

interface HasIo {
  ioReserve(len: number): number;
}

/** Copies `bytes` into the object's input buffer; returns the length. */
export function writeIn(target: HasIo, bytes: Uint8Array): number {
  // `bytes` may be another core's output still in wasm memory (a loopback
  // or simulated link hands `viewOut` views straight across). Reserving can
  // grow memory, which detaches such a view: copy it out first.
  const src = bytes.buffer === wasmExports().memory.buffer ? bytes.slice() : bytes;
  const ptr = target.ioReserve(src.length);
  heap().set(src, ptr);
  return src.length;
}

/** A copy of `len` bytes at `ptr` (safe to keep after further wasm calls). */
export function readOut(ptr: number, len: number): Uint8Array {
  return heap().slice(ptr, ptr + len);
}

/** A temporary view of `len` bytes at `ptr`: valid only until the next wasm call. */
export function viewOut(ptr: number, len: number): Uint8Array {
  return heap().subarray(ptr, ptr + len);
}

/** Event kinds from `pollEvent` (see wasm/wasm/src/events.rs). */
export const EV = { NONE: 0, CONNECTED: 1, MESSAGE: 2, ACKED: 3, LOST: 4, CLOSED: 5, CONNECT_REQUEST: 6 } as const;

export type CloseKind = 'local' | 'peer' | 'idle-timeout' | 'handshake-timeout' | 'rejected' | 'transport';

export const CLOSE_KINDS: Record<number, CloseKind> = {
  1: 'local',
  2: 'peer',
  3: 'idle-timeout',
  4: 'handshake-timeout',
  5: 'rejected',
};

const decoder = new TextDecoder();
export function readText(ptr: number, len: number): string {
  return decoder.decode(viewOut(ptr, len));
}
