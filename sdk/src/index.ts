// Public API of "@ricochet/sdk" (and "/slim"): the client, plus Server for
// Node game servers. Server and relayAttestKey need the full wasm module:
// Node's entries load it; in a browser build they throw until
// "@ricochet/sdk/server" (or "/simulator") is imported. Call the wasm at use
// time, never at module top level.
import { clientWasm } from './wasm.js';

export { Connection, connect } from './connection.js';
export type { CloseEvent, CloseKind, ConnectionEvents, ConnectionState, MessageEvent } from './connection.js';
export { Server, relayAttestKey } from './server.js';
export type { ConnectRequest, Peer, RelayClaims, ServerEvents, ServerOptions } from './server.js';
export type { ChannelKind, ChannelOptions, CongestionControl, ConnectionOptions, FecPreset, ResolvedChannel } from './options.js';
export type { ReconnectFn, ReconnectInfo, ResumeOptions } from './resume.js';
export { RicochetError, ERROR_CODES } from './errors.js';
export type { ErrorCode, RelayClose } from './errors.js';
export type { ChannelStats, ConnectionStats, RecentStats } from './stats.js';
export type { Transport } from './transport.js';
export { WebSocketTransport } from './websocket.js';
export type { WebSocketConstructor, WebSocketLike, WebSocketTransportOptions } from './websocket.js';
export { WebTransportTransport, forgetWebTransportStalls } from './webtransport.js';
export type { DatagramWriterSource, WebTransportOptions } from './webtransport.js';
export { UdpTransport, serveUdp } from './udp.js';
export type { UdpSocketLike } from './udp.js';
export { openTransport } from './select.js';
export { connectRelay } from './relay-connect.js';
export type { RelayConnectOptions, TokenSource } from './relay-connect.js';
export type { OpenTransportOptions, TransportChoice, TransportKind } from './select.js';
// The preset names only (no simulator): relays and UIs list them.
export { NETWORK_PROFILES } from './profiles.js';
export type { NetworkProfileName } from './profiles.js';
export { VirtualClock, realClock } from './clock.js';
export type { Clock } from './clock.js';

/** Version of the wire protocol implemented by the bundled core. */
export function protocolVersion(): number {
  return clientWasm().glue.protocolVersion();
}
