#!/usr/bin/env node
// Traffic probe run inside a lab namespace (`ip netns exec NS node probe.mjs
// MODE ...`); Node builtins only. Prints JSON lines on stdout: an
// {"event":"listening"} when a server is ready, then one {"event":"result"}.
//
//   udp-recv  --port P [--max-ms T]                 record seq, one-way delay, arrival
//   udp-send  --to HOST:PORT --count N --pps R [--size B] [--max-ms T]
//   udp-echo  --port P [--max-ms T]                 send every datagram back
//   udp-ping  --to HOST:PORT --count N --pps R [--max-ms T]   round-trip times
//   tcp-sink  --port P [--max-ms T]                 bytes + sha256 of one connection
//   tcp-source --to HOST:PORT --bytes N [--max-ms T] deterministic bytes
//
// Servers end on stdin end-of-file or --max-ms, whichever is first. One-way
// delay is exact across namespaces: they share CLOCK_MONOTONIC (hrtime).
//
// Datagram layout: u32 seq, u32 zero, i64 send time (ns, monotonic), padding.

import { createHash } from 'node:crypto';
import dgram from 'node:dgram';
import net from 'node:net';

const HEADER = 16;

function parseArgs(argv) {
  const opts = {};
  for (let i = 0; i < argv.length; i += 2) {
    if (!argv[i].startsWith('--') || argv[i + 1] === undefined) throw new Error(`bad argument ${argv[i]}`);
    opts[argv[i].slice(2)] = argv[i + 1];
  }
  return opts;
}

function hostPort(s) {
  const i = s.lastIndexOf(':');
  return { host: s.slice(0, i), port: Number(s.slice(i + 1)) };
}

const print = (obj) => process.stdout.write(`${JSON.stringify(obj)}\n`);
const nowNs = () => process.hrtime.bigint();

/** Resolve on stdin EOF or after maxMs; servers stop on either. */
function untilDone(maxMs) {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, maxMs);
    process.stdin.on('end', () => {
      clearTimeout(timer);
      resolve();
    });
    process.stdin.on('error', () => {});
    process.stdin.resume();
  });
}

/** Call send(i) for i in [0, count) at `pps`, in 1 ms ticks. */
function paced(count, pps, maxMs, send) {
  return new Promise((resolve) => {
    const t0 = performance.now();
    let sent = 0;
    const tick = () => {
      const elapsed = performance.now() - t0;
      const due = Math.min(count, Math.floor((elapsed / 1000) * pps) + 1);
      while (sent < due) send(sent++);
      if (sent >= count || elapsed > maxMs) resolve({ sent, ms: performance.now() - t0 });
      else setTimeout(tick, 1);
    };
    tick();
  });
}

function datagram(seq, size) {
  const b = Buffer.alloc(Math.max(HEADER, size));
  b.writeUInt32BE(seq, 0);
  b.writeBigInt64BE(nowNs(), 8);
  return b;
}

async function udpRecv(o) {
  const sock = dgram.createSocket({ type: 'udp4', recvBufferSize: 4 << 20 });
  const seqs = [];
  const owdUs = [];
  const atUs = [];
  const sizes = [];
  let t0 = null;
  sock.on('message', (msg) => {
    const now = nowNs();
    if (msg.length < HEADER) return;
    t0 ??= now;
    seqs.push(msg.readUInt32BE(0));
    owdUs.push(Number(now - msg.readBigInt64BE(8)) / 1000);
    atUs.push(Number(now - t0) / 1000);
    sizes.push(msg.length);
  });
  await new Promise((r) => sock.bind(Number(o.port), r));
  print({ event: 'listening' });
  await untilDone(Number(o['max-ms'] ?? 60_000));
  sock.close();
  print({ event: 'result', seqs, owdUs, atUs, sizes });
}

async function udpSend(o) {
  const { host, port } = hostPort(o.to);
  const sock = dgram.createSocket({ type: 'udp4', sendBufferSize: 4 << 20 });
  let errors = 0;
  const r = await paced(Number(o.count), Number(o.pps), Number(o['max-ms'] ?? 60_000), (i) =>
    sock.send(datagram(i, Number(o.size ?? HEADER)), port, host, (e) => e && errors++),
  );
  await new Promise((res) => setTimeout(res, 50)); // let queued sends leave
  sock.close();
  print({ event: 'result', sent: r.sent, ms: r.ms, errors });
}

