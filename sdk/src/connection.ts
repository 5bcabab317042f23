// The client connection and its run loop: datagrams and timers in, then
// drain the core's outputs (transmit, events, next timeout) in that order.
import { realClock, type Clock } from './clock.js';
import { CorePort } from './heap.js';
import { Emitter } from './emitter.js';
import { payloadBytes, redactTokens, RicochetError, sendError, type ErrorCode, type RelayClose } from './errors.js';
import { configuredDatagramSize, coreConfig, FEC_BUDGET_MAX, fecBudgetFor, fecPreset, fecShapeFor, newClient } from './core-config.js';
import { handshakeBytes, invalid, positive, resolveChannels, type ConnectionOptions, type FecPreset, type ResolvedChannel } from './options.js';
import { decodeStats, StatsWindow, type ConnectionStats } from './stats.js';
import { Outage, PROBE_ANSWER_MIN_MS, QUIET_PROBES, resumeSettings, type ResumeSettings } from './resume.js';
import type { Transport } from './transport.js';
import { clientWasm, type ClientGlue } from './wasm.js';
import { BATCH, CLIENT_STATE, CLOSE_KINDS, DATAGRAM, EV } from './wasm-codes.js';

const encoder = new TextEncoder();

/**
 * How a connection ended: closed by this side or the peer, timed out idle or
 * in the handshake, refused by the server, or its transport died.
 */
export type CloseKind = 'local' | 'peer' | 'idle-timeout' | 'handshake-timeout' | 'rejected' | 'transport';

/** The close kind of the core's `eventCloseKind` code. */
export function closeKindOf(code: number): CloseKind {
  // Typed here: the generated table may name only kinds this union has.
  const kinds: Readonly<Record<number, CloseKind | undefined>> = CLOSE_KINDS;
  return kinds[code] ?? 'local';
}

/** `Name`: the declared channels' names (see `ConnectionOptions`). */
export interface MessageEvent<Name extends string = string> {
  channel: number;
  /** The channel's name, if it was declared with one. */
  channelName?: Name;
  data: Uint8Array;
}

export interface CloseEvent {
  kind: CloseKind;
  /** Stable error code for this kind of close. */
  code: ErrorCode;
  /** Application close code (local/peer closes), else 0. */
  closeCode: number;
  reason: string;
  /** The relay's close code and name (4401 RELAY_ERR_TOKEN_EXPIRED, …) when a relay refused or ended the session; else null. */
  relay: RelayClose | null;
}

/** `Name`: the declared channels' names (see `ConnectionOptions`). */
export interface ConnectionEvents<Name extends string = string> {
  open: void;
  message: MessageEvent<Name>;
  /** Every packet carrying this message was acknowledged. */
  acked: { id: number };
  /** This message will not be delivered (unreliable loss, staleness, or close). */
  lost: { id: number };
  close: CloseEvent;
  stats: ConnectionStats;
  /** The transport died (or `switchTransport` was called); the session waits for a new one. Sends still queue. */
  reconnecting: { reason: string };
  /** The session continues on a new transport: something arrived on it `downtimeMs` after the old one died. */
  resumed: { downtimeMs: number; attempts: number; transport: string };
}

/** The error code of a close: by kind, made precise where the reason says more. */
function closeCode(kind: CloseKind, reason: string, unheard: boolean): ErrorCode {
  if (kind === 'local' && unheard) return 'RICOCHET_ERR_NO_LISTENER';
  if (kind === 'rejected' && reason.startsWith('channel layout differs')) return 'RICOCHET_ERR_CHANNELS_DIFFER';
  return CLOSE_CODES[kind];
}

const CLOSE_CODES: Record<CloseKind, ErrorCode> = {
  local: 'RICOCHET_ERR_CLOSED_LOCALLY',
  peer: 'RICOCHET_ERR_CLOSED_BY_PEER',
  'idle-timeout': 'RICOCHET_ERR_IDLE_TIMEOUT',
  'handshake-timeout': 'RICOCHET_ERR_HANDSHAKE_TIMEOUT',
  rejected: 'RICOCHET_ERR_REJECTED',
  transport: 'RICOCHET_ERR_TRANSPORT_CLOSED',
};

