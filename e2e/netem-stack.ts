// The system under test across a real impaired link (netem/lab.mjs, root):
// namespace B runs the native echo server or another backend (on B's 127.0.0.1), the relay (on
// B's link address) and a static server for the test page; namespace A runs
// headless Chromium, launched through a wrapper script that enters A. Every
// byte between the browser and the relay crosses ricochet-netem's emulated
// link. Only loopback and the lab's 10.77.x.y addresses are ever used.
import { execFile, type ChildProcess } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { waitEvent } from './child-events.js';
import type { Browser } from '@playwright/test';
import { CHROMIUM, FIREFOX, launch, type BrowserName } from './browsers.js';
import { mintToken } from '@ricochet/relay';
import { ECHO_BIN, ROOT, SECRET } from './stack.js';

/** The parts of netem/lab.mjs's Lab used here (lab.mjs is untyped JS). */
export interface Lab {
  id: string;
  nsA: string;
  nsB: string;
  addrA: string;
  addrB: string;
  config: unknown;
  exec(ns: string, cmd: string, args?: string[], options?: Record<string, unknown>): ChildProcess;
  stats(): Promise<LabStats>;
  close(): Promise<void>;
}
export interface DirectionStats {
  packets_in: number;
  delivered: number;
  lost: number;
  queue_dropped: number;
  oversize_dropped: number;
  in_flight: number;
  delay_us: { mean: number; p50: number; p99: number; max: number };
  late_us: { mean: number; p50: number; p99: number; max: number };
  udp_blocked: number;
}
export interface LabStats {
  a_to_b: DirectionStats;
  b_to_a: DirectionStats;
}
export interface LabOptions {
  profile?: string;
  settings?: Record<string, unknown>;
  seed?: number;
  /** Drop every UDP packet on the link (QUIC, so WebTransport, blocked). */
  blockUdp?: boolean;
}
/**
 * The game server behind the relay, in namespace B on its 127.0.0.1: a
 * binary that takes `args` and prints `{"event":"listening","port":N}`.
 * Default: the native echo server.
 */
export interface BackendOptions {
  bin: string;
  args: string[];
  rt?: boolean;
}

const LAB_MODULE = join(ROOT, 'netem', 'lab.mjs');
const RELAY_CLI = join(ROOT, 'relay', 'dist', 'cli.js');
const STATIC_SERVER = join(ROOT, 'e2e', 'netem-static.mjs');
const FIREFOX_IN_NETNS = join(ROOT, 'e2e', 'firefox-in-netns.mjs');

/**
 * RICOCHET_CHROMIUM_NETLOG=DIR: each Chromium launched here writes its net
 * log (QUIC packets, frames, congestion control) to DIR/netlog-<lab>-<n>.json,
 * which bench/chromium-netlog.mjs summarises. Everything is captured, so it
 * costs the browser CPU: not for rows whose figures are kept.
 */
function netlogArgs(labId: string, n: number): string[] {
  const dir = process.env.RICOCHET_CHROMIUM_NETLOG;
  return dir ? [`--log-net-log=${join(dir, `netlog-${labId}-${n}.json`)}`, '--net-log-capture-mode=Everything'] : [];
}

export async function createLab(o: LabOptions): Promise<Lab> {
  // A computed specifier: lab.mjs has no type declarations.
  const mod = (await import(LAB_MODULE)) as { createLab(o: LabOptions): Promise<Lab> };
  return mod.createLab(o);
}


export interface NetemStack {
  lab: Lab;
  /** The backend's process (its stdout is being drained; add listeners for its lines). */
  backendProc: ChildProcess;
  /** http://<addrB>:<port>/echo.html, served from namespace B. */
  pageUrl: string;
  /** The relay's HTTP origin in namespace B (WebSocket, /cert-hash). */
  relayHttp: string;
  relayInfo: Record<string, unknown>;
  backend: string;
  token(): string;
  /** Datagrams the relay forwarded so far, per direction, for one transport (from its /metrics, read inside B). */
  relayDatagrams(transport: 'webtransport' | 'websocket'): Promise<{ toBackend: number; toClient: number }>;
  /**
   * Headless Chromium or Firefox inside namespace A. Chromium is driven over
   * a pipe, which survives `ip netns exec`; Firefox over WebDriver BiDi, whose
   * WebSocket firefox-in-netns.mjs forwards out of A. `firefoxPrefs` are
   * added to the profile's (Firefox only).
   */
  launchBrowser(browser?: BrowserName, o?: { firefoxPrefs?: Record<string, string | number | boolean> }): Promise<Browser>;
  stop(): Promise<void>;
}

/**
 * A lab with the echo server, relay and page server in B. On any failure the
 * lab is closed before the error is thrown; stop() closes it otherwise.
 */
