#!/usr/bin/env node
// Runs the relay image's root filesystem the way a container runtime runs the
// image, minus the engine: new PID and mount namespaces (tini is PID 1 and
// receives the stop signal), a fresh /proc, chroot into the root filesystem,
// image.json's user, environment and entrypoint. The network namespace is the
// host's (like `--network host`): callers pick loopback ports. Needs root.
//
//   node deploy/relay/run-rootfs.mjs ROOTFS [relay flags…]
import { spawn, spawnSync } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { IMAGE } from './build-rootfs.mjs';

/**
 * Starts the image's entrypoint in rootfs with image.json's environment
 * overlaid by `env`, and `args` after the entrypoint (as `docker run IMAGE
 * args…` does). Returns the `unshare` child process and pid1(), the host PID
 * of the namespace's PID 1 (tini): where a runtime sends the stop signal.
 */
export function startContainer(rootfs, { env = {}, args = [], stdio = ['ignore', 'pipe', 'pipe'] } = {}) {
  const { uid } = IMAGE.user;
  const vars = Object.entries({ PATH: '/usr/local/bin:/usr/bin:/bin', HOME: '/nonexistent', ...IMAGE.env, ...env }).map(([k, v]) => `${k}=${v}`);
  const proc = spawn(
    'unshare',
    ['--pid', '--fork', '--mount', '--mount-proc', `--root=${rootfs}`, `--setuid=${uid}`, `--setgid=${uid}`, '/usr/bin/env', '-i', ...vars, ...IMAGE.entrypoint, ...args],
    { stdio },
  );
  return { proc, pid1: () => childOf(proc.pid) };
}

/**
 * Runs a command inside the running container (`kubectl exec`-like): the
 * same PID namespace and root, image.json's user. Resolves with its exit code.
 */
export function execInContainer(pid1, argv) {
  const { uid } = IMAGE.user;
  const p = spawn('nsenter', [`--target=${pid1}`, '--pid', '--root', '--wd', `--setuid=${uid}`, `--setgid=${uid}`, ...argv], { stdio: 'inherit' });
  return new Promise((r) => p.on('exit', (code, signal) => r(code ?? signal)));
}

/** The host PID of the only child of pid (unshare --fork's child), or null. */
function childOf(pid) {
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      // Fields after the command's closing parenthesis: state, ppid, …
      const stat = readFileSync(`/proc/${d}/stat`, 'utf8');
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === pid) return Number(d);
    } catch {
      // exited meanwhile
    }
  }
  return null;
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  const [rootfs, ...args] = process.argv.slice(2);
  if (!rootfs) {
    console.error('usage: run-rootfs.mjs ROOTFS [relay flags…]');
    process.exit(2);
  }
  const { proc, pid1 } = startContainer(resolve(rootfs), { args, stdio: 'inherit' });
  // Forward a stop to PID 1, as a runtime does.
  for (const sig of ['SIGTERM', 'SIGINT']) process.on(sig, () => spawnSync('kill', [`-${sig.slice(3)}`, String(pid1())]));
  proc.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
}
