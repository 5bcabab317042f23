#!/usr/bin/env node
// Builds the Rust bindings into sdk/wasm/, three modules from two crates:
//   ricochet_wasm    ricochet-wasm, everything (Client, Server): Node entries,
//                    servers, tests, benchmarks, the server entries.
//                    opt-level 3 + wasm-opt -O3: servers need throughput.
//   ricochet_client  ricochet-wasm, the browser client only (cargo
//                    --no-default-features: no server, and no_std: a panic
//                    traps unformatted, a size-class allocator instead of
//                    dlmalloc, see wasm/wasm/src/lib.rs): opt-level "s" +
//                    wasm-opt -Os: download size matters more than the
//                    client's per-message cost (see MODULES).
//   ricochet_sim     ricochet-sim-wasm, the network simulator (Link) alone:
//                    loaded only by the simulator entry, so the two
//                    production modules above carry no simulator.
// Each: cargo build (wasm32) -> wasm-bindgen --target web -> wasm-opt.
// Skipped when sdk/wasm is newer than every Rust input. `--force` rebuilds.
//
// Outputs (all generated, git-ignored), for NAME in the two above:
//   sdk/wasm/NAME.js        glue (ESM), imported only by sdk/src/entries/*
//   sdk/wasm/NAME.d.ts      glue types (used inside the SDK only)
//   sdk/wasm/NAME_bg.wasm   the optimized module

import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { gzipSync } from 'node:zlib';
import { ROOT, WASM_DIR, WASM_TARGET, isMain, run, setup, wasmBindgenPath, wasmOptPath, wasmTargetDir } from './setup.mjs';

export const CRATE = 'ricochet-wasm';
const SIM_CRATE = 'ricochet-sim-wasm';
export const OUT_DIR = join(ROOT, 'sdk', 'wasm');

/**
 * The modules built. Measured on the S3 loop (bench/s3-wasm.mjs, 100 B
 * messages, one per tick) when chosen: opt-level 3 ~2.4 µs/message, "s"
 * ~3.4, "z" ~5.3; client module gzip 65.3 / 55.4 / 54.5 KiB. wasm-opt -Os vs
 * -Oz vs -O3 differ by < 0.1 KiB gzip after opt-level "s" (-Os smallest).
 * The client's -Os output flattened and re-relooped, then -Oz twice: -392 B
 * gzip (42,925 -> 42,533 B, 2026-11-26), S3 with the client module unchanged
 * within noise (1.39-1.44 vs 1.43-1.50 µs/message, three runs each).
 * --low-memory-unused (every module): rust-lld leaves the first KiB of
 * memory unused (data at 1 MiB above a stack growing down from there, or at
 * its default global base, 1024), so wasm-opt may fold constant offsets into
 * loads and stores: client module -255 B gzip (2026-11-27), S3 unchanged.
 */
export const MODULES = [
  { name: 'ricochet_wasm', crate: CRATE, profile: 'release', cargoArgs: [], opt: ['-O3', '--low-memory-unused'] },
  {
    name: 'ricochet_client',
    crate: CRATE,
    profile: 'wasm-client',
    // A profile of its own (not in Cargo.toml: it is this script's choice)
    // so that each module keeps its own cached build.
    cargoArgs: ['--no-default-features', '--config', 'profile.wasm-client.inherits="release"', '--config', 'profile.wasm-client.opt-level="s"'],
    opt: ['--low-memory-unused', '-Os', '--flatten', '--rereloop', '-Oz', '-Oz'],
  },
  // The simulator drives the relay's impairment and test links: built like
  // the full module (for speed), but a module of its own.
  { name: 'ricochet_sim', crate: SIM_CRATE, profile: 'release', cargoArgs: [], opt: ['-O3', '--low-memory-unused'] },
];
// Compatibility names: the full module (bench/s3-wasm.mjs reads it directly).
export const OUT_NAME = MODULES[0].name;
export const OUT_WASM = join(OUT_DIR, `${OUT_NAME}_bg.wasm`);
const OUTPUTS = MODULES.flatMap((m) => [`${m.name}_bg.wasm`, `${m.name}.js`, `${m.name}.d.ts`].map((f) => join(OUT_DIR, f)));
// Written last, only after every step succeeded; its mtime is the build time.
const STAMP = join(OUT_DIR, '.build-stamp.json');

// Files whose change requires a rebuild.
const INPUT_DIRS = ['wasm/core/src', 'wasm/wasm/src', 'wasm/sim/src', 'wasm/sim-wasm/src'];
const INPUT_FILES = [
  'wasm/Cargo.toml',
  'wasm/Cargo.lock',
  'wasm/core/Cargo.toml',
  'wasm/core/build.rs',
  'wasm/wasm/Cargo.toml',
  'wasm/wasm/build.rs',
  'wasm/sim/Cargo.toml',
  'wasm/sim-wasm/Cargo.toml',
  'scripts/build-wasm.mjs',
];

