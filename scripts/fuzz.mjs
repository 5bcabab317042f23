#!/usr/bin/env node
// Bounded coverage-guided fuzzing of the protocol core (wasm/fuzz, cargo-fuzz
// + libFuzzer). Not part of `npm test`: run it by hand or on a schedule.
//
//   node scripts/fuzz.mjs [--seconds N] [--target decode|conversation|relay|all]
//                         [--sanitizer none|address] [--toolchain NAME]
//
//   --seconds N     fuzzing time per target (default 60)
//   --target T      decode, conversation, relay or all (default all); relay
//                   runs the relay's parser property tests (fast-check, in
//                   relay/test/parsers.fuzz.test.ts) for about N seconds
//   --sanitizer S   none (default) or address. The core has no `unsafe`, so
//                   AddressSanitizer finds nothing more there and costs ~6x
//                   in execs/s; address falls back to none if it cannot build.
//                   Either way debug assertions and overflow checks are on.
//   --toolchain T   rustup toolchain for the fuzz build (default: the default
//                   one; stable works, see below)
//
// Needs cargo-fuzz, installed here on first use into
// ~/.cache/ricochet/cargo-fuzz-<version> (or $RICOCHET_CACHE), ~1.5 min.
// cargo-fuzz passes `-Z` flags to rustc; on a stable toolchain they are
// unlocked with RUSTC_BOOTSTRAP=1, which this script sets for its children
// only, so no nightly toolchain is needed. The first build also compiles
// libFuzzer (C++), ~1.5 min on 2 cores; later builds take seconds.
//
// Corpora live in wasm/fuzz/corpus/<target>/ (kept between runs, gitignored),
// crash inputs in wasm/fuzz/artifacts/<target>/, full libFuzzer output in
// wasm/fuzz/logs/<target>.log. Exits 1 on a crash, a panic, a failed
// invariant, a leak, a timeout or an out-of-memory, printing the reproducer
// and the command that replays it. Environment knobs of the conversation
// target (passed through; see the header of fuzz_targets/conversation.rs):
// RICOCHET_FUZZ_STRICT=malformed,reincarnation|1 opt-in checks,
// RICOCHET_FUZZ_RECV_BOUND=loose, RICOCHET_FUZZ_TRACE=1 (replays only).
//
// Node builtins only.

import { spawn, spawnSync } from 'node:child_process';
import { createWriteStream, existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { delimiter, join, relative } from 'node:path';
import { ROOT, WASM_DIR, cacheDir, run } from './setup.mjs';

const CARGO_FUZZ_VERSION = '0.13.2';
const FUZZ_DIR = join(WASM_DIR, 'fuzz');
const TARGETS = ['decode', 'conversation', 'relay'];
/** Property-test cases per second of --seconds for the relay target (~2 000/s measured, 4 properties). */
const RELAY_RUNS_PER_SECOND = 1500;
/** libFuzzer options per target (besides time and artifact paths). */
const TARGET_FLAGS = {
  decode: ['-max_len=4096'],
  // Scripts need length to say much: let inputs grow faster than default.
  conversation: ['-max_len=8192', '-len_control=20'],
};

const log = (msg) => console.log(`[fuzz] ${msg}`);

function usage(msg) {
  if (msg) console.error(`[fuzz] ${msg}`);
  console.error('usage: node scripts/fuzz.mjs [--seconds N] [--target decode|conversation|relay|all] [--sanitizer none|address] [--toolchain NAME]');
  process.exit(2);
}

function parseArgs(argv) {
  const opts = { seconds: 60, target: 'all', sanitizer: 'none', toolchain: null };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const [key, inline] = a.includes('=') ? a.split(/=(.*)/s) : [a, undefined];
    const value = () => inline ?? argv[++i] ?? usage(`${key} needs a value`);
    switch (key) {
      case '--seconds': {
        const n = Number(value());
        if (!Number.isInteger(n) || n < 1) usage('--seconds must be a positive integer');
        opts.seconds = n;
        break;
      }
      case '--target':
        opts.target = value();
        if (opts.target !== 'all' && !TARGETS.includes(opts.target)) usage(`unknown target ${opts.target}`);
        break;
      case '--sanitizer':
        opts.sanitizer = value();
        if (!['address', 'none'].includes(opts.sanitizer)) usage('--sanitizer must be address or none');
        break;
      case '--toolchain':
        opts.toolchain = value();
        break;
      case '-h':
      case '--help':
        usage();
        break;
      default:
        usage(`unknown argument ${a}`);
    }
  }
  return opts;
}

