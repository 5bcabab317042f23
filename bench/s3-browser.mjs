// Scenario S3 in the browsers games run in: the loop in s3-loop.mjs, the same
// JavaScript as s3-wasm.mjs runs in Node, in headless Chromium and Firefox ESR
// (Debian's builds, through the e2e workspace's Playwright: launchBrowser in
// soak/stack.mjs). The page loads the modules from sdk/wasm, served on
// 127.0.0.1 by this script (those files only), and `s3_core` (the loop
// inside wasm, the core alone: s3-core.mjs builds it). Prints one JSON line
// per browser and module.
//   node bench/s3-browser.mjs [messages] [size] [perTick] [--browsers chromium,firefox] [--modules ricochet_wasm,ricochet_client,s3_core]
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { join } from 'node:path';
import { launchBrowser } from './soak/stack.mjs';
import { ROOT, isMain } from '../scripts/setup.mjs';
import { S3_CORE, buildS3Core } from './s3-core.mjs';

const MODULES = ['ricochet_wasm', 'ricochet_client', S3_CORE];
export const BROWSERS = ['chromium', 'firefox'];

const PAGE = `<!doctype html><meta charset="utf-8"><title>S3</title>
<script type="module">
import { runS3 } from '/s3-loop.mjs';
const bytes = async (file) => (await fetch('/wasm/' + file)).arrayBuffer();
const load = async (name) => name === '${S3_CORE}' ? { bytes: await bytes(name + '.wasm') } : { glue: await import('/wasm/' + name + '.js'), bytes: await bytes(name + '_bg.wasm') };
window.s3 = (options) => runS3({ load, ...options });
</script>`;

/** The page, the loop and the modules' glue and bytes; nothing else. */
function files(corePath) {
  const wasm = join(ROOT, 'sdk', 'wasm');
  const served = new Map([
    ['/s3.html', { type: 'text/html', path: null }],
    ['/s3-loop.mjs', { type: 'text/javascript', path: join(ROOT, 'bench', 's3-loop.mjs') }],
  ]);
  if (corePath) served.set(`/wasm/${S3_CORE}.wasm`, { type: 'application/wasm', path: corePath });
  for (const m of MODULES.filter((m) => m !== S3_CORE)) {
    served.set(`/wasm/${m}.js`, { type: 'text/javascript', path: join(wasm, `${m}.js`) });
    served.set(`/wasm/${m}_bg.wasm`, { type: 'application/wasm', path: join(wasm, `${m}_bg.wasm`) });
  }
  return served;
}

async function serve(corePath) {
  const served = files(corePath);
  const server = createServer((req, res) => {
    const f = served.get(new URL(req.url ?? '/', 'http://x').pathname);
    if (!f) return res.writeHead(404).end();
    res.writeHead(200, { 'content-type': f.type }).end(f.path ? readFileSync(f.path) : PAGE);
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${server.address().port}/s3.html`, close: () => server.close() };
}

/**
 * Runs S3 in each browser for each module, a fresh page each run; resolves to
 * [{ browser, ...runS3's result }]. Runs alternate modules within a browser.
 */
export async function runS3InBrowsers({ messages = 1_000_000, size = 100, perTick = 1, browsers = BROWSERS, modules = MODULES } = {}) {
  const site = await serve(modules.includes(S3_CORE) ? buildS3Core() : null);
  const rows = [];
  try {
    for (const name of browsers) {
      const browser = await launchBrowser(name);
      try {
        for (const clientModule of modules) {
          const page = await browser.newPage();
          await page.goto(site.url);
          await page.waitForFunction(() => typeof window.s3 === 'function');
          const r = await page.evaluate((o) => window.s3(o), { messages, size, perTick, clientModule });
          rows.push({ browser: name, ...r });
          await page.close();
        }
      } finally {
        await browser.close();
      }
    }
  } finally {
    site.close();
  }
  return rows;
}

if (isMain(import.meta.url)) {
  const argv = process.argv.slice(2);
  const flag = (name) => {
    const i = argv.indexOf(name);
    return i >= 0 ? argv.splice(i, 2)[1].split(',') : undefined;
  };
  const browsers = flag('--browsers') ?? BROWSERS;
  const modules = flag('--modules') ?? MODULES;
  for (const b of browsers) if (!BROWSERS.includes(b)) throw new Error(`unknown browser ${b}: ${BROWSERS.join(', ')}`);
  for (const m of modules) if (!MODULES.includes(m)) throw new Error(`unknown module ${m}: ${MODULES.join(', ')}`);
  const [messages = 1_000_000, size = 100, perTick = 1] = argv.slice(0, 3).map(Number);
  for (const r of await runS3InBrowsers({ messages, size, perTick, browsers, modules })) console.log(JSON.stringify(r));
}
