// esbuild production build of an app (copied next to its index.html and
// main.js in the consumer directory). esbuild leaves the slim entry's
// `new URL('./ricochet_wasm.wasm', import.meta.url)` alone, so the wasm must
// sit next to the bundle: with the SDK's esbuild plugin when the package
// exports one (@ricochet/sdk/esbuild), otherwise by the documented copy of
// @ricochet/sdk/ricochet_wasm.wasm into the output directory.
import { copyFileSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const here = dirname(fileURLToPath(import.meta.url));
const out = join(here, 'dist');
const require = createRequire(import.meta.url);
const sdkPkg = JSON.parse(readFileSync(join(here, '..', 'node_modules', '@ricochet', 'sdk', 'package.json'), 'utf8'));

rmSync(out, { recursive: true, force: true });
mkdirSync(out);
const plugins = [];
if (sdkPkg.exports?.['./esbuild']) {
  const mod = await import('@ricochet/sdk/esbuild');
  const make = mod.default ?? Object.values(mod).find((v) => typeof v === 'function');
  plugins.push(typeof make === 'function' ? make() : make);
  console.log('wasm: @ricochet/sdk/esbuild plugin');
}
await build({ entryPoints: [join(here, 'main.js')], bundle: true, format: 'esm', minify: true, target: 'es2022', outdir: out, plugins, logLevel: 'warning' });
if (!plugins.length) {
  copyFileSync(require.resolve('@ricochet/sdk/ricochet_wasm.wasm'), join(out, 'ricochet_wasm.wasm'));
  console.log('wasm: copied @ricochet/sdk/ricochet_wasm.wasm next to the bundle');
}
copyFileSync(join(here, 'index.html'), join(out, 'index.html'));
