// The plumbing the socket transports share (src/transport-base.ts): one
// receiver per event, an end reported once, and nothing reported after our
// own close.
import { describe, expect, it } from 'vitest';
import type { RelayClose } from '../src/errors.js';
import { TransportBase } from '../src/transport-base.js';

class Probe extends TransportBase {
  readonly kind = 'probe';
  readonly maxDatagramSize = 100;
  stops = 0;
  closes = 0;
  send(): void {}
  close(): void {
    if (this.closed) return;
    this.closes++;
    this.stop();
  }
  protected override stop(): void {
    super.stop();
    this.stops++;
  }
  arrive(d: Uint8Array): void {
    this.deliver(d);
  }
  drained(): void {
    this.writable();
  }
  ended(reason: string, relay?: RelayClose | null): void {
    this.finish(reason, relay);
  }
  get isClosed(): boolean {
    return this.closed;
  }
}

describe('TransportBase', () => {
  it('hands datagrams and writability to the latest receiver only', () => {
    const t = new Probe();
    const got: string[] = [];
    t.arrive(new Uint8Array([0])); // no receiver yet: dropped
    t.onDatagram((d) => got.push(`first ${d[0]}`));
    t.onDatagram((d) => got.push(`second ${d[0]}`));
    t.onWritable(() => got.push('writable'));
    t.arrive(new Uint8Array([1]));
    t.drained();
    expect(got).toEqual(['second 1', 'writable']);
  });

  it('an end underneath stops the transport, then reports once, with the relay close if any', () => {
    const t = new Probe();
    const reports: unknown[][] = [];
    t.onClose((...a) => reports.push([...a, t.isClosed]));
    const relay: RelayClose = { code: 4401, error: 'RELAY_ERR_TOKEN_EXPIRED', reason: 'RELAY_ERR_TOKEN_EXPIRED' };
    t.ended('socket closed', relay);
    t.ended('again');
    t.close();
    expect(reports).toEqual([['socket closed', relay, true]]);
    expect(t.stops).toBe(1);
    expect(t.closes).toBe(0);
    const plain = new Probe();
    const r2: unknown[][] = [];
    plain.onClose((...a) => r2.push(a));
    plain.ended('gone');
    expect(r2).toEqual([['gone', null]]);
  });

  it('after our own close nothing is reported', () => {
    const t = new Probe();
    const reports: string[] = [];
    t.onClose((r) => reports.push(r));
    t.close();
    t.close();
    t.ended('socket closed');
    expect(reports).toEqual([]);
    expect(t.stops).toBe(1);
    expect(t.closes).toBe(1);
  });
});
