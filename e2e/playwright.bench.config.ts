// Benchmark rows that need a real browser (bench/s1.mjs runs this; root).
// Run by hand: RICOCHET_S1_CELLS=s1_5pct RICOCHET_S1_ROWS=firefox_wt_ll RICOCHET_S1_COUNT=600 npx playwright test -c playwright.bench.config.ts
// (rows: bench/s1-browser-rows.mjs).
import base from './playwright.config.js';
import { defineConfig } from '@playwright/test';
import { PROJECT_USE } from './browsers.js';

// One project of its own: the base config's projects would otherwise replace
// this testDir and run the whole e2e suite instead. The spec launches each
// row's browser itself (Chromium or Firefox, inside the lab's namespace), so
// the project's `use` only names a default.
export default defineConfig({ ...base, timeout: 600_000, projects: [{ name: 'bench', testDir: './bench-specs', use: PROJECT_USE.chromium }] });
