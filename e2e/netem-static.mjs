#!/usr/bin/env node
// Static server for the netem spec, run inside a lab namespace via lab.exec.
// Usage: node e2e/netem-static.mjs HOST
// Prints one line {"event":"listening","port":N}; exits on stdin EOF or SIGTERM.
import { createStaticServer } from './static-server.mjs';

const host = process.argv[2] ?? '127.0.0.1';
const server = createStaticServer();
server.listen(0, host, () => console.log(JSON.stringify({ event: 'listening', host, port: server.address().port })));
const stop = () => server.close(() => process.exit(0)) && setTimeout(() => process.exit(0), 500).unref();
process.stdin.on('end', stop).resume();
process.once('SIGTERM', stop);
