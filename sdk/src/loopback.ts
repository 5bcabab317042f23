// In-memory transports: a connected pair, optionally through the simulator.
import { realClock, type Clock } from './clock.js';
import { SimLink, type LinkSettings, type NetworkProfileName } from './simulator.js';
import type { Transport } from './transport.js';

export interface LoopbackOptions {
  /** Simulate a network: a preset name, or settings per direction. Default: none (instant, lossless). */
  network?: NetworkProfileName | { up: LinkSettings; down: LinkSettings };
  /** Seed of the simulated network. Default 1. */
  seed?: number;
  clock?: Clock;
  maxDatagramSize?: number;
}

/** One end of an in-memory link through the simulator; made in pairs by {@link loopbackPair}. */
export class LoopbackTransport implements Transport {
  readonly kind = 'loopback';
  readonly maxDatagramSize: number;
  peer: LoopbackTransport | null = null;
  private handler: ((d: Uint8Array) => void) | null = null;
  private closeHandler: ((reason: string) => void) | null = null;
  private closed = false;
  private readonly link: SimLink | null;
  private readonly clock: Clock;
  private cancel: (() => void) | null = null;

  constructor(maxDatagramSize: number, link: SimLink | null, clock: Clock) {
    this.maxDatagramSize = maxDatagramSize;
    this.link = link;
    this.clock = clock;
  }

  send(datagram: Uint8Array): void {
    if (this.closed || datagram.length > this.maxDatagramSize) return;
    const peer = this.peer;
    if (!peer) return;
    if (this.link === null) {
      // Delivered through the clock so virtual-time tests drive it too.
      const copy = datagram.slice();
      this.clock.at(this.clock.now(), () => peer.receive(copy));
      return;
    }
    this.link.send(this.clock.now(), datagram);
    this.schedule();
  }

  /** Deliver what the simulated link has due, then wait for the next arrival. */
  private schedule(): void {
    const link = this.link;
    if (link === null) return;
    this.cancel?.();
    const at = link.nextArrival();
    if (at < 0) return;
    this.cancel = this.clock.at(at, () => {
      this.cancel = null;
      for (let d = link.deliver(this.clock.now()); d; d = link.deliver(this.clock.now())) this.peer?.receive(d);
      this.schedule();
    });
  }

  receive(d: Uint8Array): void {
    if (!this.closed) this.handler?.(d);
  }

  onDatagram(handler: (d: Uint8Array) => void): void {
    this.handler = handler;
  }

  onClose(handler: (reason: string) => void): void {
    this.closeHandler = handler;
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.cancel?.();
    this.peer?.remoteClosed();
  }

  remoteClosed(): void {
    if (this.closed) return;
    this.closed = true;
    this.cancel?.();
    this.closeHandler?.('peer transport closed');
  }

  /** Counters of the simulated link this end sends on, if any. */
  linkCounters() {
    return this.link?.counters() ?? null;
  }

  /** Change the simulated link this end sends on. */
  setLink(settings: LinkSettings): void {
    this.link?.set(settings);
  }
}


/** Two connected transports: `client` and `server` ends. */
export function loopbackPair(options: LoopbackOptions = {}): { client: LoopbackTransport; server: LoopbackTransport } {
  const clock = options.clock ?? realClock;
  const max = options.maxDatagramSize ?? 1200;
  const seed = options.seed ?? 1;
  let up: SimLink | null = null;
  let down: SimLink | null = null;
  const net = options.network;
  if (typeof net === 'string') {
    up = SimLink.fromProfile(net, true, seed);
    down = SimLink.fromProfile(net, false, seed + 1);
  } else if (net) {
    up = SimLink.custom(net.up, seed);
    down = SimLink.custom(net.down, seed + 1);
  }
  const client = new LoopbackTransport(max, up, clock);
  const server = new LoopbackTransport(max, down, clock);
  client.peer = server;
  server.peer = client;
  return { client, server };
}
