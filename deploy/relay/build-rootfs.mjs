#!/usr/bin/env node
// The relay image's contents (deploy/relay/image.json) without a container
// engine: a Debian root filesystem with node, tini and the packed relay
// installed where the Dockerfile puts them, for tests to run the relay from.
//
//   node deploy/relay/build-rootfs.mjs --out DIR       the root filesystem (root; mmdebstrap from Debian apt)
//   node deploy/relay/build-rootfs.mjs --context DIR   the Docker build context (Dockerfile + tarballs/)
//
// The Debian part (mmdebstrap of image.json's suite, variant and runtime
// packages, plus the user) is slow (~1 min) and cached under
// ~/.cache/ricochet/relay-rootfs/<hash of those inputs>; the relay part is
// packed from this working tree (npm test builds it first) and installed
// fresh on every build, with image.json's npm command.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, renameSync, rmSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { hostAddonPackage, pack } from '../../packaging/lib.mjs';

export const HERE = dirname(fileURLToPath(import.meta.url));
export const ROOT = resolve(HERE, '..', '..');
export const IMAGE = JSON.parse(readFileSync(join(HERE, 'image.json'), 'utf8'));

const cacheRoot = () => process.env.RICOCHET_CACHE || join(homedir(), '.cache', 'ricochet');

function sh(cmd, args, opts = {}) {
  const r = spawnSync(cmd, args, { stdio: ['ignore', 'inherit', 'inherit'], ...opts });
  if (r.error) throw new Error(`${cmd}: ${r.error.message}`);
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} failed (${r.signal ?? `exit ${r.status}`})`);
}

/**
 * npm pack of @ricochet/sdk, @ricochet/relay and this platform's addon
 * package into dest, as the packaging suite packs them (--ignore-scripts:
 * what the last build left). Returns the tarball paths.
 */
export async function packRelay(dest) {
  mkdirSync(dest, { recursive: true });
  const addonDir = join(ROOT, 'relay', 'npm', hostAddonPackage().replace('@ricochet/relay-', ''));
  if (!existsSync(join(ROOT, 'relay', 'dist', 'cli.js'))) throw new Error('relay/dist is missing: build the relay first (node relay/scripts/build.mjs)');
  if (!readdirSync(addonDir).some((f) => f.endsWith('.node'))) throw new Error(`${addonDir} has no prebuilt addon: node relay/native/build.mjs`);
  return [await pack(join(ROOT, 'sdk'), dest), await pack(join(ROOT, 'relay'), dest), await pack(addonDir, dest)];
}

/** The cache key of the Debian part: everything mmdebstrap is told. */
export function baseKey() {
  const inputs = { debian: IMAGE.debian, variant: IMAGE.variant, runtimePackages: IMAGE.runtimePackages, addUser: IMAGE.addUser, arch: process.arch };
  return createHash('sha256').update(JSON.stringify(inputs)).digest('hex').slice(0, 16);
}

/**
 * The Debian part of the image, built once per key: minbase (what the
 * debian:*-slim images are made from), the runtime packages without
 * recommends, the user, no apt lists. Returns its directory (read-only use).
 */
export function baseRootfs({ refresh = false } = {}) {
  const dir = join(cacheRoot(), 'relay-rootfs', `${IMAGE.debian}-${baseKey()}`);
  if (existsSync(join(dir, 'usr', 'bin', 'node')) && !refresh) return dir;
  if (process.getuid?.() !== 0) throw new Error('building the root filesystem needs root (mmdebstrap in root mode creates device nodes and owners)');
  if (!spawnSync('mmdebstrap', ['--version']).stdout) throw new Error('mmdebstrap is missing: apt-get install -y mmdebstrap');
  const tmp = `${dir}.tmp-${process.pid}`;
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(dirname(dir), { recursive: true });
  console.log(`[rootfs] mmdebstrap ${IMAGE.debian} (${IMAGE.variant} + ${IMAGE.runtimePackages.join(', ')}) into ${dir} (one-time, ~1 min)`);
  sh('mmdebstrap', [
    '--quiet',
    `--variant=${IMAGE.variant}`,
    `--include=${IMAGE.runtimePackages.join(',')}`,
    '--aptopt=APT::Install-Recommends "false"',
    `--customize-hook=chroot "$1" sh -c '${IMAGE.addUser}'`,
    '--customize-hook=rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*.bin',
    IMAGE.debian,
    tmp,
  ]);
  rmSync(dir, { recursive: true, force: true });
  renameSync(tmp, dir);
  return dir;
}

/**
 * The whole root filesystem at out: a copy of the cached Debian part, then
 * the packed relay installed into image.json's prefix with its npm command.
 */
export async function buildRootfs(out, { refresh = false } = {}) {
  const base = baseRootfs({ refresh });
  rmSync(out, { recursive: true, force: true });
  mkdirSync(dirname(out), { recursive: true });
  // cp -a keeps owners, modes and device nodes (fs.cpSync does not make device nodes).
  sh('cp', ['-a', base, out]);
  const work = mkdtempSync(join(tmpdir(), 'ricochet-relay-pack-'));
  try {
    const tarballs = await packRelay(work);
    const prefix = join(out, IMAGE.prefix);
    mkdirSync(prefix, { recursive: true });
    const [npm, ...args] = IMAGE.npmInstall;
    sh(npm, [...args, ...tarballs], { cwd: prefix });
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  return out;
}

/** The Docker build context: the Dockerfile and tarballs/ (see the Dockerfile's header). */
export async function buildContext(dir) {
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  cpSync(join(HERE, 'Dockerfile'), join(dir, 'Dockerfile'));
  await packRelay(join(dir, 'tarballs'));
  return dir;
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  const [flag, dir] = process.argv.slice(2);
  const jobs = { '--out': buildRootfs, '--context': buildContext };
  if (!jobs[flag] || !dir) {
    console.error('usage: build-rootfs.mjs --out DIR | --context DIR');
    process.exit(2);
  }
  jobs[flag](resolve(dir)).then(
    (d) => console.log(`[rootfs] ${d}`),
    (e) => {
      console.error(`[rootfs] ERROR: ${e.message}`);
      process.exit(1);
    },
  );
}
