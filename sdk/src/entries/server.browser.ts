// "@ricochet/sdk/server" in browsers: the full module by URL.
import './browser-full.js';

export * from '../server-api.js';
