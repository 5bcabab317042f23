// One attack class against a relay for a bounded time, in its own process so
// its CPU never delays the legitimate session the benchmark measures. Prints
// one JSON line: { attack, ops, unit, seconds, ...extra }. Loopback only; the
// attacker's sockets come from 127.0.0.2 (the legitimate client is 127.0.0.1).
//
//   node bench/hostile-attack.mjs <attack> <seconds> '<relay info JSON>'
import { connect } from 'node:net';
import { fileURLToPath } from 'node:url';
import { WebSocket } from 'ws';
import { mintToken } from '../relay/dist/index.js';
import { dataDatagram, helloDatagram, lastJsonLine } from './ricochet-packets.mjs';

const [attack, secondsArg, infoJson] = process.argv.slice(2);
const seconds = Number(secondsArg);
const info = JSON.parse(infoJson);
const deadline = performance.now() + seconds * 1000;
const ATTACKER = '127.0.0.2';
const WT_CLIENT = fileURLToPath(new URL('../relay/native/target/release/examples/wt_client', import.meta.url));
const left = () => deadline - performance.now();
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** A TCP connection from the attacker's address; resolves once connected (or failed). */
function tcp(port) {
  return new Promise((resolve) => {
    const s = connect({ port, host: '127.0.0.1', localAddress: ATTACKER });
    s.on('error', () => {});
    s.once('connect', () => resolve(s));
    s.once('close', () => resolve(s));
  });
}

/** Resolves when `s` drains or after `ms`, leaving no listener behind. */
function drained(s, ms) {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(t);
      s.off('drain', done);
      resolve();
    };
    const t = setTimeout(done, ms);
    s.once('drain', done);
  });
}

const upgrade = (target) =>
  `GET ${target} HTTP/1.1\r\nHost: relay\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n`;

/** Run `once` from `concurrency` loops until the deadline; counts completed operations. */
async function loops(concurrency, once) {
  let ops = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (left() > 0) {
        await once();
        ops++;
      }
    }),
  );
  return ops;
}

/** One request-response exchange on a fresh connection: write, wait for the close (bounded). */
function exchange(port, data) {
  return new Promise((resolve) => {
    tcp(port).then((s) => {
      if (s.destroyed) return resolve();
      const t = setTimeout(() => s.destroy(), 3000);
      s.on('close', () => {
        clearTimeout(t);
        resolve();
      });
      // An answer is enough (keep-alive would hold the socket): hang up and go again.
      s.on('data', () => s.destroy());
      for (const d of [].concat(data)) s.write(d);
    });
  });
}

