// WebSocket transport: each binary message carries one datagram. Works with
// the browser's WebSocket and with Node's `ws` (pass it as `WebSocket`).
// Over TCP the send buffer is bounded: while it is full, `canSend` is false
// and messages wait in the core, so unreliable channels keep their meaning.
import { redactTokens, relayClose, RicochetError, type RelayClose } from './errors.js';
import type { Transport } from './transport.js';

/** The subset of the WebSocket API used here (browser and `ws` both fit). */
export interface WebSocketLike {
  binaryType: string;
  readonly bufferedAmount: number;
  readonly readyState: number;
  send(data: Uint8Array): void;
  close(code?: number, reason?: string): void;
  onopen: ((ev: unknown) => void) | null;
  onmessage: ((ev: { data: unknown }) => void) | null;
  onclose: ((ev: { code?: number; reason?: string }) => void) | null;
  onerror: ((ev: unknown) => void) | null;
}

export type WebSocketConstructor = new (url: string) => WebSocketLike;

export interface WebSocketTransportOptions {
  /** Constructor to use; default `globalThis.WebSocket` (pass `ws`'s in Node 20). */
  WebSocket?: WebSocketConstructor;
  /** Give up opening after this long. Default 5000 ms. */
  timeoutMs?: number;
  /** Bytes buffered in the socket before `canSend` turns false. Default 64 KiB. */
  highWaterBytes?: number;
  /** Datagram size the core uses. Default 1200 (same as the UDP path the relay forwards to). */
  maxDatagramSize?: number;
}

const OPEN = 1;

export class WebSocketTransport implements Transport {
  readonly kind = 'websocket';
  readonly maxDatagramSize: number;
  private readonly ws: WebSocketLike;
  private readonly highWater: number;
  private onData: ((d: Uint8Array) => void) | null = null;
  private onClosed: ((reason: string, relay?: RelayClose | null) => void) | null = null;
  private onWritableHandler: (() => void) | null = null;
  private drainTimer: ReturnType<typeof setTimeout> | null = null;
  private closed = false;

  private constructor(ws: WebSocketLike, options: WebSocketTransportOptions) {
    this.ws = ws;
    this.maxDatagramSize = options.maxDatagramSize ?? 1200;
    this.highWater = options.highWaterBytes ?? 64 * 1024;
    ws.onmessage = (ev) => {
      const d = ev.data;
      if (d instanceof ArrayBuffer) this.onData?.(new Uint8Array(d));
      else if (ArrayBuffer.isView(d)) this.onData?.(new Uint8Array(d.buffer, d.byteOffset, d.byteLength));
    };
    ws.onclose = (ev) => this.finish(`websocket closed (${ev.code ?? 0}${ev.reason ? `: ${ev.reason}` : ''})`, relayClose(ev.code, ev.reason));
    ws.onerror = () => this.finish('websocket error');
  }

  /** Open a WebSocket to `url` and resolve once it is open. */
  static connect(url: string, options: WebSocketTransportOptions = {}): Promise<WebSocketTransport> {
    const Ctor = options.WebSocket ?? (globalThis as { WebSocket?: WebSocketConstructor }).WebSocket;
    if (!Ctor) return Promise.reject(new RicochetError('RICOCHET_ERR_TRANSPORT_UNAVAILABLE', 'no WebSocket implementation: pass options.WebSocket'));
    return new Promise((resolve, reject) => {
      const ws = new Ctor(url);
      ws.binaryType = 'arraybuffer';
      const timer = setTimeout(() => {
        ws.close();
        reject(new RicochetError('RICOCHET_ERR_TRANSPORT_FAILED', `websocket did not open within ${options.timeoutMs ?? 5000} ms`));
      }, options.timeoutMs ?? 5000);
      ws.onopen = () => {
        clearTimeout(timer);
        resolve(new WebSocketTransport(ws, options));
      };
      ws.onerror = () => {
        clearTimeout(timer);
        reject(new RicochetError('RICOCHET_ERR_TRANSPORT_FAILED', `websocket to ${redactTokens(url)} failed`));
      };
      ws.onclose = (ev) => {
        clearTimeout(timer);
        const reason = `websocket closed while opening (${ev.code ?? 0}${ev.reason ? `: ${ev.reason}` : ''})`;
        reject(new RicochetError('RICOCHET_ERR_TRANSPORT_FAILED', reason, undefined, { reason, relay: relayClose(ev.code, ev.reason) }));
      };
    });
  }

  canSend(): boolean {
    if (this.closed || this.ws.readyState !== OPEN) return false;
    if (this.ws.bufferedAmount < this.highWater) return true;
    this.watchDrain();
    return false;
  }

  /** Browsers have no drain event: poll until the buffer empties below the mark. */
  private watchDrain(): void {
    if (this.drainTimer !== null) return;
    const check = () => {
      this.drainTimer = null;
      if (this.closed) return;
      if (this.ws.bufferedAmount < this.highWater) this.onWritableHandler?.();
      else this.drainTimer = setTimeout(check, 4);
    };
    this.drainTimer = setTimeout(check, 4);
  }

  send(datagram: Uint8Array): void {
    if (this.closed || this.ws.readyState !== OPEN) return;
    this.ws.send(datagram.slice());
  }

  onDatagram(handler: (d: Uint8Array) => void): void {
    this.onData = handler;
  }
  onClose(handler: (reason: string, relay?: RelayClose | null) => void): void {
    this.onClosed = handler;
  }
  onWritable(handler: () => void): void {
    this.onWritableHandler = handler;
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    if (this.drainTimer !== null) clearTimeout(this.drainTimer);
    this.ws.close(1000, 'closed');
  }

  private finish(reason: string, relay: RelayClose | null = null): void {
    if (this.closed) return;
    this.closed = true;
    if (this.drainTimer !== null) clearTimeout(this.drainTimer);
    this.onClosed?.(reason, relay);
  }
}
