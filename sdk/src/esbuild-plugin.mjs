// "@ricochet/sdk/esbuild": an esbuild plugin for the SDK's browser entries.
// esbuild leaves `new URL('./x.wasm', import.meta.url)` alone without copying
// the file; this rewrites those URLs in the SDK's own files into imports with
// the `file` loader, so the .wasm is emitted (hashed) next to the bundle.
// Output formats without top-level await (iife, cjs) get the Node-style
// entries instead (wasm embedded, initialized synchronously).
import { readFile } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const DIST = dirname(fileURLToPath(import.meta.url));
const WASM_URL = /new URL\((["'])\.\/([\w.-]+\.wasm)\1,\s*import\.meta\.url\)/g;
const BROWSER_ENTRIES = { 'browser.js': 'index.js', 'server.browser.js': 'server.js', 'simulator.browser.js': 'simulator.js' };

/** The plugin: `esbuild.build({ plugins: [ricochet()] })`. */
export function ricochet() {
  return {
    name: 'ricochet-sdk',
    setup(build) {
      const inDist = (p) => dirname(p) === DIST;
      const topLevelAwait = (build.initialOptions.format ?? 'esm') === 'esm' || !build.initialOptions.bundle;
      build.onLoad({ filter: /\.js$/ }, async (args) => {
        if (!inDist(args.path)) return undefined;
        const swap = BROWSER_ENTRIES[basename(args.path)];
        if (swap && !topLevelAwait) return { contents: `export * from './${swap}';`, loader: 'js', resolveDir: DIST };
        const source = await readFile(args.path, 'utf8');
        const imports = [];
        const contents = source.replace(WASM_URL, (_, _quote, file) => {
          const id = `__ricochet_wasm_${imports.length}`;
          imports.push(`import ${id} from ${JSON.stringify(join(DIST, file))};`);
          return `new URL(${id}, import.meta.url)`;
        });
        if (imports.length === 0) return undefined;
        return { contents: `${imports.join('\n')}\n${contents}`, loader: 'js', resolveDir: DIST };
      });
      build.onLoad({ filter: /\.wasm$/ }, async (args) => (inDist(args.path) ? { contents: await readFile(args.path), loader: 'file' } : undefined));
    },
  };
}

export default ricochet;
