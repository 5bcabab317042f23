// Public API of @ricochet/sdk, shared by every entry point.
// Call wasm() at use time, never at module top level.
import { wasm } from './wasm.js';

export { Connection, connect } from './connection.js';
export type { CloseEvent, ConnectionEvents, ConnectionState, MessageEvent } from './connection.js';
export { Server, relayAttestKey } from './server.js';
export type { ConnectRequest, Peer, RelayClaims, ServerEvents, ServerOptions } from './server.js';
export type { ChannelKind, ChannelOptions, CongestionControl, ConnectionOptions, FecPreset } from './options.js';
export type { ReconnectFn, ReconnectInfo, ResumeOptions } from './resume.js';
export { RicochetError, ERROR_CODES } from './errors.js';
export type { ErrorCode } from './errors.js';
export type { ChannelStats, ConnectionStats } from './stats.js';
export type { Transport } from './transport.js';
export { WebSocketTransport } from './websocket.js';
export type { WebSocketConstructor, WebSocketLike, WebSocketTransportOptions } from './websocket.js';
export { WebTransportTransport } from './webtransport.js';
export type { WebTransportOptions } from './webtransport.js';
export { UdpTransport, serveUdp } from './udp.js';
export type { UdpSocketLike } from './udp.js';
export { openTransport } from './select.js';
export type { OpenTransportOptions, TransportChoice, TransportKind } from './select.js';
export { loopbackPair } from './loopback.js';
export type { LoopbackOptions, LoopbackTransport } from './loopback.js';
export { SimLink, NETWORK_PROFILES } from './simulator.js';
export type { LinkCounters, LinkSettings, NetworkProfileName } from './simulator.js';
export { VirtualClock, realClock } from './clock.js';
export type { Clock } from './clock.js';
export type { CloseKind } from './core.js';

/** Version of the wire protocol implemented by the bundled core. */
export function protocolVersion(): number {
  return wasm().protocolVersion();
}
