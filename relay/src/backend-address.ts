// Game-server addresses as tokens and the allowlist name them: "host:port",
// with a DNS name or IPv4 host, or "[v6]:port". Parsed strictly, because a
// port the socket layer refuses (0, 99999, "abc") throws synchronously.
import { isIP } from 'node:net';

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

/** An allowlist entry: an exact backend or "host:*" (any port on that host). */
export function parseAllowEntry(raw: string): { host: string; port: number | '*' } | null {
  const i = raw.lastIndexOf(':');
  if (i <= 0) return null;
  const host = parseHost(raw.slice(0, i));
  const portPart = raw.slice(i + 1);
  const port = portPart === '*' ? '*' : parsePort(portPart);
  return host === null || port === null ? null : { host, port };
}

/** True if `backend` is a valid address on the allowlist. */
export function backendAllowed(allow: readonly string[], backend: string): boolean {
  const b = parseBackend(backend);
  if (!b) return false;
  return allow.some((a) => {
    const e = parseAllowEntry(a);
    return e !== null && e.host.toLowerCase() === b.host.toLowerCase() && (e.port === '*' || e.port === b.port);
  });
}