/** Installs cargo-fuzz into the tool cache if missing; returns its bin dir. */
function ensureCargoFuzz() {
  const root = join(cacheDir(), `cargo-fuzz-${CARGO_FUZZ_VERSION}`);
  const bin = join(root, 'bin');
  if (!existsSync(join(bin, 'cargo-fuzz'))) {
    log(`installing cargo-fuzz ${CARGO_FUZZ_VERSION} into ${root} (one-time, ~1.5 min on 2 cores)`);
    run('cargo', ['install', 'cargo-fuzz', '--version', CARGO_FUZZ_VERSION, '--root', root]);
    if (!existsSync(join(bin, 'cargo-fuzz'))) throw new Error(`cargo install finished but ${bin}/cargo-fuzz is missing`);
  }
  return bin;
}

function fuzzEnv(bin, toolchain) {
  const env = { ...process.env, PATH: `${bin}${delimiter}${process.env.PATH ?? ''}`, RUSTC_BOOTSTRAP: '1' };
  if (toolchain) env.RUSTUP_TOOLCHAIN = toolchain;
  return env;
}

/** cargo fuzz flags shared by build and run. */
function buildFlags(sanitizer) {
  // Debug assertions (and so overflow checks) on: an arithmetic overflow in
  // the core is a bug even where release builds would wrap silently.
  return ['--release', '--debug-assertions', '--sanitizer', sanitizer];
}

function build(env, opts, targets) {
  let sanitizer = opts.sanitizer;
  for (;;) {
    const t0 = performance.now();
    try {
      for (const t of targets) {
        run('cargo', ['fuzz', 'build', ...buildFlags(sanitizer), t], { cwd: FUZZ_DIR, env });
      }
      log(`build ok (sanitizer ${sanitizer}, ${((performance.now() - t0) / 1000).toFixed(1)} s)`);
      return sanitizer;
    } catch (e) {
      if (sanitizer === 'none') throw e;
      console.warn(`[fuzz] WARNING: build with --sanitizer ${sanitizer} failed (${e.message}); retrying with --sanitizer none`);
      sanitizer = 'none';
    }
  }
}

// ---- seed corpus -----------------------------------------------------------
// Scripts for the conversation target (see its op table): a clean exchange,
// a lossy one and one with large fragmented messages. Written only into an
// empty corpus directory; libFuzzer grows the rest.

function conversationSeeds() {
  const advance = (v, shift = 1) => [shift & 3, v & 0xff, v >> 8];
  const send = (server, ch, cls, v) => [(server ? 0x80 : 0) | 16, (cls << 6) | ch, v & 0xff, v >> 8];
  const deliver = (dir) => [(dir ? 0x80 : 0) | 40];
  const drop = (dir) => [(dir ? 0x80 : 0) | 64];
  const flush = [96];
  const deadline = [104];
  const burst = (server, n, l) => [(server ? 0x80 : 0) | 112, n, l];
  const header = (a, b, c) => [a, b, c, 1, 0];
  const clean = [
    ...header(0x00, 0x18, 0xe4), ...flush, ...flush,
    ...send(false, 0, 0, 20), ...send(true, 0, 0, 30), ...send(false, 1, 2, 900), ...send(false, 2, 0, 5), ...send(false, 3, 0, 5),
    ...flush, ...advance(2000), ...flush, ...burst(false, 10, 40), ...burst(true, 10, 40), ...flush, ...deadline, ...flush,
  ];
  const lossy = [
    ...header(0x05, 0x1a, 0x24), ...flush,
    ...burst(false, 20, 100), ...drop(0), ...deliver(0), ...drop(0), ...deliver(0), ...deliver(1), ...advance(3000, 2),
    ...deliver(0), ...deliver(1), ...drop(1), ...deadline, ...flush, ...advance(500, 3), ...flush,
  ];
  const big = [
    ...header(0x58, 0x08, 0x00), ...flush,
    ...send(false, 0, 3, 60000), ...send(true, 0, 3, 40000), ...send(false, 1, 3, 3000),
    ...deliver(0), ...deliver(0), ...drop(0), ...flush, ...deadline, ...flush, ...advance(1000, 3), ...flush,
  ];
  return { clean, lossy, big };
}

