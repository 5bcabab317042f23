// Scenario S3 in wasm inside Node: the loop in s3-loop.mjs (the same as
// wasm/core/examples/bench_s3.rs). Prints one JSON line.
//   node bench/s3-wasm.mjs [messages] [size] [perTick] [client module]
// The client module is `ricochet_wasm` (the full module, Node's) or
// `ricochet_client` (what browsers load). RICOCHET_S3_WASM_DIR (an absolute
// path) loads the modules from elsewhere than sdk/wasm (another build, for a
// side-by-side run). The same loop in Chromium and Firefox: s3-browser.mjs.
import { readFileSync } from 'node:fs';
import { isMain } from '../scripts/setup.mjs';
import { runS3 } from './s3-loop.mjs';

/** runS3's `load` in Node: the modules' glue and bytes from `wasmDir` (a file: URL ending in /). */
export const loadFrom = (wasmDir) => async (name) => ({
  glue: await import(new URL(`${name}.js`, wasmDir).href),
  bytes: readFileSync(new URL(`${name}_bg.wasm`, wasmDir)),
});

if (isMain(import.meta.url)) {
  const args = process.argv.slice(2);
  const [messages = 1_000_000, size = 100, perTick = 1] = args.slice(0, 3).map(Number);
  const clientModule = args[3] ?? 'ricochet_wasm';
  const wasmDir = new URL(process.env.RICOCHET_S3_WASM_DIR ? `file://${process.env.RICOCHET_S3_WASM_DIR}/` : '../sdk/wasm/', import.meta.url);
  console.log(JSON.stringify(await runS3({ load: loadFrom(wasmDir), messages, size, perTick, clientModule })));
}
