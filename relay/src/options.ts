// Relay options: defaults, then a JSON config file, then RICOCHET_RELAY_*
// environment variables, then command-line flags. Validated once.
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { NETWORK_PROFILES } from '@ricochet/sdk';
import { parseAllowEntry } from './backend-address.js';
import { parseIpRange } from './ip-range.js';

export { backendAllowed } from './backend-address.js';

export interface RelayOptions {
  /** Address to listen on. Default 127.0.0.1. */
  host: string;
  /** HTTP port: WebSocket upgrades, /healthz, /metrics, /cert-hash. Default 8080; 0 = any. */
  httpPort: number;
  /** WebTransport (HTTP/3, UDP) port. Default 4433; 0 = any; -1 disables WebTransport, like `webTransport: false`. */
  wtPort: number;
  /**
   * Serve WebTransport (through the native addon). false (`--no-webtransport`,
   * RICOCHET_RELAY_WEBTRANSPORT=false) runs WebSocket-only on purpose. When
   * true but no addon loads, the relay warns once and runs WebSocket-only.
   * Default true.
   */
  webTransport: boolean;
  /**
   * HMAC-SHA256 secret for connect tokens: ≥ 32 bytes of randomness. Required,
   * from RICOCHET_RELAY_TOKEN_SECRET, `--token-secret-file` or a config
   * file; never a command-line flag (every local user can read those).
   */
  tokenSecret: string;
  /** A file holding the token secret (surrounding white space is ignored). */
  tokenSecretFile?: string;
  /** Clock skew forgiven on a token's iat and nbf, seconds. Default 30. */
  tokenLeewaySeconds: number;
  /** Longest token lifetime (exp − iat) accepted, seconds. Default 3 600. */
  maxTokenLifetimeSeconds: number;
  /** Tokens remembered as used (single use); when full, new sessions are refused. Default 200 000. */
  replayCacheSize: number;
  /** Backends a token may name: "host:port" or "host:*". Default none (nothing is forwarded). */
  allowBackends: string[];
  /** Most live sessions. Default 10 000. */
  maxSessions: number;
  /** A session must send its first datagram within this long. Default 5 000 ms. */
  handshakeTimeoutMs: number;
  /** Largest datagram or WebSocket frame accepted from a client. Default 1 500 bytes. */
  maxDatagramBytes: number;
  /** Per-session client→backend limit, datagrams per second. Default 5 000. */
  maxDatagramsPerSecond: number;
  /** Per-session client→backend limit, bytes per second. Default 8 MB/s. */
  maxBytesPerSecond: number;
  /** Bytes queued toward a WebSocket client before datagrams are dropped. Default 256 KiB. */
  clientQueueBytes: number;
  /** Close a session idle in both directions for this long. Default 30 000 ms. */
  idleTimeoutMs: number;
  /**
   * Keep a session whose client transport dropped for this long, with its
   * backend socket, so the client can resume it on a new transport with the
   * same token (the backend sees the same peer). 0 disables. Default 10 000 ms.
   */
  resumeWindowMs: number;
  /**
   * On SIGTERM the relay drains: /healthz answers 503 and new links are
   * refused at once; after `drainNoticeMs` (time for balancers to see the
   * 503) every client is told to resume through another relay (close code
   * 4002), and the relay stops once its sessions are gone or `drainMs` has
   * passed. Default 10 000 ms.
   */
  drainMs: number;
  /** See `drainMs`: how long a draining relay keeps serving before it moves its clients. Default 0. */
  drainNoticeMs: number;
  /**
   * A relay that never saw a session (another relay held it) takes it over
   * on a link whose first datagram is DATA and whose token's signature
   * verifies, up to this long after the token expired; the game server
   * checks the session key before it moves the connection. Default 86 400 s.
   */
  resumeTokenMaxAgeSeconds: number;
  /** Production mode refuses development endpoints. Default false. */
  production: boolean;
  /**
   * Simulated network applied to every session both ways (a simulator preset:
   * lan, wifi, mobile_lossy, s1_5pct, …), for testing games under loss with
   * no root. Default none. Refused in production mode.
   */
  impairment?: string;
  /**
   * Serve POST/GET /test/impairment (change impairment live) and POST
   * /test/kill-transports (cut every client transport, to test resumption).
   * Default false; refused in production mode.
   */
  testControl: boolean;
  /**
   * PEM certificate and key for WebTransport, given together; default:
   * self-signed, rotated before expiry. Reloaded when either file changes
   * (checked every `certReloadMs`, and on SIGHUP), so renewals need no restart.
   */
  certFile?: string;
  keyFile?: string;
  /** How often certificate files are checked for a renewal, ms. Default 60 000. */
  certReloadMs: number;
  /**
   * A separate listener for /metrics (and /healthz) on `metricsHost`. -1:
   * none, and /metrics is then served on the public listener except in
   * production mode, where it is served only here. Default -1.
   */
  metricsPort: number;
  /** Address of the metrics listener. Default 127.0.0.1. */
  metricsHost: string;
  /**
   * Connections not (yet) carrying a session, in total, for each of TCP
   * (HTTP and WebSocket) and QUIC (WebTransport handshakes). Default 1 024.
   */
  maxPendingConnections: number;
  /** The same per client address (an IPv6 /64 counts as one for QUIC). Default 16. */
  maxPendingPerAddress: number;
  /** A socket the relay closed is cut this long after its close frame if the peer never answers, ms. Default 2 000. */
  closeGraceMs: number;
  /** Largest HTTP request head (request line and headers), bytes; larger gets 431. Default 8 192. */
  maxHeaderBytes: number;
  /**
   * Balancers in front of the relay (IP addresses or subnets, e.g.
   * "10.0.0.5" or "10.0.0.0/24"). Every TCP connection from one carries
   * many players, so per-address caps do not count the balancer as one
   * client: its connections meet only the total caps, and its requests are
   * budgeted by the address it appends to X-Forwarded-For (HAProxy:
   * `option forwardfor`). Default none.
   */
  trustedProxies: string[];
  /**
   * Where WebTransport datagrams are forwarded once a session is established
   * and unimpaired: 'native' inside the Rust addon (they never enter
   * JavaScript; JS keeps admission, limits, metrics and resumption), or 'js'
   * (every datagram through JavaScript, as WebSocket). Default 'js'.
   */
  wtDataPath: 'native' | 'js';
}

