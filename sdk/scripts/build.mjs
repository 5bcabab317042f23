#!/usr/bin/env node
// Builds sdk/dist from sdk/src and the generated sdk/wasm (run
// scripts/build-wasm.mjs first). Skipped when dist is newer than every
// input; `--force` rebuilds.
//
// ESM (esbuild, code splitting: every entry shares one copy of the classes
// and of the wasm slots in chunk-*.js):
//   index.js / server.js / simulator.js   Node & default: the full module embedded
//                                         (init-node.js), ready at import; simulator.js
//                                         also embeds the simulator's (init-node-sim.js)
//   browser.js / server.browser.js / simulator.browser.js
//                                         `browser` condition: ricochet_wasm.wasm
//                                         (client) or ricochet_full.wasm by URL,
//                                         top-level await (init-browser-*.js);
//                                         simulator.browser.js also ricochet_sim.wasm
//   slim.js        the client module by `await init()`
//   esbuild.js     the esbuild plugin ("@ricochet/sdk/esbuild")
// CommonJS: node.cjs holds everything (full and simulator modules embedded); index.cjs,
// server.cjs, simulator.cjs re-export from it; slim.cjs and esbuild.cjs stand alone.
// Types: index / server-api / simulator-api / slim .d.ts (+ .d.cts twins), from
// our own TypeScript (tsc --emitDeclarationOnly); the build fails if they
// reach src/wasm.ts or wasm-bindgen's generated types.

import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, posix, relative, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const SDK = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const DIST = join(SDK, 'dist');
const TYPES_TMP = join(DIST, '.types'); // outDir of tsconfig.build.json
const STAMP = join(DIST, '.build-stamp');
const WASM_GLUE_DIR = join(SDK, 'wasm');
// sdk/wasm module -> dist name (the names src/slim.ts and src/entries/browser-*.ts fetch).
const WASM_FILES = { 'ricochet_client_bg.wasm': 'ricochet_wasm.wasm', 'ricochet_wasm_bg.wasm': 'ricochet_full.wasm', 'ricochet_sim_bg.wasm': 'ricochet_sim.wasm' };
const WASM_FILE = join(WASM_GLUE_DIR, 'ricochet_client_bg.wasm');

const ESM_ENTRIES = {
  index: 'src/entries/index.ts',
  server: 'src/entries/server.ts',
  simulator: 'src/entries/simulator.ts',
  browser: 'src/entries/browser.ts',
  'server.browser': 'src/entries/server.browser.ts',
  'simulator.browser': 'src/entries/simulator.browser.ts',
  slim: 'src/slim.ts',
  // Entries of their own so their names are stable for package.json "sideEffects".
  'init-node': 'src/entries/node.ts',
  'init-browser-client': 'src/entries/browser-client.ts',
  'init-browser-full': 'src/entries/browser-full.ts',
  'init-node-sim': 'src/entries/node-sim.ts',
  'init-browser-sim': 'src/entries/browser-sim.ts',
};
// CommonJS subpaths that re-export node.cjs.
const CJS_WRAPPERS = ['index', 'server', 'simulator'];
// CJS has no import.meta: slim.cjs and esbuild.cjs get it from __filename.
const CJS_IMPORT_META = {
  define: { 'import.meta.url': '__ricochet_import_meta_url' },
  banner: { js: 'var __ricochet_import_meta_url = require("url").pathToFileURL(__filename).href;' },
};

const OUTPUTS = [
  ...Object.keys(ESM_ENTRIES).map((e) => `${e}.js`),
  ...CJS_WRAPPERS.map((e) => `${e}.cjs`),
  'node.cjs', 'slim.cjs', 'esbuild.js', 'esbuild.cjs', 'esbuild.d.ts', 'esbuild.d.cts',
  'index.d.ts', 'index.d.cts', 'slim.d.ts', 'server-api.d.ts', 'simulator-api.d.ts',
  ...Object.values(WASM_FILES),
].map((f) => join(DIST, f));
const INPUTS = [
  join(SDK, 'src'),
  WASM_GLUE_DIR,
  join(SDK, 'package.json'),
  join(SDK, 'tsconfig.build.json'),
  join(SDK, '..', 'tsconfig.json'),
  fileURLToPath(import.meta.url),
];
// Public declaration roots: emitted file (relative to TYPES_TMP) -> dist file.
const PUBLIC_TYPES = { 'index.d.ts': 'index.d.ts', 'slim.d.ts': 'slim.d.ts', 'server-api.d.ts': 'server-api.d.ts', 'simulator-api.d.ts': 'simulator-api.d.ts' };
// Emitted declarations that must never be reachable from the public ones.
const INTERNAL_TYPES = new Set(['wasm.d.ts', 'heap.d.ts', 'load.d.ts']);

