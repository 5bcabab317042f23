#!/usr/bin/env node
// Builds relay/native: `cargo build --release` and copies
// target/release/libricochet_relay_wt.so to ricochet_relay_wt.node.
// Skips when the .node is newer than src/, build.rs, Cargo.toml and Cargo.lock.
//   node relay/native/build.mjs [--force] [--client]   (--client also builds examples/wt_client)
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, readdirSync, renameSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const dir = dirname(fileURLToPath(import.meta.url));
const force = process.argv.includes('--force');
const client = process.argv.includes('--client');
const out = join(dir, 'ricochet_relay_wt.node');
const libName = process.platform === 'darwin' ? 'libricochet_relay_wt.dylib'
  : process.platform === 'win32' ? 'ricochet_relay_wt.dll' : 'libricochet_relay_wt.so';
const lib = join(dir, 'target', 'release', libName);

function newest(p) {
  if (!existsSync(p)) return 0;
  const st = statSync(p);
  if (!st.isDirectory()) return st.mtimeMs;
  let m = st.mtimeMs;
  for (const e of readdirSync(p)) m = Math.max(m, newest(join(p, e)));
  return m;
}

function cargo(args) {
  const r = spawnSync('cargo', args, { cwd: dir, stdio: 'inherit' });
  if (r.error) throw r.error;
  if (r.status !== 0) process.exit(r.status ?? 1);
}

const inputs = Math.max(...['src', 'build.rs', 'Cargo.toml', 'Cargo.lock'].map((f) => newest(join(dir, f))));
if (!force && existsSync(out) && statSync(out).mtimeMs >= inputs) {
  console.log('ricochet_relay_wt.node is up to date');
} else {
  cargo(['build', '--release']);
  const tmp = `${out}.tmp`;
  copyFileSync(lib, tmp);
  renameSync(tmp, out); // atomic: a running process keeps the old inode
  console.log(`built ${out}`);
}
if (client) {
  const exe = join(dir, 'target', 'release', 'examples', 'wt_client');
  if (force || !existsSync(exe) || statSync(exe).mtimeMs < Math.max(inputs, newest(join(dir, 'examples')))) {
    cargo(['build', '--release', '--example', 'wt_client']);
  }
}
