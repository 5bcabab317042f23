// The quick start (docs/quickstart.md), run as written. Its code blocks
// marked ```<lang> file=<name> are written into an empty directory outside
// the repository; then the commands of its `run.sh` block run line by line:
//   - each `npm install …` installs the packed tarballs in place of the
//     registry names (@ricochet/sdk, @ricochet/relay, plus the host's relay
//     addon package, which npm would fetch as an optional dependency) and the
//     root lock's version of any other package it names (vite);
//   - every other line runs verbatim, in one bash, with no Rust toolchain on
//     PATH: the build, the game server, the relay command.
// Two Chromium pages then open http://localhost:3000 as the page says, and
// the test checks that messages go both ways: each page is welcomed by the
// game server, sees its own and the later page's chat lines and the server's
// count of its inputs, and the game server prints what each page said.
// Then the Rust variant: server.mjs without its game half, and the commands
// of the `run-rust.sh` block (the Rust game server from this repository,
// reached as ../ricochet), the same pages and checks.
//
// As root the commands and Chromium run in a network namespace of their own,
// so the quick start's fixed ports (3000, 4000, 8080, 4433) meet nothing else
// running on the machine; otherwise those ports must be free.
//
// Run alone (after the builds listed in packaging.test.mjs):
//   node --test packaging/quickstart.test.mjs
// RICOCHET_PACKAGING_KEEP=1 keeps the directory and prints its path.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { CHROMIUM, ROOT, consumerEnv, hostAddonPackage, launchChromium, pack, run, toolSpecs } from './lib.mjs';

const DOC = join(ROOT, 'docs', 'quickstart.md');
const KEEP = process.env.RICOCHET_PACKAGING_KEEP === '1';
const ADDON_DIR = join(ROOT, 'relay', 'npm', hostAddonPackage().replace('@ricochet/relay-', ''));
const NETNS = process.getuid?.() === 0 && spawnSync('ip', ['netns', 'help'], { stdio: 'ignore' }).error === undefined ? `ricochet-qs-${process.pid}` : null;
const env = consumerEnv();

/** The doc's blocks marked file=NAME, as { NAME: text }. */
export function quickstartFiles(markdown) {
  const files = {};
  for (const m of markdown.matchAll(/^```[\w-]*[ \t]+file=(\S+)[ \t]*\n([\s\S]*?)^```[ \t]*$/gm)) {
    assert.ok(!(m[1] in files), `${m[1]} is marked twice`);
    files[m[1]] = m[2];
  }
  return files;
}

/** The shell block's command lines (comments and blank lines dropped): { installs, rest }. */
export function commands(script) {
  const lines = script.split('\n').filter((l) => l.trim() && !l.trim().startsWith('#'));
  return { installs: lines.filter((l) => /^npm install\b/.test(l)), rest: lines.filter((l) => !/^npm install\b/.test(l)) };
}

let work;
let app;
let files; // the doc's marked files
let browser;
const cleanups = [];

/** Runs `cmd args` inside the namespace (or directly without one). */
const inNs = (cmd, args) => (NETNS ? ['ip', ['netns', 'exec', NETNS, cmd, ...args]] : [cmd, args]);

/**
 * Runs command lines verbatim in one bash in the app directory (in the
 * namespace, in its own process group so it stops whole) until its output
 * matches every one of `ready`. Resolves with { output(), stop() }.
 */
