// The arcade protocol, shared by the browser client and the Node bots.
export { DecodeError } from '@ricochet/game';
export * from './messages.js';
export * from './sim.js';