/**
 * Messages kept for the first 'message' listener (a game that attaches it
 * after `await conn.ready` must not lose what the server sent on accept);
 * past this many the connection closes with RICOCHET_ERR_NO_LISTENER rather
 * than hold without bound or drop in silence.
 */
export const HELD_MESSAGES_LIMIT = 4096;

/** How often timers are serviced while nothing can be sent, µs. */
const BLOCKED_RECHECK_US = 10_000;

type CoreClient = InstanceType<ClientGlue['Client']>;

export type ConnectionState = 'connecting' | 'open' | 'reconnecting' | 'closing' | 'closed';

/**
 * A client connection. `Name` is the union of its channels' names when the
 * layout is written out (`new Connection(t, { channels: [{ kind, name: 'chat' }] })`):
 * `send` and `message` events then use only those; otherwise any string.
 */
export class Connection<Name extends string = string> extends Emitter<ConnectionEvents<Name>> {
  /** The current transport; null while reconnecting. */
  private current_: Transport | null = null;
  /** The last transport attached (kept after close for inspection). */
  private last_: Transport;
  /** Not renamed by the build: the relay's resume tests replace its `reconnect`. */
  private readonly resume: ResumeSettings | null;
  private outage_: Outage | null = null;
  /** The session's datagram size (options or 1200); a transport may lower it. */
  private readonly dgramCap_: number;
  /** The transport's maxDatagramSize the core was last fitted to. */
  private fittedTo_ = 0;
  /** The FEC preset, the app's own budget (if it chose one), and the transport kind budget and message shape were fitted to (`fecBudgetFor`, `fecShapeFor`). */
  private fec_: { preset: FecPreset | undefined; budget: number | undefined; kind: string };
  private lastHeardUs_ = 0;
  private cancelSilence_: (() => void) | null = null;
  /** Transports left for a new one, closed once that one is proven. */
  private readonly retired_: Transport[] = [];
  readonly channels: readonly ResolvedChannel<Name>[];
  private core_: CoreClient | null;
  /** `core`'s input buffer and output batches, in the memory of its module. */
  private readonly port_: CorePort;
  private readonly clock_: Clock;
  private cancelTimer_: (() => void) | null = null;
  /** The deadline `cancelTimer_`'s timer is armed for (µs). */
  private timerAt_ = -1;
  private flushQueued_ = false;
  private statsTimer_: ReturnType<typeof setInterval> | null = null;
  private readonly statsWindow_: StatsWindow;
  private _state_: ConnectionState = 'connecting';
  private readonly connId_: number;
  private closeEvent_: CloseEvent | null = null;
  /** Closed because messages piled up with no listener. */
  private unheard_ = false;
  /** Stops listening for the page going away (browsers). */
  private forgetPage_: (() => void) | null = null;
  private readonly opened_: Promise<void>;

