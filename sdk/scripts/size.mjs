#!/usr/bin/env node
// Size of the smallest connecting app (test/fixtures/minimal-app), as a
// consumer gets it: `npm pack` the SDK, install the tarball in a temp dir
// outside the repo, build with Vite for production, and sum the gzip -9
// sizes of every emitted .js and .wasm. Variants: the default entry, and
// slim (`await init()`). Prints a table; `--json` prints JSON instead.
// `--peers` also builds the same app with socket.io-client and geckos.io's
// client (installed from the registry at the versions below), the same way.
//
//   node sdk/scripts/size.mjs [--json] [--keep] [--peers]
// Exported: measure() -> [{ entry, files: [{ file, raw, gzip }], raw, gzip, wasmGzip }],
//           measurePeers() -> the same rows, one per peer library

import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { gzipSync } from 'node:zlib';

const SDK = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const FIXTURE = join(SDK, 'test', 'fixtures', 'minimal-app');
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';

const VARIANTS = {
  default: (src) => src,
  slim: (src) =>
    src.replace("import { Connection, openTransport } from '@ricochet/sdk';", "import { Connection, init, openTransport } from '@ricochet/sdk/slim';\nawait init();"),
};

function walk(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? walk(join(dir, e.name)) : [join(dir, e.name)]));
}

/** Packs and installs the SDK (dist must be built), then builds each variant. */
export async function measure({ keep = false } = {}) {
  const work = mkdtempSync(join(tmpdir(), 'ricochet-size-'));
  try {
    const tgz = execFileSync(npm, ['pack', '--ignore-scripts', '--silent', '--pack-destination', work], { cwd: SDK, encoding: 'utf8' }).trim().split('\n').pop();
    const app = join(work, 'app');
    mkdirSync(app);
    writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'minimal-app', private: true, type: 'module' }));
    execFileSync(npm, ['install', '--silent', '--no-audit', '--no-fund', '--offline', join(work, tgz)], { cwd: app, stdio: 'inherit' });
    // Vite from the repo (a devDependency here); the app resolves the SDK from its own node_modules.
    const vite = await import(pathToFileURL(createRequire(join(SDK, 'package.json')).resolve('vite')).href);
    const rows = [];
    for (const [entry, transform] of Object.entries(VARIANTS)) {
      copyFileSync(join(FIXTURE, 'index.html'), join(app, 'index.html'));
      writeFileSync(join(app, 'main.js'), transform(readFileSync(join(FIXTURE, 'main.js'), 'utf8')));
      rows.push({ entry, ...(await build(vite, app, join(work, `dist-${entry}`))) });
    }
    return rows;
  } finally {
    if (keep) console.error(`[size] kept ${work}`);
    else rmSync(work, { recursive: true, force: true });
  }
}

/** The minimal app with each peer library: connect, then send one message. */
const PEERS = {
  'socket.io-client@4.8.4': "import { io } from 'socket.io-client';\nconst s = io('wss://relay.example:4433');\ns.on('connect', () => s.emit('chat', new TextEncoder().encode('hello')));\n",
  '@geckos.io/client@3.1.0':
    "import geckos from '@geckos.io/client';\nconst ch = geckos({ url: 'https://relay.example', port: 4433 });\nch.onConnect(() => ch.emit('chat', 'hello'));\n",
};

/** Builds `files` (name -> source) as an app with Vite; rows as measure() gives them. */
async function build(vite, app, outDir) {
  await vite.build({ root: app, configFile: false, logLevel: 'warn', build: { outDir, emptyOutDir: true } });
  const files = walk(outDir)
    .filter((f) => /\.(m?js|wasm)$/.test(f))
    .map((f) => {
      const bytes = readFileSync(f);
      return { file: f.slice(outDir.length + 1), raw: bytes.length, gzip: gzipSync(bytes, { level: 9 }).length };
    });
  const sum = (k, pred = () => true) => files.filter(pred).reduce((n, f) => n + f[k], 0);
  return { files, raw: sum('raw'), gzip: sum('gzip'), wasmGzip: sum('gzip', (f) => f.file.endsWith('.wasm')) };
}

/** The same minimal app with each of PEERS, for comparison (needs the npm registry). */
export async function measurePeers({ keep = false } = {}) {
  const work = mkdtempSync(join(tmpdir(), 'ricochet-size-peers-'));
  try {
    const vite = await import(pathToFileURL(createRequire(join(SDK, 'package.json')).resolve('vite')).href);
    const rows = [];
    for (const [pkg, main] of Object.entries(PEERS)) {
      const app = join(work, pkg.replace(/[@/]/g, '_'));
      mkdirSync(app);
      writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'minimal-app', private: true, type: 'module' }));
      execFileSync(npm, ['install', '--silent', '--no-audit', '--no-fund', pkg], { cwd: app, stdio: 'inherit' });
      copyFileSync(join(FIXTURE, 'index.html'), join(app, 'index.html'));
      writeFileSync(join(app, 'main.js'), main);
      rows.push({ entry: pkg, ...(await build(vite, app, join(app, 'dist'))) });
    }
    return rows;
  } finally {
    if (keep) console.error(`[size] kept ${work}`);
    else rmSync(work, { recursive: true, force: true });
  }
}

const kb = (n) => `${(n / 1024).toFixed(1)} KiB`;

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  const keep = process.argv.includes('--keep');
  const rows = [...(await measure({ keep })), ...(process.argv.includes('--peers') ? await measurePeers({ keep }) : [])];
  if (process.argv.includes('--json')) {
    console.log(JSON.stringify(rows, null, 2));
  } else {
    console.log('| entry | JS gzip | wasm gzip | total gzip | total raw |');
    console.log('|---|---|---|---|---|');
    for (const r of rows) console.log(`| ${r.entry} | ${kb(r.gzip - r.wasmGzip)} | ${kb(r.wasmGzip)} | ${kb(r.gzip)} | ${kb(r.raw)} |`);
    for (const r of rows) for (const f of r.files) console.log(`  ${r.entry}: ${f.file} ${kb(f.raw)} raw, ${kb(f.gzip)} gzip`);
  }
}
