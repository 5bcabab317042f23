// Named view of the core's stats vector (its order, fixed in
// wasm/wasm/src/events.rs, reaches us generated: wasm-codes.ts).
import { CHANNEL_STATS as C, STATS as S } from './wasm-codes.js';

/** Figures before the channels' (the last is their count). */
const STATS_LEN = Object.keys(S).length;

export interface ChannelStats {
  messagesSent: number;
  messagesDelivered: number;
  queuedMessages: number;
  unackedMessages: number;
}

export interface ConnectionStats {
  rttMs: number;
  rttVarMs: number;
  minRttMs: number;
  /** Fraction of our ack-eliciting packets declared lost (pure ACKs are not tracked). */
  lossOut: number;
  /** Fraction of the peer's packets that never arrived over the link (before FEC repair). */
  lossIn: number;
  /** Fraction of the peer's packets still missing after FEC repair (lost repair packets included). */
  residualLossIn: number;
  /** Peer packets rebuilt from FEC repair, with no round trip. */
  fecRecovered: number;
  /** Bytes of FEC repair packets sent. */
  fecRepairBytesOut: number;
  /** FEC repair packets sent. */
  fecRepairPacketsOut: number;
  /** Loss rate the peer last reported on our packets (what our FEC adapts to). */
  fecPeerLoss: number;
  /** P(lost | previous lost) the peer last reported on our packets. */
  fecPeerBurst: number;
  packetsOut: number;
  packetsIn: number;
  bytesOut: number;
  bytesIn: number;
  /** Ack-eliciting packets declared lost (never more than once each). */
  packetsLost: number;
  retransmissions: number;
  /**
   * Packets whose reliable data went again because their ACK was overdue on
   * a thin stream (a game's few packets per round trip), before any loss was
   * known; some had only lost their ACK.
   */
  earlyResends: number;
  /** Ack-eliciting packets sent: the ones tracked for loss (`packetsOut` counts pure ACKs too). */
  elicitingPacketsOut: number;
  duplicates: number;
  malformed: number;
  /** Datagrams dropped because their tag (or HELLO key) did not verify: not from this session's peer. */
  unauthenticated: number;
  /** Authentic packets dropped as numbered too far ahead of the largest received (a conforming peer never sends one). */
  tooFarAhead: number;
  noRoom: number;
  /** Packets the peer numbered from its first to its largest received: what `lossIn` is a fraction of. */
  peerPacketsExpected: number;
  overheadBytesOut: number;
  payloadBytesOut: number;
  congestionWindow: number;
  bytesInFlight: number;
  sendBufferBytes: number;
  recvBufferBytes: number;
  channels: ChannelStats[];
  /**
   * The same figures over the last few seconds, for on-screen graphs: the
   * totals above cover the whole connection, so loss seen minutes ago
   * lingers in them. Measured against the connection's own earlier reading
   * closest to `statsWindowMs` (2 s) ago; readings are those taken by
   * `stats()` calls and `stats` events (`statsIntervalMs`).
   */
  recent: RecentStats;
}

/** Loss and rates between two stats readings (see `ConnectionStats.recent`). */
export interface RecentStats {
  /** The span covered, ms: up to `statsWindowMs`, less early on (from the connection's start). */
  windowMs: number;
  lossIn: number;
  residualLossIn: number;
  lossOut: number;
  bytesInPerSecond: number;
  bytesOutPerSecond: number;
  packetsInPerSecond: number;
  packetsOutPerSecond: number;
  fecRecoveredPerSecond: number;
}

type Totals = Omit<ConnectionStats, 'recent'>;

/** A connection's totals before anything happened. */
const ZERO: Totals = decodeStats(new Array<number>(STATS_LEN).fill(0));

/** Readings kept for `recent`: enough to find one about a window ago, never many. */
const MAX_READINGS = 16;

/** A connection's earlier stats readings, for recent figures. */
export class StatsWindow {
  private readings: { atUs: number; s: Totals }[] = [];

  constructor(
    private readonly windowUs: number,
    startUs: number,
  ) {
    this.readings.push({ atUs: startUs, s: ZERO });
  }

  /** `s` read at `atUs`, with figures since the kept reading closest to a window ago. */
  read(atUs: number, s: Totals): ConnectionStats {
    const r = this.readings;
    let base = r[0]!;
    for (const x of r) if (x.atUs <= atUs - this.windowUs) base = x;
    // Keep readings spread over the window (at most one per eighth of it) and the base.
    const last = r[r.length - 1]!;
    if (atUs - last.atUs >= this.windowUs / 8) r.push({ atUs, s });
    while (r.length > 1 && r[1]!.atUs <= atUs - this.windowUs) r.shift();
    if (r.length > MAX_READINGS) r.splice(1, 1);
    return { ...s, recent: between(base.s, s, (atUs - base.atUs) / 1e6) };
  }
}

function between(a: Totals, b: Totals, seconds: number): RecentStats {
  const frac = (num: number, den: number) => (den > 0 ? Math.min(1, Math.max(0, num / den)) : 0);
  const e = b.peerPacketsExpected - a.peerPacketsExpected;
  // The core's fractions are whole packet counts over `peerPacketsExpected`: rounded back to counts, so a window
  // with no loss reads exactly 0 (not 2e-16).
  const missing = (k: 'lossIn' | 'residualLossIn') => frac(Math.round(b[k] * b.peerPacketsExpected) - Math.round(a[k] * a.peerPacketsExpected), e);
  const r = { windowMs: seconds * 1000, lossIn: missing('lossIn'), residualLossIn: missing('residualLossIn'), lossOut: frac(b.packetsLost - a.packetsLost, b.elicitingPacketsOut - a.elicitingPacketsOut) } as RecentStats;
  for (const k of RATES) r[`${k}PerSecond`] = seconds > 0 ? (b[k] - a[k]) / seconds : 0;
  return r;
}

/** Counters `recent` gives as rates. */
const RATES = ['bytesIn', 'bytesOut', 'packetsIn', 'packetsOut', 'fecRecovered'] as const;

/** A core figure's name in ConnectionStats: µs become ms (`rttUs` -> `rttMs`). */
type Named<K extends string> = K extends `${infer B}Us` ? `${B}Ms` : K;
type Decoded = { [K in Exclude<keyof typeof S, 'channels'> as Named<K>]: number };
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
/** Compile-time: the core's figures are exactly ConnectionStats' (one name each, by the rule above). */
const FIGURES_MATCH: Same<Decoded, Omit<Totals, 'channels'>> = true;
void FIGURES_MATCH;

/** The stats vector by name, in the core's order (a loop over the generated tables, not a literal per field: smaller). */
export function decodeStats(v: ArrayLike<number>): Totals {
  const at = (i: number) => v[i]!;
  const n = v[S.channels] ?? 0;
  const channels: ChannelStats[] = [];
  const per = Object.keys(C).length;
  for (let i = 0; i < n; i++) {
    const ch: Record<string, number> = {};
    for (const [k, j] of Object.entries(C)) ch[k] = at(STATS_LEN + i * per + j);
    channels.push(ch as unknown as ChannelStats);
  }
  const out: Record<string, unknown> = {};
  for (const [k, i] of Object.entries(S)) {
    if (k === 'channels') continue;
    if (k.endsWith('Us')) out[`${k.slice(0, -2)}Ms`] = at(i) / 1000;
    else out[k] = at(i);
  }
  out.channels = channels;
  return out as unknown as Totals;
}