  /** Starts connecting at once over `transport`; await `ready` or listen for `open`. */
  constructor(transport: Transport, options: ConnectionOptions<Name> = {}) {
    super();
    this.last_ = transport;
    this.channels = resolveChannels(options.channels);
    this.clock_ = options.clock ?? realClock;
    this.resume = resumeSettings(options, options.idleTimeoutMs ?? 10_000);
    const w = clientWasm();
    this.fec_ = { preset: options.fec, budget: options.fecBudget, kind: transport.kind };
    const cfg = coreConfig(w.glue, options, transport.maxDatagramSize, true, transport.kind);
    this.dgramCap_ = configuredDatagramSize(cfg);
    this.fittedTo_ = transport.maxDatagramSize;
    try {
      this.core_ = newClient(w, cfg, this.clock_.now(), sessionEntropy(options.seed), handshakeBytes(options.handshake));
    } finally {
      cfg.free();
    }
    this.connId_ = this.core_.id();
    this.port_ = new CorePort(w.heap, this.core_);
    this.opened_ = new Promise((resolve, reject) => {
      this.once('open', () => resolve());
      this.once('close', (c) => {
        if (this._state_ !== 'open') reject(new RicochetError(c.code, c.reason || undefined, undefined, { reason: c.reason, relay: c.relay }));
      });
    });
    this.opened_.catch(() => {}); // the rejection is also delivered as a `close` event
    this.holdUnheard('message', HELD_MESSAGES_LIMIT, () => {
      this.unheard_ = true;
      this.close(0, `${HELD_MESSAGES_LIMIT} messages arrived with no 'message' listener`);
    });
    this.attach_(transport);
    this.closeWithPage_();
    this.statsWindow_ = new StatsWindow((positive('statsWindowMs', options.statsWindowMs) ?? 2000) * 1000, this.clock_.now());
    const interval = options.statsIntervalMs ?? 0;
    if (interval > 0) this.statsTimer_ = setInterval(() => this._state_ === 'open' && this.emit('stats', this.stats()), interval);
    this.drain_();
  }

  /** The transport in use (during a reconnect, the last one). */
  get transport(): Transport {
    return this.current_ ?? this.last_;
  }

  /**
   * Move the session onto another transport now (e.g. a user's "force
   * WebSocket"): the old one is closed, nothing queued or in flight is lost,
   * and `reconnecting`/`resumed` are emitted as for a dead transport.
   */
  switchTransport(transport: Transport): void {
    if (this.core_ === null || this._state_ !== 'open') {
      transport.close();
      throw new RicochetError('RICOCHET_ERR_NOT_CONNECTED', 'switchTransport needs an open connection');
    }
    // The old transport closes once the new one is proven (see retire).
    this.retire_(this.current_);
    this.detach_('switched transport');
    // The first attempt is the given transport; if it fails, the app's reconnect (if any) takes over.
    const next = this.resume?.reconnect;
    const reconnect = async (info: { attempt: number; reason: string }) => {
      if (info.attempt === 1) return transport;
      if (next) return next(info);
      throw new Error(`the transport switched to closed: ${info.reason}`);
    };
    this.outage_ = new Outage({ reconnect, windowMs: this.resume?.windowMs ?? 10_000, silenceMs: 0, quietMs: 0 }, this.resumeHost_(), 'switched transport');
  }

  /** Resolves once connected; rejects with the close error if it never does. */
  get ready(): Promise<void> {
    return this.opened_;
  }

  get state(): ConnectionState {
    return this._state_;
  }

  /** Why the connection closed, once it has. */
  get closeInfo(): CloseEvent | null {
    return this.closeEvent_;
  }

  /** Connection ID shared with the server. */
  get id(): number {
    return this.connId_;
  }

  /**
   * Queue a message on a channel (index or name). Returns its ID, which a
   * later `acked` or `lost` event names. Throws RicochetError (with the
   * message in `data`) if it cannot be queued.
   */
  send(channel: number | Name, payload: Uint8Array | ArrayBufferView | ArrayBuffer): number {
    const data = payloadBytes(payload);
    const core = this.core_;
    if (core === null) throw new RicochetError('RICOCHET_ERR_NOT_CONNECTED', undefined, data);
    const index = this.channelIndex_(channel, data);
    const len = this.port_.writeIn(data);
    const r = core.send(this.clock_.now(), index, len);
    if (r < 0) throw sendError(r, data);
    this.scheduleFlush_();
    return r;
  }

  /** Close gracefully with an application code and reason. */
  close(code = 0, reason = ''): void {
    if (this.core_ === null || this._state_ === 'closed' || this._state_ === 'closing') return;
    this.core_.close(this.clock_.now(), code, this.port_.writeIn(encoder.encode(reason)));
    this.drain_();
  }

