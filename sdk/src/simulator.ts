// The seeded network simulator (Rust crate ricochet-sim, in a wasm module of
// its own), for browsers and Node: one `SimLink` per direction, with named
// presets or custom settings.
import type { Heap } from './heap.js';
import { RicochetError } from './errors.js';
import type { NetworkProfileName } from './profiles.js';
import { simWasm, type SimGlue } from './wasm.js';

export { NETWORK_PROFILES, type NetworkProfileName } from './profiles.js';

export interface LinkSettings {
  /** One-way delay, ms. Default 0. */
  latencyMs?: number;
  /** Extra random delay, uniform in [0, jitterMs] (keeps order). Default 0. */
  jitterMs?: number;
  /** Mean loss rate, 0..1. Default 0. */
  loss?: number;
  /** P(loss | previous lost): above 0 makes losses bursty (Gilbert-Elliott). Default 0. */
  burstCorrelation?: number;
  /** Probability a datagram is duplicated. Default 0. */
  duplicate?: number;
  /** Probability a datagram is held back and overtaken. Default 0. */
  reorder?: number;
  /** Bottleneck rate, bytes/s; 0 = unlimited. Default 0. */
  rateBytesPerSec?: number;
}

export interface LinkCounters {
  sent: number;
  delivered: number;
  lost: number;
  queueDropped: number;
  duplicated: number;
  reordered: number;
  bytesSent: number;
  bytesDelivered: number;
  inFlight: number;
}

type CoreLink = InstanceType<SimGlue['Link']>;

function params(s: LinkSettings): [number, number, number, number, number, number, number] {
  const p = (name: keyof LinkSettings, v: number | undefined, max = Infinity): number => {
    const x = v ?? 0;
    if (!Number.isFinite(x) || x < 0 || x > max) throw new RicochetError('RICOCHET_ERR_INVALID_OPTIONS', `${name}: expected 0..${max}, got ${x}`);
    return x;
  };
  return [
    p('latencyMs', s.latencyMs) * 1000,
    p('jitterMs', s.jitterMs) * 1000,
    p('loss', s.loss, 1),
    p('burstCorrelation', s.burstCorrelation, 1),
    p('duplicate', s.duplicate, 1),
    p('reorder', s.reorder, 1),
    p('rateBytesPerSec', s.rateBytesPerSec),
  ];
}

/** One direction of a simulated network, on the caller's clock (µs). */
export class SimLink {
  private core: CoreLink;
  private readonly heap: Heap;

  private constructor(core: CoreLink, heap: Heap) {
    this.core = core;
    this.heap = heap;
  }

  static fromProfile(name: NetworkProfileName, upstream: boolean, seed = 1): SimLink {
    const w = simWasm('SimLink');
    try {
      return new SimLink(w.glue.Link.fromProfile(name, upstream, seed), w.heap);
    } catch (e) {
      throw new RicochetError('RICOCHET_ERR_INVALID_OPTIONS', String((e as Error).message ?? e));
    }
  }

  static custom(settings: LinkSettings, seed = 1): SimLink {
    const w = simWasm('SimLink');
    return new SimLink(new w.glue.Link(...params(settings), seed), w.heap);
  }

  /** Change settings live. */
  set(settings: LinkSettings): void {
    this.core.setParams(...params(settings));
  }

  send(nowUs: number, datagram: Uint8Array): void {
    this.core.send(nowUs, this.heap.writeIn(this.core, datagram));
  }

  /** Next arrival time (µs) or -1. */
  nextArrival(): number {
    return this.core.pollTimeout();
  }

  /** The next datagram due by `nowUs`, or null. */
  deliver(nowUs: number): Uint8Array | null {
    const n = this.core.pollDeliver(nowUs);
    return n < 0 ? null : this.heap.readOut(this.core.outPtr(), n);
  }

  counters(): LinkCounters {
    const s = this.core.stats();
    return {
      sent: s[0]!,
      delivered: s[1]!,
      lost: s[2]!,
      queueDropped: s[3]!,
      duplicated: s[5]!,
      reordered: s[6]!,
      bytesSent: s[7]!,
      bytesDelivered: s[8]!,
      inFlight: s[9]!,
    };
  }

  free(): void {
    this.core.free();
  }
}
