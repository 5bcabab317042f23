// The server endpoint in JS: many connections over any transports, found by
// connection ID. Replies go to the peer each connection last spoke from.
import { realClock, type Clock } from './clock.js';
import { CorePort } from './heap.js';
import { closeKindOf, type CloseEvent } from './connection.js';
import { Emitter } from './emitter.js';
import { payloadBytes, RicochetError, sendError, type ErrorCode } from './errors.js';
import { coreConfig, FEC_BUDGET_MAX, fecPreset, STRICT_CHANNELS } from './core-config.js';
import { invalid, positive, resolveChannels, type FecPreset, type ResolvedChannel, type ServerOptions as BaseServerOptions } from './options.js';
import { decodeStats, StatsWindow, type ConnectionStats } from './stats.js';
import type { Transport } from './transport.js';
import { fullWasm, type FullGlue } from './wasm.js';
import { BATCH, EV, PATH_EVENT } from './wasm-codes.js';

/** Where a connection's datagrams go: a socket, a WebSocket, an address. */
export interface Peer {
  send(datagram: Uint8Array): void;
}

/** What a relay verified in a client's connect token (see WIRE.md, "Relay attestation"). */
export interface RelayClaims {
  sub: string;
  data?: string;
}

export interface ConnectRequest {
  id: number;
  /** The client's own handshake payload (behind a relay: from inside its attestation). */
  payload: Uint8Array;
  /** The relay-verified claims; null unless `relaySecret` or `relayKey` is set. */
  claims: RelayClaims | null;
}

/** `Name`: the declared channels' names (see `channels`). */
export interface ServerOptions<Name extends string = string> extends BaseServerOptions<Name> {
  /**
   * Decide on each connect request: true accepts, a string rejects with
   * that reason, undefined leaves it pending for `accept`/`reject` later.
   * Default: accept every request.
   */
  onConnectRequest?: (req: ConnectRequest) => boolean | string | undefined;
  clock?: Clock;
  /**
   * Behind a relay: the relay's connect-token secret. Only clients the relay
   * admitted get through (others are rejected with "not admitted by a
   * relay"), and each connect request and connection carries the claims the
   * relay verified. Default: none (clients connect directly).
   */
  relaySecret?: string;
  /** As `relaySecret`, given as the derived 32-byte key (`relayAttestKey(secret)`). */
  relayKey?: Uint8Array;
}

/** `Name`: the declared channels' names (see `ServerOptions.channels`). */
export interface ServerEvents<Name extends string = string> {
  connection: { id: number; claims: RelayClaims | null };
  /** `channelName`: the channel's name in the server's declared layout (`channels` option), if it has one. */
  message: { id: number; channel: number; channelName?: Name; data: Uint8Array };
  acked: { id: number; messageId: number };
  lost: { id: number; messageId: number };
  disconnect: { id: number } & Omit<CloseEvent, 'relay'>;
}

type CoreServer = InstanceType<FullGlue['Server']>;

/** Reason given to a client whose HELLO no relay admitted. */
const NOT_ADMITTED = 'not admitted by a relay';

/** The 32-byte relay attestation key derived from a relay's connect-token secret. */
export function relayAttestKey(tokenSecret: string): Uint8Array {
  return fullWasm('relayAttestKey').glue.relayAttestKey(tokenSecret);
}

/** Claims JSON as the relay signed it, or null if it is not `{ sub: string, data?: string }`. */
function parseClaims(bytes: Uint8Array): RelayClaims | null {
  let v: unknown;
  try {
    v = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes));
  } catch {
    return null;
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return null;
  const { sub, data } = v as Record<string, unknown>;
  if (typeof sub !== 'string' || (data !== undefined && typeof data !== 'string')) return null;
  return data === undefined ? { sub } : { sub, data };
}

function relayKeyOption(o: ServerOptions): Uint8Array | null {
  if (o.relaySecret !== undefined && o.relayKey !== undefined) invalid('relaySecret and relayKey: set at most one');
  if (o.relaySecret !== undefined) {
    if (typeof o.relaySecret !== 'string' || o.relaySecret.length === 0) invalid('relaySecret: expected a non-empty string');
    return relayAttestKey(o.relaySecret);
  }
  if (o.relayKey !== undefined) {
    if (!(o.relayKey instanceof Uint8Array) || o.relayKey.length !== 32) invalid('relayKey: expected 32 bytes');
    return o.relayKey;
  }
  return null;
}

