// Connection options: documented defaults, merged and validated once.
import { RicochetError } from './errors.js';
import type { Clock } from './clock.js';
import type { ResumeOptions } from './resume.js';
import { CHANNEL_KIND } from './wasm-codes.js';

export type ChannelKind = 'reliable-ordered' | 'reliable-unordered' | 'unreliable-sequenced' | 'unreliable';

/** A channel as declared; `Name` is its name's type (a literal where the layout is written out). */
export interface ChannelOptions<Name extends string = string> {
  kind: ChannelKind;
  /** Optional name, usable instead of the index in `send`. */
  name?: Name;
  /** Higher goes first when a datagram has room for only some channels. Default 128. */
  priority?: number;
  /** Unreliable kinds: drop a message not sent within this many ms. Default: never. */
  maxAgeMs?: number;
  /** One-way latency this channel's messages should meet; FEC sends repair early enough for it, within its budget. Default: none. */
  latencyTargetMs?: number;
}

/**
 * Forward error correction presets (repair bytes are spent only once the peer reports loss):
 * `off`; `balanced` (default, ≤ 30 % extra bytes); `low-latency` (≤ 250 %, repairs nearly every
 * loss one one-way delay later: a repair per packet, sent twice under bursty loss for a channel
 * with a latency target); `thrifty` (≤ 10 %). On Firefox's WebTransport, `low-latency` spends at
 * most 60 % unless `fecBudget` says otherwise: Firefox drops datagrams queued behind its QUIC
 * congestion window, and more repair fills it (S1 at 5 % loss: p99 69 → 30 ms). On Chromium's
 * WebTransport, `low-latency` sends a message on a channel with a latency target whole with its
 * copies, never in halves: Chromium's pacer holds a tick's third datagram (S1 at 5 %: p99 24.5 →
 * 14.4 ms).
 */
export type FecPreset = 'off' | 'balanced' | 'low-latency' | 'thrifty';
export const FEC_PRESETS: Record<FecPreset, number> = { off: 0, balanced: 1, 'low-latency': 2, thrifty: 3 };

/**
 * Congestion control: `bbr` (default) paces at the measured bottleneck rate, holds it under
 * random loss and keeps queues short; `newreno` is loss-based and unpaced (halves on loss).
 */
export type CongestionControl = 'bbr' | 'newreno';
export const CONGESTION: Record<CongestionControl, number> = { bbr: 0, newreno: 1 };

/**
 * `Name`: the declared channels' names. Inferred from a layout written in
 * place (or `as const`), it makes `send` and `channelName` take only those
 * names, so a misspelt one does not compile; else any string.
 */
export interface ConnectionOptions<Name extends string = string> extends ResumeOptions {
  /** Channels by index. Default: one of each kind, in the order of `ChannelKind`. */
  channels?: readonly (ChannelKind | ChannelOptions<Name>)[];
  /** Application handshake payload (e.g. a token), ≤ 512 bytes. */
  handshake?: Uint8Array | string;
  /** Largest datagram to send. Default: the transport's, at most 1200. */
  maxDatagramBytes?: number;
  /**
   * Smallest datagram size the session may move to later (`switchTransport`,
   * a resume, or a live change of WebTransport's size); a transport below it
   * is treated as failed. Fragments of large messages are cut to fit it.
   * Default: 1024 (what Firefox's WebTransport carries) when the session may
   * move between browser transports — its transport is a WebSocket or
   * WebTransport, or `reconnect` is set — else `maxDatagramBytes` (full-size
   * fragments; it may move only to transports at least as large).
   */
  minDatagramBytes?: number;
  /** Largest message. Default 1 MiB. */
  maxMessageBytes?: number;
  /** Queued + unacknowledged bytes before `send` refuses. Default 8 MiB. */
  sendBufferBytes?: number;
  /**
   * Receive memory budget of the connection, all channels together: bytes held
   * out of order or in reassembly; beyond it packets go unacknowledged and are
   * sent again later. Default 8 MiB; at least `maxMessageBytes` × ~1.25
   * (one message in reassembly, in the smallest fragments).
   */
  recvBufferBytes?: number;
  /** Close when nothing arrives for this long. Default 10 000 ms. */
  idleTimeoutMs?: number;
  /** Send a keepalive after this much silence. Default 1 000 ms. */
  keepaliveMs?: number;
  /** Give up connecting after this long. Default 5 000 ms. */
  handshakeTimeoutMs?: number;
  /** Longest delay before acknowledging. Default 5 ms. */
  maxAckDelayMs?: number;
  /** Forward error correction preset. Default 'balanced'. Change later with `setFec`. */
  fec?: FecPreset;
  /** Most FEC repair bytes per protected byte, headers counted (0.01..3). Default: the preset's (`low-latency` on Firefox's WebTransport: 0.6). */
  fecBudget?: number;
  /** Congestion controller. Default 'bbr'. */
  congestion?: CongestionControl;
  /** Emit a `stats` event this often; 0 disables. Default 0. */
  statsIntervalMs?: number;
  /** The span of `stats().recent` (loss and rates over the last few seconds), ms. Default 2 000. */
  statsWindowMs?: number;
  /** Time source; default real time. Pass a `VirtualClock` for deterministic tests. */
  clock?: Clock;
  /**
   * Fixes the connection ID, for deterministic tests. The session key, which
   * keeps the session this client's, is always from `crypto.getRandomValues`.
   * Default: a random ID from there too.
   */
  seed?: number;
}

