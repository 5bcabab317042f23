// Packaging: the packages as users get them. `npm pack` @ricochet/sdk,
// @ricochet/relay, @ricochet/game (and the host's prebuilt relay addon package,
// relay/npm/<platform>, when it exists), install the tarballs (never
// workspace links) with the build tools into ONE temporary consumer directory
// outside the repository, then:
//   - check the tarballs' contents (printed with their sizes);
//   - build the SDK's smallest connecting app (sdk/test/fixtures/minimal-app)
//     with Vite and hold its gzip -9 size to size-budget.json;
//   - build the echo app (apps/echo: the same steps made runnable against a
//     development relay, the echo shown on the page) with Vite, webpack and
//     esbuild;
//   - type-check every exported subpath with tsc (bundler and node16
//     resolution, strict, skipLibCheck false);
//   - run Node ESM and CJS consumers of every exported subpath against the
//     real stack, and the three built apps in Chromium over WebTransport and
//     over WebSocket: the native echo server plus the relay started from the
//     installed tarball's bin, all with no Rust toolchain on PATH.
//
// Packs with --ignore-scripts: it tests what the build left, so build first.
// `npm test` runs it after the browser tests, when all is built. Run alone:
//   npm run build && node relay/native/build.mjs && node relay/scripts/build.mjs
//   cargo build --release -p ricochet-native --example echo_server --manifest-path wasm/Cargo.toml
//   node --test packaging/
// Needs the npm registry (or a warm npm cache) for the build tools; about
// 25 s with a warm cache. RICOCHET_PACKAGING_KEEP=1 keeps the consumer
// directory and prints its path.
import assert from 'node:assert/strict';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import {
  HERE,
  ROOT,
  consumerEnv,
  exportedSubpaths,
  gzipBytes,
  hostAddonPackage,
  importOnly,
  launchChromium,
  listTarball,
  pack,
  run,
  runPage,
  startEcho,
  startRelayCli,
  staticServer,
  tarballFile,
  toolSpecs,
  which,
} from './lib.mjs';

const env = consumerEnv();
const KEEP = process.env.RICOCHET_PACKAGING_KEEP === '1';
const PACKAGES = ['@ricochet/sdk', '@ricochet/relay', '@ricochet/game'];
const APPS = ['vite', 'webpack', 'esbuild'];
const BUDGET_FILE = join(HERE, 'size-budget.json');
// The size budget's app: the SDK's own smallest connecting app (also measured by sdk/scripts/size.mjs).
const SIZE_APP = join(ROOT, 'sdk', 'test', 'fixtures', 'minimal-app');
const ADDON_PKG = hostAddonPackage();
const ADDON_DIR = join(ROOT, 'relay', 'npm', ADDON_PKG.replace('@ricochet/relay-', ''));
const kb = (n) => `${(n / 1024).toFixed(1)} KiB`;

let work; // mkdtemp: tarballs and the consumer directory
let consumer;
const tarballs = {}; // sdk, relay, game, addon (absent until relay/npm/<platform> exists)
const listings = {};
const cleanups = [];

/** Memoizes an async step so tests that need it share one run (and its failure). */
function once(fn) {
  let p;
  return () => (p ??= fn());
}

