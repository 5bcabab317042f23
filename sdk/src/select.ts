// Transport selection: WebTransport first, WebSocket when it is unavailable,
// blocked, or slower to open than a deadline, or (for a while) after a
// WebTransport session to the same endpoint stalled. The app sees which was
// chosen and why, and can force one.
import { reasonOf, RicochetError } from './errors.js';
import type { Transport } from './transport.js';
import { WebSocketTransport, type WebSocketConstructor } from './websocket.js';
import { recentWebTransportStall, WebTransportTransport } from './webtransport.js';

export type TransportKind = 'webtransport' | 'websocket';

export interface OpenTransportOptions {
  /** https://host:port/path for WebTransport (the connect token may ride in the query). */
  webTransportUrl?: string;
  /** Hex sha-256 hashes of the server's development certificate. */
  serverCertificateHashes?: string[];
  /** ws(s)://host:port/path for the WebSocket fallback. */
  webSocketUrl?: string;
  /** WebSocket constructor for runtimes without a global one (Node 20: `ws`). */
  WebSocket?: WebSocketConstructor;
  /**
   * Fall back if WebTransport is not ready within this long. Default 1500 ms;
   * with `force: 'webtransport'` (nothing to fall back to) 10 000 ms, so a
   * handshake that lost a packet or two on a lossy link still completes.
   */
  deadlineMs?: number;
  /** Use only this transport. */
  force?: TransportKind;
  /**
   * After a WebTransport session to the same endpoint (origin and path) in
   * this page stalled (writes stopped completing, or a connection heard
   * nothing on it for `silenceTimeoutMs` and moved on): `'websocket'`
   * (default) opens WebSocket first for `stallMemoryMs`, and WebTransport only
   * if WebSocket fails; `'webtransport'` ignores stalls. Without this, a
   * `reconnect` built on `openTransport` would resume onto a new WebTransport
   * session that stalls the same way. `forgetWebTransportStalls()` clears the
   * memory. `force` overrides it.
   */
  afterStall?: TransportKind;
  /** How long a stall steers `openTransport` to WebSocket. Default 300 000 ms (5 minutes). */
  stallMemoryMs?: number;
  /** `WebTransportOptions.stallTimeoutMs` for the session opened. Default 2000 ms; 0 disables. */
  stallTimeoutMs?: number;
}

export interface TransportChoice {
  transport: Transport;
  kind: TransportKind;
  /** Why WebTransport was not used, when it was not. */
  fallbackReason?: string;
  /** Time from start to an open transport, ms. */
  elapsedMs: number;
}

export async function openTransport(o: OpenTransportOptions): Promise<TransportChoice> {
  const t0 = performance.now();
  const done = (transport: Transport, kind: TransportKind, fallbackReason?: string): TransportChoice => ({
    transport,
    kind,
    elapsedMs: performance.now() - t0,
    ...(fallbackReason !== undefined ? { fallbackReason } : {}),
  });
  const openWebTransport = async (): Promise<WebTransportTransport> =>
    WebTransportTransport.connect(o.webTransportUrl!, {
      ...(o.serverCertificateHashes ? { serverCertificateHashes: o.serverCertificateHashes } : {}),
      ...(o.stallTimeoutMs !== undefined ? { stallTimeoutMs: o.stallTimeoutMs } : {}),
      timeoutMs: o.deadlineMs ?? (o.force === 'webtransport' ? 10_000 : 1500),
    });
  // WebSocket first after a recent WebTransport stall; WebTransport only if WebSocket fails.
  const stall = !o.force && (o.afterStall ?? 'websocket') === 'websocket' && o.webTransportUrl && o.webSocketUrl && WebTransportTransport.available()
    ? recentWebTransportStall(o.webTransportUrl, o.stallMemoryMs ?? 300_000)
    : null;
  if (stall) {
    const reason = `webtransport to this endpoint stalled ${Math.round(stall.agoMs)} ms ago (${stall.reason}); websocket first`;
    try {
      const ws = await WebSocketTransport.connect(o.webSocketUrl!, o.WebSocket ? { WebSocket: o.WebSocket } : {});
      return done(ws, 'websocket', reason);
    } catch (e) {
      try {
        return done(await openWebTransport(), 'webtransport');
      } catch (e2) {
        throw new RicochetError('RICOCHET_ERR_TRANSPORT_FAILED', `no transport: ${reasonOf(e)}; then webtransport: ${reasonOf(e2)}`);
      }
    }
  }
  let reason: string | undefined;
  if (o.force !== 'websocket') {
    if (!o.webTransportUrl) reason = 'no webTransportUrl given';
    else if (!WebTransportTransport.available()) reason = 'WebTransport is not available in this runtime';
    else {
      try {
        return done(await openWebTransport(), 'webtransport');
      } catch (e) {
        reason = reasonOf(e);
      }
    }
    if (o.force === 'webtransport') throw new RicochetError('RICOCHET_ERR_TRANSPORT_FAILED', reason);
  } else reason = 'forced websocket';
  if (!o.webSocketUrl) throw new RicochetError('RICOCHET_ERR_TRANSPORT_FAILED', `no transport: ${reason}; and no webSocketUrl given`);
  const ws = await WebSocketTransport.connect(o.webSocketUrl, o.WebSocket ? { WebSocket: o.WebSocket } : {});
  return done(ws, 'websocket', reason);
}
