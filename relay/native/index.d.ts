// Hand-written declarations for relay/native/index.js (ES module).

export interface WtServerOptions {
  /** UDP port; 0 = any free port (see `listen()` result). */
  port: number;
  /** Bind address (IP or resolvable name). Default `127.0.0.1`; `::` = dual-stack any. */
  host?: string;
  /**
   * PEM certificate chain (leaf first) and private key (PKCS#8, SEC1 or PKCS#1).
   * Both or neither; without them a self-signed ECDSA P-256 certificate valid
   * 14 days for localhost / 127.0.0.1 / ::1 is generated. Browsers using
   * `serverCertificateHashes` only accept ECDSA P-256 certificates valid ≤ 14 days.
   */
  certPem?: string;
  keyPem?: string;
  /**
   * Datagrams from browsers larger than this are still delivered to `onDatagrams`
   * (so the relay can close with 4413) and counted in `drops.oversizeIn`. Default 1200.
   */
  maxDatagramSize?: number;
  /** Open sessions beyond this are refused (QUIC refuse / HTTP 429). Default 10000. */
  maxSessions?: number;
  /** QUIC + HTTP/3 SETTINGS + CONNECT must finish within this, else the connection is dropped. Default 10000. */
  handshakeTimeoutMs?: number;
  /** Concurrent unfinished handshakes; more are refused (`handshakes.rejectedBacklog`). Default 1024. */
  maxPendingHandshakes?: number;
  /**
   * Concurrent unfinished handshakes from one IPv4 address (or IPv6 /64); more
   * are refused (`handshakes.rejectedPerAddress`). Default 16.
   */
  maxPendingHandshakesPerAddress?: number;
  /**
   * From this many pending handshakes on, a new connection from an address not
   * yet validated gets a QUIC Retry first (`handshakes.retries`; one extra round
   * trip, and spoofed sources never get a slot). 0 = always. Default maxPendingHandshakes / 2.
   */
  retryAtPendingHandshakes?: number;
  /** QUIC idle timeout. Default 30000. */
  idleTimeoutMs?: number;
  /** Server-side QUIC keep-alive; 0/undefined = off (Chromium sends its own). */
  keepAliveMs?: number;
  /** Per-session pacing: token bucket rate (datagrams/s, 0 = unpaced) and burst. Defaults 10000 and 64. */
  sendRatePerSec?: number;
  sendBurst?: number;
  /** Per-session outbound queue; when full the OLDEST datagram is dropped (`drops.sendQueueFull`). Default 1024. */
  sendQueueMax?: number;
  /** Per-session inbound datagrams waiting for JS; beyond it new ones are dropped (`drops.recvQueueFull`). Default 4096. */
  recvQueueMax?: number;
  /** SO_RCVBUF / SO_SNDBUF requested for the UDP socket. Default 4 MiB. */
  udpBufferBytes?: number;
  /**
   * After `close()` or `stop()`, how long a session's QUIC connection is left
   * for the peer to close (browsers do once they have the close) before it is
   * closed anyway. Default 1000; the relay passes its `closeGraceMs`.
   */
  closeGraceMs?: number;

  /** A WebTransport session finished its handshake. `path` includes the query string. */
  onSession: (id: number, path: string, origin: string | null) => void;
  /** Every datagram of this session available when JS got the batch, in arrival order. */
  onDatagrams: (id: number, datagrams: Buffer[]) => void;
  /** Session ended (peer close, idle timeout, `close()`, `stop()`); always after its last onDatagrams. */
  onClose: (id: number, reason: string) => void;
  /** Datagrams from a backend socket (`openBackend`) with no session attached to it. */
  onBackendDatagrams?: (bid: number, datagrams: Buffer[]) => void;
  /** A backend socket failed (`ECONNREFUSED`, …) and reads no more. */
  onBackendError?: (bid: number, code: string) => void;
  /**
   * The addon handed a native-path session back to JS (a datagram broke a
   * limit, or a HELLO came); that datagram follows in `onDatagrams`.
   * `largest`: the largest client DATA packet number it forwarded (-1: none).
   */
  onDetached?: (bid: number, largest: number) => void;
  /** A copy of a WELCOME-shaped datagram (type 2, 23 bytes) forwarded natively while `watchWelcome`. */
  onObserved?: (bid: number, datagram: Buffer) => void;
}

/** What a session on the native data path may send (`attachBackend`). */
export interface AttachLimits {
  connectionId: number;
  maxDatagramBytes: number;
  maxDatagramsPerSecond: number;
  maxBytesPerSecond: number;
  /** Largest client DATA packet number seen so far (-1: none). */
  largest: number;
  /** Copy WELCOME-shaped datagrams to `onObserved`. */
  watchWelcome: boolean;
}

export interface BackendStats {
  attached: boolean;
  largest: number;
  nativeUpDatagrams: number;
  nativeUpBytes: number;
  nativeDownDatagrams: number;
  nativeDownBytes: number;
  sendFailed: number;
}

export interface CertificateInfo {
  /** Lower-case hex SHA-256 of the leaf certificate DER (the hash for `serverCertificateHashes`). */
  certHashes: string[];
  /** Leaf certificate notAfter, ms since the Unix epoch. */
  validUntilMs: number;
}

export interface ListenInfo extends CertificateInfo {
  port: number;
  /** Effective kernel UDP buffer sizes (Linux reports twice the granted size). */
  udpRecvBuffer: number;
  udpSendBuffer: number;
}

