// "@ricochet/sdk/simulator" in browsers: the full module and the simulator's
// own module, by URL.
import './browser-full.js';
import './browser-sim.js';

export * from '../simulator-api.js';
