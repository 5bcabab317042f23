#!/usr/bin/env node
// The release version lives in one place: the root package.json's "version".
// Every published package and crate follows it:
//
//   node scripts/version.mjs          check: exit 1 listing each file that differs
//   node scripts/version.mjs 0.2.0    set: the root, then every follower
//
// Followers: sdk, relay and game package.json (and the relay's caret range on the
// SDK), each per-platform addon package under relay/npm/ (and the relay's
// optionalDependencies on them, exact: they move in lockstep), the Cargo
// workspace under wasm/ (ricochet-game among its crates) and the relay's addon crate.
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { ROOT, isMain } from './setup.mjs';

const SEMVER = /^\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?$/;

/** The package.json files that carry the release version, relative to ROOT. */
export function packageFiles() {
  const platforms = join(ROOT, 'relay', 'npm');
  const platformFiles = existsSync(platforms)
    ? readdirSync(platforms, { withFileTypes: true })
        .filter((e) => e.isDirectory() && existsSync(join(platforms, e.name, 'package.json')))
        .map((e) => join('relay', 'npm', e.name, 'package.json'))
    : [];
  return [join('sdk', 'package.json'), join('relay', 'package.json'), join('game', 'package.json'), ...platformFiles];
}

const CARGO_FILES = [join('wasm', 'Cargo.toml'), join('relay', 'native', 'Cargo.toml')];

export function rootVersion() {
  return JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).version;
}

/** Rewrites (or, with `write: false`, only checks) every follower; returns the files that differed. */
export function syncVersion(version, { write }) {
  const differing = [];
  const update = (file, before, after) => {
    if (before === after) return;
    differing.push(file);
    if (write) writeFileSync(join(ROOT, file), after);
  };
  for (const file of packageFiles()) {
    const text = readFileSync(join(ROOT, file), 'utf8');
    const pkg = JSON.parse(text);
    pkg.version = version;
    if (pkg.dependencies?.['@ricochet/sdk']) pkg.dependencies['@ricochet/sdk'] = `^${version}`;
    for (const name of Object.keys(pkg.optionalDependencies ?? {})) {
      if (name.startsWith('@ricochet/')) pkg.optionalDependencies[name] = version;
    }
    update(file, text, `${JSON.stringify(pkg, null, 2)}\n`);
  }
  for (const file of CARGO_FILES) {
    const text = readFileSync(join(ROOT, file), 'utf8');
    // The first `version = "…"` is the package's (or [workspace.package]'s) own.
    update(file, text, text.replace(/^version = "[^"]*"/m, `version = "${version}"`));
  }
  return differing;
}

if (isMain(import.meta.url)) {
  const wanted = process.argv[2];
  if (wanted !== undefined) {
    if (!SEMVER.test(wanted)) {
      console.error(`[version] not a version: ${wanted}`);
      process.exit(2);
    }
    const rootFile = join(ROOT, 'package.json');
    const root = JSON.parse(readFileSync(rootFile, 'utf8'));
    root.version = wanted;
    writeFileSync(rootFile, `${JSON.stringify(root, null, 2)}\n`);
    const changed = syncVersion(wanted, { write: true });
    console.log(`[version] ${wanted}: package.json${changed.map((f) => `, ${f}`).join('')}`);
    console.log('[version] run `npm install` to refresh package-lock.json and `cargo update -w` for Cargo.lock');
  } else {
    const version = rootVersion();
    const differing = syncVersion(version, { write: false });
    if (differing.length) {
      console.error(`[version] ${version} (root package.json) differs in: ${differing.map((f) => relative('.', join(ROOT, f))).join(', ')}`);
      console.error('[version] run `node scripts/version.mjs <version>` to set it everywhere');
      process.exit(1);
    }
    console.log(`[version] ${version} everywhere`);
  }
}
