// The relay: admits sessions (connect token, allowlist, one live session per
// token, capacity), owns the session table, serves HTTP endpoints, and
// drains gracefully.
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server as HttpServer, type ServerResponse } from 'node:http';
import { RELAY_CLOSE, closeReason, type RelayCloseCode } from './errors.js';
import { createLogger, type Logger } from './log.js';
import { RelayMetrics } from './metrics.js';
import { backendAllowed, validate, type RelayOptions } from './options.js';
import type { ImpairmentSpec } from './impairment.js';
import { resumeCandidate } from './resume.js';
import { Session, type ClientLink, type LinkHandle } from './session.js';
import { TokenError, checkExpiry, verifyTokenSignature, type TokenClaims } from './token.js';
import { WsListener } from './ws-listener.js';
import { WtListener } from './wt-listener.js';

export interface RelayAddresses {
  httpPort: number;
  wtPort: number | null;
  webSocketUrl: string;
  webTransportUrl: string | null;
  certHashes: string[];
}

export class Relay {
  readonly options: RelayOptions;
  readonly metrics = new RelayMetrics();
  readonly log: Logger;
  private readonly sessions = new Map<number, Session>();
  /** Live (or parked) sessions by their token's jti: one each. */
  private readonly byJti = new Map<string, Session>();
  private nextId = 1;
  private http: HttpServer | null = null;
  private ws: WsListener | null = null;
  private wt: WtListener | null = null;
  private draining = false;
  private impairment: ImpairmentSpec | null;

  constructor(options: RelayOptions, log?: Logger) {
    this.options = validate(options);
    this.log = log ?? createLogger();
    this.impairment = (this.options.impairment as ImpairmentSpec | undefined) ?? null;
  }

  /** Impair every live and future session (null removes it). Test use only. */
  setImpairment(spec: ImpairmentSpec | null): void {
    if (this.options.production) throw new Error('impairment is refused in production mode');
    this.impairment = spec;
    for (const s of this.sessions.values()) s.setImpairment(spec);
    this.log.warn({ impairment: spec }, 'impairment changed');
  }

  /** Cut every client's transport as a network failure would; sessions park for a resume. Test use only. */
  killTransports(): number {
    if (this.options.production) throw new Error('killing transports is refused in production mode');
    let n = 0;
    for (const s of this.sessions.values()) if (s.killLink()) n++;
    this.log.warn({ killed: n }, 'client transports killed (test control)');
    return n;
  }

  /** Per-session counters of the simulated links, while impaired. */
  impairmentReport() {
    return {
      impairment: this.impairment,
      sessions: [...this.sessions.values()].map((s) => ({ id: s.id, sub: s.claims.sub, resumes: s.resumes, parked: s.parked, counters: s.impairmentCounters() })),
    };
  }

  get sessionCount(): number {
    return this.sessions.size;
  }

  async start(): Promise<RelayAddresses> {
    const o = this.options;
    this.ws = new WsListener(this);
    this.http = createServer((req, res) => this.route(req, res));
    // Half-open HTTP connections are cut quickly; they never reach a backend.
    this.http.headersTimeout = o.handshakeTimeoutMs;
    this.http.requestTimeout = o.handshakeTimeoutMs;
    this.http.on('upgrade', (req, socket, head) => {
      if (this.draining || new URL(req.url ?? '/', 'http://relay').pathname !== '/ricochet') {
        socket.end('HTTP/1.1 404 Not Found\r\n\r\n');
        return;
      }
      this.ws?.upgrade(req, socket, head);
    });
    this.http.on('clientError', (_e, socket) => socket.destroy());
    await new Promise<void>((resolve, reject) => {
      this.http!.once('error', reject);
      this.http!.listen(o.httpPort, o.host, () => resolve());
    });
    if (o.wtPort >= 0) {
      const pems = o.certFile && o.keyFile ? { certPem: readFileSync(o.certFile, 'utf8'), keyPem: readFileSync(o.keyFile, 'utf8') } : {};
      this.wt = new WtListener(this, pems);
      await this.wt.start();
    }
    const a = this.addresses();
    this.log.info({ ...a }, 'relay listening');
    return a;
  }

  addresses(): RelayAddresses {
    const httpPort = (this.http?.address() as { port: number } | null)?.port ?? 0;
    const host = this.options.host.includes(':') ? `[${this.options.host}]` : this.options.host;
    return {
      httpPort,
      wtPort: this.wt?.port ?? null,
      webSocketUrl: `ws://${host}:${httpPort}/ricochet`,
      webTransportUrl: this.wt ? `https://${host}:${this.wt.port}/ricochet` : null,
      certHashes: this.wt?.certificate.certHashes ?? [],
    };
  }