/** `Name`: the declared channels' names, as in `ConnectionOptions`. */
export interface ServerOptions<Name extends string = string> extends Omit<ConnectionOptions, 'channels' | 'handshake' | 'seed' | 'minDatagramBytes' | keyof ResumeOptions> {
  /** Most live connections. Default 4096. */
  maxConnections?: number;
  /** Most channels a client may declare; more are rejected ("too many channels"). Default 16. */
  maxChannels?: number;
  /**
   * The server's channel layout, as clients declare theirs (kinds, names,
   * options). Given, it is the only layout accepted: a client whose channels
   * differ (their number, or any kind by index) is refused at the handshake
   * (`RICOCHET_ERR_CHANNELS_DIFFER` on the client), and the server's
   * `message` events carry `channelName`; `send` takes names. Default none:
   * each client declares its own and the server addresses channels by index.
   */
  channels?: ConnectionOptions<Name>['channels'];
  /**
   * Receive memory budget of all connections together, bytes (each also within
   * its own `recvBufferBytes`). At the budget, packets that would grow a
   * buffer go unacknowledged and are sent again later. Default 256 MiB.
   */
  recvBudgetBytes?: number;
}

/** The core's number for each channel kind (generated from Rust; typed here, so every kind has one). */
export const KINDS: Readonly<Record<ChannelKind, number>> = CHANNEL_KIND;

export const DEFAULT_CHANNELS: ChannelKind[] = ['reliable-ordered', 'reliable-unordered', 'unreliable-sequenced', 'unreliable'];

export interface ResolvedChannel<Name extends string = string> {
  index: number;
  kind: ChannelKind;
  name?: Name;
}

export function invalid(msg: string): never {
  throw new RicochetError('RICOCHET_ERR_INVALID_OPTIONS', msg);
}

export function positive(name: string, v: number | undefined, max = Number.MAX_SAFE_INTEGER): number | undefined {
  if (v === undefined) return undefined;
  if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0 || v > max) invalid(`${name}: expected a number in (0, ${max}], got ${String(v)}`);
  return v;
}

export function resolveChannels<Name extends string>(list: ConnectionOptions<Name>['channels']): ResolvedChannel<Name>[] {
  const channels = (list ?? DEFAULT_CHANNELS).map((c, index) => {
    const o: ChannelOptions<Name> = typeof c === 'string' ? { kind: c } : c;
    if (!(o.kind in KINDS)) invalid(`channels[${index}].kind: expected one of ${Object.keys(KINDS).join(', ')}, got ${String(o.kind)}`);
    return { index, kind: o.kind, ...(o.name !== undefined ? { name: o.name } : {}) };
  });
  if (channels.length === 0 || channels.length > 255) invalid(`channels: need 1..255, got ${channels.length}`);
  return channels;
}

export function handshakeBytes(h: ConnectionOptions['handshake']): Uint8Array {
  if (h === undefined) return new Uint8Array(0);
  return typeof h === 'string' ? new TextEncoder().encode(h) : h;
}
