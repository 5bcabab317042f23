// One client session: a browser (over WebSocket or WebTransport) bound to
// its own UDP socket toward the backend, so the game server sees each
// browser as its own peer. The relay checks only the Ricochet packet header
// (type byte and pinned connection ID), never game messages. When the
// client's transport drops, the session is parked for `resumeWindowMs` with
// its backend socket kept, so the same client can resume it on a new
// transport and the backend never notices (see resume.ts).
//
// A session can also be taken over from another relay (one that died or is
// draining): its first datagram is DATA for a connection this relay never
// saw. The relay cannot check the session key it never learnt, so it asks the
// game server: it forwards the DATA from a new backend socket, and the server
// moves the connection there only if the packet's tag verifies (WIRE.md,
// "Path validation"). The server's first datagram back on that socket is the
// proof; without one within `handshakeTimeoutMs` the link is refused.
import { createSocket, type Socket } from 'node:dgram';
import { isIPv6 } from 'node:net';
import { attestHello, claimsJson, parseHello } from './attestation.js';
import { parseBackend } from './backend-address.js';
import { RELAY_CLOSE, closeReason, type RelayCloseCode } from './errors.js';
import type { Logger } from './log.js';
import type { RelayMetrics, TransportName } from './metrics.js';
import type { RelayOptions } from './options.js';
import { SessionImpairment, type ImpairmentSpec } from './impairment.js';
import { SlidingWindowCount, TokenBucket } from './rate-limit.js';
import { SessionProof } from './session-proof.js';
import type { TokenClaims } from './token.js';

/** The client side of a session, as a listener provides it. */
export interface ClientLink {
  readonly transport: TransportName;
  /** Deliver datagrams to the client; returns how many were dropped (backpressure). */
  send(datagrams: Uint8Array[]): number;
  close(code: number, reason: string): void;
  /** Cut the link with no close handshake, as a dying network would (test control). */
  abort(): void;
  /**
   * WebTransport with the native data path on: a backend socket inside the
   * addon (instead of Node's dgram), which the session can later attach.
   * @internal the WebTransport listener's plumbing; other links leave it out.
   */
  openBackend?(): NativeBackend;
  /**
   * Hand this link's datagrams to `b` and back inside the addon, within `limits`; false if it could not.
   * @internal the WebTransport listener's plumbing; other links leave it out.
   */
  attach?(b: NativeBackend, limits: NativeLimits): boolean;
}

/** What the addon enforces on the native data path (see native/src/lib.rs, attach_backend). */
export interface NativeLimits {
  connectionId: number;
  maxDatagramBytes: number;
  maxDatagramsPerSecond: number;
  maxBytesPerSecond: number;
  /** Largest client DATA packet number seen so far (-1: none). */
  largest: number;
  /** Copy WELCOME-shaped datagrams to JS (the resume proof still lacks the nonce). */
  watchWelcome: boolean;
}

/** Counters of a backend socket's native data path (cumulative). */
export interface NativeCounts {
  nativeUpDatagrams: number;
  nativeUpBytes: number;
  nativeDownDatagrams: number;
  nativeDownBytes: number;
}

/** A backend UDP socket owned by the addon (wt-listener.ts, AddonBackend). */
export interface NativeBackend {
  /** Resolve `host` and connect; `cb` once datagrams can be sent. Failures come to `onError`. */
  connect(port: number, host: string, cb: () => void): void;
  send(d: Uint8Array): void;
  detach(): number | null;
  counts(): NativeCounts | null;
  close(): void;
  onMessage: (d: Buffer) => void;
  onError: (code: string) => void;
  /** The addon handed the data path back (a limit broke, or the link closed). */
  onDetached: (largest: number) => void;
  /** A WELCOME-shaped datagram the addon forwarded (see `NativeLimits.watchWelcome`). */
  onObserved: (d: Buffer) => void;
}

/** What a listener holds for one client link: datagrams in, close it, it went away. */
export interface LinkHandle {
  fromClient(d: Uint8Array): void;
  close(code: RelayCloseCode, detail?: string): void;
  /** The link went away; `graceful` when the client closed it on purpose (nothing to resume). */
  clientClosed(graceful?: boolean): void;
}