before(
  async () => {
    work = mkdtempSync(join(tmpdir(), 'ricochet-packaging-'));
    consumer = join(work, 'consumer');
    mkdirSync(consumer);
    tarballs.sdk = await pack(join(ROOT, 'sdk'), work);
    tarballs.relay = await pack(join(ROOT, 'relay'), work);
    tarballs.game = await pack(join(ROOT, 'game'), work);
    if (existsSync(ADDON_DIR)) tarballs.addon = await pack(ADDON_DIR, work);
    for (const [k, tgz] of Object.entries(tarballs)) {
      if (!tgz) continue;
      listings[k] = await listTarball(tgz);
      const total = listings[k].reduce((n, f) => n + f.size, 0);
      console.log(`${basename(tgz)}: ${kb(readFileSync(tgz).length)} packed, ${kb(total)} unpacked, ${listings[k].length} files`);
      for (const f of listings[k]) console.log(`  ${String(f.size).padStart(9)}  ${f.path}`);
    }

    writeFileSync(join(consumer, 'package.json'), JSON.stringify({ name: 'packaging-consumer', version: '0.0.0', private: true }, null, 2));
    const specs = [...Object.values(tarballs).filter(Boolean), ...toolSpecs()];
    const t0 = performance.now();
    await run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', ...specs], { cwd: consumer, env, timeoutMs: 600_000 });
    const shown = specs.map((s) => (s.endsWith('.tgz') ? basename(s) : s)).join(' ');
    console.log(`npm install of ${shown}: ${((performance.now() - t0) / 1000).toFixed(1)} s`);

    const app = join(HERE, 'apps');
    for (const name of APPS) {
      const dir = join(consumer, name);
      mkdirSync(dir);
      for (const f of ['index.html', 'main.js']) cpSync(join(app, 'echo', f), join(dir, f));
    }
    cpSync(join(app, 'bundlers', 'vite.config.mjs'), join(consumer, 'vite', 'vite.config.mjs'));
    mkdirSync(join(consumer, 'size'));
    for (const f of ['index.html', 'main.js']) cpSync(join(SIZE_APP, f), join(consumer, 'size', f));
    cpSync(join(app, 'bundlers', 'vite.config.mjs'), join(consumer, 'size', 'vite.config.mjs'));
    cpSync(join(app, 'bundlers', 'webpack.build.cjs'), join(consumer, 'webpack', 'build.cjs'));
    cpSync(join(app, 'bundlers', 'esbuild.build.mjs'), join(consumer, 'esbuild', 'build.mjs'));
    cpSync(join(app, 'node', 'esm.mjs'), join(consumer, 'esm.mjs'));
    cpSync(join(app, 'node', 'cjs.cjs'), join(consumer, 'cjs.cjs'));
  },
  { timeout: 900_000 },
);

after(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => {});
  if (!work) return;
  if (KEEP) console.log(`consumer directory kept: ${consumer}`);
  else rmSync(work, { recursive: true, force: true });
});

const subpaths = () => PACKAGES.flatMap((name) => exportedSubpaths(consumer, name));
const isCode = (key) => !/\.(json|wasm)$/.test(key);

test("the consumers' PATH has no Rust toolchain (no cargo, rustc or rustup)", () => {
  for (const cmd of ['cargo', 'rustc', 'rustup']) assert.equal(which(cmd, env), null, `${cmd} found on PATH ${env.PATH}`);
  assert.ok(which('npm', env), 'npm must stay on PATH');
});