  stats(): ConnectionStats {
    if (this.core_ === null) throw new RicochetError('RICOCHET_ERR_NOT_CONNECTED');
    return this.statsWindow_.read(this.clock_.now(), decodeStats(this.core_.stats()));
  }

  /** Switch forward error correction at run time (e.g. from a network panel). */
  setFec(preset: FecPreset, budget?: number): void {
    if (this.core_ === null) throw new RicochetError('RICOCHET_ERR_NOT_CONNECTED');
    const n = fecPreset(preset);
    const chosen = positive('fecBudget', budget, FEC_BUDGET_MAX);
    const kind = (this.current_ ?? this.last_).kind;
    const bad = this.core_.setFec(n + fecShapeFor(preset, kind), chosen ?? fecBudgetFor(preset, kind) ?? 0);
    if (bad > 0) invalid(this.port_.readText(bad));
    this.fec_ = { preset, budget: chosen, kind };
  }

  /** A session moved to another kind of transport (now current): the FEC budget (unless the app set one) and message shape follow it. */
  private refitFec_(t: Transport): void {
    const f = this.fec_;
    if (this.core_ === null || f.kind === t.kind) return;
    const fit = (kind: string) => `${fecShapeFor(f.preset, kind)} ${f.budget ?? fecBudgetFor(f.preset, kind)}`;
    if (fit(f.kind) === fit(t.kind)) f.kind = t.kind;
    else this.setFec(f.preset ?? 'balanced', f.budget);
  }

  private channelIndex_(channel: number | string, data: Uint8Array): number {
    if (typeof channel === 'number') {
      if (Number.isInteger(channel) && channel >= 0 && channel < this.channels.length) return channel;
    } else {
      const c = this.channels.find((x) => x.name === channel);
      if (c) return c.index;
    }
    throw new RicochetError('RICOCHET_ERR_UNKNOWN_CHANNEL', `unknown channel ${String(channel)}`, data);
  }

  /** Route a transport's datagrams, closes and wakeups here while it is the current one. */
  private attach_(t: Transport): void {
    this.current_ = t;
    this.last_ = t;
    t.onDatagram((d) => this.current_ === t && this.handleDatagram_(d));
    t.onClose((reason, relay) => {
      if (this.current_ !== t) return;
      // A transport may report itself dead while its session is still up (a
      // stalled WebTransport): it is closed once a successor is proven.
      this.retire_(t);
      this.transportClosed_(reason, relay ?? null);
    });
    t.onWritable?.(() => this.current_ === t && this.drain_());
  }

  private handleDatagram_(d: Uint8Array): void {
    const core = this.core_;
    if (core === null) return;
    const len = this.port_.writeIn(d);
    // Only a datagram the core took (0) shows the path alive: a forged or
    // unauthenticated one must neither hold off silence detection nor
    // prove a resumed transport.
    if (core.handleDatagram(this.clock_.now(), len) === DATAGRAM.TAKEN) {
      this.lastHeardUs_ = this.clock_.now();
      if (this.outage_ !== null) {
        const r = this.outage_.proven();
        this.closeRetired_();
        this.outage_ = null;
        this._state_ = 'open';
        this.emit('resumed', { ...r, transport: this.last_.kind });
      }
    }
    this.drain_();
  }

  /** Sends made in one task coalesce into shared datagrams. */
  private scheduleFlush_(): void {
    if (this.flushQueued_) return;
    this.flushQueued_ = true;
    queueMicrotask(() => {
      this.flushQueued_ = false;
      this.drain_();
    });
  }

  private onTimer_(): void {
    this.cancelTimer_ = null;
    const core = this.core_;
    if (core === null) return;
    core.handleTimeout(this.clock_.now());
    this.drain_();
  }

  /**
   * Put queued messages on the wire now instead of at the end of the current
   * task (sends made in one task are coalesced into shared datagrams).
   */
  flush(): void {
    this.drain_();
  }

