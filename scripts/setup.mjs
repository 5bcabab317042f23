#!/usr/bin/env node
// Installs whatever the development build needs and is missing. Idempotent;
// when everything is present it only stats a few files (well under 1 s).
//
//   - Debian's gcc, g++ and libc6-dev: rustc links with cc, the FFI
//     header test compiles include/ricochet.h with it, libfuzzer-sys
//     (wasm/fuzz, linted by npm test) builds libFuzzer with c++  (apt-get, as root)
//   - Rust target wasm32-unknown-unknown                 (rustup target add)
//   - rustfmt and clippy, npm test's lint step           (rustup component add)
//   - wasm-bindgen-cli, same version as the crate pin    (cargo install, cached)
//   - npm dependencies of the workspace                  (npm install)
//   - Debian's chromium and firefox-esr, browser tests   (apt-get, as root)
//   - WebKitGTK's MiniBrowser, WebKitWebDriver and Xvfb,
//     the WebKit specs (e2e/webkit.ts)                   (apt-get, as root)
//   - wasm-opt: npm package `binaryen` (a root devDependency, so npm install
//     brings it). Not Debian's binaryen 108: it corrupts wasm-bindgen 0.2.130
//     output (writes the __wbindgen_externrefs table export with the index of
//     the funcref table, so instantiation fails).
//   - HAProxy and nftables, the relay-fleet specs         (apt-get, as root)
//   (helm, kubernetes-validate and mmdebstrap, for deploy/'s checks only,
//   are installed by npm test's deploy step: deploy/tools.mjs)
//
// Node builtins only: it runs before node_modules exists.
// Other scripts import the helpers exported here.

import { spawnSync } from 'node:child_process';
import { accessSync, constants, existsSync, readFileSync, statSync, utimesSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
export const WASM_DIR = join(ROOT, 'wasm');
export const WASM_CRATE_MANIFEST = join(WASM_DIR, 'wasm', 'Cargo.toml');
export const WASM_TARGET = 'wasm32-unknown-unknown';
/** Cargo's target directory for the wasm/ workspace (CARGO_TARGET_DIR, when set, is relative to cargo's cwd, wasm/). */
export const wasmTargetDir = () => resolve(WASM_DIR, process.env.CARGO_TARGET_DIR || 'target');

const log = (msg) => console.log(`[setup] ${msg}`);
const warn = (msg) => console.warn(`[setup] WARNING: ${msg}`);

// rustup's default install dir is not always on PATH (e.g. non-login shells).
const cargoHomeBin = join(process.env.CARGO_HOME || join(homedir(), '.cargo'), 'bin');
if (!findOnPath('cargo') && existsSync(join(cargoHomeBin, 'cargo'))) {
  process.env.PATH = `${cargoHomeBin}${delimiter}${process.env.PATH ?? ''}`;
}

/** Absolute path of an executable found on PATH, or null. */
export function findOnPath(name) {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    if (!dir) continue;
    const p = join(dir, name);
    try {
      accessSync(p, constants.X_OK);
      if (statSync(p).isFile()) return p;
    } catch {
      // not here
    }
  }
  return null;
}

/**
 * Runs a command with inherited stdio; throws on failure (non-zero exit,
 * signal, or missing executable). Prints the command first.
 */
export function run(cmd, args, { cwd = ROOT, env, quiet = false } = {}) {
  if (!quiet) console.log(`$ ${[cmd, ...args].join(' ')}${cwd !== ROOT ? `   (in ${relative(cwd)})` : ''}`);
  const r = spawnSync(cmd, args, { cwd, env: env ?? process.env, stdio: 'inherit' });
  if (r.error) throw new Error(`${cmd}: ${r.error.message}`);
  if (r.status !== 0) {
    throw new Error(`${cmd} ${args.join(' ')} failed (${r.signal ? `signal ${r.signal}` : `exit ${r.status}`})`);
  }
}

