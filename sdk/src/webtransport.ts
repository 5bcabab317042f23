// WebTransport datagram transport (browsers). The datagram size follows the
// session's maxDatagramSize, read live (it can change); sends are paced by a token bucket because
// unpaced bursts are dropped inside the QUIC stack without error.
//
// Outgoing datagrams go through `datagrams.writable` where the browser has it
// (Chromium, Firefox), else through a stream from `datagrams.createWritable()`
// (the current W3C API; Safari 26.4 has only that). Either way the same
// pacing and counters apply.
//
// A session can stall without closing (reports from Safari: flow-control
// credit that never refills): datagram writes stop completing. A write left
// unfinished for `stallTimeoutMs` ends the transport with a "stalled" reason,
// so a connection with `reconnect` resumes elsewhere; the stall is remembered
// (see `openTransport`'s `afterStall`) so the next transport is not the same
// stalling WebTransport.
import { timeout } from './clock.js';
import { reasonOf, relayClose, RicochetError, type RelayClose } from './errors.js';
import { TransportBase } from './transport-base.js';

/** What `datagrams.createWritable()` takes (W3C WebTransport, `WebTransportSendOptions`). */
interface WebTransportSendOptions {
  sendGroup?: unknown;
  sendOrder?: number;
}
interface WebTransportDatagrams {
  readonly maxDatagramSize?: number;
  outgoingHighWaterMark?: number;
  incomingHighWaterMark?: number;
  readonly readable: ReadableStream<Uint8Array>;
  /** Legacy single writable (Chromium, Firefox); absent in Safari 26.4 and removed from the spec. */
  readonly writable?: WritableStream<Uint8Array>;
  /** Current API: a new `WebTransportDatagramsWritable` (a WritableStream) per call. */
  createWritable?(options?: WebTransportSendOptions): WritableStream<Uint8Array>;
}
interface WebTransportLike {
  readonly ready: Promise<void>;
  readonly closed: Promise<unknown>;
  readonly datagrams: WebTransportDatagrams;
  readonly incomingUnidirectionalStreams?: ReadableStream<ReadableStream<Uint8Array>>;
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
  /**
   * End the transport as stalled when a datagram write has not completed for
   * this long while the page's timers ran on time (a throttled or busy page
   * does not count). Browsers complete a datagram write within milliseconds,
   * sent or dropped; one that never does is a session that stopped sending.
   * 0 disables. Default 2000 ms, so that a connection with `reconnect`
   * resumes before its peer's keepalives are missed for long.
   */
  stallTimeoutMs?: number;
}

/** How this transport hands datagrams to the browser. */
export type DatagramWriterSource = 'writable' | 'createWritable';

/** Pick the outgoing datagram stream: `datagrams.writable` if present, else `datagrams.createWritable()`. */
function datagramWritable(d: WebTransportDatagrams): { stream: WritableStream<Uint8Array>; source: DatagramWriterSource } {
  if (d.writable) return { stream: d.writable, source: 'writable' };
  if (typeof d.createWritable === 'function') return { stream: d.createWritable({}), source: 'createWritable' };
  throw new RicochetError('RICOCHET_ERR_TRANSPORT_UNAVAILABLE', 'webtransport: this browser offers neither datagrams.writable nor datagrams.createWritable()');
}

// Stalls seen in this page, by WebTransport endpoint (origin + path, no query:
// the token changes). `openTransport` reads them to prefer WebSocket for a while.
const stalls = new Map<string, { at: number; reason: string }>();

