// Per-protocol wire bytes inside a lab (netem/lab.mjs): iptables OUTPUT
// rules per port in both namespaces. Shared by bench/s1.mjs and the browser
// row's spec (e2e/bench-specs), hence no imports beyond Node's.
import { execFile } from 'node:child_process';

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
