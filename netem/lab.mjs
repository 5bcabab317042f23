#!/usr/bin/env node
// A two-namespace network lab joined by an impaired link. Node builtins only.
//
//   import { createLab } from './netem/lab.mjs';
//   const lab = await createLab({ profile: 's1_5pct' });        // or settings: { delayMs: 10, loss: 0.05 }
//   const server = lab.exec(lab.nsB, 'node', ['server.mjs']);    // ChildProcess, killed by close()
//   const client = lab.exec(lab.nsA, 'node', ['client.mjs', lab.addrB]);
//   console.log(await lab.stats());                              // the emulator's counters
//   await lab.close();                                           // namespaces and devices gone
//
// Namespaces rcA-<id>/rcB-<id> each get loopback up and one device: a TUN
// owned by ricochet-netem (mode 'emulator', the default), or a veth end with
// tc netem (mode 'netem', only where the kernel has netem). A is 10.77.<n>.1,
// B is 10.77.<n>.2 (/30); the connected route is the route between them.
// A is the profile's client side, B its server side. Needs root.
//
// As a script: `node netem/lab.mjs [emulator link options]` sets a lab up,
// prints its names and addresses as JSON, and tears it down on Ctrl-C.

import { execFile, execFileSync, spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = dirname(fileURLToPath(import.meta.url));
/** The emulator binary (`cargo build --release --manifest-path netem/Cargo.toml`). */
export const EMULATOR_BIN = process.env.RICOCHET_NETEM_BIN ?? join(HERE, 'target', 'release', 'ricochet-netem');

const READY_TIMEOUT_MS = 10_000;
const STATS_TIMEOUT_MS = 3_000;
const KILL_GRACE_MS = 2_000;
const GONE_TIMEOUT_MS = 5_000;
const RT_PRIORITY = '20';

/** Settings keys (camelCase) → emulator flags. `ab`/`ba` nest one direction. */
const FLAGS = {
  delayMs: 'delay-ms',
  jitterMs: 'jitter-ms',
  loss: 'loss',
  burst: 'burst',
  lossGe: 'loss-ge',
  lossMarkov4: 'loss-markov4',
  dup: 'dup',
  reorder: 'reorder',
  reorderMs: 'reorder-ms',
  rateKbps: 'rate-kbps',
  queueBytes: 'queue-bytes',
  mtu: 'mtu',
};

/** Emulator link flags for a profile name and/or settings object. */
export function linkArgs({ profile, settings = {} } = {}) {
  const args = profile ? ['--profile', profile] : [];
  const add = (obj, prefix) => {
    for (const [key, value] of Object.entries(obj)) {
      if (key === 'ab' || key === 'ba') {
        if (prefix) throw new Error(`settings: '${key}' cannot nest`);
        add(value, `${key}-`);
        continue;
      }
      if (!(key in FLAGS)) throw new Error(`settings: unknown key '${key}' (known: ${Object.keys(FLAGS).join(', ')}, ab, ba)`);
      if (value === undefined || value === null) continue;
      args.push(`--${prefix}${FLAGS[key]}`, Array.isArray(value) ? value.join(',') : String(value));
    }
  };
  add(settings, '');
  return args;
}

function run(cmd, args, { allowFail = false } = {}) {
  return new Promise((resolve, reject) => {
    execFile(cmd, args, { timeout: 10_000 }, (err, stdout, stderr) => {
      if (err && !allowFail) reject(new Error(`${cmd} ${args.join(' ')}: ${stderr.trim() || err.message}`));
      else resolve({ ok: !err, stdout, stderr });
    });
  });
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Poll `check()` every 50 ms until true or `ms` elapse; returns the last result. */
async function waitFor(check, ms) {
  const end = Date.now() + ms;
  for (;;) {
    if (await check()) return true;
    if (Date.now() > end) return false;
    await sleep(50);
  }
}

let chrtWorks;
/**
 * Whether `chrt -f 20` may be used (present and permitted, and not turned
 * off with RICOCHET_NETEM_REALTIME=0).
 */
export function realtimeAvailable() {
  chrtWorks ??= process.env.RICOCHET_NETEM_REALTIME !== '0' && spawnSync('chrt', ['-f', RT_PRIORITY, 'true']).status === 0;
  return chrtWorks;
}

/** A fresh run id: pid and random, base 36; namespace names stay ≤ 15 bytes. */
function newId() {
  return `${process.pid.toString(36)}${randomBytes(2).toString('hex')}`.slice(-9);
}

function checkId(id) {
  if (!/^[a-z0-9]{1,10}$/i.test(id)) throw new Error(`lab id '${id}': 1-10 letters or digits`);
}

let netemCache;
/** True if this kernel has tc netem (tried on loopback in a scratch namespace). */
export async function netemAvailable() {
  if (netemCache !== undefined) return netemCache;
  const ns = `rcS-${newId()}`;
  try {
    await run('ip', ['netns', 'add', ns]);
    await run('ip', ['-n', ns, 'link', 'set', 'lo', 'up']);
    netemCache = (await run('tc', ['-n', ns, 'qdisc', 'add', 'dev', 'lo', 'root', 'netem', 'delay', '1ms'], { allowFail: true })).ok;
  } catch {
    netemCache = false;
  } finally {
    await run('ip', ['netns', 'del', ns], { allowFail: true });
  }
  return netemCache;
}

const pct = (p) => `${Number((p * 100).toPrecision(8))}%`;

/**
 * tc netem arguments approximating one emulator link config (as printed by
 * `ricochet-netem --print-profile`). Approximate where netem differs: jitter
 * becomes mean ± half (netem may reorder with it), netem's `reorder` sends
 * packets early instead of holding them back, `mtu` is not modelled.
 */
export function netemArgs(c) {
  const args = [];
  if (c.latency_us || c.jitter_us) {
    args.push('delay', `${c.latency_us + c.jitter_us / 2}us`);
    if (c.jitter_us) args.push(`${c.jitter_us / 2}us`);
  }
  const l = c.loss;
  if (l.model === 'iid') args.push('loss', 'random', pct(l.p));
  if (l.model === 'gilbert_elliott') {
    args.push('loss', 'gemodel', pct(l.p_good_to_bad), pct(l.p_bad_to_good), pct(l.loss_in_bad), pct(l.loss_in_good));
  }
  if (l.model === 'markov4') args.push('loss', 'state', pct(l.p13), pct(l.p31), pct(l.p32), pct(l.p23), pct(l.p14));
  if (c.duplicate) args.push('duplicate', pct(c.duplicate));
  if (c.reorder) args.push('reorder', pct(c.reorder));
  if (c.rate_bytes_per_sec) {
    args.push('rate', `${c.rate_bytes_per_sec * 8}bit`);
    args.push('limit', String(Math.max(1000, Math.ceil(c.queue_bytes / 1500))));
  }
  return args;
}

const openLabs = new Set();
let hooksInstalled = false;

/** Last resort on process exit: synchronous, best effort. */
function cleanupAllSync() {
  for (const lab of openLabs) lab._closeSync();
}

function installExitHooks() {
  if (hooksInstalled) return;
  hooksInstalled = true;
  process.on('exit', cleanupAllSync);
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
    // Only where nobody else decides what the signal does.
    if (process.listenerCount(sig) > 0) continue;
    const handler = () => {
      cleanupAllSync();
      process.removeListener(sig, handler);
      process.kill(process.pid, sig);
    };
    process.on(sig, handler);
  }
}

function readJsonLines(stream, onObject) {
  let buf = '';
  stream.setEncoding('utf8');
  stream.on('data', (chunk) => {
    buf += chunk;
    let i;
    while ((i = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, i);
      buf = buf.slice(i + 1);
      try {
        onObject(JSON.parse(line));
      } catch {
        /* not ours */
      }
    }
  });
}

function exited(child) {
  return child.exitCode !== null || child.signalCode !== null;
}

function waitExit(child, ms) {
  if (exited(child)) return Promise.resolve(true);
  return new Promise((resolve) => {
    const t = setTimeout(() => resolve(false), ms);
    child.once('exit', () => {
      clearTimeout(t);
      resolve(true);
    });
  });
}

/** SIGTERM, then SIGKILL if it has not exited within the grace period; resolves once it is gone. */
export async function stop(child) {
  if (exited(child)) return;
  child.kill('SIGTERM');
  if (!(await waitExit(child, KILL_GRACE_MS))) {
    child.kill('SIGKILL');
    await waitExit(child, KILL_GRACE_MS);
  }
}

class Lab {
  constructor({ id, mode, subnet, rt }) {
    this.id = id;
    this.mode = mode;
    this.nsA = `rcA-${id}`;
    this.nsB = `rcB-${id}`;
    this.devA = mode === 'netem' ? `rvA-${id}` : `rtA-${id}`;
    this.devB = mode === 'netem' ? `rvB-${id}` : `rtB-${id}`;
    this.addrA = `10.77.${subnet}.1`;
    this.addrB = `10.77.${subnet}.2`;
    this.realtime = rt;
    this.config = null; // { a_to_b, b_to_a } as the emulator prints them
    this.ready = null; // the emulator's ready event
    this.finalStats = null; // the emulator's last stats event, after close()
    this._children = new Set();
    this._emulator = null;
    this._statsWaiters = [];
    this._lastStats = null;
    this._created = [];
    this._closing = null;
    this._tmp = mkdtempSync(join(tmpdir(), `ricochet-netem-${id}-`));
    this.statsFile = join(this._tmp, 'stats.json');
  }

  _ns(ns) {
    if (ns === 'A' || ns === 'a') return this.nsA;
    if (ns === 'B' || ns === 'b') return this.nsB;
    if (ns !== this.nsA && ns !== this.nsB) throw new Error(`not a namespace of this lab: ${ns}`);
    return ns;
  }

  /**
   * Spawn `cmd args` inside namespace `ns` (a name, or 'A'/'B'). Options are
   * spawn's, plus `rt: true` to run it under `chrt -f 20` where available.
   * close() kills whatever is still running.
   */
  exec(ns, cmd, args = [], { rt = false, ...options } = {}) {
    if (this._closing) throw new Error('lab is closed');
    const inner = ['netns', 'exec', this._ns(ns), cmd, ...args];
    const child =
      rt && realtimeAvailable() ? spawn('chrt', ['-f', RT_PRIORITY, 'ip', ...inner], options) : spawn('ip', inner, options);
    this._children.add(child);
    child.once('exit', () => this._children.delete(child));
    child.on('error', () => this._children.delete(child));
    return child;
  }

  /**
   * The link's counters. Emulator mode: the emulator's stats event (per
   * direction a_to_b / b_to_a) plus `kernel` device counters; netem mode:
   * `tc -s` output per side.
   */
  async stats() {
    const kernel = await this._deviceCounters();
    if (this.mode === 'netem') {
      const tc = async (ns, dev) => JSON.parse((await run('tc', ['-j', '-s', '-n', ns, 'qdisc', 'show', 'dev', dev])).stdout);
      return { mode: 'netem', a_to_b: await tc(this.nsA, this.devA), b_to_a: await tc(this.nsB, this.devB), kernel };
    }
    const emu = this._emulator;
    if (!emu || exited(emu)) {
      if (!this.finalStats) throw new Error('emulator is not running');
      return { ...this.finalStats, kernel };
    }
    const after = this._lastStats?.seq ?? 0;
    const next = new Promise((resolve, reject) => {
      const t = setTimeout(() => reject(new Error('emulator did not answer SIGUSR1')), STATS_TIMEOUT_MS);
      this._statsWaiters.push((s) => {
        if (s.seq <= after) return false;
        clearTimeout(t);
        resolve(s);
        return true;
      });
    });
    emu.kill('SIGUSR1');
    return { ...(await next), kernel };
  }

  async _deviceCounters() {
    const one = async (ns, dev) => {
      const r = await run('ip', ['-j', '-s', '-n', ns, 'link', 'show', 'dev', dev], { allowFail: true });
      if (!r.ok) return null;
      const s = JSON.parse(r.stdout)[0]?.stats64 ?? {};
      return { rx_packets: s.rx?.packets, rx_dropped: s.rx?.dropped, tx_packets: s.tx?.packets, tx_dropped: s.tx?.dropped };
    };
    return { a: await one(this.nsA, this.devA), b: await one(this.nsB, this.devB) };
  }

  _onEmulatorEvent(ev) {
    if (ev.event !== 'stats') return;
    this._lastStats = ev;
    if (ev.final) this.finalStats = ev;
    this._statsWaiters = this._statsWaiters.filter((w) => !w(ev));
  }

  async _setup(linkArgv) {
    for (const ns of [this.nsA, this.nsB]) {
      await run('ip', ['netns', 'add', ns]);
      this._created.push(ns);
      await run('ip', ['-n', ns, 'link', 'set', 'lo', 'up']);
    }
    const printed = await run(EMULATOR_BIN, ['--print-profile', ...linkArgv]);
    this.config = JSON.parse(printed.stdout);
    if (this.mode === 'netem') await this._startNetem();
    else await this._startEmulator(linkArgv);
    for (const [ns, dev, addr] of [
      [this.nsA, this.devA, this.addrA],
      [this.nsB, this.devB, this.addrB],
    ]) {
      // No IPv6 on the link: keeps router solicitations and MLD out of the
      // loss pattern, so counters equal the probe's traffic.
      await run('ip', ['netns', 'exec', ns, 'sysctl', '-qw', `net.ipv6.conf.${dev}.disable_ipv6=1`], { allowFail: true });
      await run('ip', ['-n', ns, 'link', 'set', 'dev', dev, 'txqueuelen', '1000', 'up']);
      await run('ip', ['-n', ns, 'addr', 'add', `${addr}/30`, 'dev', dev]);
    }
    const route = await run('ip', ['-n', this.nsA, 'route', 'get', this.addrB]);
    if (!route.stdout.includes(`dev ${this.devA}`)) throw new Error(`route to ${this.addrB} is not via ${this.devA}: ${route.stdout}`);
  }

  async _startEmulator(linkArgv) {
    if (!existsSync(EMULATOR_BIN)) {
      throw new Error(`no emulator at ${EMULATOR_BIN}: cargo build --release --manifest-path netem/Cargo.toml`);
    }
    const argv = [
      ...['--ns-a', this.nsA, '--ns-b', this.nsB, '--tun-a', this.devA, '--tun-b', this.devB],
      ...['--seed', String(this.seed), '--stats-file', this.statsFile, '--die-with-parent'],
      ...linkArgv,
    ];
    const child = this.realtime ? spawn('chrt', ['-f', RT_PRIORITY, EMULATOR_BIN, ...argv]) : spawn(EMULATOR_BIN, argv);
    this._emulator = child;
    let stderr = '';
    child.stderr.on('data', (d) => {
      stderr += d;
    });
    const ready = new Promise((resolve, reject) => {
      const t = setTimeout(() => reject(new Error('emulator: no ready line')), READY_TIMEOUT_MS);
      readJsonLines(child.stdout, (ev) => {
        if (ev.event === 'ready') {
          clearTimeout(t);
          resolve(ev);
        } else this._onEmulatorEvent(ev);
      });
      child.once('exit', (code, sig) => {
        clearTimeout(t);
        reject(new Error(`emulator exited (${sig ?? code}): ${stderr.trim()}`));
      });
      child.once('error', (e) => reject(new Error(`emulator: ${e.message}`)));
    });
    this.ready = await ready;
  }

  async _startNetem() {
    await run('ip', ['link', 'add', this.devA, 'netns', this.nsA, 'type', 'veth', 'peer', 'name', this.devB, 'netns', this.nsB]);
    for (const [ns, dev, cfg] of [
      [this.nsA, this.devA, this.config.a_to_b],
      [this.nsB, this.devB, this.config.b_to_a],
    ]) {
      const args = netemArgs(cfg);
      if (args.length) await run('tc', ['-n', ns, 'qdisc', 'add', 'dev', dev, 'root', 'netem', ...args]);
    }
    this.ready = { event: 'ready', mode: 'netem', a_to_b: this.config.a_to_b, b_to_a: this.config.b_to_a };
  }

  /** Kill children and the emulator, delete the namespaces, wait until gone. */
  close() {
    this._closing ??= this._close();
    return this._closing;
  }

  async _close() {
    await Promise.all([...this._children].map(stop));
    if (this._emulator) await stop(this._emulator);
    // A TUN device disappears when its descriptor closes; a veth pair with
    // its namespace.
    for (const [ns, dev] of [
      [this.nsA, this.devA],
      [this.nsB, this.devB],
    ]) {
      if (this.mode === 'emulator' && this._created.includes(ns)) {
        await waitFor(async () => !(await run('ip', ['-n', ns, 'link', 'show', 'dev', dev], { allowFail: true })).ok, GONE_TIMEOUT_MS);
      }
    }
    for (const ns of this._created) await run('ip', ['netns', 'del', ns], { allowFail: true });
    const gone = await waitFor(async () => {
      const { stdout } = await run('ip', ['netns', 'list'], { allowFail: true });
      return this._created.every((ns) => !stdout.split('\n').some((l) => l.split(' ')[0] === ns));
    }, GONE_TIMEOUT_MS);
    rmSync(this._tmp, { recursive: true, force: true });
    openLabs.delete(this);
    if (!gone) throw new Error(`namespaces still listed after close: ${this._created.join(', ')}`);
  }

  _closeSync() {
    for (const child of [...this._children, this._emulator].filter(Boolean)) {
      if (!exited(child)) child.kill('SIGKILL');
    }
    for (const ns of this._created) spawnSync('ip', ['netns', 'del', ns]);
    rmSync(this._tmp, { recursive: true, force: true });
    openLabs.delete(this);
  }
}

/**
 * Create a lab. Options:
 * - `profile`: simulator profile name ('s1_5pct', 'wifi', …); default 'perfect'
 * - `settings`: overrides, camelCase emulator flags ({ delayMs, jitterMs,
 *   loss, burst, lossGe, lossMarkov4, dup, reorder, reorderMs, rateKbps,
 *   queueBytes, mtu }, and `ab`/`ba` objects for one direction)
 * - `id`: run id suffix (≤ 10 letters/digits); default pid + random
 * - `seed`: emulator seed, default 1
 * - `mode`: 'emulator' (default) or 'netem' (throws where netem is missing)
 * - `subnet`: third octet of 10.77.x.0/30; default random
 * - `realtime`: run the emulator under `chrt -f 20` when possible; default true
 * - `blockUdp`: drop every UDP packet both ways (QUIC blocked, TCP passes); emulator mode only
 */
export async function createLab({ profile, settings, id = newId(), seed = 1, mode = 'emulator', subnet, realtime = true, blockUdp = false } = {}) {
  checkId(id);
  if (mode !== 'emulator' && mode !== 'netem') throw new Error(`mode must be 'emulator' or 'netem', got '${mode}'`);
  if (mode === 'netem' && !(await netemAvailable())) throw new Error("mode 'netem': this kernel has no netem qdisc");
  if (process.getuid?.() !== 0) throw new Error('a lab needs root (network namespaces, TUN devices)');
  if (blockUdp && mode !== 'emulator') throw new Error("blockUdp needs mode 'emulator'");
  const linkArgv = [...linkArgs({ profile, settings }), ...(blockUdp ? ['--block-udp'] : [])];
  subnet ??= Math.floor(Math.random() * 256);
  if (!Number.isInteger(subnet) || subnet < 0 || subnet > 255) throw new Error(`subnet must be 0..255, got ${subnet}`);
  const lab = new Lab({ id, mode, subnet, rt: realtime && realtimeAvailable() });
  lab.seed = seed;
  installExitHooks();
  openLabs.add(lab);
  try {
    await lab._setup(linkArgv);
  } catch (e) {
    await lab.close().catch(() => {});
    throw e;
  }
  return lab;
}

/** Script use: emulator link flags (--delay-ms 10, --ab-loss 0.1, …) → settings. */
function settingsFromArgv(argv) {
  const settings = {};
  const byFlag = Object.fromEntries(Object.entries(FLAGS).map(([k, f]) => [f, k]));
  for (let i = 0; i < argv.length; i += 2) {
    const m = /^--(ab-|ba-)?(.+)$/.exec(argv[i]);
    const key = m && byFlag[m[2]];
    if (!key || argv[i + 1] === undefined) throw new Error(`unknown or incomplete option ${argv[i]}`);
    const target = m[1] ? (settings[m[1].slice(0, 2)] ??= {}) : settings;
    target[key] = argv[i + 1];
  }
  return settings;
}

async function main() {
  const argv = process.argv.slice(2);
  if (argv.includes('--help')) {
    console.log('usage: node netem/lab.mjs [--mode netem] [--id ID] [--seed S] [--profile NAME] [link options of ricochet-netem --help]');
    return;
  }
  const take = (flag) => {
    const i = argv.indexOf(flag);
    return i < 0 ? undefined : argv.splice(i, 2)[1];
  };
  const options = { mode: take('--mode'), id: take('--id'), seed: Number(take('--seed') ?? 1), profile: take('--profile') };
  // Our own listeners first, so the library's exit hooks leave these signals to us.
  const stopped = new Promise((resolve) => ['SIGINT', 'SIGTERM', 'SIGHUP'].forEach((s) => process.once(s, resolve)));
  const lab = await createLab({ ...options, settings: settingsFromArgv(argv) });
  const { nsA, nsB, devA, devB, addrA, addrB, mode, config } = lab;
  console.log(JSON.stringify({ event: 'lab', mode, nsA, nsB, devA, devB, addrA, addrB, config }));
  console.error(`lab up: \`ip netns exec ${nsA} ...\` reaches ${addrB}; Ctrl-C tears it down`);
  await stopped;
  const stats = await lab.stats().catch((e) => ({ error: e.message }));
  await lab.close();
  console.log(JSON.stringify({ event: 'closed', stats }));
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  main().catch((e) => {
    console.error(`lab: ${e.message}`);
    process.exit(1);
  });
}
