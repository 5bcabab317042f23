// The system under test, started for real: the native Rust echo server (UDP),
// the relay (WebTransport + WebSocket) and a static server for the test page
// and the built SDK. Only 127.0.0.1 is ever used.
import { randomBytes } from 'node:crypto';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import type { Server as HttpServer } from 'node:http';
import { createInterface } from 'node:readline';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Relay, DEFAULTS, createLogger, mintToken } from '@ricochet/relay';
import { createStaticServer } from './static-server.mjs';

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
export const SECRET = randomBytes(32).toString('base64url');
export const ECHO_BIN = join(ROOT, 'wasm', 'target', 'release', 'examples', 'echo_server');

export interface Stack {
  echoPort: number;
  backend: string;
  relay: Relay;
  relayHttp: string;
  pageUrl: string;
  token(o?: { backend?: string; ttlSeconds?: number; sub?: string }): string;
  stop(): Promise<void>;
}

/** Start the native echo server; resolves with its UDP port. */
export async function startEcho(args: string[] = []): Promise<{ port: number; proc: ChildProcess }> {
  if (!existsSync(ECHO_BIN)) throw new Error(`${ECHO_BIN} is missing: npm test builds it (cargo build --release -p ricochet-native --example echo_server)`);
  const proc = spawn(ECHO_BIN, ['--port', '0', ...args], { stdio: ['pipe', 'pipe', 'inherit'] });
  const lines = createInterface({ input: proc.stdout! });
  const port = await new Promise<number>((resolve, reject) => {
    const t = setTimeout(() => reject(new Error('echo server did not start')), 10_000);
    lines.on('line', (l) => {
      try {
        const m = JSON.parse(l);
        if (m.event === 'listening') {
          clearTimeout(t);
          resolve(m.port);
        }
      } catch {
        // not JSON: ignore
      }
    });
    proc.once('exit', (c) => reject(new Error(`echo server exited (${c})`)));
  });
  return { port, proc };
}

/** The page and SDK server on 127.0.0.1. */
export function startStatic(): Promise<HttpServer> {
  const server = createStaticServer();
  return new Promise((r) => server.listen(0, '127.0.0.1', () => r(server)));
}

export async function startStack(relayOverrides: Record<string, unknown> = {}): Promise<Stack> {
  const echo = await startEcho();
  const backend = `127.0.0.1:${echo.port}`;
  const relay = new Relay(
    { ...DEFAULTS, httpPort: 0, wtPort: 0, tokenSecret: SECRET, allowBackends: [backend, '127.0.0.1:9'], handshakeTimeoutMs: 2000, ...relayOverrides },
    createLogger(process.env.RICOCHET_LOG_LEVEL ?? 'warn'),
  );
  const a = await relay.start();
  const web = await startStatic();
  const webPort = (web.address() as { port: number }).port;
  return {
    echoPort: echo.port,
    backend,
    relay,
    relayHttp: `http://127.0.0.1:${a.httpPort}`,
    pageUrl: `http://127.0.0.1:${webPort}/echo.html`,
    token: (o = {}) => mintToken(SECRET, { sub: o.sub ?? 'e2e', backend: o.backend ?? backend, ttlSeconds: o.ttlSeconds ?? 120 }),
    async stop() {
      await relay.stop();
      web.close();
      echo.proc.stdin?.end();
      echo.proc.kill('SIGTERM');
    },
  };
}
