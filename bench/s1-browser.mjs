// S1's browser rows: Ricochet from headless Chromium and Firefox ESR over
// WebTransport (and WebSocket, for reference) through the relay, in the
// default configuration and in the one a game would state (the native
// `low_latency` row's: bench/s1-browser-rows.mjs), on the same emulated link
// profile and seed as the native rows (its own lab per row and cell, after
// them: the browsers and the relay would otherwise share the two CPU cores
// with the native peers). The work happens in
// e2e/bench-specs/s1-browser.spec.ts, which reuses the netem specs' stack
// (e2e/netem-stack.ts); this module builds what it needs, runs it, and reads
// back one JSON file per row and cell. The browsers and the relay run on
// normal scheduling: under chrt -f 20 Chromium starved the emulator (late_us
// max 274 ms in a trial), which hurts more than it helps.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { build } from '../scripts/build.mjs';
import { ROOT, run, setup } from '../scripts/setup.mjs';
import { BROWSER_ROWS, DEFAULT_BROWSER_ROWS } from './s1-browser-rows.mjs';
import { summarize } from './s1-stats.mjs';

export { BROWSER_ROWS, DEFAULT_BROWSER_ROWS };

function ensureBrowserTools() {
  setup({ browser: true });
  build();
  run(process.execPath, [join(ROOT, 'relay', 'native', 'build.mjs')]);
  run(process.execPath, [join(ROOT, 'relay', 'scripts', 'build.mjs')]);
}

/**
 * Runs the browser rows `rowKeys` (default DEFAULT_BROWSER_ROWS) for `cells`;
 * returns { [cell]: { [rowKey]: { row, link, relay, clockErrorUs } } }, with
 * `row.error` set where a row produced no result.
 */
export function runBrowserRows(cells, { count, seed, size, rows: rowKeys = DEFAULT_BROWSER_ROWS }) {
  for (const k of rowKeys) if (!BROWSER_ROWS.some((r) => r.key === k)) throw new Error(`unknown browser row ${k} (rows: ${BROWSER_ROWS.map((r) => r.key).join(', ')})`);
  ensureBrowserTools();
  const e2e = join(ROOT, 'e2e');
  const require = createRequire(join(e2e, 'package.json'));
  const cli = join(dirname(require.resolve('@playwright/test/package.json')), 'cli.js');
  const out = mkdtempSync(join(tmpdir(), 'ricochet-s1-browser-'));
  try {
    const env = {
      ...process.env,
      RICOCHET_S1_CELLS: cells.join(','),
      RICOCHET_S1_ROWS: rowKeys.join(','),
      RICOCHET_S1_COUNT: String(count),
      RICOCHET_S1_SEED: String(seed),
      RICOCHET_S1_OUT: out,
    };
    const r = spawnSync(process.execPath, [cli, 'test', '-c', 'playwright.bench.config.ts'], { cwd: e2e, env, stdio: ['ignore', 'inherit', 'inherit'] });
    const byCell = {};
    for (const cell of cells) {
      byCell[cell] = {};
      for (const key of rowKeys) {
        const def = BROWSER_ROWS.find((x) => x.key === key);
        const base = { label: def.label, ricochet: true, native: def.native, browser: def.browser, transport: def.transport };
        const file = join(out, `browser-${key}-${cell}.json`);
        if (!existsSync(file)) {
          byCell[cell][key] = { row: { ...base, stats: null, sent: count, wirePerPayload: null, error: `no result (playwright exit ${r.status})` } };
          continue;
        }
        const j = JSON.parse(readFileSync(file, 'utf8'));
        const { latencies_us: lat, ...receiver } = j.receiver;
        byCell[cell][key] = {
          row: {
            ...base,
            stats: summarize(lat),
            latenciesUs: lat,
            sent: j.sender.sent,
            wirePerPayload: j.wire ? j.wire.bytes / (lat.length * size) : null,
            wire: j.wire,
            receiver,
            sender: j.sender,
            relay: j.relay,
          },
          link: j.link,
          clockErrorUs: j.clockErrorUs,
        };
      }
    }
    return byCell;
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
}
