// WebTransport datagram transport (browsers). The datagram size follows the
// session's maxDatagramSize, read live (it can change); sends are paced by a token bucket because
// unpaced bursts are dropped inside the QUIC stack without error.
import { reasonOf, RicochetError } from './errors.js';
import type { Transport } from './transport.js';

interface WebTransportDatagrams {
  readonly maxDatagramSize?: number;
  outgoingHighWaterMark?: number;
  incomingHighWaterMark?: number;
  readonly readable: ReadableStream<Uint8Array>;
  readonly writable: WritableStream<Uint8Array>;
}
interface WebTransportLike {
  readonly ready: Promise<void>;
  readonly closed: Promise<unknown>;
  readonly datagrams: WebTransportDatagrams;
  close(info?: { closeCode?: number; reason?: string }): void;
}
type WebTransportConstructor = new (url: string, options?: unknown) => WebTransportLike;

export interface WebTransportOptions {
  /** sha-256 hashes (hex) of self-signed development certificates (≤ 14 days validity). */
  serverCertificateHashes?: string[];
  /** Give up if the session is not ready within this long. Default 1500 ms. */
  timeoutMs?: number;
  /** Pacing: datagrams per millisecond. Default 4 (~4.8 MB/s at 1200 bytes). */
  datagramsPerMs?: number;
  /** Pacing burst: datagrams sent back to back before pacing applies. Default 32. */
  burst?: number;
}

function hexToBytes(hex: string): Uint8Array {
  const clean = hex.replace(/[^0-9a-f]/gi, '');
  const out = new Uint8Array(clean.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = parseInt(clean.slice(i * 2, i * 2 + 2), 16);
  return out;
}

const QUEUE_LIMIT = 512;

export class WebTransportTransport implements Transport {
  readonly kind = 'webtransport';
  private readonly wt: WebTransportLike;
  private readonly writer: WritableStreamDefaultWriter<Uint8Array>;
  private onData: ((d: Uint8Array) => void) | null = null;
  private onClosed: ((reason: string) => void) | null = null;
  private onWritableHandler: (() => void) | null = null;
  private readonly queue: Uint8Array[] = [];
  private tokens: number;
  private lastRefill = performance.now();
  private pump: ReturnType<typeof setTimeout> | null = null;
  private closed = false;
  private readonly rate: number;
  private readonly burst: number;
  /** Datagrams dropped because the pacing queue was full. */
  dropped = 0;
  /** Datagrams dropped because they exceeded maxDatagramSize (the run loop
   *  then follows the new size; reliable data is sent again). */
  oversized = 0;

  private constructor(wt: WebTransportLike, options: WebTransportOptions) {
    this.wt = wt;
    this.rate = options.datagramsPerMs ?? 4;
    this.burst = options.burst ?? 32;
    this.tokens = this.burst;
    const d = wt.datagrams;
    try {
      d.outgoingHighWaterMark = Math.max(d.outgoingHighWaterMark ?? 1, this.burst);
      d.incomingHighWaterMark = Math.max(d.incomingHighWaterMark ?? 1, 256);
    } catch {
      // Not settable in this browser: the defaults apply.
    }
    this.writer = d.writable.getWriter();
    void this.readLoop(d.readable.getReader());
    wt.closed.then(
      (info) => this.finish(`webtransport closed${describe(info)}`),
      (e) => this.finish(`webtransport failed: ${reasonOf(e)}`),
    );
  }

  /** True if this runtime has WebTransport at all. */
  static available(): boolean {
    return typeof (globalThis as { WebTransport?: unknown }).WebTransport === 'function';
  }

  /** Open a session to `url` (https://…) and resolve once it is ready. */
  static async connect(url: string, options: WebTransportOptions = {}): Promise<WebTransportTransport> {
    const Ctor = (globalThis as { WebTransport?: WebTransportConstructor }).WebTransport;
    if (!Ctor) throw new RicochetError('RICOCHET_ERR_TRANSPORT_UNAVAILABLE', 'WebTransport is not available in this runtime');
    const opts = options.serverCertificateHashes?.length
      ? { serverCertificateHashes: options.serverCertificateHashes.map((h) => ({ algorithm: 'sha-256', value: hexToBytes(h) })) }
      : {};
    let wt: WebTransportLike;
    try {
      wt = new Ctor(url, opts);
    } catch (e) {
      throw new RicochetError('RICOCHET_ERR_TRANSPORT_FAILED', `webtransport: ${reasonOf(e)}`);
    }
    const timeoutMs = options.timeoutMs ?? 1500;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new RicochetError('RICOCHET_ERR_TRANSPORT_FAILED', `webtransport handshake did not complete within ${timeoutMs} ms`)), timeoutMs);
    });
    try {
      await Promise.race([wt.ready, deadline]);
    } catch (e) {
      try {
        wt.close();
      } catch {
        // already failed
      }
      if (e instanceof RicochetError) throw e;
      throw new RicochetError('RICOCHET_ERR_TRANSPORT_FAILED', `webtransport: ${reasonOf(e)}`);
    } finally {
      clearTimeout(timer);
    }
    return new WebTransportTransport(wt, options);
  }

  private async readLoop(reader: ReadableStreamDefaultReader<Uint8Array>): Promise<void> {
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        if (value) this.onData?.(value);
      }
    } catch {
      // The session ended; `closed` reports why.
    }
  }

  /** Largest datagram the session takes now (Firefox: 1024; it may change). */
  get maxDatagramSize(): number {
    return this.wt.datagrams.maxDatagramSize ?? 1200;
  }

  canSend(): boolean {
    return !this.closed && this.queue.length < QUEUE_LIMIT / 2;
  }

  send(datagram: Uint8Array): void {
    if (this.closed) return;
    if (datagram.length > this.maxDatagramSize) {
      this.oversized++;
      return;
    }
    if (this.queue.length >= QUEUE_LIMIT) {
      this.dropped++;
      return;
    }
    this.queue.push(datagram.slice());
    this.flush();
  }

  private flush(): void {
    const now = performance.now();
    this.tokens = Math.min(this.burst, this.tokens + (now - this.lastRefill) * this.rate);
    this.lastRefill = now;
    while (this.queue.length > 0 && this.tokens >= 1) {
      this.tokens -= 1;
      const d = this.queue.shift()!;
      this.writer.write(d).catch(() => {});
    }
    if (this.queue.length > 0 && this.pump === null) {
      this.pump = setTimeout(() => {
        this.pump = null;
        const wasBlocked = !this.canSend();
        this.flush();
        if (wasBlocked && this.canSend()) this.onWritableHandler?.();
      }, 1);
    }
  }

  onDatagram(handler: (d: Uint8Array) => void): void {
    this.onData = handler;
  }
  onClose(handler: (reason: string) => void): void {
    this.onClosed = handler;
  }
  onWritable(handler: () => void): void {
    this.onWritableHandler = handler;
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    if (this.pump !== null) clearTimeout(this.pump);
    try {
      this.wt.close({ closeCode: 0, reason: 'closed' });
    } catch {
      // already closed
    }
  }

  private finish(reason: string): void {
    if (this.closed) return;
    this.closed = true;
    if (this.pump !== null) clearTimeout(this.pump);
    this.onClosed?.(reason);
  }
}

function describe(info: unknown): string {
  const i = info as { closeCode?: number; reason?: string } | undefined;
  return i && (i.closeCode || i.reason) ? ` (${i.closeCode ?? 0}: ${i.reason ?? ''})` : '';
}