/**
 * Most handshakes (connect requests pending, rejected, timed out) whose
 * sender's address is kept. A flood of HELLOs with fresh IDs evicts the
 * oldest: their answer was a REJECT of at most their size, or nothing.
 */
export const MAX_HANDSHAKE_PEERS = 4096;

/** First byte of a REJECT (WIRE.md): the connection ID will not become a connection. */
const PACKET_REJECT = 0x03;

const DISCONNECT_CODES: Record<string, ErrorCode> = {
  local: 'RICOCHET_ERR_CLOSED_LOCALLY',
  peer: 'RICOCHET_ERR_CLOSED_BY_PEER',
  'idle-timeout': 'RICOCHET_ERR_IDLE_TIMEOUT',
};

/**
 * The server endpoint. `Name` is the union of its declared channels' names
 * when the `channels` layout is written out: `send`, `broadcast` and
 * `message` events then use only those; otherwise any string.
 */
export class Server<Name extends string = string> extends Emitter<ServerEvents<Name>> {
  private core: CoreServer | null;
  /** `core`'s input buffer and output batches, in the memory of its module. */
  private readonly port: CorePort;
  private readonly clock: Clock;
  private readonly decide: NonNullable<ServerOptions['onConnectRequest']>;
  /** Where each live connection's datagrams last came from. */
  private readonly peers = new Map<number, Peer>();
  /** The same for handshakes that are not (yet) connections; bounded, oldest first. */
  private readonly handshakes = new Map<number, Peer>();
  /**
   * A live connection's new peer, challenged by the core (path validation):
   * the session moves there only once it answers, since its key holder
   * could have sent from anywhere.
   */
  private readonly candidates = new Map<number, Peer>();
  private readonly live = new Set<number>();
  private readonly relayed: boolean;
  /** Each connection's earlier stats readings (for `recent`), from its first `stats(id)`. */
  private readonly statsWindows = new Map<number, StatsWindow>();
  private readonly statsWindowUs: number;
  /** The declared channel layout (`channels` option), or null: each client declares its own. */
  readonly channels: readonly ResolvedChannel<Name>[] | null;
  private cancelTimer: (() => void) | null = null;
  private flushQueued = false;

  constructor(options: ServerOptions<Name> = {}) {
    super();
    this.clock = options.clock ?? realClock;
    this.decide = options.onConnectRequest ?? (() => true);
    this.statsWindowUs = (positive('statsWindowMs', options.statsWindowMs) ?? 2000) * 1000;
    const relayKey = relayKeyOption(options);
    this.relayed = relayKey !== null;
    const w = fullWasm('Server');
    const cfg = coreConfig(w.glue, options, 65507, options.channels !== undefined);
    this.channels = options.channels === undefined ? null : resolveChannels(options.channels);
    if (this.channels) cfg.set(STRICT_CHANNELS, 1);
    try {
      if (relayKey !== null) cfg.setRelayKey(relayKey);
      // WELCOME nonces derive from it: predictable ones would let a spoofed
      // address pass for validated.
      this.core = new w.glue.Server(cfg, globalThis.crypto.getRandomValues(new Uint8Array(32)));
      this.port = new CorePort(w.heap, this.core);
    } catch (e) {
      throw new RicochetError('RICOCHET_ERR_INVALID_OPTIONS', String((e as Error).message ?? e));
    } finally {
      cfg.free();
    }
  }

  /** A channel index from an index or, with a declared layout, a name; throws on an unknown one. */
  private channelIndex(channel: number | string, data: Uint8Array): number {
    if (typeof channel === 'number') return channel; // the core checks it against the connection's channels
    const c = this.channels?.find((x) => x.name === channel);
    if (c) return c.index;
    throw new RicochetError('RICOCHET_ERR_UNKNOWN_CHANNEL', `no channel named ${channel}${this.channels ? '' : ' (the server declares no channels)'}`, data);
  }

  /** Serve one transport (e.g. one side of a loopback pair, or one WebSocket). */
  attach(transport: Transport): void {
    const peer: Peer = { send: (d) => transport.send(d) };
    transport.onDatagram((d) => this.handleDatagram(d, peer));
  }

