// Browser tests in Debian's Chromium (Playwright cannot download its own here).
// Two projects: `loopback` (specs/, everything on 127.0.0.1) and `netem`
// (netem-specs/, across the user-space impaired link; needs root, else skipped).
import { defineConfig } from '@playwright/test';

export default defineConfig({
  timeout: 120_000,
  workers: 1,
  reporter: [['list']],
  outputDir: '../results/e2e',
  use: {
    launchOptions: {
      executablePath: process.env.RICOCHET_CHROMIUM ?? '/usr/bin/chromium',
      // Never --disable-quic: WebTransport needs QUIC.
      args: ['--no-sandbox', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    },
  },
  projects: [
    { name: 'loopback', testDir: './specs' },
    { name: 'netem', testDir: './netem-specs', timeout: 180_000 },
  ],
});