/** The packet type, and the connection ID it carries, or null if this is no Ricochet packet. */
export function packetHeader(d: Uint8Array): { type: number; connId: number } | null {
  const type = d[0] ?? 0;
  if (d.length < 5 || type < 1 || type > 4) return null;
  return { type, connId: (d[1]! | (d[2]! << 8) | (d[3]! << 16) | (d[4]! << 24)) >>> 0 };
}

/** HELLO: the only packet that may open a new session. */
export const HELLO = 1;
/** DATA first: the client resumes a session another relay (or this one, earlier) carried. */
const DATA = 4;
/** Most client datagrams forwarded while a take-over waits for the game server's answer. */
const TAKEOVER_LIMIT = 64;

/** Most datagrams held while the backend socket is still connecting. */
const PENDING_LIMIT = 64;
/**
 * Over-limit traffic is judged over this sliding window: a session is closed
 * only when its drops in the window exceed what the limit allows in it (a
 * client sending over twice the limit, sustained), never for bursts.
 */
const ABUSE_WINDOW_MS = 2_000;

/**
 * How a session may begin: with a HELLO (a new connection) or DATA (a take-
 * over). `helloRefused` says why a HELLO is refused on this link (the token
 * is spent or expired), leaving only a take-over.
 */
export interface SessionStart {
  helloRefused: { code: RelayCloseCode; detail: string } | null;
}

/** What a session asks of the relay that owns it. */
export interface SessionOwner {
  /** Key of the attestations this relay puts in HELLOs (see attestation.ts). */
  readonly attestationKey: Buffer;
  /** Pin a connection ID to this session; false if another session holds it. */
  claimConnectionId(s: Session, id: number): boolean;
  /** The game server answered a take-over: `s` now carries its connection (older holders are done). */
  tookOver(s: Session): void;
  ended(s: Session, code: RelayCloseCode | 'client_closed'): void;
}

/** Ways a session ends that refuse nothing. */
const NOT_REFUSALS = new Set<RelayCloseCode>(['RELAY_SHUTTING_DOWN', 'RELAY_ERR_IDLE_TIMEOUT', 'RELAY_SESSION_MOVED', 'RELAY_SESSION_MOVING']);

export class Session {
  private socket: Socket | null = null;
  private connected = false;
  private pending: Uint8Array[] = [];
  private toClient: Uint8Array[] = [];
  private flushScheduled = false;
  private connId: number | null = null;
  private readonly packets: TokenBucket;
  private readonly bytes: TokenBucket;
  private readonly rateDrops = new SlidingWindowCount(ABUSE_WINDOW_MS);
  private lastActivity = Date.now();
  private timers: NodeJS.Timeout[] = [];
  private ended = false;
  private impairment: SessionImpairment | null = null;
  /** The client's current link; null while parked, waiting for a resume. */
  private link: ClientLink | null;
  private lastTransport: TransportName;
  private parkTimer: NodeJS.Timeout | null = null;
  /** The session key from the first HELLO: what a resume must prove. */
  private proof: SessionProof | null = null;
  /** The verified claims, as the game server receives them in each HELLO. */
  private readonly claimsBytes: Buffer;
  /** Times this session moved to a new client link. */
  resumes = 0;
  /** A take-over waiting for the game server's first datagram on this socket. */
  private takingOver = false;
  /** After a resume or take-over: ends the session unless the game server speaks first. */
  private serverCheck: NodeJS.Timeout | null = null;
  private takeoverSent = 0;
  /** The addon's backend socket (WebTransport, native data path on), used instead of `socket`. */
  private addon: NativeBackend | null = null;
  /** Datagrams flow inside the addon now (see `goNative`). */
  private nativeOn = false;
  private nativePoll: NodeJS.Timeout | null = null;
  private nativeSeen: NativeCounts = { nativeUpDatagrams: 0, nativeUpBytes: 0, nativeDownDatagrams: 0, nativeDownBytes: 0 };

  constructor(
    readonly id: number,
    readonly claims: TokenClaims,
    link: ClientLink,
    private readonly opts: RelayOptions,
    private readonly metrics: RelayMetrics,
    private readonly log: Logger,
    private readonly owner: SessionOwner,
    private readonly begin: SessionStart = { helloRefused: null },
  ) {
    this.link = link;
    this.lastTransport = link.transport;
    this.claimsBytes = claimsJson(claims);
    this.packets = new TokenBucket(opts.maxDatagramsPerSecond, Math.max(64, opts.maxDatagramsPerSecond / 10));
    this.bytes = new TokenBucket(opts.maxBytesPerSecond, Math.max(64 * 1024, opts.maxBytesPerSecond / 10));
  }

