// Fetches a wasm file for a glue's async init: streaming compilation when the
// server sends application/wasm, else the bytes (no console warning); file:
// URLs (Node) are read from disk.

/** What the wasm-bindgen glue's init accepts as `module_or_path`. */
export type GlueSource = Response | BufferSource | WebAssembly.Module;

interface NodeFs {
  promises: { readFile(path: URL): Promise<Uint8Array> };
}

export async function fetchWasm(url: URL): Promise<GlueSource> {
  if (url.protocol === 'file:') return (await nodeFs()).promises.readFile(url);
  const res = await fetch(url);
  if (!res.ok) throw new Error(`ricochet: fetching ${url.href} failed: HTTP ${res.status}`);
  const type = res.headers.get('content-type')?.split(';')[0]!.trim().toLowerCase();
  return type === 'application/wasm' && typeof WebAssembly.instantiateStreaming === 'function' ? res : res.arrayBuffer();
}

async function nodeFs(): Promise<NodeFs> {
  const proc = (globalThis as { process?: { getBuiltinModule?(id: string): NodeFs | undefined } }).process;
  const fs = proc?.getBuiltinModule?.('node:fs'); // Node >= 20.16, sync
  if (fs) return fs;
  // Older Node 20. A variable and the ignore comments keep browser bundlers
  // from trying to bundle node:fs (this branch never runs in a browser).
  const id = 'node:fs';
  return (await import(/* webpackIgnore: true */ /* @vite-ignore */ id)) as NodeFs;
}