  /**
   * Feed a datagram that arrived from `peer`. Pass the same `Peer` object for
   * every datagram from one address or transport: a new object is a new path.
   */
  handleDatagram(datagram: Uint8Array, peer: Peer): void {
    const core = this.core;
    if (core === null) return;
    const id = core.handleDatagram(this.clock.now(), this.port.writeIn(datagram));
    if (id !== 0) this.notePeer(core, id, peer, datagram.length);
    this.flush();
  }

  accept(id: number): boolean {
    const ok = this.core?.accept(this.clock.now(), id) ?? false;
    this.scheduleFlush();
    return ok;
  }

  reject(id: number, reason: string): boolean {
    const ok = this.core?.reject(this.clock.now(), id, reason) ?? false;
    this.scheduleFlush();
    return ok;
  }

  /** Queue a message for one connection; returns its message ID. */
  send(id: number, channel: number | Name, payload: Uint8Array | ArrayBufferView | ArrayBuffer): number {
    const data = payloadBytes(payload);
    const core = this.core;
    if (core === null) throw new RicochetError('RICOCHET_ERR_NOT_CONNECTED', undefined, data);
    const r = core.send(this.clock.now(), id, this.channelIndex(channel, data), this.port.writeIn(data));
    if (r < 0) throw sendError(r, data);
    this.scheduleFlush();
    return r;
  }

  /** Send to every live connection; returns how many took it. */
  broadcast(channel: number | Name, payload: Uint8Array | ArrayBufferView | ArrayBuffer): number {
    // Checked once, here: a bad payload or channel name throws, not once per connection (swallowed).
    const data = payloadBytes(payload);
    const index = this.channelIndex(channel, data);
    let n = 0;
    for (const id of this.connections()) {
      try {
        this.send(id, index, data);
        n++;
      } catch {
        // A full or closing connection skips this broadcast.
      }
    }
    return n;
  }

  close(id: number, code = 0, reason = ''): void {
    this.core?.close(this.clock.now(), id, code, reason);
    this.scheduleFlush();
  }

  /** IDs of connections that are accepted and not yet disconnected. */
  connections(): number[] {
    return [...this.live];
  }

  /** Switch forward error correction for one connection; false if it is unknown. */
  setFec(id: number, preset: FecPreset, budget?: number): boolean {
    if (this.core === null) return false;
    const n = fecPreset(preset);
    const b = positive('fecBudget', budget, FEC_BUDGET_MAX) ?? 0;
    try {
      return this.core.setFec(id, n, b);
    } catch (e) {
      return invalid(String((e as Error).message ?? e));
    }
  }

  /** The relay-verified claims of a pending or live connection; null without a relay key. */
  claims(id: number): RelayClaims | null {
    // Kept by the core for the connection's life; parsed when asked.
    const raw = this.relayed ? this.core?.claims(id) : undefined;
    return raw === undefined ? null : parseClaims(raw);
  }

  /** A connection's stats, totals and `recent` (from the server's earlier readings of it). */
  stats(id: number): ConnectionStats | null {
    const v = this.core?.stats(id);
    if (!v || v.length === 0) return null;
    const now = this.clock.now();
    let w = this.statsWindows.get(id);
    if (!w) this.statsWindows.set(id, (w = new StatsWindow(this.statsWindowUs, now)));
    return w.read(now, decodeStats(v));
  }

  /** Stop serving: closes every connection and releases the core. */
  shutdown(code = 0, reason = 'server shutting down'): void {
    for (const id of this.connections()) this.core?.close(this.clock.now(), id, code, reason);
    this.flush();
    this.cancelTimer?.();
    this.core?.free();
    this.core = null;
  }

  private notePeer(core: CoreServer, id: number, peer: Peer, len: number): void {
    if (this.live.has(id)) {
      const current = this.peers.get(id);
      if (current === undefined || current === peer) this.peers.set(id, peer);
      else if (this.candidates.get(id) === peer) core.candidateDatagram(id, len);
      else if (core.pathChanged(this.clock.now(), id, len)) this.candidates.set(id, peer);
      else {
        // Not validated yet: the core's 3× limit covers any peer.
        this.peers.set(id, peer);
        this.candidates.delete(id);
      }
      return;
    }
    this.handshakes.delete(id); // re-inserted last: the newest
    this.handshakes.set(id, peer);
    if (this.handshakes.size > MAX_HANDSHAKE_PEERS) this.handshakes.delete(this.handshakes.keys().next().value!);
  }

