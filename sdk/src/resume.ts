// Session resumption policy: when a connection's transport dies, ask the app
// for a new one (same or fresh token), with backoff, for at most a window.
// The protocol session (connection ID, channels, unacked messages) lives in
// the core and simply continues on the new transport; the relay keeps the
// backend side parked meanwhile, so the game server sees the same peer.
import type { Clock } from './clock.js';
import { reasonOf, RicochetError, type RelayClose } from './errors.js';
import { invalid } from './options.js';
import type { Transport } from './transport.js';

export interface ReconnectInfo {
  /** 1 for the first try after a transport died. */
  attempt: number;
  /** Why the previous transport ended (or the last attempt failed). */
  reason: string;
}

/** Opens a new transport for a resume, e.g. `async () => (await openTransport(o)).transport`. */
export type ReconnectFn = (info: ReconnectInfo) => Promise<Transport>;

export interface ResumeOptions {
  /** Open a new transport when the current one dies. Default: none (the connection closes with it). */
  reconnect?: ReconnectFn;
  /** Give up resuming after this long. Default 10 000 ms (never past idleTimeoutMs: the core closes then). */
  resumeWindowMs?: number;
  /**
   * With `reconnect`: treat the transport as dead when nothing at all has
   * arrived for this long (a network change often kills a path silently;
   * keepalives arrive every `keepaliveMs` otherwise). 0 disables. Default 4 000 ms.
   */
  silenceTimeoutMs?: number;
  /**
   * With `reconnect`: after this long with nothing arrived, ask the peer (a
   * probe it acknowledges within a round trip); three probes unanswered,
   * each given at least 250 ms, mark the transport dead well before
   * `silenceTimeoutMs` — a relay that dies without a word (a killed
   * process behind a UDP balancer) is noticed in about a second. A live but
   * quiet peer answers, so it costs a probe, not a reconnect. 0 disables.
   * Default 500 ms.
   */
  quietProbeMs?: number;
}

/** Probes sent after `quietProbeMs` of silence before the transport counts as dead. */
export const QUIET_PROBES = 3;
/** Least time given each probe to be answered, ms (a round trip plus the peer's ack delay, on a slow path). */
export const PROBE_ANSWER_MIN_MS = 250;

/** Relay refusals that a retry cannot fix: stop resuming at once. */
const FINAL = new Set([
  'RELAY_ERR_RESUME_FAILED',
  'RELAY_ERR_TOKEN_MALFORMED',
  'RELAY_ERR_TOKEN_SIGNATURE',
  'RELAY_ERR_TOKEN_EXPIRED',
  'RELAY_ERR_TOKEN_IN_USE',
  'RELAY_ERR_BACKEND_NOT_ALLOWED',
]);

/** Delay before attempt n (1-based): at once, then 250 ms doubling to 2 s. */
export function retryDelayMs(attempt: number): number {
  return attempt <= 1 ? 0 : Math.min(2000, 250 * 2 ** (attempt - 2));
}

export interface ResumeSettings {
  reconnect: ReconnectFn;
  windowMs: number;
  silenceMs: number;
  quietMs: number;
}

export function resumeSettings(o: ResumeOptions, idleTimeoutMs: number): ResumeSettings | null {
  if (o.reconnect === undefined) return null;
  if (typeof o.reconnect !== 'function') invalid('reconnect: expected a function returning Promise<Transport>');
  const ms = (name: string, v: number | undefined, dflt: number, allowZero: boolean) => {
    if (v === undefined) return dflt;
    if (typeof v !== 'number' || !Number.isFinite(v) || v < 0 || (!allowZero && v === 0)) invalid(`${name}: expected a number ≥ ${allowZero ? 0 : 'above 0'}, got ${String(v)}`);
    return v;
  };
  return {
    reconnect: o.reconnect,
    windowMs: Math.min(ms('resumeWindowMs', o.resumeWindowMs, 10_000, false), idleTimeoutMs),
    silenceMs: ms('silenceTimeoutMs', o.silenceTimeoutMs, 4_000, true),
    quietMs: ms('quietProbeMs', o.quietProbeMs, 500, true),
  };
}

/** What the connection does for the resumer. */
export interface ResumeHost {
  readonly clock: Clock;
  /** Move the session onto `t` (and probe at once). False if the connection ended meanwhile. */
  adopt(t: Transport): boolean;
  /** Resuming failed for good (`relay`: the relay's refusal, if one ended it). */
  giveUp(reason: string, relay: RelayClose | null): void;
}

/** One outage: attempts with backoff until a transport is proven or the window closes. */
export class Outage {
  readonly startedUs: number;
  attempts = 0;
  private lastReason_: string;
  private lastRelay_: RelayClose | null = null;
  private retry_: (() => void) | null = null;
  private readonly window_: () => void;
  private over_ = false;

  constructor(
    private readonly s: ResumeSettings,
    private readonly host: ResumeHost,
    reason: string,
  ) {
    this.startedUs = host.clock.now();
    this.lastReason_ = reason;
    this.window_ = host.clock.at(this.startedUs + s.windowMs * 1000, () =>
      this.end_(`no transport within resumeWindowMs (${s.windowMs} ms) after ${this.attempts} attempts; last: ${this.lastReason_}`),
    );
    this.scheduleAttempt_();
  }

  /** The transport adopted for this outage closed before anything arrived on it. */
  attemptFailed(reason: string, relay: RelayClose | null = null): void {
    if (this.over_) return;
    this.lastReason_ = reason;
    this.lastRelay_ = relay;
    if (relay?.error && FINAL.has(relay.error)) return this.end_(`resume refused: ${relay.reason}`);
    this.scheduleAttempt_();
  }

  /** Something arrived on the new transport: the outage is over. */
  proven(): { downtimeMs: number; attempts: number } {
    this.stop();
    return { downtimeMs: (this.host.clock.now() - this.startedUs) / 1000, attempts: this.attempts };
  }

  stop(): void {
    this.over_ = true;
    this.window_();
    this.retry_?.();
    this.retry_ = null;
  }

  private end_(reason: string): void {
    if (this.over_) return;
    this.stop();
    this.host.giveUp(reason, this.lastRelay_);
  }

  private scheduleAttempt_(): void {
    const clock = this.host.clock;
    this.retry_ = clock.at(clock.now() + retryDelayMs(this.attempts + 1) * 1000, () => {
      this.retry_ = null;
      void this.attempt_();
    });
  }

  private async attempt_(): Promise<void> {
    this.attempts++;
    let t: Transport;
    try {
      t = await this.s.reconnect({ attempt: this.attempts, reason: this.lastReason_ });
    } catch (e) {
      return this.attemptFailed(reasonOf(e), e instanceof RicochetError ? (e.relay ?? null) : null);
    }
    if (this.over_) return t.close();
    // The window stays armed until something arrives on `t` (proven).
    if (!this.host.adopt(t)) this.stop();
  }
}
