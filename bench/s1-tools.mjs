// What the S1 benchmark needs on the machine, built or installed from the
// project's own files: the emulator, Ricochet's native peer, the KCP/TCP
// peers (Go, kcp-go pinned in bench/s1-peers/go.mod), and iptables for
// per-protocol byte counters inside the lab's namespaces.
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT, findOnPath, run } from '../scripts/setup.mjs';

export const RICOCHET_PEER = join(ROOT, 'wasm', 'target', 'release', 'examples', 's1_peer');
export const GO_PEERS_DIR = join(ROOT, 'bench', 's1-peers');
export const GO_PEERS = join(GO_PEERS_DIR, 'target', 's1-peers');

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

/** Builds (incrementally) every binary the S1 run uses. */
export function ensureS1Tools() {
  ensureIptables();
  run('cargo', ['build', '--release', '--manifest-path', join(ROOT, 'netem', 'Cargo.toml')]);
  run('cargo', ['build', '--release', '-p', 'ricochet-native', '--example', 's1_peer', '--manifest-path', join(ROOT, 'wasm', 'Cargo.toml')]);
  run(findGo(), ['build', '-o', GO_PEERS, '.'], { cwd: GO_PEERS_DIR });
}

function sh(cmd, args) {
  return new Promise((resolve, reject) => {
    execFile(cmd, args, (err, stdout, stderr) => (err ? reject(new Error(`${cmd} ${args.join(' ')}: ${stderr || err.message}`)) : resolve(stdout)));
  });
}

/**
 * Counts the IP bytes (headers included) each side puts on the link, per
 * protocol: an OUTPUT rule per port in each namespace (A sends to the port,
 * B answers from it). Lost packets count: they were sent.
 */
export async function installCounters(lab, peers) {
  for (const p of peers) {
    await sh('ip', ['netns', 'exec', lab.nsA, 'iptables', '-A', 'OUTPUT', '-p', p.ipProto, '--dport', String(p.port)]);
    await sh('ip', ['netns', 'exec', lab.nsB, 'iptables', '-A', 'OUTPUT', '-p', p.ipProto, '--sport', String(p.port)]);
  }
}

/** { [port]: { packets, bytes } } summed over both namespaces. */
export async function readCounters(lab) {
  const out = {};
  for (const [ns, key] of [
    [lab.nsA, 'dpt'],
    [lab.nsB, 'spt'],
  ]) {
    const text = await sh('ip', ['netns', 'exec', ns, 'iptables', '-nvx', '-L', 'OUTPUT']);
    for (const line of text.split('\n')) {
      const m = new RegExp(`^\\s*(\\d+)\\s+(\\d+)\\s.*${key}:(\\d+)`).exec(line);
      if (!m) continue;
      const c = (out[m[3]] ??= { packets: 0, bytes: 0 });
      c.packets += Number(m[1]);
      c.bytes += Number(m[2]);
    }
  }
  return out;
}

/** The TCP congestion control in force inside `ns` (namespaces cannot pick their own freely). */
export async function tcpCongestionControl(ns) {
  return (await sh('ip', ['netns', 'exec', ns, 'sysctl', '-n', 'net.ipv4.tcp_congestion_control'])).trim();
}
