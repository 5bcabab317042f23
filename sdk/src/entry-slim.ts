// Slim entry ("@ricochet/sdk/slim"): no embedded wasm; `await init()` loads
// dist/ricochet_wasm.wasm (bundlers that understand
// `new URL('...', import.meta.url)` emit it as an asset) or the source given.
import { initWasm } from './wasm.js';

/**
 * Where `init()` gets the module: a URL (string or `URL`), the `.wasm` bytes
 * (`ArrayBuffer` or a typed array), a compiled `WebAssembly.Module`, or a
 * fetch `Response` (or a promise of one). Typed loosely so that these
 * declarations need neither the DOM lib nor @types/node.
 */
export type WasmSource = string | { readonly href: string } | ArrayBuffer | ArrayBufferView | object;

interface NodeFs {
  promises: { readFile(path: URL): Promise<Uint8Array> };
}
interface NodeProcess {
  getBuiltinModule?(id: 'node:fs'): NodeFs;
}

/**
 * Loads and instantiates the wasm module. Must resolve before any other SDK
 * call. Idempotent. Without an argument, loads the `ricochet_wasm.wasm` that
 * ships next to this file (read from disk when that is a `file:` URL, i.e. in Node).
 */
export async function init(source?: WasmSource): Promise<void> {
  const input = source ?? new URL('./ricochet_wasm.wasm', import.meta.url);
  await initWasm(await toWasmInput(input));
}

async function toWasmInput(source: WasmSource): Promise<Parameters<typeof initWasm>[0]> {
  const href =
    typeof source === 'string'
      ? source
      : 'href' in source && typeof source.href === 'string' // URL or URL-like
        ? source.href
        : null;
  if (href === null) return source as Parameters<typeof initWasm>[0];
  if (href.startsWith('file:')) {
    // fetch() cannot read file: URLs in Node; read the file instead.
    const proc = (globalThis as { process?: NodeProcess }).process;
    const fs = proc?.getBuiltinModule?.('node:fs');
    if (fs) return fs.promises.readFile(new URL(href));
  }
  return href;
}

export * from './index.js';
