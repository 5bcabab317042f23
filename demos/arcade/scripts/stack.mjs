// The running arcade: the Rust game server, the relay (in this process,
// with its test-control endpoint so the page's network panel can impair
// the link; never production) and the page server, which also mints
// connect tokens (/api/join). Used by `npm start` and the browser tests.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createReadStream, existsSync } from 'node:fs';
import { createServer } from 'node:http';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { DEFAULTS, Relay, createLogger, mintToken } from '@ricochet/relay';
import { ARCADE, BUNDLE, SERVER_BIN } from './build.mjs';

const SDK_DIST = join(ARCADE, '..', '..', 'sdk', 'dist');
const FILES = {
  '/': [join(ARCADE, 'public', 'index.html'), 'text/html; charset=utf-8'],
  '/index.html': [join(ARCADE, 'public', 'index.html'), 'text/html; charset=utf-8'],
  '/arcade.js': [BUNDLE, 'text/javascript'],
  '/arcade.js.map': [`${BUNDLE}.map`, 'application/json'],
  '/ricochet_wasm.wasm': [join(SDK_DIST, 'ricochet_wasm.wasm'), 'application/wasm'],
};

/** Starts the game server; resolves with its shard ports once it listens. */
export async function startGameServer({ shards = 1, snapshotHz = 30, statsMs = 5000, extraArgs = [], onLine } = {}) {
  if (!existsSync(SERVER_BIN)) throw new Error(`${SERVER_BIN} is missing: run node demos/arcade/scripts/build.mjs`);
  const proc = spawn(SERVER_BIN, ['--port', '0', '--shards', String(shards), '--snapshot-hz', String(snapshotHz), '--stats-ms', String(statsMs), ...extraArgs], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const lines = createInterface({ input: proc.stdout });
  const ports = await new Promise((resolve, reject) => {
    const t = setTimeout(() => reject(new Error('the game server did not start within 10 s')), 10_000);
    lines.on('line', (l) => {
      let m;
      try {
        m = JSON.parse(l);
      } catch {
        return;
      }
      if (m.event === 'listening') {
        clearTimeout(t);
        resolve(m.ports);
      }
      onLine?.(m);
    });
    proc.once('exit', (c) => reject(new Error(`the game server exited (${c})`)));
  });
  const exited = new Promise((r) => proc.once('exit', r));
  return {
    proc,
    pid: proc.pid,
    ports,
    async stop() {
      proc.stdin.end(); // stdin EOF: the server closes its sessions and exits
      const t = setTimeout(() => proc.kill('SIGKILL'), 3000);
      await exited;
      clearTimeout(t);
    },
  };
}

function listen(server, port, host) {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve(server.address().port);
    });
  });
}

/**
 * Everything the arcade needs, on 127.0.0.1. `impairment`: a simulator
 * profile for every session (e.g. 's1_5pct'); the page can change it live.
 */
export async function startArcade({ port = 0, shards = 1, impairment, logLevel = process.env.RICOCHET_LOG_LEVEL ?? 'warn', onServerLine } = {}) {
  const host = '127.0.0.1';
  const game = await startGameServer({ shards, onLine: onServerLine });
  const backends = game.ports.map((p) => `${host}:${p}`);
  const secret = randomBytes(24).toString('base64url');
  const relay = new Relay(
    { ...DEFAULTS, host, httpPort: 0, wtPort: 0, tokenSecret: secret, allowBackends: backends, testControl: true, ...(impairment ? { impairment } : {}) },
    createLogger(logLevel),
  );
  let relayAddr;
  try {
    relayAddr = await relay.start();
  } catch (e) {
    await game.stop();
    throw e;
  }
  const relayHttp = `http://${host}:${relayAddr.httpPort}`;
  const web = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    if (url.pathname === '/api/join') {
      const room = Number(url.searchParams.get('room') ?? 0);
      if (!Number.isInteger(room) || room < 0 || room > 255) {
        res.writeHead(400, { 'content-type': 'text/plain' }).end('room must be an integer 0..255');
        return;
      }
      const sub = (url.searchParams.get('name') ?? 'player').slice(0, 16);
      // Rooms live on shard room % shards: the token names that shard.
      const token = mintToken(secret, { sub, backend: backends[room % backends.length], ttlSeconds: 60 });
      res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-store' }).end(JSON.stringify({ token, relayHttp }));
      return;
    }
    if (url.pathname === '/favicon.ico') {
      res.writeHead(204).end();
      return;
    }
    const file = FILES[url.pathname];
    if (!file || !existsSync(file[0])) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
      return;
    }
    res.writeHead(200, { 'content-type': file[1], 'cache-control': 'no-cache' });
    createReadStream(file[0]).pipe(res);
  });
  let webPort;
  try {
    webPort = await listen(web, port, host).catch((e) => {
      if (e.code !== 'EADDRINUSE' || port === 0) throw e;
      return listen(web, 0, host); // the preferred port is taken: any free one
    });
  } catch (e) {
    await relay.stop();
    await game.stop();
    throw e;
  }
  return {
    url: `http://${host}:${webPort}/`,
    relay,
    relayHttp,
    gamePorts: game.ports,
    async stop() {
      web.close();
      await relay.stop();
      await game.stop();
    },
  };
}