  /** The current (or, while parked, the last) client transport. */
  get transport(): TransportName {
    return this.lastTransport;
  }

  /** The connection ID pinned by the first datagram, once one has arrived. */
  get connectionId(): number | null {
    return this.connId;
  }

  get parked(): boolean {
    return this.link === null && !this.ended;
  }

  get isEnded(): boolean {
    return this.ended;
  }

  /** True if this relay knows the session key (it saw the HELLO), so a resume can be checked here. */
  get knowsKey(): boolean {
    return this.proof !== null;
  }

  /**
   * True if `d`, the first datagram on a new link, proves this session is
   * the sender's: its connection ID and the session key (see session-proof.ts).
   */
  provesOwnership(d: Uint8Array): boolean {
    const h = packetHeader(d);
    return h !== null && h.connId === this.connId && this.proof !== null && this.proof.proves(d, h.connId);
  }

  /** A handle that acts only while `link` is the session's current link. */
  handle(link: ClientLink): LinkHandle {
    return {
      fromClient: (d) => this.link === link && this.fromClient(d),
      close: (code, detail) => (this.link === link ? this.close(code, detail) : link.close(RELAY_CLOSE[code], closeReason(code, detail))),
      clientClosed: (graceful) => this.link === link && this.clientClosed(graceful),
    };
  }

  /**
   * Move the session to a new client link (the caller checked the token's
   * jti and the connection ID). A still-open old link is told why it ends.
   */
  resume(link: ClientLink): LinkHandle {
    this.leaveNative();
    const old = this.link;
    this.link = link;
    if (this.parkTimer) clearTimeout(this.parkTimer);
    this.parkTimer = null;
    this.resumes++;
    this.metrics.resumes.inc({ transport: link.transport });
    this.metrics.sessions.dec({ transport: this.lastTransport });
    this.metrics.sessions.inc({ transport: link.transport });
    this.lastTransport = link.transport;
    this.lastActivity = Date.now();
    this.log.info({ session: this.id, sub: this.claims.sub, transport: link.transport, parked: old === null }, 'session resumed');
    old?.close(RELAY_CLOSE.RELAY_SESSION_MOVED, closeReason('RELAY_SESSION_MOVED'));
    this.expectServer();
    return this.handle(link);
  }

  start(): void {
    // Tokens are checked for a valid address, but a session must never throw into its listener.
    const backend = parseBackend(this.claims.backend);
    if (!backend) return this.close('RELAY_ERR_BACKEND_UNREACHABLE', 'invalid backend address');
    const { host, port } = backend;
    const addon = this.link?.openBackend?.() ?? null;
    if (addon) this.startAddon(addon, host, port);
    else this.startDgram(host, port);
    this.timers.push(
      setTimeout(() => {
        if (this.connId === null) this.close('RELAY_ERR_HANDSHAKE_TIMEOUT', `no datagram within ${this.opts.handshakeTimeoutMs} ms`);
        // A name whose lookup stalls must not hold the session (and its datagrams) open.
        else if (!this.connected) this.close('RELAY_ERR_BACKEND_UNREACHABLE', `backend not reachable within ${this.opts.handshakeTimeoutMs} ms`);
      }, this.opts.handshakeTimeoutMs),
    );
    const idleCheck = setInterval(() => {
      if (this.nativeOn) this.syncNative();
      if (Date.now() - this.lastActivity > this.opts.idleTimeoutMs) this.close('RELAY_ERR_IDLE_TIMEOUT');
    }, Math.min(this.opts.idleTimeoutMs, 5_000));
    idleCheck.unref();
    this.timers.push(idleCheck);
  }

  /** The backend socket inside the addon: the data path can move there once the session is established. */
  private startAddon(addon: NativeBackend, host: string, port: number): void {
    this.addon = addon;
    addon.onMessage = (msg) => this.fromBackend(msg);
    addon.onError = (code) => this.close('RELAY_ERR_BACKEND_UNREACHABLE', code);
    addon.onDetached = (largest) => this.leftNative(largest);
    addon.onObserved = (d) => this.proof?.observeDown(d);
    addon.connect(port, host, () => {
      if (this.ended) return;
      this.connected = true;
      for (const d of this.pending) this.sendBackend(d);
      this.pending = [];
    });
  }

