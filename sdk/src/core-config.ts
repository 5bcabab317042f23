// Builds the core's config object from options (internal: its type comes
// from the generated glue and must not reach the public declarations).
import { CONGESTION, DEFAULT_CHANNELS, FEC_PRESETS, KINDS, invalid, positive, type ChannelOptions, type ConnectionOptions } from './options.js';
import type { Bound, ClientGlue } from './wasm.js';
import { CONFIG_FIELD as F, FEC_WHOLE } from './wasm-codes.js';

/** The field a server sets to 1 to make its channels the only layout clients may declare. */
export const STRICT_CHANNELS = F.strictChannels;

/** Datagram size every browser transport carries (Firefox's WebTransport
 *  allows 1024): a client's fragments are cut to fit it, so a session can
 *  move to such a transport with fragments in flight. */
export const DATAGRAM_FLOOR = 1024;

/** Transports a session moves between (openTransport falls back from one to
 *  the other; WebTransport's datagram size may change under a session). */
const BROWSER_KINDS = ['websocket', 'webtransport'];

/**
 * The smallest datagram size a client session may later move to (its
 * fragments are cut to fit): `minDatagramBytes`, else `DATAGRAM_FLOOR` if it
 * may move between browser transports (it starts on one, or resumes on
 * whatever `reconnect` opens), else its own size (no shrink: full-size
 * fragments, e.g. a Node UDP client with large datagrams).
 */
function datagramFloor(o: ConnectionOptions, dgram: number, transportKind: string): number {
  const min = positive('minDatagramBytes', o.minDatagramBytes, 65507);
  if (min !== undefined) {
    if (min < 128 || min > dgram) invalid(`minDatagramBytes: expected 128..${dgram} (maxDatagramBytes), got ${min}`);
    return Math.floor(min);
  }
  const moves = BROWSER_KINDS.includes(transportKind) || o.reconnect !== undefined;
  return moves ? Math.min(DATAGRAM_FLOOR, dgram) : dgram;
}

/**
 * Firefox's WebTransport (its QUIC stack, neqo) sheds datagrams queued behind
 * its congestion window, which random loss pins at its 2,504-byte floor: the
 * more repair a connection sends there, the more the browser drops (S1 at 5 %
 * loss: 10 % of the SDK's datagrams never sent with `low-latency`'s 200 %
 * repair, its budget then, 0.5 % with 60 %; bench/reference/s1-browsers.md, Firefox ESR 153: measure
 * again when neqo changes). So the `low-latency` preset's repair is capped at
 * 0.6 per protected byte there (messages still go in halves with their XOR)
 * unless `fecBudget` is set. Firefox's own user agent is the test: it exposes
 * no signal to adapt on (no `getStats()`). Returns the budget to set, or
 * undefined for the preset's own.
 */
