#!/usr/bin/env node
// The SDK without any network: a client and a server exchange game traffic
// through the core's network simulator in real time (loopbackPair), and
// print what happens: chat on a reliable channel, positions on an
// unreliable one, receipts and stats. Usage: node sdk/examples/live-demo.mjs [profile] [seconds]
import { Connection, NETWORK_PROFILES, Server } from '../dist/index.js';
import { loopbackPair } from '../dist/simulator.js';

const profile = process.argv[2] ?? 'mobile_lossy';
const seconds = Number(process.argv[3] ?? 6);
if (!NETWORK_PROFILES.includes(profile)) {
  console.error(`unknown profile ${profile}; pick one of ${NETWORK_PROFILES.join(', ')}`);
  process.exit(1);
}

const enc = new TextEncoder();
const dec = new TextDecoder();
const { client: clientEnd, server: serverEnd } = loopbackPair({ network: profile, seed: 42 });

const server = new Server({
  onConnectRequest: ({ payload }) => (dec.decode(payload) === 'demo-token' ? true : 'bad token'),
});
server.attach(serverEnd);
let positions = 0;
server.on('connection', ({ id }) => console.log(`[server] player ${id.toString(16)} joined`));
server.on('message', ({ id, channel, data }) => {
  if (channel === 0) {
    const text = dec.decode(data);
    console.log(`[server] chat: ${text}`);
    server.send(id, 0, enc.encode(`echo: ${text}`));
  } else positions++;
});
server.on('disconnect', (d) => console.log(`[server] player left: ${d.kind} ${d.closeCode} "${d.reason}"`));

const conn = new Connection(clientEnd, {
  handshake: 'demo-token',
  channels: [{ kind: 'reliable-ordered', name: 'chat' }, { kind: 'unreliable-sequenced', name: 'position' }],
});
let acked = 0;
let lost = 0;
conn.on('acked', () => acked++);
conn.on('lost', () => lost++);
conn.on('message', ({ data }) => console.log(`[client] ${dec.decode(data)}`));
conn.on('close', (c) => console.log(`[client] closed: ${c.kind} (${c.code}) "${c.reason}"`));

console.log(`Ricochet live demo over the simulated "${profile}" network for ${seconds} s`);
const t0 = performance.now();
await conn.ready;
console.log(`[client] connected in ${(performance.now() - t0).toFixed(1)} ms`);

let tick = 0;
const game = setInterval(() => {
  tick++;
  const pos = new Uint8Array(8);
  new DataView(pos.buffer).setFloat32(0, Math.cos(tick / 10), true);
  new DataView(pos.buffer).setFloat32(4, Math.sin(tick / 10), true);
  conn.send('position', pos);
  if (tick % 60 === 1) conn.send('chat', enc.encode(`hello #${Math.ceil(tick / 60)} from the client`));
}, 1000 / 60);

const report = setInterval(() => {
  const s = conn.stats();
  console.log(
    `[stats] rtt ${s.rttMs.toFixed(1)} ms ±${s.rttVarMs.toFixed(1)} | loss out ${(s.lossOut * 100).toFixed(1)}% in ${(s.lossIn * 100).toFixed(1)}% | ` +
      `retransmits ${s.retransmissions} | positions at server ${positions}/${tick} | receipts ${acked} acked, ${lost} lost`,
  );
}, 1000);

setTimeout(() => {
  clearInterval(game);
  clearInterval(report);
  conn.close(1000, 'demo over');
  setTimeout(() => {
    server.shutdown();
    process.exit(0);
  }, 500);
}, seconds * 1000);