function endpointOf(url: string): string {
  return url.split(/[?#]/)[0] ?? url;
}

/** Remember that a WebTransport session to `url`'s endpoint stalled now. */
export function recordWebTransportStall(url: string, reason: string): void {
  stalls.set(endpointOf(url), { at: performance.now(), reason });
}

/** The last stall recorded for `url`'s endpoint within `withinMs`, if any. */
export function recentWebTransportStall(url: string, withinMs: number): { agoMs: number; reason: string } | null {
  const s = stalls.get(endpointOf(url));
  if (!s) return null;
  const agoMs = performance.now() - s.at;
  return agoMs <= withinMs ? { agoMs, reason: s.reason } : null;
}

/**
 * Forget every WebTransport stall this page has recorded, so `openTransport`
 * tries WebTransport first again (e.g. a user's "retry WebTransport").
 */
export function forgetWebTransportStalls(): void {
  stalls.clear();
}

function hexToBytes(hex: string): Uint8Array {
  const clean = hex.replace(/[^0-9a-f]/gi, '');
  const out = new Uint8Array(clean.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = parseInt(clean.slice(i * 2, i * 2 + 2), 16);
  return out;
}

/**
 * The relay's close notice (relay/native/src/lib.rs, `close_task`): before it
 * ends a session it sends one unidirectional stream of "RCLS", the close code
 * (u16, big-endian) and the reason (UTF-8, ≤ 123 bytes), because Chromium may
 * report the session close itself as "Connection lost", code and reason lost.
 */
const NOTICE_MAX = 129;

const noop = () => {};

/**
 * The close notice in the first incoming unidirectional stream, or null (no
 * stream, or not a notice). Hostile input is bounded: at most NOTICE_MAX
 * bytes are read from that stream, and every later stream is cancelled unread.
 */
async function closeNotice(streams?: ReadableStream<ReadableStream<Uint8Array>>): Promise<RelayClose | null> {
  const rd = streams?.getReader();
  const first = await rd?.read().catch(noop);
  void (async () => {
    for (let r; (r = await rd!.read()).value; ) void r.value.cancel().catch(noop);
  })().catch(noop);
  const s = first?.value?.getReader();
  if (!s) return null;
  const b = new Uint8Array(NOTICE_MAX);
  let n = 0;
  try {
    // set() throws past NOTICE_MAX bytes.
    for (let r; !(r = await s.read()).done; n += r.value.length) b.set(r.value, n);
    if (n > 5 && String.fromCharCode(...b.subarray(0, 4)) === 'RCLS') return relayClose((b[4]! << 8) | b[5]!, new TextDecoder('utf-8', { fatal: true }).decode(b.subarray(6, n)));
  } catch {
    void s.cancel().catch(noop);
  }
  return null;
}

const QUEUE_LIMIT = 512;
/** Writes handed to the browser and not yet completed, beyond which datagrams wait in our queue. */
const IN_FLIGHT_LIMIT = 256;

export class WebTransportTransport extends TransportBase {
  readonly kind = 'webtransport';
  /** Where outgoing datagrams go: `datagrams.writable`, or a stream from `datagrams.createWritable()`. */
  readonly datagramWriter: DatagramWriterSource;
  private readonly wt_: WebTransportLike;
  private readonly url_: string;
  private readonly writer_: WritableStreamDefaultWriter<Uint8Array>;
  private readonly queue_: Uint8Array[] = [];
  private tokens_: number;
  private lastRefill_ = performance.now();
  /** Cancels the pacing queue's pending pump. */
  private pump_: (() => void) | null = null;
  /** The session itself was closed (by us, or it ended). */
  private sessionClosed_ = false;
  private readonly rate_: number;
  private readonly burst_: number;
  private readonly stallMs_: number;
  /** Start times of writes not yet completed, oldest first (a stream completes writes in order). */
  private readonly inFlight_: number[] = [];
  private stallTimer_: ReturnType<typeof setInterval> | null = null;
  private lastStallCheck_ = performance.now();
  /** Pending writes count as pending only from here (moved on when the page's timers ran late). */
  private stallBaseline_ = performance.now();
  /** Datagrams dropped because the pacing queue was full. */
  dropped = 0;
  /** Datagrams dropped because they exceeded maxDatagramSize (the run loop
   *  then follows the new size; reliable data is sent again). */
  oversized = 0;
  /** Most datagram writes the browser held uncompleted at once. */
  maxInFlight = 0;
  /** Why this transport was judged stalled, if it was (a write that never completed, or silence). */
  stalled: string | null = null;

  private constructor(wt: WebTransportLike, url: string, options: WebTransportOptions) {
    super();
    this.wt_ = wt;
    this.url_ = url;
    this.rate_ = options.datagramsPerMs ?? 4;
    this.burst_ = options.burst ?? 32;
    this.stallMs_ = options.stallTimeoutMs ?? 2000;
    this.tokens_ = this.burst_;
    const d = wt.datagrams;
    try {
      d.outgoingHighWaterMark = Math.max(d.outgoingHighWaterMark ?? 1, this.burst_);
      d.incomingHighWaterMark = Math.max(d.incomingHighWaterMark ?? 1, 256);
    } catch {
      // Not settable in this browser: the defaults apply.
    }
    const w = datagramWritable(d);
    this.datagramWriter = w.source;
    this.writer_ = w.stream.getWriter();
    void this.readLoop_(d.readable.getReader());
    const notice = closeNotice(wt.incomingUnidirectionalStreams);
    void notice.then((r) => {
      if (!r) return;
      // Report at once, then end the session: the relay waits for that.
      this.finish(`webtransport closed (${r.code}: ${r.reason})`, r);
      this.close();
    });
    // A notice still being read when the session ends gets a moment to arrive.
    const settled = (reason: string, relay: RelayClose | null) =>
      Promise.race([notice, new Promise<null>((r) => setTimeout(r, 20, null))]).then((r) => this.ended_(reason, r ?? relay));
    wt.closed.then(
      (info) => {
        const i = info as { closeCode?: number; reason?: string } | undefined;
        void settled(`webtransport closed${describe(info)}`, relayClose(i?.closeCode, i?.reason));
      },
      (e) => void settled(`webtransport failed: ${reasonOf(e)}`, null),
    );
    if (this.stallMs_ > 0) {
      const every = Math.max(10, Math.min(250, this.stallMs_ / 4));
      this.stallTimer_ = setInterval(() => this.checkStall_(every), every);
    }
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
      return new WebTransportTransport(wt, url, options);
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
  }

  private async readLoop_(reader: ReadableStreamDefaultReader<Uint8Array>): Promise<void> {
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        if (value) this.deliver(value);
      }
    } catch {
      // The session ended; `closed` reports why.
    }
  }

  /** Largest datagram the session takes now (Firefox: 1024; it may change). */
  get maxDatagramSize(): number {
    return this.wt_.datagrams.maxDatagramSize ?? 1200;
  }

  canSend(): boolean {
    return !this.closed && this.queue_.length < QUEUE_LIMIT / 2;
  }

  send(datagram: Uint8Array): void {
    if (this.closed) return;
    if (datagram.length > this.maxDatagramSize) {
      this.oversized++;
      return;
    }
    if (this.queue_.length >= QUEUE_LIMIT) {
      this.dropped++;
      return;
    }
    this.queue_.push(datagram.slice());
    this.flush_();
  }

  private flush_(): void {
    if (this.closed) return;
    const now = performance.now();
    this.tokens_ = Math.min(this.burst_, this.tokens_ + (now - this.lastRefill_) * this.rate_);
    this.lastRefill_ = now;
    while (this.queue_.length > 0 && this.tokens_ >= 1 && this.inFlight_.length < IN_FLIGHT_LIMIT) {
      this.tokens_ -= 1;
      const d = this.queue_.shift()!;
      this.inFlight_.push(now);
      if (this.inFlight_.length > this.maxInFlight) this.maxInFlight = this.inFlight_.length;
      const done = () => this.writeDone_();
      this.writer_.write(d).then(done, done);
    }
    if (this.queue_.length > 0 && this.pump_ === null && this.inFlight_.length < IN_FLIGHT_LIMIT) {
      this.pump_ = timeout(() => {
        this.pump_ = null;
        const wasBlocked = !this.canSend();
        this.flush_();
        if (wasBlocked && this.canSend()) this.writable();
      }, 1);
    }
  }

  /** A write completed (sent or dropped): the browser takes datagrams again. */
  private writeDone_(): void {
    this.inFlight_.shift();
    if (this.closed || this.queue_.length === 0 || this.inFlight_.length !== IN_FLIGHT_LIMIT - 1) return;
    // We had stopped at the in-flight limit: resume.
    const wasBlocked = !this.canSend();
    this.flush_();
    if (wasBlocked && this.canSend()) this.writable();
  }

  /** Runs every `every` ms: a write pending for stallTimeoutMs of on-time timers ends the transport. */
  private checkStall_(every: number): void {
    const now = performance.now();
    // Timers ran late (a background tab, a busy page): the browser may not
    // have had its chance either, so pending writes start counting again.
    if (now - this.lastStallCheck_ > every * 2 + 50) this.stallBaseline_ = now;
    this.lastStallCheck_ = now;
    const oldest = this.inFlight_[0];
    if (oldest === undefined || this.closed) return;
    const pendingMs = now - Math.max(oldest, this.stallBaseline_);
    if (pendingMs >= this.stallMs_) {
      this.markStalled(`webtransport stalled: a datagram write has not completed for ${Math.round(now - oldest)} ms (${this.inFlight_.length} pending)`);
      // Leave the session open: a relay ends a session whose client closes
      // on purpose. The connection closes it once a successor took over.
      this.finish(this.stalled!);
    }
  }

  /**
   * The transport still looks open but stopped delivering (its own write
   * check, or a connection's silence check). Recorded for `openTransport`'s
   * `afterStall`.
   */
  markStalled(reason: string): void {
    if (this.stalled !== null) return;
    this.stalled = reason;
    recordWebTransportStall(this.url_, reason);
  }

  close(): void {
    this.stop();
    if (this.sessionClosed_) return;
    this.sessionClosed_ = true;
    try {
      this.wt_.close({ closeCode: 0, reason: 'closed' });
    } catch {
      // already closed
    }
  }

  protected override stop(): void {
    super.stop();
    this.pump_?.();
    this.pump_ = null;
    if (this.stallTimer_ !== null) clearInterval(this.stallTimer_);
    this.stallTimer_ = null;
  }

  /** The session ended underneath. */
  private ended_(reason: string, relay: RelayClose | null = null): void {
    this.sessionClosed_ = true;
    this.finish(reason, relay);
  }
}

function describe(info: unknown): string {
  const i = info as { closeCode?: number; reason?: string } | undefined;
  return i && (i.closeCode || i.reason) ? ` (${i.closeCode ?? 0}: ${i.reason ?? ''})` : '';
}