// wasm-opt gets --enable-* for each feature in the module's target_features
// section (it reads the section too, but older releases ignore some names);
// these are the fallback when the section is absent. They are the features rustc enables by
// default for wasm32-unknown-unknown (Rust >= 1.87), all supported by Node 20
// and current browsers.
const DEFAULT_FEATURES = [
  'bulk-memory',
  'nontrapping-fptoint',
  'sign-ext',
  'mutable-globals',
  'reference-types',
  'multivalue',
];
// target_features name (LLVM) -> wasm-opt flag. Names not listed are implied
// by another one (bulk-memory-opt, call-indirect-overlong) or unknown to
// older binaryen releases.
const WASM_OPT_FLAGS = {
  'bulk-memory': '--enable-bulk-memory',
  'nontrapping-fptoint': '--enable-nontrapping-float-to-int',
  'sign-ext': '--enable-sign-ext',
  'mutable-globals': '--enable-mutable-globals',
  'reference-types': '--enable-reference-types',
  multivalue: '--enable-multivalue',
  simd128: '--enable-simd',
  'relaxed-simd': '--enable-relaxed-simd',
  atomics: '--enable-threads',
  'tail-call': '--enable-tail-call',
  'exception-handling': '--enable-exception-handling',
  'extended-const': '--enable-extended-const',
  multimemory: '--enable-multimemory',
  memory64: '--enable-memory64',
  gc: '--enable-gc',
};

const log = (msg) => console.log(`[build-wasm] ${msg}`);

function newestInput() {
  let newest = { time: -Infinity, file: null };
  const consider = (p) => {
    const t = statSync(p).mtimeMs;
    if (t > newest.time) newest = { time: t, file: p };
  };
  const walk = (dir) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const p = join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else consider(p);
    }
  };
  for (const d of INPUT_DIRS) if (existsSync(join(ROOT, d))) walk(join(ROOT, d));
  for (const f of INPUT_FILES) if (existsSync(join(ROOT, f))) consider(join(ROOT, f));
  return newest;
}

/** Why a rebuild is needed, or null when sdk/wasm is up to date. */
function staleReason() {
  if (!existsSync(STAMP)) return 'no previous build';
  const missing = OUTPUTS.find((p) => !existsSync(p));
  if (missing) return `${missing.slice(ROOT.length + 1)} is missing`;
  const built = statSync(STAMP).mtimeMs;
  const newest = newestInput();
  if (newest.time > built) return `${newest.file.slice(ROOT.length + 1)} changed`;
  let stamp = {};
  try {
    stamp = JSON.parse(readFileSync(STAMP, 'utf8'));
  } catch {
    return 'unreadable build stamp';
  }
  if (stamp.wasmOpt === 'missing' && wasmOptPath()) return 'wasm-opt is now available';
  return null;
}

/** Feature names from the module's target_features custom section. */
function targetFeatures(bytes) {
  const sections = WebAssembly.Module.customSections(new WebAssembly.Module(bytes), 'target_features');
  if (sections.length === 0) return null;
  const b = new Uint8Array(sections[0]);
  let i = 0;
  const leb = () => {
    let result = 0;
    let shift = 0;
    for (;;) {
      const byte = b[i++];
      result |= (byte & 0x7f) << shift;
      if ((byte & 0x80) === 0) return result;
      shift += 7;
    }
  };
  const names = [];
  for (let n = leb(); n > 0; n--) {
    const prefix = String.fromCharCode(b[i++]);
    const len = leb();
    const name = new TextDecoder().decode(b.subarray(i, i + len));
    i += len;
    if (prefix === '+' || prefix === '=') names.push(name);
  }
  return names;
}

export function wasmOptFlags(bytes) {
  const features = targetFeatures(bytes) ?? DEFAULT_FEATURES;
  return [...new Set(features.map((f) => WASM_OPT_FLAGS[f]).filter(Boolean))];
}

function sizes(file) {
  const bytes = readFileSync(file);
  return { raw: bytes.length, gzip: gzipSync(bytes, { level: 9 }).length };
}

/**
 * Instantiates a module through its generated glue in a fresh Node process
 * (runs __wbindgen_start). Returns null on success, else the error text.
 */
function instantiateError(name, wasmFile) {
  const glue = pathToFileURL(join(OUT_DIR, `${name}.js`)).href;
  const code =
    `import { readFileSync } from 'node:fs';` +
    `import { initSync } from ${JSON.stringify(glue)};` +
    `initSync({ module: readFileSync(${JSON.stringify(wasmFile)}) });`;
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', code], { encoding: 'utf8' });
  if (r.status === 0) return null;
  return (r.stderr.split('\n').find((l) => /Error/.test(l)) ?? r.stderr.trim()).trim() || `exit ${r.status}`;
}

