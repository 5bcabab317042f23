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

  it('server send to an unknown connection throws NOT_CONNECTED', () => {
    const server = new Server({ clock: new VirtualClock() });
    expect(() => server.send(12345, 0, new Uint8Array(1))).toThrowError(expect.objectContaining({ code: 'RICOCHET_ERR_NOT_CONNECTED' }));
  });
});