export const DEFAULTS: Omit<RelayOptions, 'tokenSecret'> = {
  host: '127.0.0.1',
  httpPort: 8080,
  wtPort: 4433,
  webTransport: true,
  allowBackends: [],
  trustedProxies: [],
  maxSessions: 10_000,
  handshakeTimeoutMs: 5_000,
  maxDatagramBytes: 1_500,
  maxDatagramsPerSecond: 5_000,
  maxBytesPerSecond: 8_000_000,
  clientQueueBytes: 256 * 1024,
  idleTimeoutMs: 30_000,
  resumeWindowMs: 10_000,
  drainMs: 10_000,
  drainNoticeMs: 0,
  resumeTokenMaxAgeSeconds: 86_400,
  production: false,
  testControl: false,
  tokenLeewaySeconds: 30,
  maxTokenLifetimeSeconds: 3600,
  replayCacheSize: 200_000,
  certReloadMs: 60_000,
  metricsPort: -1,
  metricsHost: '127.0.0.1',
  maxPendingConnections: 1024,
  maxPendingPerAddress: 16,
  closeGraceMs: 2_000,
  maxHeaderBytes: 8192,
  wtDataPath: 'native',
};

export function validate(o: RelayOptions): RelayOptions {
  const fail = (m: string): never => {
    throw new TypeError(`relay options: ${m}`);
  };
  const secretProblem = weakSecret(o.tokenSecret);
  if (secretProblem) fail(`tokenSecret ${secretProblem}`);
  for (const [k, min, max] of [
    ['httpPort', 0, 65535],
    ['wtPort', -1, 65535],
    ['maxSessions', 1, 1e7],
    ['handshakeTimeoutMs', 1, 3.6e6],
    ['maxDatagramBytes', 64, 65507],
    ['maxDatagramsPerSecond', 1, 1e9],
    ['maxBytesPerSecond', 1, 1e12],
    ['clientQueueBytes', 1024, 1e9],
    ['idleTimeoutMs', 1, 3.6e7],
    ['resumeWindowMs', 0, 3.6e6],
    ['drainMs', 0, 3.6e6],
    ['drainNoticeMs', 0, 3.6e6],
    ['resumeTokenMaxAgeSeconds', 0, 3.1e7],
    ['tokenLeewaySeconds', 0, 600],
    ['maxTokenLifetimeSeconds', 1, 30 * 86400],
    ['replayCacheSize', 1, 1e8],
    ['certReloadMs', 1000, 8.64e7],
    ['metricsPort', -1, 65535],
    ['maxPendingConnections', 1, 1e7],
    ['maxPendingPerAddress', 1, 1e7],
    ['closeGraceMs', 100, 60_000],
    ['maxHeaderBytes', 1024, 65536],
  ] as const) {
    const v = o[k];
    if (!Number.isInteger(v) || v < min || v > max) fail(`${k} must be an integer in ${min}..${max}, got ${String(v)}`);
  }
  if (o.wtDataPath !== 'native' && o.wtDataPath !== 'js') fail(`wtDataPath must be native or js, got ${JSON.stringify(o.wtDataPath)}`);
  if (typeof o.webTransport !== 'boolean') fail(`webTransport must be true or false, got ${JSON.stringify(o.webTransport)}`);
  if (o.production && (o.testControl || o.impairment)) fail('testControl and impairment are refused in production mode');
  if (o.impairment !== undefined && !(NETWORK_PROFILES as readonly string[]).includes(o.impairment))
    fail(`impairment must be one of ${NETWORK_PROFILES.join(', ')}, got ${JSON.stringify(o.impairment)}`);
  if (!Array.isArray(o.allowBackends)) fail('allowBackends must be a list of "host:port", "host:*", "host:lo-hi" or "subnet:ports"');
  if (!Array.isArray(o.trustedProxies)) fail('trustedProxies must be a list of IP addresses or subnets');
  for (const p of o.trustedProxies)
    if (typeof p !== 'string' || !parseIpRange(p)) fail(`trustedProxies entry ${JSON.stringify(p)} is not an IP address or subnet ("10.0.0.5", "10.0.0.0/24")`);
  for (const b of o.allowBackends)
    if (typeof b !== 'string' || !parseAllowEntry(b)) fail(`allowBackends entry ${JSON.stringify(b)} is not "host:port" (port 1..65535), "host:*", "host:lo-hi", or a subnet for the host ("10.0.0.0/16:*")`);
  if ((o.certFile === undefined) !== (o.keyFile === undefined)) fail('certFile and keyFile must be given together');
  return o;
}