/**
 * wasm-opt on one module, in place, only if the result still validates,
 * keeps the same exports and instantiates through the glue; otherwise keeps
 * the unoptimized module with a warning. Returns 'ok', 'missing' or 'failed'.
 * Names, producers and target features are stripped (the browser needs none).
 */
function optimize(mod) {
  const wasmOpt = wasmOptPath();
  if (!wasmOpt) {
    console.warn('[build-wasm] WARNING: wasm-opt not found: skipping optimization');
    return 'missing';
  }
  const file = join(OUT_DIR, `${mod.name}_bg.wasm`);
  const before = readFileSync(file);
  const tmp = `${file}.opt`;
  const flags = wasmOptFlags(before);
  try {
    run(wasmOpt, [...mod.opt, ...flags, '--strip-debug', '--strip-producers', '--strip-target-features', file, '-o', tmp]);
    const after = readFileSync(tmp);
    if (!WebAssembly.validate(after)) throw new Error('its output does not validate');
    const exportsOf = (b) => JSON.stringify(WebAssembly.Module.exports(new WebAssembly.Module(b)));
    if (exportsOf(after) !== exportsOf(before)) throw new Error('it changed the module exports');
    const err = instantiateError(mod.name, tmp);
    if (err) throw new Error(`its output fails to instantiate: ${err}`);
    renameSync(tmp, file);
    return 'ok';
  } catch (e) {
    console.warn(`[build-wasm] WARNING: ${wasmOpt}: ${e.message}; keeping the unoptimized ${mod.name}`);
    return 'failed';
  } finally {
    rmSync(tmp, { force: true });
  }
}

const kb = (n) => `${(n / 1024).toFixed(1)} KiB`;

/** cargo build + wasm-bindgen + wasm-opt for one entry of MODULES. */
function buildModule(mod) {
  run('cargo', ['build', '--target', WASM_TARGET, '-p', mod.crate, '--profile', mod.profile, ...mod.cargoArgs], { cwd: WASM_DIR });
  const targetDir = wasmTargetDir();
  const cargoOut = join(targetDir, WASM_TARGET, mod.profile, `${mod.crate.replaceAll('-', '_')}.wasm`);
  if (!existsSync(cargoOut)) throw new Error(`cargo did not produce ${cargoOut}`);
  run(wasmBindgenPath(), [
    cargoOut,
    '--target', 'web',
    '--omit-default-module-path',
    '--out-dir', OUT_DIR,
    '--out-name', mod.name,
  ]);
  // Raw-export typings: unused, and TypeScript would pick them up for
  // `import bytes from '../wasm/x_bg.wasm'` instead of src/glue.d.ts.
  rmSync(join(OUT_DIR, `${mod.name}_bg.wasm.d.ts`), { force: true });
  const file = join(OUT_DIR, `${mod.name}_bg.wasm`);
  const bindgen = sizes(file);
  const wasmOpt = optimize(mod);
  const s = sizes(file);
  log(
    `sdk/wasm/${mod.name}_bg.wasm ${kb(s.raw)} raw, ${kb(s.gzip)} gzip` +
      (wasmOpt === 'ok' ? ` (before wasm-opt ${mod.opt.join(' ')}: ${kb(bindgen.raw)} raw, ${kb(bindgen.gzip)} gzip)` : ' (NOT optimized)'),
  );
  return { wasmOpt, raw: s.raw, gzip: s.gzip };
}

/** Builds sdk/wasm unless it is up to date. Returns true when it built. */
export function buildWasm({ force = false } = {}) {
  const reason = force ? '--force' : staleReason();
  if (!reason) {
    const all = MODULES.map((m) => {
      const s = sizes(join(OUT_DIR, `${m.name}_bg.wasm`));
      return `${m.name} ${kb(s.raw)} raw, ${kb(s.gzip)} gzip`;
    });
    log(`up to date (sdk/wasm): ${all.join('; ')}`);
    return false;
  }
  log(`building (${reason})`);
  const t0 = performance.now();
  rmSync(STAMP, { force: true });
  rmSync(OUT_DIR, { recursive: true, force: true });
  mkdirSync(OUT_DIR, { recursive: true });
  const stamp = {};
  for (const mod of MODULES) stamp[mod.name] = buildModule(mod);
  // 'missing' anywhere makes the next run rebuild once wasm-opt appears.
  stamp.wasmOpt = Object.values(stamp).some((m) => m.wasmOpt === 'missing') ? 'missing' : 'ok';
  writeFileSync(STAMP, JSON.stringify(stamp) + '\n');
  log(`built in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  return true;
}

if (isMain(import.meta.url)) {
  try {
    const force = process.argv.includes('--force');
    if (!process.argv.includes('--no-setup')) setup();
    buildWasm({ force });
  } catch (e) {
    console.error(`[build-wasm] ERROR: ${e.message}`);
    process.exit(1);
  }
}
