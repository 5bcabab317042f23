// Summarises a Chromium net log of a WebTransport session (written when
// `RICOCHET_CHROMIUM_NETLOG=DIR node bench/s1.mjs …` runs the Chromium rows;
// e2e/netem-stack.ts): the congestion controller Chromium's QUIC stack chose,
// how long after the first datagram of a burst (a game tick's datagrams,
// handed over back to back) each later one left, and how many QUIC packets it
// declared lost or sent without a datagram (its own ACKs). The SDK writes a
// tick's datagrams at once; a delay here is the browser's pacing.
//   node bench/chromium-netlog.mjs file.json …
import { readFileSync } from 'node:fs';
import { quantiles } from './s1-stats.mjs';

/** A new burst starts after this much silence (ticks are 16.7 ms apart). */
const BURST_GAP_US = 5_000;

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
