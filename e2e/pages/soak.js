// Soak page (scenario S4): one connection through the relay to the native
// echo server, a 60 Hz tick loop, every message self-checking. Driven by
// bench/soak/soak.mjs through window.ricochetSoak. It keeps counters and
// fixed-size histograms only (no per-message history), so its own memory
// stays flat however long it runs.

// The SDK's wasm memory size is the core's heap high-water mark: capture the
// memory as the SDK instantiates it (at import), so it can be sampled.
const wasmMemories = [];
const RealInstance = WebAssembly.Instance;
WebAssembly.Instance = new Proxy(RealInstance, {
  construct(target, args) {
    const instance = new target(...args);
    if (instance.exports.memory instanceof WebAssembly.Memory) wasmMemories.push(instance.exports.memory);
    return instance;
  },
});
const { Connection, openTransport } = await import('/sdk/index.js');
const { relayInfo } = await import('./relay-info.js');

const TICK_MS = 1000 / 60;
/** Channel layout; the echo server answers on the channel a message came in on. */
const TICK = 0; // reliable-ordered, one message every tick
const BULK = 1; // reliable-ordered, 6 KB (five or six datagrams) on 10 % of ticks
const INPUT = 2; // unreliable-sequenced, on 10 % of ticks
const CHANNELS = [
  { kind: 'reliable-ordered', name: 'tick' },
  { kind: 'reliable-ordered', name: 'bulk' },
  { kind: 'unreliable-sequenced', name: 'input' },
];
const ORDERED = [TICK, BULK];

// Self-checking payloads: [seq u32 LE][channel u8][pattern…], length and
// pattern derived from (channel, seq), so truncation, corruption, a swap
// between channels or a wrong message are all detected at the receiver.
const lengthFor = (channel, seq) =>
  channel === TICK ? 32 + ((seq * 37) % 400) : channel === BULK ? 6144 - ((seq * 13) % 256) : 16 + ((seq * 11) % 120);
const patternByte = (channel, seq, i) => (seq * 131 + i * 7 + channel * 29) & 0xff;

function payload(channel, seq) {
  const b = new Uint8Array(lengthFor(channel, seq));
  new DataView(b.buffer).setUint32(0, seq, true);
  b[4] = channel;
  for (let i = 5; i < b.length; i++) b[i] = patternByte(channel, seq, i);
  return b;
}

/** The sequence number of an intact payload for `channel`, or -1. */
function check(channel, b) {
  if (b.length < 5 || b[4] !== channel) return -1;
  const seq = new DataView(b.buffer, b.byteOffset, b.byteLength).getUint32(0, true);
  if (b.length !== lengthFor(channel, seq)) return -1;
  for (let i = 5; i < b.length; i++) if (b[i] !== patternByte(channel, seq, i)) return -1;
  return seq;
}

/** The checker must catch what it exists to catch; run before every soak. */
function checkerSelfTest() {
  const good = payload(BULK, 12345);
  const flipped = good.slice();
  flipped[3000] ^= 1;
  const failures = [];
  if (check(BULK, good) !== 12345) failures.push('intact payload rejected');
  if (check(BULK, flipped) !== -1) failures.push('flipped byte accepted');
  if (check(BULK, good.subarray(0, good.length - 1)) !== -1) failures.push('truncation accepted');
  if (check(TICK, good) !== -1) failures.push('wrong channel accepted');
  return failures;
}

/** Seeded PRNG (mulberry32): the same seed gives the same traffic mix. */
function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Round-trip times in 1 ms bins: fixed memory for any run length. */
class Histogram {
  constructor(maxMs = 10_000) {
    this.bins = new Uint32Array(maxMs + 1);
    this.count = 0;
    this.max = 0;
  }
  add(ms) {
    this.bins[Math.min(this.bins.length - 1, Math.floor(ms))]++;
    this.count++;
    this.max = Math.max(this.max, ms);
  }
  percentile(p) {
    let want = Math.ceil((p / 100) * this.count);
    for (let i = 0; i < this.bins.length; i++) if ((want -= this.bins[i]) <= 0) return i;
    return null;
  }
  summary() {
    return { count: this.count, p50: this.percentile(50), p99: this.percentile(99), p999: this.percentile(99.9), max: +this.max.toFixed(1) };
  }
}

