// Summarises a Chromium net log of a WebTransport session (written when
// `RICOCHET_CHROMIUM_NETLOG=DIR node bench/s1.mjs …` runs the Chromium rows;
// e2e/netem-stack.ts): the congestion controller Chromium's QUIC stack chose,
// how long after the first datagram of a burst (a game tick's datagrams,
// handed over back to back) each later one left, and how many QUIC packets it
// declared lost or sent without a datagram (its own ACKs), and the times it
// sent no datagram for longer than a tick. The SDK writes a tick's datagrams
// at once; a delay here is the browser's pacing, and a gap of more than a
// tick is its sender holding them (bench/reference/s1-browsers.md: after a lost tick,
// until an ACK or its probe's comes back), then sending them together.
//   node bench/chromium-netlog.mjs file.json …
import { readFileSync } from 'node:fs';
import { quantiles } from './s1-stats.mjs';

/** A new burst starts after this much silence (ticks are 16.7 ms apart). */
const BURST_GAP_US = 5_000;
/** No datagram for this long held at least one tick's (the SDK hands one over every 16.7 ms). */
const HOLD_US = 20_000;

/** Parses a net log, closing it if the browser died before writing its end. */
export function parseNetlog(text) {
  try {
    return JSON.parse(text);
  } catch {
    return JSON.parse(`${text.replace(/,\s*$/, '')}]}`);
  }
}

/** One net log → a summary of its busiest QUIC session. */
export function summarizeNetlog(log) {
  const name = Object.fromEntries(Object.entries(log.constants.logEventTypes).map(([k, v]) => [v, k]));
  const bySource = new Map();
  for (const e of log.events) {
    const t = name[e.type];
    if (!t?.startsWith('QUIC_')) continue;
    const id = e.source?.id;
    if (!bySource.has(id)) bySource.set(id, []);
    bySource.get(id).push({ t, p: e.params ?? {} });
  }
  const datagramsOf = (evs) => evs.filter((e) => e.t === 'QUIC_SESSION_MESSAGE_FRAME_SENT').length;
  const session = [...bySource.values()].sort((a, b) => datagramsOf(b) - datagramsOf(a))[0] ?? [];
  let cc = null;
  let lost = 0;
  let ackOnly = 0;
  // Send times (µs) of packets that carried a datagram: a MESSAGE frame is
  // logged just before the packet that carries it.
  const sent = [];
  let framed = false;
  for (const e of session) {
    if (e.t === 'QUIC_CONGESTION_CONTROL_CONFIGURED') cc = e.p;
    else if (e.t === 'QUIC_SESSION_PACKET_LOST') lost++;
    else if (e.t === 'QUIC_SESSION_MESSAGE_FRAME_SENT') framed = true;
    else if (e.t === 'QUIC_SESSION_PACKET_SENT') {
      if (framed) sent.push(Number(e.p.sent_time_us));
      else ackOnly++;
      framed = false;
    }
  }
  // Delay of the k-th datagram of a burst (k ≥ 2) after its first, µs.
  const byPosition = [];
  let first = null;
  let prev = null;
  let k = 0;
  for (const t of sent) {
    if (prev === null || t - prev > BURST_GAP_US) {
      first = t;
      k = 0;
    } else {
      (byPosition[k] ??= []).push(t - first);
    }
    k++;
    prev = t;
  }
  // Gaps longer than a tick, and how many datagrams left together when each ended.
  const holds = [];
  for (let i = 1; i < sent.length; i++) {
    if (sent[i] - sent[i - 1] <= HOLD_US) continue;
    let j = i;
    while (j + 1 < sent.length && sent[j + 1] - sent[j] <= BURST_GAP_US) j++;
    holds.push({ ms: (sent[i] - sent[i - 1]) / 1000, released: j - i + 1 });
  }
  const longest = holds.reduce((a, h) => (a === null || h.ms > a.ms ? h : a), null);
  const q = (v) => {
    const [p50, p90, max] = quantiles(v, [0.5, 0.9, 1]).map((us) => us / 1000);
    return { n: v.length, p50, p90, max };
  };
  return {
    congestionControl: cc,
    datagramPackets: sent.length,
    packetsWithoutDatagram: ackOnly,
    packetsLost: lost,
    delayAfterFirstMs: byPosition.map((v, i) => v && { position: i + 1, ...q(v) }).filter(Boolean),
    holds: { n: holds.length, longestMs: longest?.ms ?? 0, releasedAfterLongest: longest?.released ?? 0 },
  };
}

if (process.argv[1] && import.meta.url === `file://${process.argv[1]}`) {
  const files = process.argv.slice(2);
  if (files.length === 0) {
    console.error('usage: node bench/chromium-netlog.mjs netlog.json …');
    process.exit(2);
  }
  for (const f of files) console.log(JSON.stringify({ file: f, ...summarizeNetlog(parseNetlog(readFileSync(f, 'utf8'))) }));
}
