#!/usr/bin/env node
// Builds the WebTransport addon (relay/native), stripped, into the platform
// packages under relay/npm/<platform>/ (what ships) and, for the host, into
// relay/native/ricochet_relay_wt.node (what the development clone and its
// tests load: the same file).
//
//   node relay/native/build.mjs [--force] [--client] [--all-targets] [--target <platform>]
//
//   (default)       the host platform. On Linux with cargo-zigbuild against the
//                   glibc 2.17 floor (or musl), so the tests run what ships.
//   --all-targets   the four Linux platforms (linux-{x64,arm64}-{gnu,musl}), cross-compiled with zig.
//   --target P      one platform by package suffix, e.g. darwin-arm64 (CI builds macOS and Windows natively).
//   --client        also builds examples/wt_client and examples/h3_probe for the host (the addon tests drive them).
//   --force         rebuild even when outputs are newer than src/, vendor/, build.rs, Cargo.toml and Cargo.lock.
//
// zig and cargo-zigbuild come from PyPI into $RICOCHET_CACHE (default
// ~/.cache/ricochet) on first use; Rust targets are added with rustup. Without
// them (no python3/pip) the host is built with plain cargo and a warning, and
// only into relay/native: that build has no glibc floor, so it is never packaged.
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readdirSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const dir = dirname(fileURLToPath(import.meta.url));
const npmDir = join(dir, '..', 'npm');
const devOut = join(dir, 'ricochet_relay_wt.node');
const ZIGLANG = '0.17.1';
const CARGO_ZIGBUILD = '0.24.1';
const GLIBC_FLOOR = '2.17';

/** Platform package suffix -> Rust target; `zig` marks Linux targets built with cargo-zigbuild. */
export const TARGETS = {
  'linux-x64-gnu': { triple: 'x86_64-unknown-linux-gnu', zig: `x86_64-unknown-linux-gnu.${GLIBC_FLOOR}` },
  'linux-arm64-gnu': { triple: 'aarch64-unknown-linux-gnu', zig: `aarch64-unknown-linux-gnu.${GLIBC_FLOOR}` },
  'linux-x64-musl': { triple: 'x86_64-unknown-linux-musl', zig: 'x86_64-unknown-linux-musl' },
  'linux-arm64-musl': { triple: 'aarch64-unknown-linux-musl', zig: 'aarch64-unknown-linux-musl' },
  'darwin-x64': { triple: 'x86_64-apple-darwin' },
  'darwin-arm64': { triple: 'aarch64-apple-darwin' },
  'win32-x64-msvc': { triple: 'x86_64-pc-windows-msvc' },
};

const log = (m) => console.log(`[addon] ${m}`);
const warn = (m) => console.warn(`[addon] WARNING: ${m}`);

/** The host's platform package suffix (glibc vs musl as the loader in index.js decides). */
export function hostPlatform() {
  const { platform, arch } = process;
  if (platform === 'linux') {
    let glibc = null;
    try {
      glibc = process.report.getReport().header.glibcVersionRuntime ?? null;
    } catch {
      // no report: treat as musl
    }
    return `linux-${arch}-${glibc ? 'gnu' : 'musl'}`;
  }
  return platform === 'win32' ? `win32-${arch}-msvc` : `${platform}-${arch}`;
}

/** Where cargo leaves the library for a triple (null triple: the host's plain target/release). */
function libPath(triple) {
  const name = triple?.includes('windows') || (!triple && process.platform === 'win32') ? 'ricochet_relay_wt.dll'
    : triple?.includes('apple') || (!triple && process.platform === 'darwin') ? 'libricochet_relay_wt.dylib'
      : 'libricochet_relay_wt.so';
  return join(dir, 'target', ...(triple ? [triple] : []), 'release', name);
}

const packagedOut = (p) => join(npmDir, p, `ricochet_relay_wt.${p}.node`);

