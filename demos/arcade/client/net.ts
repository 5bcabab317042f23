// The game's connection: a token from the page server, then the relay over
// WebTransport (WebSocket as fallback, or forced), three channels, and the
// join request as the handshake payload.
import { Connection, openTransport, type ConnectionStats, type OpenTransportOptions, type TransportKind, type WebSocketConstructor } from '@ricochet/sdk/slim';
import { decode, encode, DecodeError, type Message } from '../protocol/index.js';

/** Channel order is the protocol: the server sends by index (server/src/net.rs). */
export const CHANNELS = [
  { kind: 'unreliable-sequenced', name: 'input' },
  { kind: 'unreliable-sequenced', name: 'state' },
  { kind: 'reliable-ordered', name: 'events' },
] as const;

export interface JoinOptions {
  room: number;
  name: string;
  force?: TransportKind;
  /** The page server; default: the page's own origin. */
  baseUrl?: string;
  /** WebSocket constructor where there is no global one (Node bots: `ws`). */
  WebSocket?: WebSocketConstructor;
}

export interface GameLink {
  conn: Connection;
  /** The transport in use now (it changes on a switch or a resume). */
  readonly kind: TransportKind;
  fallbackReason?: string;
  /**
   * Move the live session to another transport (forced WebSocket, or back to
   * WebTransport first): same player, nothing lost, no rejoin.
   */
  switchTo(force?: TransportKind): Promise<void>;
  relayHttp: string;
  /** Messages that failed to decode (counted, dropped). */
  badMessages(): number;
  stats(): ConnectionStats;
}

export async function join(o: JoinOptions, onMessage: (m: Message) => void): Promise<GameLink> {
  const res = await fetch(`${o.baseUrl ?? ''}/api/join?room=${o.room}&name=${encodeURIComponent(o.name)}`);
  if (!res.ok) throw new Error(`join refused: ${await res.text()}`);
  const { token, relayHttp } = (await res.json()) as { token: string; relayHttp: string };
  const info = (await (await fetch(`${relayHttp}/cert-hash`)).json()) as { certHashes: string[]; webTransportUrl: string | null; webSocketUrl: string };
  const q = `?token=${encodeURIComponent(token)}`;
  const transportOptions = (force?: TransportKind): OpenTransportOptions => ({
    ...(info.webTransportUrl ? { webTransportUrl: info.webTransportUrl + q } : {}),
    serverCertificateHashes: info.certHashes,
    webSocketUrl: info.webSocketUrl + q,
    ...(force ? { force } : {}),
    ...(o.WebSocket ? { WebSocket: o.WebSocket } : {}),
  });
  const choice = await openTransport(transportOptions(o.force));
  let kind = choice.kind;
  let force = o.force;
  const conn = new Connection(choice.transport, {
    // A dropped transport is replaced with the same token; the relay keeps
    // the session for us meanwhile, so the game server never notices.
    reconnect: async () => {
      const c = await openTransport(transportOptions(force));
      kind = c.kind;
      return c.transport;
    },
    channels: CHANNELS.map((c) => ({ ...c })),
    handshake: encode({ type: 'join', room: o.room, name: o.name }),
    // The server delays ACKs up to 40 ms (a 30 Hz snapshot period and a
    // margin) so they ride on snapshots; the same bound here lets RTT samples
    // subtract the whole reported delay (and our ACKs ride on the next 60 Hz
    // input).
    maxAckDelayMs: 40,
  });
  let bad = 0;
  conn.on('message', ({ data }) => {
    try {
      onMessage(decode(data));
    } catch (e) {
      if (!(e instanceof DecodeError)) throw e;
      bad++;
    }
  });
  await conn.ready;
  return {
    conn,
    get kind() {
      return kind;
    },
    async switchTo(to) {
      force = to;
      const c = await openTransport(transportOptions(to));
      conn.switchTransport(c.transport);
      kind = c.kind;
    },
    ...(choice.fallbackReason !== undefined ? { fallbackReason: choice.fallbackReason } : {}),
    relayHttp,
    badMessages: () => bad,
    stats: () => conn.stats(),
  };
}
