// Relay options: defaults, then a JSON config file, then RICOCHET_RELAY_*
// environment variables, then command-line flags. Validated once.
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { NETWORK_PROFILES } from '@ricochet/sdk';

export interface RelayOptions {
  /** Address to listen on. Default 127.0.0.1. */
  host: string;
  /** HTTP port: WebSocket upgrades, /healthz, /metrics, /cert-hash. Default 8080; 0 = any. */
  httpPort: number;
  /** WebTransport (HTTP/3, UDP) port. Default 4433; 0 = any; -1 disables WebTransport. */
  wtPort: number;
  /** HMAC-SHA256 secret for connect tokens (≥ 16 bytes). Required. */
  tokenSecret: string;
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
  /** On SIGTERM, wait this long for sessions to end before closing them. Default 10 000 ms. */
  drainMs: number;
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
  /** PEM certificate and key for WebTransport; default: self-signed, rotated before expiry. */
  certFile?: string;
  keyFile?: string;
}

export const DEFAULTS: Omit<RelayOptions, 'tokenSecret'> = {
  host: '127.0.0.1',
  httpPort: 8080,
  wtPort: 4433,
  allowBackends: [],
  maxSessions: 10_000,
  handshakeTimeoutMs: 5_000,
  maxDatagramBytes: 1_500,
  maxDatagramsPerSecond: 5_000,
  maxBytesPerSecond: 8_000_000,
  clientQueueBytes: 256 * 1024,
  idleTimeoutMs: 30_000,
  resumeWindowMs: 10_000,
  drainMs: 10_000,
  production: false,
  testControl: false,
};

export function validate(o: RelayOptions): RelayOptions {
  const fail = (m: string): never => {
    throw new TypeError(`relay options: ${m}`);
  };
  if (typeof o.tokenSecret !== 'string' || Buffer.byteLength(o.tokenSecret) < 16) fail('tokenSecret must be at least 16 bytes');
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
  ] as const) {
    const v = o[k];
    if (!Number.isInteger(v) || v < min || v > max) fail(`${k} must be an integer in ${min}..${max}, got ${String(v)}`);
  }
  if (o.production && (o.testControl || o.impairment)) fail('testControl and impairment are refused in production mode');
  if (o.impairment !== undefined && !(NETWORK_PROFILES as readonly string[]).includes(o.impairment))
    fail(`impairment must be one of ${NETWORK_PROFILES.join(', ')}, got ${JSON.stringify(o.impairment)}`);
  for (const b of o.allowBackends) if (!/^[^:\s]+:(\d{1,5}|\*)$/.test(b)) fail(`allowBackends entry ${JSON.stringify(b)} is not "host:port" or "host:*"`);
  return o;
}

/** True if `backend` ("host:port") is on the allowlist. */
export function backendAllowed(allow: readonly string[], backend: string): boolean {
  const i = backend.lastIndexOf(':');
  const host = backend.slice(0, i);
  return allow.some((a) => a === backend || a === `${host}:*`);
}

const ENV: Record<string, keyof RelayOptions> = {
  RICOCHET_RELAY_HOST: 'host',
  RICOCHET_RELAY_HTTP_PORT: 'httpPort',
  RICOCHET_RELAY_WT_PORT: 'wtPort',
  RICOCHET_RELAY_TOKEN_SECRET: 'tokenSecret',
  RICOCHET_RELAY_ALLOW_BACKENDS: 'allowBackends',
  RICOCHET_RELAY_MAX_SESSIONS: 'maxSessions',
  RICOCHET_RELAY_PRODUCTION: 'production',
};

function coerce(key: keyof RelayOptions, raw: string): unknown {
  const sample = (DEFAULTS as Record<string, unknown>)[key];
  if (key === 'allowBackends') return raw.split(',').map((s) => s.trim()).filter(Boolean);
  if (typeof sample === 'number') return Number(raw);
  if (typeof sample === 'boolean') return raw === 'true' || raw === '1';
  return raw;
}

/** Options from argv (flags named like the fields, kebab-case) over env over file over defaults. */
export function loadOptions(argv: string[], env: NodeJS.ProcessEnv = process.env): RelayOptions {
  const flags: Record<string, { type: 'string' | 'boolean' }> = { config: { type: 'string' } };
  const kebab = (k: string) => k.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
  for (const k of [...Object.keys(DEFAULTS), 'tokenSecret', 'certFile', 'keyFile', 'impairment']) {
    flags[kebab(k)] = { type: typeof (DEFAULTS as Record<string, unknown>)[k] === 'boolean' ? 'boolean' : 'string' };
  }
  const { values } = parseArgs({ args: argv, options: flags, strict: true, allowPositionals: false });
  let o: Record<string, unknown> = { ...DEFAULTS };
  if (typeof values.config === 'string') o = { ...o, ...JSON.parse(readFileSync(values.config, 'utf8')) };
  for (const [name, key] of Object.entries(ENV)) if (env[name] !== undefined) o[key] = coerce(key, env[name]!);
  for (const k of [...Object.keys(DEFAULTS), 'tokenSecret', 'certFile', 'keyFile', 'impairment'] as (keyof RelayOptions)[]) {
    const v = values[kebab(k)];
    if (v !== undefined) o[k] = typeof v === 'string' ? coerce(k, v) : v;
  }
  return validate(o as unknown as RelayOptions);
}
