// WebTransport clients through the Rust addon (relay/native): HTTP/3 and
// QUIC live in Rust; datagrams cross to JS in batches.
import { lookup } from 'node:dns';
import { readFile, stat } from 'node:fs/promises';
import { isIP } from 'node:net';
import { RELAY_CLOSE, closeReason } from './errors.js';
import { requestTarget } from './http-guard.js';
import type { ClientLink, LinkHandle, NativeBackend, NativeCounts, NativeLimits } from './session.js';
import type { Relay } from './relay.js';

export interface WtCertificate {
  certHashes: string[];
  validUntilMs: number;
}

interface WtServerLike {
  listen(): Promise<{ port: number } & WtCertificate>;
  send(id: number, datagrams: Buffer[]): void;
  close(id: number, code: number, reason: string): void;
  /** Closes the QUIC connection at once (addons before the session close had only this, as `close`). */
  abort?(id: number, code: number, reason: string): void;
  rotateCertificate(certPem?: string, keyPem?: string): Promise<WtCertificate> | WtCertificate;
  stop(): Promise<void>;
  // The native data path (addons before it lack these: the relay stays on the JS path).
  openBackend?(ip: string, port: number): number;
  sendBackend?(bid: number, datagrams: Uint8Array[]): number;
  closeBackend?(bid: number): boolean;
  attachBackend?(bid: number, id: number, limits: NativeLimits): boolean;
  detachBackend?(bid: number): number | null;
  backendStats?(bid: number): (NativeCounts & { attached: boolean; largest: number }) | null;
}

interface WtServerOptions {
  port: number;
  host: string;
  certPem?: string;
  keyPem?: string;
  maxDatagramSize: number;
  maxSessions: number;
  handshakeTimeoutMs: number;
  maxPendingHandshakes: number;
  maxPendingHandshakesPerAddress: number;
  closeGraceMs: number;
  onSession: (id: number, path: string, origin: string | null) => void;
  onDatagrams: (id: number, datagrams: Buffer[]) => void;
  onClose: (id: number, reason: string) => void;
  onBackendDatagrams?: (bid: number, datagrams: Buffer[]) => void;
  onBackendError?: (bid: number, code: string) => void;
  onDetached?: (bid: number, largest: number) => void;
  onObserved?: (bid: number, d: Buffer) => void;
}

type WtServerCtor = new (o: WtServerOptions) => WtServerLike;

interface AddonModule {
  WtServer: WtServerCtor;
  available: boolean;
  loadError: Error | null;
  addonPackage: string;
}

export type AddonLoad = { Ctor: WtServerCtor; problem: null } | { Ctor: null; problem: string };

/**
 * The addon's ESM loader, found at run time next to src/ or dist/. Never
 * throws: without an addon it says why and how to fix it, so the relay can
 * run WebSocket-only.
 */
export async function loadAddon(url = new URL('../native/index.js', import.meta.url).href): Promise<AddonLoad> {
  const off = (why: string, pkg = '@ricochet/relay-<platform>'): AddonLoad => ({
    Ctor: null,
    problem:
      `WebTransport is off on ${process.platform}-${process.arch}: ${why}. ` +
      `Fix: npm install ${pkg} (npm skips optional dependencies with --omit=optional or on an unsupported platform), ` +
      'or set RICOCHET_RELAY_ADDON to a built ricochet_relay_wt.node; or pass --no-webtransport to run WebSocket-only on purpose. ' +
      'Clients fall back to WebSocket.',
  });
  let mod: AddonModule;
  try {
    mod = (await import(url)) as AddonModule;
  } catch (e) {
    return off(`the addon loader ${url} failed: ${(e as Error).message}`);
  }
  if (mod.available) return { Ctor: mod.WtServer, problem: null };
  return off(mod.loadError?.message ?? 'no WebTransport addon could be loaded', mod.addonPackage);
}

/**
 * True when the page closed its WebTransport on purpose: wtransport reports
 * an application close from the peer as "connection closed by peer: …"
 * (ConnectionError::ApplicationClosed), unlike a timeout or a reset.
 */
export function closedByPeerApp(reason: string): boolean {
  return reason.startsWith('connection closed by peer');
}

/**
 * A session's UDP socket toward its game server, owned by the addon so the
 * WebTransport data path can stay in Rust (`attach`); until then (and after)
 * JS sends and receives through it as through a dgram socket.
 */
export class AddonBackend implements NativeBackend {
  bid = 0;
  private closed = false;
  onMessage: (d: Buffer) => void = () => {};
  onError: (code: string) => void = () => {};
  onDetached: (largest: number) => void = () => {};
  onObserved: (d: Buffer) => void = () => {};

  constructor(
    private readonly server: Required<Pick<WtServerLike, 'openBackend' | 'sendBackend' | 'closeBackend' | 'detachBackend' | 'backendStats'>>,
    private readonly registry: Map<number, AddonBackend>,
  ) {}

