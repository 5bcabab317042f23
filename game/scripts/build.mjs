#!/usr/bin/env node
// Builds game/dist from game/src. Skipped when dist is newer than every
// input; `--force` rebuilds.
//   <module>.js     ESM, one file per source module (bundlers drop what is unused)
//   index.cjs       CommonJS, the whole package in one file
//   <module>.d.ts   declarations (tsc), and .d.cts twins for require
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const GAME = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const SRC = join(GAME, 'src');
const DIST = join(GAME, 'dist');
const TYPES_TMP = join(DIST, '.types'); // outDir of tsconfig.build.json
const STAMP = join(DIST, '.build-stamp');
const INPUTS = [SRC, join(GAME, 'package.json'), join(GAME, 'tsconfig.build.json'), join(GAME, '..', 'tsconfig.json'), fileURLToPath(import.meta.url)];
const OUTPUTS = ['index.js', 'index.cjs', 'index.d.ts', 'index.d.cts'].map((f) => join(DIST, f));

const log = (msg) => console.log(`[game build] ${msg}`);

function newestMtime(p) {
  if (!existsSync(p)) return -Infinity;
  const st = statSync(p);
  if (!st.isDirectory()) return st.mtimeMs;
  return Math.max(st.mtimeMs, ...readdirSync(p).map((e) => newestMtime(join(p, e))));
}

function staleReason() {
  if (!existsSync(STAMP)) return 'no previous build';
  if (OUTPUTS.some((p) => !existsSync(p))) return 'an output is missing';
  const built = statSync(STAMP).mtimeMs;
  return INPUTS.some((p) => newestMtime(p) > built) ? 'a source changed' : null;
}

export async function buildGame({ force = false } = {}) {
  const reason = force ? '--force' : staleReason();
  if (!reason) {
    log('up to date (game/dist)');
    return false;
  }
  log(`building (${reason})`);
  const esbuild = await import('esbuild');
  rmSync(DIST, { recursive: true, force: true });
  mkdirSync(DIST, { recursive: true });
  const modules = readdirSync(SRC).filter((f) => f.endsWith('.ts')).map((f) => join(SRC, f));
  const common = { absWorkingDir: GAME, platform: 'neutral', target: 'es2022', legalComments: 'none', logLevel: 'warning' };
  await Promise.all([
    esbuild.build({ ...common, entryPoints: modules, outdir: 'dist', format: 'esm' }),
    esbuild.build({ ...common, entryPoints: ['src/index.ts'], outfile: 'dist/index.cjs', format: 'cjs', bundle: true }),
  ]);
  const require = createRequire(join(GAME, 'package.json'));
  const tsc = join(dirname(require.resolve('typescript/package.json')), 'bin', 'tsc');
  const r = spawnSync(process.execPath, [tsc, '-p', 'tsconfig.build.json'], { cwd: GAME, stdio: 'inherit' });
  if (r.status !== 0) throw new Error('tsc -p tsconfig.build.json failed');
  for (const f of readdirSync(TYPES_TMP)) {
    renameSync(join(TYPES_TMP, f), join(DIST, f));
    // The CommonJS twin: a .d.ts in a "type": "module" package describes ESM only.
    const cjs = readFileSync(join(DIST, f), 'utf8').replace(/(from\s*['"]\.[^'"]*?)\.js(['"])/g, '$1.cjs$2');
    writeFileSync(join(DIST, f.replace(/\.d\.ts$/, '.d.cts')), cjs);
  }
  rmSync(TYPES_TMP, { recursive: true, force: true });
  writeFileSync(STAMP, '');
  log(`built: index.js + ${modules.length - 1} modules, index.cjs ${(statSync(join(DIST, 'index.cjs')).size / 1024).toFixed(1)} KiB`);
  return true;
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  buildGame({ force: process.argv.includes('--force') }).catch((e) => {
    console.error(`[game build] ERROR: ${e.message}`);
    process.exit(1);
  });
}
