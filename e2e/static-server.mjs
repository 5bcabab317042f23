// The test page's file server, shared by stack.ts (on 127.0.0.1) and
// netem-static.mjs (inside a lab namespace): /sdk/* from sdk/dist,
// everything else from e2e/pages.
import { createReadStream, existsSync, statSync } from 'node:fs';
import { createServer } from 'node:http';
import { dirname, extname, join, normalize, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const TYPES = { '.html': 'text/html', '.js': 'text/javascript', '.mjs': 'text/javascript', '.wasm': 'application/wasm', '.map': 'application/json' };

export function createStaticServer() {
  const pages = join(ROOT, 'e2e', 'pages');
  const sdk = join(ROOT, 'sdk', 'dist');
  return createServer((req, res) => {
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
}