  /**
   * Check a connect token for a new client link. Returns the handle the
   * listener feeds, or closes the link with the reason and returns null.
   * Nothing reaches a backend before this succeeds. A token whose session is
   * still live or parked resumes it (see resume.ts), even past the token's
   * expiry: the session bounds that.
   */
  admit(token: string, link: ClientLink): LinkHandle | null {
    const refuse = (code: RelayCloseCode, detail?: string): null => {
      this.metrics.rejected.inc({ code });
      this.log.info({ transport: link.transport, code, detail }, 'session refused');
      link.close(RELAY_CLOSE[code], closeReason(code, detail));
      return null;
    };
    if (this.draining) return refuse('RELAY_SHUTTING_DOWN');
    let claims: TokenClaims;
    try {
      claims = verifyTokenSignature(this.options.tokenSecret, token);
      const live = this.byJti.get(claims.jti);
      // A live session that never carried a connection has nothing to resume.
      if (live?.connectionId === null) return refuse('RELAY_ERR_TOKEN_IN_USE', 'this token already has a live session');
      if (live) {
        const c = claims;
        return resumeCandidate(live, link, this.options.handshakeTimeoutMs, (code) => this.metrics.rejected.inc({ code }), () => this.open(c, link, refuse));
      }
      checkExpiry(claims);
    } catch (e) {
      if (e instanceof TokenError) return refuse(e.code, e.message);
      throw e;
    }
    return this.open(claims, link, refuse);
  }

  /** Start a new session for verified `claims` on `link`, within capacity and the allowlist. */
  private open(claims: TokenClaims, link: ClientLink, refuse: (code: RelayCloseCode, detail?: string) => null): LinkHandle | null {
    if (this.sessions.size >= this.options.maxSessions) return refuse('RELAY_ERR_SERVER_FULL');
    if (!backendAllowed(this.options.allowBackends, claims.backend)) return refuse('RELAY_ERR_BACKEND_NOT_ALLOWED', claims.backend);
    const session = new Session(this.nextId++, claims, link, this.options, this.metrics, this.log, (s) => this.ended(s));
    this.sessions.set(session.id, session);
    this.byJti.set(claims.jti, session);
    this.metrics.sessions.inc({ transport: link.transport });
    if (this.impairment) session.setImpairment(this.impairment);
    this.log.info({ session: session.id, sub: claims.sub, backend: claims.backend, transport: link.transport }, 'session open');
    session.start();
    return session.handle(link);
  }

  private ended(s: Session): void {
    if (!this.sessions.delete(s.id)) return;
    if (this.byJti.get(s.claims.jti) === s) this.byJti.delete(s.claims.jti);
    this.metrics.sessions.dec({ transport: s.transport });
  }

  private async route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = new URL(req.url ?? '/', 'http://relay').pathname;
    const json = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json', 'access-control-allow-origin': '*' });
      res.end(JSON.stringify(body));
    };
    if (path === '/healthz') return json(this.draining ? 503 : 200, { status: this.draining ? 'draining' : 'ok', sessions: this.sessions.size });
    if (path === '/metrics') {
      res.writeHead(200, { 'content-type': this.metrics.registry.contentType });
      res.end(await this.metrics.registry.metrics());
      return;
    }
    if (path === '/test/impairment' && this.options.testControl && !this.options.production) {
      if (req.method === 'POST') {
        try {
          const body = JSON.parse(await readBody(req, 4096)) as { profile?: string; up?: object; down?: object; off?: boolean };
          const spec = body.off ? null : body.profile ? (body.profile as ImpairmentSpec) : body.up && body.down ? ({ up: body.up, down: body.down } as ImpairmentSpec) : undefined;
          if (spec === undefined) return json(400, { error: 'expected {profile}, {up, down} or {off: true}' });
          this.setImpairment(spec);
        } catch (e) {
          return json(400, { error: (e as Error).message });
        }
      }
      return json(200, this.impairmentReport());
    }
    if (path === '/test/kill-transports' && req.method === 'POST' && this.options.testControl && !this.options.production) {
      return json(200, { killed: this.killTransports() });
    }
    if (path === '/cert-hash' && !this.options.production) {
      const a = this.addresses();
      return json(200, { certHashes: a.certHashes, validUntilMs: this.wt?.certificate.validUntilMs ?? null, webTransportUrl: a.webTransportUrl, webSocketUrl: a.webSocketUrl });
    }
    json(404, { error: 'not found' });
  }

  /** Stop accepting, let sessions finish for up to drainMs, then close the rest. */
  async drain(): Promise<void> {
    if (this.draining) return;
    this.draining = true;
    this.log.info({ sessions: this.sessions.size, drainMs: this.options.drainMs }, 'draining');
    const deadline = Date.now() + this.options.drainMs;
    while (this.sessions.size > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    await this.stop();
  }

  async stop(): Promise<void> {
    this.draining = true;
    for (const s of [...this.sessions.values()]) s.close('RELAY_SHUTTING_DOWN');
    this.ws?.close();
    await this.wt?.stop();
    // Cut every connection first: close() alone waits for busy ones forever.
    const closed = new Promise<void>((r) => (this.http ? this.http.close(() => r()) : r()));
    this.http?.closeAllConnections();
    await closed;
    this.log.info('relay stopped');
  }
}

/** A request body of at most `max` bytes. */
function readBody(req: IncomingMessage, max: number): Promise<string> {
  return new Promise((resolve, reject) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => {
      body += c;
      if (body.length > max) {
        reject(new Error('body too large'));
        req.destroy();
      }
    });
    req.on('end', () => resolve(body));
    req.on('error', reject);
  });
}