  private startDgram(host: string, port: number): void {
    // Backends burst (a tick's worth of datagrams at once): a 1 MiB receive
    // buffer keeps the default 208 KB from overflowing.
    const sock = createSocket({ type: isIPv6(host) ? 'udp6' : 'udp4', recvBufferSize: 1 << 20 });
    this.socket = sock;
    sock.on('message', (msg) => this.fromBackend(msg));
    // A connected UDP socket reports ICMP port-unreachable as ECONNREFUSED;
    // a name that does not resolve reports ENOTFOUND here too.
    sock.on('error', (e) => this.close('RELAY_ERR_BACKEND_UNREACHABLE', (e as NodeJS.ErrnoException).code ?? e.message));
    try {
      sock.connect(port, host, () => {
        this.connected = true;
        for (const d of this.pending) this.sendBackend(d);
        this.pending = [];
      });
    } catch (e) {
      return this.close('RELAY_ERR_BACKEND_UNREACHABLE', (e as NodeJS.ErrnoException).code ?? (e as Error).message);
    }
  }

  /**
   * Move the data path into the addon once nothing on it needs JS: the
   * connection ID is pinned, no take-over or resume awaits the game server's answer, and no
   * impairment is simulated. From then JS sees only control events.
   */
  private goNative(): void {
    const link = this.link;
    if (this.nativeOn || this.ended || !this.addon || !link?.attach || !this.connected) return;
    if (this.impairment || this.takingOver || this.serverCheck || this.connId === null) return;
    const ok = link.attach(this.addon, {
      connectionId: this.connId,
      maxDatagramBytes: this.opts.maxDatagramBytes,
      maxDatagramsPerSecond: this.opts.maxDatagramsPerSecond,
      maxBytesPerSecond: this.opts.maxBytesPerSecond,
      largest: this.proof?.largestSeen ?? -1,
      watchWelcome: this.proof !== null && !this.proof.complete,
    });
    if (!ok) return;
    this.nativeOn = true;
    this.log.debug({ session: this.id, watchWelcome: this.proof !== null && !this.proof.complete }, 'data path moved into the addon');
    this.nativeSeen = this.addon.counts() ?? this.nativeSeen;
    // Metrics and idle tracking from the addon's counters.
    this.nativePoll = setInterval(() => this.syncNative(), 1_000);
    this.nativePoll.unref();
  }

  /** Take the data path back into JS (a resume, an impairment, the end). */
  private leaveNative(): void {
    if (!this.nativeOn || !this.addon) return;
    const largest = this.addon.detach();
    this.leftNative(largest ?? -1);
  }

  /** The data path is back in JS; `largest`: the client's largest DATA packet number the addon forwarded. */
  private leftNative(largest: number): void {
    if (largest >= 0) this.proof?.raiseLargest(largest);
    if (!this.nativeOn) return;
    this.log.debug({ session: this.id, largest }, 'data path back in JavaScript');
    this.syncNative();
    this.nativeOn = false;
    if (this.nativePoll) clearInterval(this.nativePoll);
    this.nativePoll = null;
  }

  /** Count what the addon forwarded since the last look. */
  private syncNative(): void {
    const c = this.addon?.counts();
    if (!c) return;
    const p = this.nativeSeen;
    const up = c.nativeUpDatagrams - p.nativeUpDatagrams;
    const down = c.nativeDownDatagrams - p.nativeDownDatagrams;
    if (up > 0) {
      const m = this.metrics.forwarded('to_backend', this.transport);
      m.datagrams.inc(up);
      m.bytes.inc(c.nativeUpBytes - p.nativeUpBytes);
    }
    if (down > 0) {
      const m = this.metrics.forwarded('to_client', this.transport);
      m.datagrams.inc(down);
      m.bytes.inc(c.nativeDownBytes - p.nativeDownBytes);
    }
    if (up > 0 || down > 0) this.lastActivity = Date.now();
    this.nativeSeen = c;
  }

  /** True while datagrams flow inside the addon. */
  get native(): boolean {
    return this.nativeOn;
  }