  /** Drain transmit, then events, then re-arm the single timer. */
  private drain_(): void {
    const core = this.core_;
    if (core === null) return;
    const now = this.clock_.now();
    const t = this.current_;
    // WebTransport's maxDatagramSize can change under a live session.
    if (t !== null && t.maxDatagramSize !== this.fittedTo_ && !this.fitDatagramSize_(t)) return;
    // No transport (reconnecting): messages wait in the core, as when a socket stalls.
    // A transport that may refuse the next datagram is asked before each
    // one; the others take a drain's datagrams a batch at a time.
    const max = t?.canSend === undefined ? BATCH.RECORDS : 1;
    while (t !== null && (t.canSend?.() ?? true)) {
      const d = this.port_.nextDatagram(now, max);
      if (d === null) break;
      t.send(d);
    }
    for (let kind = this.port_.nextEvent(); kind !== EV.NONE; kind = this.core_ === null ? EV.NONE : this.port_.nextEvent()) {
      this.dispatch_(kind);
      if (this.core_ === null) return;
    }
    this.armTimer_(core);
  }

  private armTimer_(core: CoreClient): void {
    let at = core.pollTimeout();
    // With nowhere to send (reconnecting, or a stalled socket), a deadline
    // that wants a datagram out stays due; re-arming it at once would spin.
    // Check again a little later instead; a new transport or onWritable
    // drains at once anyway.
    const t = this.current_;
    if (at >= 0 && (t === null || !(t.canSend?.() ?? true))) at = Math.max(at, this.clock_.now() + BLOCKED_RECHECK_US);
    // Most drains leave the deadline where it was: keep that timer rather
    // than cancel and arm another (each arm is a message hop and a timer).
    if (at >= 0 && at === this.timerAt_ && this.cancelTimer_ !== null) return;
    this.cancelTimer_?.();
    this.cancelTimer_ = null;
    this.timerAt_ = at;
    if (at >= 0) {
      let ran = false;
      const cancel = this.clock_.at(at, () => ((ran = true), this.onTimer_()));
      // A clock may run a due callback at once; the drain it made armed its own.
      if (!ran) this.cancelTimer_ = cancel;
    } else if (core.state() === CLIENT_STATE.DRAINED) this.dispose_();
  }

  /** One event, its details in the port's `ev*` fields (read before anything is emitted). */
  private dispatch_(kind: number): void {
    const port = this.port_;
    switch (kind) {
      case EV.CONNECTED:
        this._state_ = 'open';
        this.lastHeardUs_ = this.clock_.now();
        this.watchSilence_();
        this.emit('open', undefined);
        break;
      case EV.MESSAGE: {
        const channel = port.evArg;
        const data = port.eventBytes();
        const name = this.channels[channel]?.name;
        this.emit('message', name === undefined ? { channel, data } : { channel, channelName: name, data });
        break;
      }
      case EV.ACKED:
        this.emit('acked', { id: port.evWide });
        break;
      case EV.LOST:
        this.emit('lost', { id: port.evWide });
        break;
      case EV.CLOSED: {
        const k = closeKindOf(port.evArg);
        const reason = port.eventText();
        this.finish_({ kind: k, code: closeCode(k, reason, this.unheard_), closeCode: port.evWide, reason, relay: null });
        break;
      }
    }
  }

  private finish_(ev: CloseEvent): void {
    if (this.closeEvent_ !== null) return;
    ev.reason = redactTokens(ev.reason);
    this.closeEvent_ = ev;
    this._state_ = ev.kind === 'local' && this.core_?.state() === CLIENT_STATE.CLOSING ? 'closing' : 'closed';
    this.emit('close', ev);
  }

