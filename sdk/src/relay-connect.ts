// One-line connect through a Ricochet relay: given the relay's (or its
// balancer's) base URL and a connect token, find the transports, open the
// best one and keep the session alive across transport deaths. What a
// development relay says about itself (`GET /cert-hash`: its current
// certificate hashes, whether it serves WebTransport) is fetched again on
// every connect and reconnect, so a relay restart or certificate rotation
// never leaves clients on stale hashes (and so on WebSocket for good).
import { Connection } from './connection.js';
import { RicochetError } from './errors.js';
import type { ConnectionOptions } from './options.js';
import { openTransport, type OpenTransportOptions, type TransportKind } from './select.js';
import type { Transport } from './transport.js';

/** `Name`: the declared channels' names (see `ConnectionOptions`). */
export interface RelayConnectOptions<Name extends string = string> extends ConnectionOptions<Name> {
  /** UDP port of the relay's WebTransport (HTTP/3) listener. Default: the URL's port (a balancer serving both on 443). */
  webTransportPort?: number;
  /** Use only this transport. */
  force?: TransportKind;
  /** Passed to `openTransport` (fallback deadline, stall memory, …). */
  transport?: Omit<OpenTransportOptions, 'webTransportUrl' | 'webSocketUrl' | 'serverCertificateHashes' | 'force'>;
  /** `fetch` for `/cert-hash` (tests, or runtimes without a global one). */
  fetch?: (url: string) => Promise<{ ok: boolean; status: number; json(): Promise<unknown> }>;
}

/** What a relay's `/cert-hash` says (development relays; production relays do not serve it). */
interface RelayInfo {
  certHashes?: unknown;
  webTransport?: unknown;
}

/** Connect tokens: one string (reused for every resume), or a function asked on each attempt. */
export type TokenSource = string | (() => string | Promise<string>);

/**
 * Connect through the relay at `relayUrl` (http(s)://host:port, the relay or
 * its balancer) with `token`, and resume through it (any relay behind it)
 * whenever the transport dies. Resolves once the connection is open.
 */
export async function connectRelay<Name extends string = string>(relayUrl: string, token: TokenSource, options: RelayConnectOptions<Name> = {}): Promise<Connection<Name>> {
  const { webTransportPort, force, transport: transportOptions, fetch: fetchFn, ...connOptions } = options;
  let base: URL;
  try {
    base = new URL(relayUrl);
  } catch {
    throw new RicochetError('RICOCHET_ERR_INVALID_OPTIONS', `relayUrl: not a URL: ${relayUrl}`);
  }
  if (base.protocol !== 'http:' && base.protocol !== 'https:') throw new RicochetError('RICOCHET_ERR_INVALID_OPTIONS', `relayUrl: expected http(s)://, got ${base.protocol}`);
  const open = async (): Promise<Transport> => {
    const t = typeof token === 'function' ? await token() : token;
    const info = await relayInfo(base, fetchFn);
    const q = `/ricochet?token=${encodeURIComponent(t)}`;
    const ws = `${base.protocol === 'https:' ? 'wss' : 'ws'}://${base.host}${q}`;
    const port = webTransportPort ?? (base.port ? Number(base.port) : 443);
    const hashes = Array.isArray(info?.certHashes) ? info.certHashes.filter((h): h is string => typeof h === 'string') : [];
    const wtServed = info === null || info.webTransport === 'available';
    const o: OpenTransportOptions = {
      ...transportOptions,
      webSocketUrl: ws,
      ...(wtServed ? { webTransportUrl: `https://${base.hostname.includes(':') ? `[${base.hostname}]` : base.hostname}:${port}${q}` } : {}),
      ...(hashes.length > 0 ? { serverCertificateHashes: hashes } : {}),
      ...(force ? { force } : {}),
    };
    return (await openTransport(o)).transport;
  };
  const conn = new Connection(await open(), { ...connOptions, reconnect: connOptions.reconnect ?? (() => open()) });
  await conn.ready;
  return conn;
}

/** The relay's `/cert-hash`, or null where it is not served (production) or unreachable (then plain URLs are tried). */
async function relayInfo(base: URL, fetchFn: RelayConnectOptions['fetch']): Promise<RelayInfo | null> {
  const f = fetchFn ?? (globalThis as { fetch?: RelayConnectOptions['fetch'] }).fetch;
  if (!f) return null;
  try {
    const r = await f(new URL('/cert-hash', base).href);
    if (!r.ok) return null;
    const body = await r.json();
    return typeof body === 'object' && body !== null ? (body as RelayInfo) : null;
  } catch {
    return null; // unreachable: the transports will say why, more precisely
  }
}