  /** A datagram from the client: check its header, rate-limit, forward. */
  fromClient(d: Uint8Array): void {
    if (this.ended) return;
    if (d.length > this.opts.maxDatagramBytes) return this.close('RELAY_ERR_DATAGRAM_TOO_LARGE', `${d.length} bytes > ${this.opts.maxDatagramBytes}`);
    const h = packetHeader(d);
    if (h === null) return this.close('RELAY_ERR_MALFORMED_DATAGRAM', 'not a Ricochet packet');
    const connId = h.connId;
    let out = d;
    const hello = h.type === HELLO ? parseHello(d) : null;
    if (typeof hello === 'string') return this.close('RELAY_ERR_MALFORMED_DATAGRAM', hello);
    // Every HELLO reaches the game server attested: the claims are the relay's word, not the client's.
    if (hello) out = attestHello(hello, this.owner.attestationKey, this.claimsBytes);
    if (this.connId === null) {
      // DATA first: a take-over, which only the game server can grant (it
      // checks the tag), so the ID is not pinned here until it answers.
      if (h.type === DATA) {
        this.connId = connId;
        this.takingOver = true;
        this.expectServer();
      } else {
        if (h.type !== HELLO) return this.close('RELAY_ERR_MALFORMED_DATAGRAM', 'a session must start with HELLO or DATA');
        if (this.begin.helloRefused) return this.close(this.begin.helloRefused.code, this.begin.helloRefused.detail);
        // Another session's ID: its HELLO would reach the backend as that session's.
        if (!this.owner.claimConnectionId(this, connId)) return this.close('RELAY_ERR_CONNECTION_ID_IN_USE', 'another session holds this connection ID');
        this.connId = connId;
        this.proof = new SessionProof(hello!.key);
      }
    } else if (connId !== this.connId) return this.close('RELAY_ERR_MALFORMED_DATAGRAM', 'connection ID changed mid-session');
    if (!this.packets.take(1) || !this.bytes.take(d.length)) {
      this.metrics.drops.inc({ reason: 'rate_limited' });
      const recent = this.rateDrops.add(1);
      if (recent > (this.opts.maxDatagramsPerSecond * ABUSE_WINDOW_MS) / 1000)
        this.close('RELAY_ERR_RATE_LIMITED', `sustained over ${this.opts.maxDatagramsPerSecond} datagrams/s`);
      return;
    }
    if (this.takingOver && ++this.takeoverSent > TAKEOVER_LIMIT) return void this.metrics.drops.inc({ reason: 'takeover_pending' });
    this.lastActivity = Date.now();
    this.proof?.observe(d);
    const up = this.metrics.forwarded('to_backend', this.transport);
    up.datagrams.inc();
    up.bytes.inc(d.length);
    if (this.impairment) this.impairment.fromClient(out === d ? d.slice() : out);
    else this.towardBackend(out);
  }

  /**
   * A resumed client probes at once, and a game server that holds its
   * connection answers within a round trip; one that restarted drops the
   * packets in silence. So without a datagram for the connection from the
   * game server within `handshakeTimeoutMs`, the client is told the session
   * is gone (and stops resuming) instead of waiting out its resume window.
   */
  private expectServer(): void {
    if (this.serverCheck) clearTimeout(this.serverCheck);
    this.serverCheck = setTimeout(() => {
      this.serverCheck = null;
      this.close('RELAY_ERR_RESUME_FAILED', 'the game server does not know this session');
    }, this.opts.handshakeTimeoutMs);
  }

  private towardBackend(d: Uint8Array): void {
    if (this.ended) return;
    if (this.connected) this.sendBackend(d);
    else if (this.pending.length < PENDING_LIMIT) this.pending.push(d.slice());
    else this.metrics.drops.inc({ reason: 'backend_connecting' });
  }

  /** Apply (or with null, remove) simulated network impairment both ways. */
  setImpairment(spec: ImpairmentSpec | null): void {
    if (spec) this.leaveNative();
    this.impairment?.close();
    this.impairment = spec
      ? new SessionImpairment(
          spec,
          (d) => this.towardBackend(d),
          (d) => this.towardClient(d),
        )
      : null;
    this.goNative();
  }

  /** What the session's simulated links did, if impaired. */
  impairmentCounters() {
    return this.impairment?.counters() ?? null;
  }

