// S1's browser row: Ricochet from headless Chromium over WebTransport through
// the relay, on the same emulated link profile and seed as the native rows
// (its own lab per cell, after them: Chromium and the relay would otherwise
// share the two CPU cores with the native peers). The work happens in
// e2e/bench-specs/s1-webtransport.spec.ts, which reuses the netem specs'
// stack (e2e/netem-stack.ts); this module builds what it needs, runs it, and
// reads back one JSON file per cell. Chromium and the relay run on normal
// scheduling: under chrt -f 20 Chromium starved the emulator (late_us max
// 274 ms in a trial), which hurts more than it helps.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { build } from '../scripts/build.mjs';
import { ROOT, run, setup } from '../scripts/setup.mjs';
import { summarize } from './s1-stats.mjs';

export const BROWSER_LABEL = 'Ricochet (Chromium, WebTransport via relay, default config)';

function ensureBrowserTools() {
  setup({ browser: true });
  build();
  run(process.execPath, [join(ROOT, 'relay', 'native', 'build.mjs')]);
  run(process.execPath, [join(ROOT, 'relay', 'scripts', 'build.mjs')]);
}

/**
 * Runs the browser row for `cells`; returns { [cell]: { row, link, clockErrorUs } },
 * with `row.error` set where a cell produced no result.
 */
export function runBrowserRows(cells, { count, seed, size }) {
  ensureBrowserTools();
  const e2e = join(ROOT, 'e2e');
  const require = createRequire(join(e2e, 'package.json'));
  const cli = join(dirname(require.resolve('@playwright/test/package.json')), 'cli.js');
  const out = mkdtempSync(join(tmpdir(), 'ricochet-s1-browser-'));
  try {
    const env = { ...process.env, RICOCHET_S1_CELLS: cells.join(','), RICOCHET_S1_COUNT: String(count), RICOCHET_S1_SEED: String(seed), RICOCHET_S1_OUT: out };
    const r = spawnSync(process.execPath, [cli, 'test', '-c', 'playwright.bench.config.ts'], { cwd: e2e, env, stdio: ['ignore', 'inherit', 'inherit'] });
    const rows = {};
    for (const cell of cells) {
      const file = join(out, `browser-${cell}.json`);
      if (!existsSync(file)) {
        rows[cell] = { row: { label: BROWSER_LABEL, ricochet: true, stats: null, sent: count, wirePerPayload: null, error: `no result (playwright exit ${r.status})` } };
        continue;
      }
      const j = JSON.parse(readFileSync(file, 'utf8'));
      const { latencies_us: lat, ...receiver } = j.receiver;
      rows[cell] = {
        row: {
          label: BROWSER_LABEL,
          ricochet: true,
          stats: summarize(lat),
          latenciesUs: lat,
          sent: j.sender.sent,
          wirePerPayload: j.wire ? j.wire.bytes / (lat.length * size) : null,
          wire: j.wire,
          receiver,
          sender: j.sender,
        },
        link: j.link,
        clockErrorUs: j.clockErrorUs,
      };
    }
    return rows;
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
}
