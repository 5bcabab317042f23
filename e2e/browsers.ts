// The two browsers the suite runs in, both from Debian (Playwright cannot
// download its own builds here): Chromium over CDP, Firefox ESR over
// WebDriver BiDi (Playwright's `moz-firefox` channel drives a stock Firefox).
//
// Playwright is pinned to 1.64.1 (e2e/package.json): 1.65 sends
// `emulation.setMediaFeaturesOverride` on every new context and page, which
// Firefox ESR 153 answers with "unknown command", so no page can open. 1.64.1
// does not send it. Before bumping Playwright, run
// `npx playwright test --project firefox-loopback`.
import { chromium, firefox, type Browser, type BrowserType, type LaunchOptions } from '@playwright/test';

export type BrowserName = 'chromium' | 'firefox';

export const CHROMIUM = process.env.RICOCHET_CHROMIUM ?? '/usr/bin/chromium';
export const FIREFOX = process.env.RICOCHET_FIREFOX ?? '/usr/bin/firefox-esr';

/** Chromium-only flags. Never --disable-quic: WebTransport needs QUIC. */
export const CHROMIUM_ARGS = ['--no-sandbox', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];

/** Firefox profile preferences: no background traffic or updates during the tests. */
export const FIREFOX_PREFS: Record<string, string | number | boolean> = {
  'app.update.enabled': false,
  'browser.shell.checkDefaultBrowser': false,
  'datareporting.policy.dataSubmissionEnabled': false,
  'toolkit.telemetry.reporting.enabled': false,
  'network.captive-portal-service.enabled': false,
  'network.connectivity-service.enabled': false,
  'browser.safebrowsing.update.enabled': false,
  'extensions.update.enabled': false,
};

/**
 * The smallest `datagrams.maxDatagramSize` each browser's WebTransport offers
 * (the SDK sizes its packets to it, read live). Chromium 156: always 1211.
 * Firefox 153: 1024 at first, larger once the path allows (1224 measured at
 * the end of a session on loopback).
 */
export const MIN_DATAGRAM_SIZE: Record<BrowserName, number> = { chromium: 1211, firefox: 1024 };

/** A Playwright project's `use` for each browser. */
export const PROJECT_USE = {
  chromium: { browserName: 'chromium', launchOptions: { executablePath: CHROMIUM, args: CHROMIUM_ARGS } },
  firefox: { browserName: 'firefox', channel: 'moz-firefox', launchOptions: { executablePath: FIREFOX, firefoxUserPrefs: FIREFOX_PREFS } },
} as const;

export interface LaunchTweaks {
  /** Instead of the browser itself (e.g. a wrapper that enters a network namespace). */
  executablePath?: string;
  /** Added to CHROMIUM_ARGS (Chromium only). */
  chromiumArgs?: string[];
  /** Added to FIREFOX_PREFS (Firefox only). */
  firefoxPrefs?: Record<string, string | number | boolean>;
}

/** Launch options for `name`, with the tweaks applied. */
export function launchOptionsFor(name: BrowserName, o: LaunchTweaks = {}): LaunchOptions {
  return name === 'firefox'
    ? { channel: 'moz-firefox', executablePath: o.executablePath ?? FIREFOX, firefoxUserPrefs: { ...FIREFOX_PREFS, ...o.firefoxPrefs } }
    : { executablePath: o.executablePath ?? CHROMIUM, args: [...CHROMIUM_ARGS, ...(o.chromiumArgs ?? [])] };
}

export function browserType(name: BrowserName): BrowserType {
  return name === 'firefox' ? firefox : chromium;
}

export function launch(name: BrowserName, o: LaunchTweaks = {}): Promise<Browser> {
  return browserType(name).launch(launchOptionsFor(name, o));
}