  private sendBackend(d: Uint8Array): void {
    try {
      if (this.addon) this.addon.send(d);
      else this.socket?.send(d);
    } catch {
      this.metrics.drops.inc({ reason: 'backend_send_failed' });
    }
  }

  /** Datagrams from the backend go out in one batch per event-loop turn. */
  private fromBackend(msg: Buffer): void {
    if (this.ended) return;
    if (this.serverCheck) {
      // Only the game server's own packets for this connection count (the socket is connected to it).
      if (packetHeader(msg)?.connId !== this.connId) return void this.metrics.drops.inc({ reason: 'takeover_pending' });
      clearTimeout(this.serverCheck);
      this.serverCheck = null;
    }
    if (this.takingOver) {
      this.takingOver = false;
      this.resumes++;
      this.metrics.resumes.inc({ transport: this.lastTransport });
      this.log.info({ session: this.id, sub: this.claims.sub, transport: this.lastTransport }, 'session taken over');
      this.owner.tookOver(this);
    }
    this.proof?.observeDown(msg);
    this.lastActivity = Date.now();
    // Parked: nothing to deliver to; the endpoints' own recovery resends after the resume.
    if (this.link === null) return void this.metrics.drops.inc({ reason: 'client_parked' });
    if (this.impairment) this.impairment.fromBackend(msg);
    else this.towardClient(msg);
    if (this.addon && !this.nativeOn) this.goNative();
  }

  private towardClient(msg: Uint8Array): void {
    if (this.ended) return;
    this.toClient.push(msg);
    const down = this.metrics.forwarded('to_client', this.transport);
    down.datagrams.inc();
    down.bytes.inc(msg.length);
    if (!this.flushScheduled) {
      this.flushScheduled = true;
      setImmediate(() => {
        this.flushScheduled = false;
        const batch = this.toClient;
        this.toClient = [];
        const dropped = this.link?.send(batch) ?? batch.length;
        if (dropped > 0) this.metrics.drops.inc({ reason: 'client_backpressure' }, dropped);
      });
    }
  }

  /** End the session: tell the client why, release the backend socket. */
  close(code: RelayCloseCode, detail?: string): void {
    if (this.ended) return;
    this.log.info({ session: this.id, sub: this.claims.sub, code, detail }, 'session closed by relay');
    if (!NOT_REFUSALS.has(code)) this.metrics.rejected.inc({ code });
    this.link?.close(RELAY_CLOSE[code], closeReason(code, detail));
    this.end(code);
  }

  /** Test control: cut the client's link as a network failure would; the session parks as usual. */
  killLink(): boolean {
    const l = this.link;
    if (l === null || this.ended) return false;
    this.clientClosed();
    l.abort();
    return true;
  }

  /**
   * The client's link went away. Park the session for a resume if it carried
   * a connection, resumption is on and the client did not close on purpose;
   * otherwise end it.
   */
  clientClosed(graceful = false): void {
    if (this.ended) return;
    this.leaveNative();
    if (graceful || this.opts.resumeWindowMs <= 0 || this.connId === null) return this.end('client_closed');
    this.link = null;
    this.log.info({ session: this.id, sub: this.claims.sub, windowMs: this.opts.resumeWindowMs }, 'session parked');
    this.parkTimer = setTimeout(() => this.end('client_closed'), this.opts.resumeWindowMs);
  }

  private end(code: RelayCloseCode | 'client_closed'): void {
    if (this.ended) return;
    this.ended = true;
    for (const t of this.timers) clearTimeout(t);
    this.timers = [];
    if (this.serverCheck) clearTimeout(this.serverCheck);
    this.serverCheck = null;
    if (this.parkTimer) clearTimeout(this.parkTimer);
    this.parkTimer = null;
    this.link = null;
    try {
      this.socket?.close();
    } catch {
      // already closed
    }
    this.socket = null;
    if (this.nativeOn) this.syncNative();
    this.nativeOn = false;
    if (this.nativePoll) clearInterval(this.nativePoll);
    this.nativePoll = null;
    this.addon?.close();
    this.addon = null;
    this.pending = [];
    this.toClient = [];
    this.impairment?.close();
    this.impairment = null;
    this.owner.ended(this, code);
  }
}