const log = (s) => (document.getElementById('log').textContent += `\n${s}`);

function newChannelCounters() {
  return { sent: 0, delivered: 0, next: 0, misordered: 0, corrupt: 0, acked: 0, lostReceipts: 0, sendErrors: 0, lastSeq: -1 };
}

let soak = null;

async function start(o) {
  const selfTest = checkerSelfTest();
  if (selfTest.length) throw new Error(`payload checker self-test failed: ${selfTest.join(', ')}`);
  const info = await relayInfo(o.relayHttp, log);
  const q = `?token=${encodeURIComponent(o.token)}`;
  const choice = await openTransport({
    webTransportUrl: info.webTransportUrl + q,
    serverCertificateHashes: info.certHashes,
    webSocketUrl: info.webSocketUrl + q,
    force: o.transport,
  });
  const conn = new Connection(choice.transport, { channels: CHANNELS, handshake: 'soak', fec: o.fec });
  const s = {
    conn,
    kind: choice.kind,
    random: rng(o.seed),
    channels: CHANNELS.map(newChannelCounters),
    receipts: new Map(), // message id → channel, until its receipt
    doubleReceipts: 0,
    sentAt: ORDERED.map(() => new Map()), // seq → send time, until delivered
    rtt: ORDERED.map(() => new Histogram()),
    running: true,
    startAt: 0,
    stoppedAt: 0,
    scheduleBase: 0, // tick n is due at scheduleBase + n × TICK_MS
    ticks: 0,
    tickResets: 0,
    maxTickLateMs: 0,
    maxTickLateAt: 0,
    lastTickDelivery: 0,
    stall: { maxGapMs: 0, atSeconds: 0, over100ms: 0, over250ms: 0 },
    closed: null,
    timer: null,
  };
  conn.on('close', (e) => (s.closed = { kind: e.kind, code: e.code, closeCode: e.closeCode, reason: e.reason }));
  conn.on('message', ({ channel, data }) => onMessage(s, channel, data));
  const receipt = (field) => (e) => {
    const channel = s.receipts.get(e.id);
    if (channel === undefined) return void s.doubleReceipts++;
    s.receipts.delete(e.id);
    s.channels[channel][field]++;
  };
  conn.on('acked', receipt('acked'));
  conn.on('lost', receipt('lostReceipts'));
  await conn.ready;
  log(`${choice.kind} connected`);
  s.startAt = s.scheduleBase = performance.now();
  soak = s;
  scheduleTick(s);
  return { kind: choice.kind, visibility: document.visibilityState };
}

function onMessage(s, channel, data) {
  const now = performance.now();
  const c = s.channels[channel];
  if (!c) return;
  const seq = check(channel, data);
  if (seq < 0) return void c.corrupt++;
  c.delivered++;
  if (channel === INPUT) {
    // Sequenced: never an older (or the same) message after a newer one.
    if (seq <= c.lastSeq) c.misordered++;
    c.lastSeq = Math.max(c.lastSeq, seq);
    return;
  }
  if (seq === c.next) c.next++;
  else c.misordered++;
  const k = ORDERED.indexOf(channel);
  const at = s.sentAt[k].get(seq);
  if (at !== undefined) {
    s.rtt[k].add(now - at);
    s.sentAt[k].delete(seq);
  }
  if (channel === TICK) {
    // A stall: the longest wait between deliveries on the every-tick channel while it streams.
    if (s.running && s.lastTickDelivery) {
      const gap = now - s.lastTickDelivery;
      if (gap > s.stall.maxGapMs) s.stall = { ...s.stall, maxGapMs: gap, atSeconds: (now - s.startAt) / 1000 };
      if (gap > 100) s.stall.over100ms++;
      if (gap > 250) s.stall.over250ms++;
    }
    s.lastTickDelivery = now;
  }
}

