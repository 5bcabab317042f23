// WebKitGTK specs (webkit-specs/): Playwright's test runner only, no
// Playwright browser. Each spec drives MiniBrowser itself through
// WebKitWebDriver (webkit.ts); see there why. scripts/test.mjs runs this
// config as its own step. By hand: npx playwright test -c playwright.webkit.config.ts
import base from './playwright.config.js';
import { defineConfig } from '@playwright/test';

// One project of its own: the base config's projects would otherwise replace this testDir.
// Its own outputDir: Playwright empties it at the start of a run, and the main run's is ../results/e2e.
export default defineConfig({ ...base, timeout: 90_000, outputDir: '../results/e2e-webkit', projects: [{ name: 'webkit-loopback', testDir: './webkit-specs' }] });
