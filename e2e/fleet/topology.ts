// A relay fleet behind real load balancers, each part a host of its own (a
// network namespace), for the fleet specs (fleet-specs/) and
// `npm run bench -- --fleet` (bench/fleet.mjs). Needs root.
//
//   client ns (Chromium, Node bots, page server on its 127.0.0.1) 10.91.0.2
//        │ veth
//   bridge ns: the balancers' virtual address VIP 10.90.0.10 (on its lo), routing between the veths
//        ├─ HAProxy VIP:8080 → relay i :8080 (HTTP mode: WebSocket upgrades;
//        │    health checks GET /healthz every 250 ms, one failure takes a relay out)
//        ├─ nftables DNAT VIP:4433/udp → relay i :4433 by jhash(saddr . sport) over a
//        │    map that udp-balancer.mjs (the UDP balancer's controller) keeps to the healthy relays
//        ├─ relay ns 1..N: relay/dist/cli.js on 10.92.i.2, :8080 (WS) and :4433 (WT);
//        │    shared token secret and certificate files
//        └─ game-server ns: the native echo server on its 127.0.0.1:4000, reached at
//             10.93.0.2:4000 through a DNAT to loopback (the example binds 127.0.0.1 only)
//
// Only the addresses above, inside namespaces made here, are ever targets.
// Namespace names are `rf<4 hex>` plus a role (≤ 15 chars), unique per run;
// stop() (and a process-exit hook) kills every process started here and
// deletes the namespaces, which takes their veths with them.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { waitEvent } from '../child-events.js';
import type { Browser } from '@playwright/test';
import { mintToken } from '@ricochet/relay';
import { CHROMIUM, launch } from '../browsers.js';
import { ECHO_BIN, ROOT } from '../stack.js';

export const VIP = '10.90.0.10';
export const WS_PORT = 8080;
export const WT_PORT = 4433;
export const GAME_ADDR = '10.93.0.2';
export const GAME_PORT = 4000;
const CLIENT_ADDR = '10.91.0.2';
const RELAY_CLI = join(ROOT, 'relay', 'dist', 'cli.js');
const STATIC_SERVER = join(ROOT, 'e2e', 'netem-static.mjs');
const BOTS = join(ROOT, 'e2e', 'fleet', 'bots.mjs');
const UDP_BALANCER = join(ROOT, 'e2e', 'fleet', 'udp-balancer.mjs');
export const HAPROXY = process.env.RICOCHET_HAPROXY ?? '/usr/sbin/haproxy';
export const NFT = process.env.RICOCHET_NFT ?? '/usr/sbin/nft';

/** What a fleet run can skip on: root, the tools, the built relay and echo server. */
export function fleetPrerequisites(): string | null {
  if (process.getuid?.() !== 0) return 'needs root (network namespaces, nftables)';
  for (const [f, what] of [
    [HAPROXY, 'haproxy (apt-get install haproxy; npm test installs it)'],
    [NFT, 'nft (apt-get install nftables)'],
    [ECHO_BIN, 'the native echo server (npm test builds it)'],
    [RELAY_CLI, 'relay/dist (npm test builds it)'],
  ] as const)
    if (!existsSync(f)) throw new Error(`fleet topology: missing ${what}: ${f}`);
  return null;
}

export interface FleetOptions {
  relays?: number;
  /** The relays' drainNoticeMs: how long a draining relay serves on while balancers see its 503. */
  drainNoticeMs?: number;
  /** The relays' handshakeTimeoutMs (also how long a cross-relay resume waits for the game server). */
  handshakeTimeoutMs?: number;
  /** Extra relay CLI flags. */
  relayArgs?: string[];
  /** How often the UDP balancer's controller polls /healthz, ms. */
  udpCheckMs?: number;
  log?: (line: string) => void;
}

export interface RelayHost {
  index: number;
  ns: string;
  addr: string;
  proc: ChildProcess | null;
  /** Resolves when the current process exits (with its code or signal). */
  exited: Promise<string> | null;
}

export interface BotsHandle {
  proc: ChildProcess;
  opened: Promise<{ opened: number; failed: string[] }>;
  /** Send a command (report, stop-sending, drain N, close) and wait for its answer line. */
  command<T = Record<string, unknown>>(cmd: string, timeoutMs?: number): Promise<T>;
  stop(): Promise<void>;
}

