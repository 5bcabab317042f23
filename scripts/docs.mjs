#!/usr/bin/env node
// `npm run docs`: the API reference, generated from the code's own comments.
//
//   docs/api/index.html   links to the ones below
//   docs/api/sdk/         @ricochet/sdk (TypeDoc over its public entry points)
//   docs/api/relay/       @ricochet/relay (TypeDoc: the library, /testing)
//   docs/api/game/        @ricochet/game (TypeDoc: the optional game layer)
//   docs/api/rust/        rustdoc: ricochet-native (Rust API + C ABI), ricochet-core, ricochet-sim, ricochet-game
//
// `--check` fails on any TypeDoc or rustdoc warning (a broken {@link}, an
// exported symbol whose type is not documented) and is run by `npm test`.
// docs/api/ is generated: git-ignored, never committed (docs/*.md are not).
import { cpSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { ROOT, isMain, run } from './setup.mjs';

const OUT = join(ROOT, 'docs', 'api');

/** Each package's documented entry points: what its package.json exports, as source files. */
const PACKAGES = {
  sdk: { name: '@ricochet/sdk', entries: ['src/index.ts', 'src/server-api.ts', 'src/simulator-api.ts', 'src/slim.ts'] },
  relay: { name: '@ricochet/relay', entries: ['src/index.ts', 'src/testing.ts', 'src/playwright.ts'] },
  game: { name: '@ricochet/game', entries: ['src/index.ts'] },
};
const CRATES = ['ricochet-native', 'ricochet-core', 'ricochet-sim', 'ricochet-game'];

function typedoc(dir, { name, entries }, check) {
  const require = createRequire(join(ROOT, 'package.json'));
  const bin = join(dirname(require.resolve('typedoc/package.json')), 'bin', 'typedoc');
  const args = [
    ...entries.flatMap((e) => ['--entryPoints', e]),
    '--tsconfig', 'tsconfig.json',
    '--name', name,
    '--readme', 'README.md',
    '--out', join(OUT, dir),
    '--excludePrivate', '--excludeInternal',
    '--disableSources', // links to source lines would point into this checkout
    '--logLevel', 'Warn',
    // TypeDoc's defaults plus the languages the READMEs use (the game layer's shows its Rust twin).
    ...['bash', 'console', 'css', 'html', 'javascript', 'json', 'jsonc', 'json5', 'yaml', 'tsx', 'typescript', 'rust', 'sh']
      .flatMap((l) => ['--highlightLanguages', l]),
    ...(check ? ['--treatWarningsAsErrors'] : []),
  ];
  run(process.execPath, [bin, ...args], { cwd: join(ROOT, dir) });
}

function rustdoc(check) {
  const target = join(ROOT, 'wasm', 'target');
  const env = { ...process.env, RUSTDOCFLAGS: check ? '-D warnings' : '' };
  run('cargo', ['doc', '--no-deps', '--manifest-path', join(ROOT, 'wasm', 'Cargo.toml'), ...CRATES.flatMap((c) => ['-p', c])], { env });
  cpSync(join(target, 'doc'), join(OUT, 'rust'), { recursive: true });
}

export function buildDocs({ check = false } = {}) {
  rmSync(OUT, { recursive: true, force: true });
  mkdirSync(OUT, { recursive: true });
  for (const [dir, pkg] of Object.entries(PACKAGES)) typedoc(dir, pkg, check);
  rustdoc(check);
  const link = (href, text, what) => `<li><a href="${href}">${text}</a>: ${what}</li>`;
  writeFileSync(
    join(OUT, 'index.html'),
    [
      '<!doctype html><meta charset="utf-8"><title>Ricochet API reference</title>',
      '<h1>Ricochet API reference</h1><ul>',
      link('sdk/index.html', '@ricochet/sdk', 'connections, servers, transports (browser and Node)'),
      link('relay/index.html', '@ricochet/relay', 'the relay as a library, connect tokens, the test relay'),
      link('rust/ricochet_native/index.html', 'ricochet-native', 'UDP driver for native game servers (Rust API, C ABI)'),
      link('rust/ricochet_core/index.html', 'ricochet-core', 'the sans-IO protocol core'),
      link('rust/ricochet_sim/index.html', 'ricochet-sim', 'the test harness: seeded network simulator, client/server pair, payloads'),
      link('game/index.html', '@ricochet/game', 'the optional game layer: bit-packing, message schemas, interpolation, prediction'),
      link('rust/ricochet_game/index.html', 'ricochet-game', 'bit-packing, quantisation and message schemas for native servers'),
      '</ul>',
    ].join('\n'),
  );
  console.log(`[docs] ${join('docs', 'api', 'index.html')}`);
}

if (isMain(import.meta.url)) {
  try {
    buildDocs({ check: process.argv.includes('--check') });
  } catch (e) {
    console.error(`[docs] ERROR: ${e.message}`);
    process.exit(1);
  }
}
