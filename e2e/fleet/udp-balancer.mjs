#!/usr/bin/env node
// The UDP (QUIC, so WebTransport) balancer's controller, run in the bridge
// namespace beside HAProxy. The data path is the kernel's: an nftables DNAT
// rule spreads new flows to VIP:PORT over the relays by a jhash of the
// client's address and port, through a map of BUCKETS slots (this kernel has
// no IPVS). What a real UDP balancer's controller does, this does: it polls
// every relay's /healthz and rewrites the map in one atomic nft transaction
// so dead relays (no answer) and draining ones (503) leave rotation, and
// restarted ones come back. Existing flows keep their conntrack entry (a QUIC
// connection stays on its relay); a reconnect uses a new source port, so a
// new entry and a live relay.
//
// Usage: node udp-balancer.mjs '<json>' with { vip, port, relays: [{ addr, httpPort }], intervalMs, timeoutMs }.
// stdout: JSON lines {"event":"map","at":ms,"healthy":[addr…]} on every change.
// stdin: a line "status" is answered with each relay's last /healthz status and session count.
// Exits on stdin EOF or SIGTERM, deleting its table.
import { execFileSync } from 'node:child_process';

const o = JSON.parse(process.argv[2]);
const BUCKETS = 60;
const TABLE = 'ricochet_fleet';
const nft = (script) => execFileSync('nft', ['-f', '-'], { input: script, stdio: ['pipe', 'ignore', 'inherit'] });
const out = (m) => process.stdout.write(`${JSON.stringify(m)}\n`);

nft(`table ip ${TABLE} {
  map relays { typeof numgen inc mod ${BUCKETS} : ip daddr; }
  chain pre {
    type nat hook prerouting priority dstnat; policy accept;
    ip daddr ${o.vip} udp dport ${o.port} dnat to jhash ip saddr . udp sport mod ${BUCKETS} map @relays
  }
}`);

let current = '';
function apply(healthy) {
  const key = healthy.join(',');
  if (key === current) return;
  current = key;
  // With none healthy, every bucket points at the VIP itself: nothing listens there, ICMP port unreachable.
  const targets = healthy.length ? healthy : [o.vip];
  const elems = Array.from({ length: BUCKETS }, (_, b) => `${b} : ${targets[b % targets.length]}`).join(', ');
  nft(`flush map ip ${TABLE} relays\nadd element ip ${TABLE} relays { ${elems} }\n`);
  out({ event: 'map', at: Date.now(), healthy });
}

/** The last /healthz answer from each relay: HTTP status (0: none) and its session count. */
const last = o.relays.map(() => ({ status: 0, sessions: null }));
async function healthy(r, i) {
  try {
    const res = await fetch(`http://${r.addr}:${r.httpPort}/healthz`, { signal: AbortSignal.timeout(o.timeoutMs ?? 300) });
    const body = await res.json().catch(() => ({}));
    last[i] = { status: res.status, sessions: typeof body.sessions === 'number' ? body.sessions : null };
    return res.status === 200;
  } catch {
    last[i] = { status: 0, sessions: null };
    return false;
  }
}

let stopped = false;
async function loop() {
  while (!stopped) {
    const t0 = Date.now();
    const ok = await Promise.all(o.relays.map(healthy));
    if (!stopped) apply(o.relays.filter((_, i) => ok[i]).map((r) => r.addr));
    await new Promise((r) => setTimeout(r, Math.max(0, (o.intervalMs ?? 100) - (Date.now() - t0))));
  }
}
const stop = () => {
  if (stopped) return;
  stopped = true;
  try {
    nft(`delete table ip ${TABLE}`);
  } catch {
    // the namespace is going away anyway
  }
  process.exit(0);
};
// stdin: "status" answers {"event":"status","relays":[{addr,status,sessions}…]}.
process.stdin.setEncoding('utf8');
process.stdin.on('data', (d) => {
  if (String(d).includes('status')) out({ event: 'status', at: Date.now(), relays: o.relays.map((r, i) => ({ addr: r.addr, ...last[i] })) });
});
process.stdin.on('end', stop);
process.once('SIGTERM', stop);
loop();