  private transportClosed_(reason: string, relay: RelayClose | null = null): void {
    if (this.core_ === null) return;
    if (this.outage_ !== null) {
      // A transport adopted for a resume closed before anything arrived on it.
      this.current_ = null;
      return this.outage_.attemptFailed(reason, relay);
    }
    if (this.resume !== null && this._state_ === 'open') {
      this.detach_(reason);
      this.outage_ = new Outage(this.resume, this.resumeHost_(), reason);
      return;
    }
    this.finish_({ kind: 'transport', code: 'RICOCHET_ERR_TRANSPORT_CLOSED', closeCode: 0, reason, relay });
    this.dispose_();
  }

  /**
   * Keep a transport we are leaving open until its successor is proven: a
   * relay ends a session whose client closes on purpose, so closing first
   * would end the very session the new transport resumes. The relay closes
   * it itself when the new one takes over.
   */
  private retire_(t: Transport | null): void {
    if (t !== null) this.retired_.push(t);
  }

  private closeRetired_(): void {
    for (const t of this.retired_.splice(0)) {
      try {
        t.close();
      } catch {
        // already closed
      }
    }
  }

  /**
   * Datagrams follow the transport's size (switch, resume, or a live
   * change), capped by the session's. Fragments are cut for the smallest
   * size the session may move to (`minDatagramBytes`), so the core refuses
   * only a transport below it: that one is treated as failed (the session
   * resumes on another, if it can).
   */
  private fitDatagramSize_(t: Transport): boolean {
    const core = this.core_;
    if (core === null) return false;
    const size = Math.min(this.dgramCap_, Math.floor(t.maxDatagramSize));
    if (core.setMaxDatagramSize(this.clock_.now(), size)) {
      this.fittedTo_ = t.maxDatagramSize;
      return true;
    }
    const reason = `${t.kind}: datagrams of ${t.maxDatagramSize} bytes are too small for this session`;
    this.current_ = null;
    t.close();
    this.transportClosed_(reason);
    return false;
  }

  /** The session loses its transport; it waits (sends queue in the core) for a new one. */
  private detach_(reason: string): void {
    this.current_ = null;
    this._state_ = 'reconnecting';
    this.emit('reconnecting', { reason });
  }

  private resumeHost_() {
    return {
      clock: this.clock_,
      adopt: (t: Transport) => {
        if (this.core_ === null) {
          t.close();
          return false;
        }
        this.attach_(t);
        this.refitFec_(t);
        if (!this.fitDatagramSize_(t)) return true;
        this.core_.handlePathChange(this.clock_.now());
        this.drain_();
        return true;
      },
      giveUp: (reason: string, relay: RelayClose | null) => {
        this.outage_ = null;
        this.finish_({ kind: 'transport', code: 'RICOCHET_ERR_RESUME_FAILED', closeCode: 0, reason, relay });
        this.dispose_();
      },
    };
  }

  /**
   * With reconnect on: a transport that delivers nothing for
   * silenceTimeoutMs is treated as dead, and so is one that answers none of
   * the probes sent after quietProbeMs of silence (see ResumeOptions).
   */
  private watchSilence_(): void {
    const ms = this.resume?.silenceMs ?? 0;
    const quietMs = this.resume?.quietMs ?? 0;
    if ((ms <= 0 && quietMs <= 0) || this.core_ === null) return;
    const limitUs = (ms > 0 ? ms : Infinity) * 1000;
    const quietUs = (quietMs > 0 ? quietMs : Infinity) * 1000;
    let probes = 0;
    const check = () => {
      this.cancelSilence_ = null;
      const core = this.core_;
      if (core === null) return;
      const now = this.clock_.now();
      const silentUs = now - this.lastHeardUs_;
      let next = this.lastHeardUs_ + Math.min(limitUs, quietUs);
      if (silentUs < quietUs) probes = 0;
      if (this._state_ === 'open' && this.current_ !== null && silentUs >= Math.min(limitUs, quietUs)) {
        if (silentUs < limitUs && probes < QUIET_PROBES) {
          probes++;
          core.handlePathChange(now); // a probe: ack-eliciting, answered within a round trip
          this.drain_();
          next = now + this.probeAnswerUs_();
        } else {
          const reason = silentUs >= limitUs ? `nothing arrived for ${ms} ms` : `no answer to ${probes} probes in ${Math.round(silentUs / 1000)} ms of silence`;
          this.current_.markStalled?.(reason);
          this.retire_(this.current_);
          this.transportClosed_(reason);
          probes = 0;
        }
      }
      // Not before the next deadline from the last datagram heard (a later
      // one would let up to twice the limit pass unnoticed).
      this.cancelSilence_ = this.clock_.at(next > now ? next : now + Math.min(limitUs, quietUs), check);
    };
    this.cancelSilence_ = this.clock_.at(this.lastHeardUs_ + Math.min(limitUs, quietUs), check);
  }

