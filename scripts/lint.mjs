#!/usr/bin/env node
// The lint gates: npm test's step after setup, or alone with
// `node scripts/lint.mjs`. Stops at the first failure.
//
//   Rust, every crate in the repository: each Cargo workspace found under the
//   root (the wasm/ workspace: core, sim, wasm, sim-wasm, native, game; and
//   the crates with workspaces of their own: wasm/fuzz, relay/native,
//   demos/arcade/server, netem), vendored third-party code excluded
//   (relay/native/vendor/wtransport, relay/native/vendor/quinn-proto):
//     cargo fmt --check                                    (rustfmt's defaults: no rustfmt.toml)
//     cargo clippy --no-deps --all-targets -- -D warnings  (tests, examples, benches and bins too)
//   and the library code (tests excluded) of the core and the native driver
//   once more with clippy::unwrap_used denied.
//
//   TypeScript: every tsconfig*.json resolves to `strict: true` with no
//   strict-family flag turned back off. The type-check itself needs the
//   builds: npm test's tsc step runs `tsc --noEmit` over tsProjects().
//
// The toolchain's rustfmt and clippy components come with rustup's default
// profile; fuzz targets build on stable (libfuzzer-sys needs a C++ compiler,
// which setup installs), only running them needs nightly (scripts/fuzz.mjs).

import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative } from 'node:path';
import { ROOT, isMain, run } from './setup.mjs';

/** Directories never searched for crates or TypeScript projects. */
const SKIP = new Set(['node_modules', 'target', 'dist', 'vendor', 'results', 'test-results', 'playwright-report']);

/** Packages whose non-test code may not call `unwrap()`: a panic there takes a game server down. */
const NO_UNWRAP = ['ricochet-core', 'ricochet-native'];

/** Strict-mode flags a tsconfig could turn back off after `strict: true`. */
const STRICT_FAMILY = [
  'strict',
  'noImplicitAny',
  'strictNullChecks',
  'strictFunctionTypes',
  'strictBindCallApply',
  'strictPropertyInitialization',
  'noImplicitThis',
  'alwaysStrict',
  'useUnknownInCatchVariables',
];

/** Paths (absolute) of the files whose name passes `test`, under the root, outside SKIP and dot-directories. */
function find(test, dir = ROOT, out = []) {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    if (e.isDirectory()) {
      if (!SKIP.has(e.name) && !e.name.startsWith('.')) find(test, join(dir, e.name), out);
    } else if (test(e.name)) {
      out.push(join(dir, e.name));
    }
  }
  return out.sort();
}

/**
 * The Cargo workspaces holding every Cargo.toml in the repository:
 * [{ root, manifest, members: [{ name, dir }] }]. A crate that belongs to
 * no workspace fails here (cargo metadata refuses it).
 */
export function cargoWorkspaces() {
  const workspaces = new Map();
  for (const manifest of find((n) => n === 'Cargo.toml')) {
    const r = spawnSync('cargo', ['metadata', '--no-deps', '--format-version', '1', '--manifest-path', manifest], {
      cwd: ROOT,
      encoding: 'utf8',
      maxBuffer: 64 << 20,
    });
    if (r.status !== 0) throw new Error(`cargo metadata ${relative(ROOT, manifest)}: ${r.stderr.trim()}`);
    const meta = JSON.parse(r.stdout);
    if (workspaces.has(meta.workspace_root)) continue;
    const ids = new Set(meta.workspace_members);
    workspaces.set(meta.workspace_root, {
      root: meta.workspace_root,
      manifest: join(meta.workspace_root, 'Cargo.toml'),
      members: meta.packages.filter((p) => ids.has(p.id)).map((p) => ({ name: p.name, dir: dirname(p.manifest_path) })),
    });
  }
  return [...workspaces.values()];
}

/** cargo fmt --check and clippy -D warnings over every workspace; unwrap_used in NO_UNWRAP's libraries. */
export function lintRust() {
  const workspaces = cargoWorkspaces();
  for (const ws of workspaces) {
    const where = relative(ROOT, ws.root);
    console.log(`[lint] ${where}: ${ws.members.map((m) => relative(ROOT, m.dir)).join(', ')}`);
    const packages = ws.members.flatMap((m) => ['-p', m.name]);
    try {
      run('cargo', ['fmt', '--check', ...packages, '--manifest-path', ws.manifest]);
    } catch (e) {
      throw new Error(`${e.message}: format with cargo fmt --manifest-path ${relative(ROOT, ws.manifest)}`);
    }
    run('cargo', ['clippy', '--no-deps', '--all-targets', ...packages, '--manifest-path', ws.manifest, '--', '-D', 'warnings']);
    const strict = ws.members.filter((m) => NO_UNWRAP.includes(m.name));
    if (strict.length > 0) {
      run('cargo', [
        'clippy', '--no-deps', '--lib', ...strict.flatMap((m) => ['-p', m.name]), '--manifest-path', ws.manifest,
        '--', '-D', 'warnings', '-D', 'clippy::unwrap_used',
      ]);
    }
  }
  const linted = new Set(workspaces.flatMap((ws) => ws.members.map((m) => m.name)));
  const missing = NO_UNWRAP.filter((name) => !linted.has(name));
  if (missing.length) throw new Error(`no crate named ${missing.join(', ')}: update NO_UNWRAP in scripts/lint.mjs`);
}

function typescript() {
  return createRequire(join(ROOT, 'relay', 'package.json'))('typescript');
}

/** The repository's TypeScript projects (each tsconfig.json but the shared base): directories relative to the root. */
export function tsProjects() {
  return find((n) => n === 'tsconfig.json')
    .map((p) => relative(ROOT, dirname(p)))
    .filter((d) => d !== '');
}

/** Every tsconfig*.json, after `extends`, is strict with no strict flag turned off. */
export function checkTsStrict() {
  const ts = typescript();
  const configs = find((n) => /^tsconfig(\..+)?\.json$/.test(n));
  const lax = [];
  for (const path of configs) {
    const { config, error } = ts.readConfigFile(path, ts.sys.readFile);
    if (error) throw new Error(`${relative(ROOT, path)}: ${ts.flattenDiagnosticMessageText(error.messageText, '\n')}`);
    const { options } = ts.parseJsonConfigFileContent(config, ts.sys, dirname(path), undefined, path);
    const off = options.strict === true ? STRICT_FAMILY.filter((f) => options[f] === false) : ['strict'];
    if (off.length) lax.push(`${relative(ROOT, path)} (${off.join(', ')})`);
  }
  if (lax.length) throw new Error(`not strict: ${lax.join('; ')}`);
  console.log(`[lint] strict: ${configs.map((p) => relative(ROOT, p)).join(', ')}`);
}

export async function lint() {
  lintRust();
  checkTsStrict();
}

if (isMain(import.meta.url)) {
  lint().catch((e) => {
    console.error(`[lint] FAILED: ${e.message}`);
    process.exit(1);
  });
}
