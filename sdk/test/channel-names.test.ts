// Channel names are checked by the compiler, generically over the declared
// layout: where it is written out, `send`, `broadcast` and `channelName` know
// only its names; where it is not a literal, any string still compiles (and
// an unknown name throws at run time). The `@ts-expect-error` lines are the
// test: `npm test` type-checks this file, and a line that compiles fails it.
import { describe, expect, expectTypeOf, it } from 'vitest';
import { Connection, connect, type MessageEvent } from '../src/connection.js';
import { Server } from '../src/server.js';
import { loopbackPair } from '../src/loopback.js';
import { VirtualClock } from '../src/clock.js';
import type { ChannelOptions } from '../src/options.js';

function pair() {
  const clock = new VirtualClock();
  const { client, server: end } = loopbackPair({ clock });
  return { clock, client, end };
}

/** Takes any connection or server: typed ones must still pass for untyped. */
function closeAny(c: Connection, s?: Server): void {
  c.close();
  s?.shutdown();
}

describe('channel names over a declared layout', () => {
  it('a layout written in place types send and message events by its names', () => {
    const { clock, client, end } = pair();
    const server = new Server({ clock, channels: [{ kind: 'reliable-ordered', name: 'chat' }, { kind: 'unreliable-sequenced', name: 'input' }] });
    server.attach(end);
    const conn = new Connection(client, { clock, channels: [{ kind: 'reliable-ordered', name: 'chat' }, { kind: 'unreliable-sequenced', name: 'input' }] });
    expectTypeOf(conn).toEqualTypeOf<Connection<'chat' | 'input'>>();
    expectTypeOf(server).toEqualTypeOf<Server<'chat' | 'input'>>();

    const atServer: string[] = [];
    server.on('message', (m) => {
      expectTypeOf(m.channelName).toEqualTypeOf<'chat' | 'input' | undefined>();
      atServer.push(`${m.channelName}`);
      server.send(m.id, 'chat', m.data);
      // @ts-expect-error: 'chta' is not a declared channel
      expect(() => server.send(m.id, 'chta', m.data)).toThrow(/no channel named chta/);
    });
    const atClient: string[] = [];
    conn.on('message', ({ channelName }) => {
      expectTypeOf(channelName).toEqualTypeOf<'chat' | 'input' | undefined>();
      atClient.push(`${channelName}`);
    });
    expect(clock.runUntil(() => conn.state === 'open', 2_000_000)).toBe(true);
    conn.send('input', new Uint8Array(1));
    conn.send(0, new Uint8Array(1)); // indices still work
    // @ts-expect-error: 'inptu' is not a declared channel
    expect(() => conn.send('inptu', new Uint8Array(1))).toThrow(/unknown channel inptu/);
    expect(clock.runUntil(() => atClient.length === 2, 2_000_000)).toBe(true);
    expect(atServer.sort()).toEqual(['chat', 'input']);
    expect(atClient).toEqual(['chat', 'chat']);
    expect(server.broadcast('input', new Uint8Array(1))).toBe(1);
    // @ts-expect-error: broadcast takes declared names too
    expect(() => server.broadcast('chat ', new Uint8Array(1))).toThrow(/no channel named chat /);
    closeAny(conn, server);
  });

  it('an `as const` layout declared once serves both sides', () => {
    const layout = [
      { kind: 'reliable-ordered', name: 'chat' },
      { kind: 'unreliable', name: 'pos' },
    ] as const;
    const { clock, client, end } = pair();
    const server = new Server({ clock, channels: layout });
    server.attach(end);
    const conn = new Connection(client, { clock, channels: layout });
    expectTypeOf(conn.send).parameter(0).toEqualTypeOf<number | 'chat' | 'pos'>();
    expectTypeOf(server.send).parameter(1).toEqualTypeOf<number | 'chat' | 'pos'>();
    expectTypeOf(conn.channels[0]!.name).toEqualTypeOf<'chat' | 'pos' | undefined>();
    // @ts-expect-error: not in the layout
    const misspelt: Parameters<typeof conn.send>[0] = 'position';
    expect(misspelt).toBe('position');
    closeAny(conn, server);
  });

  it('names on some channels only: those names, and indices for the rest', () => {
    const { clock, client } = pair();
    const conn = new Connection(client, { clock, channels: ['reliable-ordered', { kind: 'unreliable', name: 'pos' }] });
    expectTypeOf(conn).toEqualTypeOf<Connection<'pos'>>();
    expectTypeOf(conn.send).parameter(0).toEqualTypeOf<number | 'pos'>();
    // @ts-expect-error: channel 0 has no name (a kind is not a name)
    expect(() => conn.send('reliable-ordered', new Uint8Array(1))).toThrow(/unknown channel reliable-ordered/);
    conn.close();
  });

  it('without a literal layout, any string compiles and an unknown one throws at run time', () => {
    const { clock, client, end } = pair();
    const fromConfig: ChannelOptions[] = JSON.parse('[{"kind":"reliable-ordered","name":"chat"}]');
    const conn = new Connection(client, { clock, channels: fromConfig });
    expectTypeOf(conn).toEqualTypeOf<Connection<string>>();
    expectTypeOf(conn).toEqualTypeOf<Connection>();
    const server = new Server({ clock });
    server.attach(end);
    expectTypeOf(server).toEqualTypeOf<Server>();
    expectTypeOf<MessageEvent['channelName']>().toEqualTypeOf<string | undefined>();
    expect(clock.runUntil(() => conn.state === 'open', 2_000_000)).toBe(true);
    conn.send('chat', new Uint8Array(1));
    expect(() => conn.send('nope', new Uint8Array(1))).toThrow(/unknown channel nope/);
    // No declared layout: the server addresses channels by index; a name throws at run time.
    expect(() => server.send(conn.id, 'chat', new Uint8Array(1))).toThrow(/declares no channels/);
    closeAny(conn, server);
  });

  it('connect() keeps the names; a typed connection passes where an untyped one is expected', async () => {
    const { client, server: end } = loopbackPair(); // real time: connect() awaits
    const server = new Server();
    server.attach(end);
    const pending = connect(client, { channels: [{ kind: 'reliable-ordered', name: 'chat' }] });
    expectTypeOf(pending).resolves.toEqualTypeOf<Connection<'chat'>>();
    const conn = await pending;
    const untyped: Connection = conn;
    expect(untyped.state).toBe('open');
    const typedServer: Server = new Server<'a' | 'b'>({ channels: [{ kind: 'unreliable', name: 'a' }, { kind: 'unreliable', name: 'b' }] });
    closeAny(conn, server);
    typedServer.shutdown();
  });
});