  /**
   * Time a probe gets to be answered: three round trips with their variance
   * plus the ack delay, at least PROBE_ANSWER_MIN_MS; but at most two
   * smoothed round trips and 250 ms, as a noisy host's variance would
   * otherwise stretch each probe past a second.
   */
  private probeAnswerUs_(): number {
    const s = this.core_ === null ? null : decodeStats(this.core_.stats());
    const generous = s ? 3 * (s.rttMs + 4 * s.rttVarMs) + 25 : 0;
    const cap = s ? 2 * s.rttMs + 250 : 0;
    return Math.max(PROBE_ANSWER_MIN_MS, Math.min(generous, cap)) * 1000;
  }

  /**
   * In a browser, a page that goes away (tab closed, navigation) closes the
   * connection on its way out, so the server learns at once rather than at
   * its idle timeout. `pagehide`, not `unload`: it also fires on mobile and
   * for pages entering the back/forward cache, which cannot keep sockets.
   */
  private closeWithPage_(): void {
    const page = globalThis as { addEventListener?: (t: string, f: () => void) => void; removeEventListener?: (t: string, f: () => void) => void };
    if (typeof page.addEventListener !== 'function') return;
    const gone = () => this.close(0, 'page closed');
    page.addEventListener('pagehide', gone);
    this.forgetPage_ = () => page.removeEventListener?.('pagehide', gone);
  }

  /** Release the wasm side once nothing more can happen. */
  private dispose_(): void {
    this._state_ = 'closed';
    this.forgetPage_?.();
    this.forgetPage_ = null;
    this.cancelTimer_?.();
    this.cancelTimer_ = null;
    this.cancelSilence_?.();
    this.cancelSilence_ = null;
    this.outage_?.stop();
    this.outage_ = null;
    if (this.statsTimer_ !== null) clearInterval(this.statsTimer_);
    this.statsTimer_ = null;
    this.core_?.free();
    this.core_ = null;
    // The session is over: release the socket / WebTransport session too.
    this.current_?.close();
    this.current_ = null;
    this.closeRetired_();
  }
}

/** Connect over a transport and wait until the connection is open. */
export async function connect<Name extends string = string>(transport: Transport, options: ConnectionOptions<Name> = {}): Promise<Connection<Name>> {
  const c = new Connection(transport, options);
  await c.ready;
  return c;
}

/**
 * The connection ID (4 bytes) and session key (16) a client starts from. The
 * key is what makes the session its own (another party who learns the ID
 * cannot take it over), so it always comes from the platform's secure random
 * source; a test's `seed` fixes only the ID, which is not secret.
 */
export function sessionEntropy(seed?: number): Uint8Array {
  const e = globalThis.crypto.getRandomValues(new Uint8Array(20));
  if (seed !== undefined) {
    let h = Math.imul((seed >>> 0) ^ 0x9e3779b9, 0x85ebca6b) ^ Math.floor(seed / 2 ** 32);
    h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
    new DataView(e.buffer).setUint32(0, (h ^ (h >>> 16)) >>> 0 || 1, true);
  }
  return e;
}