// Generated code tables (src/wasm-codes.ts) that src/ reads only as `TABLE.NAME`:
// built as `const enum`s, so esbuild writes the numbers in place and the
// tables themselves leave the bundle (a consumer's minifier cannot inline an
// object's properties). Same values; src/ and the tests keep the objects.
// The build fails if one is used as a value (that would emit an enum object,
// with reverse mappings); see enumLeaks().
const INLINED_TABLES = ['EV', 'DATAGRAM', 'CLIENT_STATE', 'PATH_EVENT', 'CONFIG_FIELD', 'BATCH'];
const inlineCodeTables = {
  name: 'ricochet-inline-code-tables',
  setup(build) {
    build.onLoad({ filter: /[\\/]src[\\/]wasm-codes\.ts$/ }, ({ path }) => {
      let text = readFileSync(path, 'utf8');
      for (const name of INLINED_TABLES) {
        const re = new RegExp(`export const ${name} = \\{\\n((?:  \\w+: -?\\d+,\\n)+)\\} as const;`);
        const m = re.exec(text);
        if (!m) throw new Error(`src/wasm-codes.ts: table ${name} not found as \`export const ${name} = { KEY: number, ... } as const;\` (update INLINED_TABLES in sdk/scripts/build.mjs)`);
        text = text.replace(m[0], `export const enum ${name} {\n${m[1].replace(/: (-?\d+),/g, ' = $1,')}}`);
      }
      return { contents: text, loader: 'ts' };
    });
  },
};

/** Enum objects in the built files (`X[X["NAME"] = 1] = "NAME"`): an inlined table used as a value. */
function enumLeaks() {
  const leaks = [];
  for (const f of readdirSync(DIST).filter((f) => /\.c?js$/.test(f))) {
    const m = /(\w+)\[\1\["\w+"\] = -?\d+\] = "/.exec(readFileSync(join(DIST, f), 'utf8'));
    if (m) leaks.push(`${f}: ${m[1]}`);
  }
  return leaks;
}

const log = (msg) => console.log(`[sdk build] ${msg}`);

function newestMtime(p) {
  if (!existsSync(p)) return -Infinity;
  const st = statSync(p);
  if (!st.isDirectory()) return st.mtimeMs;
  let newest = st.mtimeMs; // catches deletions
  for (const e of readdirSync(p)) newest = Math.max(newest, newestMtime(join(p, e)));
  return newest;
}

function staleReason() {
  if (!existsSync(STAMP)) return 'no previous build';
  const missing = OUTPUTS.find((p) => !existsSync(p));
  if (missing) return `${relative(SDK, missing)} is missing`;
  const built = statSync(STAMP).mtimeMs;
  const changed = INPUTS.find((p) => newestMtime(p) > built);
  return changed ? `${relative(SDK, changed)} changed` : null;
}

function tsc(args) {
  const require = createRequire(join(SDK, 'package.json'));
  const tscBin = join(dirname(require.resolve('typescript/package.json')), 'bin', 'tsc');
  const r = spawnSync(process.execPath, [tscBin, ...args], { cwd: SDK, stdio: 'inherit' });
  if (r.status !== 0) throw new Error(`tsc ${args.join(' ')} failed`);
}

