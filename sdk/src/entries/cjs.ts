// The one CommonJS bundle (dist/node.cjs) behind every require() subpath but
// /slim and /esbuild: all share one module instance, as the ESM entries do.
import './node.js';
// The simulator's module too: CommonJS has one bundle for every subpath.
import './node-sim.js';

export * from '../index.js';
export * from '../server-api.js';
export * from '../simulator-api.js';