function send(s, channel) {
  const c = s.channels[channel];
  const seq = c.sent;
  try {
    const id = s.conn.send(channel, payload(channel, seq));
    s.receipts.set(id, channel);
    c.sent++;
    const k = ORDERED.indexOf(channel);
    if (k >= 0) s.sentAt[k].set(seq, performance.now());
  } catch (e) {
    c.sendErrors++;
    s.lastSendError = e.code ?? String(e);
  }
}

function scheduleTick(s) {
  if (!s.running) return;
  const due = s.scheduleBase + s.ticks * TICK_MS;
  s.timer = setTimeout(() => onTick(s), Math.max(0, due - performance.now()));
}

function onTick(s) {
  if (!s.running || s.closed) return;
  const now = performance.now();
  const late = now - (s.scheduleBase + s.ticks * TICK_MS);
  if (late > s.maxTickLateMs) {
    s.maxTickLateMs = late;
    s.maxTickLateAt = (now - s.startAt) / 1000;
  }
  // A starved main thread resumes the 60 Hz schedule from now instead of bursting to catch up.
  if (late > 5 * TICK_MS) {
    s.scheduleBase = now - s.ticks * TICK_MS;
    s.tickResets++;
  }
  send(s, TICK);
  if (s.random() < 0.1) send(s, BULK);
  if (s.random() < 0.1) send(s, INPUT);
  s.ticks++;
  scheduleTick(s);
}

/** Counters and the SDK's view, cheap enough to take every few seconds. */
function snapshot(s = soak) {
  const st = s.conn.stats();
  const elapsed = ((s.running ? performance.now() : s.stoppedAt) - s.startAt) / 1000; // ticking time, drain excluded
  return {
    kind: s.kind,
    seconds: +elapsed.toFixed(1),
    ticks: s.ticks,
    tickHz: +(s.ticks / Math.max(elapsed, 1e-3)).toFixed(2),
    tickResets: s.tickResets,
    maxTickLateMs: +s.maxTickLateMs.toFixed(1),
    maxTickLateAtSeconds: +s.maxTickLateAt.toFixed(1),
    channels: s.channels.map(({ lastSeq, next, ...c }, i) => ({ name: CHANNELS[i].name, kind: CHANNELS[i].kind, ...c, missing: i === INPUT ? null : c.sent - next })),
    outstandingReceipts: s.receipts.size,
    doubleReceipts: s.doubleReceipts,
    rttMs: Object.fromEntries(ORDERED.map((ch, k) => [CHANNELS[ch].name, s.rtt[k].summary()])),
    stall: { ...s.stall, maxGapMs: +s.stall.maxGapMs.toFixed(1), atSeconds: +s.stall.atSeconds.toFixed(1) },
    wasmMemoryBytes: wasmMemories.reduce((n, m) => n + m.buffer.byteLength, 0),
    core: {
      rttMs: st.rttMs,
      lossIn: st.lossIn,
      residualLossIn: st.residualLossIn,
      lossOut: st.lossOut,
      fecRecovered: st.fecRecovered,
      fecRepairBytesOut: st.fecRepairBytesOut,
      retransmissions: st.retransmissions,
      packetsOut: st.packetsOut,
      packetsIn: st.packetsIn,
      bytesOut: st.bytesOut,
      payloadBytesOut: st.payloadBytesOut,
      duplicates: st.duplicates,
      sendBufferBytes: st.sendBufferBytes,
      recvBufferBytes: st.recvBufferBytes,
      bytesInFlight: st.bytesInFlight,
    },
    closed: s.closed,
    lastSendError: s.lastSendError ?? null,
  };
}

/** Stop ticking, wait for every reliable echo and every receipt (or the deadline), close. */
async function stop(drainMs) {
  const s = soak;
  s.running = false;
  s.stoppedAt = performance.now();
  clearTimeout(s.timer);
  const done = () => s.closed || (ORDERED.every((ch) => s.channels[ch].next >= s.channels[ch].sent) && s.receipts.size === 0);
  const deadline = performance.now() + drainMs;
  const t0 = performance.now();
  while (!done() && performance.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  const final = { ...snapshot(s), drainMs: +(performance.now() - t0).toFixed(0) };
  s.conn.close(1000, 'soak done');
  return final;
}

window.ricochetSoak = { start, snapshot: () => snapshot(), stop };
log('ready');
