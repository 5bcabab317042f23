import type { Server } from 'node:http';
/** The test page's file server (not yet listening). */
export function createStaticServer(): Server;