/** Relative module specifiers (and reference paths) in a declaration file. */
function specifiers(source) {
  const out = [];
  const re = /(?:\bfrom\s*|\bimport\s*\(\s*|\bimport\s+|\/\/\/\s*<reference\s+path=)['"]([^'"]+)['"]/g;
  for (let m; (m = re.exec(source)); ) out.push(m[1]);
  return out;
}

/** Emitted declaration file for a relative import (path relative to TYPES_TMP), or null. */
function resolveDeclaration(target) {
  if (target.startsWith('..')) return null;
  const candidates = /\.[mc]?js$/.test(target)
    ? [target.replace(/\.js$/, '.d.ts').replace(/\.mjs$/, '.d.mts').replace(/\.cjs$/, '.d.cts')]
    : /\.d\.[mc]?ts$/.test(target)
      ? [target]
      : [`${target}.d.ts`, `${target}/index.d.ts`];
  return candidates.find((c) => existsSync(join(TYPES_TMP, c))) ?? null;
}

/** Copies the public declarations and everything they import into dist/. */
function publishDeclarations() {
  const queue = Object.keys(PUBLIC_TYPES);
  const seen = new Set();
  const problems = [];
  while (queue.length) {
    const file = queue.shift();
    if (seen.has(file)) continue;
    seen.add(file);
    const text = readFileSync(join(TYPES_TMP, file), 'utf8');
    for (const spec of specifiers(text)) {
      if (!spec.startsWith('.')) {
        problems.push(`${file} imports "${spec}": the public types must not depend on other packages`);
        continue;
      }
      const resolved = resolveDeclaration(posix.normalize(posix.join(posix.dirname(file), spec)));
      if (resolved === null) {
        problems.push(`${file} imports "${spec}", which is not part of the SDK's own declarations`);
      } else if (INTERNAL_TYPES.has(resolved)) {
        problems.push(`${file} imports "${spec}" (internal: ${resolved}); keep wasm types out of exported signatures`);
      } else {
        queue.push(resolved);
      }
    }
  }
  if (problems.length) throw new Error(`public declarations leak internals:\n  ${problems.join('\n  ')}`);
  for (const file of seen) {
    const dest = join(DIST, PUBLIC_TYPES[file] ?? file);
    if (!PUBLIC_TYPES[file] && Object.values(PUBLIC_TYPES).includes(file)) {
      throw new Error(`src/${file.replace(/\.d\.ts$/, '.ts')} collides with a generated entry declaration`);
    }
    mkdirSync(dirname(dest), { recursive: true });
    copyFileSync(join(TYPES_TMP, file), dest);
    // CommonJS twin (index.d.cts for the "require" condition): a .d.ts in a
    // "type": "module" package describes ESM only.
    {
      const text = readFileSync(dest, 'utf8').replace(
        /((?:\bfrom\s*|\bimport\s*\(\s*|\bimport\s+)['"]\.[^'"]*?)\.js(['"])/g,
        '$1.cjs$2',
      );
      writeFileSync(dest.replace(/\.d\.ts$/, '.d.cts'), text);
    }
  }
}

export async function buildSdk({ force = false } = {}) {
  const reason = force ? '--force' : staleReason();
  if (!reason) {
    log('up to date (sdk/dist)');
    return false;
  }
  if (!existsSync(WASM_FILE)) throw new Error('sdk/wasm is missing: run `node scripts/build-wasm.mjs` at the repo root first');
  log(`building (${reason})`);
  const t0 = performance.now();
  const esbuild = await import('esbuild');

  rmSync(DIST, { recursive: true, force: true });
  mkdirSync(DIST, { recursive: true });

  const common = {
    absWorkingDir: SDK,
    bundle: true,
    platform: 'neutral',
    // es2022, not esnext: with esnext the binary loader decodes the embedded
    // wasm with Uint8Array.fromBase64, which Node 20 lacks. (es2022 also has
    // top-level await, which the browser entries use.)
    target: 'es2022',
    loader: { '.wasm': 'binary' },
    legalComments: 'none',
    logLevel: 'warning',
    plugins: [inlineCodeTables],
    // Internal members are TS \`private\` with a trailing underscore; the build
    // shortens them (#private would too, but a Vue/Pinia Proxy around a
    // Connection then throws). No public name, glue name or wasm export ends in _.
    mangleProps: /[a-z0-9]_$/i,
  };
  const [esm] = await Promise.all([
    esbuild.build({ ...common, entryPoints: ESM_ENTRIES, format: 'esm', splitting: true, outdir: 'dist', metafile: true }),
    esbuild.build({ ...common, entryPoints: ['src/entries/cjs.ts'], format: 'cjs', outfile: 'dist/node.cjs' }),
    esbuild.build({ ...common, ...CJS_IMPORT_META, entryPoints: ['src/slim.ts'], format: 'cjs', outfile: 'dist/slim.cjs' }),
    esbuild.build({ ...common, platform: 'node', entryPoints: ['src/esbuild-plugin.mjs'], format: 'esm', outfile: 'dist/esbuild.js' }),
    esbuild.build({ ...common, ...CJS_IMPORT_META, platform: 'node', entryPoints: ['src/esbuild-plugin.mjs'], format: 'cjs', outfile: 'dist/esbuild.cjs' }),
  ]);
  // CJS subpaths: the same names as their ESM entry, from the one node.cjs.
  for (const name of CJS_WRAPPERS) {
    const names = esm.metafile.outputs[`dist/${name}.js`].exports;
    const body = names.map((n) => `  ${n}: m.${n},`).join('\n');
    writeFileSync(join(DIST, `${name}.cjs`), `'use strict';\nconst m = require('./node.cjs');\nmodule.exports = {\n${body}\n};\n`);
  }
  const leaks = enumLeaks();
  if (leaks.length) throw new Error(`a table in INLINED_TABLES is used as a value, not only as TABLE.NAME (${leaks.join(', ')}): keep it out of INLINED_TABLES`);
  for (const [from, to] of Object.entries(WASM_FILES)) copyFileSync(join(WASM_GLUE_DIR, from), join(DIST, to));
  for (const ext of ['d.ts', 'd.cts']) copyFileSync(join(SDK, 'src', 'esbuild-plugin.d.mts'), join(DIST, `esbuild.${ext}`));

  tsc(['-p', 'tsconfig.build.json']);
  publishDeclarations();
  rmSync(TYPES_TMP, { recursive: true, force: true });

  writeFileSync(STAMP, '');
  const size = (f) => `${(statSync(join(DIST, f)).size / 1024).toFixed(1)} KiB`;
  log(
    `built in ${((performance.now() - t0) / 1000).toFixed(1)} s: index.js ${size('index.js')}, node.cjs ${size('node.cjs')}, ` +
      `browser.js ${size('browser.js')}, ricochet_wasm.wasm (client) ${size('ricochet_wasm.wasm')}, ricochet_full.wasm ${size('ricochet_full.wasm')}, ricochet_sim.wasm ${size('ricochet_sim.wasm')}`,
  );
  return true;
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  buildSdk({ force: process.argv.includes('--force') }).catch((e) => {
    console.error(`[sdk build] ERROR: ${e.message}`);
    process.exit(1);
  });
}