const attacks = {
  /** Ten connections pipelining GET /metrics as fast as the relay takes them, reading nothing back. */
  async metrics() {
    let ops = 0;
    const req = Buffer.from(`GET /metrics HTTP/1.1\r\nHost: relay\r\n\r\n`.repeat(50));
    await Promise.all(
      Array.from({ length: 10 }, async () => {
        while (left() > 0) {
          const s = await tcp(info.metricsPort);
          while (!s.destroyed && left() > 0) {
            if (!s.write(req)) await drained(s, 200);
            ops += 50;
          }
          s.destroy();
        }
      }),
    );
    return { ops, unit: 'requests/s written' };
  },
  /** Request targets that are no path, over-long heads, and bad upgrades on fresh connections. */
  async garbage() {
    const payloads = ['GET // HTTP/1.1\r\nHost: x\r\n\r\n', 'GET http://[ HTTP/1.1\r\nHost: x\r\n\r\n', upgrade('/\\'), `GET / HTTP/1.1\r\nX: ${'a'.repeat(20_000)}\r\n\r\n`, 'BLAH\r\n\r\n'];
    let i = 0;
    const ops = await loops(16, () => exchange(info.httpPort, payloads[i++ % payloads.length]));
    return { ops, unit: 'requests/s' };
  },
  /** Half-sent requests held open and dribbled a byte at a time (at most 2 000 sockets). */
  async slowloris() {
    const held = [];
    let ops = 0;
    while (left() > 0) {
      for (let i = 0; i < 50 && held.length < 2000; i++) {
        const s = await tcp(info.httpPort);
        if (!s.destroyed) s.write('GET /healthz HTTP/1.1\r\nHost: relay\r\n');
        held.push(s);
        ops++;
      }
      for (const s of held) if (!s.destroyed) s.write('X');
      for (let i = held.length - 1; i >= 0; i--) if (held[i].destroyed) held.splice(i, 1);
      await sleep(100);
    }
    const open = held.filter((s) => !s.destroyed).length;
    for (const s of held) s.destroy();
    return { ops, unit: 'connections/s', still_open_at_end: open };
  },
  /** WebSocket upgrades with a bad token, each followed by an invalid frame (unmasked, RSV1) and no close reply. */
  async frames() {
    const frames = [Buffer.from([0x82, 0x02, 1, 2]), Buffer.from([0xc2, 0x82, 1, 2, 3, 4, 9, 9])];
    let i = 0;
    const ops = await loops(16, () => exchange(info.httpPort, [upgrade('/ricochet?token=bad'), frames[i++ % 2]]));
    return { ops, unit: 'upgrades/s' };
  },
  /**
   * A token holder guessing connection IDs: each fresh token's HELLO names a
   * random ID (the relay refuses an ID another session holds; a token opens
   * one session, once).
   */
  async guess() {
    const ops = await loops(8, async () => {
      const token = mintToken(info.secret, { sub: 'attacker', backend: info.backend, ttlSeconds: 60 });
      await new Promise((resolve) => {
        const ws = new WebSocket(`${info.webSocketUrl}?token=${token}`, { localAddress: ATTACKER });
        const t = setTimeout(() => ws.terminate(), 3000);
        ws.on('open', () => {
          ws.send(helloDatagram(Math.random() * 2 ** 32));
          setTimeout(() => ws.close(1000), 5);
        });
        ws.on('close', () => {
          clearTimeout(t);
          resolve();
        });
        ws.on('error', () => {});
      });
    });
    return { ops, unit: 'guesses/s' };
  },
  /** A session sending datagrams as fast as it can (the relay closes it with 4429), again and again. */
  async flood() {
    let closes = 0;
    const ops = await loops(2, async () => {
      const token = mintToken(info.secret, { sub: 'flooder', backend: info.backend, ttlSeconds: 60 });
      let sent = 0;
      await new Promise((resolve) => {
        const ws = new WebSocket(`${info.webSocketUrl}?token=${token}`, { localAddress: ATTACKER });
        ws.on('open', async () => {
          const id = Math.random() * 2 ** 32;
          ws.send(helloDatagram(id));
          const b = dataDatagram(id);
          while (ws.readyState === ws.OPEN && left() > 0) {
            ws.send(b);
            if (++sent % 200 === 0) await new Promise((r) => setImmediate(r));
          }
          ws.terminate();
        });
        ws.on('close', (code) => {
          if (code === 4429) closes++;
          resolve();
        });
        ws.on('error', () => {});
      });
      return sent;
    });
    return { ops, unit: 'sessions/s', rate_limited_closes: closes };
  },
  /** 300 QUIC handshakes that never send the HTTP/3 CONNECT, renewed as the relay cuts them. */
  async stall() {
    let ops = 0;
    while (left() > 1000) {
      const args = ['--mode', 'stall', '--conns', '300', '--bind', ATTACKER, '--url', info.webTransportUrl, '--hash', info.certHashes[0], '--stall-ms', String(Math.floor(Math.min(10_000, left())))];
      const r = (await lastJsonLine(WT_CLIENT, args)) ?? {};
      ops += (r.connected ?? 0) + (r.failed ?? 0);
    }
    return { ops, unit: 'handshakes/s' };
  },
};

const run = attacks[attack];
if (!run) {
  console.error(`unknown attack ${attack}; one of ${Object.keys(attacks).join(', ')}`);
  process.exit(2);
}
const t0 = performance.now();
const r = await run();
const took = (performance.now() - t0) / 1000;
console.log(JSON.stringify({ attack, seconds: +took.toFixed(1), rate: Math.round(r.ops / took), ...r }));
process.exit(0);
