// A Playwright fixture for a game's own browser tests: every test gets a
// relay in front of the game's server, its sessions run through a simulated
// network (a profile per test, changed live), and pages get what they need
// to connect. No root, no namespaces, no packet filter.
//
//   import { test, expect } from '@ricochet/relay/playwright';
//   test.use({ backends: ['127.0.0.1:4000'], profile: 'wifi' });
//   test('my netcode survives wifi', async ({ page, relay }) => {
//     await page.goto(`/game.html?${new URLSearchParams(relay.connect('alice'))}`);
//     // the page: connectRelay(params.relayUrl, params.token, { webTransportPort: Number(params.webTransportPort) })
//     relay.setImpairment('mobile_lossy'); // live, for every session
//     relay.killTransports(); // every player's transport dies; sessions resume
//   });
import { test as base } from '@playwright/test';
import type { ImpairmentSpec } from './impairment.js';
import { startTestRelay, type TestRelay } from './testing.js';

/** What a page needs to connect: pass it as query parameters or a global. */
export interface RelayConnectInfo {
  /** The relay's base URL for `connectRelay` (it fetches the certificate hashes itself). */
  relayUrl: string;
  /** A fresh connect token for this player. */
  token: string;
  /** WebTransport's UDP port (it differs from the HTTP port here), as a string for URLSearchParams. */
  webTransportPort: string;
}

export interface RelayFixture extends TestRelay {
  /** A player's connect details (a new token each call). */
  connect(sub?: string): RelayConnectInfo;
}

export interface RicochetOptions {
  /** The game servers the relay may forward to ("host:port"); the first is the tokens' default. Required. */
  backends: string[];
  /** The simulated network for every session (a preset such as 'wifi', 's1_5pct', or per-direction settings); null: none. */
  profile: ImpairmentSpec | null;
}

export const test = base.extend<RicochetOptions & { relay: RelayFixture }>({
  backends: [[], { option: true }],
  profile: [null, { option: true }],
  relay: async ({ backends, profile }, use) => {
    if (backends.length === 0) throw new Error("@ricochet/relay/playwright: set the game's server, e.g. test.use({ backends: ['127.0.0.1:4000'] })");
    const relay = await startTestRelay({ backends, ...(profile !== null ? { impairment: profile } : {}) });
    const fixture: RelayFixture = {
      ...relay,
      connect: (sub = 'player') => ({
        relayUrl: relay.httpUrl,
        token: relay.token(sub),
        webTransportPort: String(relay.addresses.wtPort ?? ''),
      }),
    };
    await use(fixture);
    await relay.stop();
  },
});

export { expect } from '@playwright/test';