async function startCommands(name, lines, runEnv, ready) {
  writeFileSync(join(app, name), `set -e\n${lines.join('\n')}\n`);
  const [cmd, args] = inNs('bash', [join(app, name)]);
  const proc = spawn(cmd, args, { cwd: app, env: runEnv, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  proc.stdout.on('data', (c) => (out += c));
  proc.stderr.on('data', (c) => (out += c));
  const kill = (sig) => {
    try {
      process.kill(-proc.pid, sig);
    } catch {
      // already gone
    }
  };
  const stack = {
    output: () => out,
    stop: () =>
      new Promise((r) => {
        if (proc.exitCode !== null || proc.signalCode !== null) return r();
        const t = setTimeout(() => kill('SIGKILL'), 5_000);
        proc.once('exit', () => {
          clearTimeout(t);
          // What the shell started in the background may outlive it a moment.
          kill('SIGKILL');
          r();
        });
        kill('SIGTERM');
      }),
  };
  cleanups.push(() => stack.stop());
  const deadline = Date.now() + 180_000;
  while (!ready.every((re) => re.test(out))) {
    if (proc.exitCode !== null) throw new Error(`${name} exited (${proc.exitCode}):\n${out}`);
    if (Date.now() > deadline) throw new Error(`${name} did not print ${ready.filter((re) => !re.test(out)).join(', ')} within 180 s:\n${out}`);
    await new Promise((r) => setTimeout(r, 200));
  }
  return stack;
}

/** Two pages at http://localhost:3000; messages both ways between them and the game server. */
async function checkPages(stack) {
  const pages = [];
  const errors = [];
  const logOf = (p) => p.evaluate(() => document.getElementById('log')?.textContent ?? '');
  for (let i = 0; i < 2; i++) {
    const page = await browser.newPage();
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto('http://localhost:3000/');
    await page.waitForFunction(() => /welcome, player-\d/.test(document.getElementById('log')?.textContent ?? ''), null, { timeout: 20_000 }).catch(async (e) => {
      throw new Error(`page ${i + 1}: ${e.message.split('\n')[0]}\npage log:\n${await logOf(page)}\nerrors: ${errors}\ncommands:\n${stack.output()}`);
    });
    pages.push(page);
  }
  // Each page hears its own chat line and the later page's (the server broadcasts them) and how
  // many of its inputs the server has.
  for (const [i, page] of pages.entries()) {
    await page
      .waitForFunction(
        (own) => {
          const log = document.getElementById('log')?.textContent ?? '';
          return log.includes(`chat: player-${own}: hello from the browser`) && /chat: player-2: hello from the browser/.test(log) && /the server has [1-9]\d* of your inputs/.test(log);
        },
        i + 1,
        { timeout: 20_000 },
      )
      .catch(async (e) => {
        throw new Error(`page ${i + 1}: ${e.message.split('\n')[0]}\npage log:\n${await logOf(page)}\ncommands:\n${stack.output()}`);
      });
  }
  const logs = await Promise.all(pages.map(logOf));
  console.log(`page 1:\n${logs[0]}\ncommands:\n${stack.output()}`);
  // The quick start promises WebTransport from a development relay, with the SDK fetching its certificate hash.
  for (const log of logs) assert.match(log, /^connected over webtransport$/m);
  for (const log of logs) assert.doesNotMatch(log, /error:|closed:/);
  // The game server heard each page, with who it is from the relay-verified token.
  assert.match(stack.output(), /player-1 joined/);
  assert.match(stack.output(), /player-1: hello from the browser/);
  assert.match(stack.output(), /player-2: hello from the browser/);
  assert.deepEqual(errors, []);
  await Promise.all(pages.map((p) => p.close()));
}

before(
  async () => {
    files = quickstartFiles(readFileSync(DOC, 'utf8'));
    assert.deepEqual(Object.keys(files).sort(), ['client.js', 'index.html', 'run-rust.sh', 'run.sh', 'server.mjs'], 'the quick start marks its files');
    work = mkdtempSync(join(tmpdir(), 'ricochet-quickstart-'));
    app = join(work, 'my-game');
    mkdirSync(app);
    for (const [name, text] of Object.entries(files)) if (!name.endsWith('.sh')) writeFileSync(join(app, name), text);

    // npm install, with the tarballs in place of the unpublished packages.
    const tgz = { '@ricochet/sdk': await pack(join(ROOT, 'sdk'), work), '@ricochet/relay': await pack(join(ROOT, 'relay'), work) };
    const addon = existsSync(ADDON_DIR) ? await pack(ADDON_DIR, work) : null;
    const locked = Object.fromEntries(toolSpecs().map((s) => [s.slice(0, s.lastIndexOf('@')), s]));
    const { installs, rest } = commands(files['run.sh']);
    assert.ok(installs.length > 0 && rest.length > 0, 'run.sh installs, then runs');
    for (const line of installs) {
      const words = line.replace(/#.*$/, '').trim().split(/\s+/).slice(2);
      const specs = words.map((w) => (w.startsWith('-') ? w : (tgz[w] ?? locked[w] ?? w)));
      if (addon && words.includes('@ricochet/relay')) specs.push(addon);
      const t0 = performance.now();
      await run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', ...specs], { cwd: app, env, timeoutMs: 600_000 });
      console.log(`${line}: ${((performance.now() - t0) / 1000).toFixed(1)} s`);
    }

    if (NETNS) {
      spawnSync('ip', ['netns', 'add', NETNS], { stdio: 'inherit' });
      cleanups.push(async () => spawnSync('ip', ['netns', 'delete', NETNS]));
      spawnSync('ip', ['netns', 'exec', NETNS, 'ip', 'link', 'set', 'lo', 'up'], { stdio: 'inherit' });
    }
    // Chromium in the same namespace, through a wrapper Playwright launches.
    let executablePath = CHROMIUM;
    if (NETNS) {
      executablePath = join(work, 'chromium-in-netns');
      writeFileSync(executablePath, `#!/bin/sh\nexec ip netns exec ${NETNS} ${CHROMIUM} "$@"\n`, { mode: 0o755 });
    }
    browser = await launchChromium(executablePath);
    cleanups.push(() => browser.close());
  },
  { timeout: 900_000 },
);

after(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => {});
  if (!work) return;
  if (KEEP) console.log(`quick start directory kept: ${app}`);
  else rmSync(work, { recursive: true, force: true });
});

test('the quick start as written: two pages and the Node game server exchange messages through the relay', { timeout: 300_000 }, async () => {
  // The rest of run.sh (build, game server, relay), with no Rust toolchain on PATH.
  const stack = await startCommands('run.sh', commands(files['run.sh']).rest, env, [/open http:\/\/localhost:3000/, /"event":"listening"/]);
  try {
    await checkPages(stack);
  } finally {
    await stack.stop();
  }
});

test('the Rust game server variant as written: the same pages through the same relay', { timeout: 600_000 }, async () => {
  // server.mjs without its game half, as the quick start says.
  const server = files['server.mjs'];
  const [from, to] = [server.indexOf('// The game:'), server.indexOf('// The web side:')];
  assert.ok(from > 0 && to > from, 'server.mjs marks its game half and its web side');
  writeFileSync(join(app, 'server.mjs'), server.slice(0, from) + server.slice(to));
  // The clone beside my-game, as the quick start says (cargo, run from inside it, sees the
  // real path: nothing is rebuilt for the link); built before the commands run in the
  // namespace, where cargo has no network.
  symlinkSync(ROOT, join(work, 'ricochet'));
  const t0 = performance.now();
  await run('cargo', ['build', '--release', '--manifest-path', join(ROOT, 'wasm', 'Cargo.toml'), '-p', 'ricochet-native', '--example', 'quickstart_server'], { timeoutMs: 900_000 });
  console.log(`cargo build --release … --example quickstart_server: ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  const lines = commands(files['run-rust.sh']).rest;
  assert.ok(lines.some((l) => /cargo run .*--example quickstart_server/.test(l)), 'run-rust.sh runs the example');
  const stack = await startCommands('run-rust.sh', lines, process.env, [/game server on udp 127\.0\.0\.1:4000/, /open http:\/\/localhost:3000/, /"event":"listening"/]);
  try {
    await checkPages(stack);
  } finally {
    await stack.stop();
  }
});
