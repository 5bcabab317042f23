// Library entry of @ricochet/relay.
export { Relay } from './relay.js';
export type { RelayAddresses } from './relay.js';
export { DEFAULTS, loadOptions, backendAllowed } from './options.js';
export type { RelayOptions } from './options.js';
export { mintToken, verifyToken, TokenError } from './token.js';
export type { TokenClaims, MintOptions, TokenErrorCode, TokenTimePolicy } from './token.js';
export { RELAY_CLOSE } from './errors.js';
export type { RelayCloseCode } from './errors.js';
export { createLogger } from './log.js';
export type { ImpairmentSpec } from './impairment.js';
export type { Direction, Forwarded, RelayMetrics, TransportName } from './metrics.js';
// The transport seam: what a listener hands the relay for each client (Relay.admit).
export type { ClientLink, LinkHandle } from './session.js';
