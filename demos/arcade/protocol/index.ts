// The arcade protocol, shared by the browser client and the Node bots.
export * from './bits.js';
export * from './quantize.js';
export * from './messages.js';
export * from './sim.js';
