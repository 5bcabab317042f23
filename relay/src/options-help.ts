// `ricochet-relay --help`: every option with its flag, environment variable
// and default, from one table (options.test.ts fails when an option has no
// line here).
import { DEFAULTS, envName, kebab, type RelayOptions } from './options.js';

/** One line per option, in the order shown. */
export const OPTION_HELP: Record<Exclude<keyof RelayOptions, 'tokenSecret'>, string> = {
  host: 'address to listen on (0.0.0.0 or :: for all)',
  httpPort: 'TCP port for HTTP and WebSocket (/ricochet, /healthz, /metrics, /cert-hash)',
  wtPort: 'UDP port for WebTransport (HTTP/3); -1: none',
  webTransport: 'serve WebTransport (--no-webtransport: WebSocket only)',
  wtDataPath: 'WebTransport datagrams of established sessions: native (inside the addon, never JS) or js',
  allowBackends: 'game servers tokens may name: host:port, host:*, host:lo-hi, 10.0.0.0/16:*, comma-separated',
  trustedProxies: 'balancers in front (IPs or subnets): budgets by X-Forwarded-For, not per balancer',
  tokenSecretFile: 'file holding the token secret (else RICOCHET_RELAY_TOKEN_SECRET; never a flag)',
  certFile: 'PEM certificate for WebTransport (with --key-file); reloaded on change and SIGHUP',
  keyFile: 'PEM key for --cert-file',
  certReloadMs: 'how often certificate files are checked for a renewal, ms',
  maxSessions: 'most live sessions',
  handshakeTimeoutMs: 'a link must send its first datagram (and a resumed game server answer) within, ms',
  maxDatagramBytes: 'largest datagram or WebSocket frame from a client, bytes',
  maxDatagramsPerSecond: 'per-session limit toward the game server, datagrams/s',
  maxBytesPerSecond: 'per-session limit toward the game server, bytes/s',
  clientQueueBytes: 'bytes queued toward a WebSocket client before datagrams are dropped',
  idleTimeoutMs: 'close a session idle both ways for this long, ms',
  resumeWindowMs: 'keep a session whose client link dropped for a resume, ms; 0: none',
  resumeTokenMaxAgeSeconds: "take over another relay's session on a token expired up to this long, s",
  drainNoticeMs: 'on SIGTERM, keep serving (healthz 503) this long before moving clients, ms',
  drainMs: 'on SIGTERM, stop within this long, ms',
  closeGraceMs: 'a closed link is cut this long after its close if the peer never answers, ms',
  tokenLeewaySeconds: 'clock skew allowed on token times, s',
  maxTokenLifetimeSeconds: 'longest exp - iat accepted, s',
  replayCacheSize: 'used tokens remembered (single use); full: new sessions refused',
  maxPendingConnections: 'connections without a session yet, in total (TCP, and QUIC handshakes)',
  maxPendingPerAddress: 'the same per client address',
  maxHeaderBytes: 'largest HTTP request head, bytes (larger: 431)',
  metricsPort: 'a separate listener for /metrics and /healthz; -1: none',
  metricsHost: 'address of the metrics listener',
  production: 'refuse development endpoints (/cert-hash, test control, impairment)',
  testControl: 'serve /test/impairment and /test/kill-transports (never in production)',
  impairment: 'simulate a network for every session: lan, wifi, mobile_lossy, s1_5pct, ...',
};

/** The options part of --help. */
export function optionsHelp(): string {
  const keys = [...Object.keys(OPTION_HELP)] as (keyof typeof OPTION_HELP)[];
  const rows = keys.map((k) => {
    const d = (DEFAULTS as Record<string, unknown>)[k];
    const shown = d === undefined ? '' : Array.isArray(d) ? (d.length ? d.join(',') : 'none') : String(d);
    const flag = typeof d === 'boolean' ? `--${kebab(k)}` : `--${kebab(k)} ${typeof d === 'number' ? 'N' : 'S'}`;
    return [flag, envName(k), shown ? `default ${shown}` : '', OPTION_HELP[k]];
  });
  const w = [0, 1, 2].map((i) => Math.max(...rows.map((r) => r[i]!.length)));
  return rows.map((r) => `  ${r[0]!.padEnd(w[0]!)}  ${r[1]!.padEnd(w[1]!)}  ${r[2]!.padEnd(w[2]!)}  ${r[3]}`).join('\n');
}
