// WebTransport clients through the Rust addon (relay/native): HTTP/3 and
// QUIC live in Rust; datagrams cross to JS in batches.
import { readFile, stat } from 'node:fs/promises';
import { RELAY_CLOSE, closeReason } from './errors.js';
import { requestTarget } from './http-guard.js';
import type { ClientLink, LinkHandle } from './session.js';
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
        const s = this.sessions.get(id);
        if (s) for (const d of datagrams) s.fromClient(d);
      }),
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
    const link: ClientLink = {
      transport: 'webtransport',
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
