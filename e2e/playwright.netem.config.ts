// Browser tests across the user-space impaired link (netem/): Chromium in one
// network namespace, relay + echo server in the other. Needs root.
// Run: npx playwright test -c playwright.netem.config.ts (not yet part of npm test).
import base from './playwright.config.js';
import { defineConfig } from '@playwright/test';

export default defineConfig({ ...base, testDir: './netem-specs', timeout: 180_000 });