export interface Fleet {
  id: string;
  nsBridge: string;
  nsClient: string;
  nsGame: string;
  relays: RelayHost[];
  webSocketUrl: string;
  webTransportUrl: string;
  certHashes: string[];
  backend: string;
  /** http://127.0.0.1:P/fleet.html, served inside the client namespace. */
  pageUrl: string;
  secret: string;
  token(sub: string): string;
  /** Relays the UDP balancer's map holds now, and when it last changed. */
  udpHealthy(): { at: number; healthy: string[] };
  /** Sessions relay i held at its last /healthz answer to the UDP balancer's controller (≤ 100 ms old), or null. */
  relaySessions(i: number): Promise<number | null>;
  /** HAProxy's view: server name → status (UP, DOWN, …). */
  haproxyStatus(): Promise<Record<string, string>>;
  startRelay(i: number): Promise<void>;
  /** Signal relay i's process; returns the promise of its exit. */
  signalRelay(i: number, signal: NodeJS.Signals): Promise<string>;
  /**
   * Cut relay i's host off the network silently (every packet in or out dropped: no TCP reset, no
   * ICMP), as a host that lost power would be; `false` restores it.
   */
  isolateRelay(i: number, isolated: boolean): void;
  /** Wait until both balancers route to relay i (or away from it, with `inRotation` false). */
  waitRotation(i: number, inRotation: boolean, timeoutMs?: number): Promise<void>;
  gameServer(): ChildProcess;
  stopGameServer(signal?: NodeJS.Signals): Promise<string>;
  startGameServer(): Promise<void>;
  startBots(o: { tokens: string[]; rateHz?: number; connOptions?: Record<string, unknown>; concurrency?: number; label?: string }): BotsHandle;
  launchChromium(): Promise<Browser>;
  stop(): Promise<void>;
}