describe('tarball contents', () => {
  const paths = (k) => listings[k].map((f) => f.path);
  const assertNoSources = (k) => {
    const bad = paths(k).filter((p) => /^(src|test|tests|__tests__)\//.test(p) || /\.(test|spec)\.[cm]?[jt]s$/.test(p) || (/\.[cm]?ts$/.test(p) && !/\.d\.[cm]?ts$/.test(p)));
    assert.deepEqual(bad, [], `${k} tarball ships sources or tests`);
  };
  const assertBasics = (k) => {
    const missing = ['README.md', 'LICENSE', 'package.json'].filter((f) => !paths(k).includes(f));
    assert.deepEqual(missing, [], `${k} tarball lacks ${missing.join(', ')}`);
  };
  const assertNoEmbeddedSources = async (k) => {
    const embedding = [];
    for (const p of paths(k).filter((p) => p.endsWith('.map'))) {
      const map = JSON.parse(await tarballFile(tarballs[k], p));
      if ((map.sourcesContent ?? []).some((s) => s != null)) embedding.push(p);
    }
    assert.deepEqual(embedding, [], `${k} tarball ships source maps with embedded sources (sourcesContent)`);
  };

  test('the relay tarball ships dist/cli.js and native/index.js', () => {
    for (const f of ['dist/cli.js', 'dist/index.js', 'native/index.js']) assert.ok(paths('relay').includes(f), `relay tarball lacks ${f}`);
  });
  test('the relay tarball ships no sources, tests or source maps with embedded sources', async () => {
    assertNoSources('relay');
    await assertNoEmbeddedSources('relay');
  });
  test('the relay tarball ships README.md, LICENSE and package.json', () => assertBasics('relay'));
  test('the sdk tarball ships dist/ with every entry and the wasm, valid', async () => {
    for (const f of ['dist/index.js', 'dist/index.cjs', 'dist/index.d.ts', 'dist/index.d.cts', 'dist/slim.js', 'dist/slim.d.ts', 'dist/ricochet_wasm.wasm']) {
      assert.ok(paths('sdk').includes(f), `sdk tarball lacks ${f}`);
    }
    assert.ok(WebAssembly.validate(readFileSync(join(consumer, 'node_modules', '@ricochet', 'sdk', 'dist', 'ricochet_wasm.wasm'))));
  });
  test('the sdk tarball ships no sources, tests or source maps with embedded sources', async () => {
    assertNoSources('sdk');
    await assertNoEmbeddedSources('sdk');
  });
  test('the sdk tarball ships README.md, LICENSE and package.json', () => assertBasics('sdk'));
  test('the game tarball ships its ESM modules, the CommonJS bundle and their types; no sources, tests or dependencies', async () => {
    for (const f of ['dist/index.js', 'dist/index.cjs', 'dist/index.d.ts', 'dist/index.d.cts', 'dist/schema.js', 'dist/schema.d.ts']) {
      assert.ok(paths('game').includes(f), `game tarball lacks ${f}`);
    }
    assertNoSources('game');
    await assertNoEmbeddedSources('game');
    assertBasics('game');
    const pkg = JSON.parse(await tarballFile(tarballs.game, 'package.json'));
    assert.deepEqual(Object.keys(pkg.dependencies ?? {}), [], 'the game layer depends on nothing (the transport included)');
    assert.equal(pkg.sideEffects, false);
  });
  test(`the host's relay addon package (${ADDON_PKG}) is packed with its .node and installed from the tarball`, () => {
    assert.ok(existsSync(ADDON_DIR), `${ADDON_DIR} does not exist yet: the relay's WebTransport addon has no platform package to pack`);
    const nodes = paths('addon').filter((p) => p.endsWith('.node'));
    assert.equal(nodes.length, 1, `${basename(tarballs.addon)} should hold one .node file, holds ${JSON.stringify(paths('addon'))}`);
    // The relay's optionalDependencies name every platform's package, none on the
    // registry yet: npm skips those that 404 (and the other platforms' ones).
    const installed = readdirSync(join(consumer, 'node_modules', '@ricochet')).sort();
    assert.deepEqual(installed, ['game', 'relay', ADDON_PKG.slice('@ricochet/'.length), 'sdk'].sort());
  });
});

/** Every .js and .wasm file under dir. */
function emitted(dir) {
  return readdirSync(dir, { recursive: true })
    .map(String)
    .filter((f) => /\.(js|mjs|wasm)$/.test(f))
    .map((f) => join(dir, f));
}

const vite = (dir) => run(process.execPath, [join(consumer, 'node_modules', 'vite', 'bin', 'vite.js'), 'build'], { cwd: join(consumer, dir), env });
const builds = {
  size: once(() => vite('size')),
  vite: once(() => vite('vite')),
  webpack: once(() => run(process.execPath, ['build.cjs'], { cwd: join(consumer, 'webpack'), env })),
  esbuild: once(() => run(process.execPath, ['build.mjs'], { cwd: join(consumer, 'esbuild'), env })),
};

describe('apps built by each bundler from the installed tarballs', () => {
  test('vite: the smallest connecting app (sdk/test/fixtures/minimal-app) stays within the gzip -9 size budget', async () => {
    await builds.size();
    const files = emitted(join(consumer, 'size', 'dist'));
    assert.ok(files.some((f) => f.endsWith('.wasm')), `vite emitted no .wasm: ${files.join(', ')}`);
    const bytes = gzipBytes(files);
    const { minimalAppGzipBytes: budget } = JSON.parse(readFileSync(BUDGET_FILE, 'utf8'));
    const detail = files.map((f) => `${basename(f)} ${gzipBytes([f])} B`).join(', ');
    console.log(`minimal app (vite, gzip -9 of .js + .wasm): ${bytes} B (${kb(bytes)}); budget ${budget} B; ${detail}`);
    assert.ok(bytes <= budget, `minimal app is ${bytes} B gzipped, over the ${budget} B budget in ${BUDGET_FILE} (${detail})`);
  });
  test('vite: builds the echo app for production, the wasm emitted as an asset', async () => {
    await builds.vite();
    const files = emitted(join(consumer, 'vite', 'dist'));
    assert.ok(files.some((f) => f.endsWith('.wasm')), `vite emitted no .wasm: ${files.join(', ')}`);
    console.log(`echo app (vite, gzip -9): ${gzipBytes(files)} B`);
  });
  test('webpack: builds for production, the wasm emitted as an asset', async () => {
    await builds.webpack();
    const files = emitted(join(consumer, 'webpack', 'dist'));
    assert.ok(files.some((f) => f.endsWith('.wasm')), `webpack emitted no .wasm: ${files.join(', ')}`);
    console.log(`echo app (webpack, gzip -9): ${gzipBytes(files)} B`);
  });
  test('esbuild: builds, the wasm next to the bundle (SDK plugin, or the documented copy)', async () => {
    const { stdout } = await builds.esbuild();
    console.log(`esbuild: ${stdout.trim()}`);
    assert.ok(existsSync(join(consumer, 'esbuild', 'dist', 'ricochet_wasm.wasm')) || emitted(join(consumer, 'esbuild', 'dist')).some((f) => f.endsWith('.wasm')));
    console.log(`echo app (esbuild, gzip -9): ${gzipBytes(emitted(join(consumer, 'esbuild', 'dist')))} B`);
  });
});

/** The target require() reaches in an exports entry: CommonJS or not. */
function requireReachesCjs(name, entry) {
  const { type } = JSON.parse(readFileSync(join(consumer, 'node_modules', name, 'package.json'), 'utf8'));
  const pick = (e) => {
    if (typeof e === 'string') return e;
    if (!e || Array.isArray(e)) return null;
    for (const [cond, v] of Object.entries(e)) if (['require', 'node', 'default'].includes(cond)) return pick(v);
    return null;
  };
  const target = pick(entry);
  return target !== null && (target.endsWith('.cjs') || (target.endsWith('.js') && type !== 'module'));
}

/** Subpaths for test suites: their peer (@playwright/test) is typed against the DOM, as Playwright projects are. */
const TEST_SUITE_SUBPATHS = new Set(['@ricochet/relay/playwright']);

describe('types: tsc --noEmit over every exported subpath (strict, skipLibCheck false, lib es2022 without DOM)', () => {
  const tsc = () => join(consumer, 'node_modules', 'typescript', 'bin', 'tsc');
  const base = { strict: true, skipLibCheck: false, noEmit: true, target: 'es2022', lib: ['es2022'], types: ['node'], noUnusedLocals: true };
  const imports = (list, form) =>
    list.map(({ spec }, i) => (form === 'require' ? `import m${i} = require('${spec}');` : `import * as m${i} from '${spec}';`)).join('\n') +
    `\nexport const modules = [${list.map((_, i) => `m${i}`).join(', ')}];\n`;
  const tsDir = once(() => {
    const dir = join(consumer, 'types');
    mkdirSync(dir, { recursive: true });
    return dir;
  });

  test('moduleResolution bundler: every subpath and the usage file check', async () => {
    const dir = tsDir();
    const code = subpaths().filter((s) => isCode(s.key) && !TEST_SUITE_SUBPATHS.has(s.spec));
    writeFileSync(join(dir, 'check.ts'), imports(code, 'import'));
    cpSync(join(HERE, 'apps', 'types', 'usage.ts'), join(dir, 'usage.ts'));
    writeFileSync(join(dir, 'tsconfig.bundler.json'), JSON.stringify({ compilerOptions: { ...base, module: 'esnext', moduleResolution: 'bundler' }, files: ['check.ts', 'usage.ts'] }));
    console.log(`bundler: ${code.map((s) => s.spec).join(', ')}`);
    await run(process.execPath, [tsc(), '-p', 'tsconfig.bundler.json'], { cwd: dir, env });
  });

  test('module node16: every subpath from ESM (.mts), the CommonJS ones from require (.cts)', async () => {
    const dir = tsDir();
    const code = subpaths().filter((s) => isCode(s.key) && !TEST_SUITE_SUBPATHS.has(s.spec));
    const cjs = code.filter((s) => requireReachesCjs(s.name, s.entry));
    writeFileSync(join(dir, 'check.mts'), imports(code, 'import'));
    writeFileSync(join(dir, 'check.cts'), imports(cjs, 'require'));
    cpSync(join(HERE, 'apps', 'types', 'usage.ts'), join(dir, 'usage.mts'));
    writeFileSync(join(dir, 'tsconfig.node16.json'), JSON.stringify({ compilerOptions: { ...base, module: 'node16', moduleResolution: 'node16' }, files: ['check.mts', 'check.cts', 'usage.mts'] }));
    console.log(`node16 ESM: ${code.map((s) => s.spec).join(', ')}; node16 CommonJS: ${cjs.map((s) => s.spec).join(', ')}`);
    await run(process.execPath, [tsc(), '-p', 'tsconfig.node16.json'], { cwd: dir, env });
  });

  test('test-suite subpaths (@ricochet/relay/playwright) check as a Playwright project does (lib dom)', async () => {
    const dir = tsDir();
    const suites = subpaths().filter((s) => TEST_SUITE_SUBPATHS.has(s.spec));
    assert.equal(suites.length, TEST_SUITE_SUBPATHS.size);
    writeFileSync(join(dir, 'check-suite.ts'), imports(suites, 'import'));
    writeFileSync(join(dir, 'tsconfig.suite.json'), JSON.stringify({ compilerOptions: { ...base, lib: ['es2022', 'dom'], module: 'esnext', moduleResolution: 'bundler' }, files: ['check-suite.ts'] }));
    await run(process.execPath, [tsc(), '-p', 'tsconfig.suite.json'], { cwd: dir, env });
  });
});

describe('against the native echo server and the relay CLI from the tarball, no Rust on PATH', () => {
  const stack = once(async () => {
    const echo = await startEcho(env);
    cleanups.push(echo.stop);
    const relay = await startRelayCli(consumer, env, `127.0.0.1:${echo.port}`);
    cleanups.push(relay.stop);
    return { echo, relay };
  });
  const web = once(async () => {
    const s = await staticServer(Object.fromEntries(APPS.map((a) => [a, join(consumer, a, 'dist')])));
    cleanups.push(s.close);
    return s;
  });
  const browser = once(async () => {
    const b = await launchChromium();
    cleanups.push(() => b.close());
    return b;
  });
  const nodeScript = async (file, extraEnv) => {
    const { stdout } = await run(process.execPath, [file], { cwd: consumer, env: { ...env, ...extraEnv }, timeoutMs: 60_000 });
    const line = stdout.split('\n').find((l) => l.startsWith('RESULT '));
    assert.ok(line, `${file} printed no RESULT line:\n${stdout}`);
    return JSON.parse(line.slice(7));
  };
  const assertExchanges = (r) => {
    for (const [label, x] of Object.entries(r.exchanges)) {
      assert.ok(x.ok, `${label}: ${x.error}`);
      assert.equal(x.echo, `hello over ${label}`);
    }
  };

  test('the relay CLI from the tarball serves WebTransport (its addon loads from the installed packages)', async () => {
    const { relay } = await stack();
    const warning = relay.output().split('\n').find((l) => /WebTransport is off|addon/i.test(l));
    assert.equal(relay.webTransportOff, null, `relay from the tarball serves no WebTransport (${relay.webTransportOff}): ${warning ?? relay.output()}`);
    assert.match(relay.webTransportUrl, /^https:\/\/127\.0\.0\.1:\d+\/ricochet$/);
    // Which addon the installed loader picks (by file path: native/ is not in the exports map).
    const loader = join(consumer, 'node_modules', '@ricochet', 'relay', 'native', 'index.js');
    const code = `import(${JSON.stringify(loader)}).then((m) => console.log(JSON.stringify(m.addonSource)))`;
    const source = JSON.parse((await run(process.execPath, ['-e', code], { cwd: consumer, env })).stdout);
    assert.deepEqual(source, { from: 'platform package', id: ADDON_PKG });
  });

  test('Node ESM: every exported subpath imports; echoes over UDP (default and slim entries) and WebSocket (relay/testing)', async () => {
    const { echo } = await stack();
    const r = await nodeScript('esm.mjs', { ECHO_PORT: String(echo.port) });
    assert.deepEqual(Object.keys(r.subpaths).sort(), subpaths().map((s) => s.spec).sort());
    for (const [spec, x] of Object.entries(r.subpaths)) {
      assert.ok(x.ok, `import('${spec}'): ${x.error}`);
      assert.ok(x.kind !== 'module' || x.exports > 0, `${spec} exports nothing`);
      assert.ok(x.kind !== 'wasm' || x.valid, `${spec} is no valid wasm`);
    }
    assertExchanges(r);
    assert.equal(Object.keys(r.exchanges).length, 3);
  });

  test('Node CJS: every exported subpath require()s (import-only ones refused by the exports map); echoes over WebSocket (relay CLI) and UDP', async () => {
    const { echo, relay } = await stack();
    const r = await nodeScript('cjs.cjs', { ECHO_PORT: String(echo.port), RELAY_WS_URL: relay.webSocketUrl, TOKEN: await relay.token('cjs') });
    const all = subpaths();
    assert.deepEqual(Object.keys(r.subpaths).sort(), all.map((s) => s.spec).sort());
    const esmOnly = [];
    for (const { spec, entry } of all) {
      const x = r.subpaths[spec];
      if (importOnly(entry)) {
        esmOnly.push(spec);
        assert.equal(x.code, 'ERR_PACKAGE_PATH_NOT_EXPORTED', `require('${spec}') of an import-only subpath: ${JSON.stringify(x)}`);
      } else assert.ok(x.ok, `require('${spec}'): ${x.error}`);
    }
    console.log(`import-only subpaths (require refused, as declared): ${esmOnly.join(', ') || 'none'}`);
    assertExchanges(r);
    assert.equal(Object.keys(r.exchanges).length, 2);
  });

  for (const app of APPS) {
    const open = async (force) => {
      const [{ relay }, s, b] = await Promise.all([stack(), web(), browser(), builds[app]()]);
      const q = new URLSearchParams({ relay: relay.httpUrl, token: await relay.token(`${app}-${force ?? 'auto'}`), ...(force ? { force } : {}) });
      const r = await runPage(b, `${s.url}/${app}/index.html?${q}`);
      console.log(`${app}${force ? ` (${force})` : ''}: ${JSON.stringify(r)}`);
      assert.ok(r.ok, `${app} page failed: ${r.error}; page errors: ${JSON.stringify(r.errors)}`);
      assert.equal(r.echo, 'hello from the echo app');
      return r;
    };
    test(`${app}: the built page exchanges a message with the echo server over WebTransport`, async () => {
      const r = await open();
      assert.equal(r.kind, 'webtransport', `fell back to ${r.kind}: ${r.fallbackReason}`);
    });
    test(`${app}: the built page exchanges a message with the echo server over WebSocket when forced`, async () => {
      const r = await open('websocket');
      assert.equal(r.kind, 'websocket');
    });
  }
});
