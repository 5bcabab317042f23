// Public API of "@ricochet/sdk/simulator": the core's seeded network simulator
// and in-memory transports, for tests, demos and the relay's impairment.
export { SimLink, NETWORK_PROFILES } from './simulator.js';
export type { LinkCounters, LinkSettings, NetworkProfileName } from './simulator.js';
export { loopbackPair } from './loopback.js';
export type { LoopbackOptions, LoopbackTransport } from './loopback.js';