  connect(port: number, host: string, cb: () => void): void {
    const open = (ip: string) => {
      if (this.closed) return;
      try {
        this.bid = this.server.openBackend(ip, port);
      } catch (e) {
        return this.onError((e as Error).message);
      }
      this.registry.set(this.bid, this);
      cb();
    };
    const h = host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
    if (isIP(h)) return open(h);
    // As the dgram path: a name resolves to IPv4 (its socket is udp4).
    lookup(h, { family: 4 }, (err, address) => (err ? this.onError(err.code ?? err.message) : open(address)));
  }

  send(d: Uint8Array): void {
    if (this.bid) this.server.sendBackend(this.bid, [d]);
  }

  detach(): number | null {
    return this.bid ? this.server.detachBackend(this.bid) : null;
  }

  counts(): NativeCounts | null {
    return this.bid ? this.server.backendStats(this.bid) : null;
  }

  close(): void {
    this.closed = true;
    if (!this.bid) return;
    this.registry.delete(this.bid);
    this.server.closeBackend(this.bid);
  }
}

/** Rotate self-signed certificates this long before they expire. */
const ROTATE_BEFORE_MS = 24 * 3600 * 1000;

/** A certificate from files, reloaded when they change. */
export interface CertFiles {
  certFile: string;
  keyFile: string;
  reloadMs: number;
}

export class WtListener {
  private server: WtServerLike | null = null;
  private readonly sessions = new Map<number, LinkHandle>();
  private readonly backends = new Map<number, AddonBackend>();
  /** Client datagrams that entered JS (the native data path's test: it stays put while the addon forwards). */
  jsDatagrams = 0;
  private rotation: NodeJS.Timeout | null = null;
  private filesSeen = '';
  port = 0;
  certificate: WtCertificate = { certHashes: [], validUntilMs: 0 };

  constructor(
    private readonly relay: Relay,
    private readonly files: CertFiles | null,
    private readonly Ctor: WtServerCtor,
  ) {}

  async start(): Promise<void> {
    const Ctor = this.Ctor;
    const o = this.relay.options;
    const pems = this.files ? await this.readFiles() : {};
    // Every callback is guarded: a throw inside one would end the process (napi).
    const guard =
      <A extends unknown[]>(what: string, f: (...a: A) => void) =>
      (...a: A) => {
        try {
          f(...a);
        } catch (e) {
          this.relay.log.error({ err: (e as Error).message, what }, 'webtransport callback failed');
          if (typeof a[0] === 'number') this.server?.close(a[0], 1011, 'internal error');
        }
      };
    this.server = new Ctor({
      port: o.wtPort,
      host: o.host,
      ...pems,
      maxDatagramSize: o.maxDatagramBytes,
      maxSessions: o.maxSessions,
      handshakeTimeoutMs: o.handshakeTimeoutMs,
      // Handshakes in progress are the WebTransport side's unauthenticated connections.
      maxPendingHandshakes: o.maxPendingConnections,
      maxPendingHandshakesPerAddress: o.maxPendingPerAddress,
      // close() sends the WebTransport session close (code and reason reach the
      // page's WebTransport.closed), then cuts the connection after this long.
      closeGraceMs: o.closeGraceMs,
      onSession: guard('session', (id: number, path: string) => this.onSession(id, path)),
      onDatagrams: guard('datagrams', (id: number, datagrams: Buffer[]) => {
        this.jsDatagrams += datagrams.length;
        const s = this.sessions.get(id);
        if (s) for (const d of datagrams) s.fromClient(d);
      }),
      onBackendDatagrams: guard('backend datagrams', (bid: number, datagrams: Buffer[]) => {
        const b = this.backends.get(bid);
        if (b) for (const d of datagrams) b.onMessage(d);
      }),
      onBackendError: guard('backend error', (bid: number, code: string) => this.backends.get(bid)?.onError(code)),
      onDetached: guard('detached', (bid: number, largest: number) => this.backends.get(bid)?.onDetached(largest)),
      onObserved: guard('observed', (bid: number, d: Buffer) => this.backends.get(bid)?.onObserved(d)),
      onClose: guard('close', (id: number, reason: string) => {
        const s = this.sessions.get(id);
        this.sessions.delete(id);
        s?.clientClosed(closedByPeerApp(reason));
      }),
    });
    const info = await this.server.listen();
    this.port = info.port;
    this.certificate = { certHashes: info.certHashes, validUntilMs: info.validUntilMs };
    if (this.files) this.watchFiles(this.files.reloadMs);
    else this.scheduleRotation();
  }

  private async readFiles(): Promise<{ certPem: string; keyPem: string }> {
    const f = this.files!;
    const [certPem, keyPem] = await Promise.all([readFile(f.certFile, 'utf8'), readFile(f.keyFile, 'utf8')]);
    this.filesSeen = await this.filesStamp();
    return { certPem, keyPem };
  }

