#!/usr/bin/env node
// Static server for the netem spec, run inside a lab namespace via lab.exec:
// /sdk/* from sdk/dist, everything else from e2e/pages (as stack.ts serves
// them on 127.0.0.1). Usage: node e2e/netem-static.mjs HOST
// Prints one line {"event":"listening","port":N}; exits on stdin EOF or SIGTERM.
import { createReadStream, existsSync, statSync } from 'node:fs';
import { createServer } from 'node:http';
import { dirname, extname, join, normalize, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const host = process.argv[2] ?? '127.0.0.1';
const TYPES = { '.html': 'text/html', '.js': 'text/javascript', '.mjs': 'text/javascript', '.wasm': 'application/wasm', '.map': 'application/json' };
const pages = join(ROOT, 'e2e', 'pages');
const sdk = join(ROOT, 'sdk', 'dist');

const server = createServer((req, res) => {
  const path = decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname);
  const [base, rel] = path.startsWith('/sdk/') ? [sdk, path.slice(5)] : [pages, path.slice(1) || 'index.html'];
  const file = normalize(join(base, rel));
  if (!file.startsWith(base) || !existsSync(file) || !statSync(file).isFile()) {
    res.writeHead(404).end('not found');
    return;
  }
  res.writeHead(200, { 'content-type': TYPES[extname(file)] ?? 'application/octet-stream' });
  createReadStream(file).pipe(res);
});
server.listen(0, host, () => console.log(JSON.stringify({ event: 'listening', host, port: server.address().port })));
const stop = () => server.close(() => process.exit(0)) && setTimeout(() => process.exit(0), 500).unref();
process.stdin.on('end', stop).resume();
process.once('SIGTERM', stop);
