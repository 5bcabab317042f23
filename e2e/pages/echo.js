// Test page: connects through the relay to the native echo server and
// exchanges self-checking traffic. Driven by Playwright via window.ricochetEcho.
import { Connection, openTransport } from '/sdk/index.js';
import { relayInfo } from './relay-info.js';

const log = (s) => (document.getElementById('log').textContent += `\n${s}`);

function payload(channel, seq, len) {
  const b = new Uint8Array(len);
  const v = new DataView(b.buffer);
  v.setUint32(0, seq, true);
  b[4] = channel;
  for (let i = 5; i < len; i++) b[i] = (seq * 13 + i * 7 + channel) & 0xff;
  return b;
}
function intact(b) {
  const seq = new DataView(b.buffer, b.byteOffset).getUint32(0, true);
  const want = payload(b[4], seq, b.length);
  for (let i = 0; i < b.length; i++) if (b[i] !== want[i]) return false;
  return true;
}
const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] : null;
};
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

window.ricochetEcho = async (o) => {
  if (o.disableWebTransport) delete globalThis.WebTransport;
  const info = await relayInfo(o.relayHttp, log);
  const q = `?token=${encodeURIComponent(o.token)}`;
  const transportOptions = (force) => ({
    webTransportUrl: (o.webTransportUrl ?? info.webTransportUrl) && (o.webTransportUrl ?? info.webTransportUrl) + q,
    serverCertificateHashes: info.certHashes,
    webSocketUrl: info.webSocketUrl + q,
    ...(o.deadlineMs ? { deadlineMs: o.deadlineMs } : {}),
    ...(o.stallTimeoutMs !== undefined ? { stallTimeoutMs: o.stallTimeoutMs } : {}),
    ...(force ? { force } : {}),
  });
  const choice = await openTransport(transportOptions(o.force));
  log(`transport ${choice.kind} in ${choice.elapsedMs.toFixed(1)} ms ${choice.fallbackReason ?? ''}`);
  // With o.resume, a dead transport is replaced by a new one with the same token.
  const resumeKinds = [];
  const reconnect = async () => {
    const c = await openTransport(transportOptions(o.resumeForce));
    resumeKinds.push(c.kind);
    return c.transport;
  };
  const conn = new Connection(choice.transport, {
    channels: ['reliable-ordered', 'reliable-ordered', 'unreliable'],
    handshake: 'e2e',
    ...(o.resume ? { reconnect } : {}),
  });
  const events = [];
  conn.on('reconnecting', (e) => events.push({ type: 'reconnecting', at: performance.now(), reason: e.reason }));
  conn.on('resumed', (e) => events.push({ type: 'resumed', at: performance.now(), ...e }));
  await conn.ready;
  const per = o.reliablePerChannel ?? 2000;
  const unrel = o.unreliable ?? 500;
  const got = [[], [], []];
  let corrupt = 0;
  const sentAt = new Map();
  const rtts = [];
  let lastAt0 = 0;
  let maxGapMs = 0;
  let phase2 = false;
  conn.on('message', ({ channel, data }) => {
    if (!intact(data)) corrupt++;
    const seq = new DataView(data.buffer, data.byteOffset).getUint32(0, true);
    got[channel].push(seq);
    if (channel === 0) {
      const now = performance.now();
      // Longest wait between deliveries on the ordered channel while it streams.
      if (phase2 && lastAt0) maxGapMs = Math.max(maxGapMs, now - lastAt0);
      lastAt0 = now;
    }
    if (channel === 0 && sentAt.has(seq)) rtts.push(performance.now() - sentAt.get(seq));
  });
  const receipts = new Map();
  conn.on('acked', (e) => receipts.set(e.id, (receipts.get(e.id) ?? '') + 'a'));
  conn.on('lost', (e) => receipts.set(e.id, (receipts.get(e.id) ?? '') + 'l'));
  const ids = [];
  // Phase 1: latency, one message at a time.
  const pings = o.pings ?? 200;
  for (let i = 0; i < pings; i++) {
    sentAt.set(i, performance.now());
    ids.push(conn.send(0, payload(0, i, 64)));
    conn.flush();
    const t0 = performance.now();
    while (got[0].length <= i && performance.now() - t0 < 2000) await sleep(1);
  }
  // Phase 2: volume on two ordered channels plus unreliable, at 60 Hz ticks.
  let s0 = pings, s1 = 0, su = 0;
  // Message sizes in phase 2 per channel (ordered, ordered, unreliable).
  const sizes = o.sizes ?? [120, 300, 80];
  let tick = 0;
  phase2 = true;
  while (s0 < pings + per || s1 < per || su < unrel) {
    // Mid-session disruptions: the relay cuts the transport, or the page switches it.
    if (tick === o.killAtTick) fetch(`${o.relayHttp}/test/kill-transports`, { method: 'POST' }).catch((e) => log(`kill failed: ${e}`));
    if (tick === o.switchAtTick) openTransport(transportOptions(o.switchTo)).then((c) => (resumeKinds.push(c.kind), conn.switchTransport(c.transport)));
    tick++;
    for (let k = 0; k < 40 && s0 < pings + per; k++) ids.push(conn.send(0, payload(0, s0++, sizes[0])));
    for (let k = 0; k < 40 && s1 < per; k++) ids.push(conn.send(1, payload(1, s1++, sizes[1])));
    for (let k = 0; k < 10 && su < unrel; k++) ids.push(conn.send(2, payload(2, su++, sizes[2])));
    await sleep(16);
  }
  const deadline = performance.now() + 20_000;
  while ((got[0].length < pings + per || got[1].length < per || receipts.size < ids.length) && performance.now() < deadline) await sleep(20);
  phase2 = false;
  await sleep(300);
  const inOrder = (xs, n) => xs.length === n && xs.every((v, i) => v === i);
  const stats = conn.stats();
  conn.close(1000, 'done');
  return {
    kind: choice.kind,
    fallbackReason: choice.fallbackReason ?? null,
    transportMs: choice.elapsedMs,
    maxDatagramSize: choice.transport.maxDatagramSize,
    // WebTransport only: datagrams the SDK itself dropped (pacing queue full, over maxDatagramSize).
    transportDrops: { dropped: conn.transport.dropped ?? null, oversized: conn.transport.oversized ?? null },
    ordered0: inOrder(got[0], pings + per),
    ordered1: inOrder(got[1], per),
    received: got.map((g) => g.length),
    unreliableSent: unrel,
    corrupt,
    messages: ids.length,
    receipts: receipts.size,
    doubleReceipts: [...receipts.values()].filter((r) => r.length !== 1).length,
    lost: [...receipts.values()].filter((r) => r === 'l').length,
    rttP50: pct(rtts, 50),
    rttP99: pct(rtts, 99),
    retransmissions: stats.retransmissions,
    events: events.map(({ at, ...e }) => e),
    resumeKinds,
    maxGapMs,
    finalKind: conn.transport.kind,
    // The first transport (WebTransport): which datagram writer it used, whether it stalled.
    firstTransport: {
      kind: choice.transport.kind,
      datagramWriter: choice.transport.datagramWriter ?? null,
      stalled: choice.transport.stalled ?? null,
      maxInFlight: choice.transport.maxInFlight ?? null,
    },
    eventTimes: events.map((e) => ({ type: e.type, at: e.at })),
  };
};
log('ready');
