// Scenario S3 in wasm inside Node: the loop in s3-loop.mjs (the same as
// wasm/core/examples/bench_s3.rs). Prints one JSON line.
//   node bench/s3-wasm.mjs [messages] [size] [perTick] [client module]
// The client module is `ricochet_wasm` (the full module, Node's),
// `ricochet_client` (what browsers load), or `s3_core` (the loop inside wasm:
// the core alone, no bindings; s3-core.mjs builds it unless
// RICOCHET_S3_CORE names the built file). RICOCHET_S3_WASM_DIR (an absolute
// path) loads the modules from elsewhere than sdk/wasm (another build, for a
// side-by-side run). The same loop in Chromium and Firefox: s3-browser.mjs.
import { readFileSync } from 'node:fs';
import { isMain } from '../scripts/setup.mjs';
import { S3_CORE, buildS3Core } from './s3-core.mjs';
import { runS3 } from './s3-loop.mjs';

/**
 * runS3's `load` in Node: the modules' glue and bytes from `wasmDir` (a file:
 * URL ending in /), and s3_core's bytes from `corePath`.
 */
export const loadFrom = (wasmDir, corePath) => async (name) => {
  if (name === S3_CORE) return { bytes: readFileSync(corePath) };
  return {
    glue: await import(new URL(`${name}.js`, wasmDir).href),
    bytes: readFileSync(new URL(`${name}_bg.wasm`, wasmDir)),
  };
};

if (isMain(import.meta.url)) {
  const args = process.argv.slice(2);
  const [messages = 1_000_000, size = 100, perTick = 1] = args.slice(0, 3).map(Number);
  const clientModule = args[3] ?? 'ricochet_wasm';
  const wasmDir = new URL(process.env.RICOCHET_S3_WASM_DIR ? `file://${process.env.RICOCHET_S3_WASM_DIR}/` : '../sdk/wasm/', import.meta.url);
  const corePath = clientModule === S3_CORE ? (process.env.RICOCHET_S3_CORE ?? buildS3Core()) : null;
  console.log(JSON.stringify(await runS3({ load: loadFrom(wasmDir, corePath), messages, size, perTick, clientModule })));
}