export function fecBudgetFor(preset: string | undefined, transportKind: string): number | undefined {
  return lowLatencyOnWebTransportOf(/\bFirefox\//, preset, transportKind) ? FIREFOX_WT_FEC_BUDGET : undefined;
}
const FIREFOX_WT_FEC_BUDGET = 0.6;
/** The core's largest `fec.budget` (`FecConfig::validate`). */
export const FEC_BUDGET_MAX = 3;

/**
 * Chromium's WebTransport paces a tick's datagrams: two leave at once, each
 * later one waits for their transfer time at a pacing rate that random loss
 * holds near its congestion window's floor (a 400-byte message's third
 * datagram ~2.3 ms late; bench/reference/s1-browsers.md, Chromium 156). A message in
 * halves with their XOR needs the third whenever one of the first two is
 * lost, so there `low-latency`'s latency-targeted messages go whole with
 * their copies (S1 at 5 % loss: p99 24.5 → 14.4 ms for ~15 % more bytes;
 * bursty 52–55 → 37–45 ms for ~11 % fewer). Other presets keep halves (their
 * budgets pay for an XOR, not a copy; not measured). Returns what to add to
 * the preset's number.
 */
export function fecShapeFor(preset: string | undefined, transportKind: string): number {
  return lowLatencyOnWebTransportOf(/Chrome\//, preset, transportKind) ? FEC_WHOLE : 0;
}

/** The `low-latency` preset over WebTransport in a browser whose user agent matches `browser`. */
function lowLatencyOnWebTransportOf(browser: RegExp, preset: string | undefined, transportKind: string): boolean {
  return preset === 'low-latency' && transportKind === 'webtransport' && typeof navigator !== 'undefined' && browser.test(navigator.userAgent ?? '');
}

/** The datagram size a config was built with. */
export function configuredDatagramSize(c: { get(f: number): number }): number {
  return c.get(F.maxDatagramSize);
}

type CoreOptions = ConnectionOptions & { maxConnections?: number; maxChannels?: number; recvBudgetBytes?: number };

/** Numeric options: name, core field, largest value, and the factor to the field's unit (ms -> µs). A table, not a call per option: smaller. */
type NumericOption = { [K in keyof CoreOptions]-?: CoreOptions[K] extends number | undefined ? K : never }[keyof CoreOptions];
const NUMERIC: readonly [name: NumericOption, field: number, max?: number, scale?: number][] = [
  ['maxMessageBytes', F.maxMessageSize, 2 ** 30],
  ['sendBufferBytes', F.sendBufferBytes, 2 ** 32 - 1],
  ['recvBufferBytes', F.recvBufferBytes, 2 ** 32 - 1],
  ['idleTimeoutMs', F.idleTimeoutUs, undefined, 1000],
  ['keepaliveMs', F.keepaliveIntervalUs, undefined, 1000],
  ['handshakeTimeoutMs', F.handshakeTimeoutUs, undefined, 1000],
  ['maxAckDelayMs', F.maxAckDelayUs, undefined, 1000],
  ['maxConnections', F.maxConnections, 2 ** 32 - 1],
  ['maxChannels', F.maxChannels, 255],
  ['recvBudgetBytes', F.recvBudgetBytes, 2 ** 32 - 1],
  ['fecBudget', F.fecBudget, FEC_BUDGET_MAX],
];

/** A ConfigInput of module `w` (the one whose Client/Server will take it).
 *  A client's (`withChannels`) also needs its first transport's kind. */
export function coreConfig<G extends ClientGlue>(
  w: G,
  o: CoreOptions,
  transportMax: number,
  withChannels: boolean,
  transportKind = '',
): InstanceType<G['ConfigInput']> {
  const c = new w.ConfigInput() as InstanceType<G['ConfigInput']>;
  const dgram = Math.floor(positive('maxDatagramBytes', o.maxDatagramBytes, 65507) ?? Math.min(1200, transportMax));
  if (dgram > transportMax) invalid(`maxDatagramBytes (${dgram}) exceeds the transport's maximum (${transportMax})`);
  c.set(F.maxDatagramSize, dgram);
  if (withChannels) c.set(F.minDatagramSize, datagramFloor(o, dgram, transportKind));
  for (const [name, field, max, scale] of NUMERIC) {
    if (name === 'fecBudget') c.set(F.fecPreset, fecPreset(o.fec) + fecShapeFor(o.fec, transportKind)); // validated in this order
    const x = positive(name, o[name], max) ?? (name === 'fecBudget' ? fecBudgetFor(o.fec, transportKind) : undefined);
    if (x !== undefined) c.set(field, x * (scale ?? 1));
  }
  if (o.congestion !== undefined) {
    const cc = CONGESTION[o.congestion];
    if (cc === undefined) invalid(`congestion: expected one of ${Object.keys(CONGESTION).join(', ')}, got ${String(o.congestion)}`);
    c.set(F.congestion, cc);
  }
  // A message must fit the buffers; grow them with maxMessageBytes unless set.
  if (o.maxMessageBytes !== undefined) {
    if (o.sendBufferBytes === undefined) c.set(F.sendBufferBytes, Math.max(c.get(F.sendBufferBytes), c.get(F.maxMessageSize)));
    if (o.recvBufferBytes === undefined) c.set(F.recvBufferBytes, Math.max(c.get(F.recvBufferBytes), headReserve(c.get(F.maxMessageSize))));
  }
  // A server's total budget covers at least one connection's.
  if (o.recvBudgetBytes === undefined) c.set(F.recvBudgetBytes, Math.max(c.get(F.recvBudgetBytes), c.get(F.recvBufferBytes)));
  if (withChannels) {
    (o.channels ?? DEFAULT_CHANNELS).forEach((ch, i) => {
      const opt: ChannelOptions = typeof ch === 'string' ? { kind: ch } : ch;
      const prio = opt.priority ?? 128;
      if (!Number.isInteger(prio) || prio < 0 || prio > 255) invalid(`channels[${i}].priority: expected 0..255, got ${prio}`);
      const target = positive(`channels[${i}].latencyTargetMs`, opt.latencyTargetMs) ?? 0;
      if (!c.addChannel(KINDS[opt.kind], prio, (opt.maxAgeMs ?? 0) * 1000, target * 1000)) invalid(`channels[${i}].kind: unknown kind ${String(opt.kind)}`);
    });
  }
  return c;
}

/** A wasm Client of module `w` from its ConfigInput `c`: the config and the
 *  handshake checked first (the core's reason as RICOCHET_ERR_INVALID_OPTIONS),
 *  then the entropy and handshake handed over through the config's buffer. */
export function newClient<G extends ClientGlue>(
  w: Bound<G>,
  c: InstanceType<G['ConfigInput']>,
  now: number,
  entropy: Uint8Array,
  handshake: Uint8Array,
): InstanceType<G['Client']> {
  const bad = c.check(handshake.length);
  if (bad > 0) invalid(w.heap.readText(c.ioReserve(0), bad));
  const io = new Uint8Array(entropy.length + handshake.length);
  io.set(entropy);
  io.set(handshake, entropy.length);
  return new w.glue.Client(c, now, w.heap.writeIn(c, io)) as InstanceType<G['Client']>;
}

/** Receive budget one message in reassembly may need (the core's `head_reserve`:
 *  its bytes, 16 per fragment of at least 64 bytes, and 64 for its table slot). */
export function headReserve(maxMessage: number): number {
  return maxMessage + 16 * (Math.ceil(maxMessage / 64) + 1) + 64;
}

/** The core's FEC preset number for an option value (throws on an unknown name). */
export function fecPreset(p: ConnectionOptions['fec']): number {
  if (p === undefined) return FEC_PRESETS.balanced;
  const n = FEC_PRESETS[p];
  if (n === undefined) invalid(`fec: expected one of ${Object.keys(FEC_PRESETS).join(', ')}, got ${String(p)}`);
  return n;
}
