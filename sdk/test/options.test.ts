// Option validation and the channel layout, on their own (no connection).
import { describe, expect, it } from 'vitest';
import { RicochetError } from '../src/errors.js';
import { CONGESTION, DEFAULT_CHANNELS, FEC_PRESETS, handshakeBytes, invalid, KINDS, positive, resolveChannels, type ChannelKind } from '../src/options.js';

/** The RicochetError `f` throws (fails if it throws something else or nothing). */
function thrown(f: () => unknown): RicochetError {
  try {
    f();
  } catch (e) {
    expect(e).toBeInstanceOf(RicochetError);
    return e as RicochetError;
  }
  throw new Error('did not throw');
}

describe('resolveChannels', () => {
  it('defaults to one channel of each kind, in the order of ChannelKind, without names', () => {
    expect(resolveChannels(undefined)).toEqual([
      { index: 0, kind: 'reliable-ordered' },
      { index: 1, kind: 'reliable-unordered' },
      { index: 2, kind: 'unreliable-sequenced' },
      { index: 3, kind: 'unreliable' },
    ]);
    expect(DEFAULT_CHANNELS).toEqual(Object.keys(KINDS));
  });

  it('takes kinds and channel objects alike, numbers them by position and keeps only given names', () => {
    const r = resolveChannels(['unreliable', { kind: 'reliable-ordered', name: 'chat', priority: 200 }, { kind: 'unreliable' }]);
    expect(r).toEqual([
      { index: 0, kind: 'unreliable' },
      { index: 1, kind: 'reliable-ordered', name: 'chat' },
      { index: 2, kind: 'unreliable' },
    ]);
    expect('name' in r[2]!).toBe(false);
  });

  it('accepts a readonly (as const) layout', () => {
    const layout = [{ kind: 'unreliable-sequenced', name: 'input' }] as const;
    expect(resolveChannels(layout)).toEqual([{ index: 0, kind: 'unreliable-sequenced', name: 'input' }]);
  });

  it('refuses an unknown kind by position, and layouts of 0 or more than 255 channels', () => {
    const e = thrown(() => resolveChannels(['reliable-ordered', 'reliable' as ChannelKind]));
    expect(e.code).toBe('RICOCHET_ERR_INVALID_OPTIONS');
    expect(e.message).toMatch(/^channels\[1\]\.kind: expected one of reliable-ordered, reliable-unordered, unreliable-sequenced, unreliable, got reliable$/);
    expect(thrown(() => resolveChannels([])).message).toBe('channels: need 1..255, got 0');
    expect(thrown(() => resolveChannels(Array(256).fill('unreliable'))).message).toBe('channels: need 1..255, got 256');
    expect(resolveChannels(Array(255).fill('unreliable'))).toHaveLength(255);
  });
});

describe('positive', () => {
  it('passes undefined through and returns a number in (0, max]', () => {
    expect(positive('x', undefined)).toBeUndefined();
    expect(positive('x', 0.5)).toBe(0.5);
    expect(positive('x', 10, 10)).toBe(10);
  });

  it('refuses zero, negatives, NaN, infinities, non-numbers and values above max, naming the option', () => {
    for (const v of [0, -1, NaN, Infinity, -Infinity, '5' as unknown as number, 11]) {
      const e = thrown(() => positive('keepaliveMs', v, 10));
      expect(e.code).toBe('RICOCHET_ERR_INVALID_OPTIONS');
      expect(e.message).toBe(`keepaliveMs: expected a number in (0, 10], got ${String(v)}`);
    }
  });

  it('invalid() throws RICOCHET_ERR_INVALID_OPTIONS with the message', () => {
    const e = thrown(() => invalid('fec: nope'));
    expect(e.code).toBe('RICOCHET_ERR_INVALID_OPTIONS');
    expect(e.message).toBe('fec: nope');
  });
});

describe('handshakeBytes', () => {
  it('is empty by default, UTF-8 for a string, and the given bytes as they are', () => {
    expect(handshakeBytes(undefined)).toEqual(new Uint8Array(0));
    expect([...handshakeBytes('hé')]).toEqual([0x68, 0xc3, 0xa9]);
    const b = new Uint8Array([1, 2, 3]);
    expect(handshakeBytes(b)).toBe(b);
  });
});

describe('preset numbers', () => {
  it('FEC presets and congestion controllers keep the numbers the core reads', () => {
    // wasm/wasm/src/config.rs: fec_config (0 off, 1 balanced, 2 low latency, 3 thrifty); Congestion (0 BBR, 1 NewReno).
    expect(FEC_PRESETS).toEqual({ off: 0, balanced: 1, 'low-latency': 2, thrifty: 3 });
    expect(CONGESTION).toEqual({ bbr: 0, newreno: 1 });
  });
});
