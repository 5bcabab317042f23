#!/usr/bin/env node
// `npm test`: setup, build, then every test suite, in order, streaming their
// output. Stops at the first failing step with a non-zero exit code. Ends
// with one "N passed, N failed, N skipped" line over all suites.

import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statfsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { buildWasm } from './build-wasm.mjs';
import { lint, tsProjects } from './lint.mjs';
import { ROOT, setup } from './setup.mjs';
import { ensureDeployTools } from '../deploy/tools.mjs';

const totals = { passed: 0, failed: 0, skipped: 0, flaky: 0 };
const timings = [];

/**
 * Runs a command with stdio inherited, except stdout which is teed so
 * `onLine` can see it. Rejects on non-zero exit.
 */
function exec(cmd, args, { cwd = ROOT, onLine, env } = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd, env: env && { ...process.env, ...env }, stdio: ['ignore', onLine ? 'pipe' : 'inherit', 'inherit'] });
    if (onLine) {
      let buf = '';
      child.stdout.on('data', (chunk) => {
        process.stdout.write(chunk);
        buf += chunk;
        const lines = buf.split('\n');
        buf = lines.pop();
        lines.forEach(onLine);
      });
      child.stdout.on('end', () => buf && onLine(buf));
    }
    child.on('error', (e) => reject(new Error(`${cmd}: ${e.message}`)));
    child.on('close', (code, signal) =>
      code === 0 ? resolve() : reject(new Error(`${cmd} ${args.join(' ')} failed (${signal ?? `exit ${code}`})`)),
    );
  });
}

/** Free space on the repository's disk, in GB (a CI machine's disk has run full: each step says what it took). */
function freeGB() {
  const { bavail, bsize } = statfsSync(ROOT);
  return (bavail * bsize) / 1e9;
}

async function step(name, fn) {
  console.log(`\n=== ${name}`);
  const t0 = performance.now();
  const free0 = freeGB();
  try {
    await fn();
  } finally {
    const free = freeGB();
    timings.push(`${name} ${((performance.now() - t0) / 1000).toFixed(1)} s, ${(free0 - free).toFixed(2)} GB (${free.toFixed(1)} GB free)`);
  }
}

