#!/usr/bin/env node
// CLOCK_MONOTONIC over HTTP, for S1's browser rows (bench-specs/s1-browser.spec.ts):
// run in the browser's namespace on 127.0.0.1, it answers every request with
// process.hrtime.bigint() in ns, so the page can bracket a fetch with
// performance.now() and learn its clock's offset to within half a loopback
// round trip (a few hundred µs at most; page.evaluate through the browser's
// driver was 0.6-1.5 ms). Over WebSocket too (each message answered with the
// time), whose round trip is the shorter in Firefox. CORS and Private Network
// Access preflights allowed.
// Usage: node e2e/mono-clock-server.mjs; prints {"event":"listening","port":N};
// exits on stdin EOF or SIGTERM.
import { createServer } from 'node:http';
import { WebSocketServer } from 'ws';

const server = createServer((req, res) => {
  const now = process.hrtime.bigint();
  res.writeHead(200, {
    'access-control-allow-origin': '*',
    'access-control-allow-private-network': 'true',
    'access-control-allow-methods': 'GET',
    'cache-control': 'no-store',
    'content-type': 'text/plain',
  });
  res.end(req.method === 'OPTIONS' ? '' : now.toString());
});
server.keepAliveTimeout = 60_000;
new WebSocketServer({ server }).on('connection', (ws) => ws.on('message', () => ws.send(process.hrtime.bigint().toString())));
server.listen(0, '127.0.0.1', () => console.log(JSON.stringify({ event: 'listening', port: server.address().port })));
const stop = () => server.close(() => process.exit(0)) && setTimeout(() => process.exit(0), 500).unref();
process.stdin.on('end', stop).resume();
process.once('SIGTERM', stop);
