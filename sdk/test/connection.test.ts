// Two SDK endpoints over the in-memory loopback, on virtual time.
import { describe, expect, it, vi } from 'vitest';
import { Connection } from '../src/connection.js';
import { Server } from '../src/server.js';
import { loopbackPair, type LoopbackOptions } from '../src/loopback.js';
import { VirtualClock } from '../src/clock.js';
import { RicochetError } from '../src/errors.js';
import { check, payload } from './payload.js';

function setup(net?: LoopbackOptions['network'], serverOpts = {}) {
  const clock = new VirtualClock();
  const { client: ct, server: st } = loopbackPair({ clock, ...(net ? { network: net } : {}), seed: 7 });
  const server = new Server({ clock, ...serverOpts });
  server.attach(st);
  const received: { id: number; channel: number; data: Uint8Array }[] = [];
  server.on('message', (m) => received.push(m));
  return { clock, ct, st, server, received };
}

describe('Connection over loopback', () => {
  it('draws its connection ID and session key from crypto.getRandomValues, never Math.random', () => {
    // A predictable Math.random made every client's ID (once the whole credential) predictable.
    const predictable = vi.spyOn(Math, 'random').mockReturnValue(0.5);
    const secure = vi.spyOn(globalThis.crypto, 'getRandomValues');
    try {
      const ids = [0, 1, 2].map(() => new Connection(setup('lan').ct, { clock: new VirtualClock() }).id);
      expect(new Set(ids).size).toBe(3);
      expect(secure).toHaveBeenCalled();
    } finally {
      predictable.mockRestore();
      secure.mockRestore();
    }
  });

  it('keeps its armed timer when a drain leaves the deadline where it was', () => {
    const { clock, ct, received } = setup('lan');
    let arms = 0;
    const counting = { now: () => clock.now(), at: (atUs: number, fn: () => void) => (arms++, clock.at(atUs, fn)) };
    const conn = new Connection(ct, { clock: counting });
    expect(clock.runUntil(() => conn.state === 'open', 2_000_000)).toBe(true);
    const before = arms;
    for (let i = 0; i < 10; i++) conn.flush(); // nothing to send: the deadline stays
    expect(arms).toBe(before);
    conn.send(0, payload(1, 100)); // a message moves it: armed anew, and it still fires
    expect(clock.runUntil(() => received.length === 1, 1_000_000)).toBe(true);
    expect(arms).toBeGreaterThan(before);
  });

  it('connects and delivers messages in order with receipts', () => {
    const { clock, ct, server, received } = setup('lan');
    const conn = new Connection(ct, { clock, handshake: 'hello' });
    const acked: number[] = [];
    conn.on('acked', (e) => acked.push(e.id));
    expect(clock.runUntil(() => conn.state === 'open', 2_000_000)).toBe(true);
    expect(server.connections()).toEqual([conn.id]);
    const ids: number[] = [];
    for (let i = 0; i < 200; i++) ids.push(conn.send(0, payload(i, 100)));
    expect(clock.runUntil(() => acked.length === 200, 5_000_000)).toBe(true);
    expect(received.map((m) => check(m.data))).toEqual([...Array(200).keys()]);
    expect(acked.sort((a, b) => a - b)).toEqual(ids);
  });

  it('reliable channel survives 10% loss with every message in order', () => {
    const lossy = { latencyMs: 10, jitterMs: 2, loss: 0.1 };
    const { clock, ct, received } = setup({ up: lossy, down: lossy });
    const conn = new Connection(ct, { clock });
    expect(clock.runUntil(() => conn.state === 'open', 5_000_000)).toBe(true);
    for (let tick = 0; tick < 300; tick++) {
      conn.send(0, payload(tick, 200));
      clock.advance(16_667);
    }
    expect(clock.runUntil(() => received.length === 300, 20_000_000)).toBe(true);
    expect(received.map((m) => check(m.data))).toEqual([...Array(300).keys()]);
    const s = conn.stats();
    expect(s.retransmissions).toBeGreaterThan(0);
    expect(s.lossOut).toBeGreaterThan(0.04);
    // Loss is a share of the ack-eliciting packets, which pure ACKs are not.
    expect(s.elicitingPacketsOut).toBeGreaterThan(150);
    expect(s.elicitingPacketsOut).toBeLessThan(s.packetsOut);
    expect(s.lossOut).toBeCloseTo(s.packetsLost / s.elicitingPacketsOut, 9);
    expect(s.rttMs).toBeGreaterThan(18);
    // Nothing forged, nothing too far ahead; the per-channel tail still decodes.
    expect([s.unauthenticated, s.tooFarAhead]).toEqual([0, 0]);
    expect(s.channels.length).toBe(conn.channels.length);
    expect(s.channels[0]!.messagesSent).toBe(300);
  });

  it('FEC rebuilds lost packets, reports its stats, and can be switched off at run time', () => {
    const lossy = { latencyMs: 10, jitterMs: 2, loss: 0.05 };
    const { clock, ct, server, received } = setup({ up: lossy, down: lossy });
    const conn = new Connection(ct, { clock, fec: 'low-latency', channels: [{ kind: 'reliable-ordered', latencyTargetMs: 25 }] });
    expect(clock.runUntil(() => conn.state === 'open', 5_000_000)).toBe(true);
    for (let tick = 0; tick < 600; tick++) {
      conn.send(0, payload(tick, 400));
      clock.advance(16_667);
    }
    expect(clock.runUntil(() => received.length === 600, 20_000_000)).toBe(true);
    expect(received.map((m) => check(m.data))).toEqual([...Array(600).keys()]);
    const s = conn.stats();
    expect(s.fecRepairPacketsOut).toBeGreaterThan(50);
    // A repair is at least the XOR of a message's halves (at 5 % independent
    // loss a latency-targeted message goes in halves), or a whole copy.
    expect(s.fecRepairBytesOut).toBeGreaterThan(s.fecRepairPacketsOut * 200);
    expect(s.fecPeerLoss).toBeGreaterThan(0.02);
    const srv = server.stats(conn.id)!;
    expect(srv.fecRecovered).toBeGreaterThan(10);
    expect(srv.residualLossIn).toBeLessThan(srv.lossIn);
    conn.setFec('off');
    const before = conn.stats().fecRepairPacketsOut;
    for (let tick = 0; tick < 120; tick++) {
      conn.send(0, payload(600 + tick, 400));
      clock.advance(16_667);
    }
    expect(conn.stats().fecRepairPacketsOut).toBe(before);
    expect(() => conn.setFec('loud' as never)).toThrow(RicochetError);
  });

  it('congestion option selects the controller: BBR holds the rate under loss where NewReno collapses', () => {
    // 10 Mbit/s, 100 ms RTT, 5 % loss: NewReno sits at its 16-datagram floor (~190 kB/s).
    const lossy = { latencyMs: 50, loss: 0.05, rateBytesPerSec: 1_250_000 };
    const transferMs = (congestion?: 'bbr' | 'newreno') => {
      const { clock, ct, received } = setup({ up: lossy, down: lossy });
      const conn = new Connection(ct, { clock, fec: 'off', ...(congestion ? { congestion } : {}) });
      expect(clock.runUntil(() => conn.state === 'open', 5_000_000)).toBe(true);
      const start = clock.now();
      for (let i = 0; i < 16; i++) conn.send(0, payload(i, 64 << 10));
      expect(clock.runUntil(() => received.length === 16, 60_000_000)).toBe(true);
      expect(received.map((m) => check(m.data))).toEqual([...Array(16).keys()]);
      return (clock.now() - start) / 1000;
    };
    const bbr = transferMs('bbr');
    const reno = transferMs('newreno');
    expect(transferMs()).toBe(bbr); // the default is BBR
    expect(bbr).toBeLessThan(3_000); // 1 MiB, startup included, at ≥ 2.8 Mbit/s (measured 1.9 s)
    expect(reno).toBeGreaterThan(bbr * 2);
    const { ct } = setup();
    expect(() => new Connection(ct, { congestion: 'cubic' as never })).toThrow(RicochetError);
  });

  it('a clean link costs no FEC bytes', () => {
    const { clock, ct, server, received } = setup('lan');
    const conn = new Connection(ct, { clock, fec: 'low-latency' });
    expect(clock.runUntil(() => conn.state === 'open', 2_000_000)).toBe(true);
    for (let tick = 0; tick < 300; tick++) {
      conn.send(0, payload(tick, 400));
      clock.advance(16_667);
    }
    expect(clock.runUntil(() => received.length === 300, 5_000_000)).toBe(true);
    expect(conn.stats().fecRepairBytesOut).toBe(0);
    expect(server.stats(conn.id)!.fecRepairBytesOut).toBe(0);
  });

  it('unreliable messages get acked or lost receipts that match delivery', () => {
    const lossy = { latencyMs: 5, loss: 0.2 };
    const { clock, ct, received } = setup({ up: lossy, down: { latencyMs: 5 } });
    const conn = new Connection(ct, { clock });
    expect(clock.runUntil(() => conn.state === 'open', 5_000_000)).toBe(true);
    const fate = new Map<number, string>();
    conn.on('acked', (e) => fate.set(e.id, 'acked'));
    conn.on('lost', (e) => fate.set(e.id, 'lost'));
    const byId = new Map<number, number>();
    for (let i = 0; i < 500; i++) {
      byId.set(conn.send(3, payload(i, 50)), i);
      clock.advance(10_000);
    }
    clock.advance(2_000_000);
    expect(fate.size).toBe(500);
    const delivered = new Set(received.map((m) => check(m.data)));
    for (const [id, f] of fate) expect(delivered.has(byId.get(id)!)).toBe(f === 'acked');
    expect([...fate.values()].filter((f) => f === 'lost').length).toBeGreaterThan(50);
  });

  it('a rejected handshake closes with the reason and rejects ready', async () => {
    const clock = new VirtualClock();
    const { client: ct, server: st } = loopbackPair({ clock });
    const server = new Server({ clock, onConnectRequest: (r) => (new TextDecoder().decode(r.payload) === 'good' ? true : 'bad token') });
    server.attach(st);
    const conn = new Connection(ct, { clock, handshake: 'evil' });
    const ready = conn.ready.catch((e: RicochetError) => e);
    await Promise.resolve();
    clock.advance(1_000_000);
    await new Promise((r) => setTimeout(r, 0));
    clock.advance(1_000_000);
    const err = await ready;
    expect(err).toBeInstanceOf(RicochetError);
    expect((err as RicochetError).code).toBe('RICOCHET_ERR_REJECTED');
    expect(conn.closeInfo).toMatchObject({ kind: 'rejected', reason: 'bad token' });
  });

  it('close reaches the server with code and reason', () => {
    const { clock, ct, server } = setup('lan');
    const conn = new Connection(ct, { clock });
    expect(clock.runUntil(() => conn.state === 'open', 2_000_000)).toBe(true);
    const gone: unknown[] = [];
    server.on('disconnect', (d) => gone.push(d));
    conn.close(4001, 'bye');
    clock.advance(1_000_000);
    expect(gone).toEqual([{ id: conn.id, kind: 'peer', code: 'RICOCHET_ERR_CLOSED_BY_PEER', closeCode: 4001, reason: 'bye' }]);
    expect(conn.closeInfo?.kind).toBe('local');
  });

  it('a close reason beyond ASCII reaches the server as written', () => {
    const { clock, ct, server } = setup('lan');
    const conn = new Connection(ct, { clock });
    expect(clock.runUntil(() => conn.state === 'open', 2_000_000)).toBe(true);
    const gone: { reason?: string }[] = [];
    server.on('disconnect', (d) => gone.push(d));
    conn.close(4002, 'à bientôt 👋');
    clock.advance(1_000_000);
    expect(gone[0]?.reason).toBe('à bientôt 👋');
  });

  it('the core’s refusals reach the caller as RICOCHET_ERR_INVALID_OPTIONS with its reason', () => {
    const { clock, ct, received } = setup('lan');
    const big = () => new Connection(ct, { clock, handshake: new Uint8Array(4000) });
    expect(big).toThrow(RicochetError);
    expect(big).toThrow(/^invalid config: handshake payload: 4000 bytes exceeds max_handshake_payload \(\d+\)$/);
    const conn = new Connection(ct, { clock });
    expect(clock.runUntil(() => conn.state === 'open', 2_000_000)).toBe(true);
    expect(() => conn.setFec('balanced', 0.001)).toThrow(/^fec\.budget: need 0\.01\.\.=3\.0 repair bytes per protected byte, got 1\/1000$/);
    // The refusal's text went through the input buffer: messages still do.
    conn.send(0, payload(1, 3000));
    conn.send(0, payload(2, 10));
    expect(clock.runUntil(() => received.length === 2, 2_000_000)).toBe(true);
    expect(received.map((m) => [check(m.data), m.data.length])).toEqual([
      [1, 3000],
      [2, 10],
    ]);
  });

  it('idle timeout closes the client when the server vanishes', () => {
    const { clock, ct, st } = setup({ up: {}, down: {} });
    const conn = new Connection(ct, { clock, idleTimeoutMs: 2000, keepaliveMs: 500 });
    expect(clock.runUntil(() => conn.state === 'open', 2_000_000)).toBe(true);
    clock.advance(3_000_000);
    expect(conn.state).toBe('open'); // keepalives hold it open
    ct.setLink({ loss: 1 }); // then the network dies both ways
    st.setLink({ loss: 1 });
    clock.advance(3_000_000);
    expect(conn.closeInfo).toMatchObject({ kind: 'idle-timeout', code: 'RICOCHET_ERR_IDLE_TIMEOUT' });
    expect(conn.state).toBe('closed');
  });

  it('send errors carry a stable code and hand the message back', () => {
    const { clock, ct } = setup();
    const conn = new Connection(ct, { clock, maxMessageBytes: 1000 });
    const msg = payload(1, 10);
    expect(() => conn.send(0, msg)).toThrowError(expect.objectContaining({ code: 'RICOCHET_ERR_NOT_CONNECTED', data: msg }));
    expect(clock.runUntil(() => conn.state === 'open', 2_000_000)).toBe(true);
    const big = new Uint8Array(1001);
    expect(() => conn.send(0, big)).toThrowError(expect.objectContaining({ code: 'RICOCHET_ERR_MESSAGE_TOO_LARGE', data: big }));
    expect(() => conn.send(9, msg)).toThrowError(expect.objectContaining({ code: 'RICOCHET_ERR_UNKNOWN_CHANNEL' }));
    expect(() => conn.send('nope', msg)).toThrowError(expect.objectContaining({ code: 'RICOCHET_ERR_UNKNOWN_CHANNEL' }));
  });

  it('named channels route by name', () => {
    const { clock, ct, received } = setup();
    const conn = new Connection(ct, { clock, channels: [{ kind: 'reliable-ordered', name: 'chat' }, { kind: 'unreliable', name: 'pos' }] });
    expect(clock.runUntil(() => conn.state === 'open', 2_000_000)).toBe(true);
    conn.send('pos', payload(5, 8));
    conn.flush();
    clock.advance(100_000);
    expect(received.map((m) => m.channel)).toEqual([1]);
  });

  it('invalid options throw RICOCHET_ERR_INVALID_OPTIONS naming the field', () => {
    const { ct } = setup();
    expect(() => new Connection(ct, { idleTimeoutMs: -1 })).toThrowError(/idleTimeoutMs/);
    expect(() => new Connection(ct, { channels: [] })).toThrowError(expect.objectContaining({ code: 'RICOCHET_ERR_INVALID_OPTIONS' }));
  });

  it('small messages sent in one task share datagrams', async () => {
    const { clock, ct, received } = setup();
    const conn = new Connection(ct, { clock });
    expect(clock.runUntil(() => conn.state === 'open', 2_000_000)).toBe(true);
    await new Promise((r) => setTimeout(r, 0));
    const before = conn.stats().packetsOut;
    for (let i = 0; i < 50; i++) conn.send(0, payload(i, 10));
    await Promise.resolve();
    expect(conn.stats().packetsOut - before).toBe(1);
    clock.advance(100_000);
    await new Promise((r) => setTimeout(r, 0));
    expect(received.length).toBe(50);
  });
});
