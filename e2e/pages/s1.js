// Benchmark page for S1 (bench/s1.mjs, e2e/bench-specs): sends fixed-size
// reliable-ordered messages at a fixed rate through the relay to the native
// S1 receiver (wasm/native/examples/s1_peer.rs), in its message format:
// u32 seq, u32 size, u64 send time (ns, CLOCK_MONOTONIC), bytes from seq.
// The page's clock is performance.now(); the spec measures its offset from
// CLOCK_MONOTONIC and passes it in. Driven via window.ricochetS1.
import { Connection, openTransport } from '/sdk/index.js';

const log = (s) => (document.getElementById('log').textContent += `\n${s}`);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Same bytes as s1_peer.rs's `fill`: xorshift32 seeded from seq. */
function fill(b, seq) {
  const v = new DataView(b.buffer, b.byteOffset, b.byteLength);
  v.setUint32(0, seq, true);
  v.setUint32(4, b.length, true);
  let x = (Math.imul(seq, 2654435761 | 0) | 1) >>> 0;
  for (let i = 16; i < b.length; i++) {
    x = (x ^ (x << 13)) >>> 0;
    x = (x ^ (x >>> 17)) >>> 0;
    x = (x ^ (x << 5)) >>> 0;
    b[i] = x & 0xff;
  }
}

window.ricochetS1 = async (o) => {
  const info = await (await fetch(`${o.relayHttp}/cert-hash`)).json();
  const q = `?token=${encodeURIComponent(o.token)}`;
  const choice = await openTransport({
    webTransportUrl: info.webTransportUrl && info.webTransportUrl + q,
    serverCertificateHashes: info.certHashes,
    webSocketUrl: info.webSocketUrl + q,
    force: o.force ?? 'webtransport',
  });
  log(`transport ${choice.kind}`);
  const conn = new Connection(choice.transport, { channels: ['reliable-ordered'], handshake: 's1' });
  await conn.ready;
  let acked = 0;
  let lost = 0;
  conn.on('acked', () => acked++);
  conn.on('lost', () => lost++);
  const offsetNs = BigInt(o.monoOffsetNs);
  const period = 1000 / o.hz;
  let lateMax = 0;
  const t0 = performance.now();
  for (let seq = 0; seq < o.count; seq++) {
    const due = t0 + seq * period;
    const wait = due - performance.now();
    if (wait > 0) await sleep(wait);
    const b = new Uint8Array(o.size);
    fill(b, seq);
    const now = performance.now();
    lateMax = Math.max(lateMax, now - due);
    new DataView(b.buffer).setBigUint64(8, BigInt(Math.round(now * 1e6)) + offsetNs, true);
    conn.send(0, b);
    conn.flush();
  }
  const deadline = performance.now() + 30_000;
  while (acked + lost < o.count && performance.now() < deadline) await sleep(20);
  const s = conn.stats();
  conn.close(1000, 'done');
  return { kind: choice.kind, sent: o.count, acked, lost, lateTickMaxMs: lateMax, retransmissions: s.retransmissions, rttMs: s.rttMs, packetsOut: s.packetsOut, packetsLost: s.packetsLost };
};
log('ready');
