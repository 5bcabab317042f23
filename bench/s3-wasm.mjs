// Scenario S3 in wasm inside Node: the same loop as wasm/core/examples/bench_s3.rs,
// through the SDK's bindings (bytes copied through views into wasm memory,
// time as a JS number). Prints one JSON line.
//   node bench/s3-wasm.mjs [messages] [size] [perTick] [client module]
// The client module is `ricochet_wasm` (the full module, Node's) or
// `ricochet_client` (what browsers load); the server side is always the full
// module, each in its own instance and memory.
import { readFileSync } from 'node:fs';

const args = process.argv.slice(2);
const [messages = 1_000_000, size = 100, perTick = 1] = args.slice(0, 3).map(Number);
const clientModule = args[3] ?? 'ricochet_wasm';

async function instance(name) {
  const glue = await import(`../sdk/wasm/${name}.js`);
  const { memory } = glue.initSync({ module: readFileSync(new URL(`../sdk/wasm/${name}_bg.wasm`, import.meta.url)) });
  let heap = new Uint8Array(memory.buffer);
  const mem = () => (heap.buffer === memory.buffer ? heap : (heap = new Uint8Array(memory.buffer)));
  return { glue, mem };
}
const full = await instance('ricochet_wasm');
const side = clientModule === 'ricochet_wasm' ? full : await instance(clientModule);

const client = new side.glue.Client(new side.glue.ConfigInput(), 0, crypto.getRandomValues(new Uint8Array(20)), new Uint8Array(0));
const server = new full.glue.Server(new full.glue.ConfigInput(), crypto.getRandomValues(new Uint8Array(32)));
client.mem = side.mem;
server.mem = full.mem;
const mem = side.mem; // the client's memory, where sends are written

function pass(from, to, now, serverSide) {
  let bytes = 0;
  let datagrams = 0;
  for (let n = from.pollTransmit(now); n >= 0; n = from.pollTransmit(now)) {
    const ptr = to.ioReserve(n);
    const src = from.txPtr();
    to.mem().set(from.mem().subarray(src, src + n), ptr);
    to.handleDatagram(now, n);
    bytes += n;
    datagrams++;
  }
  return [bytes, datagrams];
}

let now = 0;
while (client.state() !== 1) {
  now += 1000;
  pass(client, server, now);
  for (let k = server.pollEvent(); k !== 0; k = server.pollEvent()) if (k === 6) server.accept(now, server.eventConn());
  pass(server, client, now);
  while (client.pollEvent() !== 0);
}

const payload = new Uint8Array(size).fill(0xab);
let sent = 0, delivered = 0, acked = 0, wire = 0, datagrams = 0;
const t0 = performance.now();
while (acked < messages) {
  now += 100;
  for (let i = 0; i < perTick && sent < messages; i++) {
    const ptr = client.ioReserve(size);
    mem().set(payload, ptr);
    if (client.send(now, 0, size) < 0) throw new Error('send refused');
    sent++;
  }
  const [b1, d1] = pass(client, server, now);
  wire += b1;
  datagrams += d1;
  for (let k = server.pollEvent(); k !== 0; k = server.pollEvent()) if (k === 2) delivered++;
  const st = server.pollTimeout();
  if (st >= 0 && st <= now) server.handleTimeout(now);
  wire += pass(server, client, now)[0];
  for (let k = client.pollEvent(); k !== 0; k = client.pollEvent()) if (k === 3) acked++;
  const ct = client.pollTimeout();
  if (ct >= 0 && ct <= now) client.handleTimeout(now);
}
const seconds = (performance.now() - t0) / 1000;
if (delivered !== messages) throw new Error(`delivered ${delivered} of ${messages}`);
console.log(
  JSON.stringify({
    impl: 'wasm',
    client_module: clientModule,
    messages,
    size,
    per_tick: perTick,
    seconds: +seconds.toFixed(4),
    ns_per_message: +((seconds * 1e9) / messages).toFixed(1),
    messages_per_sec: Math.round(messages / seconds),
    datagrams,
    wire_bytes_per_payload_byte: +(wire / (messages * size)).toFixed(4),
  }),
);
