// The relay: admits sessions (connect token, allowlist, one live session per
// token, capacity), owns the session table, serves HTTP endpoints, and
// drains gracefully.
import { createServer, type IncomingMessage, type Server as HttpServer, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { RELAY_CLOSE, closeReason, type RelayCloseCode } from './errors.js';
import { createLogger, type Logger } from './log.js';
import { startMetricsListener, type MetricsListener } from './metrics-listener.js';
import { RelayMetrics } from './metrics.js';
import { attestationKey } from './attestation.js';
import { backendAllowed } from './backend-address.js';
import { AddressBudget, PendingConnections, TrustedProxies, closingResponse, endThenDestroy, listen, requestTarget } from './http-guard.js';
import { validate, type RelayOptions } from './options.js';
import { checkImpairment, type ImpairmentSpec } from './impairment.js';
import { ReplayCache } from './replay-cache.js';
import { resumeCandidate } from './resume.js';
import { Session, type ClientLink, type LinkHandle, type SessionStart } from './session.js';
import { TokenError, checkTimes, verifyTokenSignature, type TokenClaims, type TokenTimePolicy } from './token.js';
import { WsListener } from './ws-listener.js';
import { WtListener, loadAddon } from './wt-listener.js';

/** Plain HTTP requests (health checks, scrapes) per client address per second, bursts of twice that. */
const REQUESTS_PER_SECOND = 20;
/** New TCP connections per client address per second, bursts of four times that. */
const CONNECTIONS_PER_SECOND = 50;

export interface RelayAddresses {
  httpPort: number;
  wtPort: number | null;
  webSocketUrl: string;
  webTransportUrl: string | null;
  certHashes: string[];
  /** Why WebTransport is off: 'disabled' on purpose, or 'unavailable' (no addon loaded); null when it is served. */
  webTransportOff: 'disabled' | 'unavailable' | null;
  /** The separate metrics listener's port, if one is configured. */
  metricsPort: number | null;
}

export class Relay {
  readonly options: RelayOptions;
  readonly metrics = new RelayMetrics();
  readonly log: Logger;
  private readonly sessions = new Map<number, Session>();
  /** Live (or parked) sessions by their token's jti: one each (a take-over joins once the game server grants it). */
  private readonly byJti = new Map<string, Session>();
  /** Sessions by backend and pinned connection ID: one holder each. */
  private readonly byConnId = new Map<string, Session>();
  private readonly replay: ReplayCache;
  private readonly timePolicy: TokenTimePolicy;
  private readonly pendingConnections: PendingConnections;
  /** Plain HTTP requests per client address, on both listeners. */
  private readonly requestBudget = new AddressBudget(REQUESTS_PER_SECOND, REQUESTS_PER_SECOND * 2);
  /** New TCP connections per client address (a reconnect storm behind one NAT still fits the burst). */
  private readonly connectionBudget = new AddressBudget(CONNECTIONS_PER_SECOND, CONNECTIONS_PER_SECOND * 4);
  private readonly attestationKey: Buffer;
  private readonly proxies: TrustedProxies;
  private nextId = 1;
  private http: HttpServer | null = null;
  private metricsListener: MetricsListener | null = null;
  private ws: WsListener | null = null;
  private wt: WtListener | null = null;
  private webTransportOff: RelayAddresses['webTransportOff'] = null;
  private draining = false;
  private impairment: ImpairmentSpec | null;

  constructor(options: RelayOptions, log?: Logger) {
    this.options = validate(options);
    this.log = log ?? createLogger();
    this.impairment = (this.options.impairment as ImpairmentSpec | undefined) ?? null;
    this.timePolicy = { leewaySeconds: this.options.tokenLeewaySeconds, maxLifetimeSeconds: this.options.maxTokenLifetimeSeconds };
    this.replay = new ReplayCache(this.options.replayCacheSize, this.options.tokenLeewaySeconds);
    this.pendingConnections = new PendingConnections(this.options.maxPendingConnections, this.options.maxPendingPerAddress);
    this.attestationKey = attestationKey(this.options.tokenSecret);
    this.proxies = new TrustedProxies(this.options.trustedProxies);
  }

  /** Impair every live and future session (null removes it). Test use only. Throws TypeError on a bad spec, changing nothing. */
  setImpairment(spec: ImpairmentSpec | null): void {
    if (this.options.production) throw new Error('impairment is refused in production mode');
    if (spec !== null) checkImpairment(spec);
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
    this.ws = new WsListener(this, (socket) => this.pendingConnections.promote(socket as never));
    this.http = this.httpServer();
    // Connections that carry no session yet are capped in total and per address.
    this.http.on('connection', (socket) => {
      const from = socket.remoteAddress;
      // A balancer's connections carry many players: its clients' requests are budgeted per request (below).
      const balancer = this.proxies.has(from);
      const overBudget = !balancer && (this.requestBudget.exhausted(from) || !this.connectionBudget.take(from));
      if (overBudget || !this.pendingConnections.admit(socket, balancer)) {
        this.metrics.rejected.inc({ code: 'RELAY_ERR_TOO_MANY_CONNECTIONS' });
        socket.destroy();
      }
    });
    this.http.on('upgrade', (req, socket, head) => this.upgrade(req, socket, head));
    await listen(this.http, o.httpPort, o.host);
    if (o.metricsPort >= 0) {
      this.metricsListener = await startMetricsListener({
        host: o.metricsHost,
        port: o.metricsPort,
        maxHeaderBytes: o.maxHeaderBytes,
        headTimeoutMs: o.handshakeTimeoutMs,
        refuse: (socket) => !this.connectionBudget.take(socket.remoteAddress),
        render: async () => ({ contentType: this.metrics.registry.contentType, text: await this.metrics.exposition() }),
        health: () => this.health(),
      });
    }
    await this.startWebTransport();
    const a = this.addresses();
    this.log.info({ ...a }, 'relay listening');
    return a;
  }

  /** WebTransport if enabled and the addon loads; otherwise WebSocket-only, said once in the log. */
  private async startWebTransport(): Promise<void> {
    const o = this.options;
    if (!o.webTransport || o.wtPort < 0) {
      this.webTransportOff = 'disabled';
      const how = o.webTransport ? 'wtPort -1' : '--no-webtransport or RICOCHET_RELAY_WEBTRANSPORT=false';
      this.log.info(`webtransport disabled on purpose (${how}); serving WebSocket only`);
      return;
    }
    const addon = await loadAddon();
    if (!addon.Ctor) {
      this.webTransportOff = 'unavailable';
      this.log.warn(addon.problem);
      return;
    }
    this.wt = new WtListener(this, o.certFile && o.keyFile ? { certFile: o.certFile, keyFile: o.keyFile, reloadMs: o.certReloadMs } : null, addon.Ctor);
    await this.wt.start();
  }

  /** An HTTP server with short head and request deadlines that answers malformed requests with a status, never a throw. */
  private httpServer(): HttpServer {
    const o = this.options;
    const server = createServer(
      {
        headersTimeout: o.handshakeTimeoutMs,
        requestTimeout: o.handshakeTimeoutMs,
        // Node checks those deadlines this often (30 s by default: a half-sent request lived that long).
        connectionsCheckingInterval: Math.min(1000, o.handshakeTimeoutMs),
        maxHeaderSize: o.maxHeaderBytes,
        keepAliveTimeout: 5_000,
      },
      (req, res) => {
        // Past the address's budget a request gets an empty 429 at once and
        // its connection stops being read, then closes: a pipelining client
        // costs the rest of one read, not a parsed request per 40 bytes. (Not
        // cut at once: Node would abort, with a stack trace each, every
        // request still queued behind this one.)
        if (!this.requestBudget.take(this.proxies.clientOf(req))) {
          this.metrics.rejected.inc({ code: 'RELAY_ERR_TOO_MANY_REQUESTS' });
          res.writeHead(429, { 'retry-after': '1', 'content-length': '0' }).end();
          const socket = req.socket;
          if (!socket.isPaused()) {
            socket.pause();
            setTimeout(() => socket.destroy(), 1000).unref();
          }
          return;
        }
        this.route(req, res).catch((e: Error) => {
          this.log.error({ err: e.message, url: req.url?.slice(0, 200) }, 'request failed');
          if (!res.headersSent) res.writeHead(500).end();
          else res.destroy();
        });
      },
    );
    // A keep-alive connection serves at most this many requests; Node answers
    // any further one on it with 503 and asks the client to reconnect.
    server.maxRequestsPerSocket = 100;
    server.on('clientError', (err: NodeJS.ErrnoException, socket) => {
      const status = err.code === 'HPE_HEADER_OVERFLOW' ? 431 : err.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 408 : 400;
      if (err.code === 'ECONNRESET') socket.destroy();
      else endThenDestroy(socket, closingResponse(status));
    });
    return server;
  }

  /** A WebSocket upgrade: the path decides; the token is judged after the handshake so the browser learns why. */
  private upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    socket.on('error', () => socket.destroy());
    const target = requestTarget(req.url);
    if (!target) return refuseUpgrade(socket, 400);
    if (target.path !== '/ricochet' || !this.ws) return refuseUpgrade(socket, 404);
    this.ws.upgrade(req, socket, head, target.query);
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
      webTransportOff: this.webTransportOff,
      metricsPort: (this.metricsListener?.server.address() as { port: number } | null)?.port ?? null,
    };
  }

  /**
   * Check a connect token for a new client link. Returns the handle the
   * listener feeds, or closes the link with the reason and returns null.
   * Nothing reaches a backend before this succeeds. A token whose session
   * this relay started, live or parked, may resume it (see resume.ts), even
   * past the token's expiry: the session bounds that. Otherwise a token
   * opens one new connection here, once (a used token's HELLO is refused
   * even after its session ended), and any validly signed token, used or
   * expired (up to `resumeTokenMaxAgeSeconds`), may take over a session the
   * game server still holds: relays share nothing, so a session whose relay
   * died or drained continues through any other (see session.ts).
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
      // Started here: the relay knows the key and checks the resume itself.
      if (live?.knowsKey) return resumeCandidate(live, link, this.options.handshakeTimeoutMs, (code) => this.metrics.rejected.inc({ code }));
      const now = Date.now() / 1000;
      let helloRefused: SessionStart['helloRefused'] = null;
      try {
        checkTimes(claims, now, this.timePolicy);
      } catch (e) {
        if (!(e instanceof TokenError) || e.code !== 'RELAY_ERR_TOKEN_EXPIRED') throw e;
        if (now > claims.exp + this.options.resumeTokenMaxAgeSeconds) throw e;
        helloRefused = { code: e.code, detail: e.message };
      }
      // Spent here before, or carried here by a take-over: only a take-over now.
      if (!helloRefused && (live || this.replay.has(claims.jti))) helloRefused = { code: 'RELAY_ERR_TOKEN_REUSED', detail: 'connect tokens are single use' };
      return this.open(claims, link, refuse, { helloRefused });
    } catch (e) {
      if (e instanceof TokenError) return refuse(e.code, e.message);
      throw e;
    }
  }

  /**
   * Start a session for verified `claims` on `link`, within capacity and the
   * allowlist. A token that may still open a connection is spent here.
   */
  private open(claims: TokenClaims, link: ClientLink, refuse: (code: RelayCloseCode, detail?: string) => null, begin: SessionStart): LinkHandle | null {
    if (this.sessions.size >= this.options.maxSessions) return refuse('RELAY_ERR_SERVER_FULL');
    if (!backendAllowed(this.options.allowBackends, claims.backend)) return refuse('RELAY_ERR_BACKEND_NOT_ALLOWED', claims.backend);
    if (!begin.helloRefused) {
      const spent = this.replay.use(claims.jti, claims.exp);
      if (spent === 'full') return refuse('RELAY_ERR_SERVER_FULL', 'too many recent tokens');
      if (spent === 'reused') return refuse('RELAY_ERR_TOKEN_REUSED');
    }
    const session = new Session(
      this.nextId++,
      claims,
      link,
      this.options,
      this.metrics,
      this.log,
      {
        attestationKey: this.attestationKey,
        claimConnectionId: (s, id) => this.claimConnectionId(s, id),
        tookOver: (s) => this.tookOver(s),
        ended: (s) => this.ended(s),
      },
      begin,
    );
    this.sessions.set(session.id, session);
    if (!begin.helloRefused) this.byJti.set(claims.jti, session);
    this.metrics.sessions.inc({ transport: link.transport });
    if (this.impairment) session.setImpairment(this.impairment);
    this.log.info({ session: session.id, sub: claims.sub, backend: claims.backend, transport: link.transport }, 'session open');
    session.start();
    return session.handle(link);
  }

  /** Pin `id` to `s` unless another session toward the same backend holds it. */
  private claimConnectionId(s: Session, id: number): boolean {
    const key = `${s.claims.backend}/${id}`;
    const holder = this.byConnId.get(key);
    if (holder && holder !== s) return false;
    this.byConnId.set(key, s);
    return true;
  }

  /**
   * The game server moved `s`'s connection to its socket: it holds the ID
   * and the token now, and a session that carried the connection here
   * before is done (the server no longer sends to it).
   */
  private tookOver(s: Session): void {
    const key = `${s.claims.backend}/${s.connectionId}`;
    const before = this.byConnId.get(key);
    this.byConnId.set(key, s);
    this.byJti.set(s.claims.jti, s);
    if (before && before !== s) before.close('RELAY_SESSION_MOVED');
  }

  private ended(s: Session): void {
    if (!this.sessions.delete(s.id)) return;
    if (this.byJti.get(s.claims.jti) === s) this.byJti.delete(s.claims.jti);
    const key = `${s.claims.backend}/${s.connectionId}`;
    if (this.byConnId.get(key) === s) this.byConnId.delete(key);
    this.metrics.sessions.dec({ transport: s.transport });
  }

  private health(): { status: number; body: unknown } {
    return { status: this.draining ? 503 : 200, body: { status: this.draining ? 'draining' : 'ok', sessions: this.sessions.size } };
  }

  private async route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const json = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json', 'access-control-allow-origin': '*' });
      res.end(JSON.stringify(body));
    };
    const target = requestTarget(req.url);
    if (!target) return json(400, { error: 'bad request target' });
    const path = target.path;
    if (path === '/healthz') {
      const h = this.health();
      return json(h.status, h.body);
    }
    // With a metrics listener, or in production, /metrics is not served here.
    const metricsHere = this.options.metricsPort < 0 && !this.options.production;
    if (path === '/metrics' && metricsHere) {
      const text = await this.metrics.exposition();
      res.writeHead(200, { 'content-type': this.metrics.registry.contentType });
      res.end(text);
      return;
    }
    const testControl = this.options.testControl && !this.options.production;
    if (path === '/test/impairment' && testControl) {
      if (req.method === 'POST') {
        let body: { profile?: unknown; up?: unknown; down?: unknown; off?: unknown };
        try {
          body = JSON.parse(await readBody(req, 4096)) as typeof body;
          if (typeof body !== 'object' || body === null) throw new TypeError('expected a JSON object');
        } catch (e) {
          return json(400, { error: (e as Error).message });
        }
        const spec = body.off === true ? null : body.profile !== undefined ? body.profile : body.up && body.down ? { up: body.up, down: body.down } : undefined;
        if (spec === undefined) return json(400, { error: 'expected {profile}, {up, down} or {off: true}' });
        try {
          this.setImpairment(spec as ImpairmentSpec | null);
        } catch (e) {
          return json(400, { error: (e as Error).message });
        }
      }
      return json(200, this.impairmentReport());
    }
    if (path === '/test/kill-transports' && req.method === 'POST' && testControl) {
      return json(200, { killed: this.killTransports() });
    }
    if (path === '/cert-hash' && !this.options.production) {
      const a = this.addresses();
      // Without WebTransport: no URL and no hashes, and why; clients fall back to WebSocket.
      return json(200, {
        certHashes: a.certHashes,
        validUntilMs: this.wt?.certificate.validUntilMs ?? null,
        webTransportUrl: a.webTransportUrl,
        webSocketUrl: a.webSocketUrl,
        webTransport: this.wt ? 'available' : a.webTransportOff,
      });
    }
    json(404, { error: 'not found' });
  }

  /** Re-read the WebTransport certificate files now (the CLI calls this on SIGHUP). */
  async reloadCertificate(): Promise<boolean> {
    return (await this.wt?.reloadCertificate()) ?? false;
  }

  /**
   * Drain (SIGTERM): refuse new links and answer /healthz with 503 at once;
   * after `drainNoticeMs`, the time balancers need to see the 503, tell every
   * client to resume through another relay (4002, which the SDK acts on at
   * once), give the close frames up to `closeGraceMs` to reach them, and
   * stop, all within `drainMs`.
   */
  async drain(): Promise<void> {
    if (this.draining) return;
    this.draining = true;
    const o = this.options;
    this.log.info({ sessions: this.sessions.size, drainNoticeMs: o.drainNoticeMs, drainMs: o.drainMs }, 'draining');
    const deadline = Date.now() + o.drainMs;
    // A parked session has no client to tell: it does not hold the drain up.
    const closeParked = () => {
      for (const s of [...this.sessions.values()]) if (s.parked) s.close('RELAY_SHUTTING_DOWN');
    };
    const waitUntil = async (done: () => boolean, until: number) => {
      while (!done() && Date.now() < until) await sleep(Math.max(1, Math.min(50, until - Date.now())));
    };
    closeParked();
    // The whole notice, even with no session: until the balancer sees the 503 it still sends players here.
    await waitUntil(() => (closeParked(), false), Math.min(deadline, Date.now() + o.drainNoticeMs));
    const moving = this.sessions.size;
    for (const s of [...this.sessions.values()]) s.close('RELAY_SESSION_MOVING', 'resume through another relay');
    await waitUntil(() => this.openLinks() === 0, Math.min(deadline, Date.now() + o.closeGraceMs));
    this.log.info({ moved: moving, linksLeft: this.openLinks() }, 'drained');
    await this.stop();
  }

  /** Client links the listeners still hold (a closed one leaves when its peer answers the close). */
  private openLinks(): number {
    return (this.ws?.wss.clients.size ?? 0) + (this.wt?.openSessions ?? 0);
  }

  async stop(): Promise<void> {
    this.draining = true;
    for (const s of [...this.sessions.values()]) s.close('RELAY_SHUTTING_DOWN');
    this.ws?.close();
    await this.wt?.stop();
    // Cut every connection first: close() alone waits for busy ones forever.
    await Promise.all([closeServer(this.http), this.metricsListener?.close()]);
    this.log.info('relay stopped');
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function closeServer(server: HttpServer | null): Promise<void> {
  if (!server) return Promise.resolve();
  const closed = new Promise<void>((r) => server.close(() => r()));
  server.closeAllConnections();
  return closed;
}

/** Answer an upgrade request with a plain status and close the socket. */
function refuseUpgrade(socket: Duplex, status: number): void {
  endThenDestroy(socket, closingResponse(status));
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
