// Browser tests in Debian's Chromium (Playwright cannot download its own here).
import { defineConfig } from '@playwright/test';

export default defineConfig({
  testDir: './specs',
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
});
