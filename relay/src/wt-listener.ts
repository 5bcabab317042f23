// WebTransport clients through the Rust addon (relay/native): HTTP/3 and
// QUIC live in Rust; datagrams cross to JS in batches.
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
  onSession: (id: number, path: string, origin: string | null) => void;
  onDatagrams: (id: number, datagrams: Buffer[]) => void;
  onClose: (id: number, reason: string) => void;
}

type WtServerCtor = new (o: WtServerOptions) => WtServerLike;

/** The addon's ESM loader, found at run time next to src/ or dist/. */
async function loadAddon(): Promise<WtServerCtor> {
  const url = new URL('../native/index.js', import.meta.url).href;
  const mod = (await import(url)) as { WtServer: WtServerCtor };
  return mod.WtServer;
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

export class WtListener {
  private server: WtServerLike | null = null;
  private readonly sessions = new Map<number, LinkHandle>();
  private rotation: NodeJS.Timeout | null = null;
  port = 0;
  certificate: WtCertificate = { certHashes: [], validUntilMs: 0 };

  constructor(
    private readonly relay: Relay,
    private readonly pems: { certPem?: string; keyPem?: string },
  ) {}

  async start(): Promise<void> {
    const Ctor = await loadAddon();
    const o = this.relay.options;
    this.server = new Ctor({
      port: o.wtPort,
      host: o.host,
      ...this.pems,
      maxDatagramSize: o.maxDatagramBytes,
      maxSessions: o.maxSessions,
      handshakeTimeoutMs: o.handshakeTimeoutMs,
      onSession: (id, path) => this.onSession(id, path),
      onDatagrams: (id, datagrams) => {
        const s = this.sessions.get(id);
        if (s) for (const d of datagrams) s.fromClient(d);
      },
      onClose: (id, reason) => {
        this.sessions.get(id)?.clientClosed(closedByPeerApp(reason));
        this.sessions.delete(id);
      },
    });
    const info = await this.server.listen();
    this.port = info.port;
    this.certificate = { certHashes: info.certHashes, validUntilMs: info.validUntilMs };
    if (!this.pems.certPem) this.scheduleRotation();
  }

  private onSession(id: number, path: string): void {
    const server = this.server;
    if (!server) return;
    const url = new URL(path, 'https://relay');
    const link: ClientLink = {
      transport: 'webtransport',
      send(datagrams) {
        server.send(id, datagrams as Buffer[]);
        return 0; // the addon paces and counts its own drops
      },
      close(code, reason) {
        server.close(id, code, reason);
      },
      abort() {
        // wtransport has no abrupt reset; closing the QUIC connection is the nearest.
        server.close(id, 0, 'transport killed');
      },
    };
    const session = this.relay.admit(url.searchParams.get('token') ?? '', link);
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

  async stop(): Promise<void> {
    if (this.rotation) clearTimeout(this.rotation);
    const s = this.server;
    this.server = null;
    await s?.stop();
  }
}
