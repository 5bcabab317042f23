// Scenario S3's loop in wasm, the same as wasm/core/examples/bench_s3.rs,
// through the bindings as the SDK drives them (sdk/src/heap.ts, `CorePort`):
// bytes copied through views into wasm memory, each core's input buffer
// reserved once, a drain's datagrams and events taken a batch per boundary
// call, time as a JS number. Shared by Node (s3-wasm.mjs) and the browsers
// (s3-browser.mjs), so that each runs the same JavaScript.
//
// runS3({ load, messages, size, perTick, clientModule }) resolves to one
// result object. `load(name)` resolves to { glue, bytes }: the module's
// wasm-bindgen glue (imported) and its .wasm bytes. The client module is
// `ricochet_wasm` (the full module) or `ricochet_client` (what browsers
// load); the server side is always the full module, each in its own instance
// and memory. `s3_core` runs the loop inside wasm instead (`runCore`).

// The batch layout: BATCH in sdk/src/wasm-codes.ts (generated from wasm/wasm/src/batch.rs).
const { RECORDS, HEADER_WORDS, TX_WORDS, EV_WORDS } = { RECORDS: 32, HEADER_WORDS: 1, TX_WORDS: 4, EV_WORDS: 8 };
const TX_AT = HEADER_WORDS;
const EV_AT = TX_AT + RECORDS * TX_WORDS;

/** One instance of module `name`: its glue and a view of its memory kept fresh as the SDK's Heap does. */
async function instance(load, name) {
  const { glue, bytes } = await load(name);
  const { memory } = glue.initSync({ module: bytes });
  // As the SDK's Heap: a grown memory detaches the old buffer, whose views
  // then read undefined at any index (cheaper than testing memory.buffer).
  const heap = { view: new Uint8Array(memory.buffer), words: new Uint32Array(memory.buffer) };
  heap.fresh = () => {
    if (heap.words[0] === undefined) {
      heap.view = new Uint8Array(memory.buffer);
      heap.words = new Uint32Array(memory.buffer);
    }
  };
  return { glue, heap };
}

/** What the SDK's CorePort does, reduced to this loop's needs. */
class Port {
  constructor(core, { heap }) {
    this.core = core;
    this.heap = heap;
    this.txView = this.txViewOf = null;
    this.txViewPtr = 0;
    this.table = core.tablePtr() >>> 2;
    this.ioCap = 2048;
    this.ioPtr = core.ioReserve(this.ioCap);
    this.txAt = this.txEnd = this.evAt = this.evEnd = 0;
    this.txShort = this.evShort = false;
    this.txNow = -1;
    this.txEpoch = this.evEpoch = 0;
  }
  writeIn(bytes) {
    if (bytes.length > this.ioCap) this.ioPtr = this.core.ioReserve((this.ioCap = bytes.length));
    this.heap.fresh();
    this.heap.view.set(bytes, this.ioPtr);
    return bytes.length;
  }
  nextDatagram(now) {
    const heap = this.heap;
    heap.fresh();
    if (this.txAt >= this.txEnd) {
      if (this.txShort && this.txNow === now && heap.words[this.table] === this.txEpoch) return null;
      const n = this.core.transmit(now, RECORDS);
      heap.fresh();
      this.txAt = 0;
      this.txEnd = n;
      this.txShort = n < RECORDS;
      this.txNow = now;
      this.txEpoch = heap.words[this.table];
      if (n === 0) return null;
    }
    const w = heap.words;
    const r = this.table + TX_AT + this.txAt++ * TX_WORDS;
    const ptr = w[r];
    const len = w[r + 1];
    let v = this.txView;
    if (v === null || this.txViewPtr !== ptr || v.length !== len || this.txViewOf !== heap.view) {
      v = this.txView = heap.view.subarray(ptr, ptr + len);
      this.txViewOf = heap.view;
      this.txViewPtr = ptr;
    }
    return v;
  }
  nextEvent() {
    const heap = this.heap;
    heap.fresh();
    if (this.evAt >= this.evEnd) {
      if (this.evShort && heap.words[this.table] === this.evEpoch) return 0;
      const n = this.core.takeEvents(RECORDS);
      heap.fresh();
      this.evAt = 0;
      this.evEnd = n;
      this.evShort = n < RECORDS;
      this.evEpoch = heap.words[this.table];
      if (n === 0) return 0;
    }
    const w = heap.words;
    const r = this.table + EV_AT + this.evAt++ * EV_WORDS;
    this.evConn = w[r + 1];
    return w[r];
  }
}

// The counters, module-level; the cores and ports go in as arguments.
let bytes = 0, datagrams = 0, acked = 0, delivered = 0;

/** Hands every datagram due from one side to the other; returns how many. */
function pass(to, fromPort, toPort, now) {
  let n = 0;
  for (let d = fromPort.nextDatagram(now); d !== null; d = fromPort.nextDatagram(now)) {
    to.handleDatagram(now, toPort.writeIn(d));
    bytes += d.length;
    n++;
  }
  return n;
}

