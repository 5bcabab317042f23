// What the S1 benchmark needs on the machine, built or installed from the
// project's own files: the emulator, Ricochet's native peer, the KCP/TCP
// peers (Go, kcp-go pinned in bench/peers/go.mod), and iptables for
// the byte counters of s1-counters.mjs.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT, findOnPath, run } from '../scripts/setup.mjs';

// RICOCHET_S1_PEER (an absolute path): another build of s1_peer, run as is
// (not built), for a side-by-side run of two builds.
export const RICOCHET_PEER = process.env.RICOCHET_S1_PEER || join(ROOT, 'wasm', 'target', 'release', 'examples', 's1_peer');
export const GO_PEERS_DIR = join(ROOT, 'bench', 'peers');
export const GO_PEERS = join(GO_PEERS_DIR, 'target', 'peers');

/** Go from PATH, or the official tarball's usual place. */
function findGo() {
  const go = findOnPath('go') ?? ['/usr/local/go/bin/go'].find((p) => existsSync(p));
  if (!go) throw new Error('Go is needed for the KCP/TCP peers (kcp-go): install Go ≥ 1.26 (go.dev/dl) or put it on PATH');
  return go;
}

function ensureIptables() {
  if (findOnPath('iptables')) return;
  if (process.getuid?.() !== 0 || !findOnPath('apt-get')) throw new Error('iptables is missing (apt-get install iptables)');
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  run('apt-get', ['install', '-y', 'iptables'], { env });
}

/** Builds (incrementally) every binary the S1 run uses; `go`: the KCP/TCP peers too. */
export function ensureS1Tools({ go = true } = {}) {
  ensureIptables();
  run('cargo', ['build', '--release', '--manifest-path', join(ROOT, 'netem', 'Cargo.toml')]);
  if (process.env.RICOCHET_S1_PEER) console.error(`S1: Ricochet's peer is ${RICOCHET_PEER} (RICOCHET_S1_PEER), run as is`);
  else run('cargo', ['build', '--release', '-p', 'ricochet-native', '--example', 's1_peer', '--manifest-path', join(ROOT, 'wasm', 'Cargo.toml')]);
  if (go) run(findGo(), ['build', '-o', GO_PEERS, '.'], { cwd: GO_PEERS_DIR });
}
