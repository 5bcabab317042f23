// A chain of network namespaces H0 → H1 → … → Hn joined by one ricochet-netem
// emulator per hop (netem/lab.mjs joins only two), for S2's multi-hop path.
// The middle namespaces forward IP; H0 and Hn route everything across the
// chain. Addresses: hop h is 10.78.<base+h>.0/30, .1 on the left, .2 on the
// right. Needs root. Only the chain's own addresses are ever used.
import { execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { EMULATOR_BIN, linkArgs, realtimeAvailable, stop } from '../netem/lab.mjs';

const sh = (cmd, args) =>
  new Promise((resolve, reject) => execFile(cmd, args, (e, out, err) => (e ? reject(new Error(`${cmd} ${args.join(' ')}: ${err || e.message}`)) : resolve(out))));

function waitReady(child) {
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => reject(new Error('emulator: no ready line')), 10_000);
    createInterface({ input: child.stdout }).on('line', (l) => {
      if (l.includes('"ready"')) {
        clearTimeout(t);
        resolve();
      }
    });
    child.once('exit', (c) => reject(new Error(`emulator exited (${c})`)));
  });
}

/**
 * `hops` emulated links in a row, each with `settings` (lab.mjs's settings
 * keys). Returns { ns: [...], first, last, addrLast, exec, stats, close }.
 */
export async function createChain({ hops, settings, seed = 1 }) {
  const id = randomBytes(3).toString('hex');
  const base = 16 + Math.floor(Math.random() * 200);
  const ns = Array.from({ length: hops + 1 }, (_, i) => `rcH${i}-${id}`);
  const tmp = mkdtempSync(join(tmpdir(), `ricochet-chain-${id}-`));
  const emulators = [];
  const children = new Set();
  const addr = (h, side) => `10.78.${base + h}.${side}`;
  const rt = realtimeAvailable();
  const close = async () => {
    // SIGKILL after the grace: a peer spinning under SCHED_FIFO must not
    // outlive the chain (it would hold both cores for every later run).
    await Promise.all([...children, ...emulators].map(stop));
    for (const n of ns) await sh('ip', ['netns', 'del', n]).catch(() => {});
    rmSync(tmp, { recursive: true, force: true });
  };
  try {
    for (const n of ns) {
      await sh('ip', ['netns', 'add', n]);
      await sh('ip', ['-n', n, 'link', 'set', 'lo', 'up']);
    }
    for (let h = 0; h < hops; h++) {
      const [devL, devR] = [`c${h}L-${id}`, `c${h}R-${id}`];
      const argv = ['--ns-a', ns[h], '--ns-b', ns[h + 1], '--tun-a', devL, '--tun-b', devR, '--seed', String(seed + h)];
      argv.push('--stats-file', join(tmp, `hop${h}.json`), '--die-with-parent', ...linkArgs({ settings }));
      const child = rt ? spawn('chrt', ['-f', '20', EMULATOR_BIN, ...argv]) : spawn(EMULATOR_BIN, argv);
      emulators.push(child);
      await waitReady(child);
      for (const [n, dev, a] of [
        [ns[h], devL, addr(h, 1)],
        [ns[h + 1], devR, addr(h, 2)],
      ]) {
        await sh('ip', ['netns', 'exec', n, 'sysctl', '-qw', `net.ipv6.conf.${dev}.disable_ipv6=1`]).catch(() => {});
        await sh('ip', ['-n', n, 'link', 'set', 'dev', dev, 'txqueuelen', '1000', 'up']);
        await sh('ip', ['-n', n, 'addr', 'add', `${a}/30`, 'dev', dev]);
      }
    }
    // Each namespace sends what is not on its own links toward the far end it lacks.
    for (let i = 0; i <= hops; i++) {
      if (i > 0 && i < hops) await sh('ip', ['netns', 'exec', ns[i], 'sysctl', '-qw', 'net.ipv4.ip_forward=1']);
      for (let h = 0; h < hops; h++) {
        if (h === i || h === i - 1) continue; // directly connected
        const via = h > i ? addr(i, 2) : addr(i - 1, 1);
        await sh('ip', ['-n', ns[i], 'route', 'add', `10.78.${base + h}.0/30`, 'via', via]);
      }
    }
  } catch (e) {
    await close();
    throw e;
  }
  return {
    ns,
    first: ns[0],
    last: ns[hops],
    addrLast: addr(hops - 1, 2),
    realtime: rt,
    exec(n, cmd, args, { rt: useRt = false, ...options } = {}) {
      const inner = ['netns', 'exec', n, cmd, ...args];
      const child = useRt && rt ? spawn('chrt', ['-f', '20', 'ip', ...inner], options) : spawn('ip', inner, options);
      children.add(child);
      return child;
    },
    /** Each hop's emulator counters (its stats file, rewritten every second). */
    stats() {
      return Array.from({ length: hops }, (_, h) => {
        try {
          return JSON.parse(readFileSync(join(tmp, `hop${h}.json`), 'utf8'));
        } catch {
          return null;
        }
      });
    },
    close,
  };
}
