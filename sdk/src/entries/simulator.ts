// "@ricochet/sdk/simulator" for Node / default.
import './node.js';

export * from '../simulator-api.js';
