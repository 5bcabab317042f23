// Benchmark page for S1 (bench/s1.mjs, e2e/bench-specs): sends fixed-size
// reliable-ordered messages at a fixed rate through the relay to the native
// S1 receiver (wasm/native/examples/s1_peer.rs), in its message format:
// u32 seq, u32 size, u64 send time (ns, CLOCK_MONOTONIC), bytes from seq.
// The page's clock is performance.now(); the spec measures its offset from
// CLOCK_MONOTONIC and passes it in. Driven via window.ricochetS1 with the
// row's transport and connection options (bench/s1-browser-rows.mjs).
//
// It also times the steps inside the page, to find where a browser row loses
// time against the native one: how late the 60 Hz timer fires, how long
// send + flush take, whether the datagram reached the browser's writer in the
// same call (else the SDK's pacing queue held it), and how long the browser
// took to complete that write; and the granularity of performance.now().
import { Connection, WebTransportTransport, openTransport } from '/sdk/index.js';
import { relayInfo } from './relay-info.js';

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

/** Nearest-rank percentiles of `xs` (ms), rounded to µs. */
function pcts(xs) {
  const v = Float64Array.from(xs).sort();
  const at = (q) => (v.length ? Math.round(v[Math.min(v.length - 1, Math.max(0, Math.ceil(q * v.length) - 1))] * 1000) / 1000 : null);
  return { n: v.length, p50: at(0.5), p99: at(0.99), max: at(1) };
}

/** Smallest non-zero step of performance.now() over a short busy loop (ms). */
function clockGranularity() {
  let min = Infinity;
  let last = performance.now();
  const end = last + 20;
  while (last < end) {
    const t = performance.now();
    if (t > last) min = Math.min(min, t - last);
    last = t;
  }
  return min;
}

window.ricochetS1 = async (o) => {
  const info = await relayInfo(o.relayHttp, log);
  const q = `?token=${encodeURIComponent(o.token)}`;
  const force = o.force ?? 'webtransport';
  // A pacing burst other than the SDK's default needs WebTransportTransport's own options.
  const choice = o.burst && force === 'webtransport'
    ? { kind: 'webtransport', transport: await WebTransportTransport.connect(info.webTransportUrl + q, { serverCertificateHashes: info.certHashes, burst: o.burst }) }
    : await openTransport({
      webTransportUrl: info.webTransportUrl && info.webTransportUrl + q,
      serverCertificateHashes: info.certHashes,
      webSocketUrl: info.webSocketUrl + q,
      force,
    });
  log(`transport ${choice.kind}`);
  const ll = o.lowLatency;
  const channel = ll ? { kind: 'reliable-ordered', latencyTargetMs: ll.latencyTargetMs } : 'reliable-ordered';
  const options = ll ? { maxAckDelayMs: ll.maxAckDelayMs, keepaliveMs: ll.keepaliveMs, fec: ll.fec, fecBudget: ll.fecBudget } : {};
  const conn = new Connection(choice.transport, { channels: [channel], handshake: 's1', ...options });
  await conn.ready;
  // Step timing: every datagram handed to the browser's writer, and when its write completed.
  const t = choice.transport;
  let writes = 0;
  const writeDoneMs = [];
  if (t.writer) {
    const w = t.writer;
    const write = w.write.bind(w);
    w.write = (d) => {
      writes++;
      const at = performance.now();
      const p = write(d);
      p.then(() => writeDoneMs.push(performance.now() - at), () => {});
      return p;
    };
  }
  const lateMs = [];
  const sendCallMs = [];
  let heldByPacing = 0;
  const granularityMs = clockGranularity();
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
    lateMs.push(now - due);
    new DataView(b.buffer).setBigUint64(8, BigInt(Math.round(now * 1e6)) + offsetNs, true);
    const before = writes;
    conn.send(0, b);
    conn.flush();
    sendCallMs.push(performance.now() - now);
    if (t.writer && writes === before) heldByPacing++;
  }
  const deadline = performance.now() + 30_000;
  while (acked + lost < o.count && performance.now() < deadline) await sleep(20);
  const s = conn.stats();
  conn.close(1000, 'done');
  const steps = {
    clockGranularityMs: granularityMs,
    tickLateMs: pcts(lateMs),
    sendCallMs: pcts(sendCallMs),
    heldByPacing,
    writes,
    writeDoneMs: pcts(writeDoneMs),
    transportDrops: { dropped: t.dropped ?? null, oversized: t.oversized ?? null, maxInFlight: t.maxInFlight ?? null },
    maxDatagramSize: t.maxDatagramSize ?? null,
  };
  return { kind: choice.kind, sent: o.count, acked, lost, lateTickMaxMs: lateMax, retransmissions: s.retransmissions, rttMs: s.rttMs, packetsOut: s.packetsOut, packetsLost: s.packetsLost, fecRepairBytesOut: s.fecRepairBytesOut ?? null, steps };
};
log('ready');
