import { describe, expect, it } from 'vitest';
import { Connection } from '../src/connection.js';
import { MAX_HANDSHAKE_PEERS, Server } from '../src/server.js';
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

  it('maxChannels: a client declaring more channels is rejected before any connect request', () => {
    const clock = new VirtualClock();
    const requests: number[] = [];
    const server = new Server({ clock, maxChannels: 2, onConnectRequest: (r) => void requests.push(r.id) });
    const { client, server: end } = loopbackPair({ clock });
    server.attach(end);
    const conn = new Connection(client, { clock, channels: ['reliable-ordered', 'unreliable', 'unreliable'] });
    return Promise.resolve().then(() => {
      clock.advance(100_000);
      expect(requests).toEqual([]);
      expect(conn.closeInfo).toMatchObject({ kind: 'rejected', reason: 'too many channels', code: 'RICOCHET_ERR_REJECTED' });
    });
  });

  it('recvBudgetBytes below one connection budget is refused by name', () => {
    expect(() => new Server({ recvBufferBytes: 4 << 20, recvBudgetBytes: 1 << 20 })).toThrow(/recv_budget_bytes/);
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

  /** A padded version-3 HELLO for `id` with a key of its own. */
  function hello(id: number): Uint8Array {
    const h = new Uint8Array(128);
    h.set([0x01, ...new Uint8Array(new Uint32Array([id]).buffer), 0x03, 0x00, 0x01, 0x00, ...new Array(16).fill(id & 0xff), 0x00]);
    return h;
  }
  const settle = async () => {
    for (let i = 0; i < 4; i++) await Promise.resolve();
  };

  it('a flood of rejected HELLOs with fresh IDs leaves no peers behind', async () => {
    const clock = new VirtualClock();
    const server = new Server({ clock, onConnectRequest: () => 'go away' });
    let rejects = 0;
    const victim = { send: (d: Uint8Array) => void (rejects += d[0] === 0x03 ? 1 : 0) };
    for (let id = 1; id <= 3000; id++) server.handleDatagram(hello(id), victim);
    await settle();
    clock.advance(0);
    expect(rejects).toBe(3000);
    expect(server.peerCount()).toBe(0);
    // A repeated HELLO gets its REJECT again, and is forgotten again.
    server.handleDatagram(hello(7), victim);
    await settle();
    expect([rejects, server.peerCount()]).toEqual([3001, 0]);
  });

  it('handshakes that are never decided keep a bounded number of peers, and none once they time out', async () => {
    const clock = new VirtualClock();
    const server = new Server({ clock, onConnectRequest: () => undefined });
    const victim = { send: () => {} };
    for (let id = 1; id <= 2 * MAX_HANDSHAKE_PEERS; id++) {
      server.handleDatagram(hello(id), victim);
      expect(server.peerCount()).toBeLessThanOrEqual(MAX_HANDSHAKE_PEERS);
    }
    await settle();
    clock.advance(6_000_000); // past the pending timeout: each is rejected
    await settle();
    expect(server.peerCount()).toBe(0);
    expect(server.connections()).toEqual([]);
  });

  /** A client and a server whose datagrams from the client arrive "from" `via.peer` (switchable). */
  function movablePair() {
    const clock = new VirtualClock();
    const server = new Server({ clock });
    const { client, server: end } = loopbackPair({ clock });
    const toClient = { send: (d: Uint8Array) => end.send(d) };
    const via = { peer: toClient as { send(d: Uint8Array): void }, intercept: null as ((d: Uint8Array) => boolean) | null };
    end.onDatagram((d) => {
      if (via.intercept?.(d)) return;
      server.handleDatagram(d, via.peer);
    });
    const conn = new Connection(client, { clock });
    const got: string[] = [];
    conn.on('message', (m) => got.push(new TextDecoder().decode(m.data)));
    expect(clock.runUntil(() => server.connections().length === 1 && conn.state === 'open', 2_000_000)).toBe(true);
    clock.advance(50_000); // the client's PING validated it
    return { clock, server, conn, via, got, toClient, end };
  }

  it("the key holder's datagram from a victim's address draws only challenges there; the session stays", async () => {
    const { clock, server, conn, via, got } = movablePair();
    // The next datagram the client sends is replayed "from" the victim only.
    const victim: Uint8Array[] = [];
    const victimPeer = { send: (d: Uint8Array) => void victim.push(d.slice()) };
    let spoofed = 0;
    via.intercept = (d) => {
      via.intercept = null;
      spoofed = d.length;
      server.handleDatagram(d, victimPeer);
      return true;
    };
    conn.send(0, new TextEncoder().encode('ping'));
    clock.advance(0);
    for (let i = 0; i < 20; i++) server.send(conn.id, 0, new TextEncoder().encode(`tick ${i}`));
    await settle();
    clock.advance(2_000_000);
    expect(spoofed).toBeGreaterThan(0);
    expect(victim.length).toBeGreaterThan(0);
    expect(victim.reduce((n, d) => n + d.length, 0)).toBeLessThanOrEqual(3 * spoofed);
    for (const d of victim) expect([d[0], d[15]]).toEqual([0x04, 0x30]); // DATA with a PATH_CHALLENGE
    expect(got).toEqual(Array.from({ length: 20 }, (_, i) => `tick ${i}`));
    expect(conn.state).toBe('open');
  });

  it('a client that really moved answers the challenge and the session follows it', async () => {
    const { clock, server, conn, via, got, end } = movablePair();
    const oldPeer = via.peer;
    const sentOld: number[] = [];
    const sentNew: number[] = [];
    const newPeer = { send: (d: Uint8Array) => (sentNew.push(d[0]!), end.send(d)) };
    // From here the old address is dead; what reaches the client went through the new one.
    (oldPeer as { send(d: Uint8Array): void }).send = (d) => void sentOld.push(d[0]!);
    via.peer = newPeer;
    conn.send(0, new TextEncoder().encode('moved'));
    clock.advance(100_000);
    await settle();
    server.send(conn.id, 0, new TextEncoder().encode('welcome back'));
    await settle();
    clock.advance(100_000);
    expect(got).toEqual(['welcome back']);
    expect(sentNew.length).toBeGreaterThan(0);
    expect(server.connections()).toEqual([conn.id]);
  });

  it('server send to an unknown connection throws NOT_CONNECTED', () => {
    const server = new Server({ clock: new VirtualClock() });
    expect(() => server.send(12345, 0, new Uint8Array(1))).toThrowError(expect.objectContaining({ code: 'RICOCHET_ERR_NOT_CONNECTED' }));
  });
});
