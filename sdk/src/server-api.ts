// Public API of "@ricochet/sdk/server": the server endpoint, in browsers too
// (the entry loads the full wasm module). Node game servers may keep
// importing Server from "@ricochet/sdk".
export { Server, relayAttestKey } from './server.js';
export type { ConnectRequest, Peer, RelayClaims, ServerEvents, ServerOptions } from './server.js';
export { serveUdp } from './udp.js';
export type { UdpSocketLike } from './udp.js';
