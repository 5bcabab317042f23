// The HTTP listeners' first line of defence: request targets parsed without
// throwing, caps on TCP connections that carry no session yet (in total and
// per client address), per-address budgets, and the plain answers that close
// a connection without waiting on the peer.
import { STATUS_CODES, type IncomingMessage } from 'node:http';
import { isIP, type Server, type Socket } from 'node:net';
import { ipMatcher, parseIpRange } from './ip-range.js';
import type { Duplex } from 'node:stream';
import { TokenBucket } from './rate-limit.js';

/** The path and query of an origin-form request target, or null if it is not one. */
export function requestTarget(raw: string | undefined): { path: string; query: URLSearchParams } | null {
  // "//x" and "/\x" parse as a scheme-relative URL with a host: not a path.
  if (typeof raw !== 'string' || !raw.startsWith('/') || raw.startsWith('//') || raw.startsWith('/\\')) return null;
  try {
    const u = new URL(raw, 'http://relay');
    return { path: u.pathname, query: u.searchParams };
  } catch {
    return null;
  }
}

/**
 * Balancers in front of the relay (`trustedProxies`: IP literals or
 * subnets). Their connections carry many players, so per-address budgets
 * must not count the balancer as one client: a request through one is
 * charged to the address its balancer appended to X-Forwarded-For.
 */
export class TrustedProxies {
  private readonly matches: (address: string) => boolean;
  readonly any: boolean;

  constructor(entries: readonly string[]) {
    const ranges = entries.map((e) => {
      const r = parseIpRange(e);
      if (!r) throw new TypeError(`trustedProxies entry ${JSON.stringify(e)} is not an IP address or subnet`);
      return r;
    });
    this.matches = ipMatcher(ranges);
    this.any = entries.length > 0;
  }

  has(address: string | undefined): boolean {
    return this.any && !!address && this.matches(unmapped(address));
  }

  /** The client a request stands for: the balancer's last X-Forwarded-For entry, or the peer itself. */
  clientOf(req: IncomingMessage): string | undefined {
    const peer = req.socket.remoteAddress;
    if (!this.has(peer)) return peer;
    const xff = req.headers['x-forwarded-for'];
    const last = (Array.isArray(xff) ? xff.at(-1) : xff)?.split(',').at(-1)?.trim() ?? '';
    return isIP(last) ? last : peer;
  }
}

/** Node reports IPv4 peers on a dual-stack socket as ::ffff:a.b.c.d. */
const unmapped = (a: string) => (a.startsWith('::ffff:') && isIP(a.slice(7)) === 4 ? a.slice(7) : a);

/** Counts sockets that carry no session yet; refuses past the caps. */
export class PendingConnections {
  private total = 0;
  private readonly byAddress = new Map<string, number>();
  /** Each counted socket and the address it was counted under (gone from the socket once closed). */
  private readonly pending = new Map<Socket, string>();

  constructor(
    private readonly maxTotal: number,
    private readonly maxPerAddress: number,
  ) {}

  get count(): number {
    return this.total;
  }

  /**
   * A new connection: true if it is within the caps (then it is counted
   * until promoted or closed). A trusted balancer's connections carry many
   * clients, so only the total cap applies to them.
   */
  admit(socket: Socket, manyClients = false): boolean {
    const addr = socket.remoteAddress ?? '?';
    const n = this.byAddress.get(addr) ?? 0;
    if (this.total >= this.maxTotal || (!manyClients && n >= this.maxPerAddress)) return false;
    this.total++;
    this.byAddress.set(addr, n + 1);
    this.pending.set(socket, addr);
    socket.once('close', () => this.release(socket));
    return true;
  }

  /** The connection now carries a session: it no longer counts. */
  promote(socket: Socket): void {
    this.release(socket);
  }

  private release(socket: Socket): void {
    const addr = this.pending.get(socket);
    if (addr === undefined) return;
    this.pending.delete(socket);
    this.total--;
    const n = (this.byAddress.get(addr) ?? 1) - 1;
    if (n <= 0) this.byAddress.delete(addr);
    else this.byAddress.set(addr, n);
  }
}

/**
 * Events (requests, new connections) per client address: a token bucket
 * each, so pipelining thousands of requests down a few connections costs the
 * relay a few dozen renders, not its event loop. Addresses idle for a minute
 * are forgotten.
 */
export class AddressBudget {
  private readonly buckets = new Map<string, TokenBucket>();
  private sweep = performance.now();

  constructor(
    private readonly perSecond: number,
    private readonly burst: number,
  ) {}

  /** True if `address` has spent its budget (a connection from it is refused before a byte is read). */
  exhausted(address: string | undefined, now = performance.now()): boolean {
    return this.buckets.get(address ?? '?')?.available(now) === false;
  }

  /** True if one more event from `address` fits its budget now (and takes it). */
  take(address: string | undefined, now = performance.now()): boolean {
    if (now - this.sweep > 60_000) {
      this.buckets.clear();
      this.sweep = now;
    }
    const key = address ?? '?';
    let b = this.buckets.get(key);
    if (!b) this.buckets.set(key, (b = new TokenBucket(this.perSecond, this.burst, now)));
    return b.take(1, now);
  }
}

/** A whole HTTP/1.1 answer that closes its connection (a content type only with one given). */
export function closingResponse(status: number, body = '', contentType?: string): string {
  const type = contentType ? `content-type: ${contentType}\r\n` : '';
  return `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}\r\n${type}content-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`;
}

/** Write a last answer and close; a peer that never reads it loses the socket a second later. */
export function endThenDestroy(socket: Duplex, last: string): void {
  if (!socket.writable) return void socket.destroy();
  socket.end(last);
  setTimeout(() => socket.destroy(), 1000).unref();
}

/** Listen on `port` at `host`; rejects on a listen error such as EADDRINUSE. */
export function listen(server: Server, port: number, host: string): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
}
