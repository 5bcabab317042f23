#!/usr/bin/env node
// Builds relay/dist (library + CLI) from relay/src with esbuild, plus tsc's
// declarations; skipped when up to date.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as esbuild from 'esbuild';

const RELAY = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const newest = (p) => {
  const st = statSync(p);
  return st.isDirectory() ? Math.max(st.mtimeMs, ...readdirSync(p).map((e) => newest(join(p, e)))) : st.mtimeMs;
};
const out = join(RELAY, 'dist', 'cli.js');
if (!process.argv.includes('--force') && existsSync(out) && statSync(out).mtimeMs > Math.max(newest(join(RELAY, 'src')), newest(fileURLToPath(import.meta.url)))) {
  console.log('[relay build] up to date');
  process.exit(0);
}
const common = { bundle: true, platform: 'node', target: 'node20', format: 'esm', packages: 'external',
  // Maps for stack traces (node --enable-source-maps) without the sources themselves: the package ships dist only.
  sourcemap: true, sourcesContent: false, logLevel: 'warning' };
await Promise.all([
  esbuild.build({ ...common, entryPoints: [join(RELAY, 'src', 'cli.ts')], outfile: out, banner: { js: '#!/usr/bin/env node' } }),
  esbuild.build({ ...common, entryPoints: [join(RELAY, 'src', 'index.ts')], outfile: join(RELAY, 'dist', 'index.js') }),
  esbuild.build({ ...common, entryPoints: [join(RELAY, 'src', 'testing.ts')], outfile: join(RELAY, 'dist', 'testing.js') }),
  esbuild.build({ ...common, entryPoints: [join(RELAY, 'src', 'playwright.ts')], outfile: join(RELAY, 'dist', 'playwright.js') }),
]);
// Declarations for TypeScript users of @ricochet/relay, /testing and /playwright.
const tsc = join(dirname(createRequire(import.meta.url).resolve('typescript/package.json')), 'bin', 'tsc');
const r = spawnSync(process.execPath, [tsc, '-p', join(RELAY, 'tsconfig.build.json')], { cwd: RELAY, stdio: 'inherit' });
if (r.status !== 0) throw new Error('relay: tsc failed to emit declarations');
console.log('[relay build] built dist/cli.js, dist/index.js, dist/testing.js, dist/playwright.js and their .d.ts');