function sh(cmd: string, args: string[], input?: string): string {
  return execFileSync(cmd, args, { encoding: 'utf8', input, stdio: [input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'] });
}


const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function startFleet(o: FleetOptions = {}): Promise<Fleet> {
  const skip = fleetPrerequisites();
  if (skip) throw new Error(skip);
  const n = o.relays ?? 3;
  const log = o.log ?? (() => {});
  const id = randomBytes(2).toString('hex');
  const nsBridge = `rf${id}b`;
  const nsClient = `rf${id}c`;
  const nsGame = `rf${id}g`;
  const relayNs = Array.from({ length: n }, (_, i) => `rf${id}r${i + 1}`);
  const all = [nsBridge, nsClient, nsGame, ...relayNs];
  const tmp = mkdtempSync(join(tmpdir(), `ricochet-fleet-${id}-`));
  const children = new Set<ChildProcess>();
  const secret = randomBytes(32).toString('base64url');
  const env = { ...process.env, RICOCHET_LOG_LEVEL: process.env.RICOCHET_LOG_LEVEL ?? 'warn' };

  const created: string[] = [];
  let stopped = false;
  const cleanupSync = () => {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    // Only namespaces this run made (a name taken by someone else fails `ip netns add` and is left alone).
    for (const ns of created) {
      try {
        // Anything still running inside a namespace made here (a browser's helpers, a grandchild) was started by this run.
        const pids = execFileSync('ip', ['netns', 'pids', ns], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).split('\n').filter(Boolean);
        for (const pid of pids) {
          try {
            process.kill(Number(pid), 'SIGKILL');
          } catch {
            // gone already
          }
        }
      } catch {
        // no such namespace, or the process is gone
      }
      try {
        execFileSync('ip', ['netns', 'del', ns], { stdio: 'ignore' });
      } catch {
        // not created, or gone
      }
    }
    rmSync(tmp, { recursive: true, force: true });
  };
  process.once('exit', cleanupSync);

  const nsSpawn = (ns: string, cmd: string, args: string[], extraEnv: Record<string, string> = {}): ChildProcess => {
    const c = spawn('ip', ['netns', 'exec', ns, cmd, ...args], { stdio: ['pipe', 'pipe', 'inherit'], env: { ...env, ...extraEnv } });
    children.add(c);
    c.once('exit', () => children.delete(c));
    return c;
  };
  const inNs = (ns: string, cmd: string, args: string[], input?: string) => sh('ip', ['netns', 'exec', ns, cmd, ...args], input);

  const relays: RelayHost[] = relayNs.map((ns, i) => ({ index: i, ns, addr: `10.92.${i + 1}.2`, proc: null, exited: null }));
  let udp = { at: 0, healthy: [] as string[] };
  let game: ChildProcess | null = null;
  let certHashes: string[] = [];

  const stop = async () => {
    if (stopped) return;
    stopped = true;
    const live = [...children];
    for (const c of live) c.kill('SIGKILL');
    await Promise.race([Promise.all(live.map((c) => new Promise((r) => (c.exitCode !== null || c.signalCode !== null ? r(null) : c.once('exit', r))))), sleep(3000)]);
    cleanupSync();
    process.removeListener('exit', cleanupSync);
  };

  try {
    // Hosts and links.
    for (const ns of all) {
      sh('ip', ['netns', 'add', ns]);
      created.push(ns);
      inNs(ns, 'ip', ['link', 'set', 'lo', 'up']);
    }
    inNs(nsBridge, 'sysctl', ['-qw', 'net.ipv4.ip_forward=1']);
    inNs(nsBridge, 'ip', ['addr', 'add', `${VIP}/32`, 'dev', 'lo']);
    const link = (leaf: string, role: string, subnet: string) => {
      const here = `rf${id}${role}h`;
      const there = `rf${id}${role}p`;
      sh('ip', ['link', 'add', here, 'type', 'veth', 'peer', 'name', there]);
      sh('ip', ['link', 'set', here, 'netns', leaf]);
      sh('ip', ['link', 'set', there, 'netns', nsBridge]);
      inNs(leaf, 'ip', ['addr', 'add', `${subnet}.2/24`, 'dev', here]);
      inNs(nsBridge, 'ip', ['addr', 'add', `${subnet}.1/24`, 'dev', there]);
      inNs(leaf, 'ip', ['link', 'set', here, 'up']);
      inNs(nsBridge, 'ip', ['link', 'set', there, 'up']);
      inNs(leaf, 'ip', ['route', 'add', 'default', 'via', `${subnet}.1`]);
      return here;
    };
    link(nsClient, 'c', '10.91.0');
    const gameIf = link(nsGame, 'g', '10.93.0');
    relays.forEach((r, i) => link(r.ns, `r${i + 1}`, `10.92.${i + 1}`));

    // The game server binds its 127.0.0.1 only: reach it through a DNAT to loopback.
    inNs(nsGame, 'sysctl', ['-qw', 'net.ipv4.conf.all.route_localnet=1', `net.ipv4.conf.${gameIf}.route_localnet=1`]);
    inNs(
      nsGame,
      NFT,
      ['-f', '-'],
      `table ip game {\n chain pre {\n  type nat hook prerouting priority dstnat; policy accept;\n  ip daddr ${GAME_ADDR} udp dport ${GAME_PORT} dnat to 127.0.0.1:${GAME_PORT}\n }\n}\n`,
    );
    const startGameServer = async () => {
      game = nsSpawn(nsGame, ECHO_BIN, ['--port', String(GAME_PORT)]);
      await waitEvent(game, 'listening', 'echo server');
      game.stdout!.resume();
    };
    await startGameServer();

    // One certificate for every relay: the UDP virtual address may reach any of them.
    const certFile = join(tmp, 'cert.pem');
    const keyFile = join(tmp, 'key.pem');
    sh('openssl', [
      'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '10',
      '-subj', '/CN=ricochet-fleet', '-addext', `subjectAltName=IP:${VIP}`, '-keyout', keyFile, '-out', certFile,
    ]);

    const startRelay = async (i: number) => {
      const r = relays[i]!;
      const proc = nsSpawn(
        r.ns,
        process.execPath,
        [
          RELAY_CLI,
          '--host', r.addr,
          '--http-port', String(WS_PORT),
          '--wt-port', String(WT_PORT),
          '--allow-backends', `${GAME_ADDR}:${GAME_PORT}`,
          '--cert-file', certFile,
          '--key-file', keyFile,
          // Behind HAProxy every WebSocket arrives from the balancer's address (the bridge's end of this
          // relay's link): trusted, so per-address caps count the players it forwards for, not itself.
          '--trusted-proxies', `10.92.${i + 1}.1`,
          '--handshake-timeout-ms', String(o.handshakeTimeoutMs ?? 2000),
          ...(o.relayArgs ?? []),
        ],
        { RICOCHET_RELAY_TOKEN_SECRET: secret, RICOCHET_RELAY_DRAIN_NOTICE_MS: String(o.drainNoticeMs ?? 750) },
      );
      r.proc = proc;
      r.exited = new Promise((res) => proc.once('exit', (c, s) => res(String(s ?? c))));
      const info = await waitEvent(proc, 'listening', `relay ${i + 1}`);
      proc.stdout!.resume();
      certHashes = info.certHashes as string[];
      log(`relay ${i + 1} up in ${r.ns} at ${r.addr} (pid ${proc.pid})`);
    };
    for (let i = 0; i < n; i++) await startRelay(i);

    // HAProxy for TCP/WebSocket.
    const stats = join(tmp, 'haproxy.sock');
    const cfg = join(tmp, 'haproxy.cfg');
    writeFileSync(
      cfg,
      [
        'global',
        '  maxconn 8192',
        `  stats socket ${stats} mode 600 level admin`,
        'defaults',
        '  mode http',
        '  timeout connect 500ms',
        '  timeout client 60s',
        '  timeout server 60s',
        '  timeout tunnel 1h',
        '  timeout client-fin 1s',
        '  timeout check 1s',
        // A connection a relay refuses (killed) is tried again on another one at once.
        '  retries 2',
        '  option redispatch 1',
        '  timeout server-fin 1s',
        'frontend ws',
        `  bind ${VIP}:${WS_PORT}`,
        // The relay budgets requests by the player's address, which it reads here.
        '  option forwardfor',
        '  default_backend relays',
        'backend relays',
        '  balance roundrobin',
        '  option httpchk GET /healthz',
        '  http-check expect status 200',
        // A draining relay answers 503: two failed checks (200 ms apart) take it out, two good ones bring it
        // back; a refused connection (a dead relay) takes it out at once.
        '  default-server inter 200ms fastinter 200ms downinter 200ms fall 2 rise 2 observe layer4 error-limit 1 on-error mark-down',
        ...relays.map((r, i) => `  server relay${i + 1} ${r.addr}:${WS_PORT} check`),
        '',
      ].join('\n'),
    );
    const haproxy = nsSpawn(nsBridge, HAPROXY, ['-db', '-f', cfg]);
    haproxy.stdout!.resume();

    // The UDP balancer's controller (nftables jhash DNAT).
    const ctl = nsSpawn(nsBridge, process.execPath, [
      UDP_BALANCER,
      JSON.stringify({ vip: VIP, port: WT_PORT, relays: relays.map((r) => ({ addr: r.addr, httpPort: WS_PORT })), intervalMs: o.udpCheckMs ?? 100 }),
    ]);
    const statusWaiters: ((m: { relays: { sessions: number | null }[] }) => void)[] = [];
    createInterface({ input: ctl.stdout! }).on('line', (l) => {
      try {
        const m = JSON.parse(l);
        if (m.event === 'status') statusWaiters.shift()?.(m);
        if (m.event === 'map') {
          udp = { at: m.at, healthy: m.healthy };
          log(`udp balancer: ${m.healthy.length} healthy: ${m.healthy.join(' ')}`);
        }
      } catch {
        // not JSON
      }
    });

    const web = nsSpawn(nsClient, process.execPath, [STATIC_SERVER, '127.0.0.1']);
    const webPort = (await waitEvent(web, 'listening', 'page server')).port as number;
    web.stdout!.resume();

    const haproxyStatus = () =>
      new Promise<Record<string, string>>((resolve, reject) => {
        const s = connect(stats);
        let text = '';
        s.on('data', (d) => (text += d));
        s.on('error', reject);
        s.on('end', () => {
          const st: Record<string, string> = {};
          for (const line of text.split('\n')) {
            const f = line.split(',');
            if (f[0] === 'relays' && f[1] && f[1] !== 'BACKEND') st[f[1]] = f[17] ?? '';
          }
          resolve(st);
        });
        s.end('show stat\n');
      });

    const waitRotation = async (i: number, inRotation: boolean, timeoutMs = 10_000) => {
      const end = Date.now() + timeoutMs;
      const addr = relays[i]!.addr;
      for (;;) {
        let hs: Record<string, string> = {};
        try {
          hs = await haproxyStatus();
        } catch {
          // HAProxy still starting
        }
        if (haproxy.exitCode !== null || haproxy.signalCode !== null) throw new Error(`haproxy exited (${haproxy.signalCode ?? haproxy.exitCode}); its messages are on stderr above`);
        if (ctl.exitCode !== null || ctl.signalCode !== null) throw new Error(`the UDP balancer's controller exited (${ctl.signalCode ?? ctl.exitCode})`);
        const tcp = (hs[`relay${i + 1}`] ?? '').startsWith('UP');
        if (tcp === inRotation && udp.healthy.includes(addr) === inRotation) return;
        if (Date.now() > end) throw new Error(`relay ${i + 1} not ${inRotation ? 'in' : 'out of'} rotation within ${timeoutMs} ms (haproxy ${hs[`relay${i + 1}`]}, udp ${udp.healthy.join(' ')})`);
        await sleep(50);
      }
    };
    for (let i = 0; i < n; i++) await waitRotation(i, true, 15_000);

    const chromiumWrapper = join(tmp, 'chromium-in-netns.sh');
    writeFileSync(chromiumWrapper, `#!/bin/sh\nexec ip netns exec '${nsClient}' '${CHROMIUM}' "$@"\n`);
    chmodSync(chromiumWrapper, 0o755);
    const browsers: Browser[] = [];
    const backend = `${GAME_ADDR}:${GAME_PORT}`;

    const fleet: Fleet = {
      id,
      nsBridge,
      nsClient,
      nsGame,
      relays,
      webSocketUrl: `ws://${VIP}:${WS_PORT}/ricochet`,
      webTransportUrl: `https://${VIP}:${WT_PORT}/ricochet`,
      get certHashes() {
        return certHashes;
      },
      backend,
      pageUrl: `http://127.0.0.1:${webPort}/fleet.html`,
      secret,
      token: (sub) => mintToken(secret, { sub, backend, ttlSeconds: 600 }),
      udpHealthy: () => udp,
      haproxyStatus,
      relaySessions(i) {
        return new Promise((resolve) => {
          const t = setTimeout(() => resolve(null), 3000);
          statusWaiters.push((m) => {
            clearTimeout(t);
            resolve(m.relays[i]?.sessions ?? null);
          });
          ctl.stdin!.write('status\n');
        });
      },
      startRelay,
      signalRelay(i, signal) {
        const r = relays[i]!;
        if (!r.proc || !r.exited) throw new Error(`relay ${i + 1} is not running`);
        r.proc.kill(signal);
        return r.exited;
      },
      waitRotation,
      isolateRelay(i, isolated) {
        const ns = relays[i]!.ns;
        if (isolated)
          inNs(
            ns,
            NFT,
            ['-f', '-'],
            'table inet blackhole {\n chain in {\n  type filter hook input priority -500; policy drop;\n  iif lo accept\n }\n chain out {\n  type filter hook output priority -500; policy drop;\n  oif lo accept\n }\n}\n',
          );
        else inNs(ns, NFT, ['delete', 'table', 'inet', 'blackhole']);
      },
      gameServer: () => game!,
      async stopGameServer(signal = 'SIGTERM') {
        const g = game!;
        const done = new Promise<string>((res) => (g.exitCode !== null || g.signalCode !== null ? res('gone') : g.once('exit', (c, s) => res(String(s ?? c)))));
        g.kill(signal);
        return done;
      },
      startGameServer,
      startBots(b) {
        const proc = nsSpawn(nsClient, process.execPath, [BOTS, JSON.stringify({ ...b, webSocketUrl: fleet.webSocketUrl })]);
        const waiting: { event: string; resolve: (m: Record<string, unknown>) => void }[] = [];
        let resolveOpen!: (m: { opened: number; failed: string[] }) => void;
        let rejectOpen!: (e: Error) => void;
        const opened = new Promise<{ opened: number; failed: string[] }>((res, rej) => ((resolveOpen = res), (rejectOpen = rej)));
        proc.once('exit', (c, s) => rejectOpen(new Error(`bots exited (${s ?? c}) before opening`)));
        createInterface({ input: proc.stdout!, crlfDelay: Infinity }).on('line', (l) => {
          let m: Record<string, unknown>;
          try {
            m = JSON.parse(l);
          } catch {
            return;
          }
          if (m.event === 'open') resolveOpen(m as never);
          const w = waiting.findIndex((x) => x.event === m.event);
          if (w >= 0) waiting.splice(w, 1)[0]!.resolve(m);
        });
        return {
          proc,
          opened,
          command<T>(cmd: string, timeoutMs = 30_000) {
            const event = cmd.split(' ')[0]!;
            return new Promise<T>((resolve, reject) => {
              const t = setTimeout(() => reject(new Error(`bots: no answer to ${cmd} within ${timeoutMs} ms`)), timeoutMs);
              waiting.push({ event, resolve: (m) => (clearTimeout(t), resolve(m as T)) });
              proc.stdin!.write(`${cmd}\n`);
            });
          },
          async stop() {
            proc.stdin!.end();
            await Promise.race([new Promise((r) => (proc.exitCode !== null ? r(null) : proc.once('exit', r))), sleep(3000)]);
            if (proc.exitCode === null) proc.kill('SIGKILL');
          },
        };
      },
      async launchChromium() {
        const b = await launch('chromium', { executablePath: chromiumWrapper });
        browsers.push(b);
        return b;
      },
      async stop() {
        await Promise.allSettled(browsers.map((b) => b.close()));
        await stop();
      },
    };
    return fleet;
  } catch (e) {
    await stop().catch(() => {});
    throw e;
  }
}

