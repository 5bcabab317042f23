#!/usr/bin/env node
// Builds the arcade: the Rust game server and bots (cargo, release), the
// browser bundle and the Node bots (esbuild). Needs the SDK and @ricochet/game
// built first (scripts/build.mjs at the root).
// Cargo skips an up-to-date server; the bundle is rebuilt when a source is newer.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ARCADE = resolve(dirname(fileURLToPath(import.meta.url)), '..');
export const SERVER_BIN = join(ARCADE, 'server', 'target', 'release', 'arcade-server');
export const BUNDLE = join(ARCADE, 'dist', 'arcade.js');
export const NODE_BOTS = join(ARCADE, 'dist', 'node-bots.mjs');

const newest = (p) => {
  if (!existsSync(p)) return 0;
  const st = statSync(p);
  return st.isDirectory() ? Math.max(st.mtimeMs, ...readdirSync(p).map((e) => newest(join(p, e)))) : st.mtimeMs;
};

export function buildServer() {
  const r = spawnSync('cargo', ['build', '--release', '--quiet', '--manifest-path', join(ARCADE, 'server', 'Cargo.toml')], { stdio: 'inherit' });
  if (r.error) throw r.error;
  if (r.status !== 0) throw new Error(`cargo build of the arcade server failed (exit ${r.status})`);
}

export async function buildClient({ force = false } = {}) {
  const sdk = join(ARCADE, '..', '..', 'sdk', 'dist');
  const game = join(ARCADE, '..', '..', 'game', 'dist');
  const inputs = Math.max(newest(join(ARCADE, 'client')), newest(join(ARCADE, 'protocol')), newest(join(ARCADE, 'bots')), newest(sdk), newest(game), newest(fileURLToPath(import.meta.url)));
  if (!force && Math.min(newest(BUNDLE), newest(NODE_BOTS)) > inputs) return;
  const esbuild = await import('esbuild');
  // The Node bots: the client's own join and prediction code, dependencies left to node_modules.
  await esbuild.build({
    entryPoints: [join(ARCADE, 'bots', 'node-bots.ts')],
    outfile: NODE_BOTS,
    bundle: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    packages: 'external',
    logLevel: 'warning',
  });
  const r = await esbuild.build({
    entryPoints: [join(ARCADE, 'client', 'main.ts')],
    outfile: BUNDLE,
    bundle: true,
    format: 'esm',
    platform: 'browser',
    target: 'es2022',
    minify: true,
    sourcemap: true,
    metafile: true,
    logLevel: 'warning',
  });
  const bytes = Object.values(r.metafile.outputs).find((o) => o.entryPoint)?.bytes ?? 0;
  console.log(`[arcade build] dist/arcade.js ${(bytes / 1024).toFixed(1)} KiB (+ the SDK's ricochet_wasm.wasm)`);
}

export async function buildArcade(o = {}) {
  buildServer();
  await buildClient(o);
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  buildArcade({ force: process.argv.includes('--force') }).catch((e) => {
    console.error(`[arcade build] ERROR: ${e.message}`);
    process.exit(1);
  });
}
