// Scenario S3's loop compiled to wasm with nothing around it
// (wasm/core/examples/s3_core.rs): the core's own cost per message in a wasm
// engine, apart from the bindings and JavaScript s3-loop.mjs adds. Built
// like the full module (opt-level 3, then wasm-opt with its flags), into
// wasm/target/s3/s3_core.wasm (git-ignored).
//   node bench/s3-core.mjs    builds it and prints its path
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { MODULES, wasmOptFlags } from '../scripts/build-wasm.mjs';
import { WASM_DIR, WASM_TARGET, isMain, run, wasmOptPath, wasmTargetDir } from '../scripts/setup.mjs';

export const S3_CORE = 's3_core';

/** Builds the module (cargo keeps it cached) and returns its path. */
export function buildS3Core() {
  run('cargo', ['build', '--release', '--target', WASM_TARGET, '-p', 'ricochet-core', '--example', S3_CORE], { cwd: WASM_DIR });
  const targetDir = wasmTargetDir();
  const built = join(targetDir, WASM_TARGET, 'release', 'examples', `${S3_CORE}.wasm`);
  if (!existsSync(built)) throw new Error(`cargo did not produce ${built}`);
  mkdirSync(join(targetDir, 's3'), { recursive: true });
  const out = join(targetDir, 's3', `${S3_CORE}.wasm`);
  const wasmOpt = wasmOptPath();
  if (!wasmOpt) throw new Error('wasm-opt not found (npm install provides it): the core row needs the full module\'s optimization');
  const full = MODULES.find((m) => m.name === 'ricochet_wasm');
  run(wasmOpt, [...full.opt, ...wasmOptFlags(readFileSync(built)), built, '-o', out]);
  return out;
}

if (isMain(import.meta.url)) console.log(buildS3Core());
