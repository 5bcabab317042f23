// "@ricochet/sdk" in browsers (the `browser` export condition): client module
// by URL. Server throws until "@ricochet/sdk/server" is imported too.
import './browser-client.js';

export * from '../index.js';