async function udpEcho(o) {
  const sock = dgram.createSocket({ type: 'udp4', recvBufferSize: 4 << 20 });
  let echoed = 0;
  sock.on('message', (msg, rinfo) => {
    echoed++;
    sock.send(msg, rinfo.port, rinfo.address);
  });
  await new Promise((r) => sock.bind(Number(o.port), r));
  print({ event: 'listening' });
  await untilDone(Number(o['max-ms'] ?? 60_000));
  sock.close();
  print({ event: 'result', echoed });
}

async function udpPing(o) {
  const { host, port } = hostPort(o.to);
  const sock = dgram.createSocket('udp4');
  const rttUs = [];
  sock.on('message', (msg) => {
    if (msg.length >= HEADER) rttUs.push(Number(nowNs() - msg.readBigInt64BE(8)) / 1000);
  });
  await new Promise((r) => sock.bind(0, r));
  const maxMs = Number(o['max-ms'] ?? 60_000);
  const r = await paced(Number(o.count), Number(o.pps), maxMs, (i) => sock.send(datagram(i, HEADER), port, host));
  await new Promise((res) => setTimeout(res, Number(o['linger-ms'] ?? 500)));
  sock.close();
  print({ event: 'result', sent: r.sent, rttUs });
}

async function tcpSink(o) {
  const done = new Promise((resolve) => {
    const server = net.createServer((conn) => {
      const hash = createHash('sha256');
      let bytes = 0;
      const t0 = performance.now();
      conn.on('data', (d) => {
        hash.update(d);
        bytes += d.length;
      });
      conn.on('end', () => {
        conn.end();
        server.close();
        resolve({ bytes, sha256: hash.digest('hex'), ms: performance.now() - t0 });
      });
      conn.on('error', (e) => resolve({ bytes, error: e.message }));
    });
    server.listen(Number(o.port), () => print({ event: 'listening' }));
  });
  const timeout = untilDone(Number(o['max-ms'] ?? 60_000)).then(() => ({ error: 'timeout or stdin closed' }));
  print({ event: 'result', ...(await Promise.race([done, timeout])) });
  process.exit(0);
}

/** Deterministic 64 KiB blocks: sha256 counter mode. */
function block(i) {
  const out = Buffer.alloc(65536);
  for (let k = 0; k < 2048; k++) createHash('sha256').update(`${i}:${k}`).digest().copy(out, k * 32);
  return out;
}

async function tcpSource(o) {
  const { host, port } = hostPort(o.to);
  const total = Number(o.bytes);
  const hash = createHash('sha256');
  const t0 = performance.now();
  const sock = net.connect({ host, port });
  const result = new Promise((resolve) => {
    sock.on('error', (e) => resolve({ error: e.message }));
    sock.on('close', () => resolve({ bytes: total, sha256: hash.digest('hex'), ms: performance.now() - t0 }));
  });
  sock.on('connect', async () => {
    let sent = 0;
    for (let i = 0; sent < total; i++) {
      const chunk = block(i).subarray(0, Math.min(65536, total - sent));
      hash.update(chunk);
      sent += chunk.length;
      if (!sock.write(chunk)) await new Promise((r) => sock.once('drain', r));
    }
    sock.end();
  });
  sock.resume(); // read the sink's FIN
  const timer = setTimeout(() => sock.destroy(new Error('timeout')), Number(o['max-ms'] ?? 60_000));
  const r = await result;
  clearTimeout(timer);
  print({ event: 'result', ...r });
}

const modes = {
  'udp-recv': udpRecv,
  'udp-send': udpSend,
  'udp-echo': udpEcho,
  'udp-ping': udpPing,
  'tcp-sink': tcpSink,
  'tcp-source': tcpSource,
};
const [mode, ...rest] = process.argv.slice(2);
if (!modes[mode]) {
  console.error(`usage: probe.mjs ${Object.keys(modes).join('|')} --option value ...`);
  process.exit(2);
}
modes[mode](parseArgs(rest)).catch((e) => {
  console.error(`probe ${mode}: ${e.stack ?? e}`);
  process.exit(1);
});
