// Benchmark rows that need a real browser (bench/s1.mjs runs this; root).
// Run by hand: RICOCHET_S1_CELLS=s1_5pct RICOCHET_S1_COUNT=600 npx playwright test -c playwright.bench.config.ts
import base from './playwright.config.js';
import { defineConfig } from '@playwright/test';

export default defineConfig({ ...base, testDir: './bench-specs', timeout: 600_000 });