async function main() {
  await step('setup', () => setup());
  // scripts/lint.mjs: every crate in the repository; unwrap_used in the core's and native's library code; strict tsconfigs.
  await step('lint: cargo fmt --check, cargo clippy --no-deps --all-targets -D warnings (every crate), strict tsconfigs', () => lint());
  await step('build wasm', () => buildWasm());
  await step('build sdk', () => exec(process.execPath, [join(ROOT, 'sdk', 'scripts', 'build.mjs')]));
  await step('build game layer', () => exec(process.execPath, [join(ROOT, 'game', 'scripts', 'build.mjs')]));

  await step('cargo test', () =>
    exec('cargo', ['test', '--workspace', '--manifest-path', join(ROOT, 'wasm', 'Cargo.toml')], { onLine: countCargoTests }),
  );
  // Scenario S4 on virtual time (wasm/sim/tests/soak.rs): the soak's traffic between the core's client and server over
  // the simulator's lossy links, every message checked, memory judged flat; 8 h in about a minute, hence release mode (its checker and replay tests ran in `cargo test`).
  await step('soak S4 on virtual time: 8 h through the simulator (cargo test --release)', () =>
    exec('cargo', ['test', '--release', '-p', 'ricochet-sim', '--test', 'soak', '--manifest-path', join(ROOT, 'wasm', 'Cargo.toml'), '--', '--nocapture', 's4_soak'], {
      onLine: countCargoTests,
      env: { RICOCHET_SIM_SOAK_HOURS: process.env.RICOCHET_SIM_SOAK_HOURS ?? '8' },
    }),
  );

  await step('sdk tests (vitest)', () => vitestIn('sdk'));
  await step('game layer tests (vitest)', () => vitestIn('game'));
  await step('build relay', () => buildRelay());
  await step('type-check every TypeScript project, strict: sdk (tests too), relay, game, e2e, arcade (tsc)', () => typecheck(tsProjects()));
  // TSDoc and rustdoc with warnings as errors: every exported type is documented and every link resolves.
  await step('API reference (typedoc, rustdoc)', () => exec(process.execPath, [join(ROOT, 'scripts', 'docs.mjs'), '--check']));
  await step('relay tests (vitest)', () => vitestIn('relay'));
  // The addon's QUIC stack patch (relay/native/vendor/quinn-proto/PATCH.md), sans-IO and with quinn-proto's debug
  // assertions on; then the addon driven by real clients.
  await step('webtransport addon tests (cargo test, node --test)', async () => {
    await exec('cargo', ['test', '--test', 'ack_bundling', '--manifest-path', join(ROOT, 'relay', 'native', 'Cargo.toml')], { onLine: countCargoTests });
    await exec(process.execPath, ['--test', join(ROOT, 'relay', 'native', 'test')], {
      onLine: countNodeTests,
    });
  });
  await step('benchmark statistics and the S3 loop in browsers (node --test)', () =>
    exec(process.execPath, ['--test', ...['s1-stats', 'latency-stats', 'chromium-netlog', 's3-browser'].map((t) => join(ROOT, 'bench', `${t}.test.mjs`))], {
      onLine: countNodeTests,
    }),
  );
  await step('build native echo server', () =>
    exec('cargo', ['build', '--release', '-p', 'ricochet-native', '--example', 'echo_server', '--manifest-path', join(ROOT, 'wasm', 'Cargo.toml')]),
  );
  await step('arcade: codec and game tests (cargo test)', () =>
    exec('cargo', ['test', '--manifest-path', join(ROOT, 'demos', 'arcade', 'server', 'Cargo.toml')], { onLine: countCargoTests }),
  );
  await step('arcade: codec and client tests (vitest)', () => vitestIn(join('demos', 'arcade')));
  // The browser tests play the arcade: its game server and page bundle.
  await step('build arcade (game server, page bundle)', () => exec(process.execPath, [join(ROOT, 'demos', 'arcade', 'scripts', 'build.mjs')]));
  // The relay image's root filesystem run as a container would be, the Helm chart against the Kubernetes schemas, the Agones example (deploy/).
  await step('deploy: relay image rootfs, Helm chart, Agones example (node --test; root)', async () => {
    ensureDeployTools(); // pinned helm, kubernetes-validate, mmdebstrap: once, cached (~4 min for helm)
    await exec(process.execPath, ['--test', join(ROOT, 'deploy')], { onLine: countNodeTests });
  });
  await step('impaired-link emulator tests (TUN + network namespaces)', () =>
    exec(process.execPath, [join(ROOT, 'netem', 'run-tests.mjs')], {
      onLine: (line) => {
        const m = line.match(/^(\d+) passed, (\d+) failed(?:, (\d+) skipped)?$/);
        if (m) {
          totals.passed += +m[1];
          totals.failed += +m[2];
          totals.skipped += +(m[3] ?? 0);
        }
      },
    }),
  );
  // Four projects: chromium-loopback, firefox-loopback, chromium-netem, firefox-netem (e2e/playwright.config.ts).
  await step('browser tests (playwright, chromium and firefox: loopback, and across the emulated link)', () => playwright());
  // Three relay hosts (network namespaces) behind HAProxy and nftables DNAT: a relay killed, a rolling restart, the game server restarting (e2e/fleet/).
  await step('relay fleet behind load balancers (playwright, chromium and node bots; root)', () => playwright(['-c', 'playwright.fleet.config.ts']));
  // WebKitGTK's MiniBrowser on Xvfb through WebKitWebDriver (e2e/webkit.ts), Playwright's runner only: WebSocket, fallback, resume.
  await step('browser tests in webkitgtk (MiniBrowser over WebKitWebDriver, on Xvfb)', () => playwright(['-c', 'playwright.webkit.config.ts']));
  // npm pack → install into fresh Vite / webpack / esbuild / Node / tsc consumers → run in Chromium against the relay CLI from its tarball;
  // and docs/quickstart.md run as written (packaging/quickstart.test.mjs: its files, its commands, two Chromium pages).
  await step('packaging: tarballs installed into fixture apps and the quick start, built and run in chromium (node --test)', () =>
    exec(process.execPath, ['--test', join(ROOT, 'packaging')], { onLine: countNodeTests }),
  );
  // Scenario S4, bounded: its checks (nothing lost or misordered, memory flat) count as tests.
  await step('soak S4, 2 minutes each in chromium and firefox (WebTransport and WebSocket, relay impairment)', async () => {
    await exec(process.execPath, ['--test', join(ROOT, 'bench', 'soak')], { onLine: countNodeTests });
    for (const browser of ['chromium', 'firefox']) {
      await exec(process.execPath, [join(ROOT, 'bench', 'soak', 'soak.mjs'), '--minutes', process.env.RICOCHET_SOAK_MINUTES ?? '2', '--browser', browser], {
        onLine: (line) => {
          const m = line.match(/^(\d+) passed, (\d+) failed$/);
          if (m) {
            totals.passed += +m[1];
            totals.failed += +m[2];
          }
        },
      });
    }
  });
}

