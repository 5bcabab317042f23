// The browser client module's bindings, written here instead of taken from
// wasm-bindgen's generated glue, which cost the browser bundle ~1.2 KB gzip
// more (docs/size.md; issue 13). They call the same exports the generated
// glue calls, typed by its `InitOutput` (so a changed export fails the
// build), in wasm-bindgen 0.2.130's ABI (pinned in wasm/wasm/Cargo.toml):
// an object is its pointer, numbers pass as they are, u32 and bool come back
// as i32, a `Vec<f64>` as pointer and length for `__wbindgen_free`. The
// module's imports are matched by name; an unknown one fails the load
// loudly. test/client-glue.test.ts checks these classes against the
// generated ones' methods and runs a session through this module. (No
// `Symbol.dispose`: the SDK frees its cores itself.) The full module keeps
// the generated glue.
import type { InitOutput } from '../wasm/ricochet_client.js';
import type { GlueSource } from './load.js';

let w: InitOutput;

/** What finalization frees: the object's pointer and its module's free function. */
type Held = [free: (ptr: number, finalizing: number) => void, ptr: number];
const finalizer = typeof FinalizationRegistry === 'undefined' ? null : new FinalizationRegistry<Held>(([free, ptr]) => free(ptr, 1));

abstract class Owned {
  /** The Rust object's address (0 once freed). */
  p_: number;

  constructor(ptr: number, free: Held[0]) {
    this.p_ = ptr;
    finalizer?.register(this, [free, ptr], this);
  }

  protected release_(free: Held[0]): void {
    finalizer?.unregister(this);
    const p = this.p_;
    this.p_ = 0;
    free(p, 0);
  }
}

export class ConfigInput extends Owned {
  constructor() {
    super(w.configinput_new(), w.__wbg_configinput_free);
  }
  free(): void {
    this.release_(w.__wbg_configinput_free);
  }
  addChannel(kind: number, priority: number, maxAgeUs: number, latencyTargetUs: number): boolean {
    return w.configinput_addChannel(this.p_, kind, priority, maxAgeUs, latencyTargetUs) !== 0;
  }
  check(handshakeLen: number): number {
    return w.configinput_check(this.p_, handshakeLen) >>> 0;
  }
  get(field: number): number {
    return w.configinput_get(this.p_, field);
  }
  ioReserve(len: number): number {
    return w.configinput_ioReserve(this.p_, len) >>> 0;
  }
  set(field: number, value: number): void {
    w.configinput_set(this.p_, field, value);
  }
}

export class Client extends Owned {
  constructor(config: ConfigInput, now: number, len: number) {
    super(w.client_new(config.p_, now, len), w.__wbg_client_free);
  }
  free(): void {
    this.release_(w.__wbg_client_free);
  }
  close(now: number, code: number, len: number): void {
    w.client_close(this.p_, now, code, len);
  }
  handleDatagram(now: number, len: number): number {
    return w.client_handleDatagram(this.p_, now, len) >>> 0;
  }
  handlePathChange(now: number): void {
    w.client_handlePathChange(this.p_, now);
  }
  handleTimeout(now: number): void {
    w.client_handleTimeout(this.p_, now);
  }
  id(): number {
    return w.client_id(this.p_) >>> 0;
  }
  ioReserve(len: number): number {
    return w.client_ioReserve(this.p_, len) >>> 0;
  }
  pollTimeout(): number {
    return w.client_pollTimeout(this.p_);
  }
  send(now: number, channel: number, len: number): number {
    return w.client_send(this.p_, now, channel, len);
  }
  setFec(preset: number, budget: number): number {
    return w.client_setFec(this.p_, preset, budget) >>> 0;
  }
  setMaxDatagramSize(now: number, bytes: number): boolean {
    return w.client_setMaxDatagramSize(this.p_, now, bytes) !== 0;
  }
  state(): number {
    return w.client_state(this.p_) >>> 0;
  }
  stats(): Float64Array {
    const [ptr, len] = w.client_stats(this.p_);
    const v = new Float64Array(w.memory.buffer, ptr >>> 0, len).slice();
    w.__wbindgen_free(ptr, len * 8, 8);
    return v;
  }
  tablePtr(): number {
    return w.client_tablePtr(this.p_) >>> 0;
  }
  takeEvents(max: number): number {
    return w.client_takeEvents(this.p_, max) >>> 0;
  }
  transmit(now: number, max: number): number {
    return w.client_transmit(this.p_, now, max) >>> 0;
  }
}

export function protocolVersion(): number {
  return w.protocolVersion() >>> 0;
}

/** The module's imports, by name (wasm-bindgen's names carry a hash). */
function provide(name: string): () => void {
  if (name.startsWith('__wbg___wbindgen_throw_')) {
    // A binding's own error (a borrowed object used again): the text is in memory.
    const fail = (ptr: number, len: number): never => {
      throw new Error(new TextDecoder().decode(new Uint8Array(w.memory.buffer, ptr >>> 0, len)));
    };
    return fail as unknown as () => void;
  }
  if (name === '__wbindgen_init_externref_table') {
    // The slots wasm-bindgen reserves: undefined, then undefined, null, true, false from 1024.
    return () => {
      const t = w.__wbindgen_externrefs;
      t.set(0, undefined);
      [undefined, null, true, false].forEach((v, i) => t.set(1024 + i, v));
    };
  }
  throw new Error(`ricochet: the client module imports ${name}, which this SDK does not provide (a wasm-bindgen upgrade?)`);
}

/** Compiles (streaming from a `Response`) and starts the client module. */
export async function loadClient(source: GlueSource): Promise<InitOutput> {
  const module =
    source instanceof WebAssembly.Module
      ? source
      : typeof Response === 'function' && source instanceof Response
        ? await WebAssembly.compileStreaming(source)
        : await WebAssembly.compile(source as BufferSource);
  const imports: Record<string, Record<string, () => void>> = {};
  for (const i of WebAssembly.Module.imports(module)) (imports[i.module] ??= {})[i.name] = provide(i.name);
  w = (await WebAssembly.instantiate(module, imports)).exports as unknown as InitOutput;
  w.__wbindgen_start();
  return w;
}