function newest(p) {
  if (!existsSync(p)) return 0;
  const st = statSync(p);
  if (!st.isDirectory()) return st.mtimeMs;
  let m = st.mtimeMs;
  for (const e of readdirSync(p)) m = Math.max(m, newest(join(p, e)));
  return m;
}

const upToDate = (file, inputs) => existsSync(file) && statSync(file).mtimeMs >= inputs;

function run(cmd, args, env = process.env) {
  const r = spawnSync(cmd, args, { cwd: dir, stdio: 'inherit', env });
  if (r.error) throw new Error(`${cmd}: ${r.error.message}`);
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} failed (${r.signal ?? `exit ${r.status}`})`);
}

function capture(cmd, args) {
  const r = spawnSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  return r.status === 0 ? r.stdout : null;
}

/** Copies via a temporary name then renames: a running process keeps the old inode. */
function place(from, to) {
  mkdirSync(dirname(to), { recursive: true });
  copyFileSync(from, `${to}.tmp`);
  renameSync(`${to}.tmp`, to);
}

function ensureRustTargets(triples) {
  const installed = capture('rustup', ['target', 'list', '--installed']);
  if (installed === null) return warn('rustup not found; assuming the Rust targets are installed');
  const missing = triples.filter((t) => !installed.split('\n').includes(t));
  if (missing.length) run('rustup', ['target', 'add', ...missing]);
}

/**
 * zig + cargo-zigbuild from PyPI, cached per version (about 5 s the first
 * time, a stat after). Returns the environment to run cargo-zigbuild in, or
 * null when they cannot be installed.
 */
export function ensureZigbuild() {
  const root = join(process.env.RICOCHET_CACHE || join(homedir(), '.cache', 'ricochet'), `zigbuild-${CARGO_ZIGBUILD}-zig${ZIGLANG}`);
  const zig = join(root, 'ziglang', process.platform === 'win32' ? 'zig.exe' : 'zig');
  const bin = join(root, 'bin');
  const failed = `${root}.failed`; // an offline machine should not wait on pip at every build
  if (!existsSync(zig) || !existsSync(join(bin, 'cargo-zigbuild'))) {
    if (existsSync(failed) && Date.now() - statSync(failed).mtimeMs < 24 * 3600e3) return null;
    log(`installing ziglang ${ZIGLANG} and cargo-zigbuild ${CARGO_ZIGBUILD} into ${root} (one-time)`);
    const r = spawnSync('python3', ['-m', 'pip', 'install', '--quiet', '--disable-pip-version-check', '--retries', '1', '--timeout', '15',
      '--target', root, `ziglang==${ZIGLANG}`, `cargo-zigbuild==${CARGO_ZIGBUILD}`], { stdio: 'inherit' });
    if (r.status !== 0 || !existsSync(zig)) {
      mkdirSync(dirname(failed), { recursive: true });
      writeFileSync(failed, `${new Date().toISOString()} pip install failed; retried after a day, or delete this file\n`);
      return null;
    }
  }
  return { ...process.env, PATH: `${bin}${delimiter}${process.env.PATH ?? ''}`, CARGO_ZIGBUILD_ZIG_PATH: zig };
}

/** The highest GLIBC_x.y symbol version `file` needs, or null (no objdump, or none). */
export function maxGlibc(file) {
  const out = capture('objdump', ['-T', file]);
  const versions = [...(out ?? '').matchAll(/GLIBC_(\d+)\.(\d+)/g)].map((m) => [+m[1], +m[2]]);
  if (!versions.length) return null;
  versions.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  return versions.at(-1).join('.');
}

/** Refuses a gnu build that needs a newer glibc than the floor (what the package promises). */
function checkFloor(platform, file) {
  if (!platform.endsWith('-gnu')) return;
  const need = maxGlibc(file);
  if (need === null) return;
  const [a, b] = need.split('.').map(Number);
  const [fa, fb] = GLIBC_FLOOR.split('.').map(Number);
  if (a > fa || (a === fa && b > fb)) throw new Error(`${file} needs GLIBC_${need}, above the ${GLIBC_FLOOR} floor`);
}

/** Builds one platform into its package (and into relay/native for the host); false when cargo-zigbuild is missing. */
function buildPlatform(platform, { zigEnv, host }) {
  const t = TARGETS[platform];
  if (!t) throw new Error(`unknown platform ${platform} (one of ${Object.keys(TARGETS).join(', ')})`);
  if (t.zig && !zigEnv) return false;
  ensureRustTargets([t.triple]);
  if (t.zig) {
    // A musl cdylib must link libc dynamically: Node loads it into its own process.
    const env = t.triple.endsWith('musl') ? { ...zigEnv, [`CARGO_TARGET_${t.triple.toUpperCase().replaceAll('-', '_')}_RUSTFLAGS`]: '-C target-feature=-crt-static' } : zigEnv;
    run('cargo', ['zigbuild', '--release', '--target', t.zig], env);
  } else {
    run('cargo', ['build', '--release', '--target', t.triple]);
  }
  const lib = libPath(t.triple);
  checkFloor(platform, lib);
  place(lib, packagedOut(platform));
  if (host) place(lib, devOut);
  log(`built ${platform}: ${(statSync(lib).size / 1e6).toFixed(2)} MB${platform.endsWith('-gnu') ? `, needs GLIBC_${maxGlibc(lib) ?? '?'}` : ''}`);
  return true;
}

export function build({ force = false, client = false, allTargets = false, target = null } = {}) {
  // vendor/: the patched wtransport and quinn-proto are compiled into the addon.
  const inputs = Math.max(...['src', 'vendor', 'build.rs', 'Cargo.toml', 'Cargo.lock'].map((f) => newest(join(dir, f))));
  const host = hostPlatform();
  const platforms = allTargets ? Object.keys(TARGETS).filter((p) => TARGETS[p].zig) : [target ?? host];
  // The host's development build must be the packaged file (a plain-cargo fallback build is not).
  const devIsPackaged = () => upToDate(devOut, inputs) && statSync(devOut).size === statSync(packagedOut(host)).size;
  const stale = platforms.filter((p) => force || !upToDate(packagedOut(p), inputs) || (p === host && !devIsPackaged()));
  if (!stale.length) log(`${platforms.join(', ')} up to date`);
  const zigEnv = stale.some((p) => TARGETS[p]?.zig) ? ensureZigbuild() : null;
  for (const p of stale) {
    if (buildPlatform(p, { zigEnv, host: p === host })) continue;
    if (p !== host || allTargets || target) throw new Error(`${p} needs zig and cargo-zigbuild (python3 -m pip could not install them)`);
    warn('zig/cargo-zigbuild unavailable (python3 -m pip could not install them): building with plain cargo for this machine only (no glibc 2.17 floor; not packaged)');
    run('cargo', ['build', '--release']);
    place(libPath(null), devOut);
  }
  if (client) {
    const examples = ['wt_client', 'h3_probe'];
    const exe = (name) => join(dir, 'target', 'release', 'examples', process.platform === 'win32' ? `${name}.exe` : name);
    const since = Math.max(inputs, newest(join(dir, 'examples')));
    if (force || examples.some((name) => !upToDate(exe(name), since))) {
      run('cargo', ['build', '--release', ...examples.flatMap((name) => ['--example', name])]);
    }
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === resolve(process.argv[1])) {
  const argv = process.argv.slice(2);
  const ti = argv.indexOf('--target');
  try {
    build({
      force: argv.includes('--force'),
      client: argv.includes('--client'),
      allTargets: argv.includes('--all-targets'),
      target: ti >= 0 ? argv[ti + 1] : null,
    });
  } catch (e) {
    console.error(`[addon] ERROR: ${e.message}`);
    process.exit(1);
  }
}
