// "@ricochet/sdk/server" for Node / default.
import './node.js';

export * from '../server-api.js';
