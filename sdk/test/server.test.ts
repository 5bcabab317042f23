import { describe, expect, it } from 'vitest';
import { Connection } from '../src/connection.js';
import { Server } from '../src/server.js';
import { loopbackPair } from '../src/loopback.js';
import { VirtualClock } from '../src/clock.js';

describe('Server', () => {
  it('serves several clients, broadcasts, and reports each disconnect', () => {
    const clock = new VirtualClock();
    const server = new Server({ clock });
    const clients: Connection[] = [];
    const got = new Map<number, string[]>();
    for (let i = 0; i < 5; i++) {
      const { client, server: end } = loopbackPair({ clock, network: 'lan', seed: i + 1 });
      server.attach(end);
      const c = new Connection(client, { clock, seed: 100 + i });
      got.set(i, []);
      c.on('message', (m) => got.get(i)!.push(new TextDecoder().decode(m.data)));
      clients.push(c);
    }
    expect(clock.runUntil(() => server.connections().length === 5, 2_000_000)).toBe(true);
    expect(server.broadcast(0, new TextEncoder().encode('round 1'))).toBe(5);
    clock.advance(0);
    return Promise.resolve().then(() => {
      clock.advance(100_000);
      for (const list of got.values()) expect(list).toEqual(['round 1']);
      const gone: string[] = [];
      server.on('disconnect', (d) => gone.push(`${d.id}:${d.kind}`));
      clients[2]!.close(7, 'bye');
      clock.advance(100_000);
      expect(gone).toEqual([`${clients[2]!.id}:peer`]);
      expect(server.connections()).toHaveLength(4);
      expect(server.stats(clients[0]!.id)?.packetsIn).toBeGreaterThan(0);
    });
  });

  it('pending requests can be decided later', () => {
    const clock = new VirtualClock();
    const pending: number[] = [];
    const server = new Server({ clock, onConnectRequest: (r) => void pending.push(r.id) });
    const { client, server: end } = loopbackPair({ clock });
    server.attach(end);
    const conn = new Connection(client, { clock });
    clock.advance(50_000);
    expect(pending).toEqual([conn.id]);
    expect(conn.state).toBe('connecting');
    expect(server.reject(conn.id, 'maintenance')).toBe(true);
    return Promise.resolve().then(() => {
      clock.advance(50_000);
      expect(conn.closeInfo).toMatchObject({ kind: 'rejected', reason: 'maintenance', code: 'RICOCHET_ERR_REJECTED' });
    });
  });

  it("an impostor's HELLO and CLOSE under a live ID neither reach it nor move its replies", async () => {
    const clock = new VirtualClock();
    const server = new Server({ clock });
    const { client, server: end } = loopbackPair({ clock });
    server.attach(end);
    const conn = new Connection(client, { clock });
    const got: string[] = [];
    conn.on('message', (m) => got.push(new TextDecoder().decode(m.data)));
    expect(clock.runUntil(() => server.connections().length === 1, 2_000_000)).toBe(true);
    const id = new Uint8Array(new Uint32Array([conn.id]).buffer);
    // A padded version-3 HELLO with the live ID and the impostor's key, and
    // a DATA packet with a CLOSE frame and a made-up tag.
    const hello = new Uint8Array(128);
    hello.set([0x01, ...id, 0x03, 0x00, 0x01, 0x00, ...new Array(16).fill(0x66), 0x00]);
    const close = Uint8Array.from([0x04, ...id, 0x07, 0x00, 1, 2, 3, 4, 5, 6, 7, 8, 0x03, 0x01, 0x00]);
    const heard: Uint8Array[] = [];
    const impostor = { send: (d: Uint8Array) => void heard.push(d) };
    server.handleDatagram(hello, impostor);
    server.handleDatagram(close, impostor);
    server.send(conn.id, 0, new TextEncoder().encode('still yours'));
    clock.advance(0);
    await Promise.resolve();
    clock.advance(100_000);
    expect(heard).toEqual([]);
    expect(got).toEqual(['still yours']);
    expect(server.connections()).toEqual([conn.id]);
    expect(conn.state).toBe('open');
  });

  it('server send to an unknown connection throws NOT_CONNECTED', () => {
    const server = new Server({ clock: new VirtualClock() });
    expect(() => server.send(12345, 0, new Uint8Array(1))).toThrowError(expect.objectContaining({ code: 'RICOCHET_ERR_NOT_CONNECTED' }));
  });
});
