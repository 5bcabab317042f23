// Transport selection: WebTransport first, WebSocket when it is unavailable,
// blocked, or slower to open than a deadline. The app sees which was chosen
// and why, and can force one.
import { reasonOf, RicochetError } from './errors.js';
import type { Transport } from './transport.js';
import { WebSocketTransport, type WebSocketConstructor } from './websocket.js';
import { WebTransportTransport } from './webtransport.js';

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
  /** Fall back if WebTransport is not ready within this long. Default 1500 ms. */
  deadlineMs?: number;
  /** Use only this transport. */
  force?: TransportKind;
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
  let reason: string | undefined;
  if (o.force !== 'websocket') {
    if (!o.webTransportUrl) reason = 'no webTransportUrl given';
    else if (!WebTransportTransport.available()) reason = 'WebTransport is not available in this runtime';
    else {
      try {
        const wt = await WebTransportTransport.connect(o.webTransportUrl, {
          ...(o.serverCertificateHashes ? { serverCertificateHashes: o.serverCertificateHashes } : {}),
          timeoutMs: o.deadlineMs ?? 1500,
        });
        return done(wt, 'webtransport');
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
