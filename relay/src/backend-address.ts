// Game-server addresses as tokens and the allowlist name them: "host:port",
// with a DNS name or IPv4 host, or "[v6]:port". Parsed strictly, because a
// port the socket layer refuses (0, 99999, "abc") throws synchronously.
import { isIP } from 'node:net';
import { ipMatcher, parseIpRange } from './ip-range.js';

export interface BackendAddress {
  /** DNS name or IP literal (an IPv6 literal without its brackets). */
  host: string;
  /** 1–65535. */
  port: number;
}

const HOSTNAME = /^(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*\.?$/;

/** The host part of "host:port" (brackets removed from IPv6), or null if it is not a host. */
export function parseHost(raw: string): string | null {
  if (raw.startsWith('[') && raw.endsWith(']')) {
    const v6 = raw.slice(1, -1);
    return isIP(v6) === 6 ? v6 : null;
  }
  return HOSTNAME.test(raw) || isIP(raw) === 4 ? raw : null;
}

/** A port string: decimal digits only, 1–65535. */
export function parsePort(raw: string): number | null {
  if (!/^\d{1,5}$/.test(raw)) return null;
  const port = Number(raw);
  return port >= 1 && port <= 65535 ? port : null;
}

/** "host:port" → address, or null when either part is invalid. */
export function parseBackend(raw: unknown): BackendAddress | null {
  if (typeof raw !== 'string' || raw.length > 300) return null;
  const i = raw.lastIndexOf(':');
  if (i <= 0) return null;
  const host = parseHost(raw.slice(0, i));
  const port = parsePort(raw.slice(i + 1));
  return host === null || port === null ? null : { host, port };
}

/** An allowlist entry: which hosts (one, or an IP subnet) and which ports (lo..hi). */
export interface AllowEntry {
  host: (host: string) => boolean;
  ports: [number, number];
}

/**
 * An allowlist entry: "host:port", "host:*" (any port), "host:lo-hi" (a port
 * range), and for each an IP subnet in place of the host ("10.0.0.0/16:*",
 * "[fd00::/64]:7000-7999") for game servers on a cluster's node addresses,
 * which change as nodes come and go. A subnet matches IP literals only (no
 * name is resolved).
 */
export function parseAllowEntry(raw: string): AllowEntry | null {
  const i = raw.lastIndexOf(':');
  if (i <= 0) return null;
  const ports = parsePorts(raw.slice(i + 1));
  const hostPart = raw.slice(0, i);
  const host = hostPart.includes('/') ? parseSubnet(hostPart) : exactHost(hostPart);
  return host === null || ports === null ? null : { host, ports };
}

function exactHost(raw: string): AllowEntry['host'] | null {
  const h = parseHost(raw)?.toLowerCase();
  return h === undefined ? null : (x) => x.toLowerCase() === h;
}

/** "10.0.0.0/16" or "[fd00::/64]" (IPv6 in brackets, as in host:port). */
function parseSubnet(raw: string): AllowEntry['host'] | null {
  const bracketed = raw.startsWith('[') && raw.endsWith(']');
  const range = parseIpRange(bracketed ? raw.slice(1, -1) : raw);
  if (range === null || range.prefix === null || (range.family === 'ipv6') !== bracketed) return null;
  return ipMatcher([range]);
}

function parsePorts(raw: string): [number, number] | null {
  if (raw === '*') return [1, 65535];
  const range = /^(\d{1,5})-(\d{1,5})$/.exec(raw);
  if (!range) {
    const p = parsePort(raw);
    return p === null ? null : [p, p];
  }
  const lo = parsePort(range[1]!);
  const hi = parsePort(range[2]!);
  return lo === null || hi === null || lo > hi ? null : [lo, hi];
}

/** True if `backend` is a valid address on the allowlist. */
export function backendAllowed(allow: readonly string[], backend: string): boolean {
  const b = parseBackend(backend);
  if (!b) return false;
  return allow.some((a) => {
    const e = parseAllowEntry(a);
    return e !== null && e.host(b.host) && b.port >= e.ports[0] && b.port <= e.ports[1];
  });
}
