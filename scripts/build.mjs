#!/usr/bin/env node
// `npm run build`: setup -> wasm (scripts/build-wasm.mjs) -> SDK (sdk/scripts/build.mjs)
// -> the game layer (game/scripts/build.mjs).
// Each step skips itself when its outputs are up to date. `--force` rebuilds all.

import { join } from 'node:path';
import { buildWasm } from './build-wasm.mjs';
import { ROOT, isMain, run, setup } from './setup.mjs';

export function build({ force = false } = {}) {
  setup({ browser: false }); // npm start and npm run build need no browser
  buildWasm({ force });
  // A child process: the SDK build imports esbuild, which setup may just have installed.
  run(process.execPath, [join(ROOT, 'sdk', 'scripts', 'build.mjs'), ...(force ? ['--force'] : [])], { quiet: true });
  run(process.execPath, [join(ROOT, 'game', 'scripts', 'build.mjs'), ...(force ? ['--force'] : [])], { quiet: true });
}

if (isMain(import.meta.url)) {
  try {
    build({ force: process.argv.includes('--force') });
  } catch (e) {
    console.error(`[build] ERROR: ${e.message}`);
    process.exit(1);
  }
}
