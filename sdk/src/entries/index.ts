// "@ricochet/sdk" for Node / default: everything works at import, no init().
import './node.js';

export * from '../index.js';