/** Why a token secret is too weak, or null. */
function weakSecret(secret: unknown): string | null {
  if (typeof secret !== 'string') return 'is required (RICOCHET_RELAY_TOKEN_SECRET or --token-secret-file)';
  const bytes = Buffer.from(secret);
  if (bytes.length < 32) return `must be at least 32 bytes of randomness, got ${bytes.length} (e.g. openssl rand -base64 32)`;
  // A repeated or sequential phrase is not 32 random bytes; base64 or hex of them has ≥ 10 distinct characters.
  if (new Set(bytes).size < 10) return 'looks like no random secret (fewer than 10 distinct characters)';
  return null;
}

const STRING_OPTIONS = ['tokenSecret', 'tokenSecretFile', 'certFile', 'keyFile', 'impairment'] as const;
/** Options that are never command-line flags. */
const NOT_FLAGS = new Set<string>(['tokenSecret']);
/** "WebTransport" is one word in flag and variable names: --no-webtransport, RICOCHET_RELAY_WEBTRANSPORT. */
const words = (k: string) => k.replace(/([wW])ebTransport/, '$1ebtransport');
export const envName = (k: string) => `RICOCHET_RELAY_${words(k).replace(/[A-Z]/g, (c) => `_${c}`).toUpperCase()}`;
export const kebab = (k: string) => words(k).replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);

function coerce(key: keyof RelayOptions, raw: string): unknown {
  const sample = (DEFAULTS as Record<string, unknown>)[key];
  if (key === 'allowBackends' || key === 'trustedProxies') return raw.split(',').map((s) => s.trim()).filter(Boolean);
  if (typeof sample === 'number') return Number(raw);
  if (typeof sample === 'boolean') return raw === 'true' || raw === '1';
  return raw;
}

/**
 * parseArgs reads a negative number after a string flag (`--wt-port -1`) as
 * an unknown option: join it to its flag (`--wt-port=-1`).
 */
function joinNegativeNumbers(argv: string[], flags: Record<string, { type: 'string' | 'boolean' }>): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const next = argv[i + 1];
    if (a.startsWith('--') && flags[a.slice(2)]?.type === 'string' && next !== undefined && /^-\d+$/.test(next)) {
      out.push(`${a}=${next}`);
      i++;
    } else out.push(a);
  }
  return out;
}

/** Options from argv (flags named like the fields, kebab-case) over env over file over defaults. */
export function loadOptions(argv: string[], env: NodeJS.ProcessEnv = process.env): RelayOptions {
  if (argv.some((a) => a === '--token-secret' || a.startsWith('--token-secret=')))
    throw new TypeError('relay options: --token-secret is refused (any local user can read a command line); set RICOCHET_RELAY_TOKEN_SECRET or --token-secret-file');
  const flags: Record<string, { type: 'string' | 'boolean' }> = { config: { type: 'string' } };
  const keys = [...Object.keys(DEFAULTS), ...STRING_OPTIONS] as (keyof RelayOptions)[];
  for (const k of keys) {
    if (NOT_FLAGS.has(k)) continue;
    const boolean = typeof (DEFAULTS as Record<string, unknown>)[k] === 'boolean';
    flags[kebab(k)] = { type: boolean ? 'boolean' : 'string' };
    // Node 20's parseArgs has no negation: `--no-<flag>` is declared as a flag of its own.
    if (boolean) flags[`no-${kebab(k)}`] = { type: 'boolean' };
  }
  const { values } = parseArgs({ args: joinNegativeNumbers(argv, flags), options: flags, strict: true, allowPositionals: false });
  let o: Record<string, unknown> = { ...DEFAULTS };
  if (typeof values.config === 'string') o = { ...o, ...JSON.parse(readFileSync(values.config, 'utf8')) };
  for (const k of keys) if (env[envName(k)] !== undefined) o[k] = coerce(k, env[envName(k)]!);
  for (const k of keys) {
    const v = values[kebab(k)];
    if (v !== undefined) o[k] = typeof v === 'string' ? coerce(k, v) : v;
    if (values[`no-${kebab(k)}`] === true) o[k] = false;
  }
  if (typeof o.tokenSecretFile === 'string') o.tokenSecret = readFileSync(o.tokenSecretFile, 'utf8').trim();
  return validate(o as unknown as RelayOptions);
}
