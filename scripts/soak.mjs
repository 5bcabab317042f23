#!/usr/bin/env node
// `npm run soak -- --minutes N`: scenario S4 from a fresh clone. Installs and
// builds what the soak needs (wasm + SDK, the relay and its WebTransport addon,
// the native echo server; each step skips itself when up to date), then runs
// bench/soak/soak.mjs with the same arguments and exits with its status.
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { build } from './build.mjs';
import { ROOT, run, setup } from './setup.mjs';

try {
  setup(); // with the browser: the soak drives Debian's Chromium
  build();
  run(process.execPath, [join(ROOT, 'relay', 'native', 'build.mjs')], { quiet: true });
  run(process.execPath, [join(ROOT, 'relay', 'scripts', 'build.mjs')], { quiet: true });
  run('cargo', ['build', '--release', '-p', 'ricochet-native', '--example', 'echo_server', '--manifest-path', join(ROOT, 'wasm', 'Cargo.toml')], { quiet: true });
} catch (e) {
  console.error(`[soak] build failed: ${e.message}`);
  process.exit(1);
}
const r = spawnSync(process.execPath, [join(ROOT, 'bench', 'soak', 'soak.mjs'), ...process.argv.slice(2)], { stdio: 'inherit' });
process.exit(r.status ?? 1);
