// WebSocket transport: each binary message carries one datagram. Works with
// the browser's WebSocket and with Node's `ws` (pass it as `WebSocket`).
// Over TCP the send buffer is bounded: while it is full, `canSend` is false
// and messages wait in the core, so unreliable channels keep their meaning.
import { redactTokens, relayClose, RicochetError } from './errors.js';
import { TransportBase } from './transport-base.js';

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

/** A close event as text: its code, and its reason if it has one. */
function closeDetail(ev: { code?: number; reason?: string }): string {
  return `${ev.code ?? 0}${ev.reason ? `: ${ev.reason}` : ''}`;
}

export class WebSocketTransport extends TransportBase {
  readonly kind = 'websocket';
  readonly maxDatagramSize: number;
  private readonly ws: WebSocketLike;
  private readonly highWater_: number;
  private drainTimer_: ReturnType<typeof setTimeout> | null = null;

  private constructor(ws: WebSocketLike, options: WebSocketTransportOptions) {
    super();
    this.ws = ws;
    this.maxDatagramSize = options.maxDatagramSize ?? 1200;
    this.highWater_ = options.highWaterBytes ?? 64 * 1024;
    ws.onmessage = (ev) => {
      const d = ev.data;
      if (d instanceof ArrayBuffer) this.deliver(new Uint8Array(d));
      else if (ArrayBuffer.isView(d)) this.deliver(new Uint8Array(d.buffer, d.byteOffset, d.byteLength));
    };
    ws.onclose = (ev) => this.finish(`websocket closed (${closeDetail(ev)})`, relayClose(ev.code, ev.reason));
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
        const reason = `websocket closed while opening (${closeDetail(ev)})`;
        reject(new RicochetError('RICOCHET_ERR_TRANSPORT_FAILED', reason, undefined, { reason, relay: relayClose(ev.code, ev.reason) }));
      };
    });
  }

  canSend(): boolean {
    if (this.closed || this.ws.readyState !== OPEN) return false;
    if (this.ws.bufferedAmount < this.highWater_) return true;
    this.watchDrain_();
    return false;
  }

  /** Browsers have no drain event: poll until the buffer empties below the mark. */
  private watchDrain_(): void {
    if (this.drainTimer_ !== null) return;
    const check = () => {
      this.drainTimer_ = null;
      if (this.closed) return;
      if (this.ws.bufferedAmount < this.highWater_) this.writable();
      else this.drainTimer_ = setTimeout(check, 4);
    };
    this.drainTimer_ = setTimeout(check, 4);
  }

  send(datagram: Uint8Array): void {
    if (this.closed || this.ws.readyState !== OPEN) return;
    this.ws.send(datagram.slice());
  }

  close(): void {
    if (this.closed) return;
    this.stop();
    this.ws.close(1000, 'closed');
  }

  protected override stop(): void {
    super.stop();
    if (this.drainTimer_ !== null) clearTimeout(this.drainTimer_);
  }
}
