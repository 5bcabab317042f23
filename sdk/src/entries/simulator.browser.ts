// "@ricochet/sdk/simulator" in browsers: the full module by URL.
import './browser-full.js';

export * from '../simulator-api.js';