  private async filesStamp(): Promise<string> {
    const f = this.files!;
    const [c, k] = await Promise.all([stat(f.certFile), stat(f.keyFile)]);
    return `${c.mtimeMs}/${c.size}/${k.mtimeMs}/${k.size}`;
  }

  /**
   * Load the certificate files again if they changed (a renewal): new
   * sessions get the new certificate, live ones keep theirs. A bad pair is
   * logged and the old certificate stays. True if a new one is in use.
   */
  async reloadCertificate(force = true): Promise<boolean> {
    if (!this.files || !this.server) return false;
    try {
      if (!force && (await this.filesStamp()) === this.filesSeen) return false;
      const { certPem, keyPem } = await this.readFiles();
      this.certificate = await this.server.rotateCertificate(certPem, keyPem);
      this.relay.log.info({ validUntil: new Date(this.certificate.validUntilMs).toISOString() }, 'webtransport certificate reloaded from files');
      return true;
    } catch (e) {
      this.relay.log.error({ err: (e as Error).message }, 'webtransport certificate reload failed; the old certificate stays');
      return false;
    }
  }

  private watchFiles(everyMs: number): void {
    this.rotation = setTimeout(async () => {
      await this.reloadCertificate(false);
      if (this.server) this.watchFiles(everyMs);
    }, everyMs);
    this.rotation.unref();
  }

  private onSession(id: number, path: string): void {
    const server = this.server;
    if (!server) return;
    const target = requestTarget(path);
    if (!target || target.path !== '/ricochet') {
      this.relay.metrics.rejected.inc({ code: 'RELAY_ERR_NOT_FOUND' });
      return server.close(id, RELAY_CLOSE.RELAY_ERR_NOT_FOUND, closeReason('RELAY_ERR_NOT_FOUND', 'the path is /ricochet'));
    }
    const backends = this.backends;
    const native = this.relay.options.wtDataPath === 'native' && server.openBackend && server.sendBackend && server.closeBackend && server.attachBackend && server.detachBackend && server.backendStats ? server : null;
    const link: ClientLink = {
      transport: 'webtransport',
      ...(native && {
        openBackend: () =>
          new AddonBackend(
            {
              openBackend: native.openBackend!.bind(native),
              sendBackend: native.sendBackend!.bind(native),
              closeBackend: native.closeBackend!.bind(native),
              detachBackend: native.detachBackend!.bind(native),
              backendStats: native.backendStats!.bind(native),
            },
            backends,
          ),
        attach: (b: NativeBackend, limits: NativeLimits) => b instanceof AddonBackend && b.bid !== 0 && native.attachBackend!(b.bid, id, limits),
      }),
      send(datagrams) {
        server.send(id, datagrams as Buffer[]);
        return 0; // the addon paces and counts its own drops
      },
      close(code, reason) {
        // A WebTransport session close (CLOSE_WEBTRANSPORT_SESSION), so the
        // browser learns code and reason; see close() in native/src/lib.rs.
        server.close(id, code, reason);
      },
      abort() {
        // WebTransport has no abrupt reset; closing the QUIC connection at once is the nearest.
        if (server.abort) server.abort(id, 0, 'transport killed');
        else server.close(id, 0, 'transport killed');
      },
    };
    const session = this.relay.admit(target.query.get('token') ?? '', link);
    if (session) this.sessions.set(id, session);
  }

  /** Self-signed certificates live ≤ 14 days: replace them a day early; live sessions keep theirs. */
  private scheduleRotation(): void {
    const due = Math.max(60_000, this.certificate.validUntilMs - Date.now() - ROTATE_BEFORE_MS);
    this.rotation = setTimeout(async () => {
      if (!this.server) return;
      this.certificate = await this.server.rotateCertificate();
      this.relay.log.info({ validUntil: new Date(this.certificate.validUntilMs).toISOString() }, 'webtransport certificate rotated');
      this.scheduleRotation();
    }, Math.min(due, 2 ** 31 - 1));
    this.rotation.unref();
  }

  /** The addon's native data path counters (datagrams it forwarded without JS), or null on an older addon. */
  nativeStats(): { nativeUp: number; nativeDown: number; nativeHandbacks: number; backendsOpen: number } | null {
    const st = (this.server as { stats?: () => Partial<Record<'nativeUp' | 'nativeDown' | 'nativeHandbacks' | 'backendsOpen', number>> } | null)?.stats?.();
    if (!st || st.nativeUp === undefined) return null;
    return { nativeUp: st.nativeUp, nativeDown: st.nativeDown ?? 0, nativeHandbacks: st.nativeHandbacks ?? 0, backendsOpen: st.backendsOpen ?? 0 };
  }

  /** WebTransport sessions not yet closed (a closing one leaves when its peer answers). */
  get openSessions(): number {
    return this.sessions.size;
  }

  async stop(): Promise<void> {
    if (this.rotation) clearTimeout(this.rotation);
    const s = this.server;
    this.server = null;
    await s?.stop();
  }
}