export async function startNetemStack(o: LabOptions & { backend?: BackendOptions }): Promise<NetemStack> {
  const { backend: backendOptions = { bin: ECHO_BIN, args: ['--port', '0'], rt: false }, ...labOptions } = o;
  const lab = await createLab(labOptions);
  const tmp = mkdtempSync(join(tmpdir(), `ricochet-e2e-netem-${lab.id}-`));
  const browsers: Browser[] = [];
  const stop = async () => {
    try {
      await Promise.allSettled(browsers.map((b) => b.close()));
    } finally {
      rmSync(tmp, { recursive: true, force: true });
      await lab.close();
    }
  };
  try {
    const env = { ...process.env, RICOCHET_LOG_LEVEL: process.env.RICOCHET_LOG_LEVEL ?? 'warn' };
    const stdio = ['pipe', 'pipe', 'inherit'];
    // The backend binds 127.0.0.1 only: B's own loopback, where the relay reaches it.
    const echo = lab.exec(lab.nsB, backendOptions.bin, backendOptions.args, { stdio, rt: backendOptions.rt ?? false });
    const echoPort = (await waitEvent(echo, 'listening', 'backend')).port as number;
    const backend = `127.0.0.1:${echoPort}`;
    const relay = lab.exec(
      lab.nsB,
      process.execPath,
      // --test-control: the pages cut transports mid-session (POST /test/kill-transports).
      [RELAY_CLI, '--host', lab.addrB, '--http-port', '0', '--wt-port', '0', '--allow-backends', backend, '--test-control'],
      { stdio, env: { ...env, RICOCHET_RELAY_TOKEN_SECRET: SECRET } },
    );
    const relayInfo = await waitEvent(relay, 'listening', 'relay');
    const web = lab.exec(lab.nsB, process.execPath, [STATIC_SERVER, lab.addrB], { stdio, env });
    const webPort = (await waitEvent(web, 'listening', 'static server')).port as number;
    // Keep draining stdout (relay warnings, echo connect logs) so pipes never fill.
    for (const c of [echo, relay, web]) c.stdout!.resume();
    const pageOrigin = `http://${lab.addrB}:${webPort}`;
    const relayHttp = `http://${lab.addrB}:${relayInfo.httpPort}`;
    const chromiumWrapper = join(tmp, 'chromium-in-netns.sh');
    writeFileSync(chromiumWrapper, `#!/bin/sh\nexec ip netns exec '${lab.nsA}' '${CHROMIUM}' "$@"\n`);
    chmodSync(chromiumWrapper, 0o755);
    const firefoxWrapper = join(tmp, 'firefox-in-netns.sh');
    writeFileSync(firefoxWrapper, `#!/bin/sh\nexec '${process.execPath}' '${FIREFOX_IN_NETNS}' '${lab.nsA}' '${FIREFOX}' "$@"\n`);
    chmodSync(firefoxWrapper, 0o755);
    return {
      lab,
      backendProc: echo,
      pageUrl: `${pageOrigin}/echo.html`,
      relayHttp,
      relayInfo,
      backend,
      token: () => mintToken(SECRET, { sub: 'e2e-netem', backend, ttlSeconds: 300 }),
      async relayDatagrams(transport) {
        const text = await new Promise<string>((resolve, reject) => {
          const get = `fetch(${JSON.stringify(`${relayHttp}/metrics`)}).then((r) => r.text()).then((t) => process.stdout.write(t))`;
          execFile('ip', ['netns', 'exec', lab.nsB, process.execPath, '-e', get], { timeout: 10_000 }, (e, out) => (e ? reject(e) : resolve(out)));
        });
        const count = (direction: string) => Number(text.match(new RegExp(`ricochet_relay_datagrams_total\\{direction="${direction}",transport="${transport}"\\} (\\d+)`))?.[1] ?? 0);
        return { toBackend: count('to_backend'), toClient: count('to_client') };
      },
      async launchBrowser(browser: BrowserName = 'chromium', o: { firefoxPrefs?: Record<string, string | number | boolean> } = {}) {
        // Not localhost, so not a secure context by default: WebTransport needs one.
        const insecureAsSecure = [pageOrigin, relayHttp, `ws://${lab.addrB}:${relayInfo.httpPort}`];
        const b =
          browser === 'firefox'
            ? await launch('firefox', { executablePath: firefoxWrapper, firefoxPrefs: { ...o.firefoxPrefs, 'dom.securecontext.allowlist': lab.addrB } })
            : await launch('chromium', { executablePath: chromiumWrapper, chromiumArgs: [`--unsafely-treat-insecure-origin-as-secure=${insecureAsSecure.join(',')}`, ...netlogArgs(String(lab.id), browsers.length)] });
        browsers.push(b);
        return b;
      },
      stop,
    };
  } catch (e) {
    await stop().catch(() => {});
    throw e;
  }
}