export interface WtServerStats {
  sessionsActive: number;
  sessionsOpened: number;
  sessionsClosed: number;
  datagramsIn: number;
  bytesIn: number;
  datagramsOut: number;
  bytesOut: number;
  /** Outbound datagrams waiting in pacing queues right now. */
  sendQueued: number;
  /** Times a sender waited because quinn's datagram send buffer was full. */
  sendBufferWaits: number;
  /** Event batches delivered to JS. */
  batches: number;
  /** Panics caught in session/handshake tasks (should stay 0). */
  panics: number;
  /** Datagrams forwarded inside the addon (native data path). */
  nativeUp: number;
  nativeDown: number;
  /** Native-path sessions handed back to JS by a datagram that broke a limit. */
  nativeHandbacks: number;
  backendsOpen: number;
  drops: {
    /** Datagrams larger than `maxDatagramSize` (delivered all the same; also in `datagramsIn`). */
    oversizeIn: number;
    recvQueueFull: number;
    sendQueueFull: number;
    oversizeOut: number;
    unknownSession: number;
    /** Outbound datagrams still queued when their session closed. */
    closedWithQueue: number;
    unsupportedByPeer: number;
    /** DATAGRAM frames quinn received that never reached the session loop (quinn receive buffer overflow). */
    quicRecvOverflow: number;
  };
  handshakes: {
    accepted: number;
    timeout: number;
    failed: number;
    rejectedFull: number;
    /** Refused: `maxPendingHandshakes` in progress. */
    rejectedBacklog: number;
    /** Refused: `maxPendingHandshakesPerAddress` in progress from the same address. */
    rejectedPerAddress: number;
    /** QUIC Retry packets sent (see `retryAtPendingHandshakes`). */
    retries: number;
    pending: number;
  };
}

export class WtServer {
  constructor(options: WtServerOptions);
  /** Binds and starts accepting. Keeps Node alive until `stop()`. Call once. */
  listen(): Promise<ListenInfo>;
  /** Queues datagrams for a session (paced); returns how many were queued. Buffers are copied. */
  send(id: number, datagrams: Buffer[]): number;
  /**
   * Closes the session with `code` (u32) and `reason` (≤ 512 bytes) so the page
   * learns both: first a close notice on a unidirectional stream ("RCLS", code
   * as u16 big-endian, reason ≤ 123 bytes; the SDK reads it), then the
   * WebTransport session close (CLOSE_WEBTRANSPORT_SESSION on the CONNECT
   * stream: `WebTransport.closed` resolves with `{ closeCode, reason }`). The
   * peer closes the QUIC connection, or we do after `closeGraceMs`. `onClose`
   * follows. False if unknown. See `close_task` in src/lib.rs.
   */
  close(id: number, code?: number, reason?: string): boolean;
  /** Closes the session's QUIC connection at once (the peer sees the connection lost); `onClose` follows. */
  abort(id: number, code?: number, reason?: string): boolean;
  /**
   * New certificate (PEM pair, or a fresh self-signed one) for NEW sessions;
   * live sessions are untouched. Throws on invalid PEM / key mismatch.
   */
  rotateCertificate(certPem?: string, keyPem?: string): CertificateInfo;
  /** Certificate currently presented to new sessions. */
  certificate(): CertificateInfo;
  stats(): WtServerStats;
  /** Closes all sessions (their onClose fires), the endpoint and the JS callback handle so Node can exit. */
  stop(): Promise<void>;
  /** A UDP socket connected to `ip:port` (IP literal) for a relay session; returns its id. */
  openBackend(ip: string, port: number): number;
  sendBackend(bid: number, datagrams: Buffer[]): number;
  closeBackend(bid: number): boolean;
  /** The native data path: session `id` ↔ backend `bid` inside the addon, within `limits`. */
  attachBackend(bid: number, id: number, limits: AttachLimits): boolean;
  /** Back to JS; the largest client DATA packet number forwarded, or null if not attached. */
  detachBackend(bid: number): number | null;
  backendStats(bid: number): BackendStats | null;
}

/** Host facts that pick the platform package (`glibc`: runtime version on glibc Linux, else null). */
export interface HostFacts {
  platform: string;
  arch: string;
  glibc: string | null;
}

export interface AddonCandidate {
  /** "RICOCHET_RELAY_ADDON", "development build" or "platform package". */
  from: string;
  /** Absolute path or package name, passed to require. */
  id: string;
  /** True for RICOCHET_RELAY_ADDON: if it fails, nothing else is tried. */
  explicit: boolean;
}

export function hostFacts(): HostFacts;
/** "@ricochet/relay-<platform>-<arch>[-gnu|-musl|-msvc]". */
export function platformPackage(facts: HostFacts): string;
export function addonCandidates(o: {
  env: Record<string, string | undefined>;
  facts: HostFacts;
  devPath: string;
  exists: (path: string) => boolean;
}): AddonCandidate[];
export function loadFirst<T>(
  candidates: AddonCandidate[],
  load: (id: string) => T,
): { native: T; from: string; id: string; error: null } | { native: null; from: null; id: null; error: Error & { code: string } };

/** True when an addon loaded; otherwise `new WtServer()` throws `loadError`. */
export const available: boolean;
/** Why no addon loaded (each place tried), or null. */
export const loadError: (Error & { code: string }) | null;
/** The platform package this host needs. */
export const addonPackage: string;
/** Where the loaded addon came from, or null. */
export const addonSource: { from: string; id: string } | null;
