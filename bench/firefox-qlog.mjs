// Summarises the qlog Firefox writes for a WebTransport session (pref
// `network.http.http3.enable_qlog`, which `RICOCHET_FIREFOX_QLOG=1 node
// bench/s1.mjs …` sets on the Firefox rows; Firefox writes
// $TMPDIR/qlog_<pid>/*.sqlog): its QUIC stack's congestion window and bytes
// in flight, how many DATAGRAM frames each QUIC packet carried, and how many
// packets it declared lost. Compared with the datagrams the SDK handed the
// browser (`SDK packets out` in the S1 tables), the datagrams on the wire
// tell how many the browser dropped before sending.
//   node bench/firefox-qlog.mjs [file.sqlog | dir …]   (default: every $TMPDIR/qlog_*)
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { quantiles } from './s1-stats.mjs';

/** One qlog (JSON-SEQ: records separated by RS) → its summary. */
export function summarizeQlog(text) {
  const cwnd = [];
  const inFlight = [];
  const perPacket = new Map();
  let lost = 0;
  for (const rec of text.split('\x1e')) {
    let e;
    try {
      e = JSON.parse(rec);
    } catch {
      continue;
    }
    // Event names as neqo's qlog (draft 0.3) writes them, and as later drafts name them.
    const name = String(e.name).replace(/^quic:/, '');
    if (name === 'recovery:metrics_updated' || name === 'recovery_metrics_updated') {
      if (e.data.congestion_window !== undefined) cwnd.push(e.data.congestion_window);
      if (e.data.bytes_in_flight !== undefined) inFlight.push(e.data.bytes_in_flight);
    } else if (name === 'transport:packet_sent' || name === 'packet_sent') {
      const n = (e.data.frames ?? []).filter((f) => String(f.frame_type).includes('datagram')).length;
      perPacket.set(n, (perPacket.get(n) ?? 0) + 1);
    } else if (name === 'recovery:packet_lost' || name === 'packet_lost') lost++;
  }
  if (perPacket.size === 0) throw new Error('no packet_sent events: not a qlog this script can read (event names changed?)');
  const ps = [0.1, 0.5, 0.9, 0.99];
  let datagrams = 0;
  for (const [n, count] of perPacket) datagrams += n * count;
  return {
    cwndBytes: quantiles(cwnd, ps),
    bytesInFlight: quantiles(inFlight, ps),
    quantiles: ps,
    datagramsPerPacket: Object.fromEntries([...perPacket].sort((a, b) => a[0] - b[0])),
    datagramsOnWire: datagrams,
    packetsLost: lost,
  };
}

function qlogFiles(args) {
  const roots = args.length ? args : readdirSync(tmpdir()).filter((d) => d.startsWith('qlog_')).map((d) => join(tmpdir(), d));
  return roots.flatMap((p) => (statSync(p).isDirectory() ? readdirSync(p).filter((f) => f.endsWith('.sqlog')).map((f) => join(p, f)) : [p]));
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const files = qlogFiles(process.argv.slice(2)).sort((a, b) => statSync(a).mtimeMs - statSync(b).mtimeMs);
  for (const f of files) console.log(JSON.stringify({ file: f, ...summarizeQlog(readFileSync(f, 'utf8')) }));
}