  /** Peers kept, live connections and handshakes (for tests and metrics). */
  peerCount(): number {
    return this.peers.size + this.handshakes.size + this.candidates.size;
  }

  private scheduleFlush(): void {
    if (this.flushQueued) return;
    this.flushQueued = true;
    queueMicrotask(() => {
      this.flushQueued = false;
      this.flush();
    });
  }

  private flush(): void {
    const core = this.core;
    if (core === null) return;
    const now = this.clock.now();
    // A validated candidate is the peer from now on (before sending: the core
    // probes it at once); an abandoned one is forgotten.
    for (let ev = core.pollPathEvent(); ev !== PATH_EVENT.NONE; ev = core.pollPathEvent()) {
      const id = core.pathEventConn();
      const peer = this.candidates.get(id);
      this.candidates.delete(id);
      if (ev === PATH_EVENT.VALIDATED && peer !== undefined) this.peers.set(id, peer);
    }
    const port = this.port;
    for (let d = port.nextDatagram(now, BATCH.RECORDS); d !== null; d = port.nextDatagram(now, BATCH.RECORDS)) {
      const id = port.txConn;
      (port.txCandidate ? this.candidates.get(id) : (this.peers.get(id) ?? this.handshakes.get(id)))?.send(d);
      // A REJECT ends the handshake: a repeat of its HELLO notes the peer again.
      if (d[0] === PACKET_REJECT) this.handshakes.delete(id);
    }
    for (let kind = port.nextEvent(); kind !== EV.NONE; kind = this.core === null ? EV.NONE : port.nextEvent()) {
      this.dispatch(core, kind);
      if (this.core === null) return;
    }
    this.cancelTimer?.();
    const at = core.pollTimeout();
    this.cancelTimer = at >= 0 ? this.clock.at(at, () => this.onTimer()) : null;
  }

  private onTimer(): void {
    this.core?.handleTimeout(this.clock.now());
    this.flush();
  }

  /** One event, its details in the port's `ev*` fields (read before anything is emitted). */
  private dispatch(core: CoreServer, kind: number): void {
    const port = this.port;
    const id = port.evConn;
    switch (kind) {
      case EV.CONNECT_REQUEST: {
        const claims = this.claims(id);
        // The relay vouched for claims this server cannot read: refuse them.
        if (this.relayed && claims === null) {
          core.reject(this.clock.now(), id, NOT_ADMITTED);
          this.scheduleFlush();
          break;
        }
        const verdict = this.decide({ id, payload: port.eventBytes(), claims });
        if (verdict === true) core.accept(this.clock.now(), id);
        else if (typeof verdict === 'string') core.reject(this.clock.now(), id, verdict);
        // The WELCOME/REJECT is queued now, after this flush's transmit pass.
        if (verdict !== undefined) this.scheduleFlush();
        break;
      }
      case EV.CONNECTED: {
        this.live.add(id);
        const peer = this.handshakes.get(id);
        this.handshakes.delete(id);
        if (peer !== undefined) this.peers.set(id, peer);
        this.emit('connection', { id, claims: this.claims(id) });
        break;
      }
      case EV.MESSAGE: {
        const channel = port.evArg;
        const data = port.eventBytes();
        const name = this.channels?.[channel]?.name;
        this.emit('message', name === undefined ? { id, channel, data } : { id, channel, channelName: name, data });
        break;
      }
      case EV.ACKED:
        this.emit('acked', { id, messageId: port.evWide });
        break;
      case EV.LOST:
        this.emit('lost', { id, messageId: port.evWide });
        break;
      case EV.CLOSED: {
        const k = closeKindOf(port.evArg);
        this.live.delete(id);
        this.peers.delete(id);
        this.handshakes.delete(id);
        this.candidates.delete(id);
        this.statsWindows.delete(id);
        const reason = port.eventText();
        const closeCode = port.evWide;
        this.emit('disconnect', { id, kind: k, code: DISCONNECT_CODES[k] ?? 'RICOCHET_ERR_CLOSED_LOCALLY', closeCode, reason });
        break;
      }
    }
  }
}