function ensureCorpus(target) {
  const dir = join(FUZZ_DIR, 'corpus', target);
  mkdirSync(dir, { recursive: true });
  if (target === 'conversation' && readdirSync(dir).length === 0) {
    for (const [name, bytes] of Object.entries(conversationSeeds())) {
      writeFileSync(join(dir, `seed-${name}`), Buffer.from(bytes));
    }
  }
  return dir;
}

// ---- running ---------------------------------------------------------------

/** Lines worth showing live; the full output goes to the log file. */
const SHOW = /^(#\d+\s+(INITED|DONE|pulse)|INFO: (Loaded|-max_len|seed corpus)|stat::|==\d+==|SUMMARY|artifact_prefix|Test unit written|thread '.*' panicked|Reproduce with|\s+cargo fuzz run|Failing input|Output of|Minimize|Base64)/;

function fuzzOne(env, opts, sanitizer, target) {
  const corpus = ensureCorpus(target);
  // cargo fuzz writes crash inputs to artifacts/<target>/ in the fuzz dir.
  mkdirSync(join(FUZZ_DIR, 'artifacts', target), { recursive: true });
  mkdirSync(join(FUZZ_DIR, 'logs'), { recursive: true });
  const logPath = join(FUZZ_DIR, 'logs', `${target}.log`);
  const args = [
    'fuzz', 'run', ...buildFlags(sanitizer), target, corpus, '--',
    `-max_total_time=${opts.seconds}`,
    '-timeout=20',
    '-rss_limit_mb=4096',
    '-print_final_stats=1',
    ...TARGET_FLAGS[target],
  ];
  log(`fuzzing ${target} for ${opts.seconds} s (corpus ${relative(ROOT, corpus)}, log ${relative(ROOT, logPath)})`);
  console.log(`$ cargo ${args.join(' ')}   (in ${relative(ROOT, FUZZ_DIR)})`);
  const out = createWriteStream(logPath);
  const seen = { crash: null, done: null, inited: null, panic: [] };
  return new Promise((resolve) => {
    const child = spawn('cargo', args, { cwd: FUZZ_DIR, env, stdio: ['ignore', 'pipe', 'pipe'] });
    // libFuzzer stops itself at -max_total_time; this is a backstop for a
    // hang outside the fuzz loop (a slow build is not counted: it ran before).
    const guard = setTimeout(() => {
      console.error(`[fuzz] ${target}: still running ${opts.seconds + 300} s after start; killing it`);
      child.kill('SIGKILL');
    }, (opts.seconds + 300) * 1000);
    let pending = '';
    let inPanic = 0;
    const onLine = (line) => {
      out.write(`${line}\n`);
      let m;
      if ((m = line.match(/Test unit written to (\S+)/))) seen.crash = m[1];
      if (/^#\d+\s+INITED/.test(line)) seen.inited = line;
      if (/^#\d+\s+DONE/.test(line)) seen.done = line;
      if (/panicked at/.test(line)) inPanic = 4;
      if (inPanic > 0) {
        seen.panic.push(line);
        inPanic--;
      }
      if (SHOW.test(line) || seen.panic.at(-1) === line) console.log(`  ${line}`);
    };
    const feed = (chunk) => {
      pending += chunk;
      const lines = pending.split('\n');
      pending = lines.pop();
      lines.forEach(onLine);
    };
    child.stdout.on('data', feed);
    child.stderr.on('data', feed);
    child.on('error', (e) => {
      clearTimeout(guard);
      resolve({ target, ok: false, error: `cargo: ${e.message}` });
    });
    child.on('close', (code, signal) => {
      clearTimeout(guard);
      if (pending) onLine(pending);
      out.end();
      resolve({ target, ok: code === 0 && !seen.crash, code, signal, ...seen, logPath });
    });
  });
}

function summarize(r, sanitizer, env) {
  const stats = (line) => {
    if (!line) return 'no stats';
    const cov = line.match(/cov: (\d+)/)?.[1];
    const ft = line.match(/ft: (\d+)/)?.[1];
    const corp = line.match(/corp: (\S+)/)?.[1];
    const eps = line.match(/exec\/s: (\d+)/)?.[1];
    const runs = line.match(/^#(\d+)/)?.[1];
    return `${runs} runs, ${eps} exec/s, coverage ${cov} edges / ${ft} features, corpus ${corp}`;
  };
  if (r.ok) {
    log(`${r.target}: ok: ${stats(r.done)}`);
    return;
  }
  console.error(`\n[fuzz] ${r.target}: FAILED (${r.error ?? (r.signal ? `signal ${r.signal}` : `exit ${r.code}`)})`);
  if (r.panic?.length) console.error(`[fuzz]   ${r.panic.join('\n[fuzz]   ')}`);
  if (r.crash) {
    const cmd = `cd ${relative(ROOT, FUZZ_DIR)} && RUSTC_BOOTSTRAP=1 PATH=${env.PATH.split(delimiter)[0]}:$PATH cargo fuzz`;
    const rel = relative(FUZZ_DIR, r.crash);
    console.error(`[fuzz]   reproducer: ${relative(ROOT, r.crash)}`);
    console.error(`[fuzz]   replay:     ${cmd} run ${buildFlags(sanitizer).join(' ')} ${r.target} ${rel}`);
    console.error(`[fuzz]   minimize:   ${cmd} tmin ${buildFlags(sanitizer).join(' ')} ${r.target} ${rel}`);
  }
  if (r.logPath) console.error(`[fuzz]   full output: ${relative(ROOT, r.logPath)}`);
}

/** The relay's parsers (tokens, request targets, backends, packet headers) under fast-check. */
function fuzzRelay(opts) {
  const runs = Math.max(1000, Math.round(opts.seconds * RELAY_RUNS_PER_SECOND / 4));
  log(`relay: ${runs} cases per property (relay/test/parsers.fuzz.test.ts)`);
  const vitest = join(ROOT, 'node_modules', 'vitest', 'vitest.mjs');
  const r = spawnSync(process.execPath, [vitest, 'run', 'test/parsers.fuzz.test.ts'], {
    cwd: join(ROOT, 'relay'),
    stdio: 'inherit',
    env: { ...process.env, RICOCHET_FUZZ_RUNS: String(runs) },
  });
  return r.status === 0;
}

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  const targets = opts.target === 'all' ? TARGETS : [opts.target];
  const rustTargets = targets.filter((t) => t !== 'relay');
  const t0 = performance.now();
  let failed = 0;
  if (targets.includes('relay') && !fuzzRelay(opts)) failed++;
  if (rustTargets.length > 0) {
    const bin = ensureCargoFuzz();
    const env = fuzzEnv(bin, opts.toolchain);
    const rustc = spawnSync('rustc', ['--version'], { env, encoding: 'utf8' }).stdout?.trim();
    log(`${rustc ?? 'rustc ?'}${/nightly/.test(rustc ?? '') ? '' : ' (with RUSTC_BOOTSTRAP=1)'}`);
    const sanitizer = build(env, opts, rustTargets);
    for (const t of rustTargets) {
      const r = await fuzzOne(env, opts, sanitizer, t);
      summarize(r, sanitizer, env);
      if (!r.ok) failed++;
    }
  }
  const secs = ((performance.now() - t0) / 1000).toFixed(0);
  if (failed) {
    console.error(`[fuzz] ${failed} of ${targets.length} target(s) failed (${secs} s)`);
    process.exit(1);
  }
  log(`all ${targets.length} target(s) ran clean (${secs} s)`);
}

main().catch((e) => {
  console.error(`[fuzz] ERROR: ${e.message}`);
  process.exit(1);
});
