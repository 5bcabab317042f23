// The public HTTP listener's first line of defence: request targets parsed
// without throwing, and caps on TCP connections that carry no session yet
// (in total and per client address), so one host cannot hold every slot.
import type { Socket } from 'node:net';
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

  /** A new connection: true if it is within the caps (then it is counted until promoted or closed). */
  admit(socket: Socket): boolean {
    const addr = socket.remoteAddress ?? '?';
    const n = this.byAddress.get(addr) ?? 0;
    if (this.total >= this.maxTotal || n >= this.maxPerAddress) return false;
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
 * Plain HTTP requests (health, metrics, 404s) per client address: a token
 * bucket each, so pipelining thousands of requests down a few connections
 * costs the relay a few dozen renders, not its event loop. Addresses idle
 * for a minute are forgotten.
 */
export class RequestBudget {
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

  /** True if a request from `address` may be served now. */
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
