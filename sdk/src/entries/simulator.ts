// "@ricochet/sdk/simulator" for Node / default: the full module (Connection
// and Server for loopback tests) and the simulator's own module.
import './node.js';
import './node-sim.js';

export * from '../simulator-api.js';