/** Adds a `node --test` summary line's count to the totals. */
function countNodeTests(line) {
  const m = line.match(/^# (pass|fail|skipped) (\d+)/);
  if (m) totals[m[1] === 'pass' ? 'passed' : m[1] === 'fail' ? 'failed' : 'skipped'] += +m[2];
}

/** Adds a `cargo test` summary line's counts to the totals. */
function countCargoTests(line) {
  const m = line.match(/^test result: \w+\. (\d+) passed; (\d+) failed; (\d+) ignored/);
  if (m) {
    totals.passed += +m[1];
    totals.failed += +m[2];
    totals.skipped += +m[3];
  }
}

/** The relay's WebTransport addon (Rust) and its TypeScript bundle. */
export async function buildRelay() {
  // --client: the relay's hostile-input suite drives WebTransport with the addon's test client.
  await exec(process.execPath, [join(ROOT, 'relay', 'native', 'build.mjs'), '--client']);
  await exec(process.execPath, [join(ROOT, 'relay', 'scripts', 'build.mjs')]);
}

async function playwright(args = []) {
  const e2e = join(ROOT, 'e2e');
  const require = createRequire(join(e2e, 'package.json'));
  const cli = join(dirname(require.resolve('@playwright/test/package.json')), 'cli.js');
  await exec(process.execPath, [cli, 'test', ...args], {
    cwd: e2e,
    onLine: (line) => {
      const m = line.match(/^\s*(\d+) (passed|failed|skipped|flaky)\b/);
      if (!m) return;
      totals[m[2]] += +m[1];
      if (m[2] === 'flaky') totals.passed += +m[1]; // passed on its retry: counted, and named in the total
    },
  });
}

/** `tsc --noEmit` for each workspace (Vitest and Playwright transpile without checking types). */
async function typecheck(workspaces) {
  const require = createRequire(join(ROOT, 'relay', 'package.json'));
  const tsc = join(dirname(require.resolve('typescript/package.json')), 'bin', 'tsc');
  for (const w of workspaces) await exec(process.execPath, [tsc, '--noEmit', '-p', join(ROOT, w)]);
}

/** Runs a workspace's Vitest suite and adds its counts to the totals. */
async function vitestIn(workspace) {
  const cwd = join(ROOT, workspace);
  const require = createRequire(join(cwd, 'package.json'));
  const pkgPath = require.resolve('vitest/package.json');
  const bin = JSON.parse(readFileSync(pkgPath, 'utf8')).bin;
  const vitest = join(dirname(pkgPath), typeof bin === 'string' ? bin : bin.vitest);
  const dir = mkdtempSync(join(tmpdir(), 'ricochet-vitest-'));
  const report = join(dir, 'report.json');
  try {
    await exec(process.execPath, [vitest, 'run', '--reporter=default', '--reporter=json', `--outputFile.json=${report}`], { cwd });
  } finally {
    try {
      const r = JSON.parse(readFileSync(report, 'utf8'));
      totals.passed += r.numPassedTests;
      totals.failed += r.numFailedTests;
      totals.skipped += r.numPendingTests + r.numTodoTests;
    } catch {
      // no report: vitest failed before running tests
    }
    rmSync(dir, { recursive: true, force: true });
  }
}

main().then(
  () => {
    console.log(`\n[test] ${timings.join(', ')}`);
    console.log(`total: ${totals.passed} passed, ${totals.failed} failed, ${totals.skipped} skipped (${totals.flaky} passed on a retry)`);
  },
  (e) => {
    console.error(`\n[test] FAILED: ${e.message}`);
    if (timings.length) console.error(`[test] ${timings.join(', ')}`);
    process.exit(1);
  },
);
