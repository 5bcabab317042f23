// The relay fleet behind real load balancers (fleet-specs/, e2e/fleet/topology.ts):
// needs root (network namespaces, nftables), HAProxy and Debian's Chromium.
// `npm test` runs it; `npm run bench -- --fleet` runs it with RICOCHET_FLEET_OUT
// set and prints the figures (bench/fleet.mjs).
import { defineConfig } from '@playwright/test';
import base from './playwright.config.js';
import { PROJECT_USE } from './browsers.js';

// One project of its own: the base config's projects would otherwise run the whole suite.
export default defineConfig({ ...base, timeout: 240_000, projects: [{ name: 'chromium-fleet', testDir: './fleet-specs', use: PROJECT_USE.chromium }] });