/** Runs a command and returns its stdout (throws on failure). */
export function capture(cmd, args, { cwd = ROOT } = {}) {
  const r = spawnSync(cmd, args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  if (r.error) throw new Error(`${cmd}: ${r.error.message}`);
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} failed: ${r.stderr.trim()}`);
  return r.stdout;
}

function relative(p) {
  return p.startsWith(ROOT) ? p.slice(ROOT.length + 1) || '.' : p;
}

/** Root of the tool cache: $RICOCHET_CACHE or ~/.cache/ricochet. */
export function cacheDir() {
  return process.env.RICOCHET_CACHE || join(homedir(), '.cache', 'ricochet');
}

/**
 * The exact wasm-bindgen version pinned in wasm/wasm/Cargo.toml
 * (`wasm-bindgen = "=X.Y.Z"` or `wasm-bindgen = { version = "=X.Y.Z", ... }`).
 * The CLI must match the crate exactly, so the pin must be exact.
 */
export function wasmBindgenVersion() {
  const toml = readFileSync(WASM_CRATE_MANIFEST, 'utf8');
  const m = toml.match(/^\s*wasm-bindgen\s*=\s*(?:\{[^}\n]*?\bversion\s*=\s*)?"([^"]+)"/m);
  if (!m) throw new Error(`no wasm-bindgen dependency found in ${relative(WASM_CRATE_MANIFEST)}`);
  const exact = m[1].match(/^=\s*(\d+\.\d+\.\d+)$/);
  if (!exact) {
    throw new Error(
      `wasm-bindgen must be pinned exactly in ${relative(WASM_CRATE_MANIFEST)} ` +
        `(e.g. "=0.2.130"); found "${m[1]}"`,
    );
  }
  return exact[1];
}

/** Path of the cached wasm-bindgen CLI binary (may not exist yet). */
export function wasmBindgenPath(version = wasmBindgenVersion()) {
  return join(cacheDir(), `wasm-bindgen-cli-${version}`, 'bin', 'wasm-bindgen');
}

/**
 * Path of wasm-opt, or null when none is installed: $WASM_OPT, else the
 * project's npm `binaryen`, else one on PATH. Its output is verified by
 * scripts/build-wasm.mjs either way.
 */
export function wasmOptPath() {
  if (process.env.WASM_OPT) return process.env.WASM_OPT;
  const npmBin = join(ROOT, 'node_modules', 'binaryen', 'bin', 'wasm-opt');
  if (existsSync(npmBin)) return npmBin;
  return findOnPath('wasm-opt');
}

// ---------------------------------------------------------------------------

function ensureRustTarget() {
  if (!findOnPath('cargo')) {
    throw new Error('cargo not found: install Rust with rustup (https://rustup.rs) first');
  }
  if (!findOnPath('rustup')) {
    warn(`rustup not found; assuming the ${WASM_TARGET} target is installed`);
    return;
  }
  const installed = capture('rustup', ['target', 'list', '--installed']).split('\n').map((s) => s.trim());
  if (installed.includes(WASM_TARGET)) return;
  log(`installing Rust target ${WASM_TARGET}`);
  run('rustup', ['target', 'add', WASM_TARGET]);
}

/** rustfmt and clippy (rustup's default profile has them, its minimal one not). */
function ensureRustComponents() {
  if (!findOnPath('rustup')) return;
  const installed = capture('rustup', ['component', 'list', '--installed']).split('\n').map((s) => s.trim().split('-')[0]);
  const missing = ['rustfmt', 'clippy'].filter((c) => !installed.includes(c));
  if (missing.length === 0) return;
  log(`installing Rust components ${missing.join(', ')}`);
  run('rustup', ['component', 'add', ...missing]);
}

function ensureWasmBindgen() {
  const version = wasmBindgenVersion();
  const bin = wasmBindgenPath(version);
  if (existsSync(bin)) return;
  const root = dirname(dirname(bin));
  log(`installing wasm-bindgen-cli ${version} into ${root} (one-time, ~5 min on 2 cores)`);
  // No --locked: the registry mirror lacks one locked dependency version.
  run('cargo', ['install', 'wasm-bindgen-cli', '--version', version, '--root', root]);
  if (!existsSync(bin)) throw new Error(`cargo install finished but ${bin} is missing`);
}

function ensureWasmOpt() {
  if (wasmOptPath()) return;
  warn('wasm-opt not found (the npm devDependency `binaryen` should provide it): ' +
    'the wasm will be built unoptimized');
}

function mtime(p) {
  try {
    return statSync(p).mtimeMs;
  } catch {
    return -Infinity;
  }
}

function ensureNpmDeps() {
  const marker = join(ROOT, 'node_modules', '.package-lock.json');
  const lock = join(ROOT, 'package-lock.json');
  const markerTime = mtime(marker);
  const reason = !existsSync(join(ROOT, 'node_modules'))
    ? 'node_modules is missing'
    : markerTime === -Infinity
      ? 'node_modules/.package-lock.json is missing'
      : !existsSync(lock)
        ? 'package-lock.json is missing'
        : mtime(lock) > markerTime
          ? 'package-lock.json changed'
          : [join(ROOT, 'package.json'), ...workspaceManifests()].some((p) => mtime(p) > markerTime)
            ? 'a package.json changed'
            : null;
  if (!reason) return;
  log(`installing npm dependencies (${reason})`);
  run('npm', ['install', '--no-audit', '--no-fund']);
  // npm may rewrite package-lock.json after its marker: mark the tree as in sync.
  if (existsSync(marker)) {
    const now = new Date();
    utimesSync(marker, now, now);
  }
}

function workspaceManifests() {
  try {
    const { workspaces = [] } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));
    return (Array.isArray(workspaces) ? workspaces : workspaces.packages ?? [])
      .filter((w) => !/[*?]/.test(w))
      .map((w) => join(ROOT, w, 'package.json'));
  } catch {
    return [];
  }
}

/** Path of the Chromium the browser tests drive. */
export const CHROMIUM = process.env.RICOCHET_CHROMIUM || '/usr/bin/chromium';
/** Path of the Firefox the browser tests drive (over WebDriver BiDi; see e2e/browsers.ts). */
export const FIREFOX = process.env.RICOCHET_FIREFOX || '/usr/bin/firefox-esr';

/** Debian's multiarch library directory for this machine's architecture. */
const MULTIARCH = { x64: 'x86_64-linux-gnu', arm64: 'aarch64-linux-gnu' }[process.arch] ?? `${process.arch}-linux-gnu`;
/**
 * WebKitGTK for the WebKit specs (e2e/webkit.ts): MiniBrowser (package
 * libwebkit2gtk-4.1-0), driven by WebKitWebDriver (webkit2gtk-driver), on an
 * Xvfb display (xvfb): MiniBrowser has no headless mode.
 */
export const MINIBROWSER = process.env.RICOCHET_MINIBROWSER || `/usr/lib/${MULTIARCH}/webkit2gtk-4.1/MiniBrowser`;
export const WEBKIT_WEBDRIVER = process.env.RICOCHET_WEBKIT_WEBDRIVER || '/usr/bin/WebKitWebDriver';
export const XVFB = process.env.RICOCHET_XVFB || '/usr/bin/Xvfb';
/** HAProxy and nft for the relay-fleet specs (e2e/fleet/topology.ts reads the same variables). */
export const HAPROXY = process.env.RICOCHET_HAPROXY || '/usr/sbin/haproxy';
export const NFT = process.env.RICOCHET_NFT || '/usr/sbin/nft';

/**
 * A browser from Debian (Playwright's own browser downloads cannot reach
 * their hosts here), installed when `path` is missing. Needs root and apt;
 * elsewhere point `envVar` at one.
 */
function ensureDebianBrowser(path, pkg, envVar) {
  ensureDebianPackages([{ path, pkg, envVar }]);
}

/** Like ensureDebianBrowser, for several files at once: one apt-get run for all that are missing. */
function ensureDebianPackages(wanted) {
  const missing = wanted.filter((w) => !existsSync(w.path));
  if (missing.length === 0) return;
  const pkgs = [...new Set(missing.map((m) => m.pkg))];
  if (!findOnPath('apt-get') || process.getuid?.() !== 0) {
    const which = missing.map((m) => `${m.path} (${m.pkg}, or set ${m.envVar})`).join(', ');
    throw new Error(`missing: ${which}: install with apt-get install ${pkgs.join(' ')}`);
  }
  log(`installing Debian ${pkgs.join(', ')} (one-time)`);
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  run('apt-get', ['update'], { env });
  try {
    run('apt-get', ['install', '-y', ...pkgs], { env });
  } catch {
    // A half-configured package set (e.g. unmet perl deps) blocks installs until fixed.
    run('apt-get', ['-y', '-f', 'install'], { env });
    run('apt-get', ['install', '-y', ...pkgs], { env });
  }
  for (const m of missing) if (!existsSync(m.path)) throw new Error(`apt-get installed ${m.pkg} but ${m.path} is missing`);
}

/**
 * A C and a C++ compiler and the C library's headers, from Debian when
 * missing: `$CC`/`$CXX` when set, else cc and c++ on PATH.
 */
function ensureCompilers() {
  const tool = (name) => (name.includes('/') ? name : findOnPath(name) ?? `/usr/bin/${name}`);
  ensureDebianPackages([
    { path: tool(process.env.CC || 'cc'), pkg: 'gcc', envVar: 'CC' },
    { path: tool(process.env.CXX || 'c++'), pkg: 'g++', envVar: 'CXX' },
    { path: '/usr/include/stdlib.h', pkg: 'libc6-dev', envVar: 'CC' },
  ]);
}

/** Ensures every tool and dependency is present; prints only what it installs. */
export function setup({ browser = true } = {}) {
  ensureCompilers();
  ensureRustTarget();
  ensureRustComponents();
  ensureWasmBindgen();
  ensureNpmDeps();
  ensureWasmOpt();
  if (browser) {
    ensureDebianBrowser(CHROMIUM, 'chromium', 'RICOCHET_CHROMIUM');
    ensureDebianBrowser(FIREFOX, 'firefox-esr', 'RICOCHET_FIREFOX');
    ensureDebianPackages([
      { path: MINIBROWSER, pkg: 'libwebkit2gtk-4.1-0', envVar: 'RICOCHET_MINIBROWSER' },
      { path: WEBKIT_WEBDRIVER, pkg: 'webkit2gtk-driver', envVar: 'RICOCHET_WEBKIT_WEBDRIVER' },
      { path: XVFB, pkg: 'xvfb', envVar: 'RICOCHET_XVFB' },
    ]);
    // The relay-fleet specs' load balancers (e2e/fleet/topology.ts); they run only as root.
    if (process.getuid?.() === 0)
      ensureDebianPackages([
        { path: HAPROXY, pkg: 'haproxy', envVar: 'RICOCHET_HAPROXY' },
        { path: NFT, pkg: 'nftables', envVar: 'RICOCHET_NFT' },
      ]);
  }
}

/** True when the module is the script node was started with. */
export function isMain(metaUrl) {
  return !!process.argv[1] && metaUrl === pathToFileURL(resolve(process.argv[1])).href;
}

if (isMain(import.meta.url)) {
  try {
    const t0 = performance.now();
    setup();
    log(`ok (${Math.round(performance.now() - t0)} ms)`);
  } catch (e) {
    console.error(`[setup] ERROR: ${e.message}`);
    process.exit(1);
  }
}