// Each side drains as the core's run loop says a host does after its inputs
// (wasm/core/src/lib.rs; the SDK's Connection.drain_): datagrams until none
// (handed to the other side), then events, then the timer if it is due (and
// what firing it made), as bench_s3.rs does.
function drainClient(client, server, cp, sp, now) {
  let fired = false;
  for (;;) {
    datagrams += pass(server, cp, sp, now);
    for (let k = cp.nextEvent(); k !== 0; k = cp.nextEvent()) if (k === 3) acked++;
    const ct = client.pollTimeout();
    if (fired || !(ct >= 0 && ct <= now)) return;
    client.handleTimeout(now);
    fired = true;
  }
}
/** Returns whether the client got datagrams. */
function drainServer(client, server, cp, sp, now) {
  let fired = false;
  let out = 0;
  for (;;) {
    out += pass(client, sp, cp, now);
    for (let k = sp.nextEvent(); k !== 0; k = sp.nextEvent()) if (k === 2) delivered++;
    const st = server.pollTimeout();
    if (fired || !(st >= 0 && st <= now)) return out > 0;
    server.handleTimeout(now);
    fired = true;
  }
}

export async function runS3({ load, messages = 1_000_000, size = 100, perTick = 1, clientModule = 'ricochet_wasm' }) {
  if (clientModule === 's3_core') return runCore({ load, messages, size, perTick });
  const full = await instance(load, 'ricochet_wasm');
  const side = clientModule === 'ricochet_wasm' ? full : await instance(load, clientModule);

  const clientConfig = new side.glue.ConfigInput();
  const entropyAt = clientConfig.ioReserve(20);
  side.heap.fresh();
  side.heap.view.set(crypto.getRandomValues(new Uint8Array(20)), entropyAt); // no handshake
  const client = new side.glue.Client(clientConfig, 0, 20);
  const server = new full.glue.Server(new full.glue.ConfigInput(), crypto.getRandomValues(new Uint8Array(32)));
  const cp = new Port(client, side);
  const sp = new Port(server, full);
  bytes = datagrams = acked = delivered = 0;

  let now = 0;
  while (client.state() !== 1) {
    now += 1000;
    pass(server, cp, sp, now);
    for (let k = sp.nextEvent(); k !== 0; k = sp.nextEvent()) if (k === 6) server.accept(now, sp.evConn);
    pass(client, sp, cp, now);
    while (cp.nextEvent() !== 0);
  }

  const payload = new Uint8Array(size).fill(0xab);
  let sent = 0;
  bytes = 0;
  const t0 = performance.now();
  while (acked < messages) {
    now += 100;
    for (let i = 0; i < perTick && sent < messages; i++) {
      if (client.send(now, 0, cp.writeIn(payload)) < 0) throw new Error('send refused');
      sent++;
    }
    do drainClient(client, server, cp, sp, now);
    while (drainServer(client, server, cp, sp, now));
  }
  const seconds = (performance.now() - t0) / 1000;
  if (delivered !== messages) throw new Error(`delivered ${delivered} of ${messages}`);
  return result({ clientModule, messages, size, perTick, seconds, datagrams, bytes });
}

function result({ clientModule, messages, size, perTick, seconds, datagrams, bytes }) {
  return {
    impl: 'wasm',
    client_module: clientModule,
    messages,
    size,
    per_tick: perTick,
    seconds: +seconds.toFixed(4),
    ns_per_message: +((seconds * 1e9) / messages).toFixed(1),
    messages_per_sec: Math.round(messages / seconds),
    datagrams,
    wire_bytes_per_payload_byte: +(bytes / (messages * size)).toFixed(4),
  };
}

/**
 * The same loop inside wasm (`s3_core`, bench/s3-core.mjs: bench_s3.rs's
 * loop with plain exports): one call runs it all, so what this measures is
 * the core alone in the engine's wasm compiler. `load('s3_core')` resolves
 * to { bytes }.
 */
async function runCore({ load, messages, size, perTick }) {
  const { bytes: code } = await load('s3_core');
  const { instance } = await WebAssembly.instantiate(code, {});
  const core = instance.exports;
  // A function running when its optimised code arrives keeps running the
  // baseline code (wasm has no on-stack replacement), and this loop is one
  // call: so a warm-up run first, then the timed one on a fresh connection.
  core.s3_connect();
  core.s3_run(Math.min(messages, 50_000), size, perTick);
  core.s3_connect();
  const t0 = performance.now();
  const n = core.s3_run(messages, size, perTick);
  const seconds = (performance.now() - t0) / 1000;
  if (n !== messages) throw new Error(`delivered ${n} of ${messages}`);
  return result({ clientModule: 's3_core', messages, size, perTick, seconds, datagrams: core.s3_datagrams(), bytes: core.s3_wire_bytes() });
}
