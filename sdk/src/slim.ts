// "@ricochet/sdk/slim": the client module, loaded by `await init()` from
// dist/ricochet_wasm.wasm (bundlers that understand
// `new URL('...', import.meta.url)` emit it as an asset) or the source given.
import { Client, ConfigInput, loadClient, protocolVersion } from './client-glue.js';
import { fetchWasm, type GlueSource } from './load.js';
import { isRegistered, register, type ClientGlue } from './wasm.js';

/**
 * Where `init()` gets the module: a URL (string or `URL`), the `.wasm` bytes
 * (`ArrayBuffer` or a typed array), a compiled `WebAssembly.Module`, or a
 * fetch `Response` (or a promise of one). Typed loosely so that these
 * declarations need neither the DOM lib nor @types/node.
 */
export type WasmSource = string | { readonly href: string } | ArrayBuffer | ArrayBufferView | object;

let pending: Promise<void> | null = null;

/**
 * Loads and instantiates the client wasm module. Must resolve before any other
 * SDK call. Idempotent. Without an argument, loads the `ricochet_wasm.wasm`
 * that ships next to this file (read from disk when that is a `file:` URL,
 * i.e. in Node). Server and the simulator need "@ricochet/sdk/server" or
 * "/simulator" (which load the full module themselves).
 */
export function init(source?: WasmSource): Promise<void> {
  if (isRegistered('client')) return Promise.resolve();
  pending ??= load(source ?? new URL('./ricochet_wasm.wasm', import.meta.url)).catch((e: unknown) => {
    pending = null; // a later call may retry
    throw e;
  });
  return pending;
}

async function load(source: WasmSource): Promise<void> {
  const href = typeof source === 'string' ? source : 'href' in source && typeof source.href === 'string' ? source.href : null;
  const input = href === null ? ((await source) as GlueSource) : await fetchWasm(new URL(href, globalThis.location?.href));
  register('client', { Client, ConfigInput, protocolVersion } as unknown as ClientGlue, await loadClient(input));
}

export * from './index.js';
